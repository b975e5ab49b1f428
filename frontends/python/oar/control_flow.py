"""Control flow with Paddle 3's API: ``cond`` and ``while_loop``.

``oar.static.nn.cond`` and ``oar.static.nn.while_loop`` are these functions.
In eager mode they run Python: the predicate (a one-element bool tensor) is
read and a branch called; the loop calls ``body`` while ``cond`` is true.

Inside ``oar.jit.to_static``, a predicate that is a symbolic tensor of the
trace is captured: each branch (or the loop's condition and body) is traced
into a region of a ``cond`` / ``while`` op of the program (see "Control
flow" in docs/static.md), so the program takes the branch the values decide
on every run. Branch outputs may be nested lists, tuples and dicts of
tensors; Python numbers that differ between the branches become tensors.
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
    for fn, label in ((true_fn, "true_fn"), (false_fn, "false_fn")):
        if fn is not None and not callable(fn):
            raise TypeError(f"oar.static.nn.cond: {label} must be callable but is "
                            f"{type(fn).__name__}{where}")
    if _is_symbolic(pred):
        return _captured_cond(pred, true_fn, false_fn, where)
    taken = _predicate("oar.static.nn.cond", "pred", pred, where)
    fn = true_fn if taken else false_fn
    return None if fn is None else fn()


# ---- capture inside to_static (Note [Tracing control flow] in trace_control_flow.cpp) ----

_NUMBER = (bool, int, float)


def _flatten(value, tensors):
    """The structure of `value` with each tensor (and Python number, which
    may become one) appended to `tensors` and replaced by its index."""
    if isinstance(value, Tensor):
        tensors.append(value)
        return ("tensor", len(tensors) - 1)
    if isinstance(value, _NUMBER):
        tensors.append(_number_tensor(value))
        return ("number", len(tensors) - 1, value)
    if isinstance(value, (list, tuple)):
        return (type(value), tuple(_flatten(v, tensors) for v in value))
    if isinstance(value, dict):
        return (dict, tuple((k, _flatten(v, tensors)) for k, v in value.items()))
    return ("leaf", value)


def _number_tensor(value):
    from .creation import to_tensor
    return to_tensor(value)


def _shape_of(spec):
    """The spec with numbers' values dropped (numbers may differ between branches)."""
    kind = spec[0]
    if kind == "number":  # yielded as a tensor: matches a tensor of the other branch
        return ("tensor", spec[1])
    if kind in ("tensor", "leaf"):
        return spec
    if kind is dict:
        return (dict, tuple((k, _shape_of(v)) for k, v in spec[1]))
    return (kind, tuple(_shape_of(v) for v in spec[1]))


def _describe(spec):
    kind = spec[0]
    if kind == "tensor":
        return "Tensor"
    if kind == "number":
        return type(spec[2]).__name__
    if kind == "leaf":
        return "None" if spec[1] is None else type(spec[1]).__name__
    if kind is dict:
        return "{" + ", ".join(f"{k!r}: {_describe(v)}" for k, v in spec[1]) + "}"
    inner = ", ".join(_describe(v) for v in spec[1])
    return f"[{inner}]" if kind is list else f"({inner}{',' if len(spec[1]) == 1 else ''})"


def _unflatten(spec, other, results):
    """The value of `spec` (the true branch's) given the results; `other` is
    the false branch's spec: numbers equal in both stay Python numbers."""
    kind = spec[0]
    if kind == "tensor":
        return results[spec[1]]
    if kind == "number":
        same = other[0] == "number" and type(other[2]) is type(spec[2]) and other[2] == spec[2]
        return spec[2] if same else results[spec[1]]
    if kind == "leaf":
        return spec[1]
    if kind is dict:
        return {k: _unflatten(v, o, results) for (k, v), (_, o) in zip(spec[1], other[1])}
    return kind(_unflatten(v, o, results) for v, o in zip(spec[1], other[1]))


def _same_leaves(a, b):
    """Non-tensor leaves (None, strings, ...) must be equal in both branches."""
    if a[0] == "leaf":
        return a[1] is b[1] or a[1] == b[1]
    if a[0] in ("tensor", "number"):
        return True
    return all(_same_leaves(x, y) for x, y in zip(a[1] if a[0] is not dict else [v for _, v in a[1]],
                                                  b[1] if b[0] is not dict else [v for _, v in b[1]]))


def _captured_cond(pred, true_fn, false_fn, where):
    specs = []

    def branch(fn):
        def traced(_args):
            tensors = []
            spec = _flatten(None if fn is None else fn(), tensors)
            specs.append(spec)
            if len(specs) == 2 and (_shape_of(specs[0]) != _shape_of(spec) or not _same_leaves(specs[0], spec)):
                raise TypeError(f"oar.static.nn.cond: true_fn returns {_describe(specs[0])} but false_fn returns "
                                f"{_describe(spec)}; both branches must return the same structure{where}")
            return tensors
        return traced

    results = _C.ir.trace_cond(pred, branch(true_fn), branch(false_fn),
                               "oar.static.nn.cond" + where)
    return _unflatten(specs[0], specs[1], results)


def _captured_while(cond, body, loop_vars, where, save_iterations=False):
    """while_loop inside a trace: loop_vars are tensors (numbers become tensors). With
    save_iterations, the results are followed by each carried value's stack of the values
    entering each iteration."""
    init = [v if isinstance(v, Tensor) else _number_tensor(v) if isinstance(v, _NUMBER) else v for v in loop_vars]
    for k, v in enumerate(init):
        if not isinstance(v, Tensor):
            raise TypeError(f"oar.static.nn.while_loop: loop variable {k} is a {type(v).__name__}; a loop captured "
                            f"in to_static carries Tensors or numbers{where}")

    def condition(args):
        return [cond(*args)]

    def step(args):
        out = body(*args)
        out = list(out) if isinstance(out, (list, tuple)) else [out]
        if len(out) != len(init):
            raise ValueError(f"oar.static.nn.while_loop: body returned {len(out)} values for "
                             f"{len(init)} loop variables{where}")
        for k, v in enumerate(out):
            if isinstance(v, _NUMBER):
                out[k] = _number_tensor(v)
            elif not isinstance(v, Tensor):
                raise TypeError(f"oar.static.nn.while_loop: body returned a {type(v).__name__} for loop variable "
                                f"{k}; expected a Tensor{where}")
        _check_carried(init, out, where)
        return out

    return _C.ir.trace_while(condition, step, init, "oar.static.nn.while_loop" + where, save_iterations)


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
    first = cond(*loop_vars)
    if _is_symbolic(first):
        return _captured_while(cond, body, loop_vars, where)
    going = _predicate("oar.static.nn.while_loop", "the value cond returns", first, where)
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
        going = cond(*loop_vars)
        if _is_symbolic(going):  # the iterations so far ran in Python; the rest is captured
            return _captured_while(cond, body, loop_vars, where)
        going = _predicate("oar.static.nn.while_loop", "the value cond returns", going, where)
    return loop_vars
