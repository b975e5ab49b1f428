"""Graph breaks for to_static(full_graph=False) (Paddle 3's default mode).

A function whose whole trace fails (a call into numpy with a tensor of the
trace, `float(t)`, a construct the conversion cannot express, ...) is split
into pieces along its top-level statements: runs of statements that trace
become compiled programs (converted as with full_graph=True, each with its
own trace cache), and a statement whose trace fails runs in Python, eagerly,
between them. The split is found while running: the first piece is the
whole body; when its trace fails at statement k, it becomes the statements
before k (a program), statement k (eager, a graph break) and the statements
after k (a program, traced when reached), and the call goes on from there.
A program whose trace succeeds but whose backward is refused (an op with no
VJP for these inputs, found before the program runs) names no statement: it
is halved until the refused statement stands alone, and that one breaks.
Eager mode is the reference, so a statement that fails even eagerly raises
the error eager mode raises, and a break never changes a result.

Values flow between pieces through the function's local variables. A
program piece takes the tensors among the variables it reads (nested in
lists, tuples and dicts too) as inputs, and every other value (numbers,
strings, numpy arrays, Layers, ...) is a guard: the piece is specialized to
it, by value (numpy arrays by their bytes, other objects by identity), and a
call with other Python values traces it again. Its outputs are the
variables it assigns that later statements read, and the lists and dicts it
reads (a piece may append to them); their non-tensor parts are those of the
trace. Gradients flow through the pieces: a program piece is differentiable
like any to_static function, an eager piece like eager code.

Where a statement that breaks is compound (an if, a loop), all of it runs
eagerly. Functions without source (a lambda typed at a prompt, a builtin)
run eagerly, with a warning. `StaticFunction.graph_breaks` lists the breaks
(file, line, reason); set_verbosity(1) logs each as it is found (logger
"oar.jit.dy2static").
"""
import ast
import collections
import inspect
import textwrap
import types
import warnings

from . import _C
from . import jit_dy2static
from .framework import Tensor

__all__ = ["GraphBreak", "Runner"]

GraphBreak = collections.namedtuple("GraphBreak", ["filename", "line", "statement", "reason"])
GraphBreak.__str__ = lambda b: f"{b.filename}:{b.line}: {b.statement}  <- {b.reason}"

_MAX_SPECIALIZATIONS = 8  # program versions one piece keeps (the least recently used is dropped)


# ---- values between pieces: tensors (inputs and outputs) and a hashable key for the rest ----

