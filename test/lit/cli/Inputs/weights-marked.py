# A layer with a model's weight (a state-dict tensor), a tensor its closure captures and an argument named as an
# ONNX model's graph input is (`image`, not input0), exported by uopc_tinygrad.export (tinygrad 0.14.0):
# ParamArg.weight marks `weight` and the closure's `buffer<N>`, not `image` (weights-marked.json is the graph.json).
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
class Layer:
  def __init__(self): self.weight = Tensor.randn(4, 6).realize()
layer, shift = Layer(), Tensor.randn(6).realize()
uopc_tinygrad.export(lambda image: image @ layer.weight + shift, Tensor.randn(2, 4).realize(), out=sys.argv[1],
                     model=layer, input_names=["image"])
