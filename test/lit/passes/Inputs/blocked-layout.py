# Two layers over 64 channels at 14x14 (tinygrad 0.14.0), the first a 1x1 convolution with ReLU (the
# optimizer's channel tile: 196 pixels are no whole pairs of vectors). argv[2], the second layer:
#   chain: another 1x1 convolution (a channel tile reading the first's output ungated)
#   pool: a 2x2 max pool (a vector tile along the pixels)
#   padpool: a 3x3 max pool of stride 2 with padding 1 (its borders pieces of their own)
#   padded: a 3x3 convolution with padding 1 (its reads of the first's output gated)
# (the exporter writes a folder; its graph.json is the blocked-layout-NAME.json here)
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
w1, w2, w3 = Tensor.randn(64, 64, 1, 1).realize(), Tensor.randn(64, 64, 1, 1).realize(), Tensor.randn(64, 64, 3, 3).realize()
second = {"chain": lambda y: y.conv2d(w2), "pool": lambda y: y.max_pool2d(2), "padpool": lambda y: y.max_pool2d(3, 2, padding=1), "padded": lambda y: y.conv2d(w3, padding=1)}[sys.argv[2]]
uopc_tinygrad.export(lambda x: second(x.conv2d(w1).relu()), Tensor.randn(1, 64, 14, 14).realize(), out=sys.argv[1])
