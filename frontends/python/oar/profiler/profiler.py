"""paddle.profiler.Profiler: a step scheduler over the core's trace recorder
(Note [Trace recorder] in core/src/runtime/profiler.cpp)."""
import datetime
import os
import socket
import time
import warnings
from enum import Enum

from .. import _C
from .statistic import ProfilerResult, SortedKeys, build_table
from .utils import RecordEvent, TracerEventType

_rec = _C.profiler


class ProfilerState(Enum):
    """CLOSED: off; READY: on but not recording; RECORD: recording;
    RECORD_AND_RETURN: the last recorded step of a period (the trace is handed out after it)."""
    CLOSED = 0
    READY = 1
    RECORD = 2
    RECORD_AND_RETURN = 3


class ProfilerTarget(Enum):
    CPU = 0
    GPU = 1
    XPU = 2
    CUSTOM_DEVICE = 3


class SummaryView(Enum):
    DeviceView = 0
    OverView = 1
    ModelView = 2
    DistributedView = 3
    KernelView = 4
    OperatorView = 5
    MemoryView = 6
    MemoryManipulationView = 7
    UDFView = 8


def make_scheduler(*, closed, ready, record, repeat=0, skip_first=0):
    """A scheduler: after `skip_first` CLOSED steps, periods of `closed` CLOSED,
    `ready` READY and `record` recording steps (the last RECORD_AND_RETURN),
    `repeat` times (0: forever), then CLOSED."""
    for name, v, low in (("closed", closed, 0), ("ready", ready, 0), ("record", record, 1), ("repeat", repeat, 0),
                         ("skip_first", skip_first, 0)):
        if not isinstance(v, int) or v < low:
            raise ValueError(f"make_scheduler: {name} must be an integer >= {low}, but got {v!r}")
    period = closed + ready + record

    def scheduler(step):
        if step < 0:
            raise ValueError(f"make_scheduler: the step must be >= 0, but got {step}")
        if step < skip_first:
            return ProfilerState.CLOSED
        step -= skip_first
        if repeat > 0 and step // period >= repeat:
            return ProfilerState.CLOSED
        k = step % period
        if k < closed:
            return ProfilerState.CLOSED
        if k < closed + ready:
            return ProfilerState.READY
        return ProfilerState.RECORD if k < period - 1 else ProfilerState.RECORD_AND_RETURN
    return scheduler


def _default_scheduler(step):
    return ProfilerState.RECORD


def export_chrome_tracing(dir_name, worker_name=None):
    """An on_trace_ready callback writing each trace as Chrome trace JSON into
    `dir_name` (<worker_name>_time_<timestamp>.paddle_trace.json)."""
    try:
        os.makedirs(dir_name, exist_ok=True)
    except OSError as e:
        raise RuntimeError(f"export_chrome_tracing: cannot create the directory '{dir_name}': {e}") from None

    def handle(prof):
        name = worker_name or f"host_{socket.gethostname()}pid_{os.getpid()}"
        stamp = datetime.datetime.now().strftime("%Y_%m_%d_%H_%M_%S_%f")
        prof.export(os.path.join(dir_name, f"{name}_time_{stamp}.paddle_trace.json"), "json")
    return handle


def _scheduler_of(scheduler):
    if scheduler is None:
        return _default_scheduler
    if callable(scheduler):
        return scheduler
    if isinstance(scheduler, (tuple, list)):
        if len(scheduler) != 2 or not scheduler[1] > scheduler[0]:
            raise ValueError(f"Profiler: scheduler must be (start, end) with end > start, but got {scheduler!r}")
        start, end = max(int(scheduler[0]), 0), int(scheduler[1])
        return make_scheduler(closed=max(start - 1, 0), ready=1 if start >= 1 else 0, record=end - start, repeat=1)
    raise TypeError(f"Profiler: scheduler must be None, a callable or (start, end), but got {type(scheduler).__name__}")


