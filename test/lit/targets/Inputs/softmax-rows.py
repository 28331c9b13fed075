# Softmax over rows of 128 (tinygrad 0.14.0, exported by uopc_tinygrad): [4, 16, 128], as a transformer's
# attention weights; its exp kernel indexes row * 128 + column (llvm-disjoint-index.test).
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
uopc_tinygrad.export(lambda x: x.softmax(-1), Tensor.randn(4, 16, 128).realize(), out=sys.argv[1])
