# A DenseNet dense block (tinygrad 0.14.0, as DenseNet-121's layers): a 3x3 stem convolution 3 -> 16 at 8x8,
# then three layers, each a batchnorm-free ReLU, a 3x3 convolution to 8 channels, concatenated after its input
# (16 -> 24 -> 32 -> 40 channels), and a 1x1 convolution 40 -> 8 of the block's output (dense-block.json).
# With `also`: the first concatenation is also an output of the function (dense-block-out.json).
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
stem = Tensor.randn(16, 3, 3, 3).realize()
ws = [Tensor.randn(8, c, 3, 3).realize() for c in (16, 24, 32)]
head = Tensor.randn(8, 40, 1, 1).realize()
also = len(sys.argv) > 2 and sys.argv[2] == "also"
def block(x):
  y = x.conv2d(stem, padding=1).relu()
  outs = []
  for w in ws:
    y = Tensor.cat(y, y.relu().conv2d(w, padding=1), dim=1)
    outs.append(y)
  z = y.conv2d(head)
  return (z, outs[0]) if also else z
uopc_tinygrad.export(block, Tensor.randn(1, 3, 8, 8).realize(), out=sys.argv[1])
