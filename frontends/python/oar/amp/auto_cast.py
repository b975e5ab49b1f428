"""paddle.amp.auto_cast and paddle.amp.decorate: mixed precision in eager mode.

Note [AMP dispatch]
~~~~~~~~~~~~~~~~~~~
Every eager op of the Python package goes through an attribute of
oar._C.ops (oar.math, oar.nn.functional, ... call `_ops.<name>` at call
time). While no auto_cast is active those attributes are the C++ functions
themselves, so AMP off costs nothing. Entering the first enabled auto_cast
(on any thread) replaces each op function with a wrapper that reads the
calling thread's AMP state and casts the op's float32/float16/bfloat16
inputs to the dtype its list says; leaving the last one puts the originals
back. Per op, by its Paddle names (amp_lists.OP_ALIASES):
  black list        -> float32;
  white list        -> the AMP dtype;
  others, O1        -> use_promote: float32 when any input is float32, else
                       as they are; without use_promote: as they are;
  others, O2        -> use_promote: as O1; without: the AMP dtype.
A device without a kernel for the chosen half dtype runs the op in float32
instead, and the (op, dtype) pair is remembered so the miss is paid once.
Backward ops run in the dtypes the forward chose: the casts are ops on the
tape, so a float32 parameter gets a float32 gradient."""
import contextlib
import threading

from .. import _C
from ..framework import Tensor, bfloat16, float16, float32
from . import amp_lists

_ops = _C.ops
_HALF = (float16, bfloat16)
_FLOATS = (float32, float16, bfloat16)
_DTYPES = {"float16": float16, "bfloat16": bfloat16}

# Functions of _C.ops that are never wrapped: casts, queries and creation.
_UNWRAPPED = {"cast", "promote", "elementwise_unary", "accepts_only_floats", "shape", "numel", "full",
              "full_like", "zeros_like", "ones_like", "arange", "scalar_like"}

_local = threading.local()
_lock = threading.Lock()
_active = 0          # enabled auto_cast contexts on all threads
_originals = {}      # name -> the C++ function, while the wrappers are installed
_no_kernel = set()   # (op name, dtype) that fell back to float32


class _AmpState:
    """One auto_cast context: level, dtype and the op lists it uses."""

    def __init__(self, level, dtype, white, black, use_promote, custom_white=(), custom_black=()):
        self.level, self.dtype, self.use_promote = level, dtype, use_promote
        self.white, self.black = white, black
        self.custom_white, self.custom_black = set(custom_white or ()), set(custom_black or ())
        self._kinds = {}

    def kind(self, op):
        """'white', 'black' or 'gray'; an op answers to several Paddle names
        (amp_lists.OP_ALIASES): a custom list naming any of them decides first."""
        k = self._kinds.get(op)
        if k is None:
            names = amp_lists.OP_ALIASES.get(op, (op,))
            k = ("black" if any(n in self.custom_black for n in names) else
                 "white" if any(n in self.custom_white or n in self.white for n in names) else
                 "black" if any(n in self.black for n in names) else "gray")
            self._kinds[op] = k
        return k

    def target(self, op, dtypes):
        """The dtype the float inputs of `op` run in, or None to leave them."""
        kind = self.kind(op)
        if kind == "black":
            return float32
        if kind == "white" or (self.level == "O2" and not self.use_promote):
            return float32 if (op, self.dtype) in _no_kernel else self.dtype
        if self.use_promote and float32 in dtypes and any(d in _HALF for d in dtypes):
            return float32
        return None


def _current():
    return getattr(_local, "state", None)


def _cast_all(args, dtype, cast):
    def one(a):
        if isinstance(a, Tensor):
            return cast(a, dtype) if a.dtype in _FLOATS and a.dtype != dtype else a
        if isinstance(a, (list, tuple)) and a and isinstance(a[0], Tensor):
            return type(a)(one(t) for t in a)
        return a
    return [one(a) for a in args]


def _float_dtypes(args):
    found = set()
    for a in args:
        if isinstance(a, Tensor):
            if a.dtype in _FLOATS:
                found.add(a.dtype)
        elif isinstance(a, (list, tuple)):
            found.update(t.dtype for t in a if isinstance(t, Tensor) and t.dtype in _FLOATS)
    return found


def _cast_kwargs(kwargs, dtype, cast):
    return dict(zip(kwargs, _cast_all(list(kwargs.values()), dtype, cast))) if kwargs else kwargs


