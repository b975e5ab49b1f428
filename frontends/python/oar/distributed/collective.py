"""Collectives with paddle.distributed's names and semantics, over the
group's _C.distributed.Communicator (Gloo on cpu, the device's library
otherwise).

Ranks given to these functions (src, dst) are global ranks, as in Paddle;
the communicator takes group ranks. group=None is the world group. On a
group this process is not a member of, a collective does nothing and
returns None. sync_op=False returns a Task at once (wait() /
is_completed()); sync_op=True waits and returns a completed Task.
Tensors may have any dtype the collectives take (f32 f64 f16 bf16 i32 i64
i8 u8 bool); a strided view is copied to contiguous memory and the result
written back to the handle."""
import pickle

import numpy as np

from .. import _C
from ..framework import Place, Tensor
from .group import resolve

_ops = _C.ops


class ReduceOp:
    """Reductions of all_reduce / reduce / reduce_scatter. AVG sums, then
    divides by the group size (integers: truncating division)."""
    SUM = 0
    PROD = 1
    MAX = 2
    MIN = 3
    AVG = 4


_OP_NAMES = {ReduceOp.SUM: "SUM", ReduceOp.PROD: "PROD", ReduceOp.MAX: "MAX", ReduceOp.MIN: "MIN",
             ReduceOp.AVG: "AVG"}


class Task:
    """An issued collective (Paddle's task): wait() blocks until it is done
    and rethrows its error; is_completed() asks without blocking. `finish`
    runs once after completion (copying results into the caller's tensors)."""

    def __init__(self, work=None, finish=None):
        self._work = work
        self._finish = finish

    def _complete(self):
        if self._finish is not None:
            finish, self._finish = self._finish, None
            finish()

    def wait(self, timeout=None):
        if self._work is not None:
            done = self._work.wait(timeout) if timeout is not None else self._work.wait()
            if done is False:
                return False
        self._complete()
        return True

    def is_completed(self):
        if self._work is not None and not self._work.is_completed():
            return False
        self._complete()
        return True


def _issue(group, work, sync_op, finish=None):
    task = Task(work, finish)
    group._last_task = task
    if sync_op:
        task.wait()
    return task


def _op_code(op, what):
    code = int(op)
    if code not in _OP_NAMES:
        raise ValueError(f"{what}: op {op!r} is not one of ReduceOp.SUM, PROD, MAX, MIN, AVG")
    return code


def _member_comm(group, what):
    """The group and its communicator; (group, None) for a non-member."""
    group = resolve(group, what)
    return group, group.process_group if group.is_member() else None


def _check_tensor(t, comm, what, name="tensor"):
    if not isinstance(t, Tensor):
        raise TypeError(f"{what}: {name} must be an oar Tensor, not {type(t).__name__}")
    if Place(t._device) != Place(comm.device):
        raise ValueError(f"{what}: {name} is on {t._device} but the group's collectives run on {comm.device}; "
                         f"move it there with .to('{comm.device}')")


def _contiguous(t):
    """(buffer, write_back): a contiguous tensor holding t's values, and
    the function that makes t the buffer's result afterwards (None when t
    itself is contiguous and the collective writes into it)."""
    if t.is_contiguous():
        return t, None
    c = t.contiguous()
    return c, (lambda: t._set_data_(c))


def _group_rank(group, rank, what, name):
    r = group.get_group_rank(int(rank))
    if r < 0:
        raise ValueError(f"{what}: {name}={rank} is not a rank of the group (its global ranks are {group.ranks})")
    return r


def _new(shape, dtype, device):
    return _ops.full(list(shape), 0.0, dtype, device)


def _flat(t):
    return _ops.reshape(t, [-1])


def _check_list(tensors, n, shape, dtype, what, name):
    if len(tensors) != n:
        raise ValueError(f"{what}: {name} has {len(tensors)} tensors but the group has {n} ranks")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{what}: {name}[{i}] must be an oar Tensor, not {type(t).__name__}")
        if list(t.shape) != list(shape) or t.dtype != dtype:
            raise ValueError(f"{what}: {name}[{i}] has shape {list(t.shape)} and dtype {t.dtype.name} but "
                             f"shape {list(shape)} and dtype {dtype.name} were expected")


