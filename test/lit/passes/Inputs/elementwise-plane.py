# A batch normalization with ReLU over 32 channels (tinygrad 0.14.0; DenseNet-121's, in front of each 1x1
# convolution): elementwise, no reduction. argv[2], its planes: 14x14 (rows no whole number of vectors) or 16x16;
# argv[3] "pad": of a 13x13 input padded by 1 (15x15, its reads gated by the padding).
# (the exporter writes a folder; its graph.json is the elementwise-NAME.json here)
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
n = int(sys.argv[2])
scale, shift = Tensor.randn(1, 32, 1, 1).realize(), Tensor.randn(1, 32, 1, 1).realize()
pad = len(sys.argv) > 3 and sys.argv[3] == "pad"
uopc_tinygrad.export(lambda x: ((x.pad((1, 1, 1, 1)) if pad else x) * scale + shift).relu(), Tensor.randn(1, 32, n, n).realize(), out=sys.argv[1])
