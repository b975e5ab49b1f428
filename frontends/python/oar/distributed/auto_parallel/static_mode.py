"""dist.to_static (Paddle's paddle.distributed.to_static) and DistModel.

A DistModel runs a Layer whose parameters are distributed tensors as ONE
static program per rank (Note [Distributed programs] in
core/ir/passes/dist_partition.cpp):

  1. the dense program: the layer's forward and the loss traced with global
     shapes (each distributed parameter stands in as a dense parameter of
     its global shape), plus, in train mode, the appended backward;
  2. its leaves' placements: the parameters' own; inputs as given (a
     distributed tensor keeps its placements; a dense one is Shard(0) on the
     mesh's data dim "dp" / "data" / "batch" if there is one, else
     Replicate());
  3. _C.ir.dist_partition replays it through the distributed dispatcher:
     this rank's program, with the reshard collectives the SPMD rules ask
     for. The loss comes back Replicate(), gradients in their parameter's
     placements.

Pipeline parallel (strategy.pipeline.enable): the stages' parameters live
on different meshes and the forward moves activations with dist.reshard
(recorded as marks in the dense trace, Note [Joining meshes] for the
backward); the batch runs as micro-batches (accumulate_steps, or rows of
micro_batch_size) whose mean loss and gradients feed one optimizer step.
In train mode each rank's program is split into its forward and backward
parts (the values the backward reads cross as "carry" outputs/inputs), and
_Built.run_schedule orders them: "FThenB" (all forwards, then all
backwards) or "1F1B" (warm-up forwards, then one forward and one backward
in turn). Both give one process's numbers.

Each mode and input signature builds once; later calls run the cached
program with the executor. In train mode the optimizer then steps on the
distributed parameters (eager distributed ops on the local pieces; every
rank updates its own piece, so no communication). Printing: OAR_LOG_LEVEL=
info (or debug), Strategy.print_program or to_static(print_program=True)
prints the dense program and this rank's program when they are built; the
texts are also dist_model.dense_program() and dist_model.dist_main_program().
"""
import os
import sys

import numpy as np

from ... import _C
from ...autograd import no_grad
from ...creation import zeros
from ...framework import Tensor
from ...static import InputSpec
from .api import _ensure_env
from .placement import Shard, to_core
from .process_mesh import ProcessMesh
from .strategy import Strategy

__all__ = ["to_static", "DistModel"]

_DATA_DIMS = ("dp", "data", "batch")
_REPLICATE = (0, -1, 0)


def _log_info():
    return os.environ.get("OAR_LOG_LEVEL", "").lower() in ("info", "debug", "trace")


def _attr_key(t):
    if _C.dist.is_dist(t):
        mesh, placements = _C.dist.dist_attr(t)
        return (tuple(map(tuple, mesh[:2])), tuple(mesh[2]), tuple(placements))
    return None


