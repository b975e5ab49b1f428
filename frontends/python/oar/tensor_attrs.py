"""Paddle's smaller Tensor attributes and methods: memory layout queries
(stride, offset, data_ptr), torch-style constructors (new_*), diagonal
fills, repeat, resize_/set_, and the grad/requires_grad/name properties."""
import builtins
import itertools

import numpy as np

from . import creation, inplace, signal
from . import math as M
from .framework import Tensor

_names = itertools.count()


def _apply(x, func):
    if not x.stop_gradient:
        raise RuntimeError("Tensor.apply: cannot apply a function to a tensor that requires gradient "
                           "(stop_gradient=False); detach it first")
    return func(x)


def _data_ptr(x):
    return int(x.numpy().__array_interface__["data"][0])


def _stride(x, dim=None):
    strides = list(x.strides)
    if dim is None:
        return strides
    if not -len(strides) <= dim < builtins.max(len(strides), 1):
        raise IndexError(f"Tensor.stride: dim {dim} is out of range for a tensor of {len(strides)} dims")
    return strides[dim]


def _size_arg(size, what):
    if len(size) == 1 and isinstance(size[0], (list, tuple, Tensor)):
        size = size[0]
    if isinstance(size, Tensor):
        size = size.tolist()
    if not builtins.all(isinstance(s, (int, np.integer)) for s in size):
        raise TypeError(f"Tensor.{what}: size must be ints or one list of ints, got {size!r}")
    return [int(s) for s in size]


def _new_maker(what, fill):
    def new(x, *size, dtype=None, device=None, requires_grad=False, pin_memory=False):
        shape = _size_arg(size, what)
        out = creation.full(shape, fill, dtype=x.dtype if dtype is None else dtype)
        if device is not None:
            out = out.to(device)
        out.stop_gradient = not requires_grad
        return out
    new.__name__ = what
    new.__doc__ = f"A new tensor of the given size filled with {fill} (x's dtype unless dtype is given)."
    return new


