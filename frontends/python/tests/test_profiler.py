"""paddle.profiler: scheduler states, Chrome traces of eager ops and of a
to_static program (names, nesting, device/stream/bytes), summary tables."""
import glob
import json
import os

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar import profiler

S = profiler.ProfilerState


@pytest.fixture(autouse=True)
def on_cpu():
    previous = oar.get_device()
    oar.set_device("cpu")
    yield
    oar.set_device(previous)


def test_make_scheduler_states_per_step():
    sched = profiler.make_scheduler(closed=1, ready=1, record=2, repeat=1, skip_first=1)
    assert [sched(i) for i in range(7)] == [S.CLOSED, S.CLOSED, S.READY, S.RECORD, S.RECORD_AND_RETURN,
                                            S.CLOSED, S.CLOSED]
    forever = profiler.make_scheduler(closed=0, ready=1, record=1)
    assert [forever(i) for i in range(4)] == [S.READY, S.RECORD_AND_RETURN] * 2
    with pytest.raises(ValueError, match="record must be an integer >= 1"):
        profiler.make_scheduler(closed=0, ready=0, record=0)


def test_scheduler_tuple_and_default():
    p = profiler.Profiler(scheduler=(2, 5), on_trace_ready=lambda prof: None)
    assert [p.scheduler(i) for i in range(6)] == [S.CLOSED, S.READY, S.RECORD, S.RECORD, S.RECORD_AND_RETURN,
                                                  S.CLOSED]
    q = profiler.Profiler(scheduler=(0, 2), on_trace_ready=lambda prof: None)
    assert [q.scheduler(i) for i in range(3)] == [S.RECORD, S.RECORD_AND_RETURN, S.CLOSED]
    assert profiler.Profiler(on_trace_ready=lambda prof: None).scheduler(100) == S.RECORD
    with pytest.raises(ValueError, match="end > start"):
        profiler.Profiler(scheduler=(3, 3))


def test_scheduler_matches_paddle():
    paddle = pytest.importorskip("paddle")
    ours = profiler.make_scheduler(closed=2, ready=1, record=3, repeat=2, skip_first=1)
    theirs = paddle.profiler.make_scheduler(closed=2, ready=1, record=3, repeat=2, skip_first=1)
    assert [ours(i).name for i in range(16)] == [theirs(i).name for i in range(16)]


def _run_steps(prof, n, x):
    prof.start()
    for _ in range(n):
        with profiler.RecordEvent("mystep"):
            F.softmax(oar.matmul(x, x))
        prof.step()
    prof.stop()


def _trace(folder):
    files = glob.glob(os.path.join(folder, "*.paddle_trace.json"))
    assert len(files) == 1, files
    with open(files[0]) as f:
        return json.load(f)["traceEvents"]


def _inside(inner, outer):
    return (inner["tid"] == outer["tid"] and inner["ts"] >= outer["ts"]
            and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + 1e-3)


def test_eager_trace_has_steps_ops_kernels_and_user_scopes(tmp_path):
    x = oar.to_tensor(np.ones([16, 16], np.float32))
    prof = profiler.Profiler(scheduler=(1, 3), on_trace_ready=profiler.export_chrome_tracing(str(tmp_path)))
    _run_steps(prof, 4, x)
    events = _trace(str(tmp_path))
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in events)
    steps = sorted(e["name"] for e in events if e["cat"] == "ProfileStep")
    assert steps == ["ProfileStep#1", "ProfileStep#2"]  # step 0 is READY, step 3 CLOSED
    ops = [e for e in events if e["cat"] == "Operator" and e["name"] == "matmul"]
    kernels = [e for e in events if e["cat"] == "Kernel" and e["name"] == "matmul"]
    users = [e for e in events if e["cat"] == "PythonUserDefined"]
    assert len(ops) == len(kernels) == len(users) == 2
    for op in ops:
        assert op["args"]["device"] == "cpu:0" and op["args"]["stream"] == 0
        assert op["args"]["bytes"] >= 16 * 16 * 4
        assert any(_inside(k, op) for k in kernels)
        assert any(_inside(op, u) for u in users)
        assert any(_inside(op, s) for s in events if s["cat"] == "ProfileStep")
    assert any(e["name"] == "softmax" and e["cat"] == "Operator" for e in events)
    assert not oar._C.profiler.recording()