def _run(op, fn, args, kwargs, state):
    dtypes = _float_dtypes(args) | (_float_dtypes(list(kwargs.values())) if kwargs else set())
    if not dtypes:
        return fn(*args, **kwargs)
    cast = _originals.get("cast", _ops.cast)
    target = state.target(op, dtypes)
    if target is not None and dtypes != {target}:
        args, kwargs = _cast_all(args, target, cast), _cast_kwargs(kwargs, target, cast)
        dtypes = {target}
    try:
        return fn(*args, **kwargs)
    except _C.UnsupportedError as e:
        half = next((d for d in dtypes if d in _HALF), None)
        if half is None or "kernel" not in str(e):
            raise
        _no_kernel.add((op, half))  # Note [AMP dispatch]: run in float32 from now on
        return fn(*_cast_all(args, float32, cast), **_cast_kwargs(kwargs, float32, cast))


def _wrap(name, fn):
    def op(*args, **kwargs):
        state = _current()
        if state is None:
            return fn(*args, **kwargs)
        return _run(name, fn, args, kwargs, state)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = fn.__doc__
    return op


def _wrap_call(fn):
    """_ops.call(op, inputs, attrs): the op's name decides; optimizer updates are left alone."""
    def call(op_name, inputs, attrs, *rest):
        state = _current()
        if state is None or op_name.endswith("_update"):
            return fn(op_name, inputs, attrs, *rest)
        return _run(op_name, lambda i, a, *r: fn(op_name, i, a, *r), [inputs, attrs, *rest], {}, state)
    call.__name__ = call.__qualname__ = "call"
    call.__doc__ = fn.__doc__
    return call


def _install():
    for name in dir(_ops):
        fn = getattr(_ops, name)
        if name.startswith("_") or name in _UNWRAPPED or not callable(fn) or isinstance(fn, type):
            continue
        _originals[name] = fn
        setattr(_ops, name, _wrap_call(fn) if name == "call" else _wrap(name, fn))
    _originals.setdefault("cast", _ops.cast)


def _uninstall():
    for name, fn in _originals.items():
        setattr(_ops, name, fn)
    _originals.clear()


def _update_list(custom_white_list, custom_black_list, level, dtype):
    """The (white, black) op sets of `level` and `dtype` with the custom lists applied."""
    if level == "O0":
        return set(), set()
    white = set(amp_lists.white_list()[dtype][level])
    black = set(amp_lists.black_list()[dtype][level])
    both = set(custom_white_list or ()) & set(custom_black_list or ())
    if both:
        raise ValueError(f"auto_cast: the ops {sorted(both)} are in both custom_white_list and custom_black_list")
    for op in custom_white_list or ():
        black.discard(op)
        white.add(op)
    for op in custom_black_list or ():
        white.discard(op)
        black.add(op)
    return white, black


def _check_level_dtype(what, level, dtype):
    if not isinstance(level, str) or level.upper() not in ("O0", "OD", "O1", "O2"):
        raise ValueError(f"{what}: level must be 'O0', 'OD', 'O1' or 'O2', but got {level!r}")
    if hasattr(dtype, "name") and not isinstance(dtype, str):
        dtype = str(dtype).split(".")[-1]
    if not isinstance(dtype, str) or dtype.lower() not in _DTYPES:
        raise ValueError(f"{what}: dtype must be 'float16' or 'bfloat16', but got {dtype!r}")
    return level.upper(), dtype.lower()


@contextlib.contextmanager
def auto_cast(enable=True, custom_white_list=None, custom_black_list=None, level="O1", dtype="float16",
              use_promote=True):
    """A context in which ops run in mixed precision (Note [AMP dispatch]):
    white-list ops in `dtype` (float16 or bfloat16), black-list ops in float32.
    enable=False (or level 'O0') turns AMP off inside, also within an outer auto_cast."""
    global _active
    level, dtype = _check_level_dtype("auto_cast", level, dtype)
    on = bool(enable) and level != "O0"
    if level == "OD":  # only the white list in half precision, every other op in float32
        white, _ = _update_list(custom_white_list, None, "O1", dtype)
        white -= set(custom_black_list or ())
        state = _AmpState("O1", _DTYPES[dtype], white, _EVERYTHING, use_promote, custom_white_list,
                          custom_black_list)
    else:
        white, black = _update_list(custom_white_list, custom_black_list, level, dtype)
        state = _AmpState(level, _DTYPES[dtype], white, black, bool(use_promote), custom_white_list,
                          custom_black_list)
    previous = _current()
    _local.state = state if on else None
    if on:
        with _lock:
            if _active == 0:
                _install()
            _active += 1
    try:
        yield
    finally:
        _local.state = previous
        if on:
            with _lock:
                _active -= 1
                if _active == 0:
                    _uninstall()


