"""paddle.static.Executor over oar's IR, optimizer.minimize in static mode,
and saving programs (static.save/load, save_inference_model/load_inference_model)."""
import os

import numpy as np

from .. import _C
from ..framework import Tensor, device_str, to_numpy_dtype
from ..nn.parameter import Parameter
from ..optimizer.optimizer import Optimizer
from . import program as _program
from .program import Program, _Ref, _tensors_in, parameter_names
from .recorder import suspended, state, _set


# ---- building a program's IR ----
def _root(program, var):
    """The variable `var` names after following aliases."""
    while True:
        index = program._producer[var]
        if index is None or program._nodes[index].kind != "alias":
            return var
        var = program._nodes[index].inputs[0]


def _prune(program, targets):
    """The recorded nodes computing `targets` (variable ids), in order."""
    needed, kept = set(targets), []
    for index in range(len(program._nodes) - 1, -1, -1):
        node = program._nodes[index]
        outs = [node.out] if node.kind == "alias" else _vars_in(node.out)
        if any(v in needed for v in outs):
            kept.append(node)
            needed.update(node.inputs)
    kept.reverse()
    return kept, needed


def _vars_in(out):
    if isinstance(out, int):
        return [out]
    if type(out) in (list, tuple):
        return [v for o in out for v in _vars_in(o)]
    return []


def _decode(value, env):
    if isinstance(value, _Ref):
        return env[value.var]
    if type(value) in (list, tuple):
        return type(value)(_decode(v, env) for v in value)
    if type(value) is dict:
        return {k: _decode(v, env) for k, v in value.items()}
    return value


def _bind(out, value, env):
    if isinstance(out, int):
        env[out] = value
    elif type(out) in (list, tuple):
        for o, v in zip(out, value):
            _bind(o, v, env)


def _replay(nodes, input_vars, output_vars, for_test):
    dropout = _C.ops.dropout
    dropout = getattr(dropout, "__wrapped__", dropout)

    def run(symbolic_inputs):
        env = dict(zip(input_vars, symbolic_inputs))
        with suspended():
            for node in nodes:
                if node.kind == "alias":
                    env[node.out] = env[node.inputs[0]]
                    continue
                args, kwargs = _decode(node.args, env), _decode(node.kwargs, env)
                if for_test and node.fn is dropout:  # clone(for_test=True): dropout is the identity
                    args, kwargs = args[:1], {}
                    out = args[0]
                else:
                    out = node.fn(*args, **kwargs)
                _bind(node.out, out, env)
        return [env[v] for v in output_vars]
    return run


class _Built:
    """A program traced for some outputs: the _C.ir trace and how to run it."""

    def __init__(self, trace, data, outputs, updates, grads):
        self.trace, self.data, self.outputs, self.updates, self.grads = trace, data, outputs, updates, grads
        self.program = trace.program
        self.executor = None


def _build(program, outputs, examples, optimize=True, train=None, device=None):
    """Traces the recorded calls computing `outputs` (variable ids computed by
    ops), the program's updates and, with `train` = (loss variable,
    parameter names), the gradients. `examples`: {data name: shape}."""
    updates = [] if program._for_test else list(program._updates.values())
    targets = list(outputs) + ([train[0]] if train else []) + [var for _, var in updates]
    nodes, needed = _prune(program, targets)
    data = [d for d in program._data.values() if d.var in needed]
    names = parameter_names(program)
    name_of = {id(t): n for n, t in names.items()}
    specs = [_C.ir.InputSpec(list(d.shape), d.dtype, d.name) for d in data]
    if examples:
        shapes = [list(examples[d.name]) for d in data]
    else:  # the sizes the program was built with
        shapes = [[_program.EXAMPLE_SIZE if s == -1 else s for s in d.shape] for d in data]
    try:
        with suspended():
            trace = _C.ir.trace(_replay(nodes, [d.var for d in data], targets, program._for_test), specs,
                                dict(names), device, shapes)
    except ValueError as e:
        resized = any(declared == -1 and size != _program.EXAMPLE_SIZE
                      for d, shape in zip(data, shapes) for declared, size in zip(d.shape, shape))
        if not resized:
            raise
        raise ValueError(f"Executor.run: the program does not run with feed shapes "
                         f"{ {d.name: shape for d, shape in zip(data, shapes)} }: {e}. While a program is built its "
                         f"dynamic dims have size {_program.EXAMPLE_SIZE}, and a size read from a variable's shape "
                         "is fixed in the program; take shapes from tensors instead (paddle.ones_like, "
                         "paddle.shape)") from e
    update_names = [name_of[id(t)] for t, _ in updates]
    if update_names:
        trace.program._outputs_to_updates(update_names)
    grads = []
    if train:
        wanted = [n for n in train[1] if n in trace.program.parameter_names]
        if wanted:
            grads, _ = _C.ir.append_backward(trace.program, len(outputs), wanted)
    if optimize:
        _C.ir.default_pipeline(trace.program, device)
    return _Built(trace, data, list(outputs), update_names, grads), names


