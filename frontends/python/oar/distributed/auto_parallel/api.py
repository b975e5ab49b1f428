"""Paddle's semi-auto parallel API over the core's distributed tensor
(oar/dist_tensor.h, _C.dist): shard_tensor, dtensor_from_fn,
dtensor_from_local, reshard, unshard_dtensor, and the Tensor members of a
distributed tensor (process_mesh, placements, is_dist(), _local_value()).

A distributed tensor is an oar.Tensor whose shape and dtype are the GLOBAL
ones; its data is this rank's piece (_local_value()). Ops on it run their
SPMD rule (Note [Distributed dispatch] in core/src/dist/dispatch.cpp).
docs/auto_parallel.md is the user page."""
import numpy as np

from ... import _C
from ...framework import Tensor
from .. import env as _env
from ..group import STATE
from .placement import Placement, from_core, to_core
from .process_mesh import ProcessMesh

__all__ = ["shard_tensor", "dtensor_from_fn", "dtensor_from_local", "reshard", "unshard_dtensor", "is_dist"]

_env_store = [None]  # the store _C.dist's collectives were pointed at


def _ensure_env():
    """Joins the job on first use when the launcher started several ranks
    (Paddle's auto_parallel needs no init_parallel_env call), and points the
    core's reshard collectives at the default group's store and device."""
    from .. import parallel
    if not STATE.initialized:
        if int(_env.detect_env()["world_size"]) <= 1:
            return
        parallel.init_parallel_env()
    if _env_store[0] is not STATE.store:
        env = STATE.env
        _C.dist._set_collective_env(STATE.store, STATE.device, int(env["rank"]), int(env["world_size"]),
                                    float(_env.collective_timeout()))
        _env_store[0] = STATE.store


def _check_mesh(mesh, api):
    if not isinstance(mesh, ProcessMesh):
        raise TypeError(f"{api}: mesh must be a dist.ProcessMesh, not {type(mesh).__name__}")
    return mesh._core()


def _as_tensor(data, dtype, place, api):
    from ... import creation
    if isinstance(data, Tensor):
        t = data
        if dtype is not None:
            from ...framework import convert_dtype
            if t.dtype != convert_dtype(dtype):
                t = t.astype(dtype)
        return t
    return creation.to_tensor(data, dtype=dtype, place=place)


def _is_parameter(t):
    from ...nn.parameter import Parameter
    return isinstance(t, Parameter)


def _like_parameter(out, data):
    """A Parameter `data` stays one (a Layer keeps registering it)."""
    from ...nn.parameter import Parameter
    p = Parameter._from_tensor(out, like=data)
    for attr in ("regularizer", "persistable"):
        if hasattr(data, attr):
            setattr(p, attr, getattr(data, attr))
    return p


def shard_tensor(data, mesh, placements, dtype=None, place=None, stop_gradient=None):
    """A distributed tensor from `data` (a Tensor, ndarray or list: the same
    full value on every rank): each rank keeps its piece. A Parameter stays
    a Parameter; stop_gradient defaults to data's (True for non-tensors)."""
    core_mesh = _check_mesh(mesh, "shard_tensor")
    core_placements = to_core(placements, "shard_tensor")
    _ensure_env()
    if stop_gradient is None:
        stop_gradient = getattr(data, "stop_gradient", True)
    t = _as_tensor(data, dtype, place, "shard_tensor")
    out = _C.dist.shard_tensor(t, core_mesh, core_placements)
    if _is_parameter(data):
        out = _like_parameter(out, data)
    if out.is_leaf or stop_gradient:
        out.stop_gradient = stop_gradient
    return out


def dtensor_from_fn(fn, mesh, placements, *args, **kwargs):
    """shard_tensor(fn(*args, **kwargs), mesh, placements)."""
    return shard_tensor(fn(*args, **kwargs), mesh, placements)


