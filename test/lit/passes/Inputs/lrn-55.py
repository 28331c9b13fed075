# A local response normalization over 8 channels at 55x55 (tinygrad 0.14.0, as its ONNX LRN lowers: each pixel
# divided by a power of the mean of its 5 neighbouring channels' squares, a 5-term reduction; Inception v1's
# and AlexNet's), with rows of 55 pixels, which no whole vectors divide (lrn-55.json).
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
def lrn(x, size=5):
  b, c, h, w = x.shape
  pooled = (x * x).reshape(b, 1, c, h * w).pad((0, 0, (size - 1) // 2, size // 2)).avg_pool2d((size, 1), 1)
  return x / (pooled.reshape(b, c, h, w) * 1e-4 + 1.0).pow(0.75)
uopc_tinygrad.export(lrn, Tensor.randn(1, 8, 55, 55).realize(), out=sys.argv[1])
