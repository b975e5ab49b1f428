"""Control flow with Paddle 3's API: ``cond`` and ``while_loop``.

``oar.static.nn.cond`` and ``oar.static.nn.while_loop`` are these functions.
In eager mode they run Python: the predicate (a one-element bool tensor) is
read and a branch called; the loop calls ``body`` while ``cond`` is true.

The IR has the matching ops (``cond``, ``while`` with regions, see "Control
flow" in docs/static.md), run by the executor, ``oar-run`` and
``jit.save``/``load``. Capturing them from Python inside
``oar.jit.to_static`` (tracing a branch or a body into a region) is not
implemented yet: a predicate that is a symbolic tensor of a trace raises
``NotImplementedError`` naming the function and your source line, instead of
silently baking one branch into the program.
"""

import inspect

from . import _C
from .framework import Tensor

__all__ = ["cond", "while_loop"]


def _caller():
    """' (at file.py:12)' for the user's frame that called cond/while_loop."""
    frame = inspect.currentframe()
    try:
        outer = frame.f_back.f_back if frame is not None and frame.f_back is not None else None
        if outer is None:
            return ""
        return f" (at {outer.f_code.co_filename}:{outer.f_lineno})"
    finally:
        del frame


def _is_symbolic(t):
    return isinstance(t, Tensor) and _C.ir.is_symbolic(t)


def _predicate(fn_name, what, pred, where):
    """The Python bool of a one-element bool tensor, or an error sentence."""
    if not isinstance(pred, Tensor):
        raise TypeError(f"{fn_name}: {what} must be a one-element bool Tensor but is "
                        f"{type(pred).__name__}{where}")
    if _is_symbolic(pred):
        raise NotImplementedError(
            f"{fn_name}: {what} is a symbolic tensor of a to_static trace; capturing a "
            f"tensor-dependent {'branch' if fn_name.endswith('cond') else 'loop'} into the "
            f"program is not implemented yet{where}")
    dtype = str(pred.dtype).split(".")[-1]
    if "bool" not in dtype:
        raise TypeError(f"{fn_name}: {what} must be a one-element bool Tensor but is a "
                        f"{dtype} tensor of shape {list(pred.shape)}{where}")
    numel = 1
    for d in pred.shape:
        numel *= d
    if numel != 1:
        raise ValueError(f"{fn_name}: {what} must be a one-element bool Tensor but has shape "
                         f"{list(pred.shape)} ({numel} elements){where}")
    return bool(pred.item())


def cond(pred, true_fn=None, false_fn=None, name=None, return_names=None):
    """Returns ``true_fn()`` when the one-element bool tensor ``pred`` is true,
    else ``false_fn()`` (None when that function is None), as
    ``paddle.static.nn.cond``. ``name`` is accepted for Paddle compatibility."""
    if return_names is not None:
        raise NotImplementedError("oar.static.nn.cond: return_names is not supported")
    where = _caller()
    taken = _predicate("oar.static.nn.cond", "pred", pred, where)
    fn, label = (true_fn, "true_fn") if taken else (false_fn, "false_fn")
    if fn is None:
        return None
    if not callable(fn):
        raise TypeError(f"oar.static.nn.cond: {label} must be callable but is "
                        f"{type(fn).__name__}{where}")
    return fn()


def _check_carried(before, after, where):
    for k, (a, b) in enumerate(zip(before, after)):
        if isinstance(a, Tensor) and isinstance(b, Tensor) and a.dtype != b.dtype:
            raise TypeError(f"oar.static.nn.while_loop: body changed loop variable {k} from "
                            f"{a.dtype} to {b.dtype}; a loop-carried value keeps its dtype{where}")


def while_loop(cond, body, loop_vars, is_test=False, name=None):
    """Calls ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)`` (a
    one-element bool tensor) is true and returns ``loop_vars``, as
    ``paddle.static.nn.while_loop``. The body must return as many values as
    ``loop_vars`` holds, each tensor keeping its dtype. ``is_test`` and
    ``name`` are accepted for Paddle compatibility (they change nothing in
    eager mode)."""
    where = _caller()
    if not callable(cond):
        raise TypeError(f"oar.static.nn.while_loop: cond must be callable but is "
                        f"{type(cond).__name__}{where}")
    if not callable(body):
        raise TypeError(f"oar.static.nn.while_loop: body must be callable but is "
                        f"{type(body).__name__}{where}")
    if not isinstance(loop_vars, (list, tuple)):
        raise TypeError(f"oar.static.nn.while_loop: loop_vars must be a list or tuple but is "
                        f"{type(loop_vars).__name__}{where}")
    if len(loop_vars) == 0:
        raise ValueError(f"oar.static.nn.while_loop: loop_vars must not be empty{where}")
    loop_vars = list(loop_vars)
    going = _predicate("oar.static.nn.while_loop", "the value cond returns", cond(*loop_vars), where)
    while going:
        out = body(*loop_vars)
        if not isinstance(out, (list, tuple)):
            out = [out]
        out = list(out)
        if len(out) != len(loop_vars):
            raise ValueError(f"oar.static.nn.while_loop: body returned {len(out)} values for "
                             f"{len(loop_vars)} loop variables{where}")
        _check_carried(loop_vars, out, where)
        loop_vars = out
        going = _predicate("oar.static.nn.while_loop", "the value cond returns",
                           cond(*loop_vars), where)
    return loop_vars
