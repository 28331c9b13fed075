# A ShuffleNet-like unit at 28x28 (tinygrad 0.14.0): a grouped 1x1 convolution 24->24 in 2 groups of 12
# (12 channels: no lane count of 8 or more divides them), batchnorm-like scale and shift, ReLU, a channel
# shuffle, a 3x3 depthwise convolution with padding 1, then a concatenation of a grouped 1x1 convolution
# 24->48 (2 groups) and a 3x3 average pool of the depthwise output.
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
w1 = Tensor.randn(24, 12, 1, 1).realize(); s1 = Tensor.rand(24, 1, 1).realize(); b1 = Tensor.randn(24, 1, 1).realize()
wd = Tensor.randn(24, 1, 3, 3).realize(); w3 = Tensor.randn(48, 12, 1, 1).realize()
def unit(x):
    y = (x.conv2d(w1, groups=2) * s1 + b1).relu()
    y = y.reshape(1, 2, 12, 28, 28).permute(0, 2, 1, 3, 4).reshape(1, 24, 28, 28)
    z = y.conv2d(wd, groups=24, padding=1)
    return z.relu().conv2d(w3, groups=2).cat(z.avg_pool2d(3, stride=1, padding=1), dim=1)
uopc_tinygrad.export(unit, Tensor.randn(1, 24, 28, 28).realize(), out=sys.argv[1])