class _Leaf:
    """A non-tensor value of a piece's variables, kept as it is."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _leaf_key(value):
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return (type(value), value)
    if isinstance(value, jit_dy2static._Undefined):
        return ("undefined", value.name)
    try:
        import numpy as np
        if isinstance(value, np.ndarray):
            return ("ndarray", value.dtype.str, value.shape, value.tobytes())
        if isinstance(value, np.generic):
            return ("npscalar", value.dtype.str, value.item())
    except ImportError:  # pragma: no cover - numpy is a dependency
        pass
    if type(value).__hash__ is object.__hash__:
        return ("object", id(value))  # Layers, modules, functions: by identity (the spec holds them alive)
    try:
        return (type(value), hash(value), value)
    except TypeError:
        return ("object", id(value))


def _flatten(value, tensors):
    """(spec, key) of `value`; its tensors are appended to `tensors`."""
    if isinstance(value, Tensor):
        tensors.append(value)
        return Tensor, "T"
    if type(value) in (list, tuple):
        parts = [_flatten(v, tensors) for v in value]
        return (type(value), [p[0] for p in parts]), (type(value).__name__, tuple(p[1] for p in parts))
    if type(value) is dict:
        parts = [(k, _flatten(v, tensors)) for k, v in value.items()]
        return (dict, [(k, p[0]) for k, p in parts]), ("dict", tuple((_leaf_key(k), p[1]) for k, p in parts))
    return _Leaf(value), _leaf_key(value)


def _unflatten(spec, tensors):
    """The value of `spec` with its tensors taken from the iterator `tensors`."""
    if spec is Tensor:
        return next(tensors)
    if isinstance(spec, _Leaf):
        return spec.value
    kind, parts = spec
    if kind is dict:
        return {k: _unflatten(p, tensors) for k, p in parts}
    values = [_unflatten(p, tensors) for p in parts]
    return values if kind is list else tuple(values)


def _holds_container(value):
    return type(value) in (list, dict) or (type(value) is tuple and any(_holds_container(v) for v in value))


# ---- names the statements read and assign ----

def _loaded(nodes):
    """Names read anywhere in `nodes` (nested functions included: they may read them when called)."""
    return {n.id for s in nodes for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _assigned(stmts):
    """Names the statements bind (assignments, for targets, imports, defs, with/except names, :=)."""
    found = set()

    def visit(node):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            found.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
            return  # its body is its own scope
        elif isinstance(node, ast.Lambda):
            return
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            found.add(node.name)
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            # comprehension variables are the comprehension's; a := inside binds the function's
            found.update(n.target.id for n in ast.walk(node) if isinstance(n, ast.NamedExpr))
            return
        for child in ast.iter_child_nodes(node):
            visit(child)

    for s in stmts:
        visit(s)
    return found


def _has_return(stmt):
    return any(isinstance(n, ast.Return) for n in jit_dy2static._walk(stmt, into_loops=True))


class _ReturnsToPairs(ast.NodeTransformer):
    """`return e` -> `return (True, e)` outside nested scopes (an eager piece says whether it returned)."""

    def visit_Return(self, node):
        value = node.value if node.value is not None else ast.Constant(value=None)
        return ast.copy_location(ast.Return(value=ast.Tuple(elts=[ast.Constant(value=True), value],
                                                            ctx=ast.Load())), node)

    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = visit_FunctionDef


def _arguments(names):
    return ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in names], vararg=None, kwonlyargs=[],
                         kw_defaults=[], kwarg=None, defaults=[])


# ---- the pieces ----

class _Piece:
    """Statements [start, stop) of the function body: a program or eager Python."""

    def __init__(self, runner, start, stop, static):
        self.runner, self.start, self.stop, self.static = runner, start, stop, static
        self.stmts = runner.body[start:stop]
        self.tail = stop == len(runner.body)  # its returns (and falling off its end) are the function's
        self.name = f"_oar_piece_{start}_{stop}"
        self._factory = None
        self._programs = collections.OrderedDict()  # guard key -> (StaticFunction, output specs by trace id)
        later = _loaded(runner.body[stop:])
        mine = _loaded(self.stmts) | _assigned(self.stmts)
        self.inputs = sorted(mine & (runner.parameters | _assigned(runner.body[:start])))
        self.assigned = _assigned(self.stmts)
        # what a program piece may return: variables later statements read that it assigns or reads
        self.outputs = [] if self.tail else sorted((self.assigned | set(self.inputs)) & later)

    def __repr__(self):
        return f"<{'program' if self.static else 'eager'} statements {self.start}..{self.stop - 1}>"

    def function(self):
        """The piece as a Python function (compiled once, bound to the closure's current values)."""
        if self._factory is None:
            self._factory = self._compile()
        return self._factory(jit_dy2static._jst, *jit_dy2static.closure_values(self.runner.func))

    def _compile(self):
        body = [_copy(s) for s in self.stmts]
        if self.static:
            args = _arguments(self.inputs)
            if not self.tail:
                body.append(ast.Return(value=ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Load()) for n in self.outputs],
                                                       ctx=ast.Load())))
        else:
            # def piece(__oar_env): x = __oar_env['x'] (for those it has); <statements>; return (False, locals())
            env = ast.Name(id="__oar_env", ctx=ast.Load())
            prologue = [ast.If(test=ast.Compare(left=ast.Constant(value=n), ops=[ast.In()], comparators=[env]),
                               body=[ast.Assign(targets=[ast.Name(id=n, ctx=ast.Store())],
                                                value=ast.Subscript(value=env, slice=ast.Constant(value=n),
                                                                    ctx=ast.Load()))], orelse=[])
                        for n in self.inputs]
            body = prologue + [_ReturnsToPairs().visit(s) for s in body]
            locals_call = ast.Call(func=ast.Name(id="locals", ctx=ast.Load()), args=[], keywords=[])
            body.append(ast.Return(value=ast.Tuple(elts=[ast.Constant(value=False), locals_call], ctx=ast.Load())))
            args = _arguments(["__oar_env"])
        fdef = ast.FunctionDef(name=self.name, args=args, body=body, decorator_list=[], returns=None)
        # generated nodes get the piece's first line (the statements keep theirs)
        for node in ast.walk(fdef):
            if "lineno" in node._attributes and getattr(node, "lineno", None) is None:
                node.lineno = node.end_lineno = self.stmts[0].lineno
                node.col_offset = node.end_col_offset = 0
        return jit_dy2static.compile_function(fdef, self.runner.filename, self.stmts[0].lineno, self.runner.func,
                                              convert=self.static)

    # ---- running ----
    def run_eager(self, env):
        """(returned, value): runs the statements in Python; env gets the variables they bind."""
        returned, value = self.function()(env)
        if returned:
            return True, value
        value.pop("__oar_env", None)
        env.update(value)
        return False, None

    def run_program(self, env):
        """(returned, value) as run_eager, through the program traced for these values; raises
        _TraceFailed when the trace fails."""
        values = [env.get(n, jit_dy2static._Undefined(n)) for n in self.inputs]
        tensors = []
        spec, key = _flatten(values, tensors)
        program = self._programs.get(key)
        if program is None:
            program = self._programs[key] = self._program_for(spec)
            while len(self._programs) > _MAX_SPECIALIZATIONS:
                self._programs.popitem(last=False)
        else:
            self._programs.move_to_end(key)
        sf, out_specs, pending = program
        from .jit import _TENSOR, _positional
        device = tensors[0]._device if tensors else _C.get_device()
        count = sf._cache.trace_count
        try:
            entry = sf._lookup(tensors, _positional, (_TENSOR,) * len(tensors), device)
        except Exception as e:  # noqa: BLE001 - any failure of the trace is a break
            raise _TraceFailed(e, self._failed_statement(e)) from None
        if sf._cache.trace_count != count:
            out_specs[entry.id] = pending.pop()
        try:
            outs = sf._run(entry, tensors, strict_backward=True)
        except _C.UnsupportedError as e:  # its backward is refused: this piece runs eagerly
            raise _TraceFailed(e, None, refused=True) from None
        out_spec = out_specs[entry.id]
        value = _unflatten(out_spec, iter(outs[1:]))  # outs[0] is the placeholder
        if self.tail:
            return True, value
        env.update((n, v) for n, v in value.items())
        return False, None

    def _program_for(self, spec):
        """(StaticFunction, {trace id: output spec}, [the spec of the trace running]) for inputs like `spec`."""
        from .jit import StaticFunction
        out_specs, pending = {}, []
        piece = self

        @jit_dy2static.not_to_static
        def program(*tensors):
            values = _unflatten(spec, iter(tensors))
            result = piece.function()(*values)
            if not piece.tail:
                result = {n: v for n, v in zip(piece.outputs, result)
                          if n in piece.assigned or _holds_container(v)}
            outs = []
            out_spec, _ = _flatten(result, outs)
            out_spec = _constants_as_leaves(out_spec, outs)
            pending.append(out_spec)
            # A placeholder first: a program needs an output even where the piece returns no tensor.
            from .creation import zeros
            return [zeros([1])] + [t for t in outs if _C.ir.is_symbolic(t)]

        program.__qualname__ = f"{self.runner.qualname}[{self.start}:{self.stop}]"
        sf = StaticFunction(program, layer=self.runner.layer, backend=self.runner.backend, full_graph=True)
        return sf, out_specs, pending

    def _failed_statement(self, error):
        """The index (in the body) of the statement this piece's trace failed at, or None: the
        deepest frame of the function's file at a line of the piece's statements (the conversion
        moves statements into generated functions, e.g. those after an early return into an else
        branch, which keep their lines); a nested def is where it is called, not where defined."""
        found = None
        tb = error.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == self.runner.filename:
                k = self._statement_at(tb.tb_lineno)
                if k is not None:
                    found = k
            tb = tb.tb_next
        return None if found is None else self.start + found

    def _statement_at(self, line):
        for k, s in enumerate(self.stmts):
            if s.lineno <= line <= s.end_lineno:
                return None if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else k
        return None


