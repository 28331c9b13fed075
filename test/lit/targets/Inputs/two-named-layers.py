# Two like layers with named weights (tinygrad 0.14.0, exported by uopc_tinygrad): x @ w0, ReLU, @ w1, ReLU;
# w0 and w1 of one shape, named layer0.weight and layer1.weight.
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
args = [Tensor.randn(4, 32).realize(), Tensor.randn(32, 32).realize(), Tensor.randn(32, 32).realize()]
uopc_tinygrad.export(lambda x, w0, w1: (x @ w0).relu().contiguous().matmul(w1).relu(), *args, out=sys.argv[1],
                     input_names=["x", "layer0.weight", "layer1.weight"])
