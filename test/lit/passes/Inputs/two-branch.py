# A bottleneck's end at 7x7 (tinygrad 0.14.0): a 1x1 convolution 32->64 of the main branch's 7x7 input y and
# a 1x1 stride-2 downsample 16->64 of the block's 14x14 input x, summed and ReLU'd: one kernel, two
# reductions over different loops (ResNet-50's k5, k14, k26, k44).
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
w = Tensor.randn(64, 32, 1, 1).realize(); wd = Tensor.randn(64, 16, 1, 1).realize()
def block(y, x):
    return (y.conv2d(w) + x.conv2d(wd, stride=2)).relu()
uopc_tinygrad.export(block, Tensor.randn(1, 32, 7, 7).realize(), Tensor.randn(1, 16, 14, 14).realize(), out=sys.argv[1])