def _constants_as_leaves(spec, outs):
    """Tensors of the output that are not the trace's (constants it read) become leaves."""
    it = iter(list(outs))

    def walk(s):
        if s is Tensor:
            t = next(it)
            return s if _C.ir.is_symbolic(t) else _Leaf(t)
        if isinstance(s, _Leaf):
            return s
        kind, parts = s
        if kind is dict:
            return kind, [(k, walk(p)) for k, p in parts]
        return kind, [walk(p) for p in parts]
    return walk(spec)


def _copy(node):
    import copy
    return copy.deepcopy(node)


class _TraceFailed(Exception):
    """statement: where the trace failed, or None; refused: the program built but its backward is
    refused (the failing op is found by splitting the piece, see Runner._split)."""

    def __init__(self, error, statement, refused=False):
        super().__init__(str(error))
        self.error, self.statement, self.refused = error, statement, refused


# ---- the function ----

class Runner:
    """Runs a to_static(full_graph=False) function as pieces (see the module's doc)."""

    def __init__(self, static_function, first_error):
        self.sf = static_function
        function = static_function._function
        self.bound_self = None
        if isinstance(function, types.MethodType):
            self.bound_self, function = function.__self__, function.__func__
        self.func = function
        self.qualname = static_function._name
        self.layer = static_function._layer
        self.backend = static_function._backend
        self.breaks = []
        self.pieces = None
        reason = self._source()
        if reason is not None:
            where = getattr(getattr(function, "__code__", None), "co_filename", "?")
            line = getattr(getattr(function, "__code__", None), "co_firstlineno", 0)
            self.breaks.append(GraphBreak(where, line, self.qualname, reason))
            warnings.warn(f"to_static(full_graph=False): {self.qualname} runs eagerly: {reason}"
                          + (f" (its trace failed: {_first_line(first_error)})" if first_error else ""),
                          UserWarning, stacklevel=4)
            return
        self.pieces = [_Piece(self, 0, len(self.body), static=True)]

    def _source(self):
        """None when the function can be split; else why it runs eagerly as a whole."""
        func = self.func
        if not isinstance(func, types.FunctionType):
            return f"it is a {type(func).__name__}, not a Python function"
        if func.__code__.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
            return "it is a generator or coroutine"
        if func.__name__ == "<lambda>":
            return "it is a lambda (one expression, no statements to split)"
        try:
            source = textwrap.dedent(inspect.getsource(func.__code__))  # its own, not a __wrapped__ one's
            self.filename = inspect.getsourcefile(func.__code__) or func.__code__.co_filename
        except (OSError, TypeError) as e:
            return f"its source is not available ({e})"
        tree = ast.parse(source)
        fdef = tree.body[0]
        if not isinstance(fdef, ast.FunctionDef):
            return "its source is not a def"
        ast.increment_lineno(tree, func.__code__.co_firstlineno - 1)
        if any(isinstance(n, (ast.Global, ast.Nonlocal)) for s in fdef.body for n in ast.walk(s)):
            return "it declares global or nonlocal names"
        self.body = fdef.body
        self.signature = inspect.signature(func)
        a = fdef.args
        self.parameters = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
        self.parameters |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
        return None

    def __call__(self, args, kwargs):
        if self.pieces is None:
            func = self.func if self.bound_self is None else types.MethodType(self.func, self.bound_self)
            return func(*args, **kwargs)
        prefix = () if self.bound_self is None else (self.bound_self,)
        bound = self.signature.bind(*prefix, *args, **kwargs)
        bound.apply_defaults()
        env = dict(bound.arguments)
        k = 0
        while k < len(self.pieces):
            piece = self.pieces[k]
            if piece.static:
                try:
                    returned, value = piece.run_program(env)
                except _TraceFailed as failed:
                    self._split(k, failed)
                    continue  # run the pieces that replace it, from the same variables
            else:
                returned, value = piece.run_eager(env)
            if returned:
                return value
            k += 1
        return None

    def _split(self, k, failed):
        """Replaces program piece k, whose trace failed, by programs around an eager statement."""
        piece = self.pieces[k]
        at = failed.statement
        if failed.refused and piece.stop - piece.start > 1:
            # Its backward is refused, at no statement the error can name: halve the piece (its
            # programs are built and run again) until the refused statement is a piece alone.
            mid = (piece.start + piece.stop) // 2
            self.pieces[k:k + 1] = self._programs(piece.start, mid) + self._programs(mid, piece.stop)
            return
        if failed.refused:
            new = [_Piece(self, piece.start, piece.stop, static=False)]
            self._record(piece.stmts[0], _first_line(failed.error))
        elif at is None:  # not at one of its statements (its outputs, the program's build): all of it is eager
            new = [_Piece(self, piece.start, piece.stop, static=False)]
            self._record(piece.stmts[0], f"its program could not be built: {_first_line(failed.error)}",
                         f"statements {piece.start}..{piece.stop - 1}")
        else:
            new = self._programs(piece.start, at)
            new.append(_Piece(self, at, at + 1, static=False))
            if at + 1 < piece.stop:
                new.append(_Piece(self, at + 1, piece.stop, static=True))
            self._record(self.body[at], _first_line(failed.error))
        self.pieces[k:k + 1] = new

    def _programs(self, start, stop):
        """Program pieces for statements [start, stop) that end before the function does: a
        statement with a return in it is eager (a program piece there returns its variables)."""
        out, run = [], start
        for j in range(start, stop):
            if _has_return(self.body[j]):
                if run < j:
                    out.append(_Piece(self, run, j, static=True))
                out.append(_Piece(self, j, j + 1, static=False))
                run = j + 1
        if run < stop:
            out.append(_Piece(self, run, stop, static=True))
        return out

    def _record(self, stmt, reason, text=None):
        text = text or ast.unparse(stmt).splitlines()[0]
        b = GraphBreak(self.filename, stmt.lineno, text, reason)
        self.breaks.append(b)
        jit_dy2static._log.debug("to_static: graph break in %s: %s", self.qualname, b)
        if jit_dy2static._levels["verbosity"] > 0:
            jit_dy2static._emit(f"to_static: graph break in {self.qualname}: {b}",
                                jit_dy2static._levels["verbosity_stdout"])


def _first_line(error):
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")
