"""paddle.static's Program, program_guard, data and the static/dynamic mode
switch. A Program holds the op calls recorded while it was the main program
(Note [Static programs] in recorder.py) and replays them into oar's IR."""
import weakref

import numpy as np

from .. import _C
from ..framework import Tensor, convert_dtype, get_default_dtype
from ..nn.parameter import Parameter
from . import recorder
from .recorder import state, suspended

_static_mode = False
installers = []  # more static-mode hooks (executor.py: optimizer.minimize), undone with recorder's


def enable_static():
    """Static mode: layers and ops build the current main Program (paddle.enable_static)."""
    global _static_mode
    if not _static_mode:
        recorder.install()
        for install in installers:
            install()
    _static_mode = True
    state.program = _main_program


def disable_static(place=None):
    """Back to dynamic (eager) mode (paddle.disable_static); ops run unwrapped."""
    global _static_mode
    del place
    _static_mode = False
    state.program = None
    recorder.uninstall()


def in_dynamic_mode():
    return not _static_mode


def in_static_mode():
    return _static_mode


class _Ref:
    """A recorded argument standing for variable `var` of a Program."""
    __slots__ = ("var",)

    def __init__(self, var):
        self.var = var


class _Node:
    """One recorded call: fn(*args, **kwargs) with _Refs for variables; `out`
    is the result's structure with variable ids (kind "op"), or the variable
    an alias names (kind "alias", `inputs` = (its source,))."""
    __slots__ = ("kind", "fn", "args", "kwargs", "out", "inputs")

    def __init__(self, kind, fn, args, kwargs, out, inputs):
        self.kind, self.fn, self.args, self.kwargs, self.out, self.inputs = kind, fn, args, kwargs, out, inputs


class _Data:
    """A static.data placeholder: name, declared shape (-1: dynamic), dtype."""
    __slots__ = ("name", "shape", "dtype", "var", "tensor")

    def __init__(self, name, shape, dtype, var, tensor):
        self.name, self.shape, self.dtype, self.var, self.tensor = name, shape, dtype, var, tensor


_unnamed = 0  # parameters named so far by static mode
# Creation ops recorded although they take no tensor: a program draws them anew on every run.
_RANDOM_OPS = (_C.ops.uniform, _C.ops.normal)
# The size a dynamic dim has while a program is built. Not 1, so that a size
# read from a placeholder's shape and fixed in the program (a baked batch
# size) fails to broadcast against other batch sizes instead of silently
# broadcasting.
EXAMPLE_SIZE = 7

# The parameters static programs read, by name (global_scope() finds them).
named_parameters = weakref.WeakValueDictionary()

# Which Program a recorded tensor belongs to (by id; each Program keeps its tensors alive).
_owner = weakref.WeakValueDictionary()


def _name_of(fn):
    return getattr(fn, "__name__", None) or type(fn).__name__


