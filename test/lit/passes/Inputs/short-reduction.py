# Convolutions into 64 channels at 13x13 (tinygrad 0.14.0), with ReLU: `short` (short-reduction.json) a 1x1
# one from 16 channels (a reduction of 16 terms, as SqueezeNet's expand layers have), `long`
# (long-reduction.json) a 3x3 one from 16 (144 terms), 11x11 out.
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
k = 1 if sys.argv[2] == "short" else 3
w = Tensor.randn(64, 16, k, k).realize()
uopc_tinygrad.export(lambda x: x.conv2d(w).relu(), Tensor.randn(1, 16, 13, 13).realize(), out=sys.argv[1])
