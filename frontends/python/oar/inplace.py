"""In-place writes: x[key] = v, the `*_` methods and set_value write into the
tensor's own memory, so views of it, its base and detach()ed handles see
the values (Note [In-place writes] in core/src/tensor/inplace.cpp).

Note [In-place autograd]: the written values are computed out of place by
ordinary (differentiable) ops, written with the core's assign_, and the
handle takes the result's autograd history (`_with_history`). When a
gradient is being recorded the ops read a clone of x, so no recorded op
saves memory that the write overwrites; a saved tensor that is overwritten
anyway (y = x.exp(); y.add_(1)) is caught by the version counter when the
backward needs it. A write through a recorded view (v = y[1:];
v.multiply_(w)) also rebases the view's base: y's history becomes "y with
v's elements replaced" (_put over their flat positions), so y's gradient
is right; other views of y taken before the write keep their old history,
and recording an op on one raises (Note [Version counter]). A leaf that
doesn't stop gradient refuses in-place writes outside no_grad (Paddle's
rule), and so does a view of one.
"""
import builtins
import numbers

import numpy as np

from . import _C, creation
from . import math as M
from .autograd import is_grad_enabled
from .framework import Tensor, convert_dtype, to_numpy_dtype

_ops = _C.ops
_BOOL = convert_dtype("bool")


def check_writable(x, what):
    """Raises when writing x in place would break autograd (Paddle's rule for
    leaves); gives a broadcast view memory of its own first."""
    _own_memory_if_broadcast(x)
    if not is_grad_enabled() or x.stop_gradient:
        return
    if x.is_leaf:
        raise RuntimeError(f"{what}: Leaf Tensor that doesn't stop gradient can't use inplace strategy; "
                           f"write it under oar.no_grad(), or write a copy (clone())")
    if x._is_view_of_grad_leaf:
        raise RuntimeError(f"{what}: this tensor is a view (made by {x._view_op}) of a leaf tensor that doesn't "
                           f"stop gradient, and writing it in place would change that leaf; write under "
                           f"oar.no_grad(), or write a copy of the view (clone())")


def _own_memory_if_broadcast(x):
    """A view with a stride-0 dim (expand, broadcast_to) shares one element
    among several positions; Paddle's expand copies, so a write into one goes
    to a copy of its own and leaves the tensor it was expanded from alone."""
    if not _symbolic(x) and builtins.any(s == 0 and n > 1 for s, n in zip(x.strides, x.shape)):
        x._rebind_(x.contiguous())


def _symbolic(*tensors):
    """True for a symbolic tensor of a to_static trace or a distributed one:
    neither has one memory to write, so an in-place op rebinds the handle to
    its result (Note [Rebinding] in src/tensor.cpp), as before real writes."""
    return builtins.any(isinstance(t, Tensor) and (_C.ir.is_symbolic(t) or t.is_dist()) for t in tensors)


def _records(*tensors):
    return is_grad_enabled() and builtins.any(isinstance(t, Tensor) and not t.stop_gradient for t in tensors)


def write(x, new, what):
    """Writes `new` (of x's shape) into x's memory; x takes new's autograd
    history, and a base x is a recorded view of is rebased onto the write."""
    if list(new.shape) != list(x.shape):
        raise ValueError(f"{what}: the result has shape {list(new.shape)} but the tensor written in place has "
                         f"shape {list(x.shape)}; an in-place op cannot change the shape")
    if _symbolic(x, new):  # a to_static trace or a distributed tensor: the handle takes the result
        x._rebind_(new) if not new.stop_gradient else x._set_data_(new)
        return x
    base = _base_to_rebase(x)
    if base is not None:  # base_new = base with x's elements replaced by new (differentiable in both)
        old = base._with_history(base)  # the base's history on a handle of its own
        rebased = _put(M.clone(old), _positions_in(base, x), _ops.reshape(new, [-1]))
    x._assign_(new)
    if base is not None:
        base._set_history_(rebased)
    take_history(x, new)
    if base is not None:
        x._written_base = base  # x's history is now the write's own: remember whom to rebase next time
    return x


def _base_to_rebase(x):
    """The tensor with history that x is a view of, when a write through x must rebase it."""
    if not is_grad_enabled():
        return None
    base = x._view_base()
    if base is None:
        base = getattr(x, "_written_base", None)
        if base is not None and not base._shares_storage(x):
            base = None
    # A base whose history is already stale stays so: recording an op on it raises.
    return base if base is not None and base._history_current else None


def take_history(x, new=None):
    """After a write into x: x's autograd history becomes new's (None: the
    written values are constants). Under no_grad a non-leaf keeps its
    history, as the write is not recorded."""
    if new is not None and not new.stop_gradient:
        x._rebind_(x._with_history(new))
    elif not x.is_leaf:
        x._rebind_(x.detach() if is_grad_enabled() else x._with_history(x))


