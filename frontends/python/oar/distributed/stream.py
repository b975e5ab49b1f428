"""oar.distributed.stream (paddle.distributed.stream): the collectives with
Paddle's stream signatures. Each returns a Task (sync_op=True: already
completed). `use_calc_stream` is accepted and has no effect here: on cpu
there are no streams, and on a device with streams the communicator already
orders its collectives after the compute that produced their inputs.

Where Paddle's stream API takes a tensor instead of a tensor list
(all_gather, alltoall, reduce_scatter, scatter, gather), the tensor is the
concatenation along dim 0 of the list's pieces."""
from . import collective as _c
from .collective import ReduceOp  # noqa: F401 - paddle.distributed.stream.ReduceOp

__all__ = ["all_reduce", "all_gather", "alltoall", "alltoall_single", "broadcast", "reduce", "reduce_scatter",
           "scatter", "gather", "send", "recv"]


class _Done:
    """The Task of a synchronous call: completed already."""

    def wait(self, timeout=None):
        return True

    def is_completed(self):
        return True


def _task(t):
    return _Done() if t is None else t


def _is_list(x):
    return isinstance(x, (list, tuple))


def _split0(t, n, what):
    if t.shape[0] % n != 0:
        raise ValueError(f"stream.{what}: dim 0 of the tensor ({t.shape[0]}) is not divisible by the group size ({n})")
    rows = t.shape[0] // n
    return [t[i * rows:(i + 1) * rows] for i in range(n)]


def _nranks(group):
    g = _c.resolve(group, "stream")
    return g.nranks


def all_reduce(tensor, op=ReduceOp.SUM, group=None, sync_op=True, use_calc_stream=False):
    return _task(_c.all_reduce(tensor, op, group, sync_op))


def broadcast(tensor, src, group=None, sync_op=True, use_calc_stream=False):
    return _task(_c.broadcast(tensor, src, group, sync_op))


def reduce(tensor, dst=0, op=ReduceOp.SUM, group=None, sync_op=True, use_calc_stream=False):
    return _task(_c.reduce(tensor, dst, op, group, sync_op))


def send(tensor, dst=0, group=None, sync_op=True, use_calc_stream=False):
    return _task(_c.send(tensor, dst, group, sync_op))


def recv(tensor, src=0, group=None, sync_op=True, use_calc_stream=False):
    return _task(_c.recv(tensor, src, group, sync_op))


def all_gather(tensor_or_tensor_list, tensor, group=None, sync_op=True, use_calc_stream=False):
    if _is_list(tensor_or_tensor_list):
        return _task(_c.all_gather(tensor_or_tensor_list, tensor, group, sync_op))
    out = tensor_or_tensor_list
    group, comm = _c._member_comm(group, "stream.all_gather")
    if comm is None:
        return _Done()
    _c._check_tensor(tensor, comm, "stream.all_gather")
    _c._check_tensor(out, comm, "stream.all_gather", "out")
    if out.numel() != group.nranks * tensor.numel() or out.dtype != tensor.dtype:
        raise ValueError(f"stream.all_gather: the output tensor must hold {group.nranks} x {tensor.numel()} "
                         f"{tensor.dtype} elements (the group's inputs along dim 0) but holds {out.numel()} {out.dtype}")
    src = tensor.contiguous() if not tensor.is_contiguous() else tensor
    buf, write_back = _c._contiguous(out)
    return _task(_c._issue(group, comm.all_gather(buf, src, async_op=not sync_op), sync_op, write_back))


def alltoall(out_tensor_or_tensor_list, in_tensor_or_tensor_list, group=None, sync_op=True, use_calc_stream=False):
    if _is_list(out_tensor_or_tensor_list):
        return _task(_c.alltoall(out_tensor_or_tensor_list, in_tensor_or_tensor_list, group, sync_op))
    return _task(_c.alltoall_single(out_tensor_or_tensor_list, in_tensor_or_tensor_list, None, None, group, sync_op))


def alltoall_single(out_tensor, in_tensor, out_split_sizes=None, in_split_sizes=None, group=None, sync_op=True,
                    use_calc_stream=False):
    # Note the order: the stream API takes out_split_sizes first.
    return _task(_c.alltoall_single(out_tensor, in_tensor, in_split_sizes, out_split_sizes, group, sync_op))


def reduce_scatter(tensor, tensor_or_tensor_list, op=ReduceOp.SUM, group=None, sync_op=True, use_calc_stream=False):
    pieces = tensor_or_tensor_list if _is_list(tensor_or_tensor_list) else \
        _split0(tensor_or_tensor_list, _nranks(group), "reduce_scatter")
    return _task(_c.reduce_scatter(tensor, pieces, op, group, sync_op))


def scatter(tensor, tensor_or_tensor_list=None, src=0, group=None, sync_op=True, use_calc_stream=False):
    pieces = tensor_or_tensor_list
    if pieces is not None and not _is_list(pieces):
        pieces = _split0(pieces, _nranks(group), "scatter")
    return _task(_c.scatter(tensor, pieces, src, group, sync_op))


def gather(tensor, gather_list=None, dst=0, group=None, sync_op=True, use_calc_stream=False):
    return _task(_c.gather(tensor, gather_list, dst, group, sync_op))
