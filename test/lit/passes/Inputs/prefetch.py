# A 3x3 convolution 64 -> 64 at 7x7 with batchnorm-like scale and shift and ReLU (tinygrad 0.14.0), as
# ResNet-50's last stage has them at 512 channels: its 147 KB of weights are read once per pixel of the 49
# (prefetch-7.json: the graph.json of `python prefetch.py DIR`).
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
w = Tensor.randn(64, 64, 3, 3).realize(); s = Tensor.rand(64, 1, 1).realize(); b = Tensor.randn(64, 1, 1).realize()
uopc_tinygrad.export(lambda x: (x.conv2d(w, padding=1) * s + b).relu(), Tensor.randn(1, 64, 7, 7).realize(), out=sys.argv[1])
