"""paddle.utils.dlpack: share tensors with other libraries without copying
(DLPack; Note [numpy views] in frontends/python/src/tensor.cpp).

    cap = oar.utils.dlpack.to_dlpack(x)       # a capsule over x's cpu memory
    y = oar.utils.dlpack.from_dlpack(cap)     # or any object with __dlpack__
    a = np.from_dlpack(x)                     # numpy sees x's memory

Only contiguous tensors of host-addressable devices (cpu) are shared; writes
through either side are seen by both."""
from .. import _C

__all__ = ["to_dlpack", "from_dlpack"]


def to_dlpack(x):
    """A DLPack capsule sharing `x`'s memory (cpu, contiguous); consumed once."""
    return _C.to_dlpack(x)


def from_dlpack(dlpack):
    """A cpu Tensor sharing the memory of a DLPack capsule or of an object with
    `__dlpack__` (a numpy array, a torch tensor, an oar Tensor)."""
    if hasattr(dlpack, "__dlpack__"):
        dlpack = dlpack.__dlpack__()
    return _C.from_dlpack(dlpack)
