"""Dynamic-to-static conversion (Paddle's dy2static) for to_static(full_graph=True).

A function's source is parsed and rewritten before it is traced, so that
Python control flow on tensors becomes program control flow:

- ``if``/``elif``/``else`` becomes ``_jst.IfElse(pred, true_fn, false_fn, ...)``:
  the names either branch assigns are passed in and returned, and the
  decision is made when it runs: a tensor of the trace is captured as a
  ``cond``, anything else (a Python value, a tensor with values) picks one
  branch as Python would. An ``if`` whose branches end in ``return`` is
  rewritten first so the function returns once, after it.
- ``while`` and ``for i in range(...)`` become ``_jst.While(cond, body, ...)``
  over the names the body assigns: a condition that is a tensor of the
  trace is captured as a ``while``, a Python one loops in Python (unrolled
  into the trace, as before). ``break`` and ``continue`` become flags
  carried as loop variables, and the statements after them run under
  ``if not flag``; a ``return`` in a loop becomes a flag and a ``break``,
  the function returning after the loop.
- ``and``/``or``/``not`` give logical ops on tensors and Python's meaning
  otherwise, and ``a if c else b`` on a tensor ``c`` a cond; ``print`` of a
  symbolic tensor becomes the op print (each run's values) and ``assert`` on
  one the op assert.
- Calls of user functions, methods and Layers are converted the same way
  (oar's own modules, builtins and ``oar.jit.not_to_static`` functions are
  called as they are).

Generated code keeps the original line numbers, so errors point at the
user's file and line. What cannot be converted (a ``return``, ``break`` or
``continue`` inside ``with``/``try``, a ``while ... else``) stays Python and raises an error naming the file, line
and construct when its condition is a tensor of the trace.
"""
import ast
import functools
import logging
import inspect
import sys
import textwrap
import types
import warnings

from . import _C
from .framework import Tensor

__all__ = ["convert", "converted_source", "not_to_static"]

_PREFIX = "__jst_"
_NOT_CONVERTED = "__oar_not_to_static__"


def not_to_static(func=None):
    """Marks `func` to be called as written inside a converted function."""
    if func is None:
        return not_to_static
    try:
        setattr(func, _NOT_CONVERTED, True)
    except (AttributeError, TypeError):
        pass
    return func


