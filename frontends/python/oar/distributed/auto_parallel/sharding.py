"""Strategies over distributed tensors (Paddle's names and semantics):
shard_layer (place a layer's parameters), shard_optimizer with
ShardingStage1/2/3 (ZeRO: optimizer state / + gradients / + parameters
sharded along one mesh dim), shard_dataloader (feed batches as Shard(0)
along a mesh dim).

Note [Sharded optimizer]
The wrapped optimizer's own update math runs on distributed tensors, so the
SPMD rules place every intermediate: a moment created by full_like(param)
is placed like the parameter (stage 0: DP, TP), and `m * beta1 + g * (1 -
beta1)` with a sharded `m` and a replicated `g` is sharded (the rule slices
g locally, no communication). A stage picks, per parameter, the sharded
placement: the stage's mesh dim becomes Shard(d) on the first tensor dim d
not already sharded on another mesh dim (Paddle's get_placement_with_sharding).
- Stage 1: moments sharded; the updated parameter comes out sharded and is
  resharded back to the parameter's placements (an all_gather).
- Stage 2: also the gradient: each parameter's .grad is placed sharded
  (_C.dist._set_grad_placements, AutogradMeta::grad_placements; Note
  [Gradients of distributed tensors] in engine.cpp), so backward turns the
  Partial gradient into a reduce_scatter instead of an all_reduce, and
  only this rank's piece is kept.
- Stage 3: also the parameter: it is stored sharded; a forward pre-hook on
  its layer swaps in the gathered value (dist.reshard, differentiable) and a
  post-hook swaps the sharded leaf back. The reshard's VJP takes the
  gradient back to the sharded placement (a reduce_scatter of the Partial
  gradient), so the gradient, the moments and the update are all sharded and
  the parameter never needs gathering after the step. Without the layers
  (shard_optimizer(..., layers=None), Paddle's signature) the sharded
  parameter goes into its ops as it is and their SPMD rules reshard it:
  the same values, the communication the rules choose.
"""
from ... import _C
from ...autograd import no_grad
from ...framework import Tensor
from ...nn.layer import Layer
from ...nn.parameter import Parameter
from . import api as _api
from .placement import Partial, Replicate, Shard, to_core


def _shard_dim(placement):
    return placement.get_dim() if hasattr(placement, "get_dim") else placement.dim


def _is_dist(t):
    return isinstance(t, Tensor) and t.is_dist()


def _as_parameter(value, like):
    """`value` (a distributed tensor) as a Parameter carrying `like`'s attributes."""
    if isinstance(value, Parameter):
        return value
    p = Parameter._from_tensor(value, like)
    for attr in ("regularizer",):
        if hasattr(like, attr):
            setattr(p, attr, getattr(like, attr))
    return p


def _replicated(mesh):
    return [Replicate() for _ in range(mesh.ndim)]


# ---------------------------------------------------------------- shard_layer
def shard_layer(layer, process_mesh, shard_fn=None, input_fn=None, output_fn=None):
    """Paddle's shard_layer: calls shard_fn(name, sublayer, process_mesh) on
    every sublayer (the layer itself included, name ""), then places every
    parameter and buffer it left dense as Replicate() on every mesh dim.
    input_fn(inputs, mesh) / output_fn(outputs, mesh) become forward pre /
    post hooks of `layer`. Returns `layer`, its parameters distributed."""
    from .process_mesh import ProcessMesh
    if process_mesh is None:
        raise ValueError("shard_layer: the argument `process_mesh` cannot be None")
    if not isinstance(process_mesh, ProcessMesh):
        raise ValueError(f"shard_layer: `process_mesh` must be a dist.ProcessMesh, found {type(process_mesh).__name__}")
    if not isinstance(layer, Layer):
        raise ValueError(f"shard_layer: `layer` must be an nn.Layer, found {type(layer).__name__}")
    for name, sub in layer.named_sublayers(include_self=True):
        if shard_fn is not None:
            before = dict(sub._parameters)
            shard_fn(name, sub, process_mesh)
            _reregister_parameters(sub, before)
        _replicate_rest(sub, process_mesh)
    if input_fn is not None:
        layer.register_forward_pre_hook(lambda _, inputs: input_fn(inputs, process_mesh))
    if output_fn is not None:
        layer.register_forward_post_hook(lambda _, inputs, outputs: output_fn(outputs, process_mesh))
    return layer