def _new_full(x, size, fill_value, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    shape = _size_arg((size,), "new_full")
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    out = creation.full(shape, fill_value, dtype=x.dtype if dtype is None else dtype)
    if device is not None:
        out = out.to(device)
    out.stop_gradient = not requires_grad
    return out


# ---- diagonal fills: positions computed with numpy, values placed with where/gather (differentiable) ----

def _fill_positions(x, positions, values):
    """x with the flat `positions` set to `values` (a tensor with one value per position, or a number)."""
    mask = np.zeros(x.size, dtype=bool)
    mask[positions.reshape(-1)] = True
    mask_t = creation.to_tensor(mask.reshape(x.shape))
    if not isinstance(values, Tensor):
        return M.where(mask_t, creation.full([], values, dtype=x.dtype), x)
    index = np.zeros(x.size, dtype=np.int64)
    index[positions.reshape(-1)] = np.arange(positions.size)
    gathered = M.gather(values.astype(x.dtype).reshape([-1]), creation.to_tensor(index)).reshape(x.shape)
    return M.where(mask_t, gathered, x)


def _fill_diagonal(x, value, offset=0, wrap=False, name=None):
    shape = list(x.shape)
    if len(shape) < 2:
        raise ValueError(f"Tensor.fill_diagonal_: x must have at least 2 dims, got shape {shape}")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise ValueError(f"Tensor.fill_diagonal_: a tensor of more than 2 dims must have all dims equal, got {shape}")
    if len(shape) > 2:
        step = builtins.sum(int(np.prod(shape[i + 1:])) for i in range(len(shape)))
        positions = np.arange(shape[0]) * step
    else:
        rows, cols = shape
        flat = np.arange(rows * cols).reshape(rows, cols)
        if wrap and rows > cols:  # the diagonal restarts every cols + 1 rows
            base = flat.reshape(-1)[::cols + 1]
            if offset >= 0:
                positions = base[base % cols + offset < cols] + offset
            else:
                positions = base[base % cols < cols + offset] - offset * cols
            positions = positions[positions < rows * cols]
        else:
            positions = np.diagonal(flat, offset)
    return _fill_positions(x, np.asarray(positions), value)


def _fill_diagonal_tensor(x, y, offset=0, dim1=0, dim2=1, name=None):
    positions = np.diagonal(np.arange(x.size).reshape(x.shape), offset, dim1, dim2)
    if list(positions.shape) != list(y.shape):
        raise ValueError(f"Tensor.fill_diagonal_tensor: y must have shape {list(positions.shape)} (the diagonal of "
                         f"x along dims {dim1}, {dim2} with offset {offset}), got {list(y.shape)}")
    return _fill_positions(x, positions, y)


# ---- shape-changing methods ----

def _repeat(x, repeats, *more):
    """Tensor.repeat(2, 1) or repeat([2, 1]): the tensor tiled (torch's
    repeat, which Paddle 3.3 has as a method)."""
    if more:
        repeats = [repeats, *more]
    if isinstance(repeats, Tensor):
        repeats = repeats.tolist()
    repeats = [repeats] if isinstance(repeats, (int, np.integer)) else list(repeats)
    if len(repeats) < x.ndim:
        repeats = [1] * (x.ndim - len(repeats)) + repeats
    return M.tile(x, repeats)


def _resize_(x, shape, fill_zero=False, name=None):
    shape = [int(s) for s in shape]
    n = int(np.prod(shape))
    flat = x.detach().reshape([-1])
    if n <= x.size:
        new = flat[:n]
    else:
        new = M.concat([flat, creation.zeros([n - x.size], dtype=x.dtype)])
    x._set_data_(new.reshape(shape).clone())
    return x


def _set_(x, source=None, shape=None, stride=None, offset=0, name=None):
    """x takes source's data (viewed with shape, stride in elements and offset in bytes)."""
    if source is None:
        x._set_data_(creation.zeros([0], dtype=x.dtype))
        return x
    if shape is None and stride is None and offset == 0:
        x._set_data_(source.detach())
        return x
    flat = source.detach().numpy().reshape(-1)
    shape = list(source.shape) if shape is None else [int(s) for s in shape]
    if stride is None:
        stride = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
    start, item = offset // flat.itemsize, flat.itemsize
    last = start + builtins.sum((s - 1) * st for s, st in zip(shape, stride)) if 0 not in shape else start
    if offset % item or last >= flat.size:
        raise ValueError(f"Tensor.set_: shape {shape}, stride {list(stride)} and offset {offset} reach past the "
                         f"{flat.size} elements of source")
    view = np.lib.stride_tricks.as_strided(flat[start:], shape, [s * item for s in stride])
    x._set_data_(creation.to_tensor(np.ascontiguousarray(view)))
    return x


def _split_with_sizes(x, split_sizes, dim=0):
    return M.split(x, list(split_sizes), axis=dim)


def _mT(x):  # noqa: N802 - paddle's name
    if x.ndim < 2:
        raise ValueError(f"Tensor.mT: x must have at least 2 dims, got shape {list(x.shape)}")
    perm = list(range(x.ndim))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return M.transpose(x, perm)


# ---- properties ----

def _item_factory(core_item):
    def item(x, *index):
        if not index:
            return core_item(x)
        values = x.numpy()
        value = values.reshape(-1)[index[0]] if len(index) == 1 else values[index]
        return value.item()
    return item


def _name_get(x):
    """The name given (None stays None: an unnamed Parameter), else one generated on first read."""
    if not hasattr(x, "_name"):
        x._name = f"generated_tensor_{next(_names)}"
    return x._name


def _name_set(x, value):
    x._name = value


def _grad_setter(getter):
    def set_grad(x, value):
        if value is not None and not isinstance(value, Tensor):
            raise TypeError(f"Tensor.grad: can only be set to a Tensor or None, got {type(value).__name__}")
        if value is not None and list(value.shape) != list(x.shape):
            raise ValueError(f"Tensor.grad: the gradient must have the tensor's shape {list(x.shape)}, "
                             f"got {list(value.shape)}")
        x._zero_grad = False
        x._set_grad(None if value is None else value.detach())
    return property(getter, set_grad)


def _install():
    T = Tensor
    T.apply, T.apply_ = _apply, inplace.method(_apply, "apply_")
    T.data_ptr = _data_ptr
    T.device = property(lambda x: x.place._device.split(":")[0] if x.place._device.startswith("cpu")
                        else x.place._device)
    T.fill_diagonal_ = inplace.method(_fill_diagonal, "fill_diagonal_")
    T.fill_diagonal_tensor = _fill_diagonal_tensor
    T.fill_diagonal_tensor_ = inplace.method(_fill_diagonal_tensor, "fill_diagonal_tensor_")
    T.get_strides = lambda x: list(x.strides)
    T.stride = _stride
    T.offset = property(lambda x: x._byte_offset)
    T.get_tensor = lambda x: x
    T.itemsize = property(lambda x: x.element_size())
    T.layout = property(lambda x: "NCHW")
    T.mT = property(_mT)
    T.name = property(_name_get, _name_set)
    T.new_empty, T.new_zeros, T.new_ones = (_new_maker("new_empty", 0), _new_maker("new_zeros", 0),
                                            _new_maker("new_ones", 1))
    T.new_full = _new_full
    T.repeat = _repeat
    T.resize_, T.set_ = _resize_, _set_
    T._is_shared_buffer_with = lambda x, other: x._same_data(other)
    T.reconstruct_from_ = lambda x, other: (x._set_data_(other.detach()), x)[1]
    T.requires_grad = property(lambda x: not x.stop_gradient,
                               lambda x, v: setattr(x, "stop_gradient", not v))
    T.split_with_sizes = _split_with_sizes
    T.type = property(lambda x: "VarType.DENSE_TENSOR")
    T.item = _item_factory(T.item)
    T.grad = _grad_setter(T.grad.fget)
    T.stft, T.istft = signal.stft, signal.istft


_install()