# ---- optimizer.minimize in static mode ----
def _trainable(program, loss_var, parameters, no_grad_set):
    """The trainable Parameters the loss depends on (or of `parameters`)."""
    nodes, _ = _prune(program, [loss_var])
    used = {id(t): t for n in nodes if n.kind == "op" for t in _tensors_in((n.args, n.kwargs))
            if isinstance(t, Parameter)}
    if parameters is not None:
        used = {id(p): p for p in parameters if id(p) in used}
    skip = set()
    for item in no_grad_set or ():
        skip.add(item if isinstance(item, str) else id(item))
    names = {id(t): n for n, t in parameter_names(program).items()}
    return [p for p in used.values() if not p.stop_gradient and id(p) not in skip and names[id(p)] not in skip]


def _minimize(self, loss, startup_program=None, parameters=None, no_grad_set=None):
    program = state.program
    if program is None:
        return _original_minimize(self, loss, startup_program, parameters, no_grad_set)
    var = program._var_of(loss) if isinstance(loss, Tensor) else None
    if var is None:
        raise ValueError("minimize: the loss is not a variable of the current main program; build it inside "
                         "the program_guard of the program you minimize")
    trainable = _trainable(program, var, parameters if parameters is not None else
                           (None if getattr(self, "_static_all_parameters", False) else self._parameter_list),
                           no_grad_set)
    if getattr(self, "_static_all_parameters", False) and parameters is None:
        self._param_groups = [{"params": trainable}]
    program._train = (var, self, trainable)
    program._compiled = {}
    return [], [(p, None) for p in trainable]


def _optimizer_init(original):
    def init(self, learning_rate=0.001, parameters=None, *args, **kwargs):
        original(self, learning_rate, [] if parameters is None else parameters, *args, **kwargs)
        self._static_all_parameters = parameters is None  # static mode: the program's parameters
    return init


_original_minimize = Optimizer.minimize


def _install_optimizer_hooks():
    _set(Optimizer, "__init__", _optimizer_init(Optimizer.__dict__["__init__"]))
    _set(Optimizer, "minimize", _minimize)


_program.installers.append(_install_optimizer_hooks)


def _copy(t):
    return _C.ops.add_scalar(t, 0.0) if t.dtype.is_floating_point else _C.ops.cast(t, t.dtype)


def _train_argument(program):
    """_build's `train`: (loss variable, names of the parameters to differentiate), or None."""
    if program._train is None:
        return None
    names = {id(t): n for n, t in parameter_names(program).items()}
    return program._train[0], [names[id(p)] for p in program._train[2]]


