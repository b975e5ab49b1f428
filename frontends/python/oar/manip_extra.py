"""More of Paddle's manipulation, selection, sorting and scatter functions.

Note [Host positions]: as in math.py's take_along_axis, index arithmetic
(sort orders, scatter positions, unique) is done on the host with numpy and
the values move with gather / scatter_add / where on the device, so every
result stays differentiable in the tensors it selects from."""
import builtins
import numbers

import numpy as np

from . import _C
from . import math as M
from .creation import _shape, to_tensor
from .framework import Tensor, convert_dtype, default_float_dtype, int64, to_numpy_dtype
from .math_extra import _axis, _t, _with_out_argument

_ops = _C.ops
_BOOL = convert_dtype("bool")


def _np(x):
    return x.numpy() if isinstance(x, Tensor) else np.asarray(x)


def _idx(values, like):
    return to_tensor(np.ascontiguousarray(values, dtype=np.int64).reshape(-1), place=like._device)


def _gather_flat(x, positions):
    """x's elements at the flat positions (a numpy int array), in positions' shape."""
    positions = np.asarray(positions, dtype=np.int64)
    out = _ops.gather(M.reshape(x, [-1]), _idx(positions, x), 0)
    return M.reshape(out, list(positions.shape))


def _check_range(op, what, values, size, size_is, allow_negative=False):
    values = np.asarray(values)
    if allow_negative:
        values = np.where(values < 0, values + size, values)
    M._check_index_values(op, what, values, size, size_is)
    return values


# ---- scatter over flat positions ----

def _occurrence_rank(pos):
    """For each entry of pos, how many earlier entries have the same value."""
    order = np.argsort(pos, kind="stable")
    sorted_pos = pos[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_pos)) + 1] if pos.size else np.zeros(0, np.int64)
    run_start = np.repeat(starts, np.diff(np.r_[starts, pos.size]))
    rank = np.empty(pos.size, np.int64)
    rank[order] = np.arange(pos.size) - run_start
    return rank


def _scatter_flat(x, pos, values, reduce="assign", include_self=True):
    """x with values written at the flat positions pos (numpy, 1-D) by reduce:
    assign (the last write wins), add, mul, mean, amax or amin. include_self
    False: x's own value at a written position takes no part."""
    shape = list(x.shape)
    n = int(np.prod(shape))
    flat = M.reshape(x, [-1])
    vals = M.reshape(M.cast(values, x.dtype), [-1])
    pos = np.asarray(pos, dtype=np.int64).reshape(-1)
    if pos.size == 0:
        return x
    work = convert_dtype("int32") if x.dtype == _BOOL else x.dtype
    dev = x._device
    ones = _ops.full([pos.size], 1.0, convert_dtype("int32"), dev)
    count = _ops.scatter_add(_ops.full([n], 0.0, convert_dtype("int32"), dev), _idx(pos, x), ones, 0)
    hit = M.greater_than(count, 0)
    if reduce in ("add", "sum", "mean"):
        total = _ops.scatter_add(_ops.full([n], 0.0, work, dev), _idx(pos, x), M.cast(vals, work), 0)
        total = M.cast(total, x.dtype)
        base = flat if include_self else M.where(hit, _ops.zeros_like(flat), flat)
        out = M.add(base, total) if x.dtype != _BOOL else M.logical_or(base, total)
        if reduce == "mean":
            c = M.add(M.cast(count, x.dtype), 1.0 if include_self else 0.0)
            c = M.where(hit, c, _ops.ones_like(c))
            out = M.divide(out, c) if x.dtype.is_floating_point else M.floor_divide(out, c)
        return M.reshape(out, shape)
    if reduce not in ("assign", "mul", "multiply", "amax", "amin"):
        raise ValueError(f"scatter: reduce must be one of 'assign', 'add', 'mul', 'mean', 'amax', 'amin', "
                         f"got {reduce!r}")
    rank = _occurrence_rank(pos)
    acc = None
    for r in range(int(rank.max()) + 1):
        sel = np.flatnonzero(rank == r)
        layer_hit = _ops.scatter_add(_ops.full([n], 0.0, convert_dtype("int32"), dev), _idx(pos[sel], x),
                                     _ops.full([sel.size], 1.0, convert_dtype("int32"), dev), 0)
        layer_hit = M.greater_than(layer_hit, 0)
        layer = _ops.scatter_add(_ops.full([n], 0.0, work, dev), _idx(pos[sel], x),
                                 M.cast(_ops.gather(vals, _idx(sel, x), 0), work), 0)
        layer = M.cast(layer, x.dtype)
        if acc is None:
            acc = M.where(layer_hit, layer, flat)
            if reduce != "assign" and include_self:
                acc = _combine(reduce, acc, flat, layer_hit)
        else:
            acc = M.where(layer_hit, layer if reduce == "assign" else _combine(reduce, acc, layer, layer_hit), acc)
    return M.reshape(acc, shape)


def _combine(reduce, a, b, mask):
    if reduce in ("mul", "multiply"):
        return M.where(mask, M.multiply(a, b), a)
    return M.where(mask, (M.maximum if reduce == "amax" else M.minimum)(a, b), a)


def _scatter_traced(op, x, pos, values, reduce, include_self=True):
    """_scatter_flat for traced positions `pos` (a tensor): sums and means only, or 'assign'
    where no position repeats, which a trace cannot know (Note [Index tensors of a trace])."""
    if reduce not in ("add", "sum", "mean", "assign", "amax", "amin", "mul", "multiply"):
        raise ValueError(f"{op}: reduce must be one of 'assign', 'add', 'mean', 'mul', 'amax', 'amin', got {reduce!r}")
    shape = list(x.shape)
    n = int(np.prod(shape))
    dev = x._device
    idx = M.reshape(pos, [-1])
    vals = M.reshape(M.cast(values, x.dtype), [-1])
    flat = M.reshape(x, [-1])
    if reduce in ("amax", "amin", "mul", "multiply"):
        return M.reshape(_reduce_traced(op, flat, idx, vals, reduce, include_self), shape)
    i32 = convert_dtype("int32")
    count = _ops.scatter_add(_ops.full([n], 0.0, i32, dev), idx, _ops.full_like(idx, 1.0, i32), 0)
    hit = M.greater_than(count, 0)
    work = i32 if x.dtype == _BOOL else x.dtype
    total = M.cast(_ops.scatter_add(_ops.full([n], 0.0, work, dev), idx, M.cast(vals, work), 0), x.dtype)
    if reduce == "assign":
        # One write per position, checked when the program runs (which write wins where an index
        # repeats is what eager mode knows and a trace does not): an error then, never a sum.
        once = M.all(M.less_equal(count, _ops.scalar_like(count, 1.0)))
        _ops.assert_true(once, [], f"ValueError {op}: an index tensor of a to_static trace repeats a position, "
                                   "so which value is written there is undefined in the program; use reduce='add' "
                                   "or distinct indices")
        return M.reshape(M.where(hit, total, flat), shape)
    base = flat if include_self else M.where(hit, _ops.zeros_like(flat), flat)
    out = M.add(base, total) if x.dtype != _BOOL else M.logical_or(base, total)
    if reduce == "mean":
        c = M.add(M.cast(count, x.dtype), 1.0 if include_self else 0.0)
        out = M.divide(out, M.where(hit, c, _ops.ones_like(c)))
    return M.reshape(out, shape)


