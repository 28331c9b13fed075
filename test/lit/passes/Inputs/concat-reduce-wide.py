# A fire module's expand layers and the squeeze layer after them (tinygrad 0.14.0, as SqueezeNet's): two
# convolutions of one input (1x1 and 3x3 with padding, 64 -> 64 channels each, with ReLU) concatenated along the
# channels, then a 1x1 convolution 128 -> 32 reading the concatenation: its reduction over the 128 channels
# selects between the two halves' buffers (concat-reduce-wide.json: two blocks of 32 channels a half).
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
w1, w2, w3 = Tensor.randn(64, 64, 1, 1).realize(), Tensor.randn(64, 64, 3, 3).realize(), Tensor.randn(32, 128, 1, 1).realize()
def fire(x):
  return x.conv2d(w1).relu().cat(x.conv2d(w2, padding=1).relu(), dim=1).conv2d(w3)
uopc_tinygrad.export(fire, Tensor.randn(1, 64, 13, 13).realize(), out=sys.argv[1])
