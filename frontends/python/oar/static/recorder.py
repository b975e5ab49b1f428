"""Static mode's op recorder (Note [Static programs]
Paddle's static scripts build a program statement by statement, with no
function for oar._C.ir.trace to call. So while static mode is on, every C++
op the Python frontend calls is wrapped: a call that takes a tensor runs
eagerly and is recorded with its arguments. Placeholders (static.data) are
zeros whose dynamic dims have size 7 while the program is built; values
computed from them are the program's variables. Parameters and buffers
(batch norm's running statistics) are read when the program runs, not when
it is built, so calls on them are recorded too. Calls without tensor
arguments (creation ops) give constants, except the random ones (uniform,
normal), which a program draws anew on every run. Executor.run replays the
calls it needs inside _C.ir.trace: the program is oar's IR, optimized,
differentiated (optimizer.minimize) and run by the C++ executor.

What Python reads while building is fixed in the program, as in a trace:
a size taken from a placeholder's shape keeps the size 7 (chosen so that it
fails to broadcast against other batch sizes rather than silently
broadcasting, as 1 would); a variable's values cannot be read at all.

Python code that captured a C++ op at import (a module global, a closure
cell, a Tensor method) is rebound too, and restored on disable_static, so
dynamic mode runs the plain ops. A tensor computed from a placeholder by an
op the recorder does not know still carries autograd history (float
placeholders require grad while recording): using it in a recorded op is an
error, never a silently baked-in constant."""
import sys
import types

from .. import _C
from ..framework import Tensor


class _State:
    program = None  # the Program being recorded into; None when static mode is off
    depth = 0       # > 0: inside a recorded call, a replay or an Executor.run (nothing is recorded)


state = _State()


class suspended:  # noqa: N801 - a context manager
    """Nothing is recorded inside (replays, runs, parameter snapshots)."""

    def __enter__(self):
        state.depth += 1

    def __exit__(self, *exc):
        state.depth -= 1


def _recording(fn):
    """`fn` recording its calls into the current program."""
    def op(*args, **kwargs):
        program = state.program
        if program is None or state.depth:
            return fn(*args, **kwargs)
        state.depth += 1
        try:
            out = fn(*args, **kwargs)
        finally:
            state.depth -= 1
        program._record(fn, args, kwargs, out)
        return out
    op.__wrapped__ = fn
    op.__name__ = getattr(fn, "__name__", "op")
    op.__doc__ = getattr(fn, "__doc__", None)
    return op


def _assigning(fn):
    """Tensor._set_data_ / _rebind_: an assignment of a recorded value is recorded."""
    def assign(self, src):
        program = state.program
        if program is None or state.depth or not program._assign(self, src):
            return fn(self, src)
        return None
    assign.__wrapped__ = fn
    return assign


def _init(fn):
    """Tensor(other): the new handle stands for other's value."""
    def init(self, *args, **kwargs):
        fn(self, *args, **kwargs)
        program = state.program
        if program is not None and not state.depth and args and isinstance(args[0], Tensor):
            program._alias(self, args[0])
    init.__wrapped__ = fn
    return init


def _reading(fn):
    """Tensor.numpy / _item: a variable has no value until Executor.run fetches it."""
    def read(self, *args, **kwargs):
        program = state.program
        if program is not None and not state.depth:
            program._check_readable(self)
        return fn(self, *args, **kwargs)
    read.__wrapped__ = fn
    return read


# Tensor methods implemented in C++, by how they are wrapped.
_TENSOR_METHODS = {"__add__": _recording, "__sub__": _recording, "__mul__": _recording,
                   "__truediv__": _recording, "detach": _recording, "contiguous": _recording, "_to": _recording,
                   "_set_data_": _assigning, "_rebind_": _assigning, "__init__": _init, "numpy": _reading,
                   "_item": _reading}

_installed = []  # (restore function) for every rebinding done by install()


def _op_wrappers():
    """{id(C++ op): (op, its recording wrapper)} for the ops of _C.ops and _C.linalg and the fast operators."""
    ops = {}
    for module in (_C.ops, getattr(_C, "linalg", None)):
        if module is None:
            continue
        for name in dir(module):
            fn = getattr(module, name)
            if isinstance(fn, types.BuiltinFunctionType) and not name.startswith("__"):
                ops[id(fn)] = (fn, _recording(fn))
    for name in ("_fast_add", "_fast_subtract", "_fast_multiply"):
        fn = getattr(_C, name)
        ops[id(fn)] = (fn, _recording(fn))
    return ops


def _set(owner, name, value):
    old = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
    setattr(owner, name, value)
    _installed.append(lambda: setattr(owner, name, old))


def _rebind_cells(fn, ops, seen):
    """Replaces captured C++ ops in the closure cells of a Python function
    (and of the functions it captures)."""
    if id(fn) in seen:
        return
    seen.add(id(fn))
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        hit = ops.get(id(value))
        if hit is not None and hit[0] is value:
            cell.cell_contents = hit[1]
            _installed.append(lambda cell=cell, value=value: setattr(cell, "cell_contents", value))
        elif isinstance(value, types.FunctionType):
            _rebind_cells(value, ops, seen)


def install():
    """Wraps the C++ ops (Note [Static programs]); undone by uninstall()."""
    if _installed:
        return
    ops, seen = _op_wrappers(), set()
    for module in (_C.ops, getattr(_C, "linalg", None), _C):
        if module is None:
            continue
        for name in dir(module):
            hit = ops.get(id(getattr(module, name)))
            if hit is not None:
                _set(module, name, hit[1])
    # Python modules of oar holding C++ ops as globals or in closures.
    for mod_name, module in list(sys.modules.items()):
        if module is None or not (mod_name == "oar" or mod_name.startswith("oar.")) or mod_name.startswith("oar._C"):
            continue
        for name, value in list(vars(module).items()):
            hit = ops.get(id(value))
            if hit is not None and hit[0] is value:
                _set(module, name, hit[1])
            elif isinstance(value, types.FunctionType):
                _rebind_cells(value, ops, seen)
    for name, value in list(vars(Tensor).items()):
        wrap = _TENSOR_METHODS.get(name)
        if wrap is not None:
            _set(Tensor, name, wrap(value))
            continue
        hit = ops.get(id(value))
        if hit is not None and hit[0] is value:
            _set(Tensor, name, hit[1])
            continue
        fget = value.fget if isinstance(value, property) else value
        if isinstance(fget, types.FunctionType):
            _rebind_cells(fget, ops, seen)


def uninstall():
    while _installed:
        _installed.pop()()
