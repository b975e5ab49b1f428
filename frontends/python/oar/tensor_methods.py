"""Operators, indexing and Paddle-style methods attached to oar.Tensor."""
import builtins
import numbers
import weakref

import numpy as np

from . import _C, creation, printing
from . import inplace as _inplace_mod
from . import math as M
from .framework import Place, Size, Tensor, convert_dtype, to_numpy_dtype

_ops = _C.ops
_BOOL = convert_dtype("bool")
_SLICE_TO_END = 2**63 - 1  # an end past every dim: "to the end" (kSliceToEnd in manipulation.cpp)


# ---- indexing ----
# Note [Indexing]: ints, slices (positive steps), None and Ellipsis use the
# slice/squeeze/unsqueeze ops; one integer index array uses gather; anything
# else (several index arrays, boolean masks, negative steps) computes the
# flat positions on the host with numpy and gathers them from the flattened
# tensor, so every path stays differentiable in x.

def _is_index_array(k):
    return isinstance(k, (Tensor, np.ndarray, list))


def _key_to_numpy(key):
    if not isinstance(key, tuple):
        key = (key,)
    return tuple(k.numpy() if isinstance(k, Tensor) else (np.asarray(k) if isinstance(k, list) else k) for k in key)


def _positions(shape, key):
    """Flat positions selected by key in a tensor of `shape` (numpy int64 array of the result's shape)."""
    return np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)[_key_to_numpy(key)]