class _Undefined:
    """The value of a name that is not assigned yet where a branch or loop starts."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"<undefined variable {self.name!r}>"

    def _used(self, *_):
        raise NameError(f"to_static: variable {self.name!r} is used but not defined on every path of the "
                        "converted if/while before this point")

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        self._used()

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _used
    __matmul__ = __rmatmul__ = __neg__ = __lt__ = __le__ = __gt__ = __ge__ = __bool__ = __call__ = _used
    __getitem__ = __iter__ = __len__ = _used


def _symbolic(value):
    return isinstance(value, Tensor) and _C.ir.is_symbolic(value)


# ---- the runtime helpers the converted code calls (as _jst.*) ----

class _Runtime:
    """The namespace converted code sees as `_jst`."""

    @staticmethod
    def ld(scope, name):
        """The value of local `name`, or an _Undefined."""
        return scope[name] if name in scope else _Undefined(name)

    @staticmethod
    def IfElse(pred, true_fn, false_fn, init, names, both, where):
        """Runs the if: captured as a cond for a symbolic predicate."""
        if not _symbolic(pred):
            return true_fn(*init) if _truth(pred, where) else false_fn(*init)
        from .control_flow import _captured_cond
        # A name undefined before the if and assigned by one branch only is
        # undefined after it (using it later is an error).
        drop = [isinstance(v, _Undefined) and n not in both for v, n in zip(init, names)]

        tensor_names = []
        # Lists the branches append to (outs.append(y)): each branch's new elements become results
        # of the cond, merged, and the list is extended by them after it.
        containers = _containers(names, init, true_fn, false_fn)
        appended = []

        def collect(side):
            tails = {}
            for k, (name, c, size, ids) in enumerate(containers):
                grown = type(c) is list and len(c) >= size and _members(c)[:size] == ids
                if not grown:
                    raise NotImplementedError(
                        f"to_static: the if at {where} changes the {type(c).__name__} {name!r} other than by "
                        "appending to it in a branch on a tensor; only appends are captured")
                if len(c) > size:
                    tails[_PREFIX + f"list{k}"] = list(c[size:])
                    del c[size:]  # the other branch starts from the same list
            if side == 1 and {n: len(t) for n, t in tails.items()} != {n: len(t) for n, t in appended[0].items()}:
                counts = [{containers[int(n[len(_PREFIX) + 4:])][0]: len(t) for n, t in a.items()}
                          for a in (appended[0], tails)]
                raise ValueError(f"to_static: the branches of the if at {where} append different numbers of "
                                 f"values to lists: {counts[0]} (true branch) and {counts[1]} (false branch)")
            appended.append(tails)
            return tails

        def run(fn, side):
            def branch():
                out = {n: None if d else v for v, n, d in zip(fn(*init), names, drop)}
                out.update(collect(side))
                if not tensor_names:  # which variable each flattened value is, for errors
                    tensor_names.extend(n for n, v in out.items() if isinstance(v, (Tensor, bool, int, float)))
                return out
            return branch
        try:
            out = _captured_cond(pred, run(true_fn, 0), run(false_fn, 1), f" (at {where})")
        except (ValueError, TypeError) as e:
            raise type(e)(_name_values(str(e), tensor_names)) from None
        for n in appended[0] if appended else ():
            containers[int(n[len(_PREFIX) + 4:])][1].extend(out[n])
        return tuple(_Undefined(n) if d else out[n] for n, d in zip(names, drop))

    @staticmethod
    def Select(pred, true_fn, false_fn, where):
        """`a if pred else b`: a cond for a symbolic predicate."""
        if not _symbolic(pred):
            return true_fn() if _truth(pred, where) else false_fn()
        from .control_flow import _captured_cond
        return _captured_cond(pred, true_fn, false_fn, f" (at {where})")

    @staticmethod
    def While(cond_fn, body_fn, init, names, where):
        """Runs the loop: captured as a while once its condition is symbolic."""
        values = list(init)
        while True:
            going = cond_fn(*values)
            if _symbolic(going):
                return _captured_loop(going, cond_fn, body_fn, values, names, where)
            if not _truth(going, where):
                return tuple(values)
            values = list(body_fn(*values))

    @staticmethod
    def And(*thunks):
        value = thunks[0]()
        for thunk in thunks[1:]:
            if isinstance(value, Tensor):
                from .math import logical_and
                value = logical_and(value, _as_bool_tensor(thunk()))
            elif not value:
                return value
            else:
                value = thunk()
        return value

    @staticmethod
    def Or(*thunks):
        value = thunks[0]()
        for thunk in thunks[1:]:
            if isinstance(value, Tensor):
                from .math import logical_or
                value = logical_or(value, _as_bool_tensor(thunk()))
            elif value:
                return value
            else:
                value = thunk()
        return value

    @staticmethod
    def Not(value):
        if isinstance(value, Tensor):
            from .math import logical_not
            return logical_not(value)
        return not value

    @staticmethod
    def Print(*args, **kwargs):
        """print: with tensors of the trace, the op print, which prints each run's values."""
        tensors = [a for a in args if _symbolic(a)]
        if not tensors or set(kwargs) - {"sep", "end"}:
            print(*args, **kwargs)
            return
        sep, end = kwargs.get("sep", " "), kwargs.get("end", "\n")
        sep = " " if sep is None else sep
        end = "\n" if end is None else end
        esc = lambda text: str(text).replace("{", "{{").replace("}", "}}")
        fmt = esc(sep).join("{}" if _symbolic(a) else esc(a) for a in args) + esc(end)
        _C.ops.print_tensors(tensors, fmt)

    @staticmethod
    def Assert(test, message, where):
        if isinstance(test, Tensor) and _symbolic(test):
            text = f"AssertionError at {where}" + (f": {message}" if message is not None else "")
            _C.ops.assert_true(_as_bool_tensor(test), [], text)
            return
        assert test, message

    @staticmethod
    def Stop(brk):
        """After an iteration of a Python loop: break it on a Python True (a flag that is a
        tensor of the trace guards the iterations left instead)."""
        return not isinstance(brk, Tensor) and bool(brk)

    @staticmethod
    def Shape(x):
        """`x.shape`: for a tensor of the trace with a size the values decide (nonzero's
        count, a length that grows in a loop), that size as an int64 tensor, so code comparing it
        is captured (a cond), never decided by the size the trace assumed."""
        shape = x.shape
        if not _symbolic(x):
            return shape
        data_dependent = _C.ir.data_dependent_dims(x)
        if not any(data_dependent):
            return shape
        sizes = _C.ops.shape(x)
        out = list(shape)
        for d, dep in enumerate(data_dependent):
            if dep:
                out[d] = sizes[d]
                out[d]._size_of = (x, d)  # oar.arange(n) of it is positions(x, d)
        return out

    @staticmethod
    def Python(test, construct, where):
        """The test of an if/while left as Python: a symbolic tensor there is an error."""
        if _symbolic(test):
            raise NotImplementedError(f"to_static: the {construct} at {where} depends on a tensor of the trace but "
                                      "cannot be converted; move it into a function or restructure it")
        return test

    @staticmethod
    def RangeTest(i, stop, step):
        if isinstance(step, Tensor):
            raise NotImplementedError("to_static: a range() with a tensor step cannot be converted")
        return i < stop if step > 0 else i > stop

    @staticmethod
    def Call(func):
        return _converted_callable(func)


_jst = _Runtime()


def _name_values(message, names):
    """'value 1' in an error from the IR becomes "variable 'y'"."""
    import re
    return re.sub(r"\bvalue (\d+)\b",
                  lambda m: f"variable {names[int(m.group(1))]!r}" if int(m.group(1)) < len(names) else m.group(0),
                  message)


def _truth(value, where):
    if isinstance(value, Tensor):
        if value.size != 1:
            raise ValueError(f"to_static: the condition at {where} is a tensor of shape {list(value.shape)}; "
                             "a condition must be a one-element tensor")
        return bool(value.item())
    return bool(value)


def _print_hook(fmt, tensors):
    """Writes a print op's line as Python's print would (Note [Print and assert ops])."""
    sys.stdout.write(fmt.format(*[str(t) for t in tensors]))
    sys.stdout.flush()


_C.ops.set_print_hook(_print_hook)


def _as_bool_tensor(value):
    if isinstance(value, Tensor):
        return value if "bool" in str(value.dtype) else value.astype("bool")
    from .creation import to_tensor
    return to_tensor(bool(value))


def _members(c):
    return [id(e) for e in (c if type(c) is list else c.values())]


def _containers(names, values, *fns):
    """(name, object, length, member ids) of the lists and dicts among `values` and the
    closures of `fns` (a branch or body reads those it appends to through its closure)."""
    seen = list(zip(names, values))
    for fn in fns:
        code = getattr(fn, "__code__", None)
        if code is not None:
            seen += [(n, c.cell_contents) for n, c in zip(code.co_freevars, fn.__closure__ or ()) if _cell_filled(c)]
    out, ids = [], set()
    for n, v in seen:
        if type(v) in (list, dict) and id(v) not in ids:
            ids.add(id(v))
            out.append((n, v, len(v), _members(v)))
    return out


