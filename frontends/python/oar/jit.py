"""oar.jit (paddle.jit): static mode from Python.

to_static traces a function, or a Layer's forward, into an oar program (the
C++ IR of docs/static.md): the Python code runs once with symbolic tensors,
every oar op it calls is recorded, the default passes (constant folding,
CSE, DCE) optimize the program, and the C++ executor runs it on later calls.
save writes a traced program with its parameters (path.json +
path.safetensors, readable without Python by oar::Predictor and oar-run);
load reads it back as a TranslatedLayer.

With full_graph=True (the default) the function's source is converted
first (oar/jit_dy2static.py, Paddle's dy2static): if/while/for-range on a
tensor of the trace become the program's cond and while, and and/or/not
logical ops, so branches and loops are decided by the values on every run.
Python conditions stay Python: they are decided once, when traced, as are
Python numbers. With full_graph=False the function is converted the same
way, and where its trace fails (numpy, float(t), ...) it is split at graph
breaks into compiled pieces around eager statements (oar/jit_graph_break.py).
"""
import functools
import os
import threading
import warnings
import weakref

from . import _C
from . import jit_dy2static
from .jit_dy2static import set_code_level, set_verbosity  # noqa: F401 - paddle.jit names
from .autograd import no_grad
from .framework import Tensor
from .nn.layer import Layer
from .nn.parameter import Parameter
from .static import InputSpec

__all__ = ["to_static", "save", "load", "not_to_static", "set_code_level", "set_verbosity", "enable_to_static", "StaticFunction", "TranslatedLayer",
           "InputSpec"]

# Traces one StaticFunction keeps (the least recently used is dropped).
_MAX_TRACES = 8
# The trace cache itself (keys, lookup, specs of a new trace, trace counts)
# is C++: _C.ir.TraceCache (Note [Trace cache] in compiled_function.cpp).
_TENSOR = object()  # marks where a tensor argument goes
_enabled = True


def enable_to_static(enable_to_static_bool):
    """False makes every to_static function run its Python code eagerly (for debugging)."""
    global _enabled
    _enabled = bool(enable_to_static_bool)


def not_to_static(func=None):
    """Marks a function to be called as written, without the conversion of
    its control flow, when a to_static function calls it
    (paddle.jit.not_to_static); returns `func`."""
    return jit_dy2static.not_to_static(func)


def _specs(input_spec, what):
    """A list of InputSpec from InputSpecs and example Tensors; None stays None."""
    if input_spec is None:
        return None
    if isinstance(input_spec, (InputSpec, Tensor)):
        input_spec = [input_spec]
    if not isinstance(input_spec, (list, tuple)):
        raise TypeError(f"{what}: input_spec must be a list of InputSpec, got {type(input_spec).__name__}")
    out = []
    for i, s in enumerate(input_spec):
        if isinstance(s, InputSpec):
            out.append(s)
        elif isinstance(s, Tensor):
            out.append(InputSpec.from_tensor(s))
        else:
            raise TypeError(f"{what}: input_spec[{i}] is a {type(s).__name__}; expected an InputSpec or a Tensor")
    return out


def _freeze(value, where):
    """A hashable key for a non-tensor argument (it is fixed in the trace)."""
    if isinstance(value, (list, tuple)):
        return (type(value), tuple(_freeze(v, where) for v in value))
    if isinstance(value, dict):
        return (dict, tuple(sorted((k, _freeze(v, where)) for k, v in value.items())))
    try:
        hash(value)
    except TypeError:
        raise TypeError(f"{where} is a {type(value).__name__}, which to_static cannot fix in a trace; pass "
                        "Tensors, numbers, strings, None or lists of them") from None
    return (type(value), value)


def _split_arguments(name, args, kwargs):
    """(tensor inputs, rebuild(tensors) -> (args, kwargs), key of the other arguments)."""
    inputs, template, key = [], [], []
    for i, a in enumerate(args):
        if isinstance(a, Tensor):
            inputs.append(a)
            template.append(_TENSOR)
            key.append(_TENSOR)
        else:
            template.append(a)
            key.append(_freeze(a, f"{name}: argument {i}"))
    kw_template = {}
    for k in sorted(kwargs):
        v = kwargs[k]
        if isinstance(v, Tensor):
            inputs.append(v)
            kw_template[k] = _TENSOR
            key.append((k, _TENSOR))
        else:
            kw_template[k] = v
            key.append((k, _freeze(v, f"{name}: argument '{k}'")))

    def rebuild(tensors):
        it = iter(tensors)
        new_args = [next(it) if a is _TENSOR else a for a in template]
        new_kwargs = {k: next(it) if v is _TENSOR else v for k, v in kw_template.items()}
        return new_args, new_kwargs
    return inputs, rebuild, tuple(key)


