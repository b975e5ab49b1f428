"""Math, reduction, comparison and manipulation functions (Paddle names)."""
import builtins
import numbers

import numpy as np

from . import _C
from .creation import _shape, to_tensor, full_like
from .framework import Tensor, convert_dtype, default_float_dtype, int64

_ops = _C.ops
_BOOL = convert_dtype("bool")
_SCALARS = (numbers.Number, np.generic)


def _is_scalar(v):
    return isinstance(v, _SCALARS) and not isinstance(v, np.ndarray)


def _as_tensor(v, like):
    """v as a tensor on like's device: a Tensor stays, a scalar takes like's dtype."""
    if isinstance(v, Tensor):
        return v
    if _exact_int_scalar(like, v):
        # Exactly in the integer dtype (a double holds integers only up to
        # 2**53); one it cannot hold raises OverflowError, as numpy does.
        return to_tensor(v, dtype=like.dtype, place=like._device)
    if isinstance(v, (complex, np.complexfloating)):
        return _ops.full([], complex(v), like.dtype, like._device)
    if _is_scalar(v):
        return _ops.scalar_like(like, float(v))
    return to_tensor(v, place=like._device)


def _exact_int_scalar(x, scalar):
    """An integer (not bool) tensor with a Python or numpy integer scalar: the
    scalar is built exactly in x's dtype. (Not a dtype rule: which dtype an op
    computes in comes from the registry, _promoted.)"""
    return (isinstance(x, Tensor) and not x.dtype.is_floating_point and x.dtype != _BOOL
            and isinstance(scalar, (numbers.Integral, np.integer)) and not isinstance(scalar, (builtins.bool, np.bool_)))


_KIND_OF_TYPE = {float: "float", int: "int", builtins.bool: "bool", complex: "complex"}


def _scalar_kind(v):
    """"bool", "int" or "float" for a Python or numpy scalar; None for anything else."""
    kind = _KIND_OF_TYPE.get(type(v))
    if kind is not None or isinstance(v, Tensor):
        return kind
    if isinstance(v, (builtins.bool, np.bool_)):
        return "bool"
    if isinstance(v, (numbers.Integral, np.integer)):
        return "int"
    if isinstance(v, (complex, np.complexfloating)):
        return "complex"
    return "float" if _is_scalar(v) else None


# The registry's answers, remembered per (op, dtypes, scalar kinds, default float).
_PROMOTED = {}


def _promoted(op, x, y):
    """x and y with their tensors cast to the dtype registry op `op` computes
    in (Note [Dtype promotion] in core/src/ops/op_registry.cpp: a float scalar
    with an integer tensor gives the default float dtype, an int scalar with a
    bool tensor int64, div of integers computes in float); scalars stay."""
    dx = x.dtype if isinstance(x, Tensor) else None
    dy = y.dtype if isinstance(y, Tensor) else None
    key = (op, dx, dy, _scalar_kind(x), _scalar_kind(y), default_float_dtype())
    d = _PROMOTED.get(key)
    if d is None:
        d = _PROMOTED[key] = _ops.promote(op, [dx, dy], [key[3], key[4]], key[5])
    if isinstance(x, Tensor) and x.dtype != d:
        x = _ops.cast(x, d)
    if isinstance(y, Tensor) and y.dtype != d:
        y = _ops.cast(y, d)
    return x, y


def _tensor_operands(x, y):
    """Operands that are neither tensors nor scalars (lists, arrays) as tensors
    on the other operand's device; x becomes a tensor when neither is one."""
    if not isinstance(x, Tensor):
        if not isinstance(y, Tensor):
            x = to_tensor(x)
        elif not _is_scalar(x):
            x = to_tensor(x, place=y._device)
    if not isinstance(y, Tensor) and not _is_scalar(y):
        y = to_tensor(y, place=x._device)
    return x, y


def _binary(op, fn, x, y):
    """fn(x, y) for registry op `op`: tensors as they are (the core promotes
    them), a scalar operand after _promoted."""
    x, y = _tensor_operands(x, y)
    if isinstance(x, Tensor) and isinstance(y, Tensor):
        return fn(x, y)
    x, y = _promoted(op, x, y)
    return fn(x, _as_tensor(y, x)) if isinstance(x, Tensor) else fn(_as_tensor(x, y), y)


