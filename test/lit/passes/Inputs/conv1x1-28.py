# A 1x1 convolution 32->64 at 28x28 with batchnorm and ReLU (tinygrad 0.14.0), as ResNet-50's bottleneck
# 1x1 convolutions at 56x56 and 28x28: no padding, so its rows and columns read and store as one loop of 784
# pixels (optimize's merge).
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
w = Tensor.randn(64, 32, 1, 1).realize()
mean, var, g, b = Tensor.randn(64).realize(), Tensor.rand(64).realize(), Tensor.randn(64).realize(), Tensor.randn(64).realize()
def conv(x):
    y = x.conv2d(w)
    return ((y - mean.reshape(1, -1, 1, 1)) * g.reshape(1, -1, 1, 1) * (var.reshape(1, -1, 1, 1) + 1e-5).rsqrt()
            + b.reshape(1, -1, 1, 1)).relu()
uopc_tinygrad.export(conv, Tensor.randn(1, 32, 28, 28).realize(), out=sys.argv[1])