def _positional(tensors):
    """rebuild() for a call with the tensors as its only arguments."""
    return list(tensors), {}


class StaticFunction:
    """A function or Layer forward compiled to static mode (to_static's result).

    Calls trace once per new input signature and then run the program with
    the C++ executor. A Layer's parameters and buffers are program
    parameters named as in its state_dict, bound to their current values on
    every call, so optimizer steps and set_state_dict are seen.

    Training works through to_static: when grad mode is on and an input or
    a parameter requires grad, the outputs are differentiable; their
    backward runs the program's appended backward (program autodiff with
    the same VJP rules as eager mode, fed the forward values it needs).
    Gradients of gradients (create_graph) through a static program are
    refused with an error; call the function eagerly for those. Layers are
    traced in their current mode (train or eval; each mode has its own
    trace); Layer buffers reassigned in forward
    (batch norm's running statistics in train mode) become program updates
    written back after each run.

    Tensors a plain function reads from outside (globals, closures) are
    fixed when it is traced: as program parameters if they require grad,
    as constants otherwise. Pass tensors that change as arguments, or use a
    Layer."""

    def __init__(self, function, input_spec=None, layer=None, backend=None, full_graph=True):
        self._function = function
        self._full_graph = full_graph
        self._converted = None  # the function after the dy2static conversion
        self._graph_breaks = None  # full_graph=False, once a trace failed: the jit_graph_break.Runner
        self._output_specs = {}  # trace id -> how its outputs nest (dicts, None, ...), jit_graph_break._flatten
        self._last_output_spec = None
        self._layer = layer
        self._backend = backend
        # None: OAR_COMPILER / FLAGS_use_cinn decide; True: the compiler plugin (backend="CINN").
        self._compiler = _compiler_of(backend)
        self._input_spec_arg = input_spec
        self._input_spec = _specs(input_spec, "to_static")
        self._cache = _C.ir.TraceCache(_MAX_TRACES)
        # The C++ cache keys on an id of the call's non-tensor arguments (only
        # Python can hash them): frozen arguments -> id, for cached traces.
        self._argument_ids = {}
        self._next_argument_id = 1
        # Per cached trace (by id): where its parameters live (Layer state,
        # read on every call) and the tensors fixed when it was traced.
        self._bindings = {}
        self._sublayers = None
        self._bound = weakref.WeakKeyDictionary()  # a decorated method's StaticFunction per instance
        functools.update_wrapper(self, function)

    @property
    def _name(self):
        return getattr(self._function, "__qualname__", None) or type(self._function).__name__

    # ---- method decoration: `@to_static def forward(self, x)` ----
    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        bound = self._bound.get(instance)
        if bound is None:
            bound = StaticFunction(self._function.__get__(instance, owner), self._input_spec_arg,
                                   layer=instance if isinstance(instance, Layer) else None, backend=self._backend,
                                   full_graph=self._full_graph)
            self._bound[instance] = bound
        return bound

    # ---- calling ----
    def __call__(self, *args, **kwargs):
        if not _enabled:
            return self._function(*args, **kwargs)
        if self._graph_breaks is not None:
            return self._graph_breaks(args, kwargs)
        try:
            inputs, rebuild, key = _split_arguments(f"to_static({self._name})", args, kwargs)
        except TypeError as e:  # an argument no trace can fix
            if self._full_graph:
                raise
            return self._break(e)(args, kwargs)
        if any(_C.ir.is_symbolic(t) for t in inputs):
            return self._traced_function()(*args, **kwargs)  # called inside another trace: inlined there
        device = inputs[0]._device if inputs else _C.get_device()
        try:
            entry = self._lookup(inputs, rebuild, key, device)
        except Exception as e:  # noqa: BLE001 - without full_graph, a failed trace splits the function
            if self._full_graph:
                raise
            return self._break(e)(args, kwargs)
        if self._full_graph:
            return self._run(entry, inputs)
        try:  # a program whose backward autodiff refuses (a loop in a loop) breaks before it runs
            return self._run(entry, inputs, strict_backward=True)
        except _C.UnsupportedError as e:
            return self._break(e)(args, kwargs)

    def _break(self, error):
        """Without full_graph: from now on the function runs split at its graph breaks
        (oar/jit_graph_break.py), found from the trace that failed with `error`."""
        from .jit_graph_break import Runner
        self._graph_breaks = Runner(self, error)
        return self._graph_breaks

    @property
    def graph_breaks(self):
        """The graph breaks found so far (full_graph=False), as GraphBreak(filename, line,
        statement, reason); [] while the function traces whole."""
        return [] if self._graph_breaks is None else list(self._graph_breaks.breaks)

    def _traced_function(self):
        """What a trace runs: the function with its control flow on tensors converted."""
        if self._converted is None:
            self._converted = jit_dy2static.convert_entry(self._function, warn=self._full_graph)
        return self._converted

    def _mode(self):
        """Per sublayer of the Layer: whether it trains (each mode has its own trace)."""
        if self._layer is None:
            return []
        # The sublayers are listed once: walking them on every call costs
        # more than a small program runs.
        if self._sublayers is None:
            self._sublayers = list(self._layer.sublayers(include_self=True))
        return [layer.training for layer in self._sublayers]

    def _argument_id(self, key):
        """The id the C++ cache keys on for frozen non-tensor arguments `key`."""
        arguments = self._argument_ids.get(key)
        if arguments is None:
            arguments = self._argument_ids[key] = self._next_argument_id
            self._next_argument_id += 1
        return arguments

    def _state_slots(self):
        """(state_dict name, dict, key) of each parameter and buffer of the Layer."""
        if self._layer is None:
            return []
        slots, seen = [], set()
        for prefix, layer in self._layer.named_sublayers(include_self=True):
            for store in (layer._parameters, layer._buffers):
                for key, t in store.items():
                    if t is not None and id(t) not in seen:
                        seen.add(id(t))
                        slots.append((prefix + ("." if prefix else "") + key, store, key))
        return slots

    def _named_state(self):
        """The Layer's parameters and buffers (the Python objects), by state_dict name."""
        return {name: store[key] for name, store, key in self._state_slots()}

    def _lookup(self, inputs, rebuild, key, device):
        # Inputs that require grad require it inside the trace too, so oar.grad of them works there
        # (a PINN's derivatives); a trace serves calls with the same ones.
        grad_mask = tuple(not t.stop_gradient for t in inputs)
        if any(grad_mask):
            key = tuple(key) + (("requires_grad", grad_mask),)
        arguments, mode = self._argument_id(key), self._mode()
        entry = self._cache.lookup(arguments, mode, device, inputs)
        if entry is not None:
            return entry
        if self._input_spec is None:
            self._input_spec = [InputSpec.from_tensor(t) for t in inputs]
        specs = _C.ir.TraceCache.specs_for([s._to_ir() for s in self._input_spec], inputs, f"to_static({self._name})")
        return self._compile(specs, [list(t.shape) for t in inputs], rebuild, arguments, mode, device, grad_mask)

    def _trace(self, specs, examples, rebuild, device, grad_mask=()):
        """Traces the function for `specs` (_C.ir.InputSpec): (_C.ir.Trace,
        updated buffer names, output structure)."""
        slots = self._state_slots()
        result = {}

        def traced(symbolic_inputs):
            saved = [(name, store, key, store[key], Tensor(store[key])) for name, store, key in slots]
            for t, requires in zip(symbolic_inputs, grad_mask):
                if requires:
                    t.stop_gradient = False
            args, kwargs = rebuild(symbolic_inputs)
            try:
                out = self._traced_function()(*args, **kwargs)
            finally:
                # Parameters or buffers the forward reassigned (in place or
                # by attribute) hold symbolic tensors now: they become program
                # updates, and the Layer gets its tensors back.
                updated = []
                for name, store, key, obj, handle in saved:
                    current = store.get(key)
                    if current is not None and _C.ir.is_symbolic(current):
                        updated.append((name, Tensor(current)))
                        if current is obj:
                            obj._rebind_(handle)
                        else:
                            store[key] = obj
            result["updates"] = [name for name, _ in updated]
            if isinstance(out, Tensor):
                result["structure"], outs = "tensor", [out]
            elif isinstance(out, (list, tuple)) and all(isinstance(t, Tensor) for t in out):
                result["structure"], outs = type(out).__name__, list(out)
            else:
                # dicts, nesting, None and numbers among the tensors: the program returns the
                # tensors, and the call rebuilds the rest (the values of this trace)
                from .jit_graph_break import _flatten
                outs = []
                result["spec"], _ = _flatten(_sorted_dicts(out), outs)
                result["structure"] = "nested"
                if not outs:
                    raise TypeError(f"to_static({self._name}): the function returned a {type(out).__name__} "
                                    "holding no Tensor; a program returns at least one Tensor")
            return outs + [t for _, t in updated]

        params = {name: Tensor(store[key]) for name, store, key in slots}
        # The trace's random ops draw their offsets, and the generator gets them back: each run
        # takes them anew (Note [Random ops in programs]), so tracing draws nothing.
        random_state = _C.random_state()
        try:
            trace = _C.ir.trace(traced, specs, params, device, examples)
        finally:
            _C.set_random_state(*random_state)
        if result["updates"]:
            trace.program._outputs_to_updates(result["updates"])
        _C.ir.default_pipeline(trace.program, device, compiler=self._compiler)
        self._last_output_spec = result.get("spec")
        return trace, result["updates"], result["structure"]

    def _compile(self, specs, examples, rebuild, arguments, mode, device, grad_mask=()):
        """Traces, then caches the trace in C++ (which compiles it)."""
        trace, updates, structure = self._trace(specs, examples, rebuild, device, grad_mask)
        entry = self._cache.insert(arguments, mode, device, trace.specs, trace.program, updates, structure,
                                   compiler=self._compiler)
        if structure == "nested":
            self._output_specs[entry.id] = self._last_output_spec
        slots = {name: (store, k) for name, store, k in self._state_slots()}
        captured = {n: t for n, t in trace.parameters.items() if n not in slots}
        # Where each program parameter lives: read on every call (optimizer
        # steps rebind or update them), looked up once.
        self._bindings[entry.id] = ([(n,) + slots[n] for n in trace.program.parameter_names if n in slots],
                                    {n: captured[n] for n in trace.program.parameter_names if n not in slots})
        # Forget what belongs to traces the cache dropped.
        held = self._cache.entries()
        ids, held_arguments = {e.id for e in held}, {e.arguments for e in held}
        self._bindings = {i: b for i, b in self._bindings.items() if i in ids}
        self._output_specs = {i: o for i, o in self._output_specs.items() if i in ids}
        self._argument_ids = {k: a for k, a in self._argument_ids.items() if a in held_arguments}
        return entry

    def _parameters_of(self, program, captured, named):
        return {n: named[n] if n in named else captured[n] for n in program.parameter_names}

    def _run(self, entry, inputs, strict_backward=False):
        slots, fixed = self._bindings[entry.id]
        params = {name: store[k] for name, store, k in slots}
        if fixed:
            params.update(fixed)
        try:
            outs = entry(inputs, params, strict_backward)
        except ValueError as e:  # the op assert of a converted `assert` (Note [Print and assert ops])
            if str(e).startswith("assert: AssertionError"):
                raise AssertionError(str(e)[len("assert: AssertionError "):]) from None
            raise
        updates = entry.updates
        if updates:
            current = entry.parameters()
            for name in updates:
                params[name]._set_data_(current[name])
        structure = entry.structure
        if structure == "tensor":
            return outs[0]
        if structure == "nested":
            from .jit_graph_break import _unflatten
            return _unflatten(self._output_specs[entry.id], iter(outs))
        return tuple(outs) if structure == "tuple" else outs

    # ---- inspection ----
    def _latest(self):
        entry = self._cache.latest
        if entry is None:
            if self._input_spec is None:
                raise RuntimeError(f"to_static({self._name}): nothing is traced yet; call it once or give "
                                   "input_spec")
            arguments = self._argument_id((_TENSOR,) * len(self._input_spec))
            entry = self._compile([s._to_ir() for s in self._input_spec], [], _positional, arguments, self._mode(),
                                  _C.get_device())
        return entry

    @property
    def program(self):
        """The text of the most recently used program (traced from input_spec when not yet called)."""
        return str(self._latest().program)

    @property
    def trace_count(self):
        """How many times the function was traced (a cache miss traces)."""
        return self._cache.trace_count

    @property
    def input_spec(self):
        return None if self._input_spec is None else list(self._input_spec)

    @property
    def dygraph_function(self):
        """The original Python function."""
        return self._function

    def rollback(self):
        """Undoes to_static: a Layer gets its original forward back; returns the original function."""
        if self._layer is not None and self._layer.__dict__.get("forward") is self:
            del self._layer.__dict__["forward"]
        return self._function

    def __repr__(self):
        return f"StaticFunction({self._name}, input_spec={self._input_spec}, traces={self._cache.trace_count})"