_SCALAR_PROMOTED = {}


def _with_scalar(op, fn, scalar_fn, x, y):
    """x (op) y where y may be a scalar: scalar_fn(x, float(y)) in the dtype
    the registry gives (remembered per tensor dtype, scalar kind and default
    float: this is the hot path of `x * 0.5`), unless the scalar must be built
    exactly in an integer dtype."""
    if isinstance(x, Tensor):
        kind = _scalar_kind(y)
        if kind is not None:
            key = (op, x.dtype, kind, default_float_dtype())
            d = _SCALAR_PROMOTED.get(key)
            if d is None:
                d = _SCALAR_PROMOTED[key] = _ops.promote(op, [key[1], None], [None, kind], key[3])
            if d != key[1]:
                x = _ops.cast(x, d)
            if kind == "complex":
                return fn(x, _as_tensor(y, x))
            if kind != "int" or not _exact_int_scalar(x, y):
                return scalar_fn(x, float(y))
    return _binary(op, fn, x, y)


def add(x, y, name=None):
    return _with_scalar("add", _ops.add, _ops.add_scalar, x, y)


def subtract(x, y, name=None):
    return _with_scalar("sub", _ops.subtract, _ops.subtract_scalar, x, y)


def multiply(x, y, name=None):
    return _with_scalar("mul", _ops.multiply, _ops.multiply_scalar, x, y)


def divide(x, y, name=None):
    # int / int is true division in Paddle 3: the registry's div computes
    # integers in the default float dtype (Promotion::float_compute).
    if isinstance(x, Tensor) and _is_scalar(y):
        return _with_scalar("div", _ops.divide, _ops.divide_scalar, x, y)
    x, y = _promoted("div", *_tensor_operands(x, y))
    if isinstance(x, Tensor) and _is_scalar(y):
        return _ops.divide_scalar(x, float(y))
    return _binary("div", _ops.divide, x, y)


def _is_int_operand(v):
    if isinstance(v, Tensor):
        return v.dtype.is_integer
    return isinstance(v, (numbers.Integral, np.integer)) and not isinstance(v, builtins.bool)


def _int_operands(x, y):
    """Both operands as integer tensors; a Python int takes the other's dtype
    exactly (an out-of-range one raises OverflowError, as numpy does)."""
    if not isinstance(x, Tensor):
        x = to_tensor(x, dtype=y.dtype, place=y._device)
    if not isinstance(y, Tensor):
        y = to_tensor(y, dtype=x.dtype, place=x._device)
    return x, y


def _int_floor_divide(x, y):
    """Integer floor division in integers: the kernels' div truncates toward
    zero (x / 0 = 0, docs/kernels.md); a nonzero remainder whose sign differs
    from the divisor's steps the quotient down by one. x // 0 is 0 (numpy)."""
    q = _ops.divide(x, y)
    r = _ops.subtract(x, _ops.multiply(q, y))
    zero = _ops.scalar_like(r, 0.0)
    step = _ops.logical_and(_ops.logical_and(_ops.not_equal(r, zero), _ops.not_equal(y, _ops.scalar_like(y, 0.0))),
                            _ops.not_equal(_ops.less_than(r, zero), _ops.less_than(y, _ops.scalar_like(y, 0.0))))
    return _ops.subtract(q, _ops.cast(step, q.dtype))


def floor_divide(x, y, name=None):
    if _is_int_operand(x) and _is_int_operand(y) and (isinstance(x, Tensor) or isinstance(y, Tensor)):
        return _int_floor_divide(*_int_operands(x, y))
    xt = x if isinstance(x, Tensor) else y
    q = _ops.floor(divide(_ops.cast(x, convert_dtype("float64")) if isinstance(x, Tensor) and not x.dtype.is_floating_point else x,
                          y))
    return _ops.cast(q, xt.dtype) if not xt.dtype.is_floating_point else q


def remainder(x, y, name=None):
    if _is_int_operand(x) and _is_int_operand(y) and (isinstance(x, Tensor) or isinstance(y, Tensor)):
        x, y = _int_operands(x, y)
        r = _ops.subtract(x, _ops.multiply(_int_floor_divide(x, y), y))
        # x % 0 is 0, as numpy gives (the quotient is 0, so r would be x).
        return _ops.where(_ops.equal(y, _ops.scalar_like(y, 0.0)), _ops.zeros_like(r), r)
    return subtract(x, multiply(floor_divide(x, y), y))


