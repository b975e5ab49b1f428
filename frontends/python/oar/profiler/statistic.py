"""The recorded trace of one profiling period: Chrome trace export and the
summary tables of Profiler.summary."""
import json
import os
import tempfile
from enum import Enum


class SortedKeys(Enum):
    """How summary() orders its rows: by host time (CPU*) or by the time of
    the kernels inside each row (GPU*): total, average, max (descending) or min (ascending)."""
    CPUTotal = 0
    CPUAvg = 1
    CPUMax = 2
    CPUMin = 3
    GPUTotal = 4
    GPUAvg = 5
    GPUMax = 6
    GPUMin = 7


_UNITS = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}
_FIELDS = ("name", "cat", "device", "stream", "tid", "start_ns", "end_ns", "bytes", "input_shapes", "input_dtypes")


class ProfilerResult:
    """The events of one recorded period, as dicts with the keys name, cat,
    device, stream, tid, start_ns, end_ns, bytes, input_shapes and input_dtypes
    (strings, empty unless recorded with record_shapes), in order of their start."""

    def __init__(self, events, pid):
        rows = [dict(zip(_FIELDS, e)) if not isinstance(e, dict) else dict(e) for e in events]
        self.events = sorted(rows, key=lambda e: (e["start_ns"], -e["end_ns"]))
        self.pid = pid

    def get_data(self):
        return self.events

    def chrome_trace(self):
        """The Chrome/Perfetto trace: complete ("X") events, times in microseconds."""
        trace = []
        for e in self.events:
            args = {"device": e["device"], "stream": e["stream"], "bytes": e["bytes"]}
            if e.get("input_shapes"):
                args["input_shapes"], args["input_dtypes"] = e["input_shapes"], e["input_dtypes"]
            trace.append({"name": e["name"], "cat": e["cat"], "ph": "X", "ts": e["start_ns"] / 1e3,
                          "dur": (e["end_ns"] - e["start_ns"]) / 1e3, "pid": self.pid, "tid": e["tid"],
                          "args": args})
        return {"displayTimeUnit": "ms", "schemaVersion": "1.0.2", "traceEvents": trace}

    def save(self, path, format="json"):  # noqa: A002 - paddle's name
        """Writes the Chrome trace to `path` (through a temporary file renamed into place)."""
        if format != "json":
            raise ValueError(f"ProfilerResult.save: format must be 'json', but got {format!r}")
        folder = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=".trace-", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(self.chrome_trace(), f)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise


def load_profiler_result(filename):
    """A ProfilerResult from a Chrome trace file that Profiler.export wrote."""
    try:
        with open(filename) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError(f"load_profiler_result: cannot read a trace from '{filename}': {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise ValueError(f"load_profiler_result: '{filename}' is not a Chrome trace (no traceEvents list)")
    events, pid = [], None
    for t in data["traceEvents"]:
        if t.get("ph") != "X":
            continue
        pid = t.get("pid", pid)
        start = round(t["ts"] * 1e3)
        args = t.get("args", {})
        events.append({"name": t["name"], "cat": t.get("cat", ""), "device": args.get("device", ""),
                       "stream": args.get("stream", -1), "tid": t.get("tid", 0), "start_ns": start,
                       "end_ns": start + round(t.get("dur", 0) * 1e3), "bytes": args.get("bytes", 0),
                       "input_shapes": args.get("input_shapes", ""), "input_dtypes": args.get("input_dtypes", "")})
    return ProfilerResult(events, pid)


# ---- summary tables ----

def _with_parents(events):
    """[(event, parent index or None)] in start order; a parent is the
    innermost event of the same thread whose interval holds the event."""
    out, stacks = [], {}
    for i, e in enumerate(events):
        stack = stacks.setdefault(e["tid"], [])
        while stack and events[stack[-1]]["end_ns"] < e["end_ns"]:
            stack.pop()
        out.append((e, stack[-1] if stack else None))
        stack.append(i)
    return out


def _merged_ns(intervals):
    """The time covered by a set of (start, end) intervals, overlaps counted once."""
    total, end = 0, None
    for s, t in sorted(intervals):
        if end is None or s > end:
            total += t - s
            end = t
        elif t > end:
            total += t - end
            end = t
    return total


class _Stat:
    def __init__(self):
        self.calls, self.total, self.max, self.min = 0, 0, 0, None
        self.dev_total, self.dev_max, self.dev_min = 0, 0, None
        self.children = {}

    def add(self, ns, dev_ns):
        self.calls += 1
        self.total += ns
        self.max = max(self.max, ns)
        self.min = ns if self.min is None else min(self.min, ns)
        self.dev_total += dev_ns
        self.dev_max = max(self.dev_max, dev_ns)
        self.dev_min = dev_ns if self.dev_min is None else min(self.dev_min, dev_ns)

    def key(self, sorted_by):
        name = sorted_by.name
        dev = name.startswith("GPU")
        total, mx, mn = (self.dev_total, self.dev_max, self.dev_min) if dev else (self.total, self.max, self.min)
        if name.endswith("Total"):
            return -total
        if name.endswith("Avg"):
            return -total / self.calls
        if name.endswith("Max"):
            return -mx
        return mn


def _table(title, header, rows, unit):
    widths = [max(len(str(r[k])) for r in [header] + rows) + 2 for k in range(len(header))]
    line = "  ".join("-" * w for w in widths)
    fmt = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths))  # noqa: E731
    body = [fmt(r) if isinstance(r, tuple) else r.center(len(line), "-") for r in rows]
    head = f"{title}".center(len(line), "-")
    return "\n".join([head, f"Time unit: {unit}", line, fmt(header), line] + body + [line, ""])