def _reregister_parameters(sub, before):
    """`layer.weight = dist.shard_tensor(layer.weight, ...)` in a shard_fn:
    when the result is not a Parameter, nn.Layer stores it as a plain
    attribute; put it back among the parameters."""
    for name, old in before.items():
        if old is None or name in sub._parameters:
            continue
        value = sub.__dict__.get(name)
        if isinstance(value, Tensor):
            del sub.__dict__[name]
            sub.add_parameter(name, _as_parameter(value, old))


def _replicate_rest(sub, mesh):
    for key, param in list(sub._parameters.items()):
        if param is not None and not param.is_dist():
            sub.add_parameter(key, _as_parameter(_api.shard_tensor(param, mesh, _replicated(mesh)), param))
    for key, buf in list(sub._buffers.items()):
        if buf is not None and not buf.is_dist():
            sub.register_buffer(key, _api.shard_tensor(buf, mesh, _replicated(mesh)),
                                persistable=key not in sub._non_persistable_buffer_names)


# ------------------------------------------------------------ sharding stages
class _ShardingStageBase:
    """sharding_mesh_dim: the mesh dim (name or index) the optimizer state is
    split along; mesh: the mesh of parameters that are still dense (they are
    placed Replicate() on it first)."""

    stage = 0

    def __init__(self, sharding_mesh_dim=0, mesh=None):
        self._sharding_mesh_dim = sharding_mesh_dim
        self._mesh = mesh

    def _mesh_axis(self, mesh):
        d = self._sharding_mesh_dim
        if isinstance(d, str):
            if d not in list(mesh.dim_names):
                raise ValueError(f"{type(self).__name__}: the mesh has dims {list(mesh.dim_names)}, not '{d}'")
            return list(mesh.dim_names).index(d)
        if not 0 <= int(d) < mesh.ndim:
            raise ValueError(f"{type(self).__name__}: sharding_mesh_dim {d} is outside a {mesh.ndim}-d mesh")
        return int(d)

    def sharded_placements(self, param):
        """param's placements with the sharding mesh dim turned into Shard(d),
        d the first tensor dim not sharded on another mesh dim; param's own
        placements when it cannot be split (a scalar, or every dim taken)."""
        mesh, placements = param.process_mesh, list(param.placements)
        axis = self._mesh_axis(mesh)
        if isinstance(placements[axis], Shard):
            return placements
        if isinstance(placements[axis], Partial):
            raise ValueError(f"{type(self).__name__}: parameter {getattr(param, 'name', None)} is Partial on the "
                             f"sharding mesh dim {axis} ({placements}); expected Replicate()")
        taken = {_shard_dim(p) for p in placements if isinstance(p, Shard)}
        for d in range(len(param.shape)):
            if d not in taken and param.shape[d] > 1:
                placements[axis] = Shard(d)
                return placements
        return placements

    def __call__(self, key, param, tensor):
        """Paddle's shard_fn protocol: the placement of accumulator `key`
        (or "grad") of `param`."""
        if not param.is_dist() or self.stage == 0:
            return tensor
        if key == "grad" and self.stage < 2:
            return tensor
        target = self.sharded_placements(param)
        if _is_dist(tensor):
            if list(tensor.placements) == target and tensor.process_mesh == param.process_mesh:
                return tensor
            return _api.reshard(tensor, param.process_mesh, target)
        return _api.shard_tensor(tensor, param.process_mesh, target)