_MAX_DENSE_SCATTER = 1 << 20  # writes x positions compared at once by a traced max/min/product scatter


def _reduce_traced(op, flat, idx, vals, reduce, include_self):
    """flat with vals combined into positions idx by max, min or product, for traced positions:
    every write against every position (a [writes, positions] mask), so repeats combine as eagerly."""
    m, n = int(np.prod(idx.shape)), int(np.prod(flat.shape))
    if m * n > _MAX_DENSE_SCATTER:
        raise NotImplementedError(f"{op}: reduce={reduce!r} at {m} traced positions into {n} is too large to trace "
                                  f"(at most {_MAX_DENSE_SCATTER} write-position pairs; no scatter-max op yet)")
    every = to_tensor(np.arange(n, dtype=np.int64).reshape(1, n), place=flat._device)
    writes = M.equal(M.reshape(idx, [m, 1]), every)  # [m, n]
    hit = M.any(writes, axis=0)
    if reduce in ("mul", "multiply"):
        neutral = 1.0
    elif flat.dtype.is_floating_point:
        neutral = float("-inf") if reduce == "amax" else float("inf")
    else:
        info = np.iinfo(to_numpy_dtype(flat.dtype))
        neutral = float(info.min if reduce == "amax" else info.max)
    candidates = M.where(writes, M.broadcast_to(M.reshape(vals, [m, 1]), [m, n]),
                         _ops.full([], neutral, flat.dtype, flat._device))
    if reduce == "amax":
        combined = M.max(candidates, axis=0)
        combined = M.maximum(combined, flat) if include_self else combined
    elif reduce == "amin":
        combined = M.min(candidates, axis=0)
        combined = M.minimum(combined, flat) if include_self else combined
    else:
        combined = M.prod(candidates, axis=0)
        combined = M.multiply(combined, flat) if include_self else combined
    return M.where(hit, combined, flat)


# ---- along an axis ----

def _along_axis_positions(op, arr_shape, idx, axis):
    coords = list(np.indices(idx.shape))
    coords[axis] = idx
    return np.ravel_multi_index(coords, arr_shape)


def _broadcast_index(arr, idx, axis, broadcast):
    if not broadcast:
        return idx
    target = list(arr.shape)
    target[axis] = idx.shape[axis] if idx.ndim == len(arr.shape) else idx.shape[-1]
    if idx.ndim != len(arr.shape):
        raise ValueError(f"take_along_axis: indices of rank {idx.ndim} do not match arr of rank {len(arr.shape)}")
    return np.broadcast_to(idx, np.broadcast_shapes(idx.shape, tuple(target)))


# Note [Index tensors of a trace]
# The ops here find flat positions with numpy from the index values. In a
# to_static trace an index tensor has no values yet, so where the index is a
# tensor of the trace its positions are computed with ops instead: the
# index along the axis (negative ones counted from the end, each checked to
# lie in range when the program runs, by check_index) times the axis's
# stride, plus the constant positions of the other coordinates.

def _traced(t):
    return isinstance(t, Tensor) and _C.ir.is_symbolic(t)


def _traced_positions(op, arr, idx, axis):
    """Flat positions in arr of idx (a traced integer tensor of arr's rank) along axis, as a tensor."""
    shape = list(arr.shape)
    if builtins.any(d < 0 for d in shape) or builtins.any(d < 0 for d in idx.shape):
        raise ValueError(f"{op}: an index tensor of a to_static trace needs tensors of known shape, not "
                         f"{shape} and {list(idx.shape)} (a dim the input_spec leaves None)")
    n = shape[axis]
    idx = M.cast(idx, "int64")
    idx = M.where(M.less_than(idx, _ops.scalar_like(idx, 0.0)), idx + n, idx)
    idx = _ops.check_index(idx, n, op, "index", f"the size of axis {axis} of {shape}")
    coords = list(np.indices(list(idx.shape)))
    coords[axis] = np.zeros(list(idx.shape), np.int64)
    base = np.ravel_multi_index(coords, shape).astype(np.int64) if idx.size else np.zeros(list(idx.shape), np.int64)
    stride = int(np.prod(shape[axis + 1:]))
    return idx * stride + to_tensor(base, place=arr._device)


def take_along_axis(arr, indices, axis, broadcast=True):
    """arr's values at indices along axis (numpy's take_along_axis; indices broadcast over the other axes)."""
    axis = _axis(axis, len(arr.shape))
    if _traced(indices):  # Note [Index tensors of a trace]
        if len(indices.shape) != len(arr.shape):
            raise ValueError(f"take_along_axis: indices have rank {len(indices.shape)} but arr has rank "
                             f"{len(arr.shape)}; they must be equal")
        if broadcast:
            target = list(arr.shape)
            target[axis] = indices.shape[axis]
            indices = M.broadcast_to(indices, list(np.broadcast_shapes(tuple(indices.shape), tuple(target))))
        pos = _traced_positions("take_along_axis", arr, indices, axis)
        return M.reshape(_ops.gather(M.reshape(arr, [-1]), M.reshape(pos, [-1]), 0), list(pos.shape))
    idx = _np(indices).astype(np.int64)
    if idx.ndim != len(arr.shape):
        raise ValueError(f"take_along_axis: indices have rank {idx.ndim} but arr has rank {len(arr.shape)}; "
                         f"they must be equal")
    idx = _broadcast_index(arr, idx, axis, broadcast)
    size = arr.shape[axis]
    idx = _check_range("take_along_axis", "index", idx, size, f"the size of axis {axis} of arr {list(arr.shape)}",
                       allow_negative=True)
    return _gather_flat(arr, _along_axis_positions("take_along_axis", arr.shape, idx, axis))


take_along_dim = take_along_axis


def put_along_axis(arr, indices, values, axis, reduce="assign", include_self=True, broadcast=True):
    """arr with values written at indices along axis, combined by reduce
    ('assign', 'add', 'mul'/'multiply', 'mean', 'amin', 'amax')."""
    axis = _axis(axis, len(arr.shape))
    if _traced(indices):  # Note [Index tensors of a trace]
        if len(indices.shape) != len(arr.shape):
            raise ValueError(f"put_along_axis: indices have rank {len(indices.shape)} but arr has rank "
                             f"{len(arr.shape)}")
        values = _t(values, arr)
        if broadcast:
            target = list(arr.shape)
            target[axis] = indices.shape[axis]
            target = list(np.broadcast_shapes(tuple(indices.shape), tuple(values.shape), tuple(target)))
            indices = M.broadcast_to(indices, target)
        pos = _traced_positions("put_along_axis", arr, indices, axis)
        return _scatter_traced("put_along_axis", arr, pos, M.broadcast_to(values, list(pos.shape)), reduce,
                               include_self)
    idx = _np(indices).astype(np.int64)
    if idx.ndim != len(arr.shape):
        raise ValueError(f"put_along_axis: indices have rank {idx.ndim} but arr has rank {len(arr.shape)}")
    if broadcast:
        values = _t(values, arr)
        idx = np.broadcast_to(idx, np.broadcast_shapes(idx.shape, tuple(values.shape)) if values.shape else idx.shape)
        idx = _broadcast_index(arr, idx, axis, True)
    idx = _check_range("put_along_axis", "index", idx, arr.shape[axis],
                       f"the size of axis {axis} of arr {list(arr.shape)}", allow_negative=True)
    values = M.broadcast_to(_t(values, arr), list(idx.shape))
    pos = _along_axis_positions("put_along_axis", arr.shape, idx, axis)
    return _scatter_flat(arr, pos, values, reduce, include_self)


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):  # noqa: A002
    """input with src's values at index along dim, reduced by 'sum', 'prod', 'mean', 'amax' or 'amin'."""
    reduce = {"sum": "add", "prod": "mul"}.get(reduce, reduce)
    axis = _axis(dim, len(input.shape))
    idx = _np(index).astype(np.int64)
    src = _t(src, input)
    if list(src.shape) != list(idx.shape):  # torch's rule: the leading part of src of index's shape
        src = M.slice(src, list(range(idx.ndim)), [0] * idx.ndim, list(idx.shape))
    idx = _check_range("scatter_reduce", "index", idx, input.shape[axis],
                       f"the size of axis {axis} of input {list(input.shape)}", allow_negative=True)
    return _scatter_flat(input, _along_axis_positions("scatter_reduce", input.shape, idx, axis), src, reduce,
                         include_self)