# ---- Executor ----
class Executor:
    """Runs static programs (paddle.static.Executor): the startup program
    sets parameters to their initial values; a main program is traced into
    oar's IR once per fetch list, optimized, and run by the C++ executor."""

    def __init__(self, place=None):
        self.place = place
        self._device = device_str(place) if place is not None else None

    def close(self):
        pass

    def run(self, program=None, feed=None, fetch_list=None, feed_var_name="feed", fetch_var_name="fetch",
            scope=None, return_numpy=True, use_program_cache=False, **kwargs):
        del feed_var_name, fetch_var_name, scope, use_program_cache, kwargs
        program = _program.default_main_program() if program is None else program
        if isinstance(program, CompiledProgram):
            program = program._program
        if isinstance(program, _InferenceProgram):
            return program._run(feed or {}, fetch_list, return_numpy)
        if not isinstance(program, Program):
            raise TypeError(f"Executor.run: program must be a static.Program, got {type(program).__name__}")
        feed = {} if feed is None else feed
        if not isinstance(feed, dict):
            raise TypeError(f"Executor.run: feed must be a dict of name -> array, got {type(feed).__name__}")
        if fetch_list is None:
            fetch_list = []
        elif isinstance(fetch_list, (Tensor, str)):
            fetch_list = [fetch_list]
        with suspended():
            for entry in program._initial.values():
                p, initial = entry
                if initial is None:
                    entry[1] = _copy(p.detach())
                else:
                    p._set_data_(_copy(initial))
            targets = [self._target(program, f, i) for i, f in enumerate(fetch_list)]
            results = self._run_main(program, feed, targets)
        if return_numpy:
            return [np.array(r.numpy()) for r in results]
        return results

    @staticmethod
    def _target(program, item, index):
        """('var', id) | ('data', name) | ('tensor', tensor) for a fetch_list item."""
        if isinstance(item, str):
            if item in program._data:
                return "data", item
            if item in program._var_names:
                return "var", _root(program, program._var_names[item])
            named = parameter_names(program)
            if item in named:
                return "tensor", named[item]
            raise ValueError(f"Executor.run: fetch_list[{index}] names '{item}', which is not a variable of the "
                             f"program (static.data variables and parameters: {sorted(program._data) + sorted(named)})")
        if not isinstance(item, Tensor):
            raise TypeError(f"Executor.run: fetch_list[{index}] is a {type(item).__name__}; expected a variable "
                            "of the program or its name")
        var = program._vars.get(id(item))
        if var is not None:
            var = _root(program, var)
            data = program._data_of_var.get(var)
            return ("data", data.name) if data is not None else ("var", var)
        if id(item) in program._persistent:
            return "tensor", item
        raise ValueError(f"Executor.run: fetch_list[{index}] is not a variable of this program")

    def _run_main(self, program, feed, targets):
        outputs = tuple(dict.fromkeys(v for kind, v in targets if kind == "var"))
        train = program._train
        if not outputs and train is None and not program._updates:
            return [self._feed_value(program, feed, v) if kind == "data" else v for kind, v in targets]
        examples = {}
        for name, d in program._data.items():
            if name in feed:
                examples[name] = self._check_feed(d, feed[name])
        key = (outputs, self._device)
        entries = program._compiled.setdefault(key, [])
        entry = next((e for e in entries if _accepts(e, examples)), None)
        if entry is None:
            entry, _ = _build_checked(program, outputs, examples, _train_argument(program), self._device)
            entry.executor = _C.ir.Executor(entry.program, self._device)
            entries.append(entry)
        inputs = [_feed_tensor(d, feed, self._device) for d in entry.data]
        named = parameter_names(program)
        wanted = set(entry.program.parameter_names)
        entry.executor.set_parameters({n: t for n, t in named.items() if n in wanted})
        outs = entry.executor.run(inputs)
        if entry.updates:
            current = entry.executor.parameters()
            for name in entry.updates:
                named[name]._set_data_(current[name])
        if train is not None and entry.grads:
            grads = outs[len(entry.outputs) + 1:]
            optimizer = train[1]
            for name, g in zip(entry.grads, grads):
                named[name]._set_grad(g)
            optimizer.step()
            for name in entry.grads:
                named[name]._set_grad(None)
        by_var = dict(zip(entry.outputs, outs))
        return [by_var[v] if kind == "var" else self._feed_value(program, feed, v) if kind == "data" else v
                for kind, v in targets]

    @staticmethod
    def _check_feed(d, value):
        """The shape of feed `value` for data `d`, checked against its declaration."""
        if isinstance(value, Tensor):
            ok, found = value.dtype == d.dtype, value.dtype.name
        elif isinstance(value, np.ndarray):
            ok, found = value.dtype == np.dtype(to_numpy_dtype(d.dtype)), str(value.dtype)
        else:
            ok, found = True, ""  # Python numbers and lists take the declared dtype
        if not ok:
            raise ValueError(f"Executor.run: feed '{d.name}' has dtype {found} but static.data('{d.name}') "
                             f"declares {d.dtype.name}")
        shape = list(value.shape) if isinstance(value, Tensor) else list(np.shape(value))
        if len(shape) != len(d.shape) or any(s not in (-1, f) for s, f in zip(d.shape, shape)):
            raise ValueError(f"Executor.run: feed '{d.name}' has shape {shape} but static.data('{d.name}') "
                             f"declares {list(d.shape)} (-1: any size)")
        return shape

    def _feed_value(self, program, feed, name):
        if name not in feed:
            raise ValueError(f"Executor.run: fetch_list asks for '{name}' but feed has no value for it")
        return _feed_tensor(program._data[name], feed, self._device)