mod = remainder


def pow(x, y, name=None):  # noqa: A001 - paddle.pow
    if isinstance(x, Tensor) and _is_scalar(y):
        return _ops.pow_scalar(_promoted("pow", x, y)[0], float(y))
    return _binary("pow", _ops.pow, x, y)


def maximum(x, y, name=None):
    return _binary("maximum", _ops.maximum, x, y)


def minimum(x, y, name=None):
    return _binary("minimum", _ops.minimum, x, y)


def equal(x, y, name=None):
    return _binary("equal", _ops.equal, x, y)


def not_equal(x, y, name=None):
    return _binary("not_equal", _ops.not_equal, x, y)


def less_than(x, y, name=None):
    return _binary("less", _ops.less_than, x, y)


def less_equal(x, y, name=None):
    return _binary("less_equal", _ops.less_equal, x, y)


def greater_than(x, y, name=None):
    return _binary("greater", _ops.greater_than, x, y)


def greater_equal(x, y, name=None):
    return _binary("greater_equal", _ops.greater_equal, x, y)


def logical_and(x, y, out=None, name=None):
    return _binary("logical_and", _ops.logical_and, x, y)


def logical_or(x, y, out=None, name=None):
    return _binary("logical_or", _ops.logical_or, x, y)


def logical_xor(x, y, out=None, name=None):
    return not_equal(cast(x, "bool"), cast(y, "bool"))


def logical_not(x, out=None, name=None):
    return _ops.logical_not(x)


def _registry_unary(op_name):
    """paddle.<op_name> for an elementwise unary op of the registry. A float-only
    op (Promotion::float_compute) computes an integer input in the default
    float dtype, as _ops.promote says for one tensor operand."""
    float_compute = _ops.promote(op_name, [int64], [None], convert_dtype("float32")) != int64

    def op(x, name=None):
        fn = getattr(_ops, op_name)  # looked up per call: amp.auto_cast may wrap it
        if not float_compute:
            return fn(x)
        try:  # a float input, without reading x.dtype first (~0.8 us of a 3 us call)
            return fn(x)
        except TypeError:
            if isinstance(x, Tensor) and not x.dtype.is_floating_point and not x.dtype.is_complex:
                return fn(_ops.cast(x, default_float_dtype()))
            raise
    op.__name__ = op_name
    op.__qualname__ = op_name
    op.__module__ = __name__
    return op


# Generated from the registry (_ops.elementwise_unary(): abs, neg, exp, log,
# ..., expm1, sigmoid); relu and silu live in nn.functional, copy is internal,
# logical_not takes Paddle's `out` argument below.
for _name in _ops.elementwise_unary():
    if _name not in ("relu", "silu", "copy", "logical_not"):
        globals()[_name] = _registry_unary(_name)


def _integers_as_they_are(rounding):
    """floor/ceil: an integer tensor is already whole (Paddle returns it in its dtype)."""
    def op(x, name=None):
        return rounding(x) if x.dtype.is_floating_point or x.dtype.is_complex else clone(x)
    op.__name__ = op.__qualname__ = rounding.__name__
    return op


floor, ceil = _integers_as_they_are(floor), _integers_as_they_are(ceil)


def square(x, name=None):
    return _ops.multiply(x, x)


def reciprocal(x, name=None):
    return _ops.rdivide_scalar(x, 1.0)


def log1p(x, name=None):
    return log(add(x, 1.0))


def log2(x, name=None):
    return multiply(log(x), 1.0 / np.log(2.0))


def log10(x, name=None):
    return multiply(log(x), 1.0 / np.log(10.0))


def tan(x, name=None):
    return divide(sin(x), cos(x))


def round(x, decimals=0, name=None):  # noqa: A001
    # round half away from zero, like paddle.round
    return multiply(sign(x), floor(add(_ops.abs(x), 0.5)))


def trunc(x, name=None):
    return multiply(sign(x), floor(_ops.abs(x)))


