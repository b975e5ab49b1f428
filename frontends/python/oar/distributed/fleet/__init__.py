"""oar.distributed.fleet (paddle.distributed.fleet), collective mode only:
enough for Paddle scripts that train data-parallel through fleet.

    fleet.init(is_collective=True)
    model = fleet.distributed_model(model)          # an oar.DataParallel
    opt = fleet.distributed_optimizer(opt)
"""
from .strategy import DistributedStrategy

__all__ = ["DistributedStrategy", "init", "distributed_model", "distributed_optimizer", "worker_index",
           "worker_num", "is_first_worker", "is_worker", "barrier_worker", "worker_endpoints", "local_rank",
           "get_strategy"]

_state = {"initialized": False, "strategy": None}


def _require_init(what):
    if not _state["initialized"]:
        raise RuntimeError(f"fleet.{what}: call fleet.init(is_collective=True) first")


def init(role_maker=None, is_collective=False, strategy=None, log_level="INFO"):
    """Joins the job: initializes the default group (oar.distributed.init_parallel_env)
    unless it is already. Only collective training exists in oar: is_collective=False
    (parameter servers) is an error, as is a role_maker."""
    if role_maker is not None:
        raise NotImplementedError("fleet.init: role makers (parameter-server training) are not supported in oar; "
                                  "call fleet.init(is_collective=True)")
    if not is_collective:
        raise NotImplementedError("fleet.init: only collective training is supported in oar (parameter-server "
                                  "mode is not); call fleet.init(is_collective=True)")
    if strategy is not None and not isinstance(strategy, DistributedStrategy):
        raise TypeError(f"fleet.init: strategy must be a fleet.DistributedStrategy, got {type(strategy).__name__}")
    from .. import parallel
    if not parallel.is_initialized():
        parallel.init_parallel_env()
    _state["initialized"] = True
    _state["strategy"] = strategy if strategy is not None else DistributedStrategy()


def get_strategy():
    """The strategy fleet.init got (a default DistributedStrategy when none)."""
    _require_init("get_strategy")
    return _state["strategy"]


def distributed_model(model):
    """`model` wrapped in oar.DataParallel with the strategy's bucket sizes
    (fuse_grad_size_in_MB, last_comm_group_size_MB) and find_unused_parameters."""
    _require_init("distributed_model")
    from ..data_parallel import DataParallel
    s = _state["strategy"]
    return DataParallel(model, comm_buffer_size=s.fuse_grad_size_in_MB,
                        last_comm_buffer_size=s.last_comm_group_size_MB,
                        find_unused_parameters=s.find_unused_parameters)


def distributed_optimizer(optimizer, strategy=None):
    """The optimizer itself: DataParallel already averages the gradients, so a
    data-parallel step is the plain step. A strategy given here replaces fleet.init's."""
    _require_init("distributed_optimizer")
    if strategy is not None:
        if not isinstance(strategy, DistributedStrategy):
            raise TypeError(f"fleet.distributed_optimizer: strategy must be a fleet.DistributedStrategy, got "
                            f"{type(strategy).__name__}")
        _state["strategy"] = strategy
    return optimizer


def worker_index():
    """This process's rank in the job."""
    from .. import parallel
    return parallel.get_rank()


def worker_num():
    """The number of processes in the job."""
    from .. import parallel
    return parallel.get_world_size()


def is_first_worker():
    return worker_index() == 0


def is_worker():
    """Always True: in collective mode every process is a worker."""
    return True


def local_rank():
    from .. import parallel
    return parallel.ParallelEnv().local_rank


def worker_endpoints(to_string=False):
    """PADDLE_TRAINER_ENDPOINTS as a list (or the comma-joined string), when the launcher set it."""
    import os
    value = os.environ.get("PADDLE_TRAINER_ENDPOINTS", "")
    endpoints = [e for e in value.split(",") if e]
    return ",".join(endpoints) if to_string else endpoints


def barrier_worker():
    """A barrier over all workers (oar.distributed.barrier)."""
    _require_init("barrier_worker")
    from .. import collective
    collective.barrier()
