# A function of one 2x3x4 input with two outputs of their own shapes (tinygrad 0.14.0, uopc_tinygrad.export):
# x.sum(2), 2x3, and x.permute(2, 0, 1) * 2, 4x2x3; its PARAMs carry ParamArg.shape (param-shape.json is the
# exporter's graph.json).
import sys
from tinygrad import Tensor
import uopc_tinygrad
uopc_tinygrad.export(lambda x: (x.sum(2), x.permute(2, 0, 1) * 2), Tensor.arange(24).float().reshape(2, 3, 4).realize(),
                     out=sys.argv[1], output_names=["total", "twice"])
