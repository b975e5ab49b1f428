"""Placements (Paddle's paddle.distributed.Shard / Replicate / Partial and
ReduceType): how a distributed tensor lies along one dim of its
ProcessMesh. They cross into the core as (kind, dim, reduce) tuples
(frontends/python/src/dist_tensor.cpp)."""
import enum

__all__ = ["ReduceType", "Placement", "Shard", "Replicate", "Partial"]


class ReduceType(enum.IntEnum):
    """How the pieces of a Partial tensor combine (Paddle's values)."""
    kRedSum = 0
    kRedMax = 1
    kRedMin = 2
    kRedProd = 3
    kRedAvg = 4
    kRedAny = 5
    kRedAll = 6


# ReduceType -> oar::ReduceKind (sum, avg, max, min); the others have no collective here.
_TO_CORE = {ReduceType.kRedSum: 0, ReduceType.kRedAvg: 1, ReduceType.kRedMax: 2, ReduceType.kRedMin: 3}
_FROM_CORE = {v: k for k, v in _TO_CORE.items()}
_NAMES = {ReduceType.kRedSum: "SUM", ReduceType.kRedAvg: "AVG", ReduceType.kRedMax: "MAX", ReduceType.kRedMin: "MIN"}


class Placement:
    """Base of Shard, Replicate and Partial."""

    def is_shard(self, dim=None):
        return False

    def is_replicated(self):
        return False

    def is_partial(self):
        return False

    def _to_core(self):
        raise NotImplementedError

    def __eq__(self, other):
        return isinstance(other, Placement) and self._to_core() == other._to_core()

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(self._to_core())


class Shard(Placement):
    """The tensor's dim `dim` is split over the mesh dim (chunks as torch.chunk)."""

    def __init__(self, dim):
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise TypeError(f"Shard: dim must be an int, not {type(dim).__name__}")
        self._dim = dim

    def get_dim(self):
        return self._dim

    @property
    def dim(self):
        return self._dim

    def is_shard(self, dim=None):
        return dim is None or dim == self._dim

    def _to_core(self):
        return (1, self._dim, 0)

    def __repr__(self):
        return f"Shard(dim={self._dim})"


class Replicate(Placement):
    """Every rank of the mesh dim holds the whole tensor."""

    def is_replicated(self):
        return True

    def _to_core(self):
        return (0, -1, 0)

    def __repr__(self):
        return "Replicate()"


class Partial(Placement):
    """Every rank holds a piece; the tensor is the pieces' reduction."""

    def __init__(self, reduce_type=ReduceType.kRedSum):
        reduce_type = ReduceType(reduce_type)
        if reduce_type not in _TO_CORE:
            raise ValueError(f"Partial: reduce_type {reduce_type.name} is not supported; "
                             "use kRedSum, kRedAvg, kRedMax or kRedMin")
        self._reduce_type = reduce_type

    def reduce_type(self):
        return self._reduce_type

    def is_partial(self):
        return True

    def _to_core(self):
        return (2, -1, _TO_CORE[self._reduce_type])

    def __repr__(self):
        return f"Partial(reduce_type={_NAMES[self._reduce_type]})"


def to_core(placements, api="placements"):
    """A list of Placement -> the core's tuples; a sentence naming `api` for anything else."""
    if isinstance(placements, Placement):
        raise TypeError(f"{api}: placements must be a list of Placement (one per mesh dim), not a single {placements!r}")
    out = []
    for p in placements:
        if not isinstance(p, Placement):
            raise TypeError(f"{api}: placements must be Shard, Replicate or Partial objects, got {p!r}")
        out.append(p._to_core())
    return out


def from_core(tuples):
    out = []
    for kind, dim, reduce in tuples:
        if kind == 0:
            out.append(Replicate())
        elif kind == 1:
            out.append(Shard(int(dim)))
        else:
            out.append(Partial(_FROM_CORE[int(reduce)]))
    return out