class TensorArray:
    """The tensors a captured loop appended to a list (outs.append(y) in a while on a tensor):
    one stacked tensor whose leading dim, known when the program runs, counts the appends.
    It stands in the list for all of them; oar.stack and oar.concat of the list take it
    apart (Note [Tensor arrays])."""

    def __init__(self, stacked, name, where):
        self.stacked, self.name, self.where = stacked, name, where

    def __repr__(self):
        return (f"TensorArray({self.name!r} collected by the loop at {self.where}: tensors of shape "
                f"{list(self.stacked.shape)[1:]}, {self.stacked.dtype}, as many as the loop's iterations)")

    def __getattr__(self, attr):
        raise TypeError(f"to_static: {self!r} is not a Tensor: the number of tensors a captured loop appends "
                        "is known only when the program runs; use oar.stack or oar.concat of the list")


class _Appended(Exception):
    """The body of a captured loop appended to lists (first trace): retried with tensor arrays."""

    def __init__(self, found):
        super().__init__("a captured loop appended to lists")
        self.found = found


# Note [Tensor arrays]
# A list appended to in a captured loop holds, after the loop, as many
# tensors as the loop ran iterations, unknown while tracing. The loop is
# traced twice: the first trace finds the appends (and is dropped), the
# second carries one extra value per append, whose next value is the
# appended tensor (starting from zeros), in a while that saves its
# iterations: the stack of the values entering each iteration, with the
# final value after it, less the zeros at its head, is every appended
# tensor, in order. The list keeps its elements from before the loop and
# gets one TensorArray for the rest; oar.stack and oar.concat expand it.
# The while saves every carried value's iterations (as its VJP does), so
# the program keeps them all while it runs.

def _captured_loop(first, cond_fn, body_fn, values, names, where):
    """A while over the tensors and numbers among `values`; other values
    (undefined names, Python objects) stay fixed; lists the body appends to
    collect tensor arrays (Note [Tensor arrays])."""
    from .control_flow import _captured_while
    carried = [k for k, v in enumerate(values) if isinstance(v, (Tensor, bool, int, float))]
    at = where
    where = f" (at {where})"

    def full(args):
        out = list(values)
        for k, a in zip(carried, args):
            out[k] = a
        return out

    def cond(*args):
        return _as_bool_tensor(cond_fn(*full(args[:len(carried)])))  # slots and counter after them

    containers = _containers(names, values, body_fn)
    collected = []  # from the first trace: (container index, number of appends per iteration)

    def appends():
        """(container index, the tensors appended this run) per container the body appended to;
        the containers get their elements back."""
        found = []
        for c, (name, now, size, ids) in enumerate(containers):
            if len(now) == size and _members(now) == ids:
                continue
            if type(now) is not list or len(now) < size or _members(now)[:size] != ids:
                raise NotImplementedError(
                    f"to_static: the loop{where} changes the {type(now).__name__} {name!r} other than by "
                    "appending to it (in a loop on a tensor only appends to a list are captured)")
            new = now[size:]
            del now[size:]
            for e in new:
                if not isinstance(e, Tensor):
                    raise NotImplementedError(f"to_static: the loop{where} appends a {type(e).__name__} to the "
                                              f"list {name!r}; a list collected in a captured loop holds tensors")
            if len(new) > 1:
                raise NotImplementedError(f"to_static: the loop{where} appends {len(new)} values per iteration "
                                          f"to the list {name!r}; a captured loop collects one per list")
            found.append((c, new))
        return found

    def body(*args):
        out = body_fn(*full(args[:len(carried)]))
        found = appends()
        if not collected and found:
            raise _Appended(found)
        if [(c, len(n)) for c, n in found] != collected:
            raise RuntimeError(f"to_static: the loop{where} appended differently when traced again")
        for k, (before, after) in enumerate(zip(values, out)):
            if k not in carried and not isinstance(before, _Undefined) and after is not before:
                raise TypeError(f"to_static: the loop{where} changes variable {names[k]!r}, a "
                                f"{type(before).__name__}; a captured loop carries only tensors and numbers")
        counter = [args[-1] + 1] if collected else []  # iterations run (Note [Tensor arrays])
        return [out[k] for k in carried] + [e for _, new in found for e in new] + counter

    del first
    init = [values[k] for k in carried]
    slots = []
    try:
        try:
            result = _captured_while(cond, body, init, where)
        except _Appended as a:
            from .creation import zeros
            collected[:] = [(c, len(n)) for c, n in a.found]
            slots = [(c, zeros(list(e.shape), e.dtype)) for c, new in a.found for e in new]
            counter = zeros([], "int64")
            result = _captured_while(cond, body, init + [z for _, z in slots] + [counter], where,
                                     save_iterations=True)
    except (TypeError, ValueError) as e:
        import re
        message = re.sub(r"loop variable (\d+)", lambda m: f"loop variable {_loop_name(names, carried, int(m.group(1)))!r}",
                         str(e))
        raise type(e)(message) from None
    out = list(values)
    for k, r in zip(carried, result):
        out[k] = r
    for k, v in enumerate(values):
        if isinstance(v, _Undefined):
            out[k] = _Undefined(names[k])
    if slots:
        _ops = _C.ops
        n = len(carried) + len(slots) + 1
        count, counts = result[n - 1], result[2 * n - 1]  # T, and [0, 1, .., T-1]
        one = _ops.scalar_like(count, 1.0)
        last = _ops.equal(counts, count - one)
        # entry t of the stack entered iteration t: [zeros, e1, .., e(T-1)]; e(t+1) is at t + 1,
        # and the last, e(T), is the final value (gather and where: any T, differentiable)
        index = _ops.where(last, counts, counts + one)
        for j, (c, _) in enumerate(slots):
            final, stack = result[len(carried) + j], result[n + len(carried) + j]
            rank = len(final.shape)
            mask = _ops.unsqueeze(last, list(range(1, rank + 1))) if rank else last
            every = _ops.where(mask, _ops.unsqueeze(final, [0]), _ops.gather(stack, index, 0))
            name, target = containers[c][0], containers[c][1]
            target.append(TensorArray(every, name, at))
    return tuple(out)