def _feed_tensor(d, feed, device):
    value = feed[d.name]
    if isinstance(value, Tensor):
        return value
    return _C.from_numpy(np.ascontiguousarray(np.asarray(value, dtype=to_numpy_dtype(d.dtype))), None, device)


def _accepts(entry, examples):
    for spec, d in zip(entry.trace.specs, entry.data):
        shape = examples.get(d.name)
        if shape is None or len(shape) != len(spec.shape) or any(
                s != -1 and s != f for s, f in zip(spec.shape, shape)):
            return False
    return True


def _build_checked(program, outputs, examples, train, device):
    """_build, after checking that every data variable it reads was fed."""
    updates = [] if program._for_test else [var for _, var in program._updates.values()]
    _, needed = _prune(program, list(outputs) + ([train[0]] if train else []) + updates)
    missing = [d for d in program._data.values() if d.var in needed and d.name not in examples]
    if missing:
        d = missing[0]
        raise ValueError(f"Executor.run: the fetched values need static.data('{d.name}', shape={list(d.shape)}, "
                         f"dtype={d.dtype.name}) but feed has no '{d.name}' (feed has: {sorted(examples)})")
    return _build(program, outputs, examples, train=train, device=device)


class CompiledProgram:
    """paddle.static.CompiledProgram: oar compiles every program it runs, so this only holds the program."""

    def __init__(self, program_or_graph, build_strategy=None):
        del build_strategy
        self._program = program_or_graph

    def with_data_parallel(self, loss_name=None, build_strategy=None, exec_strategy=None, places=None):
        return self


class _ScopeVariable:
    def __init__(self, tensor):
        self._tensor = tensor

    def get_tensor(self):
        return self._tensor


class _Scope:
    """global_scope(): the parameters of static programs by name (find_var(name).get_tensor())."""

    def find_var(self, name):
        t = _program.named_parameters.get(name)
        return None if t is None else _ScopeVariable(t)

    def var(self, name):
        found = self.find_var(name)
        if found is None:
            raise ValueError(f"global_scope().var: no parameter of a static program is named '{name}'")
        return found


_global_scope = _Scope()


def global_scope():
    return _global_scope


# ---- saving ----
def save(program, model_path, protocol=4, **configs):
    """Writes the program's parameters to model_path.pdparams (paddle.static.save)."""
    del configs
    from ..serialization import save as save_object
    directory = os.path.dirname(os.fspath(model_path))
    if directory:
        os.makedirs(directory, exist_ok=True)
    save_object({n: t for n, t in parameter_names(program).items() if isinstance(t, Parameter)},
                os.fspath(model_path) + ".pdparams", protocol)


