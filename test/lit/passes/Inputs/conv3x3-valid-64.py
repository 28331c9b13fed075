# Two 3x3 convolutions without padding over rows of 64 pixels or more (tinygrad 0.14.0): 3 -> 16 channels at
# 68x68 -> 66x66 (27 terms a pixel: a first convolution), ReLU, then 16 -> 32 at 66x66 -> 64x64 (144 terms), as
# VGG-19's 3x3 convolution 64 -> 128 at 112x112 reads its pool's padded output: no gates
# (conv3x3-valid-64.json).
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
w1, w2 = Tensor.randn(16, 3, 3, 3).realize(), Tensor.randn(32, 16, 3, 3).realize()
uopc_tinygrad.export(lambda x: x.conv2d(w1).relu().conv2d(w2), Tensor.randn(1, 3, 68, 68).realize(), out=sys.argv[1])
