# A fire module's expand layers and the max pool after them (tinygrad 0.14.0, as SqueezeNet 1.1's fire3 and its
# pool): two convolutions of one input (1x1 and 3x3 with padding, 16 -> 64 channels each, with ReLU)
# concatenated along the channels, then a 3x3 max pool with stride 2 (fire-pool.json). The pool reads each part
# of the concatenation in a piece of its own (split at the seam).
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
w1, w2 = Tensor.randn(64, 16, 1, 1).realize(), Tensor.randn(64, 16, 3, 3).realize()
def fire(x):
  return x.conv2d(w1).relu().cat(x.conv2d(w2, padding=1).relu(), dim=1).max_pool2d(3, 2)
uopc_tinygrad.export(fire, Tensor.randn(1, 16, 55, 55).realize(), out=sys.argv[1])
