"""paddle.sparse.nn: activation layers for sparse tensors."""
from ...nn.layer import Layer
from . import functional


class ReLU(Layer):
    def forward(self, x):
        return functional.relu(x)


class ReLU6(Layer):
    def forward(self, x):
        return functional.relu6(x)


class LeakyReLU(Layer):
    def __init__(self, negative_slope=0.01, name=None):
        super().__init__()
        self._negative_slope = negative_slope

    def forward(self, x):
        return functional.leaky_relu(x, self._negative_slope)


class Softmax(Layer):
    def __init__(self, axis=-1, name=None):
        super().__init__()
        self._axis = axis

    def forward(self, x):
        return functional.softmax(x, self._axis)


__all__ = ["ReLU", "ReLU6", "LeakyReLU", "Softmax", "functional"]