def _pieces(buffer, n, shape):
    """n tensors of `shape`, each with its own storage, from a buffer of n blocks."""
    out = []
    block = int(np.prod(shape, dtype=np.int64)) if shape else 1
    for i in range(n):
        out.append(_clone(_ops.reshape(_ops.slice(buffer, [0], [i * block], [(i + 1) * block]), list(shape))))
    return out


def _clone(t):
    from ..creation import clone_data
    return clone_data(t)


def _fill_list(tensor_list, values):
    """Paddle's list outputs: an empty list receives new tensors, a full one
    has its tensors' data replaced."""
    if not tensor_list:
        tensor_list.extend(values)
        return
    for dst, src in zip(tensor_list, values):
        dst._set_data_(src)


# ---- reductions and broadcasts ----

def all_reduce(tensor, op=ReduceOp.SUM, group=None, sync_op=True):
    """Reduces `tensor` across the group's ranks, in place."""
    group, comm = _member_comm(group, "all_reduce")
    if comm is None:
        return None
    _check_tensor(tensor, comm, "all_reduce")
    buf, write_back = _contiguous(tensor)
    return _issue(group, comm.all_reduce(buf, _op_code(op, "all_reduce"), async_op=not sync_op), sync_op, write_back)


def broadcast(tensor, src, group=None, sync_op=True):
    """Copies global rank `src`'s tensor into every rank's `tensor`."""
    group, comm = _member_comm(group, "broadcast")
    if comm is None:
        return None
    _check_tensor(tensor, comm, "broadcast")
    root = _group_rank(group, src, "broadcast", "src")
    buf, write_back = _contiguous(tensor)
    return _issue(group, comm.broadcast(buf, root, async_op=not sync_op), sync_op, write_back)


def reduce(tensor, dst, op=ReduceOp.SUM, group=None, sync_op=True):
    """Reduces into global rank `dst`'s tensor; other ranks' tensors keep their values."""
    group, comm = _member_comm(group, "reduce")
    if comm is None:
        return None
    _check_tensor(tensor, comm, "reduce")
    root = _group_rank(group, dst, "reduce", "dst")
    buf, write_back = _contiguous(tensor)
    return _issue(group, comm.reduce(buf, root, _op_code(op, "reduce"), async_op=not sync_op), sync_op, write_back)


def reduce_scatter(tensor, tensor_list, op=ReduceOp.SUM, group=None, sync_op=True):
    """Rank i's `tensor` becomes the reduction over ranks of their
    tensor_list[i]. tensor_list: group-size tensors shaped like `tensor`
    (or one tensor of group-size times its elements)."""
    group, comm = _member_comm(group, "reduce_scatter")
    if comm is None:
        return None
    _check_tensor(tensor, comm, "reduce_scatter")
    n = group.nranks
    if isinstance(tensor_list, Tensor):
        if tensor_list.numel() != n * tensor.numel() or tensor_list.dtype != tensor.dtype:
            raise ValueError(f"reduce_scatter: the input tensor has {tensor_list.numel()} elements of "
                             f"{tensor_list.dtype.name} but {n} ranks x {tensor.numel()} of {tensor.dtype.name} "
                             f"were expected")
        _check_tensor(tensor_list, comm, "reduce_scatter", "tensor_list")
        source = tensor_list.contiguous()
    else:
        tensor_list = list(tensor_list)
        _check_list(tensor_list, n, tensor.shape, tensor.dtype, "reduce_scatter", "tensor_list")
        for t in tensor_list:
            _check_tensor(t, comm, "reduce_scatter", "tensor_list")
        source = _ops.concat([_flat(t) for t in tensor_list], 0)
    buf, write_back = _contiguous(tensor)
    work = comm.reduce_scatter(buf, source, _op_code(op, "reduce_scatter"), async_op=not sync_op)
    return _issue(group, work, sync_op, write_back)