def _stats_by_name(pairs, categories):
    """{name: _Stat} of the events of `categories`, with their nested events per (name, category)."""
    kernel_ns = {}
    for e, parent in pairs:
        if e["cat"] == "Kernel":
            p = parent
            while p is not None:  # device time counts for every enclosing event
                kernel_ns[p] = kernel_ns.get(p, 0) + e["end_ns"] - e["start_ns"]
                p = pairs[p][1]
    stats = {}
    for i, (e, parent) in enumerate(pairs):
        ns = e["end_ns"] - e["start_ns"]
        dev = ns if e["cat"] == "Kernel" else kernel_ns.get(i, 0)
        if e["cat"] in categories:
            stats.setdefault(e["name"], _Stat()).add(ns, dev)
        if parent is not None and pairs[parent][0]["cat"] in categories:
            owner = stats.setdefault(pairs[parent][0]["name"], _Stat())
            owner.children.setdefault(f"{e['name']} ({e['cat']})", _Stat()).add(ns, dev)
    return stats


def _fmt(ns, scale):
    return f"{ns / scale:.2f}"


def build_table(result, sorted_by=SortedKeys.CPUTotal, op_detail=True, thread_sep=False, time_unit="ms",
                views=None):
    """The summary text of a ProfilerResult."""
    if time_unit not in _UNITS:
        raise ValueError(f"summary: time_unit must be one of {list(_UNITS)}, but got {time_unit!r}")
    if not isinstance(sorted_by, SortedKeys):
        raise TypeError(f"summary: sorted_by must be a SortedKeys value, but got {sorted_by!r}")
    scale = _UNITS[time_unit]
    events = result.events
    steps = [e for e in events if e["cat"] == "ProfileStep"]
    span = (sum(e["end_ns"] - e["start_ns"] for e in steps) if steps else
            (max(e["end_ns"] for e in events) - min(e["start_ns"] for e in events)) if events else 0)
    span = max(span, 1)
    names = None if views is None else {v.name for v in (views if isinstance(views, (list, tuple)) else [views])}
    parts = []

    if names is None or "OverView" in names:
        rows = []
        for cat in sorted({e["cat"] for e in events}, key=lambda c: (c != "ProfileStep", c)):
            mine = [e for e in events if e["cat"] == cat]
            ns = _merged_ns([(e["start_ns"], e["end_ns"]) for e in mine])
            rows.append((cat, len(mine), _fmt(ns, scale), f"{100.0 * ns / span:.2f}"))
        parts.append(_table("Overview Summary", ("Event Type", "Calls", "CPU Time", "Ratio (%)"), rows, time_unit))

    groups = [("Operator Summary", {"Operator"}, "OperatorView"), ("Kernel Summary", {"Kernel"}, "KernelView"),
              ("UserDefined Summary", {"UserDefined", "PythonUserDefined"}, "UDFView")]
    threads = sorted({e["tid"] for e in events}) if thread_sep else [None]
    for title, cats, view in groups:
        if names is not None and view not in names:
            continue
        rows = []
        for tid in threads:
            mine = [e for e in events if tid is None or e["tid"] == tid]
            stats = _stats_by_name(_with_parents(mine), cats)
            if not stats:
                continue
            rows.append(f"Thread: {'All threads merged' if tid is None else tid}")
            for name, s in sorted(stats.items(), key=lambda kv: (kv[1].key(sorted_by), kv[0])):
                if s.calls == 0:
                    continue
                rows.append(_row(name, s, scale, span))
                if op_detail:
                    for child, c in sorted(s.children.items(), key=lambda kv: (kv[1].key(sorted_by), kv[0])):
                        rows.append(_row("  " + child, c, scale, span))
        if rows:
            parts.append(_table(title, ("Name", "Calls", "CPU Total / Avg / Max / Min / Ratio(%)",
                                        "Kernel Total / Avg / Max / Min / Ratio(%)"), rows, time_unit))
    return "\n".join(parts)


def _row(name, s, scale, span):
    cpu = " / ".join(_fmt(v, scale) for v in (s.total, s.total / s.calls, s.max, s.min or 0))
    dev = " / ".join(_fmt(v, scale) for v in (s.dev_total, s.dev_total / s.calls, s.dev_max, s.dev_min or 0))
    return (name, s.calls, f"{cpu} / {100.0 * s.total / span:.2f}", f"{dev} / {100.0 * s.dev_total / span:.2f}")
