# A 1x1 convolution 128->256 at 28x28 with batchnorm and ReLU (tinygrad 0.14.0), as ResNet-50's and Inception
# v2's at 28x28: 784 pixels, 49 vectors of 16, whose tile of two vectors takes the first 768 (optimize's merge
# with a split; merge.test).
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
w = Tensor.randn(256, 128, 1, 1).realize()
mean, var, g, b = Tensor.randn(256).realize(), Tensor.rand(256).realize(), Tensor.randn(256).realize(), Tensor.randn(256).realize()
def conv(x):
    y = x.conv2d(w)
    return ((y - mean.reshape(1, -1, 1, 1)) * g.reshape(1, -1, 1, 1) * (var.reshape(1, -1, 1, 1) + 1e-5).rsqrt()
            + b.reshape(1, -1, 1, 1)).relu()
uopc_tinygrad.export(conv, Tensor.randn(1, 128, 28, 28).realize(), out=sys.argv[1])