class Profiler:
    """Records the ops, kernels and user scopes of the steps its scheduler
    marks RECORD; after each recorded period (and at stop) calls
    on_trace_ready(self) (default: export_chrome_tracing('./profiler_log/')).
    record_shapes: eager op events carry their input shapes and dtypes.
    Every event carries the bytes allocated during it, so profile_memory
    changes nothing; timer_only: only step timing (step_info), no trace."""

    def __init__(self, *, targets=None, scheduler=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, timer_only=False, emit_nvtx=False, custom_device_types=None,
                 with_flops=False):
        self.targets = set(targets) if targets else {ProfilerTarget.CPU, ProfilerTarget.CUSTOM_DEVICE}
        for t in self.targets:
            if not isinstance(t, ProfilerTarget):
                raise TypeError(f"Profiler: targets must be ProfilerTarget values, but got {t!r}")
        self.scheduler = _scheduler_of(scheduler)
        self.on_trace_ready = export_chrome_tracing("./profiler_log/") if on_trace_ready is None else on_trace_ready
        self.record_shapes, self.profile_memory, self.timer_only = record_shapes, profile_memory, timer_only
        self.step_num = 0
        self.previous_state = ProfilerState.CLOSED
        self.current_state = self.scheduler(self.step_num)
        self.profiler_result = None
        self._step_event = None
        self._events = []
        self._step_times = []  # (seconds, num_samples) per finished step
        self._step_start = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    # ---- recorder transitions ----
    def _prepare(self):
        self._events = []
        _rec.collect()  # drop what another recorder left

    def _begin(self):
        _rec.start(bool(self.record_shapes))

    def _finish(self):
        _rec.stop()
        self._events.extend(_rec.collect())
        self.profiler_result = ProfilerResult(self._events, os.getpid())
        self._events = []

    def _open_step(self):
        self._step_start = time.perf_counter()
        if self.timer_only:
            return
        self._step_event = RecordEvent(f"ProfileStep#{self.step_num}", TracerEventType.ProfileStep)
        self._step_event.begin()

    def _close_step(self, num_samples):
        if self._step_start is not None:
            self._step_times.append((time.perf_counter() - self._step_start, num_samples))
        if self._step_event is not None:
            self._step_event.end()
            self._step_event = None

    def start(self):
        """Enters step 0 in the scheduler's state for it."""
        if not self.timer_only:
            if self.current_state in (ProfilerState.READY, ProfilerState.RECORD, ProfilerState.RECORD_AND_RETURN):
                self._prepare()
            if self.current_state in (ProfilerState.RECORD, ProfilerState.RECORD_AND_RETURN):
                self._begin()
        self._open_step()

    def stop(self):
        """Ends profiling; a recording in progress is handed to on_trace_ready."""
        self._close_step(None)
        if self.timer_only:
            return
        if self.current_state in (ProfilerState.RECORD, ProfilerState.RECORD_AND_RETURN):
            self._finish()
            if self.on_trace_ready:
                self.on_trace_ready(self)
        elif self.current_state == ProfilerState.READY:
            _rec.stop()
        self.current_state = ProfilerState.CLOSED

    def step(self, num_samples=None):
        """Marks the start of the next step and moves to the scheduler's state for it."""
        self._close_step(num_samples)
        self.previous_state = self.current_state
        self.step_num += 1
        self.current_state = self.scheduler(self.step_num)
        if not self.timer_only:
            self._transition(self.previous_state, self.current_state)
        self._open_step()

    def _transition(self, before, after):
        S = ProfilerState
        recording_before = before in (S.RECORD, S.RECORD_AND_RETURN)
        recording_after = after in (S.RECORD, S.RECORD_AND_RETURN)
        if before == S.RECORD_AND_RETURN:
            self._finish()
            if self.on_trace_ready:
                self.on_trace_ready(self)
            if after != S.CLOSED:
                self._prepare()
            if recording_after:
                self._begin()
            return
        if recording_before and not recording_after:
            warnings.warn(f"Profiler: the schedule goes from {before.name} to {after.name}; "
                          "the steps recorded so far are dropped", stacklevel=3)
            _rec.stop()
            self._prepare()
            return
        if before == S.CLOSED and after != S.CLOSED:
            self._prepare()
        if not recording_before and recording_after:
            self._begin()

    def step_info(self, unit=None):
        """Average step time and throughput of the steps since the last call."""
        times, self._step_times = self._step_times, []
        if not times:
            return "batch_cost: 0.00000 s"
        cost = sum(t for t, _ in times) / len(times)
        samples = [n for _, n in times if n is not None]
        unit = unit or "samples"
        ips = (sum(samples) / sum(t for t, _ in times), f"{unit}/s") if samples else (1.0 / cost, "steps/s")
        return f"batch_cost: {cost:.5f} s, ips: {ips[0]:.3f} {ips[1]}"

    def export(self, path="", format="json"):  # noqa: A002 - paddle's name
        """Writes the last trace to `path` (format 'json': Chrome trace)."""
        if format != "json":
            raise ValueError(f"Profiler.export: format must be 'json' (protobuf export is not supported), "
                             f"but got {format!r}")
        if self.profiler_result:
            self.profiler_result.save(path, format)

    def summary(self, sorted_by=SortedKeys.CPUTotal, op_detail=True, thread_sep=False, time_unit="ms", views=None):
        """Prints the overview, operator, kernel and user-defined tables of the last trace."""
        if self.profiler_result:
            print(build_table(self.profiler_result, sorted_by=sorted_by, op_detail=op_detail,
                              thread_sep=thread_sep, time_unit=time_unit, views=views))
