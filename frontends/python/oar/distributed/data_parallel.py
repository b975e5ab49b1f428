"""oar.DataParallel (paddle.DataParallel): data-parallel training over a group.

Note [Gradient buckets]
The wrapper broadcasts the parameters and buffers from the group's first
rank at construction, so every rank starts equal. The trainable parameters,
in reverse registration order (roughly the order backward finishes them),
are cut into buckets of one dtype: the first bucket of a dtype holds
last_comm_buffer_size MB, the others comm_buffer_size MB (a bucket closes
once it reaches its size). Each parameter carries a gradient hook; the
engine calls it as soon as that parameter's gradient is complete (Note
[Leaf gradients when ready] in core/src/autograd/engine.cpp), while the
rest of the backward still runs. A bucket whose parameters are all ready is
flattened into one buffer and its all-reduce (AVG) is started
asynchronously: on cpu, Gloo runs it on the communicator's worker thread,
so it overlaps the remaining backward. Buckets are started strictly in
bucket order, which is the same on every rank, so the ranks' collectives
match even when their gradients finish in different orders. The first hook
of a pass queues an end-of-pass callback (oar._C.queue_backward_callback):
it starts the buckets still open (a parameter this rank did not use adds
its accumulated gradient, or zeros), waits for all of them, and makes each
parameter's .grad its slice of the averaged buffer.

Gradients accumulate locally inside no_sync(); the next synchronized pass
reduces the accumulated value (.grad + this pass's gradient). A parameter
no rank used keeps its .grad as it was with find_unused_parameters=True
(learned from one extra all-reduce of "used" flags); without it, a
parameter this rank did not use is an error after the pass (the ranks stay
matched: its bucket was reduced with zeros).
"""
import contextlib
import weakref

import numpy as np

from .. import _C
from ..autograd import no_grad
from ..creation import clone_data, to_tensor
from ..nn.layer import Layer

_ops = _C.ops
_MB = 1024 * 1024
# The engine's .grad, without the lazy zeros of clear_grad (Note [Lazy zero grads]).
_core_grad = _C.Tensor.grad.fget


def plan_buckets(params, comm_buffer_size=25, last_comm_buffer_size=1):
    """Bucket plan for `params` (registration order): a list of buckets in
    launch order, each a list of indices into params. Parameters are taken in
    reverse order and grouped by dtype; the first bucket of each dtype closes
    at last_comm_buffer_size MB, later ones at comm_buffer_size MB
    (Note [Gradient buckets])."""
    if comm_buffer_size <= 0 or last_comm_buffer_size <= 0:
        raise ValueError(f"DataParallel: comm_buffer_size and last_comm_buffer_size must be positive (MB), got "
                         f"{comm_buffer_size} and {last_comm_buffer_size}")
    buckets = []
    open_bucket = {}  # dtype -> [indices, bytes, limit]
    started = set()   # dtypes that already had a bucket
    for i in reversed(range(len(params))):
        p = params[i]
        dtype = p.dtype
        entry = open_bucket.get(dtype)
        if entry is None:
            limit = (comm_buffer_size if dtype in started else last_comm_buffer_size) * _MB
            started.add(dtype)
            entry = open_bucket[dtype] = [[], 0, limit]
            buckets.append(entry[0])
        entry[0].append(i)
        entry[1] += _numel(p) * p.element_size()
        if entry[1] >= entry[2]:
            del open_bucket[dtype]
    return buckets


def _numel(t):
    n = 1
    for d in t.shape:
        n *= int(d)
    return n


def _flatten(tensors):
    """One new contiguous 1-D tensor holding the tensors' values, in order."""
    if len(tensors) == 1:
        return _ops.reshape(clone_data(tensors[0]), [-1])
    return _ops.concat([_ops.reshape(t, [-1]) for t in tensors], 0)


def _unflatten(flat, like):
    """Slices of `flat` shaped as the tensors in `like`."""
    out, start = [], 0
    for t in like:
        n = _numel(t)
        out.append(_ops.reshape(_ops.slice(flat, [0], [start], [start + n]), list(t.shape)))
        start += n
    return out