def _compiler_of(backend):
    """to_static's backend as the pipeline's compiler switch: None keeps the
    environment's choice, "CINN" turns the compiler plugin on."""
    if backend is None or backend == "":
        return None
    if isinstance(backend, str) and backend.upper() == "CINN":
        return True
    raise ValueError(f"to_static: backend must be None or 'CINN' (the compiler plugin), got {backend!r}")


def _sorted_dicts(value):
    """`value` with its dicts' items in sorted key order (paddle.utils.flatten's order, which a
    saved program's outputs follow)."""
    if type(value) is dict:
        try:
            keys = sorted(value)
        except TypeError:
            keys = list(value)
        return {k: _sorted_dicts(value[k]) for k in keys}
    if type(value) in (list, tuple):
        return type(value)(_sorted_dicts(v) for v in value)
    return value


def to_static(function=None, input_spec=None, build_strategy=None, backend=None, full_graph=True, **kwargs):
    """Compiles a function or a Layer to static mode (paddle.jit.to_static).

    Works as `to_static(fn)`, `@to_static`, `@to_static(input_spec=[...])`,
    on a Layer (its forward is replaced; `layer.forward.rollback()` undoes
    it) and on a Layer's forward method. `input_spec` lists an InputSpec per
    tensor argument (None dims are dynamic); without it the first call's
    shapes are the spec. See StaticFunction for what runs statically.

    `backend="CINN"` compiles the function with the compiler plugin
    (liboar_compiler.so: fused kernels generated for its groups, every
    composite op decomposed first, as Paddle's CINN with FLAGS_prim_all);
    None or "" keeps the environment's choice (OAR_COMPILER=1 or
    FLAGS_use_cinn=1 turn the compiler on for every to_static function).

    `full_graph=True` converts the function's (and its callees') Python
    control flow on tensors into the program's cond and while (see
    oar/jit_dy2static.py) and fails where a trace cannot hold the code;
    False converts the same way but splits the function at graph breaks
    where its trace fails (oar/jit_graph_break.py): the statements around a
    break run as compiled programs, the break in Python, so the function
    always runs, with eager's results. `static_fn.graph_breaks` lists them."""
    del build_strategy, kwargs  # Paddle options with no oar counterpart
    _compiler_of(backend)  # an unknown backend fails here, not at the first call

    def decorate(fn):
        if isinstance(fn, StaticFunction):
            return fn
        if isinstance(fn, Layer):
            if not isinstance(fn.forward, StaticFunction):
                fn.__dict__["forward"] = StaticFunction(fn.forward, input_spec, layer=fn, backend=backend,
                                                        full_graph=full_graph)
            return fn
        if not callable(fn):
            raise TypeError(f"to_static: expected a function or a Layer, got {type(fn).__name__}")
        owner = getattr(fn, "__self__", None)
        return StaticFunction(fn, input_spec, layer=owner if isinstance(owner, Layer) else None, backend=backend,
                              full_graph=full_graph)

    return decorate if function is None else decorate(function)