class Program:
    """A static program (paddle.static.Program): what was built while it was
    the main program. print(program) shows it as oar's IR."""

    def __init__(self):
        self._nodes = []
        self._vars = {}          # id(tensor) -> its current variable id
        self._tensors = []       # every tensor recorded (keeps the ids above valid)
        self._from_data = []     # variable id -> whether it depends on a placeholder
        self._producer = []      # variable id -> index of the node defining it (None: a placeholder)
        self._data = {}          # name -> _Data, in creation order
        self._data_of_var = {}   # variable id -> _Data
        self._var_names = {}     # name given to a computed variable -> its id
        self._persistent = {}    # id(tensor) -> concrete tensor used by recorded ops (parameters, constants)
        self._updates = {}       # id(tensor) -> (concrete tensor, variable assigned to it)
        self._initial = {}       # startup program: id(parameter) -> [parameter, its initial value or None]
        self._train = None       # (loss variable, optimizer, trainable parameters) after optimizer.minimize
        self._for_test = False
        self._compiled = {}      # (fetched variables, device) -> traces (new calls cannot change them)
        self.random_seed = 0

    # ---- recording (called by recorder's wrappers) ----
    def _new_var(self, t, producer, from_data):
        var = len(self._producer)
        self._producer.append(producer)
        self._from_data.append(from_data)
        self._vars[id(t)] = var
        self._tensors.append(t)
        _owner[id(t)] = self
        return var

    def _var_of(self, t):
        var = self._vars.get(id(t))
        if var is None:
            other = _owner.get(id(t))
            if other is not None and other is not self:
                raise ValueError("static mode: a variable of another Program was used while building this one; "
                                 "build each program inside its own program_guard")
        return var

    @staticmethod
    def _check_concrete(fn, concrete):
        """Refuses a tensor computed from a variable by an op the recorder did not see."""
        for t in concrete:
            if not isinstance(t, Parameter) and t._grad_fn_name:
                raise RuntimeError(f"static mode: {_name_of(fn)} got a tensor computed by '{t._grad_fn_name}' "
                                   "outside the static program (an op oar's static recorder does not see, or code "
                                   "run before enable_static); build the program from static.data variables "
                                   "and oar ops")

    def _encode(self, value, inputs, concrete):
        if isinstance(value, Tensor):
            var = self._var_of(value)
            if var is not None:
                inputs.append(var)
                return _Ref(var)
            concrete.append(value)
            return value
        if type(value) in (list, tuple):
            return type(value)(self._encode(v, inputs, concrete) for v in value)
        if type(value) is dict:
            return {k: self._encode(v, inputs, concrete) for k, v in value.items()}
        return value

    def _record(self, fn, args, kwargs, out):
        inputs, concrete = [], []
        args = self._encode(args, inputs, concrete)
        kwargs = self._encode(kwargs, inputs, concrete)
        if not inputs and not concrete and fn not in _RANDOM_OPS:
            return  # no tensor argument (a creation op): its result is a constant
        if not any(isinstance(t, Tensor) for t in _tensors_in(out)):
            return
        self._check_concrete(fn, concrete)
        from_data = any(self._from_data[v] for v in inputs)
        index = len(self._nodes)

        def outputs(value):
            if isinstance(value, Tensor):
                var = self._new_var(value, index, from_data)
                if from_data and getattr(value, "name", None) is None:
                    value.name = f"{_name_of(fn).strip('_')}_{var}.tmp_0"  # fetch_list=[loss.name] finds it
                    self._var_names[value.name] = var
                return var
            if type(value) in (list, tuple):
                return type(value)(outputs(v) for v in value)
            return None
        self._nodes.append(_Node("op", fn, args, kwargs, outputs(out), tuple(inputs)))
        for t in concrete:
            self._persist(t)

    def _persist(self, t):
        if id(t) in self._persistent:
            return
        self._persistent[id(t)] = t
        if isinstance(t, Parameter):
            if not t.name:
                global _unnamed
                t.name, _unnamed = f"param_{_unnamed}", _unnamed + 1  # Paddle names every parameter
            named_parameters[t.name] = t
            # Its initial value is taken when the startup program first runs
            # (an initializer may still be running now); later runs restore it.
            _startup_program._initial.setdefault(id(t), [t, None])

    def _alias(self, t, src):
        var = self._var_of(src)
        if var is None or isinstance(t, Parameter):
            return  # a Parameter stays itself: Parameter(tensor) copies its initial value
        index = len(self._nodes)
        new = self._new_var(t, index, self._from_data[var])
        self._nodes.append(_Node("alias", None, None, None, new, (var,)))

    def _assign(self, dst, src):
        """dst._set_data_(src) / dst._rebind_(src) while recording. Returns
        True when the assignment was recorded instead of done: a parameter or
        buffer assigned a value computed from data becomes a program update."""
        var = self._var_of(src)
        if var is None:
            self._vars.pop(id(dst), None)  # the handle holds a concrete tensor now
            return False
        if self._var_of(dst) is not None:
            self._alias(dst, src)  # done eagerly too: the handle names src's value from now on
            return False
        if not self._from_data[var]:
            return False  # an eager computation on parameters (an initializer)
        # The program assigns it after each run; while building, dst keeps
        # its value (later reads in the program see the value before the update).
        self._persist(dst)
        self._updates[id(dst)] = (dst, var)
        self._compiled = {}  # every run of the program applies it
        return True

    def _check_readable(self, t):
        var = self._vars.get(id(t))
        if var is not None and self._from_data[var]:
            raise RuntimeError("static mode: a variable of a static Program has no value while the program is "
                               "built; fetch it with Executor.run(program, feed=..., fetch_list=[...])")

    # ---- Paddle's Program API ----
    def global_block(self):
        return _Block(self)

    def block(self, index):
        if index != 0:
            raise ValueError(f"Program.block: oar programs have one block; there is no block {index}")
        return _Block(self)

    @property
    def num_blocks(self):
        return 1

    def all_parameters(self):
        return [t for t in self._persistent.values() if isinstance(t, Parameter)]

    def list_vars(self):
        return [d.tensor for d in self._data.values()] + self.all_parameters()

    def clone(self, for_test=False):
        """A copy. for_test=True drops what optimizer.minimize appended and
        the updates of buffers, and runs dropout as identity."""
        p = Program.__new__(Program)
        p.__dict__.update(self.__dict__)
        for name in ("_nodes", "_tensors", "_from_data", "_producer"):
            setattr(p, name, list(getattr(self, name)))
        for name in ("_vars", "_data", "_data_of_var", "_var_names", "_persistent", "_updates", "_initial"):
            setattr(p, name, dict(getattr(self, name)))
        p._compiled = {}
        if for_test:
            p._train, p._updates, p._for_test = None, {}, True
        return p

    def __str__(self):
        from .executor import _build, _train_argument
        consumed = {v for n in self._nodes for v in n.inputs}
        sinks = [v for v in range(len(self._producer)) if v not in consumed and self._from_data[v]
                 and self._producer[v] is not None and self._nodes[self._producer[v]].kind == "op"]
        train = _train_argument(self)
        if train is not None:
            sinks = [v for v in sinks if v != train[0]]
        built, _ = _build(self, sinks, None, optimize=False, train=train)
        return str(built.program)

    def __repr__(self):
        return self.__str__()


