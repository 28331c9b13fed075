# Two 1x1 convolutions at 14x14 (196 pixels, no whole number of vectors) with batchnorm-like scale and shift
# and ReLU (tinygrad 0.14.0). `grouped` (group-merge.json): 68 -> 68 channels in 2 groups of 34, as ShuffleNet's
# second stage has them (34 = 2 x 17: no lane count and no reuse upcast of 4 or 8 divides them). `plain`
# (plain-1x1.json): 64 -> 64, ungrouped (64 channels: a channel tile of whole vectors). `concat`
# (group-concat.json): 136 -> 136 in 4 groups of 34 over the ReLU of a concatenation of two 68-channel
# inputs, two groups each (ShuffleNet's unit after a stride-2 one): its reads select their part by the group.
# `g28` (group-merge-28.json): 112 -> 112 in 4 groups of 28 at 28x28 (ShuffleNet's first stage, 784 pixels).
# `concat7` (group-concat-7.json): 544 -> 544 in 4 groups of 136 at 7x7 over the ReLU of a concatenation of two
# 272-channel inputs (ShuffleNet's first 7x7 unit after its stride-2 one).
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
c, g, hw = {"grouped": (68, 2, 14), "plain": (64, 1, 14), "concat": (136, 4, 14), "g28": (112, 4, 28),
             "concat7": (544, 4, 7)}[sys.argv[2]]
w = Tensor.randn(c, c // g, 1, 1).realize(); s = Tensor.rand(c, 1, 1).realize(); b = Tensor.randn(c, 1, 1).realize()
def conv(x):
    return (x.conv2d(w, groups=g) * s + b).relu()
if sys.argv[2] in ("concat", "concat7"):
    uopc_tinygrad.export(lambda a, b: conv(a.cat(b, dim=1).relu()), Tensor.randn(1, c // 2, hw, hw).realize(),
                         Tensor.randn(1, c // 2, hw, hw).realize(), out=sys.argv[1])
else:
    uopc_tinygrad.export(conv, Tensor.randn(1, c, hw, hw).realize(), out=sys.argv[1])
