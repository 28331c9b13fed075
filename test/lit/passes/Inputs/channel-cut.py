# A 1x1 convolution 64 -> 264 channels at 13x13 (tinygrad 0.14.0), as SqueezeNet's classifier (512 -> 1000)
# has them: 264 = 16 x 16 + 8, no lane count of 16 or more divides the channels.
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
w = Tensor.randn(264, 64, 1, 1).realize()
uopc_tinygrad.export(lambda x: x.conv2d(w).relu(), Tensor.randn(1, 64, 13, 13).realize(), out=sys.argv[1])
