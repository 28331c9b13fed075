# A layer whose weight is derived from two state-dict tensors in every call (weight normalization, w = g * v /
# |v| per output row, as nn.utils.weight_norm does), then transposed into a contiguous copy: the norm, the scaled
# weight and the copy read weights only (their results are the same in every run), the product reads the
# argument `x`. Exported by uopc_tinygrad.export (tinygrad 0.14.0); weights-once.json is the graph.json.
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
class Layer:
  def __init__(self): self.v, self.g = Tensor.randn(3, 4).realize(), Tensor.randn(3, 1).realize()
  def __call__(self, x):
    w = (self.g * self.v / self.v.square().sum(1, keepdim=True).sqrt()).contiguous()
    return x @ w.T.contiguous()
layer = Layer()
uopc_tinygrad.export(layer, Tensor.randn(2, 4).realize(), out=sys.argv[1], model=layer, input_names=["x"])