def scale(x, scale=1.0, bias=0.0, bias_after_scale=True, act=None, name=None):
    out = add(multiply(x, scale), bias) if bias_after_scale else multiply(add(x, bias), scale)
    return out


def clip(x, min=None, max=None, name=None):  # noqa: A002
    out = x
    if min is not None:
        out = maximum(out, min)
    if max is not None:
        out = minimum(out, max)
    return out


def cast(x, dtype):
    dtype = convert_dtype(dtype)
    return x if x.dtype == dtype else _ops.cast(x, dtype)


def isnan(x, name=None):
    return _ops.not_equal(x, x)


def isinf(x, name=None):
    return _ops.logical_and(_ops.equal(_ops.abs(x), _ops.scalar_like(x, float("inf"))), _ops.equal(x, x))


def isfinite(x, name=None):
    return _ops.logical_not(_ops.logical_or(isnan(x), isinf(x)))


def where(condition, x=None, y=None, name=None):
    if x is None and y is None:
        return nonzero(condition, as_tuple=True)
    if not isinstance(condition, Tensor):
        condition = to_tensor(condition)
    if condition.dtype != _BOOL:
        condition = _ops.cast(condition, _BOOL)
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        x = to_tensor(x, place=condition._device)
    if not isinstance(x, Tensor):
        x = _as_tensor(x, y)
    if not isinstance(y, Tensor):
        y = _as_tensor(y, x)
    return _ops.where(condition, x, y)


# ---- reductions ----

def _axes(axis, ndim=None):
    if axis is None:
        return []
    if type(axis) is int:  # the common case, without the ABC checks below (~1 us)
        return [axis]
    if isinstance(axis, Tensor):
        axis = axis.numpy().tolist()
    if isinstance(axis, numbers.Integral):
        return [int(axis)]
    return [int(a) for a in axis]


# Paddle sums bool and the narrow integers in int64 (looked up once, not per call).
_SUM_IN_INT64 = (_BOOL, convert_dtype("int32"), convert_dtype("int8"), convert_dtype("uint8"))


def sum(x, axis=None, dtype=None, keepdim=False, name=None):  # noqa: A001
    if dtype is not None:
        x = cast(x, convert_dtype(dtype))
    else:
        d = x.dtype
        if not d.is_floating_point and d in _SUM_IN_INT64:
            x = _ops.cast(x, int64)
    return _ops.sum(x, _axes(axis), keepdim)


def mean(x, axis=None, keepdim=False, name=None, *, dtype=None, out=None):
    if dtype is not None:
        x = cast(x, dtype)
    d = x.dtype
    if not d.is_floating_point and not d.is_complex:
        # Paddle: the mean of integers (or bools) in their own dtype, truncated toward zero.
        return _ops.cast(_ops.mean(_ops.cast(x, convert_dtype("float64")), _axes(axis), keepdim), x.dtype)
    return _ops.mean(x, _axes(axis), keepdim)


def prod(x, axis=None, keepdim=False, dtype=None, name=None):
    if dtype is not None:
        x = cast(x, dtype)
    return _ops.prod(x, _axes(axis), keepdim)


def max(x, axis=None, keepdim=False, name=None):  # noqa: A001
    return _ops.max(x, _axes(axis), keepdim)


def min(x, axis=None, keepdim=False, name=None):  # noqa: A001
    return _ops.min(x, _axes(axis), keepdim)


amax = max
amin = min


def argmax(x, axis=None, keepdim=False, dtype="int64", name=None):
    return cast(_ops.argmax(x, None if axis is None else int(axis), keepdim), dtype)


def argmin(x, axis=None, keepdim=False, dtype="int64", name=None):
    return cast(_ops.argmin(x, None if axis is None else int(axis), keepdim), dtype)


def var(x, axis=None, unbiased=True, keepdim=False, name=None):
    return _ops.var(x, _axes(axis), unbiased, keepdim)


def std(x, axis=None, unbiased=True, keepdim=False, name=None):
    return _ops.sqrt(var(x, axis, unbiased, keepdim))


def all(x, axis=None, keepdim=False, name=None):  # noqa: A001
    return _ops.cast(_ops.min(cast(x, "int32"), _axes(axis), keepdim), _BOOL)


