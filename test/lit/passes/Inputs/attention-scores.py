# Attention scores as a transformer computes them (tinygrad 0.14.0, exported by uopc_tinygrad): q and k of
# [batch 2, sequence 64, heads 2, head size 16], q computed (x * 2, a buffer of the function's own), then
# scores = q @ k^T per batch and head, scaled.
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
x, k = Tensor.randn(2, 64, 2, 16).realize(), Tensor.randn(2, 64, 2, 16).realize()
def scores(x, k):
    q = (x * 2).contiguous()
    return (q.permute(0, 2, 1, 3) @ k.permute(0, 2, 3, 1)) * 0.25
uopc_tinygrad.export(scores, x, k, out=sys.argv[1])