def _loop_name(names, carried, k):
    return names[carried[k]] if k < len(carried) else f"collected list value {k - len(carried)}"


def _expand_tensor_arrays(xs, axis, stacking):
    """The tensors of a list holding TensorArrays, for oar.stack (each element gets the new
    dim `axis`) or oar.concat (joined along `axis`): parts to concatenate along axis."""
    _ops = _C.ops
    parts = []
    for x in xs:
        if isinstance(x, TensorArray):
            s = x.stacked
            rank = len(s.shape)
            a = axis % (rank if stacking else rank - 1)
            perm = list(range(1, a + 1)) + [0] + list(range(a + 1, rank))
            moved = _ops.transpose(s, perm)  # [n, *e] -> the n elements side by side at axis
            if stacking:
                parts.append(moved)
            elif list(s.shape)[1 + a] == 1:  # joined along axis: elements 1 long there (tokens [B, 1])
                parts.append(_ops.squeeze(moved, [a + 1]))
            else:
                raise NotImplementedError(
                    f"to_static: oar.concat along axis {axis} of {x!r} is supported for tensors 1 long along "
                    "the axis (their stack is their concat); oar.stack the list, then reshape")
        else:
            parts.append(_ops.unsqueeze(x, [axis % (len(x.shape) + 1)]) if stacking else x)
    return parts


# ---- which calls are converted ----

def _is_oar_code(func):
    """True for code that is not the user's: oar itself, the standard library
    and installed packages (numpy, ...), which are called as they are."""
    module = getattr(func, "__module__", None) or ""
    top = module.split(".")[0]
    if top == "oar" or top in sys.stdlib_module_names:
        return True
    filename = getattr(getattr(func, "__code__", None), "co_filename", "")
    return "site-packages" in filename or "dist-packages" in filename


def _converted_callable(func):
    from .nn.layer import Layer
    from .jit import StaticFunction
    if getattr(func, _NOT_CONVERTED, False) or isinstance(func, StaticFunction):
        return func
    if isinstance(func, Layer):
        forward = type(func).forward
        if _is_oar_code(forward) or func._forward_pre_hooks or func._forward_post_hooks:
            return func
        if "forward" in func.__dict__:  # an instance-level forward (to_static of a sublayer)
            return func
        return types.MethodType(convert(forward), func)
    if isinstance(func, types.MethodType):
        inner = func.__func__
        if isinstance(inner, types.FunctionType) and not _is_oar_code(inner):
            return types.MethodType(convert(inner), func.__self__)
        return func
    if isinstance(func, types.FunctionType) and not _is_oar_code(func):
        return convert(func)
    return func


# ---- the conversion ----

_cache = {}  # code object -> factory function (or None: not convertible)
_unavailable = {}  # code object -> why its source could not be read


def convert(func, strict=False):
    """The converted version of plain Python function `func` (itself when
    there is nothing to convert). With `strict`, a function whose source is
    not available warns that it runs unconverted."""
    if not isinstance(func, types.FunctionType) or getattr(func, _NOT_CONVERTED, False):
        return func
    code = func.__code__
    if code not in _cache:
        _cache[code] = _build_factory(func, strict)
        _report(func, _cache[code])
    factory = _cache[code]
    if strict and code in _unavailable:  # each time: another function may share the code
        warnings.warn(f"to_static(full_graph=True): the source of {func.__qualname__} is not available "
                      f"({_unavailable[code]}), so its Python control flow is not converted: an if or while "
                      "on a tensor fails when traced", UserWarning, stacklevel=3)
    if factory is None:
        return func
    converted = factory(_jst, *closure_values(func))
    converted.__defaults__ = func.__defaults__
    converted.__kwdefaults__ = func.__kwdefaults__
    functools.update_wrapper(converted, func)
    converted.__wrapped__ = func
    return converted


# ---- paddle.jit.set_code_level / set_verbosity ----
_log = logging.getLogger("oar.jit.dy2static")
_levels = {"code": 0, "code_stdout": False, "verbosity": 0, "verbosity_stdout": False}


def set_code_level(level=100, also_to_stdout=False):
    """Log the converted source of each function to_static converts from now
    on (logger "oar.jit.dy2static", level INFO) while `level` > 0; with
    `also_to_stdout` it is printed too. Paddle's levels pick the stage of its
    transformer passes; oar has one conversion pass, so every level > 0 shows
    its result."""
    if not isinstance(level, int) or isinstance(level, bool):
        raise TypeError(f"set_code_level: level must be an int but is {type(level).__name__}")
    _levels["code"], _levels["code_stdout"] = level, bool(also_to_stdout)


def set_verbosity(level=0, also_to_stdout=False):
    """Log which functions to_static converts and which run as written
    (logger "oar.jit.dy2static") while `level` > 0; with `also_to_stdout`
    the lines are printed too."""
    if not isinstance(level, int) or isinstance(level, bool):
        raise TypeError(f"set_verbosity: level must be an int but is {type(level).__name__}")
    _levels["verbosity"], _levels["verbosity_stdout"] = level, bool(also_to_stdout)


