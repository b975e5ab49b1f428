"""paddle.profiler: traces of eager ops, static-program ops, kernels and user
scopes (Chrome trace JSON) and summary tables."""
from .profiler import (Profiler, ProfilerState, ProfilerTarget, SummaryView, export_chrome_tracing,
                       make_scheduler)
from .statistic import ProfilerResult, SortedKeys, load_profiler_result
from .utils import RecordEvent, TracerEventType

__all__ = ["Profiler", "ProfilerState", "ProfilerTarget", "RecordEvent", "SortedKeys", "SummaryView",
           "TracerEventType", "export_chrome_tracing", "load_profiler_result", "make_scheduler"]
