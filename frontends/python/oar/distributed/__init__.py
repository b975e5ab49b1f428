"""oar.distributed (paddle.distributed): collectives over Gloo (cpu) or the
device's own library, process groups, the launcher, data parallel.

See docs/distributed.md.
"""
# --- environment, process groups and collectives (env.py, parallel.py, collective.py) ---
from .env import detect_env  # noqa: F401
from .parallel import (init_parallel_env, get_rank, get_world_size, get_backend, is_initialized,  # noqa: F401
                       is_available, destroy_process_group, ParallelEnv)
from .group import Group, new_group, get_group  # noqa: F401
from .collective import (ReduceOp, Task, all_reduce, all_gather, all_gather_object, broadcast,  # noqa: F401
                         broadcast_object_list, reduce, reduce_scatter, gather, scatter, alltoall, alltoall_single,
                         send, recv, isend, irecv, barrier, wait, scatter_object_list, P2POp, batch_isend_irecv)
from . import stream  # noqa: F401,E402

# --- launcher and spawn (launch/, spawn.py) ---
from . import launch  # noqa: F401,E402
from .spawn import spawn  # noqa: F401,E402

# --- data parallel and fleet (data_parallel.py, fleet/) ---
from .data_parallel import DataParallel  # noqa: E402,F401 - also oar.DataParallel
from . import fleet  # noqa: E402,F401

# --- semi-auto parallel (auto_parallel/): H1 block: mesh, placements, shard_tensor, reshard ---
from .auto_parallel import (ProcessMesh, ReduceType, Placement, Shard, Replicate, Partial,  # noqa: E402,F401
                            shard_tensor, dtensor_from_fn, dtensor_from_local, reshard, unshard_dtensor)

# --- semi-auto parallel: H3 block: shard_layer, shard_optimizer, shard_dataloader ---
from .auto_parallel.sharding import (shard_layer, shard_optimizer, shard_dataloader, ShardDataloader,  # noqa: E402,F401
                                     ShardingStage1, ShardingStage2, ShardingStage3)

# --- semi-auto parallel: H6 block: to_static, DistModel, Strategy ---
from .auto_parallel.static_mode import to_static, DistModel  # noqa: E402,F401
from .auto_parallel.strategy import Strategy  # noqa: E402,F401

# --- semi-auto parallel: H7 block: to_distributed (automatic strategy choice) ---
from .auto_parallel.auto_strategy import to_distributed, ToDistributedConfig  # noqa: E402,F401