def load(program, model_path, executor=None, var_list=None):
    """Reads model_path.pdparams into the program's parameters (paddle.static.load)."""
    del executor, var_list
    from ..serialization import load as load_object
    state_dict = load_object(os.fspath(model_path) + ".pdparams")
    named = parameter_names(program)
    for name, value in state_dict.items():
        if name not in named:
            raise ValueError(f"static.load: {model_path}.pdparams holds '{name}', which the program has no "
                             "parameter of")
        target = named[name]
        if list(value.shape) != list(target.shape):
            raise ValueError(f"static.load: parameter '{name}' has shape {list(target.shape)} but "
                             f"{model_path}.pdparams holds shape {list(value.shape)}")
        with suspended():
            target._set_data_(_C.ops.cast(value, target.dtype) if value.dtype != target.dtype else value)


def save_inference_model(path_prefix, feed_vars, fetch_vars, executor=None, program=None, **kwargs):
    """Writes the inference program from feed_vars to fetch_vars as
    path_prefix.json + path_prefix.safetensors (oar.jit.save's format:
    oar.jit.load and oar-run read it too)."""
    del executor, kwargs
    program = (program or _program.default_main_program()).clone(for_test=True)
    feed_vars = [feed_vars] if isinstance(feed_vars, Tensor) else list(feed_vars)
    fetch_vars = [fetch_vars] if isinstance(fetch_vars, Tensor) else list(fetch_vars)
    data = []
    for i, v in enumerate(feed_vars):
        d = program._data_of_var.get(program._vars.get(id(v)))
        if d is None:
            raise ValueError(f"save_inference_model: feed_vars[{i}] is not a static.data variable of the program")
        data.append(d)
    outputs = []
    for i, v in enumerate(fetch_vars):
        var = program._vars.get(id(v))
        if var is None or program._producer[_root(program, var)] is None:
            raise ValueError(f"save_inference_model: fetch_vars[{i}] is not a value computed by the program")
        outputs.append(_root(program, var))
    built, names = _build(program, outputs, None)
    extra = [d.name for d in built.data if d not in data]
    if extra:
        raise ValueError(f"save_inference_model: the fetch_vars also need static.data {extra}; add them to "
                         "feed_vars")
    path = os.fspath(path_prefix)
    if os.path.dirname(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
    wanted = set(built.program.parameter_names)
    _C.ir.save(built.program, {n: t for n, t in names.items() if n in wanted}, path)


class _InferenceProgram:
    """A program read by load_inference_model; Executor.run feeds it by input name."""

    def __init__(self, program, parameters, device):
        self._program, self._parameters = program, parameters
        self._executor = _C.ir.Executor(program, device)

    def __str__(self):
        return str(self._program)

    def _run(self, feed, fetch_list, return_numpy):
        names = list(self._program.input_names)
        missing = [n for n in names if n not in feed]
        if missing:
            raise ValueError(f"Executor.run: the inference program needs feed '{missing[0]}' (inputs: {names})")
        specs = {s.name: s for s in self._program.input_specs}
        inputs = []
        for n in names:
            v = feed[n]
            inputs.append(v if isinstance(v, Tensor) else _C.from_numpy(
                np.ascontiguousarray(np.asarray(v, dtype=to_numpy_dtype(specs[n].dtype)))))
        self._executor.set_parameters(self._parameters)
        outs = self._executor.run(inputs)
        by_name = dict(zip(self._program.output_names, outs))
        fetch = list(self._program.output_names) if fetch_list is None else list(fetch_list)
        for f in fetch:
            if f not in by_name:
                raise ValueError(f"Executor.run: the inference program has no output '{f}' (outputs: "
                                 f"{list(by_name)})")
        results = [by_name[f] for f in fetch]
        return [np.array(r.numpy()) for r in results] if return_numpy else results


def load_inference_model(path_prefix, executor=None, **kwargs):
    """[program, feed names, fetch names] of a program saved by save_inference_model."""
    del kwargs
    device = getattr(executor, "_device", None)
    program, parameters = _C.ir.load(os.fspath(path_prefix), device)
    return [_InferenceProgram(program, parameters, device), list(program.input_names), list(program.output_names)]