# ---- gathers and scatters ----

def all_gather(tensor_list, tensor, group=None, sync_op=True):
    """Every rank's `tensor`, in rank order, into `tensor_list`: an empty
    list gets new tensors, else it must hold group-size tensors of
    `tensor`'s shape and dtype, whose data is replaced."""
    group, comm = _member_comm(group, "all_gather")
    if comm is None:
        return None
    _check_tensor(tensor, comm, "all_gather")
    n = group.nranks
    if tensor_list:
        _check_list(tensor_list, n, tensor.shape, tensor.dtype, "all_gather", "tensor_list")
    shape = list(tensor.shape)
    src = tensor.contiguous() if not tensor.is_contiguous() else tensor
    out = _new([n * tensor.numel()], tensor.dtype, comm.device)
    work = comm.all_gather(out, src, async_op=not sync_op)
    return _issue(group, work, sync_op, lambda: _fill_list(tensor_list, _pieces(out, n, shape)))


def gather(tensor, gather_list=None, dst=0, group=None, sync_op=True):
    """Every rank's `tensor` into global rank `dst`'s gather_list (as all_gather there)."""
    group, comm = _member_comm(group, "gather")
    if comm is None:
        return None
    _check_tensor(tensor, comm, "gather")
    root = _group_rank(group, dst, "gather", "dst")
    if group.rank == root:
        if gather_list is None:
            raise ValueError(f"gather: gather_list is None on dst rank {dst}; pass a list to receive the tensors")
        return all_gather(gather_list, tensor, group, sync_op)
    return all_gather([], tensor, group, sync_op)


def scatter(tensor, tensor_list=None, src=0, group=None, sync_op=True):
    """Rank i's `tensor` becomes global rank `src`'s tensor_list[i]
    (tensor_list is read on src only)."""
    group, comm = _member_comm(group, "scatter")
    if comm is None:
        return None
    _check_tensor(tensor, comm, "scatter")
    root = _group_rank(group, src, "scatter", "src")
    source = None
    if group.rank == root:
        if tensor_list is None:
            raise ValueError(f"scatter: tensor_list is None on the src rank {src}")
        tensor_list = list(tensor_list)
        _check_list(tensor_list, group.nranks, tensor.shape, tensor.dtype, "scatter", "tensor_list")
        for t in tensor_list:
            _check_tensor(t, comm, "scatter", "tensor_list")
        source = _ops.concat([_flat(t) for t in tensor_list], 0)
    buf, write_back = _contiguous(tensor)
    return _issue(group, comm.scatter(buf, source, root, async_op=not sync_op), sync_op, write_back)