def _static_function_of(layer, input_spec):
    if isinstance(layer, StaticFunction):
        return layer
    if isinstance(layer, Layer):
        forward = layer.forward
        return forward if isinstance(forward, StaticFunction) else StaticFunction(forward, input_spec, layer=layer)
    if callable(layer):
        return to_static(layer, input_spec=input_spec)
    raise TypeError(f"jit.save: expected a Layer or a function, got {type(layer).__name__}")


def save(layer, path, input_spec=None, **configs):
    """Traces `layer` (a Layer, a to_static function or Layer, or a
    TranslatedLayer) in its current mode under no_grad, optimizes the
    program and writes `path`.json and `path`.safetensors (paddle.jit.save).
    `input_spec` is required unless to_static was given one or the function
    was called."""
    del configs
    path = os.fspath(path)
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    if isinstance(layer, TranslatedLayer):
        _C.ir.save(layer._program, layer._parameter_tensors(), path)
        return
    sf = _static_function_of(layer, input_spec)
    specs = _specs(input_spec, "jit.save") or sf._input_spec
    if specs is None:
        raise ValueError(f"jit.save: {sf._name} has not been called and no input_spec was given, so the input "
                         "shapes are unknown; pass input_spec=[oar.static.InputSpec([None, ...], 'float32')]")
    ir_specs = [s._to_ir() for s in specs]
    try:
        with no_grad():
            trace, _, _ = sf._trace(ir_specs, [], _positional, _C.get_device())
    except ValueError as e:
        if "does not require grad" not in str(e):
            raise
        # oar.grad inside forward (a PINN's derivatives): traced again with the inputs the specs
        # leave stop_gradient=False requiring grad, as a call with such tensors is
        mask = tuple(not getattr(s, "stop_gradient", True) for s in specs)
        trace, _, _ = sf._trace(ir_specs, [], _positional, _C.get_device(), mask)
    if trace.specialized:
        warnings.warn(f"jit.save: {sf._name} computes a shape from its inputs' shapes, so the saved program "
                      f"only accepts {[list(s.shape) for s in trace.specs]}", UserWarning, stacklevel=2)
    program = trace.program
    named = sf._named_state()
    captured = {n: t for n, t in trace.parameters.items() if n not in named}
    _C.ir.save(program, sf._parameters_of(program, captured, named), path)


