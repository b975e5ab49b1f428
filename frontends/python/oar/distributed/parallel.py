"""init_parallel_env and the job's default (world) group, as
paddle.distributed: get_rank, get_world_size, ParallelEnv, is_initialized,
destroy_process_group, get_backend."""
import atexit
import os

from .. import _C
from . import env as _env
from .group import STATE, Group, make_communicator, resolve


def init_parallel_env():
    """Joins the job the launcher variables describe: rank 0 serves the
    job's TCP store on MASTER_ADDR:MASTER_PORT, the others connect to it,
    and every rank builds the world communicator on the collective device
    (oar.get_device() with the launcher's device index, or
    $OAR_DIST_DEVICE), which becomes the default device. A world of one process needs
    no store. MASTER_ADDR / MASTER_PORT are exported to os.environ (the
    Gloo plugin reads them). Idempotent; returns the world Group."""
    if STATE.initialized:
        return STATE.world
    env = _env.detect_env()
    device = _env.collective_device()
    timeout = _env.collective_timeout()
    source = "no launcher variables (none)" if env["source"] == "none" else f"the {env['source']} variables"
    _env.logger.info("oar.distributed: rank %d of %d (local %d of %d) from %s; store %s:%d, job '%s', device %s",
                     env["rank"], env["world_size"], env["local_rank"], env["local_world_size"], source,
                     env["master_addr"], env["master_port"], env["job_id"], device)
    os.environ["MASTER_ADDR"] = env["master_addr"]
    os.environ["MASTER_PORT"] = str(env["master_port"])
    from .. import framework
    if framework.Place(device) != framework.Place(framework.get_device()):
        framework.set_device(device)  # as Paddle: the rank's device becomes the default one
    if env["world_size"] > 1:
        store = _C.distributed.TCPStore(env["master_addr"], env["master_port"], env["rank"] == 0,
                                        job_id=env["job_id"], timeout=timeout)
    else:
        store = _C.distributed.InProcessStore()
    STATE.env = env
    STATE.store = store
    STATE.device = device
    ranks = list(range(env["world_size"]))
    try:
        comm = make_communicator(env["world_size"], env["rank"], "oar/group/0", "world", ranks)
    except BaseException:
        STATE.reset()
        raise
    STATE.world = Group(0, ranks, env["rank"], comm, "world", _env.backend_of_device(device))
    return STATE.world


def is_initialized():
    """True between init_parallel_env() and destroy_process_group()."""
    return STATE.initialized


def destroy_process_group(group=None):
    """Frees `group`'s communicator; None frees every group and the store,
    after which init_parallel_env() may be called again."""
    if group is not None:
        group.destroy()
        STATE.groups.pop(group.id, None)
        if group is STATE.world:
            group = None
        else:
            return
    if not STATE.initialized:
        return
    for g in list(STATE.groups.values()):
        g.destroy()
    STATE.world.destroy()
    _release_store()
    STATE.reset()


_EXIT_GRACE_S = 60.0


def _release_store():
    """Rank 0 serves the store, and a peer may still need it to tear its
    communicators down (the mock's do): every rank says it is done, and
    rank 0 waits for the others (at most the collective timeout, capped at
    a minute: a peer that died never says so) before its store goes away."""
    env, store = STATE.env, STATE.store
    if env is None or env["world_size"] <= 1 or store is None:
        return
    grace = min(_env.collective_timeout(), _EXIT_GRACE_S)
    try:
        store.set(f"oar/exit/{env['rank']}", b"1")
        if env["rank"] == 0:
            for r in range(1, env["world_size"]):
                store.wait(f"oar/exit/{r}", timeout=grace)
    except Exception as e:  # noqa: BLE001 - a dead peer or a store already gone: nothing left to wait for
        _env.logger.info("oar.distributed: destroy_process_group did not see every rank finish: %s", e)


atexit.register(destroy_process_group)


def _env_or_detect():
    return STATE.env if STATE.env is not None else _env.detect_env()


def get_rank(group=None):
    """This process's rank: in `group` (-1 for a non-member), else in the
    world (before init_parallel_env, what the launcher variables say)."""
    if group is not None:
        return resolve(group, "get_rank").rank
    return _env_or_detect()["rank"]


def get_world_size(group=None):
    """The number of ranks of `group`, else of the world (before
    init_parallel_env, what the launcher variables say)."""
    if group is not None:
        return resolve(group, "get_world_size").nranks
    return _env_or_detect()["world_size"]


def get_backend(group=None):
    """The collective library: "gloo" on cpu, the device type otherwise ("mock")."""
    if group is not None:
        return resolve(group, "get_backend").backend
    if STATE.initialized:
        return STATE.world.backend
    return _env.backend_of_device(_env.collective_device())


def is_available():
    return True


class ParallelEnv:
    """The launcher's view of this process (paddle.distributed.ParallelEnv)."""

    def __init__(self):
        self._env = _env_or_detect()
        self._device_id = _env.local_device_id(self._env)

    @property
    def rank(self):
        return self._env["rank"]

    @property
    def world_size(self):
        return self._env["world_size"]

    @property
    def local_rank(self):
        return self._env["local_rank"]

    @property
    def local_world_size(self):
        return self._env["local_world_size"]

    @property
    def device_id(self):
        return self._device_id

    @property
    def device_type(self):
        return str(_env.collective_device()).split(":")[0]

    @property
    def trainer_endpoints(self):
        text = os.environ.get("PADDLE_TRAINER_ENDPOINTS", "")
        return text.split(",") if text else [f"{self._env['master_addr']}:{self._env['master_port']}"]

    @property
    def current_endpoint(self):
        text = os.environ.get("PADDLE_CURRENT_ENDPOINT", "")
        if text:
            return text
        endpoints = self.trainer_endpoints
        return endpoints[self.rank] if self.rank < len(endpoints) else endpoints[0]

    # Paddle's older names.
    nranks = world_size
    dev_id = device_id
    trainer_id = rank

    def __repr__(self):
        return (f"ParallelEnv(rank={self.rank}, world_size={self.world_size}, local_rank={self.local_rank}, "
                f"device_id={self.device_id}, source={self._env['source']!r})")