def dtensor_from_local(local_tensor, mesh, placements, global_shape=None):
    """A distributed tensor whose piece on this rank is `local_tensor`
    (no communication). The global shape defaults to the local one with
    each sharded dim times its mesh dim's size (exact for even shards)."""
    core_mesh = _check_mesh(mesh, "dtensor_from_local")
    core_placements = to_core(placements, "dtensor_from_local")
    _ensure_env()
    if not isinstance(local_tensor, Tensor):
        local_tensor = _as_tensor(local_tensor, None, None, "dtensor_from_local")
    shape = None if global_shape is None else [int(s) for s in global_shape]
    return _C.dist.dtensor_from_local(local_tensor, core_mesh, core_placements, shape)


def reshard(dist_tensor, mesh, placements):
    """The same global value placed as `placements` on `mesh` (collectives
    among the mesh's ranks; another mesh: send/recv). Differentiable."""
    core_mesh = _check_mesh(mesh, "reshard")
    core_placements = to_core(placements, "reshard")
    if not isinstance(dist_tensor, Tensor) or not _C.dist.is_dist(dist_tensor):
        raise ValueError(f"reshard: the input is not a distributed tensor (shape "
                         f"{getattr(dist_tensor, 'shape', '?')}); make one with dist.shard_tensor first")
    _ensure_env()
    return _C.dist.reshard(dist_tensor, core_mesh, core_placements)


def unshard_dtensor(dist_tensor):
    """The whole value as an ordinary tensor on every rank of the mesh (a
    Parameter stays a Parameter)."""
    if not isinstance(dist_tensor, Tensor) or not _C.dist.is_dist(dist_tensor):
        raise ValueError("unshard_dtensor: the input is not a distributed tensor")
    _ensure_env()
    out = _C.dist.unshard(dist_tensor)
    if _is_parameter(dist_tensor):
        return _like_parameter(out, dist_tensor)
    return out


def is_dist(t):
    return isinstance(t, Tensor) and _C.dist.is_dist(t)


# ---- Tensor members ----

def _process_mesh(t):
    if not _C.dist.is_dist(t):
        return None
    return ProcessMesh._from_core(_C.dist.dist_attr(t)[0])


def _placements(t):
    if not _C.dist.is_dist(t):
        return None
    return from_core(_C.dist.dist_attr(t)[1])


def _local_value(t):
    if not _C.dist.is_dist(t):
        raise ValueError(f"_local_value: the tensor of shape {list(t.shape)} is not a distributed tensor")
    return _C.dist.local_value(t)


_dense_repr = None
_dense_numpy = _C.Tensor.numpy


def _repr(t):
    if not t._defined or not _C.dist.is_dist(t):
        return _dense_repr(t)
    mesh, placements = _C.dist.dist_attr(t)
    local = _C.dist.local_value(t)
    body = np.array2string(_dense_numpy(local), separator=", ", prefix="       ")
    return (f"Tensor(shape={list(t.shape)}, local_shape={list(local.shape)}, dtype={t.dtype.name}, "
            f"place={t.place}, process_mesh={ProcessMesh._from_core(mesh)!r}, placements={from_core(placements)}, "
            f"stop_gradient={t.stop_gradient},\n       local={body})")


def _numpy(t):
    # As Paddle (checked on 2 cpu ranks): numpy() of a distributed tensor is
    # the WHOLE value, gathered (a collective: every rank of the mesh calls
    # it); t._local_value().numpy() is this rank's piece.
    if _C.dist.is_dist(t):
        return _dense_numpy(_C.dist.unshard(t))
    return _dense_numpy(t)


def _install():
    global _dense_repr
    T = Tensor
    if getattr(T, "_dist_members_installed", False):
        return
    _dense_repr = T.__repr__
    T.process_mesh = property(_process_mesh, doc="The ProcessMesh of a distributed tensor (None when dense).")
    T.placements = property(_placements, doc="The placements of a distributed tensor (None when dense).")
    T.is_dist = lambda t: bool(_C.dist.is_dist(t))
    T._local_value = _local_value
    T.__repr__ = _repr
    T.__str__ = _repr
    T.numpy = _numpy
    T._dist_members_installed = True


_install()
