# A fire module's expand layers and the squeeze layer after them (tinygrad 0.14.0, as SqueezeNet's): two
# convolutions of one input (1x1 and 3x3 with padding, 32 -> 64 channels each, with ReLU) concatenated along the
# channels, then a 1x1 convolution 128 -> 64 reading the concatenation: two blocks of 32 output lanes, so the
# weights' index of the second half's piece (its seam) has a term for the block above the lanes and the
# reduction step, and an offset for the half (concat-reduce-blocks.json).
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
w1, w2, w3 = Tensor.randn(64, 32, 1, 1).realize(), Tensor.randn(64, 32, 3, 3).realize(), Tensor.randn(64, 128, 1, 1).realize()
def fire(x):
  return x.conv2d(w1).relu().cat(x.conv2d(w2, padding=1).relu(), dim=1).conv2d(w3)
uopc_tinygrad.export(fire, Tensor.randn(1, 32, 13, 13).realize(), out=sys.argv[1])