def alltoall(out_tensor_list, in_tensor_list, group=None, sync_op=True):
    """Rank j's out_tensor_list[i] is rank i's in_tensor_list[j]. An empty
    out_tensor_list receives tensors shaped like the inputs (which must then
    agree); a full one may hold other shapes, each sized as what its peer sends."""
    group, comm = _member_comm(group, "alltoall")
    if comm is None:
        return None
    n = group.nranks
    in_tensor_list = list(in_tensor_list)
    if len(in_tensor_list) != n:
        raise ValueError(f"alltoall: in_tensor_list has {len(in_tensor_list)} tensors but the group has {n} ranks")
    for t in in_tensor_list:
        _check_tensor(t, comm, "alltoall", "in_tensor_list")
    dtype = in_tensor_list[0].dtype
    if any(t.dtype != dtype for t in in_tensor_list):
        raise ValueError(f"alltoall: in_tensor_list mixes dtypes {[t.dtype.name for t in in_tensor_list]}")
    source = _ops.concat([_flat(t) for t in in_tensor_list], 0)
    if not out_tensor_list:
        shape = list(in_tensor_list[0].shape)
        if any(list(t.shape) != shape for t in in_tensor_list):
            raise ValueError(f"alltoall: in_tensor_list has shapes {[list(t.shape) for t in in_tensor_list]}; "
                             f"with an empty out_tensor_list they must agree (or pass out tensors of each size)")
        out_shapes = [shape] * n
    else:
        if len(out_tensor_list) != n:
            raise ValueError(f"alltoall: out_tensor_list has {len(out_tensor_list)} tensors but the group has "
                             f"{n} ranks")
        for t in out_tensor_list:
            _check_tensor(t, comm, "alltoall", "out_tensor_list")
            if t.dtype != dtype:
                raise ValueError(f"alltoall: out_tensor_list holds {t.dtype.name} but the inputs are {dtype.name}")
        out_shapes = [list(t.shape) for t in out_tensor_list]
    in_counts = [t.numel() for t in in_tensor_list]
    out_counts = [int(np.prod(s, dtype=np.int64)) for s in out_shapes]
    out = _new([sum(out_counts)], dtype, comm.device)
    if len(set(in_counts)) == 1 and in_counts == out_counts:
        work = comm.all_to_all(out, source, async_op=not sync_op)
    else:
        work = comm.all_to_all_v(out, source, out_counts, in_counts, async_op=not sync_op)

    def finish():
        offsets = np.concatenate([[0], np.cumsum(out_counts)]).astype(np.int64)
        values = [_clone(_ops.reshape(_ops.slice(out, [0], [int(offsets[i])], [int(offsets[i + 1])]),
                                      out_shapes[i])) for i in range(n)]
        _fill_list(out_tensor_list, values)
    return _issue(group, work, sync_op, finish)


