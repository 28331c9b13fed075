# A first convolution without padding (tinygrad 0.14.0): 7x7, stride 2, 3 -> 64 channels at 61x61 (28x28 out),
# with ReLU: a strided window, its input read 2 apart along the row and 1 apart along the window's columns
# (stem-stride2.json).
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
w = Tensor.randn(64, 3, 7, 7).realize()
def stem(x):
  return x.conv2d(w, stride=2).relu()
uopc_tinygrad.export(stem, Tensor.randn(1, 3, 61, 61).realize(), out=sys.argv[1])