def _normalize_key(key, ndim):
    if not isinstance(key, tuple):
        key = (key,)
    n_ellipsis = builtins.sum(1 for k in key if k is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = builtins.sum(1 for k in key if k is not None and k is not Ellipsis)
    if consumed > ndim:
        raise IndexError(f"too many indices for a tensor of {ndim} dims: {consumed} were given")
    out = []
    for k in key:
        if k is Ellipsis:
            out.extend([builtins.slice(None)] * (ndim - consumed))
        else:
            out.append(k)
    return out


def _getitem(x, key):
    if isinstance(key, Tensor) and key.dtype == _BOOL or (
            isinstance(key, np.ndarray) and key.dtype == np.bool_):
        if isinstance(key, Tensor) and _C.ir.is_symbolic(key):  # its count is decided when a program runs
            return M._masked_rows(x, key)
        return M.masked_select(x, key) if list(key.shape) == list(x.shape) else _gather_positions(x, key)
    items = _normalize_key(key, len(x.shape))
    n_arrays = builtins.sum(1 for k in items if _is_index_array(k) and not _is_int_tensor(k))
    fast = n_arrays <= 1 and builtins.all(
        not isinstance(k, builtins.slice) or k.step is None or k.step > 0 for k in items) and not builtins.any(
        _is_index_array(k) and (k.dtype == _BOOL if isinstance(k, Tensor) else np.asarray(k).dtype == np.bool_)
        for k in items)
    if not fast:
        return _gather_positions(x, key)
    out, d = x, 0
    for k in items:
        if k is None:
            out = _ops.unsqueeze(out, [d])
            d += 1
        elif isinstance(k, builtins.slice):
            # The raw bounds go to the op, which resolves negative ones
            # against the size itself, so a to_static trace with a dynamic
            # dim knows when an index depended on it (Note [Dynamic dims]).
            step = 1 if k.step is None else int(k.step)
            start = 0 if k.start is None else int(k.start)
            stop = _SLICE_TO_END if k.stop is None else int(k.stop)
            if (start < 0 or stop < 0) and step == 1 and _data_dependent(out, [d]):
                out = _slice_from_end(out, d, start, stop)
            elif (start, stop, step) != (0, _SLICE_TO_END, 1):
                out = _ops.slice(out, [d], [start], [stop], [step])
            d += 1
        elif _is_int_tensor(k) and _C.ir.is_symbolic(k):
            # a 0-d tensor of a trace is an int index (negative from the end) decided on each run
            out = _ops.squeeze(M.index_select(out, _symbolic_position(k, out.shape[d]), d), [d])
        elif (isinstance(k, (numbers.Integral, np.integer)) and k < 0 and _C.ir.is_symbolic(out)
              and _C.ir.dynamic_dims(out)[d]):
            # From the end of a dynamic dim of a trace: the position is counted when the program runs.
            size = _ops.slice(_ops.shape(out), [0], [d], [d + 1])
            out = _ops.squeeze(M.index_select(out, _ops.add(size, _ops.scalar_like(size, float(k))), d), [d])
        elif isinstance(k, (numbers.Integral, np.integer)) or _is_int_tensor(k):
            i = int(k)
            size = out.shape[d]
            if i < -size or i >= size:
                raise IndexError(f"index {i} is out of bounds for axis {d} with size {size}")
            # A negative index stays negative: the op resolves it (see above).
            out = _ops.squeeze(_ops.slice(out, [d], [i], [_SLICE_TO_END if i == -1 else i + 1]), [d])
        elif _is_index_array(k):
            if not isinstance(k, Tensor):  # a list or array: negative indices count from the end
                k = np.asarray(k)
                size = out.shape[d]
                if k.dtype.kind in "iu" and size >= 0:
                    if k.size and (k.min() < -size or k.max() >= size):
                        raise IndexError(f"index {int(k.min() if k.min() < -size else k.max())} is out of bounds "
                                         f"for axis {d} with size {size}")
                    k = np.where(k < 0, k + size, k)
            out = M.gather(out, k, d)
            d += len(k.shape) if isinstance(k, Tensor) else np.ndim(k)
        else:
            raise TypeError(f"unsupported index {k!r}")
    return out


def _is_int_tensor(k):
    """A 0-d tensor index other than bool: it indexes as an int does."""
    return isinstance(k, Tensor) and len(k.shape) == 0 and k.dtype != _BOOL


def _symbolic_position(k, size):
    """A to_static trace's 0-d integer tensor `k` as a [1] int64 index into a dim of `size`
    (negative counting from the end, as a Python int index)."""
    if k.dtype == _BOOL or np.dtype(to_numpy_dtype(k.dtype)).kind not in "iu":
        raise IndexError(f"__getitem__: a tensor index must be of an integer dtype, not {k.dtype}")
    i = _ops.reshape(M.cast(k, "int64"), [1])
    if size < 0:
        raise IndexError("__getitem__: an index by a tensor of a to_static trace into a dynamic dim (one the "
                         "input_spec leaves None) is not supported; index along a dim of known size")
    return M.where(_ops.less_than(i, _ops.scalar_like(i, 0.0)), i + size, i)


def _slice_from_end(x, d, start, stop):
    """x[.., start:stop, ..] along dim d of a trace whose size is decided when the program runs
    (a bound counted from its end): the positions in range, selected when it runs."""
    pos = _ops.positions(x, d)
    n = _ops.slice(_ops.shape(x), [0], [d], [d + 1])

    def bound(v):
        b = _ops.add(n, _ops.scalar_like(n, float(v))) if v < 0 else _ops.scalar_like(n, float(v))
        return M.maximum(b, _ops.scalar_like(n, 0.0))

    keep = _ops.greater_equal(pos, bound(start))
    if stop != _SLICE_TO_END:
        keep = M.logical_and(keep, _ops.less_than(pos, bound(stop)))
    return M.index_select(x, _ops.reshape(_ops.nonzero(keep), [-1]), d)


def _gather_positions(x, key):
    pos = _positions(x.shape, key)
    flat = _ops.gather(_ops.reshape(x, [-1]), creation.to_tensor(pos.reshape(-1), place=x._device), 0)
    return _ops.reshape(flat, list(pos.shape))


def _setitem(x, key, value):
    """x[key] = value writes into x's memory: views of x see it (oar/inplace.py)."""
    _inplace_mod.setitem(x, key, value, _getitem, _positions)


_value_tensor = _inplace_mod.value_tensor


# ---- repr and conversions ----

def _repr(x):
    return printing.tensor_to_string(x)


def _array(x, dtype=None, copy=None):
    # np.asarray(t) shares memory where numpy() does (Note [numpy views]);
    # np.array(t) and copy=True copy.
    a = x.numpy()
    if dtype is not None:
        return a.astype(dtype, copy=copy is not False)
    return a.copy() if copy else a


def _dlpack(x, stream=None, max_version=None, dl_device=None, copy=None):
    # The DLPack protocol: the legacy "dltensor" capsule (allowed whatever
    # max_version asks); host memory needs no stream; copy=True copies first.
    if dl_device is not None and tuple(dl_device) != (1, 0):
        raise BufferError(f"__dlpack__: oar exports host (kDLCPU) memory only, not device {tuple(dl_device)}")
    return _C.to_dlpack(x.clone() if copy else x)


def _item(x, *args):
    if len(args) == 1:  # a flat position (Paddle, numpy)
        return x.numpy().reshape(-1)[int(args[0])].item()
    if args:
        return x.numpy()[args].item()
    if x.size != 1:
        raise ValueError(f"item: the tensor has {x.size} elements; only a one-element tensor converts to a scalar")
    return x.numpy().reshape(-1)[0].item()


def _bool(x):
    if x.size != 1:
        raise ValueError(f"The truth value of a tensor with {x.size} elements is ambiguous")
    return builtins.bool(_item(x))


def _data_dependent(x, dims=None):
    """Whether a tensor of a to_static trace has a size the values decide (nonzero's count)
    among `dims` (all by default): the size the trace assumed for it is not the one it runs with."""
    if not _C.ir.is_symbolic(x):
        return False
    flags = _C.ir.data_dependent_dims(x)
    return builtins.any(flags[d] for d in (range(len(flags)) if dims is None else dims))


def _unknown_size(what, x, which="whose first dim is"):
    return TypeError(f"{what} of a tensor of a to_static trace of shape {list(x.shape)} {which} a size the "
                     "values decide (nonzero's count) is not a Python int; compare x.shape[d] inside the "
                     "to_static function (a tensor there), or use oar.numel(x)")


def _len(x):
    if len(x.shape) == 0:
        raise TypeError("len() of a 0-D tensor")
    if _data_dependent(x, [0]):
        raise _unknown_size("len()", x)
    return x.shape[0]


def _size(x):
    if _data_dependent(x):
        raise _unknown_size("Tensor.size", x, "whose shape holds")
    return x.numel()


def _iter(x):
    for i in range(_len(x)):
        yield x[i]


def _index(x):
    if x.dtype.is_floating_point:
        raise TypeError("only integer tensors of a single element can be converted to an index")
    return int(_item(x))


def _reshape(x, *shape, name=None):
    if len(shape) == 1 and not isinstance(shape[0], (numbers.Integral, np.integer)):
        shape = shape[0]
    return M.reshape(x, shape)


def _transpose(x, perm=None, *rest, name=None):
    if perm is None:
        perm = list(range(len(x.shape)))[::-1]
    elif isinstance(perm, (numbers.Integral, np.integer)):
        perm = [perm, *rest]
    return M.transpose(x, perm)


def _astype(x, dtype):
    return M.cast(x, dtype)


def _to(x, *args, **kwargs):
    device = kwargs.get("device")
    dtype = kwargs.get("dtype")
    for a in args:
        if isinstance(a, (Place, str)) and (isinstance(a, Place) or a.split(":")[0] in _C.device_types()):
            device = a
        else:
            dtype = a
    out = x
    if device is not None:
        d = Place(device)._device
        if d != x._device:
            out = out._to(d)
    if dtype is not None:
        out = M.cast(out, dtype)
    return out


def _register_hook(x, hook):
    if x.stop_gradient:
        raise RuntimeError("register_hook: cannot register a hook on a tensor that stops gradient "
                           "(stop_gradient=True); set stop_gradient=False first")
    state = {"active": True}

    def call(g):
        return hook(g) if state["active"] else None
    x._register_hook(call)

    class _Handle:
        def remove(self):
            state["active"] = False
    return _Handle()


_set_value = _inplace_mod.set_value


_core_grad = _C.Tensor.grad.fget
_core_shape = _C.Tensor.shape.fget


def _clear_gradient(x, set_to_zero=True):
    """Note [Lazy zero grads]: set_to_zero drops the gradient and marks the
    tensor instead of writing zeros; reading .grad before the next backward
    gives zeros (Paddle's result), while a backward writes its gradient
    directly instead of adding it to a zero tensor (one fill and one add
    less per parameter and step)."""
    if _core_grad(x) is None:
        return
    x.clear_grad()
    x._zero_grad = set_to_zero


def _retain_grads(x):
    """Keeps this non-leaf tensor's gradient in .grad after backward (summed over passes)."""
    if x.stop_gradient or x.is_leaf or getattr(x, "_retains_grad", False):
        return
    x._retains_grad = True
    ref = weakref.ref(x)

    def keep(g):
        t = ref()
        if t is not None:
            old = t.__dict__.get("_retained_grad")
            t._retained_grad = g.detach() if old is None else _ops.add(old, g.detach())
        return None
    x._register_hook(keep)


def _view(x, *shape_or_dtype, name=None):
    """x.view(shape) or x.view(*shape): a reshape; x.view(dtype): the same bytes read as dtype."""
    from . import manip_extra
    arg = shape_or_dtype[0] if len(shape_or_dtype) == 1 else list(shape_or_dtype)
    return manip_extra.view(x, arg)


def _grad(x):
    g = _core_grad(x)
    if g is None and not x.is_leaf:
        return x.__dict__.get("_retained_grad")
    if g is None and getattr(x, "_zero_grad", False):
        x._zero_grad = False
        g = _ops.zeros_like(x.detach())
        x._set_grad(g)
    return g


def _rbinary(fn):
    return lambda x, y: fn(y, x)


_FAST_OPERATORS = ("__add__", "__sub__", "__mul__", "__truediv__")


def _install():
    T = Tensor
    T.__repr__ = _repr
    T.__str__ = _repr
    T.__array__ = _array
    # DLPack (oar.utils.dlpack): np.from_dlpack(t), torch.from_dlpack(t).
    T.__dlpack__ = _dlpack
    T.__dlpack_device__ = lambda x: (1, 0)  # kDLCPU: __dlpack__ refuses other devices
    T.__array_priority__ = 100
    T.__getitem__ = _getitem
    T.__setitem__ = _setitem
    T.__len__ = _len
    T.size = property(_size)
    T.__iter__ = _iter
    T.__bool__ = _bool
    T.__float__ = lambda x: float(_item(x))
    T.__int__ = lambda x: int(_item(x))
    T.__index__ = _index
    T.__hash__ = lambda x: id(x)
    T.__deepcopy__ = lambda x, memo: _deepcopy(x)
    T.__copy__ = lambda x: x
    T.place = property(lambda x: Place(x._device))
    T.T = property(lambda x: _transpose(x))
    T.item = _item
    T.tolist = lambda x: x.numpy().tolist()
    T.astype = _astype
    T.cast = _astype
    T.to = _to
    T.cpu = lambda x: _to(x, "cpu")
    T.reshape = _reshape
    T.view = _reshape
    T.transpose = _transpose
    T.clone = M.clone
    T.register_hook = _register_hook
    T.set_value = _set_value
    T.clear_gradient = _clear_gradient
    T.grad = property(_grad)
    for name in ("zero_", "fill_", "copy_", "index_put_", "index_put"):  # random fills: random_more.py
        setattr(T, name, getattr(_inplace_mod, name))
    T.element_size = lambda x: x.dtype.itemsize
    T.is_floating_point = lambda x: x.dtype.is_floating_point
    T.gradient = lambda x: None if x.grad is None else x.grad.numpy()
    T.data = property(lambda x: x.detach(), lambda x, v: _set_value(x, v))
    T.persistable = False

    binary = {
        "__add__": M.add, "__sub__": M.subtract, "__mul__": M.multiply, "__truediv__": M.divide,
        "__floordiv__": M.floor_divide, "__mod__": M.remainder, "__pow__": M.pow, "__matmul__": M.matmul,
        "__eq__": M.equal, "__ne__": M.not_equal, "__lt__": M.less_than, "__le__": M.less_equal,
        "__gt__": M.greater_than, "__ge__": M.greater_equal, "__and__": _bitwise("and"),
        "__or__": _bitwise("or"), "__xor__": _bitwise("xor"),
    }
    for name, fn in binary.items():
        if name in _FAST_OPERATORS:  # Note [Fast operators] in src/tensor.cpp
            _C._set_operator_fallback(name, _guard(fn))
        else:
            setattr(T, name, _guard(fn, name in ("__eq__", "__ne__")))
    reflected = {
        "__radd__": M.add, "__rsub__": M.subtract, "__rmul__": M.multiply, "__rtruediv__": M.divide,
        "__rfloordiv__": M.floor_divide, "__rmod__": M.remainder, "__rpow__": _pow_of_tensor, "__rmatmul__": M.matmul,
        "__rand__": _bitwise("and"), "__ror__": _bitwise("or"), "__rxor__": _bitwise("xor"),
    }
    for name, fn in reflected.items():
        setattr(T, name, _guard(_rbinary(fn)))
    T.__neg__ = lambda x: _ops.neg(x)
    T.__pos__ = lambda x: x
    T.__abs__ = lambda x: _ops.abs(x)
    T.__invert__ = lambda x: _ops.logical_not(x) if x.dtype == _BOOL else _math_extra().bitwise_not(x)
    for name, fn in {"__iadd__": M.add, "__isub__": M.subtract, "__imul__": M.multiply,
                     "__itruediv__": M.divide}.items():
        setattr(T, name, _guard(fn))

    methods = [
        "add", "subtract", "multiply", "divide", "floor_divide", "remainder", "mod", "pow", "maximum",
        "minimum", "equal", "not_equal", "less_than", "less_equal", "greater_than", "greater_equal",
        "logical_and", "logical_or", "logical_xor", "logical_not", "abs", "neg", "sign", "floor", "ceil",
        "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh", "erf", "sigmoid", "square", "reciprocal",
        "log1p", "log2", "log10", "expm1", "round", "trunc", "scale", "clip", "isnan", "isinf", "isfinite",
        "sum", "mean", "prod", "max", "min", "amax", "amin", "argmax", "argmin", "var", "std", "all", "any",
        "logsumexp", "allclose", "isclose", "equal_all", "matmul", "mm", "bmm", "dot", "outer", "t", "norm",
        "moveaxis", "broadcast_to", "expand", "expand_as", "squeeze", "unsqueeze", "flatten", "split",
        "chunk", "unbind", "unstack", "tile", "gather", "index_select", "scatter", "scatter_add",
        "index_add", "take_along_axis", "nonzero", "masked_select", "masked_fill", "tril", "triu", "flip",
        "roll", "cumsum", "where",
    ]
    # The registry's elementwise unary ops (math.py makes them) are methods too.
    methods += [n for n in _ops.elementwise_unary() if n not in methods and hasattr(M, n)]
    for name in methods:
        setattr(T, name, M._PY_FUNCTIONS.get(name) or getattr(M, name))
    for name in ["add", "subtract", "multiply", "divide", "clip", "scale", "exp", "sqrt", "rsqrt", "tanh",
                 "sigmoid", "floor", "ceil", "round", "trunc", "abs", "neg", "log", "masked_fill", "pow",
                 "square", "reciprocal", "remainder", "floor_divide", "cumsum"]:
        fn = M._PY_FUNCTIONS.get(name) or getattr(M, name, None)
        if fn is not None:
            setattr(T, name + "_", _inplace_mod.method(fn, name + "_"))
    T.squeeze_ = _reshape_inplace(M.squeeze)
    T.unsqueeze_ = _reshape_inplace(M.unsqueeze)
    T.reshape_ = _reshape_inplace(_reshape)
    T.flatten_ = _reshape_inplace(M.flatten)
    T.diagonal = M.diagonal
    _install_extras(T)


# Paddle's Tensor methods that math_extra and manip_extra define (the module functions, x first).
_EXTRA_METHODS = (
    "acos acosh addmm argsort argwhere as_strided asin asinh atan atan2 atanh atleast_1d atleast_2d atleast_3d "
    "baddbmm bincount bitwise_and bitwise_invert bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift "
    "bitwise_xor bucketize cdist clamp copysign cosh count_nonzero cross cummax cummin cumprod "
    "cumulative_trapezoid deg2rad diag diag_embed diagflat diagonal_scatter diff dist div dsplit eq floor_mod "
    "fmax fmin frac frexp gather_nd gcd ge greater gt heaviside histogram histogram_bin_edges histogramdd hsplit "
    "hypot i0 i0e i1 i1e increment index_add index_fill index_sample inner is_empty is_integer isin "
    "isneginf isposinf isreal kron kthvalue lcm ldexp le lerp less logaddexp logcumsumexp logit lt masked_fill "
    "masked_scatter matrix_transpose median mode msort mul multiplex mv nan_to_num nanmean nanmedian "
    "nanquantile nansum narrow ne negative nextafter put_along_axis quantile rad2deg rank ravel renorm "
    "repeat_interleave reverse rot90 round scatter scatter_nd_add scatter_reduce select_scatter sgn signbit "
    "sinc sinh slice_scatter sort stanh sub swapaxes swapdims take take_along_axis take_along_dim tensor_split "
    "tensordot topk trace trapezoid true_divide unflatten unfold unique unique_consecutive vander view_as "
    "vsplit").split()


def _install_extras(T):
    from . import manip_extra, math_extra
    for name in _EXTRA_METHODS:
        setattr(T, name, getattr(manip_extra, name, None) or getattr(math_extra, name))
    T.permute = lambda x, *dims: manip_extra.permute(x, *dims)
    T.view = _view
    T.shape = property(lambda x: Size(_core_shape(x)))
    T.retain_grads = _retain_grads
    from . import linalg
    for name in ("cholesky", "eig", "eigvals", "eigvalsh", "lstsq", "matrix_power", "multi_dot", "pinv", "qr",
                 "slogdet", "solve", "cond"):
        if hasattr(linalg, name):
            setattr(T, name, getattr(linalg, name))
    T.inverse = linalg.inv
    for name in ("lgamma", "gammaln", "digamma", "erfinv", "polygamma", "multigammaln", "reduce_as", "multinomial"):
        setattr(T, name, getattr(math_extra, name, None) or getattr(creation, name))
    for name in ("add_n", "block_diag", "broadcast_tensors", "slice", "strided_slice",
                 "scatter_nd", "split_with_sizes", "combinations", "softmax"):
        setattr(T, name, _first_arg_method(name))
    from . import complex_ops
    T.polar = complex_ops.polar
    T.view_as_real, T.view_as_complex = complex_ops.as_real, complex_ops.as_complex
    for name, d in (("float", "float32"), ("double", "float64"), ("half", "float16"), ("bfloat16", "bfloat16"),
                    ("bool", "bool"), ("long", "int64"), ("int", "int32"), ("byte", "uint8"), ("char", "int8"),
                    ("float16", "float16"), ("float32", "float32"), ("float64", "float64"), ("int8", "int8"),
                    ("int32", "int32"), ("int64", "int64"), ("uint8", "uint8"), ("complex64", "complex64"),
                    ("complex128", "complex128"), ("cfloat", "complex64"), ("cdouble", "complex128")):
        setattr(T, name, _cast_method(d))
    T.itemsize = property(lambda x: x.dtype.itemsize)
    T.ndimension = lambda x: len(x.shape)
    T.is_cuda = property(lambda x: False)
    T.get_device = lambda x: -1 if x.place.is_cpu_place() else x.place.get_device_id()
    T.device = property(lambda x: x.place.type if x.place.is_cpu_place() else x._device)
    T.stride = lambda x, dim=None: list(x.strides) if dim is None else x.strides[dim]
    T.offset = property(lambda x: x._byte_offset // x.dtype.itemsize)
    T.requires_grad = property(lambda x: not x.stop_gradient, _set_requires_grad)
    T.mT = property(manip_extra.matrix_transpose)
    T.type_as = lambda x, other: M.cast(x, other.dtype)
    T.is_same_shape = lambda x, other: list(x.shape) == list(other.shape)
    T.repeat = _repeat
    T.new_full = lambda x, size, fill_value, *, dtype=None, device=None, requires_grad=False, pin_memory=False: \
        _new(x, size, fill_value, dtype, requires_grad)
    T.new_zeros = lambda x, *size, dtype=None, device=None, requires_grad=False, pin_memory=False: \
        _new(x, _size_args(size), 0, dtype, requires_grad)
    T.new_ones = lambda x, *size, dtype=None, device=None, requires_grad=False, pin_memory=False: \
        _new(x, _size_args(size), 1, dtype, requires_grad)
    T.new_empty = T.new_zeros
    T.grad = property(_grad, _set_grad)
    T.name = None  # Paddle's Tensor.name; None until one is set (oar.static names what it needs)
    T.is_dense = lambda x: True
    T.get_strides = lambda x: list(x.strides)
    T.data_ptr = _data_ptr
    T.fill_diagonal_tensor = manip_extra.fill_diagonal_tensor
    T.fill_diagonal_ = _inplace_mod.method(manip_extra.fill_diagonal, "fill_diagonal_")
    for name in _EXTRA_INPLACE:
        fn = getattr(manip_extra, name, None) or getattr(math_extra, name)
        setattr(T, name + "_", _inplace_mod.method(fn, name + "_"))


# The in-place forms (x.name_(...)) Paddle has of the functions above; they go through _inplace.
_EXTRA_INPLACE = (
    "acos acosh addmm asin asinh atan atanh baddbmm bitwise_and bitwise_invert bitwise_left_shift bitwise_not "
    "bitwise_or bitwise_right_shift bitwise_xor clamp copysign cosh cumprod digamma div erfinv fill_diagonal_tensor "
    "floor_mod frac gammaln gcd hypot i0 index_add index_fill lcm ldexp lerp lgamma logit masked_scatter "
    "mul multigammaln nan_to_num polygamma put_along_axis renorm round scatter scatter_add sinc sinh sub").split()


def _set_grad(x, value):
    if value is not None and list(value.shape) != list(x.shape):
        raise ValueError(f"grad: the gradient has shape {list(value.shape)} but the tensor has shape {list(x.shape)}")
    x._zero_grad = False
    x._set_grad(None if value is None else M.cast(value.detach(), x.dtype))


def _data_ptr(x):
    """The address of the first element (host memory only)."""
    if x._device.split(":")[0] != "cpu":
        raise RuntimeError(f"data_ptr: the tensor is on {x._device}; only a cpu tensor's address can be read")
    return int(x.numpy().ctypes.data)


def _cast_method(dtype):
    return lambda x: M.cast(x, dtype)


def _first_arg_method(name):
    def method(x, *args, **kwargs):
        from . import manip_extra, math_extra
        import oar
        fn = getattr(manip_extra, name, None) or getattr(math_extra, name, None) or getattr(oar, name)
        return fn(x, *args, **kwargs)
    method.__name__ = name
    return method


def _set_requires_grad(x, value):
    x.stop_gradient = not value


def _size_args(size):
    return list(size[0]) if len(size) == 1 and isinstance(size[0], (list, tuple)) else list(size)


def _new(x, size, fill_value, dtype, requires_grad):
    """A new tensor of `size` filled with fill_value, in x's dtype (or dtype) and on x's device."""
    dtype = convert_dtype(dtype) or x.dtype
    out = creation.full(size, fill_value, dtype)
    out = out._to(x._device) if out._device != x._device else out
    out.stop_gradient = not requires_grad
    return out


def _repeat(x, *repeats):
    """Tiles x (torch's repeat): repeats per dim, leading dims added as needed."""
    reps = repeats[0] if len(repeats) == 1 and not isinstance(repeats[0], (numbers.Integral, np.integer)) else repeats
    if isinstance(reps, Tensor):
        reps = reps.numpy().tolist()
    return M.tile(x, list(reps) if not isinstance(reps, (numbers.Integral, np.integer)) else [reps])


def _math_extra():
    from . import math_extra
    return math_extra


def _is_int_operand(v):
    return (isinstance(v, Tensor) and v.dtype.is_integer) or (
        isinstance(v, (numbers.Integral, np.integer)) and not isinstance(v, (builtins.bool, np.bool_)))


def _bitwise(op):
    """&, | and ^: bitwise on integers (Paddle), logical on bools and anything else."""
    logical = {"and": M.logical_and, "or": M.logical_or, "xor": M.logical_xor}[op]

    def fn(x, y):
        if _is_int_operand(x) and _is_int_operand(y):
            return getattr(_math_extra(), "bitwise_" + op)(x, y)
        return logical(x, y)
    fn.__name__ = "__" + op + "__"
    return fn


def _pow_of_tensor(base, exponent):
    """base ** exponent for a number base: integers stay integers (Paddle: 2 ** int64 tensor is int64)."""
    if _is_int_operand(base) and _is_int_operand(exponent):
        f64 = convert_dtype("float64")
        out = M.pow(_ops.full_like(_ops.cast(exponent, f64), float(base)), _ops.cast(exponent, f64))
        return _ops.cast(out, exponent.dtype)
    return M.pow(base, exponent)


def _reshape_inplace(fn):
    """squeeze_, reshape_, ...: the handle takes the new shape (a view of the
    same memory where the strides allow one), as in PyTorch and Paddle."""
    def method(x, *args, **kwargs):
        new = fn(x, *args, **kwargs)
        if not new.stop_gradient and x.is_leaf:
            raise RuntimeError("Leaf Tensor that doesn't stop gradient can't use inplace strategy; "
                               "reshape it under oar.no_grad(), or reshape a copy")
        x._rebind_(new) if not new.stop_gradient else x._set_data_(new)
        return x
    return method


def _guard(fn, is_equality=False):
    """Operators return NotImplemented for operands that are not tensors, arrays or numbers."""
    def op(x, y):
        if y is None or not isinstance(y, (Tensor, numbers.Number, np.ndarray, np.generic, list, tuple)):
            if is_equality:
                return fn is M.not_equal
            return NotImplemented
        return fn(x, y)
    op.__name__ = getattr(fn, "__name__", "op")
    return op


def _deepcopy(x):
    y = creation.clone_data(x.detach())
    y.stop_gradient = x.stop_gradient
    if type(x) is not Tensor:
        y = type(x)._from_tensor(y, x)
    return y


_install()