class DistModel:
    """The static distributed model dist.to_static returns (Paddle's
    DistModel). Set a mode with train() / eval() / predict(), then call it:
    dist_model(*inputs, label) -> the loss (a numpy array, as Paddle) in
    train and eval mode (train also runs the backward and optimizer.step()),
    dist_model(*inputs) -> the outputs in predict mode (distributed tensors).
    The default mode: train with a loss and an optimizer, eval with a loss
    only, predict otherwise."""

    def __init__(self, layer, loader=None, loss=None, optimizer=None, strategy=None, metrics=None,
                 input_spec=None, print_program=False):
        from ...nn.layer import Layer
        if not isinstance(layer, Layer):
            raise TypeError(f"dist.to_static: layer must be an oar.nn.Layer, not {type(layer).__name__}")
        if strategy is not None and not isinstance(strategy, Strategy):
            raise TypeError(f"dist.to_static: strategy must be a dist.Strategy, not {type(strategy).__name__}")
        self._layer = layer
        self._loader = loader
        self._loss = loss
        self._optimizer = optimizer
        self._strategy = strategy or Strategy()
        pipe = self._strategy.pipeline
        if pipe.enable:
            if pipe.schedule_mode not in ("FThenB", "1F1B"):
                raise ValueError(f"dist.to_static: strategy.pipeline.schedule_mode must be 'FThenB' or '1F1B', got "
                                 f"{pipe.schedule_mode!r}")
            for name in ("accumulate_steps", "micro_batch_size"):
                v = getattr(pipe, name)
                if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                    raise ValueError(f"dist.to_static: strategy.pipeline.{name} must be a positive int, got {v!r}")
        self._print = bool(print_program or self._strategy.print_program)
        self._programs = {}  # (mode, input signature) -> _Built
        self._latest = None
        self._mode = None
        if loss is not None and optimizer is not None:
            self.train()
        elif loss is not None:
            self.eval()
        else:
            self.predict()

    # ---- modes ----
    def train(self):
        """Training: __call__ runs forward, loss, backward and optimizer.step()."""
        if self._loss is None or self._optimizer is None:
            raise ValueError("DistModel.train: training needs a loss and an optimizer; pass both to dist.to_static")
        self._mode = "train"
        self._layer.train()

    def eval(self):
        """Evaluation: __call__ returns the loss."""
        if self._loss is None:
            raise ValueError("DistModel.eval: evaluation needs a loss; pass loss= to dist.to_static")
        self._mode = "eval"
        self._layer.eval()

    def predict(self):
        """Prediction: __call__ returns the layer's outputs."""
        self._mode = "predict"
        self._layer.eval()

    @property
    def mode(self):
        return self._mode

    # ---- state ----
    def state_dict(self, mode="all"):
        """The distributed parameters (and buffers) by name ('param'), the
        optimizer's state ('opt'), or both ('all')."""
        if mode not in ("all", "param", "opt"):
            raise ValueError(f"DistModel.state_dict: mode must be 'all', 'param' or 'opt', got {mode!r}")
        out = {}
        if mode in ("all", "param"):
            out.update(self._layer.state_dict())
        if mode in ("all", "opt") and self._optimizer is not None:
            out.update(self._optimizer.state_dict())
        return out

    def set_state_dict(self, state_dict):
        self._layer.set_state_dict(state_dict)

    @property
    def dist_loader(self):
        """The loader's batches as distributed tensors (dist.shard_dataloader
        over the loader, on the parameters' mesh: split along its data dim
        "dp" / "data" / "batch" if it has one, else replicated)."""
        from .sharding import ShardDataloader, shard_dataloader
        if self._loader is None or isinstance(self._loader, ShardDataloader):
            return self._loader
        mesh = self._mesh()
        data_dims = [n for n in mesh.dim_names if n in _DATA_DIMS]
        return shard_dataloader(self._loader, meshes=[mesh], shard_dims=data_dims[0] if data_dims else None)

    def dense_program(self, mode=None):
        """The text of the dense program (global shapes) last built for `mode` (default: the current mode)."""
        return self._built(mode).dense_text

    def dist_main_program(self, mode=None):
        """The text of this rank's program last built for `mode` (default: the current mode)."""
        return self._built(mode).local_text

    def _built(self, mode):
        mode = mode or self._mode
        built = self._latest.get(mode) if self._latest else None
        if built is None:
            raise RuntimeError(f"DistModel: no program is built for mode '{mode}' yet; call the model once")
        return built

    # ---- calling ----
    def __call__(self, *args):
        if self._mode is None:
            raise ValueError("DistModel: call train(), eval() or predict() first")
        feeds = []
        for a in args:
            if isinstance(a, (list, tuple)):
                feeds.extend(a)
            else:
                feeds.append(a)
        for i, f in enumerate(feeds):
            if not isinstance(f, Tensor):
                raise TypeError(f"DistModel: input {i} is a {type(f).__name__}; the inputs of a DistModel are "
                                "Tensors (or lists of them)")
        if self._mode != "predict" and len(feeds) < 2:
            raise ValueError(f"DistModel: in {self._mode} mode the call takes the inputs and then the label; got "
                             f"{len(feeds)} tensor(s)")
        _ensure_env()
        if self._strategy.pipeline.enable and self._mode != "predict":
            return self._run_micro_batches(feeds)
        built = self._program_for(feeds)
        if self._mode == "predict":
            return built.run(self, feeds)
        loss, grads = built.run(self, feeds)
        if self._mode == "train":
            built.step(self, grads)
        return loss

    def _program_for(self, feeds):
        key = (self._mode, tuple((tuple(f.shape), str(f.dtype), _attr_key(f)) for f in feeds))
        built = self._programs.get(key)
        if built is None:
            built = self._programs[key] = self._build(self._mode, feeds)
        self._latest = dict(self._latest or {}, **{self._mode: built})
        return built

    def _run_micro_batches(self, feeds):
        """Pipeline parallel: the batch in micro-batches (accumulate_steps of
        them, else of micro_batch_size rows), each through the per-rank
        program (its stages exchange activations and gradients by
        send/recv); the loss and the gradients are the micro-batches' mean,
        which is the whole batch's (mean losses of equal micro-batches),
        then one optimizer step."""
        pipe = self._strategy.pipeline
        batch = feeds[0].shape[0] if len(feeds[0].shape) else 0
        k = pipe.accumulate_steps if pipe.accumulate_steps > 1 else max(1, batch // pipe.micro_batch_size)
        for i, f in enumerate(feeds):
            if _C.dist.is_dist(f) or not len(f.shape) or f.shape[0] % k:
                raise ValueError(f"DistModel: pipeline parallel splits each input into {k} micro-batches along "
                                 f"dim 0, but input {i} has shape {list(f.shape)}"
                                 + (" and is distributed" if _C.dist.is_dist(f) else ""))
        step = feeds[0].shape[0] // k
        micro = [[f[m * step:(m + 1) * step] for f in feeds] for m in range(k)]
        built = self._program_for(micro[0])  # every micro-batch has the same shapes
        losses, total = [], None
        if self._mode != "train":
            results = [built.run(self, mb) for mb in micro]
        else:
            results = built.run_schedule(self, micro, *self._stage(), pipe.schedule_mode)
        for loss, grads in results:
            losses.append(loss)
            total = grads if total is None else [a + b for a, b in zip(total, grads)]
        if self._mode == "train":
            built.step(self, [g * (1.0 / k) for g in total])
        return np.asarray(np.mean(np.stack(losses), axis=0), dtype=losses[0].dtype)

    # ---- building ----
    def _mesh(self):
        for _, p in self._state():
            if _C.dist.is_dist(p):
                return ProcessMesh._from_core(_C.dist.dist_attr(p)[0])
        raise ValueError("dist.to_static: the layer has no distributed parameter, so there is no mesh; mark "
                         "parameters with dist.shard_tensor or dist.shard_layer first")

    def _state(self):
        """(state_dict name, tensor) of every parameter and buffer, once each."""
        out, seen = [], set()
        for prefix, layer in self._layer.named_sublayers(include_self=True):
            for store in (layer._parameters, layer._buffers):
                for k, t in store.items():
                    if t is not None and id(t) not in seen:
                        seen.add(id(t))
                        out.append((prefix + ("." if prefix else "") + k, t))
        return out

    def _input_attr(self, feed, mesh_core):
        """The placement of one input: its own, or the data placement on the mesh."""
        if _C.dist.is_dist(feed):
            mesh, placements = _C.dist.dist_attr(feed)
            return (mesh, placements)
        if self._strategy.pipeline.enable:
            return None  # the whole batch on every rank; each stage's ops read it where they run
        names = mesh_core[2]
        placements = [_REPLICATE] * len(names)
        for d, name in enumerate(names):
            if name in _DATA_DIMS and len(feed.shape) > 0:
                placements[d] = Shard(0)._to_core()
                break
        return (mesh_core, placements)

    def _build(self, mode, feeds):
        mesh_core = self._mesh()._core()
        state = self._state()
        device = _C.get_device()
        n_inputs = len(feeds) if mode == "predict" else len(feeds) - 1
        # Dense stand-ins (global shapes) for the distributed parameters.
        stand_ins, param_attrs, trainable = {}, {}, []
        for name, t in state:
            if _C.dist.is_dist(t):
                stand_ins[name] = zeros(list(t.shape), t.dtype)
                param_attrs[name] = tuple(_C.dist.dist_attr(t))
            else:
                stand_ins[name] = Tensor(t)
            if not t.stop_gradient:
                trainable.append(name)
        layer, loss_fn = self._layer, self._loss
        slots = []
        for prefix, sub in layer.named_sublayers(include_self=True):
            for store in (sub._parameters, sub._buffers):
                for k, t in store.items():
                    if t is not None:
                        slots.append((store, k, t, prefix + ("." if prefix else "") + k))
        by_id = {id(t): stand_ins[name] for name, t in state}
        marks = []  # (symbolic tensor, placement): dist.reshard calls of the forward
        import oar.distributed as dist_module
        real_reshard = dist_module.reshard

        def mark(t, mesh, placements):
            if _C.dist.is_dist(t):
                return real_reshard(t, mesh, placements)
            marks.append((t, (mesh._core(), to_core(placements, "reshard"))))
            return t

        def traced(inputs):
            for store, k, t, _ in slots:
                store[k] = by_id[id(t)]
            dist_module.reshard = mark
            try:
                outs = layer(*inputs[:n_inputs])
                if mode != "predict":
                    outs = loss_fn(outs, *inputs[n_inputs:])
            finally:
                dist_module.reshard = real_reshard
                for store, k, t, _ in slots:
                    store[k] = t
            if isinstance(outs, Tensor):
                self._structure = "tensor"
                outs = [outs]
            else:
                self._structure = type(outs).__name__
                outs = list(outs)
            self._n_outs = len(outs)
            return outs + [t for t, _ in marks]

        specs = [InputSpec(list(f.shape), f.dtype, f"x{i}" if i < n_inputs else f"label{i - n_inputs}")._to_ir()
                 for i, f in enumerate(feeds)]
        with no_grad():
            trace = _C.ir.trace(traced, specs, stand_ins, device)
        dense = trace.program
        _C.ir.default_pipeline(dense, device)
        if mode != "predict" and self._n_outs != 1:
            raise ValueError(f"dist.to_static: the loss gave {self._n_outs} values; expected one scalar")
        grads, forward_ops = [], None
        pipeline = self._strategy.pipeline.enable
        if mode == "train":
            wrt = [n for n in trainable if n in dense.parameter_names]
            grads, forward_ops = _C.ir.append_backward(dense, 0, wrt)
            if not pipeline:  # (the schedules split the program after forward_ops: keep the ops where they are)
                _C.ir.default_pipeline(dense, device)
                forward_ops = None
        replicated = (mesh_core, [_REPLICATE] * len(mesh_core[2]))
        if pipeline:  # the loss goes to every rank of every stage
            ids = sorted({i for a in param_attrs.values() for i in a[0][1]})
            everyone = (([len(ids)], ids, ["pp"]), [_REPLICATE])
        n_outs = len(dense.output_names)
        out_attrs = [None] * n_outs
        if mode != "predict":
            out_attrs[0] = everyone if pipeline else replicated  # every rank returns the whole loss
        for i, name in enumerate(grads):
            out_attrs[n_outs - len(grads) + i] = param_attrs.get(name, replicated)
        mark_attrs = {self._n_outs + i: attr for i, (_, attr) in enumerate(marks)}
        in_attrs = [self._input_attr(f, mesh_core) for f in feeds]
        rank = _C.dist._global_rank()
        local, local_attrs, shapes, fwd, bwd = _C.ir.dist_partition(
            dense, rank, in_attrs, param_attrs, out_attrs, device, mark_attrs, pipeline, forward_ops)
        built = _Built(mode, dense, local, in_attrs, local_attrs, shapes, grads, self._structure, device)
        if fwd is not None:
            built.split(fwd, bwd, device)
        if self._print or _log_info():
            print(f"// dist.to_static: dense program ({mode})\n{built.dense_text}\n"
                  f"// dist.to_static: program of rank {rank} ({mode})\n{built.local_text}", file=sys.stderr,
                  flush=True)
        return built

    def _stage(self):
        """(this rank's pipeline stage, the number of stages): the stages are
        the parameters' meshes in the order the layer holds them."""
        meshes, rank = [], _C.dist._global_rank()
        for _, p in self._state():
            if _C.dist.is_dist(p):
                ids = tuple(_C.dist.dist_attr(p)[0][1])
                if ids not in meshes:
                    meshes.append(ids)
        mine = [i for i, ids in enumerate(meshes) if rank in ids]
        return (mine[0] if mine else len(meshes) - 1), len(meshes)


class _Built:
    """One mode's programs for one input signature, and how to run them."""

    def __init__(self, mode, dense, local, in_attrs, out_attrs, out_shapes, grads, structure, device):
        self.mode, self.grads, self.structure = mode, grads, structure
        self.in_attrs, self.out_attrs, self.out_shapes = in_attrs, out_attrs, out_shapes
        self.dense_text, self.local_text = str(dense), str(local)
        self.parameter_names = list(local.parameter_names)
        self.executor = _C.ir.Executor(local, device)
        self.forward = self.backward = None

    def split(self, forward, backward, device):
        """The program's forward and backward parts (pipeline schedules)."""
        self.forward = _C.ir.Executor(forward, device)
        self.backward = _C.ir.Executor(backward, device)
        self.local_text += f"\n// forward part\n{forward}\n// backward part\n{backward}"

    def _local_inputs(self, feeds):
        out = []
        for f, attr in zip(feeds, self.in_attrs):
            if _C.dist.is_dist(f):
                out.append(_C.dist.local_value(f))
            elif attr is None:
                out.append(f)
            else:  # every rank has the whole batch: keep this rank's piece (a local slice)
                out.append(_C.dist.local_value(_C.dist.shard_tensor(f, attr[0], attr[1])))
        return out

    def _bind(self, model, executors):
        state = dict(model._state())
        params = {}
        for name in self.parameter_names:
            t = state[name]
            params[name] = _C.dist.local_value(t) if _C.dist.is_dist(t) else Tensor(t)
        for e in executors:
            e.set_parameters(params)

    def run_schedule(self, model, micro, stage, stages, mode):
        """Pipeline schedules over the split program: "FThenB" runs every
        micro-batch's forward, then every backward; "1F1B" runs
        stages - stage - 1 forwards, then alternates one forward and one
        backward, then the remaining backwards (Megatron's 1F1B). The
        transfers pair up in the same order on both sides of each stage
        boundary, so either schedule completes; the micro-batches' results
        are returned in order. Without a split (no backward): one by one."""
        if self.forward is None:
            return [self.run(model, mb) for mb in micro]
        self._bind(model, [self.forward, self.backward])
        inputs = [self._local_inputs(mb) for mb in micro]
        carried, results = {}, {}

        def forward(m):
            carried[m] = self.forward.run(inputs[m])

        def backward(m):
            outs = self.backward.run(inputs[m] + list(carried.pop(m)))
            results[m] = (np.asarray(outs[0].numpy()), outs[len(outs) - len(self.grads):])

        k = len(micro)
        if mode == "FThenB":
            order = [("F", m) for m in range(k)] + [("B", m) for m in range(k)]
        else:
            warmup = min(stages - stage - 1, k)
            order = [("F", m) for m in range(warmup)]
            for m in range(warmup, k):
                order += [("F", m), ("B", m - warmup)]
            order += [("B", m) for m in range(k - warmup, k)]
        for kind, m in order:
            (forward if kind == "F" else backward)(m)
        self.schedule = order
        return [results[m] for m in range(k)]

    def run(self, model, feeds):
        """Predict: the outputs; train and eval: (the loss, the gradients' local pieces)."""
        locals_ = self._local_inputs(feeds)
        self._bind(model, [self.executor])
        outs = self.executor.run(locals_)
        if self.mode == "predict":
            wrapped = [o if a is None else _C.dist.dtensor_from_local(o, a[0], a[1], list(s))
                       for o, a, s in zip(outs, self.out_attrs, self.out_shapes)]
            if self.structure == "tensor":
                return wrapped[0]
            return tuple(wrapped) if self.structure == "tuple" else wrapped
        return np.asarray(outs[0].numpy()), outs[len(outs) - len(self.grads):]

    def step(self, model, grads):
        """optimizer.step() on the distributed parameters with the program's gradients."""
        state = dict(model._state())
        with no_grad():
            for name, g, attr, shape in zip(self.grads, grads, self.out_attrs[-len(self.grads):],
                                            self.out_shapes[-len(self.grads):]):
                p = state[name]
                if _C.dist.is_dist(p):
                    g = _C.dist.dtensor_from_local(g, attr[0], attr[1], list(shape))
                p._set_grad(g)
            model._optimizer.step()
            model._optimizer.clear_grad()


def to_static(layer, loader=None, loss=None, optimizer=None, strategy=None, input_spec=None, print_program=False):
    """paddle.distributed.to_static: the Layer (whose parameters are
    distributed tensors) as a DistModel running one static program per rank.
    `loader` is the DataLoader (or dist.shard_dataloader) the model is fed
    from; `loss` a Layer or callable loss(outputs, label); `optimizer` an
    oar optimizer over the layer's parameters; `strategy` a dist.Strategy.
    print_program=True (or OAR_LOG_LEVEL=info) prints the dense program and
    this rank's program when they are built."""
    return DistModel(layer, loader, loss, optimizer, strategy, input_spec=input_spec, print_program=print_program)