class TranslatedLayer(Layer):
    """A program loaded by oar.jit.load: forward(*tensors) runs it with the
    C++ executor and returns a Tensor (one output) or a list. Its
    parameters carry the saved names (set_state_dict replaces them). It is
    for inference: outputs carry no autograd history, and train()/eval()
    do not change the program (it was traced in one mode). It may be
    called from several threads: calls are serialized by a lock (one
    executor and its memory arena serve every call; docs/static.md,
    "Concurrent calls"). Load it once per thread for parallel
    throughput."""

    def __init__(self, program, parameters, device=None):
        super().__init__()
        self._program = program
        self._executor = _C.ir.Executor(program, device)
        self._call_lock = threading.Lock()  # binding, run and updates are one step
        for name, t in parameters.items():
            self.add_parameter(name, Parameter(t, trainable=False, name=name))
        self.training = False

    def _parameter_tensors(self):
        return dict(self.named_parameters())

    @property
    def program(self):
        """The program's text."""
        return str(self._program)

    @property
    def input_names(self):
        return list(self._program.input_names)

    @property
    def output_names(self):
        return list(self._program.output_names)

    @property
    def input_spec(self):
        return [InputSpec(list(s.shape), s.dtype, s.name) for s in self._program.input_specs]

    def forward(self, *inputs):
        names = self._program.input_names
        if len(inputs) != len(names):
            raise ValueError(f"TranslatedLayer: the program takes {len(names)} inputs ({', '.join(names)}) but got "
                             f"{len(inputs)}")
        for name, x in zip(names, inputs):
            if not isinstance(x, Tensor):
                raise TypeError(f"TranslatedLayer: input '{name}' is a {type(x).__name__}; expected a Tensor")
        params = self._parameter_tensors()
        # The executor releases the GIL while it runs; waiting here does too.
        with self._call_lock:
            self._executor.set_parameters(params)
            outs = self._executor.run(list(inputs))
            if self._program.update_names:
                current = self._executor.parameters()
                for name in self._program.update_names:
                    params[name]._set_data_(current[name])
        return outs[0] if len(outs) == 1 else outs


def load(path, device=None, **configs):
    """Reads `path`.json and `path`.safetensors (written by oar.jit.save or
    oar::ir::save) as a TranslatedLayer on `device` (default: the current
    device). A missing, truncated or corrupted file raises an error naming
    the file."""
    del configs
    program, parameters = _C.ir.load(os.fspath(path), None if device is None else str(device))
    return TranslatedLayer(program, parameters, None if device is None else str(device))