def _split_sizes(sizes, rows, n, what, name):
    if sizes is None or len(sizes) == 0:
        if rows % n != 0:
            raise ValueError(f"alltoall_single: {what} has {rows} rows in dim 0, which {n} ranks do not divide; "
                             f"pass {name}")
        return [rows // n] * n
    sizes = [int(s) for s in sizes]
    if len(sizes) != n or any(s < 0 for s in sizes) or sum(sizes) != rows:
        raise ValueError(f"alltoall_single: {name}={sizes} must be {n} non-negative sizes adding up to dim 0 of "
                         f"{what} ({rows})")
    return sizes


def alltoall_single(out_tensor, in_tensor, in_split_sizes=None, out_split_sizes=None, group=None, sync_op=True):
    """Splits in_tensor's dim 0 into in_split_sizes blocks (equal when None)
    and sends block i to rank i; out_tensor's dim 0 receives, in rank
    order, out_split_sizes rows from each rank. The sizes may be uneven."""
    group, comm = _member_comm(group, "alltoall_single")
    if comm is None:
        return None
    _check_tensor(in_tensor, comm, "alltoall_single", "in_tensor")
    _check_tensor(out_tensor, comm, "alltoall_single", "out_tensor")
    if not in_tensor.shape or not out_tensor.shape:
        raise ValueError("alltoall_single: in_tensor and out_tensor need at least one dim (it is split)")
    if list(in_tensor.shape[1:]) != list(out_tensor.shape[1:]) or in_tensor.dtype != out_tensor.dtype:
        raise ValueError(f"alltoall_single: in_tensor is {list(in_tensor.shape)} {in_tensor.dtype.name} and out_tensor "
                         f"{list(out_tensor.shape)} {out_tensor.dtype.name}; their dtypes and dims after 0 must agree")
    n = group.nranks
    row = int(np.prod(in_tensor.shape[1:], dtype=np.int64))
    in_sizes = _split_sizes(in_split_sizes, in_tensor.shape[0], n, "in_tensor", "in_split_sizes")
    out_sizes = _split_sizes(out_split_sizes, out_tensor.shape[0], n, "out_tensor", "out_split_sizes")
    source = in_tensor.contiguous() if not in_tensor.is_contiguous() else in_tensor
    buf, write_back = _contiguous(out_tensor)
    if in_split_sizes is None and out_split_sizes is None and in_sizes == out_sizes:
        work = comm.all_to_all(buf, source, async_op=not sync_op)
    else:
        work = comm.all_to_all_v(buf, source, [s * row for s in out_sizes], [s * row for s in in_sizes],
                                 async_op=not sync_op)
    return _issue(group, work, sync_op, write_back)


# ---- point to point ----

def send(tensor, dst=0, group=None, sync_op=True):
    """Sends `tensor` to global rank `dst`."""
    group, comm = _member_comm(group, "send")
    if comm is None:
        return None
    _check_tensor(tensor, comm, "send")
    peer = _group_rank(group, dst, "send", "dst")
    src = tensor.contiguous() if not tensor.is_contiguous() else tensor
    return _issue(group, comm.send(src, peer, async_op=not sync_op), sync_op)


def recv(tensor, src=0, group=None, sync_op=True):
    """Receives into `tensor` from global rank `src`."""
    group, comm = _member_comm(group, "recv")
    if comm is None:
        return None
    _check_tensor(tensor, comm, "recv")
    peer = _group_rank(group, src, "recv", "src")
    buf, write_back = _contiguous(tensor)
    return _issue(group, comm.recv(buf, peer, async_op=not sync_op), sync_op, write_back)


def isend(tensor, dst, group=None):
    return send(tensor, dst, group, sync_op=False)


def irecv(tensor, src=None, group=None):
    return recv(tensor, 0 if src is None else src, group, sync_op=False)


def barrier(group=None):
    """Returns when every rank of the group has called barrier."""
    group, comm = _member_comm(group, "barrier")
    if comm is not None:
        comm.barrier()


def wait(tensor, group=None, use_calc_stream=True):
    """Waits for the group's collectives issued so far (they complete in
    issue order, so the last one's completion covers `tensor`'s)."""
    group, comm = _member_comm(group, "wait")
    task = getattr(group, "_last_task", None)
    if comm is not None and task is not None:
        task.wait()


# ---- Python objects (pickled; sizes first, then the bytes) ----

def _run(work):
    if work is not None:
        work.wait()


def _bytes_tensor(data, comm):
    return _C.from_bytes(data, [len(data)], _u8(), comm.device)


def _u8():
    from ..framework import uint8
    return uint8


def _int64_tensor(values, comm):
    return _C.from_numpy(np.asarray(values, dtype=np.int64), None, comm.device)


def all_gather_object(object_list, obj, group=None):
    """Every rank's picklable `obj`, in rank order, into object_list (an
    empty list is extended; a list of the group's size is overwritten)."""
    group, comm = _member_comm(group, "all_gather_object")
    if comm is None:
        return None
    n = group.nranks
    if object_list and len(object_list) != n:
        raise ValueError(f"all_gather_object: object_list has {len(object_list)} items but the group has {n} ranks; "
                         f"pass an empty list")
    data = pickle.dumps(obj)
    sizes = _new([n], _int64_tensor([0], comm).dtype, comm.device)
    _run(comm.all_gather(sizes, _int64_tensor([len(data)], comm)))
    sizes = [int(s) for s in sizes.numpy()]
    width = max(sizes)
    out = _new([n * width], _u8(), comm.device)
    _run(comm.all_gather(out, _bytes_tensor(data + b"\0" * (width - len(data)), comm)))
    raw = out._raw_bytes()
    objects = [pickle.loads(raw[i * width:i * width + sizes[i]]) for i in range(n)]
    object_list[:] = objects
    return None


def broadcast_object_list(object_list, src=0, group=None):
    """Global rank `src`'s picklable objects replace object_list's items on
    every rank (the other ranks' lists take src's length)."""
    group, comm = _member_comm(group, "broadcast_object_list")
    if comm is None:
        return None
    root = _group_rank(group, src, "broadcast_object_list", "src")
    if group.rank == root:
        payloads = [pickle.dumps(o) for o in object_list]
        count = _int64_tensor([len(payloads)], comm)
    else:
        count = _int64_tensor([0], comm)
    _run(comm.broadcast(count, root))
    n = int(count.numpy()[0])
    if n == 0:
        object_list[:] = []
        return None
    sizes = _int64_tensor([len(p) for p in payloads] if group.rank == root else [0] * n, comm)
    _run(comm.broadcast(sizes, root))
    sizes = [int(s) for s in sizes.numpy()]
    data = _bytes_tensor(b"".join(payloads), comm) if group.rank == root else _new([sum(sizes)], _u8(), comm.device)
    _run(comm.broadcast(data, root))
    if group.rank != root:
        raw = data._raw_bytes()
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        object_list[:] = [pickle.loads(raw[offsets[i]:offsets[i + 1]]) for i in range(n)]
    return None


def scatter_object_list(out_object_list, in_object_list=None, src=0, group=None):
    """Global rank `src`'s in_object_list[i] (picklable) becomes group rank
    i's only item of out_object_list (cleared first), as in Paddle.
    in_object_list is read on src only and must have one object per rank."""
    group, comm = _member_comm(group, "scatter_object_list")
    if comm is None:
        return None
    n = group.nranks
    root = _group_rank(group, src, "scatter_object_list", "src")
    if group.rank == root:
        if in_object_list is None or len(in_object_list) != n:
            got = "None" if in_object_list is None else f"{len(in_object_list)} objects"
            raise ValueError(f"scatter_object_list: in_object_list on the src rank {src} must hold one object per "
                             f"rank of the group ({n}) but holds {got}")
        payloads = [pickle.dumps(o) for o in in_object_list]
        sizes = _int64_tensor([len(p) for p in payloads], comm)
    else:
        sizes = _int64_tensor([0] * n, comm)
    # Sizes first (every rank learns the padded width), then one padded slot per rank.
    _run(comm.broadcast(sizes, root))
    sizes = [int(s) for s in sizes.numpy()]
    width = max(max(sizes), 1)
    source = None
    if group.rank == root:
        source = _bytes_tensor(b"".join(p + b"\0" * (width - len(p)) for p in payloads), comm)
    out = _new([width], _u8(), comm.device)
    _run(comm.scatter(out, source, root))
    out_object_list.clear()
    out_object_list.append(pickle.loads(out._raw_bytes()[:sizes[group.rank]]))
    return None


class P2POp:
    """One point-to-point operation for batch_isend_irecv: `op` is isend or
    irecv (the functions of this module), `peer` a global rank."""

    def __init__(self, op, tensor, peer, group=None):
        if op not in (isend, irecv, send, recv):
            raise ValueError("P2POp: op must be oar.distributed.isend or oar.distributed.irecv, "
                             f"got {getattr(op, '__name__', op)!r}")
        self.op = isend if op in (isend, send) else irecv
        self.tensor = tensor
        self.peer = int(peer)
        self.group = group

    def __repr__(self):
        return f"P2POp({self.op.__name__}, peer={self.peer})"


def batch_isend_irecv(p2p_op_list):
    """Issues every send and receive of the list and returns their tasks
    (in the list's order); wait on them. Note [Batched point to point]:
    sends are issued before receives. A send only posts its data (the cpu
    plugin's eager sends), so two ranks that each send to the other and then
    receive never wait on each other, whatever order their lists are in;
    sends to one peer, and receives from one peer, keep the list's order,
    which is how they are matched."""
    ops = list(p2p_op_list)
    if not ops or not all(isinstance(p, P2POp) for p in ops):
        raise ValueError("batch_isend_irecv: p2p_op_list must be a non-empty list of P2POp")
    groups = {id(resolve(p.group, "batch_isend_irecv")) for p in ops}
    if len(groups) != 1:
        raise ValueError("batch_isend_irecv: every P2POp of one batch must use the same group")
    tasks = [None] * len(ops)
    for i, p in enumerate(ops):
        if p.op is isend:
            tasks[i] = isend(p.tensor, p.peer, p.group)
    for i, p in enumerate(ops):
        if p.op is irecv:
            tasks[i] = irecv(p.tensor, p.peer, p.group)
    return tasks