amp_guard = auto_cast


class _Everything:
    """The OD black list: every op that is not white."""

    def __contains__(self, op):
        return True


_EVERYTHING = _Everything()


def is_autocast_enabled(device_type=None):
    """True inside an enabled auto_cast on this thread."""
    return _current() is not None


def get_autocast_dtype(device_type=None):
    """The AMP dtype of the enclosing auto_cast ('float32' outside one)."""
    state = _current()
    return "float32" if state is None else ("float16" if state.dtype == float16 else "bfloat16")


_supported = {}


def _is_supported(dtype, device):
    """Whether the device runs a matmul in `dtype` with its own kernel."""
    from ..framework import get_device
    device = device or get_device()
    key = (dtype, str(device))
    if key not in _supported:
        from ..creation import to_tensor
        try:
            x = _originals.get("cast", _ops.cast)(to_tensor([[1.0, 2.0]], place=device), dtype)
            _originals.get("matmul", _ops.matmul)(x, x, False, True)
            _supported[key] = True
        except (_C.UnsupportedError, RuntimeError, ValueError):
            _supported[key] = False
    return _supported[key]


def is_bfloat16_supported(device=None):
    """Whether `device` (default: the current one) has bfloat16 matmul kernels."""
    return _is_supported(bfloat16, device)


def is_float16_supported(device=None):
    """Whether `device` (default: the current one) has float16 matmul kernels."""
    return _is_supported(float16, device)


# ---- decorate -------------------------------------------------------------

def _keeps_float32(layer):
    """Normalization layers keep float32 parameters under O2, as in Paddle."""
    return any(n in c.__name__ for c in type(layer).__mro__ for n in ("BatchNorm", "InstanceNorm", "LayerNorm"))


def _excluded(layer, excluded_layers):
    for e in excluded_layers:
        if layer is e or (isinstance(e, type) and isinstance(layer, e)):
            return True
    return False


def _cast_model(model, dtype, excluded_layers):
    cast = _originals.get("cast", _ops.cast)
    skipped = set()
    for layer in model.sublayers(include_self=True):
        if _keeps_float32(layer) or _excluded(layer, excluded_layers):
            skipped.update(id(p) for p in layer.parameters())
    for p in model.parameters():
        if id(p) not in skipped and p.dtype == float32:
            p._set_data_(cast(p.detach(), dtype))
            if p.grad is not None:
                p._set_grad(None)


def decorate(models, optimizers=None, level="O1", dtype="float16", master_weight=None, save_dtype=None,
             master_grad=False, excluded_layers=None):
    """Prepares models (and optimizers) for AMP. O1 leaves them as they are;
    O2 casts the float32 parameters to `dtype` except those of normalization
    layers and `excluded_layers`, and (master_weight None or True) makes the
    optimizers keep float32 master weights. Returns models, or (models, optimizers)."""
    level, dtype = _check_level_dtype("decorate", level, dtype)
    from ..nn import Layer
    model_list = models if isinstance(models, (list, tuple)) else [models]
    for m in model_list:
        if not isinstance(m, Layer):
            raise TypeError(f"decorate: models must be Layers or a list of Layers, but got {type(m).__name__}")
    opt_list = [] if optimizers is None else (
        optimizers if isinstance(optimizers, (list, tuple)) else [optimizers])
    for o in opt_list:
        if not (hasattr(o, "step") and hasattr(o, "clear_grad")):
            raise TypeError(f"decorate: optimizers must be Optimizers or a list of them, but got {type(o).__name__}")
    if save_dtype is not None or master_grad:
        raise NotImplementedError("decorate: save_dtype and master_grad are not supported yet; "
                                  "cast a state dict yourself and keep master_grad=False")
    if level == "O2":
        excluded = excluded_layers if isinstance(excluded_layers, (list, tuple)) else (
            [] if excluded_layers is None else [excluded_layers])
        for m in model_list:
            _cast_model(m, _DTYPES[dtype], excluded)
        if master_weight is not False:
            for o in opt_list:
                o._multi_precision = True
    if optimizers is None:
        return models
    return models, optimizers


amp_decorate = decorate
