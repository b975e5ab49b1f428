"""paddle.profiler.RecordEvent: a user scope in the trace."""
import functools
from enum import Enum

from .. import _C


class TracerEventType(Enum):
    """The category of a trace event (its `cat` in the Chrome trace)."""
    Operator = 0
    Dataloader = 1
    ProfileStep = 2
    CudaRuntime = 3
    Kernel = 4
    Memcpy = 5
    Memset = 6
    UserDefined = 7
    OperatorInner = 8
    Forward = 9
    Backward = 10
    Optimization = 11
    Communication = 12
    PythonOp = 13
    PythonUserDefined = 14
    DygraphKernelLaunch = 15
    StaticKernelLaunch = 16


class RecordEvent:
    """A named scope of the trace, recorded while a Profiler records: use
    begin()/end(), `with RecordEvent(name):` or `@RecordEvent(name)`."""

    def __init__(self, name, event_type=TracerEventType.PythonUserDefined):
        if not isinstance(name, str):
            raise TypeError(f"RecordEvent: name must be a str, but got {type(name).__name__}")
        if not isinstance(event_type, TracerEventType):
            raise TypeError(f"RecordEvent: event_type must be a TracerEventType, but got {event_type!r}")
        self.name, self.event_type = name, event_type
        self.event = None

    def begin(self):
        """Starts the scope (recorded only when the profiler records now)."""
        if _C.profiler.recording():
            self.event = _C.profiler.RecordEvent()
            self.event.begin(self.name, self.event_type.name)

    def end(self):
        """Ends the scope; nothing when begin() recorded nothing."""
        if self.event is not None:
            self.event.end()
            self.event = None

    def __enter__(self):
        self.begin()
        return self

    def __exit__(self, *exc):
        self.end()

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with RecordEvent(self.name, self.event_type):
                return fn(*args, **kwargs)
        return wrapped