class _Block:
    """Program.global_block(): the program's variables by name."""

    def __init__(self, program):
        self.program = program

    def var(self, name):
        t = _find_named(self.program, name)
        if t is None:
            raise ValueError(f"Block.var: the program has no variable named '{name}'")
        return t

    def has_var(self, name):
        return _find_named(self.program, name) is not None

    def all_parameters(self):
        return self.program.all_parameters()


def _find_named(program, name):
    data = program._data.get(name)
    if data is not None:
        return data.tensor
    for name_, t in parameter_names(program).items():
        if name_ == name:
            return t
    return None


def parameter_names(program):
    """{name: tensor} of the concrete tensors a program reads: Parameters by
    their name (or param_<k>), other tensors as const_<k>."""
    names, used = {}, set()
    for k, t in enumerate(program._persistent.values()):
        name = getattr(t, "name", None) if isinstance(t, Parameter) else None
        while not name or name in used or name in program._data:
            name = f"{name or 'const'}_{k}"
        used.add(name)
        names[name] = t
    return names


def _tensors_in(value):
    if isinstance(value, Tensor):
        yield value
    elif type(value) in (list, tuple):
        for v in value:
            yield from _tensors_in(v)
    elif type(value) is dict:
        for v in value.values():
            yield from _tensors_in(v)


_main_program = Program()
_startup_program = Program()


def default_main_program():
    return _main_program


def default_startup_program():
    return _startup_program


class program_guard:  # noqa: N801 - paddle.static.program_guard
    """`with program_guard(main, startup):` makes them the default programs."""

    def __init__(self, main_program, startup_program=None):
        if not isinstance(main_program, Program):
            raise TypeError(f"program_guard: main_program must be a static.Program, got "
                            f"{type(main_program).__name__}")
        if startup_program is not None and not isinstance(startup_program, Program):
            raise TypeError(f"program_guard: startup_program must be a static.Program, got "
                            f"{type(startup_program).__name__}")
        self._main, self._startup = main_program, startup_program

    def __enter__(self):
        global _main_program, _startup_program
        self._saved = (_main_program, _startup_program)
        _main_program = self._main
        if self._startup is not None:
            _startup_program = self._startup
        if _static_mode:
            state.program = _main_program
        return self._main

    def __exit__(self, *exc):
        global _main_program, _startup_program
        _main_program, _startup_program = self._saved
        if _static_mode:
            state.program = _main_program


def data(name, shape, dtype=None, lod_level=0):
    """A placeholder of the main program that Executor.run feeds by `name`
    (paddle.static.data). None or -1 dims are dynamic; dtype defaults to the
    default float dtype."""
    del lod_level
    if not _static_mode:
        raise RuntimeError("static.data: static mode is off; call paddle.enable_static() first")
    if not isinstance(name, str) or not name:
        raise TypeError(f"static.data: name must be a non-empty str, got {name!r}")
    if isinstance(shape, int):
        shape = [shape]
    if not isinstance(shape, (list, tuple)):
        raise TypeError(f"static.data: shape must be a list or tuple of ints, got {type(shape).__name__}")
    dims = []
    for d in shape:
        if d is None or (isinstance(d, (int, np.integer)) and d == -1):
            dims.append(-1)
        elif isinstance(d, (int, np.integer)) and d >= 0:
            dims.append(int(d))
        else:
            raise ValueError(f"static.data('{name}'): shape {list(shape)} has dim {d!r}; expected an int >= 0, "
                             "or None or -1 for a dynamic dim")
    dtype = convert_dtype(dtype if dtype is not None else get_default_dtype())
    program = _main_program
    if name in program._data:
        raise ValueError(f"static.data: the program already has a variable named '{name}'")
    with suspended():
        t = _C.ops.full([EXAMPLE_SIZE if d == -1 else d for d in dims], 0.0, dtype)
        if dtype.is_floating_point:
            t.stop_gradient = False  # so values computed outside the recorder are caught (recorder.py)
    t.name = name
    var = program._new_var(t, None, True)
    program._data[name] = program._data_of_var[var] = _Data(name, tuple(dims), dtype, var, t)
    return t
