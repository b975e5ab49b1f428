"""Process groups (paddle.distributed.new_group / get_group) and the
process-wide state they live in."""
from .. import _C
from . import env as _env


class Group:
    """A set of global ranks with a communicator among them, as Paddle's
    Group: .id (0 is the world), .ranks (global, sorted), .nranks, .rank
    (this process's rank in the group, -1 when it is not a member),
    .process_group (the _C.distributed.Communicator, None for non-members)."""

    def __init__(self, id, ranks, rank, comm, name, backend):  # noqa: A002 - paddle's attribute name
        self.id = id
        self.ranks = list(ranks)
        self.rank = rank
        self.process_group = comm
        self.name = name
        self.backend = backend

    @property
    def nranks(self):
        return len(self.ranks)

    world_size = nranks

    def is_member(self):
        return self.rank >= 0

    def get_group_rank(self, rank):
        """The group rank of global `rank`, -1 when it is not in the group."""
        return self.ranks.index(rank) if rank in self.ranks else -1

    def get_global_rank(self, group_rank):
        return self.ranks[group_rank]

    def destroy(self):
        if self.process_group is not None:
            self.process_group.destroy()
            self.process_group = None

    def __repr__(self):
        return (f"Group(id={self.id}, name={self.name!r}, ranks={self.ranks}, rank={self.rank}, "
                f"backend={self.backend!r})")


class _State:
    """What init_parallel_env built. `next_group_id` numbers the groups:
    every rank calls new_group in the same order (as in Paddle), so the
    counter agrees across ranks and names the group's store key."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.env = None
        self.store = None
        self.device = None
        self.world = None
        self.groups = {}
        self.next_group_id = 1

    @property
    def initialized(self):
        return self.world is not None


STATE = _State()


def require_initialized(what):
    if not STATE.initialized:
        raise RuntimeError(f"{what}: the default group does not exist yet; "
                           f"call oar.distributed.init_parallel_env() first")


def resolve(group, what):
    """`group`, or the world group for None."""
    if group is None:
        require_initialized(what)
        return STATE.world
    if not isinstance(group, Group):
        raise TypeError(f"{what}: group must be an oar.distributed.Group (from new_group) or None, "
                        f"not {type(group).__name__}")
    if group.is_member() and group.process_group is None:
        raise RuntimeError(f"{what}: group {group.id} ({group.name}) was destroyed")
    return group


def make_communicator(nranks, rank, key, name, global_ranks, timeout=-1.0):
    return _C.distributed.Communicator(STATE.store, STATE.device, nranks, rank, key=key, timeout=timeout, name=name,
                                       global_ranks=list(global_ranks))


def _timeout_seconds(timeout, what):
    """Paddle passes a datetime.timedelta; a number is seconds; None: the
    job's default ($OAR_COLLECTIVE_TIMEOUT)."""
    if timeout is None:
        return -1.0
    seconds = timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout)
    if not seconds > 0:
        raise ValueError(f"{what}: timeout must be positive (a datetime.timedelta or seconds), got {timeout!r}")
    return seconds


def new_group(ranks=None, backend=None, timeout=None):
    """A group of the global `ranks` (None: all ranks). Every rank of the
    job calls it, members or not, in the same order (as in Paddle); a
    non-member gets a Group with rank -1 on which collectives do nothing.
    The job has one collective library (gloo on cpu): another `backend`
    is logged and ignored. `timeout` (a datetime.timedelta or seconds)
    bounds each collective of the group; None: $OAR_COLLECTIVE_TIMEOUT."""
    require_initialized("new_group")
    timeout_s = _timeout_seconds(timeout, "new_group")
    world = STATE.world
    own_backend = world.backend
    if backend is not None and str(backend).lower() not in (own_backend, "auto"):
        # A script written for GPUs (backend="nccl") still runs here, on this job's library.
        _env.logger.warning("new_group: backend '%s' was asked for; this job's collectives run on '%s' through '%s'",
                            backend, STATE.device, own_backend)
    if ranks is None:
        ranks = list(range(world.nranks))
    ranks = [int(r) for r in ranks]
    if not ranks:
        raise ValueError("new_group: ranks is empty; pass None for all ranks")
    bad = [r for r in ranks if r < 0 or r >= world.nranks]
    if bad:
        raise ValueError(f"new_group: rank {bad[0]} of ranks {ranks} is outside [0, {world.nranks}) (the world size)")
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"new_group: ranks {ranks} has duplicates")
    ranks = sorted(ranks)
    gid = STATE.next_group_id
    STATE.next_group_id += 1
    name = f"group {gid}"
    me = world.rank
    rank = ranks.index(me) if me in ranks else -1
    comm = None
    if rank >= 0:
        comm = make_communicator(len(ranks), rank, f"oar/group/{gid}", name, ranks, timeout_s)
    group = Group(gid, ranks, rank, comm, name, own_backend)
    STATE.groups[gid] = group
    return group


def get_group(id=0):  # noqa: A002 - paddle's argument name
    """The group with this id (0: the world), None when there is none."""
    if id == 0:
        return STATE.world
    return STATE.groups.get(id)
