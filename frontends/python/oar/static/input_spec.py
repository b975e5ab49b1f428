"""InputSpec: the declared inputs of oar.jit.to_static, oar.jit.save and static.data."""
import numpy as np

from .. import _C
from ..framework import Tensor, convert_dtype, _FROM_NUMPY


class InputSpec:
    """The shape and dtype of one input of a static function (paddle.static.InputSpec).

    `shape` is a list or tuple; None or -1 marks a dynamic dim (a batch
    size, say), which every call may choose. `name` names the program's
    input ("x<index>" when None)."""

    def __init__(self, shape, dtype="float32", name=None, stop_gradient=False):
        if isinstance(shape, int):
            shape = [shape]
        if not isinstance(shape, (list, tuple)):
            raise TypeError(f"InputSpec: shape must be a list or tuple of ints (None or -1 for dynamic dims), "
                            f"got {type(shape).__name__}")
        dims = []
        for d in shape:
            if d is None:
                dims.append(-1)
            elif isinstance(d, (int, np.integer)) and d >= -1:
                dims.append(int(d))
            else:
                raise ValueError(f"InputSpec: shape {list(shape)} has dim {d!r}; expected an int >= 0, "
                                 "or None or -1 for a dynamic dim")
        self.shape = tuple(dims)
        self.dtype = convert_dtype(dtype)
        self.name = name
        self.stop_gradient = stop_gradient

    @classmethod
    def from_tensor(cls, tensor, name=None):
        """The spec of a tensor: its shape (every dim static) and dtype."""
        if not isinstance(tensor, Tensor):
            raise TypeError(f"InputSpec.from_tensor: expected a Tensor, got {type(tensor).__name__}")
        return cls(list(tensor.shape), tensor.dtype, name)

    @classmethod
    def from_numpy(cls, ndarray, name=None):
        return cls(list(ndarray.shape), _FROM_NUMPY[np.dtype(ndarray.dtype)], name)

    def batch(self, batch_size):
        """This spec with a leading batch dim (None: dynamic)."""
        return InputSpec([batch_size, *self.shape], self.dtype, self.name, self.stop_gradient)

    def unbatch(self):
        if not self.shape:
            raise ValueError("InputSpec.unbatch: the spec is a scalar, it has no batch dim")
        return InputSpec(list(self.shape[1:]), self.dtype, self.name, self.stop_gradient)

    def accepts(self, tensor):
        """True when the tensor has this dtype, rank and static dims."""
        shape = tensor.shape
        return (tensor.dtype == self.dtype and len(shape) == len(self.shape)
                and all(d == -1 or d == s for d, s in zip(self.shape, shape)))

    def _to_ir(self):
        return _C.ir.InputSpec(list(self.shape), self.dtype, self.name or "")

    def __eq__(self, other):
        return (isinstance(other, InputSpec) and self.shape == other.shape and self.dtype == other.dtype
                and self.name == other.name)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.name))

    def __repr__(self):
        return f"InputSpec(shape={self.shape}, dtype={self.dtype}, name={self.name})"

