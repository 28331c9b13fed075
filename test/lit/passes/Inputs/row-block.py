# Channel tiles whose inputs outgrow half the L2 (tinygrad 0.14.0; lit pins the L2 at 2 MiB), as ResNet-50's
# downsampling convolutions have them. argv[2]:
#   rows: a 1x1 convolution of stride 2, 256 -> 512 channels, 56x56 -> 28x28 (inputs 3.2 MB, weights 512 KB)
#   both: a 1x1 convolution of stride 2, 512 -> 1024 channels, 28x28 -> 14x14 (inputs 1.6 MB, weights 2 MB)
#   dense: a 3x3 convolution, 128 -> 64 channels at 56x56, padded (inputs 1.6 MB, 72 multiply-adds a byte)
# (the exporter writes a folder; its graph.json is the row-block-NAME.json here)
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
cin, cout, size, k, stride = {"rows": (256, 512, 56, 1, 2), "both": (512, 1024, 28, 1, 2), "dense": (128, 64, 56, 3, 1)}[sys.argv[2]]
w = Tensor.randn(cout, cin, k, k).realize()
uopc_tinygrad.export(lambda x: x.conv2d(w, stride=stride, padding=k // 2).relu(), Tensor.randn(1, cin, size, size).realize(), out=sys.argv[1])
