# A classifier at 13x13 (tinygrad 0.14.0; SqueezeNet's last convolution, scaled down): a 1x1 convolution
# 64->40 (which no lane count of 16 or more divides: 8 lanes) and its bias, on a 13x13 input.
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
w = Tensor.randn(40, 64, 1, 1).realize(); b = Tensor.randn(40).realize()
def classifier(x):
    return x.conv2d(w, b)
uopc_tinygrad.export(classifier, Tensor.randn(1, 64, 13, 13).realize(), out=sys.argv[1])
