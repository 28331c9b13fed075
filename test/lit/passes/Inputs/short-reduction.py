# Convolutions into 64 channels at 13x13 (tinygrad 0.14.0), with ReLU: `short` (short-reduction.json) a 1x1
# one from 16 channels (a reduction of 16 terms, as SqueezeNet's expand layers have), `long`
# (long-reduction.json) a 3x3 one from 16 (144 terms), 11x11 out; `short27` (short-reduction-27.json) the 1x1
# one at 27x27.
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
k = 3 if sys.argv[2] == "long" else 1
hw = 27 if sys.argv[2] == "short27" else 13
w = Tensor.randn(64, 16, k, k).realize()
uopc_tinygrad.export(lambda x: x.conv2d(w).relu(), Tensor.randn(1, 16, hw, hw).realize(), out=sys.argv[1])