def _emit(text, to_stdout):
    _log.info(text)
    if to_stdout:
        print(text)


def _report(func, factory):
    where = f"{func.__code__.co_filename}:{func.__code__.co_firstlineno}"
    if _levels["verbosity"] > 0:
        what = "converted" if factory is not None else "runs as written (nothing to convert or no source)"
        _emit(f"to_static: {func.__qualname__} ({where}) {what}", _levels["verbosity_stdout"])
    if _levels["code"] > 0 and factory is not None:
        _emit(f"to_static: converted code of {func.__qualname__} ({where}):\n{factory.converted_source}",
              _levels["code_stdout"])


def convert_entry(func, warn=True):
    """The function to_static traces for `func` (a function or a bound method):
    converted, warning (with `warn`) when its source is not available."""
    if getattr(func, _NOT_CONVERTED, False):
        return func
    if isinstance(func, types.MethodType) and isinstance(func.__func__, types.FunctionType):
        return types.MethodType(convert(func.__func__, strict=warn), func.__self__)
    if isinstance(func, types.FunctionType):
        return convert(func, strict=warn)
    return func


def closure_values(func):
    """The values of `func`'s closure cells (an _Undefined for an empty one)."""
    return [c.cell_contents if _cell_filled(c) else _Undefined(n)
            for n, c in zip(func.__code__.co_freevars, func.__closure__ or ())]


def _cell_filled(cell):
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _build_factory(func, strict):
    if func.__code__.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        return None  # a yield or await cannot move into a branch function
    try:
        source = textwrap.dedent(inspect.getsource(func.__code__))  # its own, not a __wrapped__ one's
        filename = inspect.getsourcefile(func.__code__) or func.__code__.co_filename
        first_line = func.__code__.co_firstlineno
    except (OSError, TypeError) as e:
        _unavailable[func.__code__] = str(e)
        return None
    if func.__name__ == "<lambda>":
        return None  # one expression (its source line may hold more than the lambda)
    tree = ast.parse(source)
    fdef = tree.body[0]
    if not isinstance(fdef, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    ast.increment_lineno(tree, first_line - 1)
    fdef.decorator_list = []
    # Branches become functions: a global, nonlocal or del of a name there
    # would change meaning, so such functions run as written.
    if any(isinstance(n, (ast.Global, ast.Nonlocal, ast.Delete)) for s in fdef.body for n in ast.walk(s)):
        return None
    return compile_function(fdef, filename, first_line, func, convert=True)


def compile_function(fdef, filename, first_line, func, convert):
    """A factory(_jst, *closure cells of `func`) returning the function of
    `fdef` (an ast.FunctionDef taken from `func`'s source, its lines those
    of the file), converted when `convert`, seeing `func`'s globals and
    closure (jit_graph_break compiles the pieces of a function with it)."""
    if convert:
        _Converter(filename).convert_function(fdef)
    freevars = list(func.__code__.co_freevars)
    params = ["_jst"] + freevars
    factory = ast.FunctionDef(
        name=_PREFIX + "factory",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params], vararg=None, kwonlyargs=[],
                           kw_defaults=[], kwarg=None, defaults=[]),
        body=[fdef, ast.Return(value=ast.Name(id=fdef.name, ctx=ast.Load()))], decorator_list=[], returns=None,)
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    for node in ast.walk(factory):
        if not hasattr(node, "lineno") or node.lineno is None:
            node.lineno = first_line
    code = compile(module, filename, "exec")
    factory_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    factory = types.FunctionType(factory_code, func.__globals__, factory_code.co_name)
    factory.converted_source = ast.unparse(fdef)
    return factory


def converted_source(func):
    """The converted source of `func` (for reading what to_static runs), or
    None when it is not converted."""
    func = getattr(func, "__func__", func)
    if not isinstance(func, types.FunctionType):
        return None
    convert(func)
    factory = _cache.get(func.__code__)
    return None if factory is None else factory.converted_source


# Generated names that are state (flags, return values, range indices) and
# pass through branches and loops like user variables; the others
# (__jst_t_stop, __jst_t_step) are fixed before their loop.
_STATE = tuple(_PREFIX + kind for kind in ("brk", "cont", "ret", "i"))


def _is_state(name):
    return not name.startswith(_PREFIX) or name.startswith(_STATE)


def _assigned(stmts):
    """Names the statements assign (not counting nested functions' bodies), in order."""
    found = []

    class Visitor(ast.NodeVisitor):
        def visit_Name(self, node):
            if isinstance(node.ctx, ast.Store) and node.id not in found and _is_state(node.id):
                found.append(node.id)

        def visit_Subscript(self, node):
            # y[k] = v rebinds y to the written tensor in a trace (Note [Rebinding] in
            # src/tensor.cpp), so y is assigned: a loop carries it, a cond merges it
            if isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name) \
                    and node.value.id not in found and _is_state(node.value.id):
                found.append(node.value.id)
            self.generic_visit(node)

        def visit_FunctionDef(self, node):
            if not node.name.startswith(_PREFIX) and node.name not in found:
                found.append(node.name)

        visit_AsyncFunctionDef = visit_FunctionDef

        def visit_Lambda(self, node):
            pass

        def visit_ClassDef(self, node):
            if node.name not in found:
                found.append(node.name)

    v = Visitor()
    for s in stmts:
        v.visit(s)
    return found


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LOOPS = (ast.For, ast.While, ast.AsyncFor)


