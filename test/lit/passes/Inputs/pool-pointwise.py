# SqueezeNet 1.1's head at a smaller size (tinygrad 0.14.0): a 3x3 convolution of stride 2, 3 -> 16 channels
# at 67x67 with ReLU (a channel tile of 16 lanes), a 3x3 max pool of stride 2 (33x33 out: planes of 1089
# elements, more than blocked-layout's gated=1024), then argv[2]:
#   pointwise: a 1x1 convolution 16 -> 32 with ReLU (a channel tile whose reduction is the 16 channels alone)
#   window: a 3x3 convolution 16 -> 32 with padding 1 (its reads gated, a window of pixels a step)
# (the exporter writes a folder; its graph.json is the pool-NAME.json here)
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
w1, w2, w3 = Tensor.randn(16, 3, 3, 3).realize(), Tensor.randn(32, 16, 1, 1).realize(), Tensor.randn(32, 16, 3, 3).realize()
second = {"pointwise": lambda y: y.conv2d(w2).relu(), "window": lambda y: y.conv2d(w3, padding=1).relu()}[sys.argv[2]]
uopc_tinygrad.export(lambda x: second(x.conv2d(w1, stride=2).relu().max_pool2d(3, 2)), Tensor.randn(1, 3, 135, 135).realize(), out=sys.argv[1])