def _row_positions(x_shape, rows, axis=0):
    """Flat positions of the slices x[..., rows[k], ...] along axis: shape [len(rows), *slice]."""
    grid = np.arange(int(np.prod(x_shape)), dtype=np.int64).reshape(x_shape)
    return np.moveaxis(np.take(grid, rows, axis=axis), axis, 0)


def scatter(x, index, updates, overwrite=True, name=None):
    """x with its rows at index replaced by updates (overwrite: the last of
    repeated indices wins) or, without overwrite, zeroed and then summed with
    every update given for them (Paddle)."""
    if _traced(index):  # Note [Index tensors of a trace]: whole rows along axis 0
        rows = M.reshape(index, [-1])
        shape = list(x.shape)
        vshape = [rows.shape[0]] + shape[1:]
        idx = M.broadcast_to(M.reshape(rows, [-1] + [1] * (len(shape) - 1)), vshape)
        pos = _traced_positions("scatter", x, idx, 0)
        return _scatter_traced("scatter", x, pos, M.broadcast_to(_t(updates, x), vshape),
                               "assign" if overwrite else "add", include_self=False)
    rows = _np(index).astype(np.int64).reshape(-1)
    rows = _check_range("scatter", "index", rows, x.shape[0], f"the size of axis 0 of x {list(x.shape)}")
    pos = _row_positions(x.shape, rows)
    updates = M.broadcast_to(_t(updates, x), list(pos.shape))
    return _scatter_flat(x, pos, updates, "assign" if overwrite else "add", include_self=False)


def index_fill(x, index, axis, value, name=None):
    axis = _axis(axis, len(x.shape))
    rows = _check_range("index_fill", "index", _np(index).astype(np.int64).reshape(-1), x.shape[axis],
                        f"the size of axis {axis} of x {list(x.shape)}", allow_negative=True)
    pos = _row_positions(x.shape, rows, axis)
    return _scatter_flat(x, pos, M.broadcast_to(_t(value, x), list(pos.shape)), "assign")


def _index_add_traced(x, index, axis, value):
    """index_add for a traced index: the op scatter_add along axis. Nothing here reads the
    index's length, which may be a data-dependent size (nonzero's count); value takes the shape
    of index_select(x, index) by broadcasting (Note [Index tensors of a trace])."""
    shape = list(x.shape)
    n = shape[axis]
    if n < 0:
        raise ValueError(f"index_add: an index tensor of a to_static trace needs axis {axis} of x of known size, "
                         f"not {shape} (a dim the input_spec leaves None)")
    rows = M.cast(M.reshape(index, [-1]), "int64")
    rows = M.where(M.less_than(rows, _ops.scalar_like(rows, 0.0)), rows + n, rows)
    rows = _ops.check_index(rows, n, "index_add", "index", f"the size of axis {axis} of {shape}")
    value = M.add(M.cast(value, x.dtype), _ops.zeros_like(M.index_select(x, rows, axis)))
    return _ops.scatter_add(x, rows, value, axis)


def index_add(x, index, axis, value, name=None):
    axis = _axis(axis, len(x.shape))
    if _traced(index):  # Note [Index tensors of a trace]: rows along axis, each a whole slice
        return _index_add_traced(x, index, axis, _t(value, x))
    rows = _check_range("index_add", "index", _np(index).astype(np.int64).reshape(-1), x.shape[axis],
                        f"the size of axis {axis} of x {list(x.shape)}", allow_negative=True)
    pos = _row_positions(x.shape, rows, axis)
    return _scatter_flat(x, pos, M.moveaxis(_t(value, x), axis, 0), "add")


def gather_nd(x, index, name=None):
    """x[index[..., 0], index[..., 1], ...]: the last axis of index addresses x's leading dims."""
    idx = _np(index).astype(np.int64)
    k = idx.shape[-1]
    if k > len(x.shape):
        raise ValueError(f"gather_nd: index addresses {k} dims but x has rank {len(x.shape)}")
    grid = np.arange(int(np.prod(x.shape)), dtype=np.int64).reshape(x.shape)
    for d in range(k):
        _check_range("gather_nd", "index", idx[..., d], x.shape[d], f"the size of axis {d} of x {list(x.shape)}")
    return _gather_flat(x, grid[tuple(idx[..., d] for d in range(k))])


def scatter_nd_add(x, index, updates, name=None):
    idx = _np(index).astype(np.int64)
    k = idx.shape[-1]
    grid = np.arange(int(np.prod(x.shape)), dtype=np.int64).reshape(x.shape)
    for d in range(k):
        _check_range("scatter_nd_add", "index", idx[..., d], x.shape[d], f"the size of axis {d} of x {list(x.shape)}")
    pos = grid[tuple(idx[..., d] for d in range(k))]
    return _scatter_flat(x, pos, M.broadcast_to(_t(updates, x), list(pos.shape)), "add")


def scatter_nd(index, updates, shape, name=None):
    return scatter_nd_add(_ops.full(_shape(shape), 0.0, updates.dtype, updates._device), index, updates)


def index_sample(x, index):
    """out[i, j] = x[i, index[i, j]] for 2-D x and index."""
    return take_along_axis(x, index, 1, broadcast=False)