def test_record_shapes(tmp_path):
    x = oar.to_tensor(np.ones([2, 3], np.float32))
    w = oar.to_tensor(np.ones([3, 4], np.float32))
    for record, want in ((True, ("[[2, 3], [3, 4]]", "[float32, float32]")), (False, None)):
        folder = str(tmp_path / str(record))
        with profiler.Profiler(record_shapes=record, on_trace_ready=profiler.export_chrome_tracing(folder)):
            oar.matmul(x, w)
        op = next(e for e in _trace(folder) if e["cat"] == "Operator" and e["name"] == "matmul")
        got = (op["args"]["input_shapes"], op["args"]["input_dtypes"]) if "input_shapes" in op["args"] else None
        assert got == want


def test_recorder_off_records_nothing():
    oar._C.profiler.collect()
    x = oar.to_tensor(np.ones([4, 4], np.float32))
    oar.matmul(x, x)
    with profiler.RecordEvent("not recorded"):
        pass
    assert oar._C.profiler.collect() == []


def test_static_program_ops_show_up_inside_the_program_scope(tmp_path):
    @oar.jit.to_static
    def f(a, b):
        return F.relu(oar.matmul(a, b)) * 2.0

    a = oar.to_tensor(np.ones([3, 4], np.float32))
    b = oar.to_tensor(np.ones([4, 5], np.float32))
    f(a, b)  # traced and compiled before profiling
    prof = profiler.Profiler(on_trace_ready=profiler.export_chrome_tracing(str(tmp_path)))
    prof.start()
    out = f(a, b)
    prof.stop()
    np.testing.assert_allclose(out.numpy(), np.full([3, 5], 8.0))
    events = _trace(str(tmp_path))
    programs = [e for e in events if e["cat"] == "Program"]
    assert programs, sorted({(e["name"], e["cat"]) for e in events})
    inner = [e for e in events if e["cat"] == "Operator" and any(_inside(e, p) for p in programs)]
    names = {e["name"] for e in inner}
    assert "matmul" in names, names
    mm = next(e for e in inner if e["name"] == "matmul")
    assert any(k["cat"] == "Kernel" and _inside(k, mm) for k in events)


def test_summary_tables(tmp_path, capsys):
    x = oar.to_tensor(np.ones([8, 8], np.float32))
    prof = profiler.Profiler(scheduler=(0, 3), on_trace_ready=lambda p: None)
    _run_steps(prof, 3, x)
    prof.summary(time_unit="us")
    text = capsys.readouterr().out
    assert "Overview Summary" in text and "Operator Summary" in text and "UserDefined Summary" in text
    assert "Time unit: us" in text
    rows = {line.split()[0]: line.split() for line in text.splitlines() if line.startswith(("matmul", "mystep"))}
    assert rows["matmul"][1] == "3" and rows["mystep"][1] == "3"  # calls
    assert any(line.startswith("  matmul (Kernel)") for line in text.splitlines())
    prof.summary(op_detail=False, sorted_by=profiler.SortedKeys.CPUMin, thread_sep=True)
    text = capsys.readouterr().out
    assert "(Kernel)" not in text.split("Kernel Summary")[0] and "Thread: " in text
    with pytest.raises(ValueError, match="time_unit must be one of"):
        prof.summary(time_unit="min")
    path = str(tmp_path / "t.json")
    prof.export(path)
    loaded = profiler.load_profiler_result(path)
    assert len(loaded.get_data()) == len(prof.profiler_result.get_data())
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]


def test_record_event_as_decorator_and_bad_arguments(tmp_path):
    @profiler.RecordEvent("decorated")
    def g(t):
        return oar.exp(t)

    prof = profiler.Profiler(on_trace_ready=profiler.export_chrome_tracing(str(tmp_path), "worker"))
    with prof:
        g(oar.to_tensor([1.0]))
    events = _trace(str(tmp_path))
    assert os.path.basename(glob.glob(str(tmp_path / "*.json"))[0]).startswith("worker_time_")
    deco = next(e for e in events if e["name"] == "decorated")
    assert any(e["name"] == "exp" and _inside(e, deco) for e in events)
    with pytest.raises(TypeError, match="name must be a str"):
        profiler.RecordEvent(3)
    with pytest.raises(ValueError, match="format must be 'json'"):
        prof.export(str(tmp_path / "x.pb"), "pb")