def any(x, axis=None, keepdim=False, name=None):  # noqa: A001
    return _ops.cast(_ops.max(cast(x, "int32"), _axes(axis), keepdim), _BOOL)


def logsumexp(x, axis=None, keepdim=False, name=None):
    axes = _axes(axis)
    m = _ops.max(x.detach(), axes, True)
    out = add(log(_ops.sum(exp(subtract(x, m)), axes, True)), m)
    if not keepdim:
        out = _ops.squeeze(out, axes if axes else list(range(len(x.shape))))
    return out


def allclose(x, y, rtol=1e-05, atol=1e-08, equal_nan=False, name=None):
    return to_tensor(np.allclose(x.numpy(), y.numpy(), rtol=rtol, atol=atol, equal_nan=equal_nan))


def isclose(x, y, rtol=1e-05, atol=1e-08, equal_nan=False, name=None):
    return to_tensor(np.isclose(x.numpy(), y.numpy(), rtol=rtol, atol=atol, equal_nan=equal_nan))


def equal_all(x, y, name=None):
    return to_tensor(builtins.bool(x.shape == y.shape and np.array_equal(x.numpy(), y.numpy())))


# ---- linear algebra ----

def matmul(x, y, transpose_x=False, transpose_y=False, name=None):
    return _ops.matmul(x, y, transpose_x, transpose_y)


def mm(input, mat2, name=None):  # noqa: A002
    return _ops.matmul(input, mat2)


bmm = mm


def dot(x, y, name=None):
    return _ops.sum(_ops.multiply(x, y), [-1], False)


def outer(x, y, name=None):
    return _ops.multiply(_ops.reshape(x, [-1, 1]), _ops.reshape(y, [1, -1]))


def t(input, name=None):  # noqa: A002
    if len(input.shape) < 2:
        return input
    return _ops.transpose(input, [1, 0])


def norm(x, p=2, axis=None, keepdim=False, name=None):
    axes = _axes(axis)
    if p in ("fro", 2, 2.0):
        return _ops.sqrt(_ops.sum(_ops.multiply(x, x), axes, keepdim))
    if p in (1, 1.0):
        return _ops.sum(_ops.abs(x), axes, keepdim)
    if p == float("inf"):
        return _ops.max(_ops.abs(x), axes, keepdim)
    return _ops.pow_scalar(_ops.sum(_ops.pow_scalar(_ops.abs(x), float(p)), axes, keepdim), 1.0 / float(p))


# ---- manipulation ----

def reshape(x, shape, name=None):
    return _ops.reshape(x, _shape(shape))


def transpose(x, perm, name=None):
    return _ops.transpose(x, [int(p) for p in perm])