class _ShardingStage0(_ShardingStageBase):
    stage = 0


class ShardingStage1(_ShardingStageBase):
    """ZeRO-1: optimizer state sharded along `sharding_mesh_dim`."""
    stage = 1


class ShardingStage2(_ShardingStageBase):
    """ZeRO-2: optimizer state and gradients sharded along `sharding_mesh_dim`."""
    stage = 2


class ShardingStage3(_ShardingStageBase):
    """ZeRO-3: optimizer state, gradients and parameters sharded along
    `sharding_mesh_dim`; parameters are gathered for use."""
    stage = 3


# ------------------------------------------------------------ shard_optimizer
class _ShardOptimizer:
    """The optimizer seen through a sharding stage (Note [Sharded optimizer]).
    Anything else (clear_grad, get_lr, set_lr, state_dict...) is the inner
    optimizer's. gradient_accumulation_steps is kept for Paddle's signature
    (its static-mode gradient merge); in eager mode the caller's loop
    accumulates, as backward() adds into .grad."""

    def __init__(self, optimizer, shard_fn=None, gradient_accumulation_steps=1):
        if optimizer is None:
            raise ValueError("shard_optimizer: the argument `optimizer` cannot be None")
        if not hasattr(optimizer, "_update") or not hasattr(optimizer, "_accumulators"):
            raise ValueError(f"shard_optimizer: expected an oar.optimizer.Optimizer, found {type(optimizer).__name__}")
        if shard_fn is None:
            shard_fn = _ShardingStage0()
        if not isinstance(shard_fn, _ShardingStageBase):
            raise ValueError("shard_optimizer: shard_fn must be dist.ShardingStage1, ShardingStage2 or ShardingStage3, "
                             f"found {type(shard_fn).__name__}")
        self.__dict__["_inner_opt"] = optimizer
        self.__dict__["_shard_fn"] = shard_fn
        self.__dict__["gradient_accumulation_steps"] = int(gradient_accumulation_steps)
        self.__dict__["_sharded_accs"] = set()
        params = optimizer._parameter_list
        if shard_fn._mesh is not None:
            self._distribute_dense(params, shard_fn._mesh)
        for p in params:
            if not p.is_dist():
                raise ValueError(f"shard_optimizer: parameter {getattr(p, 'name', None)} of shape {list(p.shape)} "
                                 "is not distributed; place the layer with dist.shard_layer or give the stage a mesh")
        if shard_fn.stage >= 1:
            for p in params:
                shard_fn._mesh_axis(p.process_mesh)  # the stage's mesh dim exists on every parameter's mesh
        if shard_fn.stage == 2:
            for p in params:  # backward places the gradient sharded: a reduce_scatter, not an all_reduce
                _C.dist._set_grad_placements(p, to_core(shard_fn.sharded_placements(p), "ShardingStage2"))
        if shard_fn.stage == 3:
            self._shard_parameters(params)

    def _distribute_dense(self, params, mesh):
        for p in params:
            if not p.is_dist():
                p._set_data_(_api.shard_tensor(p.detach(), mesh, _replicated(mesh)))

    # ---- stage 3: parameters sharded, gathered for use ----
    def _shard_parameters(self, params):
        owned = {id(p) for p in params}
        self.__dict__["_gathered_placements"] = {}
        with no_grad():
            for p in params:
                self._gathered_placements[id(p)] = list(p.placements)
                target = self._shard_fn.sharded_placements(p)
                if target != list(p.placements):
                    p._set_data_(_api.reshard(p.detach(), p.process_mesh, target))
        for layer in self._shard_fn.__dict__.get("_layers") or ():
            for sub in layer.sublayers(include_self=True):
                names = [n for n, p in sub._parameters.items() if p is not None and id(p) in owned]
                if names:
                    sub.register_forward_pre_hook(self._gather_hook(names))
                    sub.register_forward_post_hook(self._restore_hook(names))

    def _gather_hook(self, names):
        def gather(sub, inputs):
            saved = {}
            for n in names:
                p = sub._parameters[n]
                want = self._gathered_placements.get(id(p))
                if want is None or not _is_dist(p):
                    continue  # a stand-in (dist.to_static traces with dense ones): its program places it
                saved[n] = p
                sub._parameters[n] = _api.reshard(p, p.process_mesh, want)
            sub.__dict__["_stage3_saved"] = saved
            return None
        return gather

    def _restore_hook(self, names):
        def restore(sub, inputs, outputs):
            saved = sub.__dict__.pop("_stage3_saved", {})
            for n, p in saved.items():
                sub._parameters[n] = p
            return None
        return restore

    # ---- the step ----
    def _shard_accumulators(self, p):
        inner, fn = self._inner_opt, self._shard_fn
        if fn.stage == 0 or id(p) in self._sharded_accs:
            return
        for name in ("moment1", "moment2", "moment2_max", "velocity"):
            key = (name, id(p))
            if key in inner._accumulators or name in self._acc_names():
                inner._accumulators[key] = fn(name, p, inner._acc(name, p))
        self._sharded_accs.add(id(p))

    def _acc_names(self):
        inner = self._inner_opt
        if hasattr(inner, "_beta1"):
            return ("moment1", "moment2") + (("moment2_max",) if getattr(inner, "_amsgrad", False) else ())
        if hasattr(inner, "_momentum"):
            return ("velocity",)
        return ()

    @no_grad()
    def step(self):
        # The inner optimizer's step with per-parameter hooks: the stage's
        # state and gradient placement before each update, the parameter's
        # own placement after it.
        self._inner_opt._step(before=self._before_update, after=self._after_update)

    def _before_update(self, p, g):
        self._shard_accumulators(p)
        return self._shard_fn("grad", p, g)

    def _after_update(self, p, new):
        if new.is_dist() and (list(new.placements) != list(p.placements) or new.process_mesh != p.process_mesh):
            new = _api.reshard(new, p.process_mesh, list(p.placements))
        return new

    def minimize(self, loss, startup_program=None, parameters=None, no_grad_set=None):
        loss.backward()
        self.step()
        return None, None

    def __getattr__(self, item):
        return getattr(self.__dict__["_inner_opt"], item)

    def __setattr__(self, item, value):
        if item in self.__dict__:
            self.__dict__[item] = value
        else:
            setattr(self._inner_opt, item, value)


