# An Inception v2 reduction module's output (tinygrad 0.14.0): two stride-2 convolution branches of one input
# (16 -> 8 channels each, 3x3, with ReLU; the second after a 1x1 16 -> 8) and its 3x3 max pool with stride 2,
# concatenated along the channels into 32 at 7x7, read by a 1x1 convolution (32 -> 8): the concatenation is a
# kernel of its own whose third part, the pool, holds all the reduction work (concat-pool3.json).
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
wa, wb1, wb2 = Tensor.randn(8, 16, 3, 3).realize(), Tensor.randn(8, 16, 1, 1).realize(), Tensor.randn(8, 8, 3, 3).realize()
wn = Tensor.randn(8, 32, 1, 1).realize()
def module(x):
  a = x.conv2d(wa, stride=2).relu()
  b = x.conv2d(wb1).relu().conv2d(wb2, stride=2).relu()
  y = Tensor.cat(a, b, x.max_pool2d(3, 2), dim=1)
  return y.conv2d(wn).relu()
uopc_tinygrad.export(module, Tensor.randn(1, 16, 15, 15).realize(), out=sys.argv[1])
