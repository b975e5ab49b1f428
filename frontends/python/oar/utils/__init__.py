"""paddle.utils: DLPack exchange (oar.utils.dlpack)."""
from . import dlpack  # noqa: F401
