# A ShuffleNet-like downsampling unit (tinygrad 0.14.0), its last kernel as ShuffleNet's k8: a grouped 1x1
# convolution 24->112 in 4 groups of 28 at 28x28 (after a 3x3 depthwise convolution of stride 2), concatenated
# with a 3x3 average pool of stride 2 of the unit's input (24 channels, 56x56 -> 28x28), then ReLU.
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
w1 = Tensor.randn(24, 6, 1, 1).realize(); wd = Tensor.randn(24, 1, 3, 3).realize(); w3 = Tensor.randn(112, 6, 1, 1).realize()
def unit(x):
    y = x.conv2d(w1, groups=4).relu()
    z = y.conv2d(wd, groups=24, stride=2, padding=1)
    return z.conv2d(w3, groups=4).cat(x.avg_pool2d(3, stride=2, padding=1), dim=1).relu()
uopc_tinygrad.export(unit, Tensor.randn(1, 24, 56, 56).realize(), out=sys.argv[1])