def take(x, index, mode="raise", name=None):
    """x's elements at flat positions index ('raise': out of range is an error; 'wrap'; 'clip')."""
    n = int(np.prod(x.shape))
    idx = _np(index).astype(np.int64)
    if mode == "wrap":
        idx = np.mod(idx, n)
    elif mode == "clip":
        idx = np.clip(idx, 0, n - 1)
    elif mode == "raise":
        idx = _check_range("take", "index", idx, n, f"the number of elements of x {list(x.shape)}",
                           allow_negative=True)
    else:
        raise ValueError(f"take: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    return _gather_flat(x, idx)


def masked_scatter(x, mask, value, name=None):
    """x with the positions where mask (broadcast to x) is true filled, in order, from value's elements."""
    m = np.broadcast_to(_np(mask).astype(bool), x.shape)
    pos = np.flatnonzero(m)
    if value.size < pos.size:
        raise ValueError(f"masked_scatter: mask selects {pos.size} elements but value has only {value.size}")
    src = _ops.slice(M.reshape(value, [-1]), [0], [0], [int(pos.size)])
    return _scatter_flat(x, pos, src, "assign")


def select_scatter(x, values, axis, index, name=None):
    """x with the slice at `index` along axis replaced by values."""
    axis = _axis(axis, len(x.shape))
    pos = _row_positions(x.shape, np.array([int(index) % x.shape[axis]]), axis)[0]
    return _scatter_flat(x, pos, M.broadcast_to(_t(values, x), list(pos.shape)), "assign")


def slice_scatter(x, value, axes, starts, ends, strides, name=None):
    grid = np.arange(int(np.prod(x.shape)), dtype=np.int64).reshape(x.shape)
    key = [builtins.slice(None)] * len(x.shape)
    for a, s, e, st in zip(_shape(axes), _shape(starts), _shape(ends), _shape(strides)):
        key[a % len(x.shape)] = builtins.slice(s, e, st)
    pos = grid[tuple(key)]
    return _scatter_flat(x, pos, M.broadcast_to(_t(value, x), list(pos.shape)), "assign")


def diagonal_scatter(x, y, offset=0, axis1=0, axis2=1, name=None):
    grid = np.arange(int(np.prod(x.shape)), dtype=np.int64).reshape(x.shape)
    pos = np.diagonal(grid, offset, axis1, axis2)
    return _scatter_flat(x, pos, M.broadcast_to(_t(y, x), list(pos.shape)), "assign")


def fill_diagonal(x, value, offset=0, wrap=False, name=None):
    """x with value on its diagonal at offset (2-D), or at [i, i, ..., i] (all dims equal);
    wrap: a tall matrix starts the diagonal again every columns + 1 rows (numpy's fill_diagonal)."""
    shape = tuple(x.shape)
    mask = np.zeros(shape, dtype=bool)
    if len(shape) == 2 and offset:
        rows = np.arange(shape[0])
        keep = (rows + offset >= 0) & (rows + offset < shape[1])
        mask[rows[keep], rows[keep] + offset] = True
    else:
        if len(shape) > 2 and len(set(shape)) != 1:
            raise ValueError(f"fill_diagonal: a tensor of rank > 2 must have all dims equal, got {list(shape)}")
        np.fill_diagonal(mask, True, wrap=wrap)
    return M.where(to_tensor(mask, place=x._device), M.cast(_t(value, x), x.dtype), x)


def fill_diagonal_tensor(x, y, offset=0, dim1=0, dim2=1, name=None):
    return diagonal_scatter(x, y, offset, dim1, dim2)


def masked_fill(x, mask, value, name=None):
    value = value if isinstance(value, Tensor) else M._as_tensor(value, x)
    return M.where(mask, M.cast(value, x.dtype), x)


# ---- sorting and selection ----

def _sort_key(a, descending):
    if a.dtype == np.bool_ or a.dtype.kind == "u":
        a = a.astype(np.int64)
    return -a if descending else a


_MAX_TRACED_SORT = 256  # a traced sort is n unrolled selections: up to this many entries along the axis


def _select_traced(x, k, axis, largest):
    """(values, indices) of the k largest (smallest) entries of a traced x along axis, in order,
    ties by position: k rounds of argmax (argmin) that mask out what they took (no sort op yet;
    the values' gradient flows through the gathers)."""
    n = x.shape[axis]
    fill = float("-inf") if largest else float("inf")
    if not x.dtype.is_floating_point:
        info = np.iinfo(to_numpy_dtype(x.dtype)) if x.dtype != _BOOL else None
        fill = float(info.min if largest else info.max) if info is not None else (0.0 if largest else 1.0)
    where = [1] * len(x.shape)
    where[axis] = n
    positions = to_tensor(np.arange(n, dtype=np.int64).reshape(where), place=x._device)
    work, values, indices = x.detach(), [], []
    for _ in range(k):
        i = (M.argmax if largest else M.argmin)(work, axis=axis, keepdim=True)
        indices.append(i)
        values.append(take_along_axis(x, i, axis))
        work = M.where(M.equal(positions, i), _ops.full([], fill, x.dtype, x._device), work)
    if not values:
        shape = list(x.shape)
        shape[axis] = 0
        return _ops.full(shape, 0.0, x.dtype, x._device), _ops.full(shape, 0.0, int64, x._device)
    return M.concat(values, axis), M.concat(indices, axis)


def _check_traced_sort(op, x, axis):
    if x.shape[axis] < 0 or x.shape[axis] > _MAX_TRACED_SORT:
        raise NotImplementedError(f"{op}: sorting a tensor of a to_static trace along an axis of size "
                                  f"{x.shape[axis]} is not supported (no sort op yet; up to {_MAX_TRACED_SORT} "
                                  "entries are selected one by one)")


def argsort(x, axis=-1, descending=False, stable=False, name=None):
    axis = _axis(axis, len(x.shape))
    if _traced(x) and len(x.shape):  # Note [Index tensors of a trace]
        _check_traced_sort("argsort", x, axis)
        return _select_traced(x, x.shape[axis], axis, descending)[1]
    a = x.numpy()
    if a.ndim == 0:
        return to_tensor(np.zeros((), np.int64), place=x._device)
    order = np.argsort(_sort_key(a, descending), axis=axis, kind="stable")
    return to_tensor(order.astype(np.int64), place=x._device)


def sort(x, axis=-1, descending=False, stable=False, name=None):
    if len(x.shape) == 0:
        return x
    if _traced(x):
        axis = _axis(axis, len(x.shape))
        _check_traced_sort("sort", x, axis)
        return _select_traced(x, x.shape[axis], axis, descending)[0]
    return take_along_axis(x, argsort(x, axis, descending), axis)


def msort(input, *, out=None):  # noqa: A002
    return sort(input, 0)


def topk(x, k, axis=None, largest=True, sorted=True, name=None, *, out=None):  # noqa: A002
    """(values, indices) of the k largest (or smallest) entries along axis (default the last)."""
    k = int(k.item()) if isinstance(k, Tensor) else int(k)
    axis = -1 if axis is None else axis
    axis = _axis(axis, len(x.shape))
    if not 0 <= k <= (x.shape[axis] if x.shape else 1):
        raise ValueError(f"topk: k = {k} is out of range for axis {axis} of size {x.shape[axis] if x.shape else 1}")
    if _traced(x) and len(x.shape):  # Note [Index tensors of a trace]
        if k > _MAX_TRACED_SORT:
            raise NotImplementedError(f"topk: k = {k} on a tensor of a to_static trace is not supported (no sort "
                                      f"op yet; up to {_MAX_TRACED_SORT} entries are selected one by one)")
        return _select_traced(x, k, axis, largest)
    a = np.moveaxis(x.numpy(), axis, -1)
    order = np.argsort(_sort_key(a, largest), axis=-1, kind="stable")[..., :k]
    idx = to_tensor(np.moveaxis(order, -1, axis).astype(np.int64), place=x._device)
    return take_along_axis(x, idx, axis), idx


def kthvalue(x, k, axis=None, keepdim=False, name=None):
    """(the k-th smallest value, its index) along axis (default the last)."""
    axis = _axis(-1 if axis is None else axis, len(x.shape))
    n = x.shape[axis] if x.shape else 1
    if not 1 <= int(k) <= n:
        raise ValueError(f"kthvalue: k = {k} is out of range for axis {axis} of size {n}")
    order = np.argsort(x.numpy(), axis=axis, kind="stable")
    idx = np.take(order, [int(k) - 1], axis=axis)
    it = to_tensor(idx.astype(np.int64), place=x._device)
    v = take_along_axis(x, it, axis)
    if not keepdim:
        v, it = M.squeeze(v, axis), M.squeeze(it, axis)
    return v, it


def mode(x, axis=-1, keepdim=False, name=None):
    """(the most frequent value, the index of its last occurrence) along axis; ties go to the smallest value."""
    axis = _axis(axis, len(x.shape))
    a = np.moveaxis(x.numpy(), axis, -1)
    flat = a.reshape(-1, a.shape[-1])
    idx = np.zeros(flat.shape[0], np.int64)
    for r, row in enumerate(flat):
        vals, counts = np.unique(row, return_counts=True)
        best = vals[np.argmax(counts)]
        idx[r] = np.flatnonzero(row == best)[-1]
    idx = np.expand_dims(idx.reshape(a.shape[:-1]), axis)
    it = to_tensor(idx, place=x._device)
    v = take_along_axis(x, it, axis)
    if not keepdim:
        v, it = M.squeeze(v, axis), M.squeeze(it, axis)
    return v, it


def _median(x, axis, keepdim, mode, ignore_nan):
    if axis is None or isinstance(axis, (list, tuple)):
        # Over all axes (or several): those axes flattened into one; Paddle then returns the value only.
        nd = len(x.shape)
        axes = list(range(nd)) if axis is None else [_axis(a, nd) for a in axis]
        kept = [d for d in range(nd) if d not in axes]
        flat = M.reshape(M.transpose(x, kept + axes) if nd else x, [x.shape[d] for d in kept] + [-1])
        v = _median(flat, -1, False, mode, ignore_nan)
        v = v[0] if mode == "min" else v
        if keepdim:
            v = M.reshape(v, [1 if d in axes else x.shape[d] for d in range(nd)])
        return v
    axis = _axis(axis, len(x.shape))
    a = np.moveaxis(x.numpy(), axis, -1)
    if a.dtype.kind != "f":
        x = M.cast(x, default_float_dtype()) if mode == "avg" else x
    order = np.argsort(a, axis=-1, kind="stable")  # NaN sorts last
    n_valid = (~np.isnan(a)).sum(-1) if ignore_nan and a.dtype.kind == "f" else np.full(a.shape[:-1], a.shape[-1])
    has_nan = np.isnan(a).any(-1) if a.dtype.kind == "f" and not ignore_nan else np.zeros(a.shape[:-1], bool)
    lo = np.maximum((n_valid - 1) // 2, 0)
    hi = np.where(mode == "avg", np.maximum(n_valid // 2, 0), lo)
    # A NaN in the slice (not ignored) makes the median NaN: the first NaN (NaNs sort last, in order).
    first_nan = (~np.isnan(a)).sum(-1) if a.dtype.kind == "f" else lo
    lo = np.where(has_nan, first_nan, lo)
    hi = np.where(has_nan, first_nan, hi)
    lo_idx = np.take_along_axis(order, lo[..., None], -1)
    hi_idx = np.take_along_axis(order, hi[..., None], -1)
    lo_t = to_tensor(np.moveaxis(lo_idx, -1, axis).astype(np.int64), place=x._device)
    v_lo = take_along_axis(x, lo_t, axis)
    if mode == "min":
        v = v_lo if keepdim else M.squeeze(v_lo, axis)
        return v, (lo_t if keepdim else M.squeeze(lo_t, axis))
    v_hi = take_along_axis(x, to_tensor(np.moveaxis(hi_idx, -1, axis).astype(np.int64), place=x._device), axis)
    v = M.multiply(M.add(v_lo, v_hi), 0.5)
    if ignore_nan and a.dtype.kind == "f":
        empty = to_tensor(np.expand_dims(n_valid == 0, axis), place=x._device)
        v = M.where(empty, M.full_like(v, float("nan")), v)
    return v if keepdim else M.squeeze(v, axis)


def median(x, axis=None, keepdim=False, mode="avg", name=None, *, out=None):
    """The median along axis; mode 'avg' averages the two middle values of an even count,
    'min' takes the lower one and also returns its index."""
    if mode not in ("avg", "min"):
        raise ValueError(f"median: mode must be 'avg' or 'min', got {mode!r}")
    return _median(x, axis, keepdim, mode, False)


def nanmedian(x, axis=None, keepdim=False, mode="avg", name=None):
    if mode not in ("avg", "min"):
        raise ValueError(f"nanmedian: mode must be 'avg' or 'min', got {mode!r}")
    return _median(x, axis, keepdim, mode, True)


def _quantile(x, q, axis, keepdim, interpolation, ignore_nan):
    if interpolation not in ("linear", "lower", "higher", "nearest", "midpoint"):
        raise ValueError(f"quantile: interpolation must be linear, lower, higher, nearest or midpoint, "
                         f"got {interpolation!r}")
    scalar_q = isinstance(q, numbers.Number)
    qs = np.atleast_1d(_np(q)).astype(np.float64).reshape(-1)
    if ((qs < 0) | (qs > 1)).any():
        raise ValueError(f"quantile: q must be in [0, 1], got {qs.tolist()}")
    if not x.dtype.is_floating_point:
        x = M.cast(x, default_float_dtype())
    nd = len(x.shape)
    if axis is None:
        axes = list(range(nd))
    else:
        axes = [_axis(a, nd) for a in ([axis] if isinstance(axis, numbers.Integral) else axis)]
    kept = [d for d in range(nd) if d not in axes]
    moved = M.transpose(x, kept + axes) if nd else M.reshape(x, [1])
    lead = [x.shape[d] for d in kept]
    flat = M.reshape(moved, lead + [-1])
    a = flat.numpy()
    order = np.argsort(a, axis=-1, kind="stable")
    n = (~np.isnan(a)).sum(-1) if ignore_nan else np.full(a.shape[:-1], a.shape[-1])
    has_nan = np.isnan(a).any(-1) if not ignore_nan else np.zeros(a.shape[:-1], bool)
    outs = []
    for qq in qs:
        pos = qq * np.maximum(n - 1, 0)
        lo = np.floor(pos).astype(np.int64)
        hi = np.ceil(pos).astype(np.int64)
        if interpolation == "nearest":
            lo = hi = np.round(pos).astype(np.int64)
        elif interpolation == "lower":
            hi = lo
        elif interpolation == "higher":
            lo = hi
        lo = np.where(has_nan, a.shape[-1] - 1, lo)
        hi = np.where(has_nan, a.shape[-1] - 1, hi)
        v_lo = take_along_axis(flat, to_tensor(np.take_along_axis(order, lo[..., None], -1), place=x._device), -1)
        v_hi = take_along_axis(flat, to_tensor(np.take_along_axis(order, hi[..., None], -1), place=x._device), -1)
        if interpolation == "midpoint":
            w = np.where(hi > lo, 0.5, 0.0)
        elif interpolation == "linear":
            w = pos - np.floor(pos)
        else:
            w = np.zeros_like(pos)
        wt = to_tensor(w[..., None].astype(to_numpy_dtype(x.dtype)), place=x._device)
        v = M.add(v_lo, M.multiply(M.subtract(v_hi, v_lo), wt))
        if ignore_nan:
            v = M.where(to_tensor((n == 0)[..., None], place=x._device), M.full_like(v, float("nan")), v)
        v = M.squeeze(v, -1)
        if keepdim:
            shape = list(x.shape)
            for d in axes:
                shape[d] = 1
            v = M.reshape(v, shape)
        outs.append(v)
    return outs[0] if scalar_q else M.stack(outs, 0)


def quantile(x, q, axis=None, keepdim=False, interpolation="linear", name=None, *, out=None):
    """The q-th quantiles along axis (q a number or a list: stacked on a new first axis)."""
    return _quantile(x, q, axis, keepdim, interpolation, False)


def nanquantile(x, q, axis=None, keepdim=False, interpolation="linear"):
    return _quantile(x, q, axis, keepdim, interpolation, True)


def searchsorted(sorted_sequence, values, out_int32=False, right=False, name=None, *, side=None, out=None,
                 sorter=None):
    """Where values would be inserted into the sorted last axis of sorted_sequence."""
    right = side == "right" if side is not None else right
    seq, vals = sorted_sequence.numpy(), _np(values)
    if sorter is not None:
        seq = np.take_along_axis(seq, _np(sorter), -1)
    how = "right" if right else "left"
    if seq.ndim == 1:
        res = np.searchsorted(seq, vals, side=how)
    else:
        res = np.stack([np.searchsorted(s, v, side=how) for s, v in
                        zip(seq.reshape(-1, seq.shape[-1]), vals.reshape(-1, vals.shape[-1]))]).reshape(vals.shape)
    return to_tensor(res.astype(np.int32 if out_int32 else np.int64), place=sorted_sequence._device)


def bucketize(x, sorted_sequence, out_int32=False, right=False, name=None, *, out=None):
    if len(sorted_sequence.shape) != 1:
        raise ValueError(f"bucketize: sorted_sequence must be 1-D, got shape {list(sorted_sequence.shape)}")
    return searchsorted(sorted_sequence, x, out_int32, right)


def unique(x, return_index=False, return_inverse=False, return_counts=False, axis=None, dtype="int64",
           sorted=True, name=None):  # noqa: A002
    """The sorted unique values (of the flattened x, or slices along axis), with optional
    first indices, inverse indices and counts in `dtype`."""
    a = x.numpy()
    idt = to_numpy_dtype(dtype)
    if axis is None:
        vals, first, inverse, counts = np.unique(a.reshape(-1), return_index=True, return_inverse=True,
                                                 return_counts=True)
        out = _gather_flat(x, first)
    else:
        axis = _axis(axis, a.ndim)
        vals, first, inverse, counts = np.unique(a, return_index=True, return_inverse=True, return_counts=True,
                                                 axis=axis)
        out = M.gather(x, to_tensor(first.astype(np.int64), place=x._device), axis)
    extra = []
    if return_index:
        extra.append(to_tensor(first.astype(idt), place=x._device))
    if return_inverse:
        extra.append(to_tensor(inverse.reshape(-1).astype(idt), place=x._device))
    if return_counts:
        extra.append(to_tensor(counts.astype(idt), place=x._device))
    return (out, *extra) if extra else out


def unique_consecutive(x, return_inverse=False, return_counts=False, axis=None, dtype="int64", name=None):
    """x with each run of equal consecutive values (or slices along axis) kept once."""
    a = x.numpy()
    idt = to_numpy_dtype(dtype)
    if axis is None:
        flat = a.reshape(-1)
        change = np.r_[True, flat[1:] != flat[:-1]] if flat.size else np.zeros(0, bool)
        out = _gather_flat(x, np.flatnonzero(change))
    else:
        axis = _axis(axis, a.ndim)
        m = np.moveaxis(a, axis, 0).reshape(a.shape[axis], -1)
        change = np.r_[True, (m[1:] != m[:-1]).any(1)] if m.shape[0] else np.zeros(0, bool)
        out = M.gather(x, to_tensor(np.flatnonzero(change).astype(np.int64), place=x._device), axis)
    starts = np.flatnonzero(change)
    extra = []
    if return_inverse:
        extra.append(to_tensor((np.cumsum(change) - 1).astype(idt), place=x._device))
    if return_counts:
        extra.append(to_tensor(np.diff(np.r_[starts, change.size]).astype(idt), place=x._device))
    return (out, *extra) if extra else out


def argwhere(input):  # noqa: A002
    return M.nonzero(input)


# ---- shapes ----

def meshgrid(*args, **kwargs):
    """Coordinate grids from 1-D tensors (matrix 'ij' indexing, or indexing='xy')."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = tuple(args[0])
    indexing = kwargs.get("indexing", "ij")
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    args = [M.reshape(_t(a), [-1]) for a in args]
    shape = [a.shape[0] for a in args]
    outs = []
    for i, a in enumerate(args):
        view = [1] * len(args)
        view[i] = shape[i]
        outs.append(M.broadcast_to(M.reshape(a, view), shape))
    if indexing == "xy" and len(outs) >= 2:
        outs = [M.transpose(o, [1, 0] + list(range(2, len(shape)))) for o in outs]
    return outs


def tensor_split(x, num_or_indices, axis=0, name=None):
    """Splits x along axis into num nearly equal parts (the first ones one longer) or at indices."""
    axis = _axis(axis, len(x.shape))
    size = x.shape[axis]
    if isinstance(num_or_indices, Tensor):
        num_or_indices = num_or_indices.numpy().tolist()
    if isinstance(num_or_indices, numbers.Integral):
        n = int(num_or_indices)
        if n <= 0:
            raise ValueError(f"tensor_split: the number of sections must be positive, got {n}")
        q, r = divmod(size, n)
        bounds = np.cumsum([0] + [q + 1] * r + [q] * (n - r)).tolist()
    else:
        idx = [int(i) for i in num_or_indices]
        idx = [i + size if i < 0 else i for i in idx]
        bounds = [0] + idx + [size]
    out = []
    for s, e in zip(bounds[:-1], bounds[1:]):
        s, e = builtins.min(builtins.max(s, 0), size), builtins.min(builtins.max(e, 0), size)
        out.append(_ops.slice(x, [axis], [s], [builtins.max(e, s)]))
    return out


def _nsplit(op, x, num_or_indices, axis, min_rank):
    if len(x.shape) < min_rank:
        raise ValueError(f"{op}: x must have at least {min_rank} dims, got {len(x.shape)}")
    if isinstance(num_or_indices, numbers.Integral) and x.shape[axis] % int(num_or_indices):
        raise ValueError(f"{op}: axis {axis} of size {x.shape[axis]} cannot be split into {num_or_indices} equal parts")
    return tensor_split(x, num_or_indices, axis)


def hsplit(x, num_or_indices, name=None):
    return _nsplit("hsplit", x, num_or_indices, 1 if len(x.shape) > 1 else 0, 1)


def vsplit(x, num_or_indices, name=None):
    return _nsplit("vsplit", x, num_or_indices, 0, 2)


def dsplit(x, num_or_indices, name=None):
    return _nsplit("dsplit", x, num_or_indices, 2, 3)


def atleast_1d(*inputs, name=None):
    out = [M.reshape(_t(t), [1]) if len(_t(t).shape) == 0 else _t(t) for t in inputs]
    return out[0] if len(out) == 1 else out


def atleast_2d(*inputs, name=None):
    def one(t):
        t = _t(t)
        return M.reshape(t, [1] * (2 - len(t.shape)) + list(t.shape)) if len(t.shape) < 2 else t
    out = [one(t) for t in inputs]
    return out[0] if len(out) == 1 else out


def atleast_3d(*inputs, name=None):
    def one(t):
        t = _t(t)
        nd = len(t.shape)
        if nd == 0:
            return M.reshape(t, [1, 1, 1])
        if nd == 1:
            return M.reshape(t, [1, t.shape[0], 1])
        if nd == 2:
            return M.unsqueeze(t, -1)
        return t
    out = [one(t) for t in inputs]
    return out[0] if len(out) == 1 else out


def hstack(x, name=None):
    x = [atleast_1d(t) for t in x]
    return M.concat(x, 0 if len(x[0].shape) == 1 else 1)


def vstack(x, name=None):
    return M.concat([atleast_2d(t) for t in x], 0)


row_stack = vstack


def dstack(x, name=None):
    return M.concat([atleast_3d(t) for t in x], 2)


def column_stack(x, name=None):
    return M.concat([M.reshape(t, [-1, 1]) if len(t.shape) < 2 else t for t in x], 1)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):  # noqa: A002
    """A tensor whose (dim1, dim2) diagonals at offset are input's last axis."""
    x = _t(input)
    n = x.shape[-1]
    m = n + builtins.abs(int(offset))
    nd = len(x.shape) + 1
    d1, d2 = dim1 % nd, dim2 % nd
    if d1 == d2:
        raise ValueError(f"diag_embed: dim1 and dim2 must differ, both are {d1}")
    eye = np.zeros((n, m, m), dtype=np.float32)
    r = np.arange(n)
    eye[r, r + builtins.max(-offset, 0), r + builtins.max(offset, 0)] = 1
    e = M.cast(to_tensor(eye, place=x._device), x.dtype)
    # out[..., i, j] = sum_k x[..., k] * eye[k, i, j]
    out = M.sum(M.multiply(M.reshape(x, list(x.shape) + [1, 1]), e), -3) if x.dtype != _BOOL else None
    if out is None:
        raise TypeError("diag_embed: a bool input is not supported; cast it to an integer dtype first")
    # out's last two axes are (dim1, dim2) in order; move them where asked.
    lo, hi = builtins.min(d1, d2), builtins.max(d1, d2)
    order = list(range(nd - 2))
    order.insert(lo, nd - 2 if d1 < d2 else nd - 1)
    order.insert(hi, nd - 1 if d1 < d2 else nd - 2)
    return M.transpose(out, order) if order != list(range(nd)) else out


def diagflat(x, offset=0, name=None):
    return diag_embed(M.reshape(x, [-1]), offset)


def diag(x, offset=0, padding_value=0, name=None):
    """A 1-D x: the square matrix with x on diagonal `offset` (padding_value elsewhere); a 2-D x: that diagonal."""
    if len(x.shape) == 1:
        out = diag_embed(x, offset)
        if padding_value:
            n = out.shape[0]
            mask = np.eye(n, k=int(offset), dtype=bool)
            out = M.where(to_tensor(mask, place=x._device), out, M.full_like(out, padding_value))
        return out
    if len(x.shape) == 2:
        return M.diagonal(x, offset, 0, 1)
    raise ValueError(f"diag: x must be 1-D or 2-D, got shape {list(x.shape)}")


def rot90(x, k=1, axes=(0, 1), name=None):
    """x rotated by 90 degrees k times in the plane of axes (from the first toward the second)."""
    axes = [a % len(x.shape) for a in axes]
    if len(axes) != 2 or axes[0] == axes[1]:
        raise ValueError(f"rot90: axes must be two different axes, got {list(axes)}")
    k = int(k) % 4
    perm = list(range(len(x.shape)))
    perm[axes[0]], perm[axes[1]] = perm[axes[1]], perm[axes[0]]
    if k == 0:
        return x
    if k == 2:
        return M.flip(M.flip(x, axes[0]), axes[1])
    if k == 1:
        return M.transpose(M.flip(x, axes[1]), perm)
    return M.flip(M.transpose(x, perm), axes[1])


def repeat_interleave(x, repeats, axis=None, name=None, *, output_size=None):
    """Each element (or slice along axis) repeated `repeats` times (an int or one count per slice)."""
    if axis is None:
        x, axis = M.reshape(x, [-1]), 0
    axis = _axis(axis, len(x.shape))
    n = x.shape[axis]
    reps = _np(repeats).astype(np.int64).reshape(-1)
    if reps.size == 1:
        reps = np.full(n, int(reps[0]))
    if reps.size != n or (reps < 0).any():
        raise ValueError(f"repeat_interleave: repeats must be one non-negative count or {n} of them, "
                         f"got {reps.tolist()}")
    return M.gather(x, to_tensor(np.repeat(np.arange(n), reps), place=x._device), axis)


def unflatten(x, axis, shape, name=None):
    axis = _axis(axis, len(x.shape))
    shape = _shape(shape)
    return M.reshape(x, list(x.shape[:axis]) + shape + list(x.shape[axis + 1:]))


def unfold(x, axis, size, step, name=None):
    """Windows of `size` along axis, every `step`; the window becomes a new last axis."""
    axis = _axis(axis, len(x.shape))
    n = x.shape[axis]
    count = (n - size) // step + 1 if n >= size else 0
    idx = (np.arange(count)[:, None] * step + np.arange(size)[None, :]).reshape(-1)
    g = M.gather(x, to_tensor(idx.astype(np.int64), place=x._device), axis)
    g = M.reshape(g, list(x.shape[:axis]) + [count, size] + list(x.shape[axis + 1:]))
    return M.moveaxis(g, axis + 1, -1)


def as_strided(x, shape, stride, offset=0, name=None):
    """The elements of x's flat (contiguous) storage at offset + sum(i_k * stride_k)."""
    shape, stride = _shape(shape), _shape(stride)
    if len(shape) != len(stride):
        raise ValueError(f"as_strided: shape {shape} and stride {stride} have different lengths")
    pos = np.full(shape, int(offset), dtype=np.int64)
    for d, (s, st) in enumerate(zip(shape, stride)):
        view = [1] * len(shape)
        view[d] = s
        pos = pos + (np.arange(s) * st).reshape(view)
    _check_range("as_strided", "position", pos, builtins.max(int(np.prod(x.shape)), 1),
                 f"the number of elements of x {list(x.shape)}")
    return _gather_flat(x, pos)


def narrow(input, dim, start, length):  # noqa: A002
    dim = _axis(dim, len(input.shape))
    start = int(start.item()) if isinstance(start, Tensor) else int(start)
    if start < 0:
        start += input.shape[dim]
    if start < 0 or start + int(length) > input.shape[dim]:
        raise ValueError(f"narrow: start {start} with length {length} does not fit axis {dim} of size "
                         f"{input.shape[dim]}")
    return _ops.slice(input, [dim], [start], [start + int(length)])


def vander(x, n=None, increasing=False, name=None):
    """Columns x**0 .. x**(n-1) (decreasing powers unless increasing)."""
    n = x.shape[0] if n is None else int(n)
    cols, p = [], _ops.ones_like(x)
    for _ in range(n):
        cols.append(M.unsqueeze(p, -1))
        p = M.multiply(p, x)
    if not increasing:
        cols = cols[::-1]
    return M.concat(cols, -1) if cols else M.reshape(x, [x.shape[0], 0])


def block_diag(inputs, name=None):
    mats = [M.reshape(t, [1, -1]) if len(t.shape) < 2 else t for t in (atleast_1d(t) for t in inputs)]
    rows = builtins.sum(m.shape[0] for m in mats)
    cols = builtins.sum(m.shape[1] for m in mats)
    dtype = mats[0].dtype
    out, c = [], 0
    for m in mats:
        out.append(_ops.pad(M.cast(m, dtype), [0, 0, c, cols - c - m.shape[1]]))
        c += m.shape[1]
    return M.concat(out, 0) if rows else _ops.full([0, cols], 0.0, dtype, None)


def cartesian_prod(x, name=None):
    x = list(x)
    if len(x) == 1:
        return x[0]
    grids = meshgrid(*x)
    return M.stack([M.reshape(g, [-1]) for g in grids], 1)


def combinations(x, r=2, with_replacement=False, name=None):
    import itertools
    n = x.shape[0]
    pick = itertools.combinations_with_replacement(range(n), r) if with_replacement else \
        itertools.combinations(range(n), r)
    idx = np.array(list(pick), dtype=np.int64).reshape(-1, r)
    return _gather_flat(x, idx) if idx.size else M.reshape(_ops.slice(x, [0], [0], [0]), [0, r])


def tril_indices(row, col, offset=0, dtype="int64"):
    r, c = np.tril_indices(int(row), int(offset), int(col))
    return to_tensor(np.stack([r, c]).astype(to_numpy_dtype(dtype)))


def triu_indices(row, col=None, offset=0, dtype="int64"):
    r, c = np.triu_indices(int(row), int(offset), int(row if col is None else col))
    return to_tensor(np.stack([r, c]).astype(to_numpy_dtype(dtype)))


def crop(x, shape=None, offsets=None, name=None):
    shape = list(x.shape) if shape is None else _shape(shape)
    offsets = [0] * len(x.shape) if offsets is None else _shape(offsets)
    shape = [x.shape[i] - offsets[i] if s == -1 else s for i, s in enumerate(shape)]
    return _ops.slice(x, list(range(len(x.shape))), offsets, [o + s for o, s in zip(offsets, shape)])


def multiplex(inputs, index, name=None):
    """Row i of the result is row i of inputs[index[i]]."""
    stacked = M.stack(list(inputs), 0)
    sel = _np(index).astype(np.int64).reshape(-1)
    n = stacked.shape[1]
    grid = np.arange(int(np.prod(stacked.shape)), dtype=np.int64).reshape(stacked.shape)
    return _gather_flat(stacked, grid[sel, np.arange(n)])


def swapaxes(x, perm, name=None, *args):
    """x with two axes exchanged (Paddle's swapaxes(x, axis0, axis1); perm may be the pair)."""
    a0, a1 = (perm if isinstance(perm, (list, tuple)) else (perm, args[0] if args else name))
    order = list(range(len(x.shape)))
    a0, a1 = int(a0) % len(order), int(a1) % len(order)
    order[a0], order[a1] = order[a1], order[a0]
    return M.transpose(x, order)


swapdims = swapaxes


def permute(input, *dims):  # noqa: A002
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = dims[0]
    return M.transpose(input, list(dims))


def ravel(input):  # noqa: A002
    return M.reshape(input, [-1])


def matrix_transpose(x, name=None):
    if len(x.shape) < 2:
        raise ValueError(f"matrix_transpose: x must have at least 2 dims, got shape {list(x.shape)}")
    return M.transpose(x, list(range(len(x.shape) - 2)) + [len(x.shape) - 1, len(x.shape) - 2])


def reverse(x, axis, name=None):
    return M.flip(x, axis)


def rank(input):  # noqa: A002
    return to_tensor(len(input.shape), dtype="int32")


def is_empty(x, name=None):
    return to_tensor(int(np.prod(x.shape)) == 0)


def is_floating_point(x):
    return x.dtype.is_floating_point


def is_integer(x):
    return x.dtype.is_integer


def tolist(x):
    return x.numpy().tolist()


def broadcast_shape(x_shape, y_shape):
    return list(np.broadcast_shapes(tuple(x_shape), tuple(y_shape)))


def broadcast_shapes(*shapes):
    return list(np.broadcast_shapes(*[tuple(s) for s in shapes]))


def view(x, shape_or_dtype, name=None):
    if isinstance(shape_or_dtype, (list, tuple, Tensor)) or isinstance(shape_or_dtype, numbers.Integral):
        return M.reshape(x, shape_or_dtype)
    d = convert_dtype(shape_or_dtype)
    a = np.ascontiguousarray(x.numpy()).view(to_numpy_dtype(d))
    return to_tensor(a, dtype=d, place=x._device)


def view_as(x, other, name=None):
    return M.reshape(x, other.shape)


def scatter_add(input, dim, index, src=None, axis=0):  # noqa: A002
    """input with src's values added at index along dim (Paddle 3.3's scatter_add(input, dim, index, src):
    scatter_reduce with 'sum'). oar's older form scatter_add(x, index, updates, axis=0), a 1-D index
    of slices along axis, is still taken when the second argument is an index."""
    if not isinstance(dim, (numbers.Integral, np.integer)):
        return M.scatter_add(input, dim, index, axis if src is None else src)
    if src is None:
        raise TypeError("scatter_add: expected scatter_add(input, dim, index, src); src is missing")
    return scatter_reduce(input, dim, index, src, "sum")


def cat(x, axis=0, name=None, *, out=None):
    return M.concat(x, axis)


concatenate = cat


def split_with_sizes(x, split_sizes, dim=0):
    return M.split(x, list(split_sizes), dim)


def batch(reader, batch_size, drop_last=False):
    """paddle.batch: a reader of lists of batch_size samples from a sample reader."""
    if int(batch_size) <= 0:
        raise ValueError(f"batch: batch_size must be a positive int, got {batch_size}")

    def batched():
        out = []
        for sample in reader():
            out.append(sample)
            if len(out) == batch_size:
                yield out
                out = []
        if out and not drop_last:
            yield out
    return batched


_IMPORTED = {"to_tensor", "convert_dtype", "default_float_dtype", "int64", "to_numpy_dtype", "Tensor"}
__all__ = [n for n, v in list(globals().items()) if not n.startswith("_") and callable(v) and n not in _IMPORTED
           and not isinstance(v, type)]
_with_out_argument(globals(), __all__)