def _has(stmts, kinds, into_loops=False):
    """True when a node of `kinds` occurs in `stmts`, not in nested functions and,
    unless into_loops, not in nested loops (their break/continue are theirs)."""
    return any(isinstance(node, kinds) for s in stmts for node in _walk(s, into_loops))


def _walk(node, into_loops):
    if isinstance(node, _SCOPES) or (not into_loops and isinstance(node, _LOOPS)):
        return
    yield node
    for child in ast.iter_child_nodes(node):
        yield from _walk(child, into_loops)


def _name(id_, store=False):
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def _call(attr, args, keywords=()):
    return ast.Call(func=ast.Attribute(value=_name("_jst"), attr=attr, ctx=ast.Load()), args=list(args),
                    keywords=list(keywords))


def _thunk(expr):
    return ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                                         kwarg=None, defaults=[]), body=expr)


def _const(v):
    return ast.Constant(value=v)


def _ends_in_return(stmts):
    return bool(stmts) and isinstance(stmts[-1], ast.Return)


class _Converter(ast.NodeTransformer):
    def __init__(self, filename):
        self.filename = filename
        self.counter = 0

    def fresh(self, kind):
        self.counter += 1
        return f"{_PREFIX}{kind}{self.counter}"

    def where(self, node):
        return _const(f"{self.filename}:{node.lineno}")

    # ---- entry ----
    def convert_function(self, fdef):
        fdef.body = self.lower_loop_returns(fdef.body)
        fdef.body = self.lower_returns(fdef.body, top=True)
        fdef.body = self.block(fdef.body)

    # ---- returns inside loops: a flag and a break; the function returns after the loop ----
    def lower_loop_returns(self, stmts):
        """`return e` directly in a loop body (or in ifs there) becomes `flag = True;
        break`, and `if flag: return e` follows the loop. The expression is
        evaluated after the loop, where the loop variables hold their values
        of that iteration (what follows the return in it is skipped)."""
        out = []
        for s in stmts:
            if isinstance(s, ast.If):
                s.body = self.lower_loop_returns(s.body)
                s.orelse = self.lower_loop_returns(s.orelse)
            if isinstance(s, (ast.While, ast.For)) and not s.orelse and _has(s.body, ast.Return):
                returns = []
                body = self.returns_to_breaks(s.body, returns)
                if body is not None:
                    flag, kind = self.fresh("retflag"), self.fresh("retkind")
                    s.body = body
                    out.append(ast.copy_location(ast.Assign(targets=[_name(flag, True)], value=_const(False)), s))
                    out.append(ast.copy_location(ast.Assign(targets=[_name(kind, True)], value=_const(0)), s))
                    out.append(s)
                    # return (e0 if kind == 0 else e1 if kind == 1 else ...)
                    value = returns[-1].value
                    for k in range(len(returns) - 2, -1, -1):
                        test = ast.Compare(left=_name(kind), ops=[ast.Eq()], comparators=[_const(k)])
                        value = ast.IfExp(test=test, body=returns[k].value, orelse=value)
                    ret = ast.Return(value=value)
                    out.append(ast.copy_location(ast.If(test=_name(flag), body=[ret], orelse=[]), s))
                    for node in ast.walk(out[-1]):
                        if "lineno" in node._attributes and not hasattr(node, "lineno"):
                            ast.copy_location(node, s)
                    for k, r in enumerate(returns):
                        r.flag, r.kind, r.index = flag, kind, k
                    continue
            out.append(s)
        return out

    def returns_to_breaks(self, stmts, returns):
        """The statements with each return (reached through ifs only) replaced by
        placeholders set later; None when a return sits in a with/try/nested loop."""
        out = []
        for s in stmts:
            if isinstance(s, ast.Return):
                marker = _ReturnMark(s)
                returns.append(marker)
                out.extend(marker.statements())
                return out
            if isinstance(s, ast.If) and _has([s], ast.Return, into_loops=True):
                body = self.returns_to_breaks(s.body, returns)
                orelse = self.returns_to_breaks(s.orelse, returns)
                if body is None or orelse is None:
                    return None
                s.body, s.orelse = body or [ast.Pass()], orelse
            elif _has([s], ast.Return, into_loops=True):
                return None
            out.append(s)
        return out

    def block(self, stmts):
        out = []
        for s in stmts:
            r = self.visit(s)
            if r is None:
                continue
            out.extend(r if isinstance(r, list) else [r])
        return out or [ast.Pass()]

    # Nested functions are converted when they are called (Call), not here.
    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        return node

    # ---- early returns: an if whose branch ends in return gets the rest of the block ----
    def lower_returns(self, stmts, top=False):
        """Moves statements after an if with a returning branch into its other
        branch, so returns end branches; then, at top level, the function
        returns once from a variable."""
        out = []
        for k, s in enumerate(stmts):
            if isinstance(s, ast.If) and (_ends_in_return(s.body) or _ends_in_return(s.orelse)):
                rest = stmts[k + 1:]
                if not _ends_in_return(s.body):
                    s.body = s.body + rest
                elif not _ends_in_return(s.orelse):
                    s.orelse = s.orelse + rest
                s.body = self.lower_returns(s.body)
                s.orelse = self.lower_returns(s.orelse)
                out.append(s)
                break
            out.append(s)
        if top and _has(out, ast.If) and _has(out, ast.Return, into_loops=True) and self.returns_only_at_ends(out):
            self.ret = _PREFIX + "ret"
            falls_off = not _ends_in_return(out) and not isinstance(out[-1], ast.If)
            out = self.returns_to_assign(out)
            if falls_off:
                out.append(ast.Assign(targets=[_name(self.ret, True)], value=_const(None)))
            out.append(ast.Return(value=_name(self.ret)))
        return out

    def returns_only_at_ends(self, stmts):
        """True when every return ends a branch (so it can become an assignment)."""
        for k, s in enumerate(stmts):
            last = k == len(stmts) - 1
            if isinstance(s, ast.If) and _has([s], ast.Return, into_loops=True):
                if not last or not (self.returns_only_at_ends(s.body) and self.returns_only_at_ends(s.orelse)):
                    return False
            elif isinstance(s, ast.Return):
                if not last:
                    return False
            elif _has([s], ast.Return, into_loops=True):
                return False  # a return inside a loop, with or try: left as Python
        return True

    def returns_to_assign(self, stmts):
        out = []
        for s in stmts:
            if isinstance(s, ast.Return):
                out.append(ast.copy_location(ast.Assign(targets=[_name(self.ret, True)],
                                                        value=s.value or _const(None)), s))
            elif isinstance(s, ast.If) and _has([s], ast.Return, into_loops=True):
                s.body = self.returns_to_assign(s.body)
                s.orelse = self.returns_to_assign(s.orelse)
                # A branch that falls off the end returns None.
                for branch in (s.body, s.orelse):
                    if not _has(branch, ast.Return, into_loops=True) and not _assigns(branch, self.ret):
                        branch.append(ast.copy_location(ast.Assign(targets=[_name(self.ret, True)],
                                                                   value=_const(None)), s))
                out.append(s)
            else:
                out.append(s)
        return out

    # ---- if ----
    def visit_If(self, node):
        branches = node.body + node.orelse
        if _has(branches, (ast.Break, ast.Continue)) or _has(branches, ast.Return, into_loops=True):
            # Left as Python (a jump that is not rewritten): refused on a tensor.
            self.generic_visit(node)
            node.test = _call("Python", [node.test, _const("if statement with a return/break/continue inside"),
                                         self.where(node)])
            return node
        test = self.visit(node.test)
        body = self.block(node.body)
        orelse = self.block(node.orelse) if node.orelse else [ast.Pass()]
        true_names, false_names = _assigned(body), _assigned(orelse)
        names = true_names + [n for n in false_names if n not in true_names]
        both = [n for n in true_names if n in false_names]
        tf, ff = self.fresh("true"), self.fresh("false")
        out = [self.branch_function(tf, names, body, node), self.branch_function(ff, names, orelse, node)]
        call = _call("IfElse", [test, _name(tf), _name(ff), self.loads(names),
                                ast.Tuple(elts=[_const(n) for n in names], ctx=ast.Load()),
                                ast.Tuple(elts=[_const(n) for n in both], ctx=ast.Load()), self.where(node)])
        out.append(self.assign(names, call))
        return [ast.copy_location(s, node) for s in out]

    def branch_function(self, fname, names, body, node):
        ret = ast.Return(value=ast.Tuple(elts=[_name(n) for n in names], ctx=ast.Load()))
        return ast.copy_location(ast.FunctionDef(
            name=fname,
            args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in names], vararg=None, kwonlyargs=[],
                               kw_defaults=[], kwarg=None, defaults=[]),
            body=body + [ret], decorator_list=[], returns=None), node)

    def loads(self, names):
        scope = ast.Call(func=_name("locals"), args=[], keywords=[])
        return ast.Tuple(elts=[_call("ld", [scope, _const(n)]) for n in names], ctx=ast.Load())

    def assign(self, names, value):
        if not names:
            return ast.Expr(value=value)
        return ast.Assign(targets=[ast.Tuple(elts=[_name(n, True) for n in names], ctx=ast.Store())], value=value)

    # ---- loops ----
    def visit_While(self, node):
        if node.orelse or _has(node.body, ast.Return, into_loops=True):
            self.generic_visit(node)
            node.test = _call("Python", [node.test, _const("while loop with a return or an else clause"),
                                         self.where(node)])
            return node
        return self.loop(node, [], node.test, node.body, [])

    def visit_For(self, node):
        it = node.iter
        is_range = (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                    and not it.keywords and 1 <= len(it.args) <= 3 and isinstance(node.target, ast.Name))
        if not is_range and not node.orelse and _has(node.body, (ast.Break, ast.Continue)) and not _has(
                node.body, ast.Return, into_loops=True):
            return self.python_loop_jumps(node)
        if not is_range or node.orelse or _has(node.body, ast.Return, into_loops=True):
            self.generic_visit(node)
            return node
        args = [self.visit(a) for a in it.args]
        start, stop, step = ([_const(0)] + args + [_const(1)])[:3] if len(args) == 1 else (
            args + [_const(1)])[:3]
        i, n, s = self.fresh("i"), self.fresh("t_stop"), self.fresh("t_step")
        setup = [ast.Assign(targets=[_name(i, True)], value=start), ast.Assign(targets=[_name(n, True)], value=stop),
                 ast.Assign(targets=[_name(s, True)], value=step)]
        test = _call("RangeTest", [_name(i), _name(n), _name(s)])
        head = [ast.Assign(targets=[node.target], value=_name(i))]
        tail = [ast.AugAssign(target=_name(i, True), op=ast.Add(), value=_name(s))]
        return self.loop(node, setup, test, head + node.body, tail)

    def python_loop_jumps(self, node):
        """A for over a Python iterable (unrolled into the trace) whose break/continue may sit
        under a tensor condition: they become flags, as in a captured loop; each iteration runs
        under `if not brk`, and a brk that is Python's True really breaks."""
        brk, cont = self.fresh("brk"), self.fresh("cont")
        reset = ast.copy_location(ast.Assign(targets=[_name(cont, True)], value=_const(False)), node)
        guarded = ast.copy_location(ast.If(test=ast.UnaryOp(op=ast.Not(), operand=_name(brk)),
                                           body=[reset] + self.lower_jumps(node.body, brk, cont), orelse=[]), node)
        stop = ast.copy_location(ast.If(test=_call("Stop", [_name(brk)]), body=[ast.Break()], orelse=[]), node)
        node.iter = self.visit(node.iter)
        node.body = [ast.copy_location(s, node) for s in self.block([guarded])] + [stop]
        first = ast.copy_location(ast.Assign(targets=[_name(brk, True)], value=_const(False)), node)
        return [first, node]

    def loop(self, node, setup, test, body, tail):
        """setup; while test: body (with break/continue lowered); tail."""
        out = [ast.copy_location(s, node) for s in setup]
        jumps = _has(body, (ast.Break, ast.Continue))
        if jumps:
            brk, cont = self.fresh("brk"), self.fresh("cont")
            out.append(ast.copy_location(ast.Assign(targets=[_name(brk, True)], value=_const(False)), node))
            reset = ast.copy_location(ast.Assign(targets=[_name(cont, True)], value=_const(False)), node)
            body = [reset] + self.lower_jumps(body, brk, cont)
            test = ast.copy_location(ast.BoolOp(op=ast.And(), values=[
                ast.copy_location(ast.UnaryOp(op=ast.Not(), operand=_name(brk)), node), test]), node)
        test = self.visit(test)
        body = self.block(body + tail)
        names = _assigned(body)
        cf, bf = self.fresh("cond"), self.fresh("body")
        cond_def = ast.FunctionDef(
            name=cf, args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in names], vararg=None,
                                        kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
            body=[ast.Return(value=test)], decorator_list=[], returns=None)
        out.append(ast.copy_location(cond_def, node))
        out.append(self.branch_function(bf, names, body, node))
        call = _call("While", [_name(cf), _name(bf), self.loads(names),
                               ast.Tuple(elts=[_const(n) for n in names], ctx=ast.Load()), self.where(node)])
        out.append(ast.copy_location(self.assign(names, call), node))
        return out

    def lower_jumps(self, stmts, brk, cont):
        """break/continue set flags; what follows one runs under `if not (brk or cont)`."""
        out = []
        for k, s in enumerate(stmts):
            if isinstance(s, ast.Break):
                out.append(ast.copy_location(ast.Assign(targets=[_name(brk, True)], value=_const(True)), s))
                return out
            if isinstance(s, ast.Continue):
                out.append(ast.copy_location(ast.Assign(targets=[_name(cont, True)], value=_const(True)), s))
                return out
            if isinstance(s, ast.If) and _has([s], (ast.Break, ast.Continue)):
                s.body = self.lower_jumps(s.body, brk, cont) or [ast.Pass()]
                s.orelse = self.lower_jumps(s.orelse, brk, cont)
                out.append(s)
                rest = self.lower_jumps(stmts[k + 1:], brk, cont)
                if rest:
                    guard = ast.UnaryOp(op=ast.Not(), operand=ast.BoolOp(op=ast.Or(), values=[_name(brk),
                                                                                               _name(cont)]))
                    out.append(ast.copy_location(ast.If(test=guard, body=rest, orelse=[]), s))
                return out
            if _has([s], (ast.Break, ast.Continue)):
                # A jump inside a with/try: not rewritten.
                raise SyntaxError(f"to_static: cannot convert the break/continue inside the "
                                  f"{type(s).__name__.lower()} statement at {self.filename}:{s.lineno}")
            out.append(s)
        return out

    # ---- expressions ----
    def visit_BoolOp(self, node):
        self.generic_visit(node)
        return ast.copy_location(_call("And" if isinstance(node.op, ast.And) else "Or",
                                       [_thunk(v) for v in node.values]), node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(_call("Not", [node.operand]), node)
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        return ast.copy_location(_call("Select", [node.test, _thunk(node.body), _thunk(node.orelse),
                                                  self.where(node)]), node)

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Name) and f.id == "print":
            node.func = ast.Attribute(value=_name("_jst"), attr="Print", ctx=ast.Load())
            return node
        if isinstance(f, ast.Name) and f.id in ("super", "locals", "range", "len", "isinstance", "getattr",
                                                 "setattr", "hasattr", "type", "int", "float", "bool", "str",
                                                 "list", "tuple", "dict", "zip", "enumerate", "min", "max"):
            return node
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "_jst":
            return node
        node.func = ast.copy_location(_call("Call", [f]), f)
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if node.attr == "shape" and isinstance(node.ctx, ast.Load):
            return ast.copy_location(_call("Shape", [node.value]), node)
        return node

    def visit_Assert(self, node):
        self.generic_visit(node)
        return ast.copy_location(ast.Expr(value=_call("Assert", [node.test, node.msg or _const(None),
                                                                 self.where(node)])), node)


class _ReturnMark:
    """A `return e` inside a loop, while it is rewritten: its statements
    (`flag = True; kind = index; break`) get their names once the loop's
    flags are made."""

    def __init__(self, node):
        self.node, self.value = node, node.value or _const(None)
        self.flag_assign = ast.copy_location(ast.Assign(targets=[_name("?", True)], value=_const(True)), node)
        self.kind_assign = ast.copy_location(ast.Assign(targets=[_name("?", True)], value=_const(0)), node)

    def statements(self):
        return [self.flag_assign, self.kind_assign, ast.copy_location(ast.Break(), self.node)]

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)
        if name == "flag":
            self.flag_assign.targets[0].id = value
        elif name == "kind":
            self.kind_assign.targets[0].id = value
        elif name == "index":
            self.kind_assign.value = _const(value)


def _assigns(stmts, name):
    return name in _assigned(stmts)
