# A padding along the channels (tinygrad 0.14.0, as an LRN's window reads it): 16 channels of 13x13, after a
# ReLU, padded by 2 on each side into 20 (pad-channels.json): one read, gated by its channel alone.
import sys
from tinygrad import Tensor
import uopc_tinygrad
Tensor.manual_seed(0)
uopc_tinygrad.export(lambda x: x.relu().pad(((0, 0), (2, 2), (0, 0), (0, 0))) * 2, Tensor.randn(1, 16, 13, 13).realize(), out=sys.argv[1])
