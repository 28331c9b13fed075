# An inception module's output (tinygrad 0.14.0, as Inception v1's): four 1x1 convolutions of one input (16 ->
# 8, 16, 8 and 16 channels, with ReLU) concatenated along the channels into 48 at 13x13, the concatenation
# read by two 1x1 convolutions of the next module (48 -> 16 each, summed): a kernel of its own that copies the
# four parts (concat-four.json).
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
ws = [Tensor.randn(n, 16, 1, 1).realize() for n in (8, 16, 8, 16)]
w5, w6 = Tensor.randn(16, 48, 1, 1).realize(), Tensor.randn(16, 48, 1, 1).realize()
def module(x):
  y = Tensor.cat(*[x.conv2d(w).relu() for w in ws], dim=1)
  return y.conv2d(w5).relu() + y.conv2d(w6).relu()
uopc_tinygrad.export(module, Tensor.randn(1, 16, 13, 13).realize(), out=sys.argv[1])
