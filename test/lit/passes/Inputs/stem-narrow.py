# A first convolution into channels that only one vector of lanes divides (tinygrad 0.14.0): 3 -> 24
# channels, 3x3, stride 2, padding 1, 64x64 -> 32x32, with ReLU, as ShuffleNet's stem (224x224 there).
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
w = Tensor.randn(24, 3, 3, 3).realize()
uopc_tinygrad.export(lambda x: x.conv2d(w, stride=2, padding=1).relu(), Tensor.randn(1, 3, 64, 64).realize(), out=sys.argv[1])