def shard_optimizer(optimizer, shard_fn=None, gradient_accumulation_steps=1, layers=None):
    """Paddle's shard_optimizer: the optimizer's state placed like each
    parameter (no shard_fn), or sharded by dist.ShardingStage1/2/3 (Note
    [Sharded optimizer]). ShardingStage3 needs the model (`layers`: a Layer or
    a list) to gather parameters around its forward."""
    if layers is not None and shard_fn is not None:
        shard_fn._layers = [layers] if isinstance(layers, Layer) else list(layers)
    return _ShardOptimizer(optimizer, shard_fn, gradient_accumulation_steps)


# ----------------------------------------------------------- shard_dataloader
class ShardDataloader:
    """Batches of `dataloader` as distributed tensors. Every rank reads the
    same global batch and keeps its piece (Note [Sharded batches]), so the
    batches equal one process's exactly; with is_dataset_splitted the loader
    already yields this rank's piece and it is wrapped as is."""

    # Note [Sharded batches]: Paddle splits the dataset with a
    # DistributedBatchSampler (each rank reads batch_size / degree samples,
    # from its own contiguous part of the dataset), which changes which
    # samples form a global batch. Reading the global batch on every rank
    # costs the I/O of one process per rank (small at this scale) and keeps a
    # sharded run's losses equal to the single-process run's.

    def __init__(self, dataloader, meshes, input_keys=None, shard_dims=None, is_dataset_splitted=False):
        from .process_mesh import ProcessMesh
        if meshes is None or (isinstance(meshes, (list, tuple)) and not meshes):
            raise ValueError("shard_dataloader: `meshes` must be a ProcessMesh or a non-empty list of them")
        self._meshes = list(meshes) if isinstance(meshes, (list, tuple)) else [meshes]
        for m in self._meshes:
            if not isinstance(m, ProcessMesh):
                raise ValueError(f"shard_dataloader: expected ProcessMesh in `meshes`, found {type(m).__name__}")
        if is_dataset_splitted and shard_dims is None:
            raise ValueError("shard_dataloader: shard_dims must be set when is_dataset_splitted is True")
        if isinstance(shard_dims, (list, tuple)):
            if len(shard_dims) != len(self._meshes):
                raise ValueError(f"shard_dataloader: shard_dims has {len(shard_dims)} entries but there are "
                                 f"{len(self._meshes)} meshes")
            self._shard_dims = list(shard_dims)
        else:
            self._shard_dims = [shard_dims] * len(self._meshes)
        self._dataloader = dataloader
        self._input_keys = input_keys
        self._splitted = bool(is_dataset_splitted)
        self.batch_size = getattr(dataloader, "batch_size", None)
        self._iter = None

    def _placements(self, index):
        i = 0 if len(self._meshes) == 1 else index
        if i >= len(self._meshes):
            raise ValueError(f"shard_dataloader: the batch has more inputs than the {len(self._meshes)} meshes given")
        mesh, dim = self._meshes[i], self._shard_dims[i]
        placements = _replicated(mesh)
        if dim is not None:
            names = list(mesh.dim_names)
            if isinstance(dim, str):
                if dim not in names:
                    raise ValueError(f"shard_dataloader: shard_dims '{dim}' is not a dim of the mesh {names}")
                dim = names.index(dim)
            placements[int(dim)] = Shard(0)
        return mesh, placements

    def _place(self, t, index):
        if not isinstance(t, Tensor):
            return t
        mesh, placements = self._placements(index)
        if self._splitted:
            return _api.dtensor_from_local(t, mesh, placements)
        return _api.shard_tensor(t, mesh, placements)

    def _get_batch(self, batch):
        if isinstance(batch, dict):
            keys = list(batch.keys()) if self._input_keys is None else list(self._input_keys)
            return {k: (self._place(batch[k], i) if k in keys else batch[k])
                    for i, k in enumerate(keys)} | {k: v for k, v in batch.items() if k not in keys}
        if isinstance(batch, (list, tuple)):
            out = []
            for i, item in enumerate(batch):
                if isinstance(item, (list, tuple)):
                    out.append([self._place(t, i) for t in item])
                else:
                    out.append(self._place(item, i))
            return out
        return self._place(batch, 0)

    def __len__(self):
        return len(self._dataloader)

    def __iter__(self):
        self._iter = None
        return self

    def __next__(self):
        if self._iter is None:
            self._iter = iter(self._dataloader)
        return self._get_batch(next(self._iter))

    def __call__(self):
        self._iter = None
        return self


def shard_dataloader(dataloader, meshes, input_keys=None, shard_dims=None, is_dataset_splitted=False,
                     dense_tensor_idx=None):
    """Paddle's shard_dataloader: each input of a batch becomes a
    distributed tensor on its mesh (meshes[i], or the one mesh for all),
    Shard(0) (the batch dim) on the mesh dim shard_dims names (a name or an
    index; per mesh when a list), Replicate() elsewhere; shard_dims=None
    replicates the batch."""
    if dense_tensor_idx is not None:
        raise NotImplementedError("shard_dataloader: dense_tensor_idx is not supported")
    return ShardDataloader(dataloader, meshes, input_keys, shard_dims, is_dataset_splitted)
