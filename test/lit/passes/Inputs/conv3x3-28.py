# A 3x3 convolution 32->32 with padding 1 at 28x28, then ReLU (tinygrad 0.14.0), as ResNet-50's and
# Inception v2's at 28x28: the rows' borders gated, a channel tile of 32 lanes by 7 pixels (channel-tile.test:
# LLVM cuts the row at whole tiles around its interior, 7 + 14 + 7).
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
w = Tensor.randn(32, 32, 3, 3).realize()
def conv(x):
    return x.conv2d(w, padding=1).relu()
uopc_tinygrad.export(conv, Tensor.randn(1, 32, 28, 28).realize(), out=sys.argv[1])
