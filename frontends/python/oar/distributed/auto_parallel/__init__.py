"""Semi-auto parallel (Paddle's paddle.distributed.auto_parallel): meshes,
placements, distributed tensors (docs/auto_parallel.md)."""
from .placement import ReduceType, Placement, Shard, Replicate, Partial  # noqa: F401
from .process_mesh import ProcessMesh  # noqa: F401
from .api import (shard_tensor, dtensor_from_fn, dtensor_from_local, reshard, unshard_dtensor,  # noqa: F401
                  is_dist)