def moveaxis(x, source, destination, name=None):
    src, dst = _axes(source), _axes(destination)
    nd = len(x.shape)
    src = [s % nd for s in src]
    dst = [d % nd for d in dst]
    order = [a for a in range(nd) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _ops.transpose(x, order)


def broadcast_to(x, shape, name=None):
    return _ops.broadcast_to(x, _shape(shape))


def expand(x, shape, name=None):
    shape = _shape(shape)
    off = len(shape) - len(x.shape)
    shape = [x.shape[i - off] if s == -1 else s for i, s in enumerate(shape)]
    return _ops.broadcast_to(x, shape)


def diagonal(x, offset=0, axis1=0, axis2=1, name=None):
    """paddle.diagonal: a view of x in eager mode (Note [Views])."""
    return _ops.diagonal(x, int(offset), int(axis1), int(axis2))


def expand_as(x, y, name=None):
    return _ops.broadcast_to(x, y.shape)


def broadcast_tensors(input, name=None):  # noqa: A002
    shape = list(np.broadcast_shapes(*[tuple(t.shape) for t in input]))
    return [_ops.broadcast_to(t, shape) for t in input]


def squeeze(x, axis=None, name=None):
    axes = _axes(axis)
    nd = len(x.shape)
    lo, hi = (-1, 0) if nd == 0 else (-nd, nd - 1)
    for a in axes:
        if not lo <= a <= hi:
            raise ValueError(f"squeeze: axis {a} is out of range for a tensor of rank {nd} (expected {lo}..{hi})")
    # Paddle leaves a named axis whose size is not 1 as it is.
    axes = [a for a in axes if nd and x.shape[a % nd] == 1] if axes else []
    if axis is not None and not axes:
        return x
    return _ops.squeeze(x, axes)


def unsqueeze(x, axis, name=None):
    return _ops.unsqueeze(x, _axes(axis))


def flatten(x, start_axis=0, stop_axis=-1, name=None):
    if len(x.shape) == 0:
        return _ops.reshape(x, [1])
    return _ops.flatten(x, start_axis, stop_axis)


def concat(x, axis=0, name=None):
    if isinstance(axis, Tensor):
        axis = axis.item()
    x = list(x)
    if not builtins.all(isinstance(t, Tensor) for t in x):
        from . import jit_dy2static  # a list collected in a captured loop: Note [Tensor arrays]
        if builtins.any(isinstance(t, jit_dy2static.TensorArray) for t in x):
            x = jit_dy2static._expand_tensor_arrays(x, int(axis), stacking=False)
    return _ops.concat(x, int(axis))


def stack(x, axis=0, name=None):
    x = list(x)
    if not builtins.all(isinstance(t, Tensor) for t in x):
        from . import jit_dy2static  # a list collected in a captured loop: Note [Tensor arrays]
        if builtins.any(isinstance(t, jit_dy2static.TensorArray) for t in x):
            return _ops.concat(jit_dy2static._expand_tensor_arrays(x, int(axis), stacking=True), int(axis))
    nd = len(x[0].shape) + 1
    axis = int(axis) % nd
    shape = list(x[0].shape)
    for i, t in enumerate(x):
        if list(t.shape) != shape:
            raise ValueError(f"stack: input {i} has shape {list(t.shape)} but input 0 has shape {shape}; "
                             "the inputs must have equal shapes")
    if x[0].size == 0:  # the core's unsqueeze reads a 0 dim as "copy the input's dim" (Paddle's reshape)
        return _ops.full(shape[:axis] + [len(x)] + shape[axis:], 0.0, x[0].dtype, x[0]._device)
    return _ops.concat([_ops.unsqueeze(t, [axis]) for t in x], axis)


def split(x, num_or_sections, axis=0, name=None):
    """Splits x along axis into equal parts or sections (one may be -1)."""
    if isinstance(axis, Tensor):
        axis = axis.item()
    nd = len(x.shape)
    axis = int(axis) % nd
    size = x.shape[axis]
    if isinstance(num_or_sections, numbers.Integral):
        n = int(num_or_sections)
        if n <= 0 or size % n != 0:
            raise ValueError(f"split: the dim {axis} of size {size} cannot be split into {n} equal parts")
        sections = [size // n] * n
    else:
        sections = [int(s.item()) if isinstance(s, Tensor) else int(s) for s in num_or_sections]
        if sections.count(-1) > 1:
            raise ValueError("split: at most one section may be -1")
        if -1 in sections:
            sections[sections.index(-1)] = size - builtins.sum(s for s in sections if s != -1)
        if builtins.sum(sections) != size:
            raise ValueError(f"split: sections {sections} do not add up to the dim {axis} of size {size}")
    out, start = [], 0
    for s in sections:
        out.append(_ops.slice(x, [axis], [start], [start + s]))
        start += s
    return out


def chunk(x, chunks, axis=0, name=None):
    return split(x, chunks, axis)


def unbind(input, axis=0):  # noqa: A002
    axis = int(axis) % len(input.shape)
    return [_ops.squeeze(p, [axis]) for p in split(input, input.shape[axis], axis)]


unstack = unbind


def tile(x, repeat_times, name=None):
    reps = _shape(repeat_times)
    out = x
    if len(reps) > len(out.shape):
        out = _ops.reshape(out, [1] * (len(reps) - len(out.shape)) + list(out.shape))
    reps = [1] * (len(out.shape) - len(reps)) + reps
    for axis, r in enumerate(reps):
        if r != 1:
            out = _ops.concat([out] * r, axis)
    return out


def slice(input, axes, starts, ends):  # noqa: A001,A002 - paddle.slice
    return _ops.slice(input, _axes(axes), _shape(starts), _shape(ends))


def strided_slice(x, axes, starts, ends, strides, name=None):
    return _ops.slice(x, _axes(axes), _shape(starts), _shape(ends), _shape(strides))


def _check_index_values(op, what, values, size, size_is):
    """Raises ValueError for the first value outside [0, size), naming it and
    its position, as the C++ ops do (Note [Index values] in core/src/ops/op_util.h)."""
    values = np.asarray(values)
    bad = np.argwhere((values < 0) | (values >= size))
    if bad.size:
        at = tuple(int(i) for i in bad[0])
        raise ValueError(f"{op}: {what} {int(values[at])} at position {list(at)} of {what} tensor "
                         f"{list(values.shape)} is out of range; expected 0 <= {what} < {size} ({size_is})")


def _index_tensor(index, like):
    if not isinstance(index, Tensor):
        index = to_tensor(np.asarray(index, dtype=np.int64), place=like._device)
    return index


def gather(x, index, axis=None, name=None):
    index = _index_tensor(index, x)
    axis = 0 if axis is None else (axis.item() if isinstance(axis, Tensor) else int(axis))
    if len(index.shape) != 1:
        flat = _ops.gather(x, _ops.reshape(index, [-1]), axis)
        axis %= len(x.shape)
        return _ops.reshape(flat, list(x.shape[:axis]) + list(index.shape) + list(x.shape[axis + 1:]))
    return _ops.gather(x, index, axis)


def index_select(x, index, axis=0, name=None):
    return gather(x, index, axis)


def scatter(x, index, updates, overwrite=True, name=None):
    """Rows of x at index (1-D, along axis 0) replaced by (or, without overwrite, summed with) updates."""
    index = _index_tensor(index, x)
    if overwrite:
        hit = _ops.scatter_add(_ops.zeros_like(_ops.cast(x, convert_dtype("float32"))), index,
                               _ops.ones_like(_ops.cast(updates, convert_dtype("float32"))), 0)
        hit = _ops.greater_than(hit, _ops.scalar_like(hit, 0.0))
        return _ops.where(hit, _ops.scatter_add(_ops.zeros_like(x), index, updates, 0), x)
    zeroed = _ops.where(_ops.greater_than(_ops.scatter_add(
        _ops.zeros_like(x), index, _ops.ones_like(updates), 0), _ops.scalar_like(x, 0.0)), _ops.zeros_like(x), x)
    return _ops.scatter_add(zeroed, index, updates, 0)


def scatter_add(x, index, updates, axis=0):
    return _ops.scatter_add(x, _index_tensor(index, x), updates, int(axis))


def index_add(x, index, axis, value, name=None):
    return _ops.scatter_add(x, _index_tensor(index, x), value, int(axis))


def take_along_axis(arr, indices, axis, broadcast=True):
    """paddle.take_along_axis (one implementation: oar/manip_extra.py)."""
    from .manip_extra import take_along_axis as impl
    return impl(arr, indices, axis, broadcast)


def nonzero(x, as_tuple=False):
    """int64 [count, x.ndim]: the positions of x's nonzero elements, row-major; with as_tuple,
    one [count] tensor per dim. An op (Note [nonzero] in core/src/ops/index_values.cpp), so a
    trace holds it: count is the program's run's."""
    x = x if isinstance(x, Tensor) else to_tensor(x)
    if as_tuple and x.ndim == 0:  # as torch: one [count] tensor of zeros for a scalar
        return (_ops.nonzero(x.reshape([1]))[:, 0],)
    idx = _ops.nonzero(x)
    return tuple(idx[:, d] for d in range(x.ndim)) if as_tuple else idx


def masked_select(x, mask, name=None):
    if isinstance(mask, Tensor) and _C.ir.is_symbolic(mask):
        # A mask of a trace: its count is nonzero's, decided when the program runs (Note [nonzero]).
        if list(mask.shape) != list(x.shape):
            mask = _ops.broadcast_to(mask, list(x.shape))
        return _masked_rows(x, mask)
    m = np.broadcast_to(mask.numpy() if isinstance(mask, Tensor) else np.asarray(mask), x.shape)
    flat = np.flatnonzero(m).astype(np.int64)
    return _ops.gather(_ops.reshape(x, [-1]), to_tensor(flat, place=x._device), 0)


def _masked_rows(x, mask):
    """x[mask] for a bool mask over x's leading dims, by the op nonzero: [count, *x.shape[mask.ndim:]]."""
    lead = list(mask.shape)
    if list(x.shape[:len(lead)]) != lead:
        raise IndexError(f"a boolean mask of shape {lead} does not match the leading dims of a tensor of shape "
                         f"{list(x.shape)}")
    rows = _ops.reshape(_ops.nonzero(_ops.reshape(mask, [-1])), [-1])
    return _ops.gather(_ops.reshape(x, [-1] + list(x.shape[len(lead):])), rows, 0)


def masked_fill(x, mask, value, name=None):
    return where(mask, _as_tensor(value, x) if not isinstance(value, Tensor) else value, x)


def tril(x, diagonal=0, name=None):
    return where(_tri_mask(x, diagonal, lower=True), x, _ops.zeros_like(x))


def triu(x, diagonal=0, name=None):
    return where(_tri_mask(x, diagonal, lower=False), x, _ops.zeros_like(x))


def _tri_mask(x, diagonal, lower):
    rows, cols = x.shape[-2], x.shape[-1]
    r = _ops.reshape(_ops.arange(0.0, float(rows), 1.0, int64), [-1, 1])
    c = _ops.arange(0.0, float(cols), 1.0, int64)
    d = _ops.subtract(c, r)
    k = _ops.scalar_like(d, float(diagonal))
    return _ops.less_equal(d, k) if lower else _ops.greater_equal(d, k)


def flip(x, axis, name=None):
    out = x
    for a in _axes(axis):
        a %= len(x.shape)
        n = x.shape[a]
        out = _ops.gather(out, _ops.arange(float(n - 1), -1.0, -1.0, int64), a)
    return out


def roll(x, shifts, axis=None, name=None):
    if axis is None:
        return _ops.reshape(roll(_ops.reshape(x, [-1]), shifts, 0), x.shape)
    shifts = _axes(shifts)
    out = x
    for s, a in zip(shifts, _axes(axis)):
        n = x.shape[a]
        idx = (np.arange(n) - s) % n
        out = _ops.gather(out, to_tensor(idx.astype(np.int64), place=x._device), a)
    return out


def cumsum(x, axis=None, dtype=None, name=None):
    """Via a triangular matmul (differentiable; O(n^2) in the axis length)."""
    if axis is None:
        x, axis = _ops.reshape(x, [-1]), 0
    if dtype is not None:
        x = cast(x, dtype)
    axis = int(axis) % len(x.shape)
    n = x.shape[axis]
    tri = triu(_ops.full([n, n], 1.0, x.dtype, None))
    moved = moveaxis(x, axis, -1)
    return moveaxis(_ops.matmul(moved, tri), -1, axis)


def numel(x, name=None):
    # Counted when the op runs, so a to_static trace keeps dynamic dims.
    return _ops.numel(x)


def shape(input):  # noqa: A002
    # In a trace, the shape of a tensor without dynamic dims is a constant: Python can read it
    # (expand([paddle.shape(x)[0], -1]) as eagerly); a dynamic dim's size is known when it runs.
    if _C.ir.is_symbolic(input) and not builtins.any(_C.ir.dynamic_dims(input)):
        return to_tensor(np.array(list(input.shape), dtype=np.int64), place=input._device)
    return _ops.shape(input)


def is_tensor(x):
    return isinstance(x, Tensor)


def clone(x, name=None):
    return _ops.add_scalar(x, 0.0) if x.dtype != _BOOL else _ops.logical_or(x, x)


__all__ = [n for n, v in list(globals().items())
           if not n.startswith("_") and callable(v) and getattr(v, "__module__", None) == __name__
           and n not in ("is_tensor",)] + ["mod", "amax", "amin", "bmm", "unstack", "is_tensor"]

# Note [Fast operators] in src/tensor.cpp: oar.add/subtract/multiply on two
# tensors go straight to the core op; other operands come back to the
# Python functions above (kept in _PY_FUNCTIONS; Tensor methods use them,
# as a builtin function does not bind `self`).
_PY_FUNCTIONS = {"add": add, "subtract": subtract, "multiply": multiply}
for _name, _fn in _PY_FUNCTIONS.items():
    _C._set_operator_fallback(_name, _fn)
add, subtract, multiply = _C._fast_add, _C._fast_subtract, _C._fast_multiply