def _positions_in(base, view):
    """Flat positions, in base's row-major order, of view's elements (both over one storage)."""
    def offsets(t):
        off = np.full(t.shape, t._byte_offset // t.dtype.itemsize, np.int64)
        for d, (n, s) in enumerate(zip(t.shape, t.strides)):
            shape = [1] * len(t.shape)
            shape[d] = n
            off = off + (np.arange(n, dtype=np.int64) * s).reshape(shape)
        return off.reshape(-1)
    ob, ov = offsets(base), offsets(view)
    order = np.argsort(ob, kind="stable")
    at = np.clip(np.searchsorted(ob[order], ov), 0, builtins.max(ob.size - 1, 0))
    pos = order[at]
    if ob.size == 0 or not np.array_equal(ob[pos], ov):
        raise RuntimeError("in-place write: the view's elements do not all lie in its base's memory; "
                           "write a copy (clone()) instead")
    return pos


def method(fn, name):
    """The in-place method `name`: fn's result written into x."""
    def inplace(x, *args, **kwargs):
        check_writable(x, name)
        src = M.clone(x) if _records(x, *args, *kwargs.values()) else x
        return write(x, fn(src, *args, **kwargs), name)
    inplace.__name__ = name
    inplace.__doc__ = f"In-place {name[:-1]}: writes the result into this tensor's memory and returns it."
    return inplace


# ---- fills ----

def zero_(x):
    """Sets every element to 0 in place."""
    return fill_(x, 0)


def fill_(x, value):
    """Sets every element to `value` in place."""
    check_writable(x, "fill_")
    return write(x, _ops.full(list(x.shape), value, x.dtype, x._device), "fill_")


def copy_(x, src, blocking=True):
    """Writes `src` (broadcast to x's shape, cast to x's dtype, moved to x's device) into x; returns x."""
    check_writable(x, "copy_")
    if not isinstance(src, Tensor):
        src = creation.to_tensor(np.asarray(src, dtype=to_numpy_dtype(x.dtype)), place=x._device)
    if src._device != x._device:
        src = src._to(x._device)
    if src.dtype != x.dtype:
        src = M.cast(src, x.dtype)
    if list(src.shape) != list(x.shape):
        try:
            src = _ops.broadcast_to(src, list(x.shape))
        except Exception:
            raise ValueError(f"copy_: src has shape {list(src.shape)}, which does not broadcast to the tensor's "
                             f"shape {list(x.shape)}") from None
    if not _records(x, src) and not _symbolic(x, src):
        x._assign_(src)
        take_history(x)
        return x
    return write(x, M.clone(src), "copy_")


def set_value(x, value):
    """Writes `value` (same shape) into x's memory; x keeps its autograd state (Paddle's set_value)."""
    _own_memory_if_broadcast(x)
    v = value_tensor(value, x)
    if list(v.shape) != list(x.shape):
        raise ValueError(f"set_value: value has shape {list(v.shape)} but the tensor has shape {list(x.shape)}")
    if v._device != x._device:
        v = v._to(x._device)
    if _symbolic(x, v):
        x._set_data_(creation.clone_data(v.detach()))
        return
    x._assign_(v.detach())
    take_history(x)


# ---- x[key] = value ----

def value_tensor(value, like):
    if isinstance(value, Tensor):
        return M.cast(value, like.dtype) if value.dtype != like.dtype else value
    return creation.to_tensor(np.asarray(value, dtype=to_numpy_dtype(like.dtype)), place=like._device)


def _is_basic(key):
    keys = key if isinstance(key, tuple) else (key,)
    for k in keys:
        if k is None or k is Ellipsis or isinstance(k, (numbers.Integral, np.integer)) and not isinstance(k, bool):
            continue
        if isinstance(k, builtins.slice) and (k.step is None or k.step > 0):
            continue
        return False
    return True


def setitem(x, key, value, getitem, positions):
    """x[key] = value, broadcasting value to the selected shape (numpy's rules)."""
    check_writable(x, "__setitem__")
    vals = value_tensor(value, x)
    if not _records(x, vals) and not _symbolic(x, vals) and _is_basic(key):
        view = getitem(x, key)  # slices, ints, None and ... select a view of x
        if view._shares_storage(x):
            _check_broadcast(vals, view.shape)
            view._assign_(vals)
            take_history(x)
            return
    src = M.clone(x) if _records(x, vals) else x
    if isinstance(key, Tensor) and key.dtype == _BOOL and list(key.shape) == list(x.shape):
        _check_broadcast(vals, x.shape)
        new = M.where(key, vals, src)
    elif _symbolic_key(key):
        pos = _symbolic_positions(x, key, getitem)
        _check_broadcast(vals, pos.shape)
        new = _put(src, _ops.reshape(pos, [-1]), _ops.reshape(_ops.broadcast_to(vals, list(pos.shape)), [-1]))
    else:
        pos = positions(x.shape, key)
        _check_broadcast(vals, pos.shape)
        new = _put(src, pos.reshape(-1), _ops.reshape(_ops.broadcast_to(vals, list(pos.shape)), [-1]))
    write(x, new, "__setitem__")


def _symbolic_key(key):
    keys = key if isinstance(key, tuple) else (key,)
    return builtins.any(isinstance(k, Tensor) and _C.ir.is_symbolic(k) for k in keys)


def _symbolic_positions(x, key, getitem):
    """The flat positions x[key] selects, as a tensor of the trace, for a key holding tensors of a
    to_static trace: 0-d integer tensors (each selects one index, so no position repeats),
    with ints, slices, None and ...."""
    keys = key if isinstance(key, tuple) else (key,)
    for k in keys:
        if isinstance(k, Tensor) and _C.ir.is_symbolic(k) and len(k.shape) != 0:
            raise IndexError(f"__setitem__: an index array of a to_static trace (shape {list(k.shape)}) is not "
                             "supported in an assignment: its values, unknown while tracing, may repeat; use "
                             "paddle.scatter or put_along_axis, or index with 0-d tensors and slices")
    if builtins.any(d < 0 for d in x.shape):
        raise IndexError(f"__setitem__: assigning at a tensor index of a to_static trace needs a tensor of "
                         f"known shape, not {list(x.shape)} (a dim the input_spec leaves None)")
    n = int(np.prod(x.shape))
    grid = creation.to_tensor(np.arange(n, dtype=np.int64).reshape(x.shape), place=x._device)
    return getitem(grid, key)


def _check_broadcast(vals, shape):
    have, want = list(vals.shape), list(shape)
    ok = len(have) <= len(want) and builtins.all(
        h in (1, w) for h, w in zip(have[::-1], want[::-1]))
    if not ok:
        raise ValueError(f"__setitem__: the value has shape {have}, which does not broadcast to the shape "
                         f"{want} of the selected elements")


def _put(x, pos, vals):
    """x with the flat positions `pos` (numpy int64) set to `vals` (1-D); differentiable in x and vals.
    Where a position repeats, the last value wins (numpy's rule)."""
    n = int(np.prod(x.shape))
    if isinstance(pos, np.ndarray) and pos.size and np.unique(pos).size != pos.size:
        last = np.full(n, -1, np.int64)
        last[pos] = np.arange(pos.size)
        keep = np.flatnonzero(last[pos] == np.arange(pos.size))
        pos = pos[keep]
        vals = M.gather(vals, creation.to_tensor(keep, place=x._device), 0)
    idx = pos if isinstance(pos, Tensor) else creation.to_tensor(pos, place=x._device)
    work = convert_dtype("int32") if x.dtype == _BOOL else x.dtype
    i32 = convert_dtype("int32")
    hit = _ops.scatter_add(_ops.full([n], 0.0, i32, x._device), idx, _ops.full([int(np.prod(pos.shape))], 1.0, i32, x._device), 0)
    hit = _ops.greater_than(hit, _ops.scalar_like(hit, 0.0))
    scattered = _ops.scatter_add(_ops.full([n], 0.0, work, x._device), idx, M.cast(vals, work), 0)
    flat = _ops.where(hit, M.cast(scattered, x.dtype), _ops.reshape(x, [-1]))
    return _ops.reshape(flat, list(x.shape))


def index_put_(x, indices, value, accumulate=False, name=None):
    """x[indices] = value (or += with accumulate), indices a tuple of integer or bool tensors (Paddle's index_put_)."""
    from .tensor_methods import _getitem, _positions
    key = tuple(indices)
    if not accumulate:
        setitem(x, key, value, _getitem, _positions)
        return x
    check_writable(x, "index_put_")
    vals = value_tensor(value, x)
    src = M.clone(x) if _records(x, vals) else x
    pos = _positions(x.shape, key)
    _check_broadcast(vals, pos.shape)
    flat_vals = _ops.reshape(_ops.broadcast_to(vals, list(pos.shape)), [-1])
    idx = creation.to_tensor(pos.reshape(-1), place=x._device)
    flat = _ops.scatter_add(_ops.reshape(src, [-1]), idx, flat_vals, 0)
    return write(x, _ops.reshape(flat, list(x.shape)), "index_put_")


def index_put(x, indices, value, accumulate=False, name=None):
    """Out of place: a copy of x with x[indices] = value (or += with accumulate)."""
    out = M.clone(x)
    return index_put_(out, indices, value, accumulate)