class _Bucket:
    """One bucket of a DataParallel: its parameters and this pass's state."""

    def __init__(self, index, params):
        self.index = index
        self.params = params  # not owned: the wrapped layer's parameters
        self.grads = [None] * len(params)  # per parameter: the value to reduce this pass
        self.pending = len(params)
        self.flat = None
        self.task = None

    def reset(self):
        self.grads = [None] * len(self.params)
        self.pending = len(self.params)
        self.flat = self.task = None


class DataParallel(Layer):
    """paddle.DataParallel: runs `layers` on this rank's share of the batch and
    averages the gradients over the group after backward, overlapping the
    all-reduces with the backward pass (Note [Gradient buckets]).

    strategy is accepted for Paddle's signature (the group comes from
    oar.distributed.init_parallel_env or `group`). comm_buffer_size and
    last_comm_buffer_size are bucket sizes in MB. state_dict() and
    set_state_dict() are the wrapped layer's (no prefix)."""

    def __init__(self, layers, strategy=None, comm_buffer_size=25, last_comm_buffer_size=1,
                 find_unused_parameters=False, group=None):
        super().__init__()
        if not isinstance(layers, Layer):
            raise TypeError(f"DataParallel: expected an oar.nn.Layer to wrap, got {type(layers).__name__}")
        from . import collective, parallel
        if not parallel.is_initialized():
            raise RuntimeError("DataParallel: the default group is not initialized; call "
                               "oar.distributed.init_parallel_env() first")
        self._layers = layers
        object.__setattr__(self, "_collective", collective)
        object.__setattr__(self, "_group", group)
        self.find_unused_parameters = bool(find_unused_parameters)
        self.comm_buffer_size, self.last_comm_buffer_size = comm_buffer_size, last_comm_buffer_size
        self._nranks = parallel.get_world_size(group)
        self._grad_need_sync = True
        self._sync_pass = True
        self._pass_running = False
        # The last synchronized pass, in order: ("grad_ready", b) per parameter of bucket b,
        # ("allreduce_start", b), ("backward_end", None), ("allreduce_end", b).
        self.event_log = []
        self._params = [p for p in layers.parameters() if not p.stop_gradient]
        plan = plan_buckets(self._params, comm_buffer_size, last_comm_buffer_size)
        self._buckets = [_Bucket(b, [self._params[i] for i in members]) for b, members in enumerate(plan)]
        self._next_launch = 0
        self._hook_handles = []
        if self._nranks > 1:
            self._sync_params_buffers()
            self._register_grad_hooks()

    # ---- construction ----
    def _source_rank(self):
        """The global rank of the group's first member (broadcast's src)."""
        ranks = getattr(self._group, "ranks", None)
        return ranks[0] if ranks else 0

    @no_grad()
    def _sync_params_buffers(self):
        tensors = list(self._layers.parameters()) + list(self._layers.buffers())
        by_dtype = {}
        for t in tensors:
            by_dtype.setdefault(t.dtype, []).append(t)
        src = self._source_rank()
        for group in by_dtype.values():
            flat = _flatten([t.detach() for t in group])
            self._collective.broadcast(flat, src, group=self._group)
            for t, value in zip(group, _unflatten(flat, group)):
                t._set_data_(clone_data(value))  # its own storage, not a view of the flat buffer

    def _register_grad_hooks(self):
        me = weakref.ref(self)
        for bucket in self._buckets:
            for slot, p in enumerate(bucket.params):
                def hook(g, bucket=bucket, slot=slot):
                    dp = me()
                    if dp is not None:
                        dp._grad_ready(bucket, slot, g)
                    return None
                self._hook_handles.append(p.register_hook(hook))

    # ---- the backward pass ----
    def _begin_pass(self):
        self._pass_running = True
        self.event_log = []
        self._next_launch = 0
        for bucket in self._buckets:
            bucket.reset()
        _C.queue_backward_callback(self._end_pass)

    def _grad_ready(self, bucket, slot, g):
        if not self._sync_pass:
            return
        if not self._pass_running:
            self._begin_pass()
        if bucket.grads[slot] is not None:
            return  # the engine hands a leaf out once per pass; never reduce a slot twice
        previous = _core_grad(bucket.params[slot])
        bucket.grads[slot] = g if previous is None else _ops.add(previous, g)
        bucket.pending -= 1
        self.event_log.append(("grad_ready", bucket.index))
        self._launch_ready()

    def _launch_ready(self):
        while self._next_launch < len(self._buckets) and self._buckets[self._next_launch].pending == 0:
            self._launch(self._buckets[self._next_launch])
            self._next_launch += 1

    def _launch(self, bucket):
        bucket.flat = _flatten(bucket.grads)
        bucket.task = self._collective.all_reduce(bucket.flat, self._collective.ReduceOp.AVG, group=self._group,
                                                  sync_op=False)
        self.event_log.append(("allreduce_start", bucket.index))

    def _end_pass(self):
        self.event_log.append(("backward_end", None))
        unused = []
        for bucket in self._buckets[self._next_launch:]:
            for slot, p in enumerate(bucket.params):
                if bucket.grads[slot] is None:
                    unused.append(p)
                    previous = _core_grad(p)
                    bucket.grads[slot] = previous if previous is not None else _ops.full(
                        list(p.shape), 0.0, p.dtype)
                    bucket.pending -= 1
        self._launch_ready()
        # Every rank takes part in the flags' all-reduce, whether or not it left a parameter unused.
        used_anywhere = self._used_anywhere(unused) if self.find_unused_parameters else None
        try:
            for bucket in self._buckets:
                bucket.task.wait()
                self.event_log.append(("allreduce_end", bucket.index))
                for p, value in zip(bucket.params, _unflatten(bucket.flat, bucket.params)):
                    if used_anywhere is None or used_anywhere.get(id(p), True):
                        p._set_grad(value)
        finally:
            self._pass_running = False
            for bucket in self._buckets:
                bucket.reset()
        if unused and not self.find_unused_parameters:
            names = {id(p): n for n, p in self._layers.named_parameters()}
            order = {id(p): i for i, p in enumerate(self._params)}
            listed = ", ".join(names.get(id(p), "?") for p in sorted(unused, key=lambda p: order[id(p)]))
            raise RuntimeError(
                f"DataParallel: rank {self._collective_rank()} did not use parameter(s) {listed} in this backward "
                f"pass; their gradients were averaged as zeros. Pass find_unused_parameters=True to DataParallel "
                f"when a forward leaves parameters unused")

    def _used_anywhere(self, unused):
        """id(p) -> whether any rank used p this pass (one all-reduce MAX of flags)."""
        unused_ids = {id(p) for p in unused}
        flags = [0.0 if id(p) in unused_ids else 1.0 for p in self._params]
        t = to_tensor(np.asarray(flags, dtype=np.float32), place=self._params[0].place)
        self._collective.all_reduce(t, self._collective.ReduceOp.MAX, group=self._group)
        return {id(p): bool(v) for p, v in zip(self._params, t.numpy().tolist())}

    def _collective_rank(self):
        from . import parallel
        return parallel.get_rank(self._group) if self._group is not None else parallel.get_rank()

    # ---- Paddle's surface ----
    def forward(self, *inputs, **kwargs):
        if self._pass_running:
            # The last backward raised before its end: its callback was dropped
            # with it. Start the next one from a clean state.
            self._pass_running = False
            for bucket in self._buckets:
                bucket.reset()
        self._sync_pass = self._grad_need_sync
        return self._layers(*inputs, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """Inside: forward/backward without communication; gradients accumulate
        locally and the next synchronized backward averages the sum."""
        previous = self._grad_need_sync
        self._grad_need_sync = False
        try:
            yield
        finally:
            self._grad_need_sync = previous

    def state_dict(self, destination=None, include_sublayers=True, structured_name_prefix="", use_hook=True,
                   keep_vars=True):
        return self._layers.state_dict(destination, include_sublayers, structured_name_prefix, use_hook, keep_vars)

    def set_state_dict(self, state_dict, use_structured_name=True):
        return self._layers.set_state_dict(state_dict, use_structured_name)

    set_dict = set_state_dict
    load_dict = set_state_dict

    def scale_loss(self, loss):
        """Paddle 2.x API: the loss as is (the gradients are averaged, not summed)."""
        return loss

    def apply_collective_grads(self):
        """Paddle 2.x API: nothing to do (backward already averaged the gradients)."""
