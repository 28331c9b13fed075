"""A small tinygrad program for the README's walkthrough: `python -m uopc_tinygrad examples/tinygrad_mlp.py:mlp -o DIR`
exports it. mlp() returns (fn, args, model): the function to capture, its arguments and the model whose
state-dict names name the weights."""
from tinygrad import Tensor, nn


class MLP:
    def __init__(self):
        self.l1, self.l2 = nn.Linear(4, 8), nn.Linear(8, 3)

    def __call__(self, x):
        return self.l2(self.l1(x).relu()).softmax(-1)


def mlp():
    Tensor.manual_seed(0)
    model = MLP()
    return model, (Tensor.randn(2, 4),), model
