"""_C.distributed.Communicator across 2 and 3 processes over a FileStore, on
the mock and (when its plugin has collectives) cpu. Each rank is this file
run as a script; the parent kills every child it started."""
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

import oar
from oar import _C

dist = _C.distributed

pytestmark = pytest.mark.skipif(not hasattr(dist, "FileStore"),
                                reason="_C.distributed has no FileStore yet (the store bindings, branch d-store)")


def _cpu_has_collectives():
    if not hasattr(dist, "InProcessStore"):
        return False
    try:
        dist.Communicator(dist.InProcessStore(), "cpu", 1, 0, key="probe", timeout=2.0).destroy()
        return True
    except Exception:  # noqa: BLE001 - any refusal means no collectives
        return False


DEVICES = ["mock:0"] + (["cpu"] if hasattr(dist, "FileStore") and _cpu_has_collectives() else [])


def _t(values, dtype="float32"):
    return oar.to_tensor(np.asarray(values, dtype=dtype))


# --- rank bodies (run in the children) ---

def scenario_values(comm, store):
    r, n = comm.rank, comm.nranks
    s = n * (n + 1) // 2
    assert (comm.nranks, comm.name, comm.global_ranks) == (n, "world", list(range(n)))
    assert comm.timeout == 10.0

    x = _t([r + 1, 10 * (r + 1)])
    work = comm.all_reduce(x)
    assert work.is_completed()
    np.testing.assert_array_equal(x.numpy(), [s, 10 * s])

    a = _t([r + 1, -(r + 1)], "int32")
    comm.all_reduce(a, op=4)  # avg truncates integers
    np.testing.assert_array_equal(a.numpy(), [s // n, -(s // n)])
    m = _t([r, -r])
    comm.all_reduce(m, op=2)
    np.testing.assert_array_equal(m.numpy(), [n - 1, 0])

    # Async: several in flight, waited in reverse; the work holds the tensor.
    ts = [_t([k * (r + 1)]) for k in range(1, 4)]
    refs = [sys.getrefcount(t) for t in ts]
    works = [comm.all_reduce(t, async_op=True) for t in ts]
    assert [sys.getrefcount(t) for t in ts] == [c + 1 for c in refs]
    for k in (3, 2, 1):
        assert works[k - 1].wait(timeout=10.0) is True
        np.testing.assert_array_equal(ts[k - 1].numpy(), [k * s])
    assert [sys.getrefcount(t) for t in ts] == refs

    out = oar.zeros([2 * n])
    comm.all_gather(out, _t([r, 100 + r]))
    np.testing.assert_array_equal(out.numpy(), np.array([[p, 100 + p] for p in range(n)]).ravel())

    block = oar.zeros([2])
    comm.reduce_scatter(block, _t(np.arange(2 * n) * (r + 1)))
    np.testing.assert_array_equal(block.numpy(), np.array([2 * r, 2 * r + 1]) * s)

    b = _t([7, 8] if r == n - 1 else [0, 0])
    comm.broadcast(b, root=n - 1)
    np.testing.assert_array_equal(b.numpy(), [7, 8])

    red = _t([r + 1])
    comm.reduce(red, root=0, op=1)
    np.testing.assert_array_equal(red.numpy(), [np.prod(np.arange(1, n + 1))] if r == 0 else [r + 1])

    sc = oar.zeros([2])
    comm.scatter(sc, _t(np.arange(2 * n)) if r == 1 else None, root=1)
    np.testing.assert_array_equal(sc.numpy(), [2 * r, 2 * r + 1])

    aa = oar.zeros([n], dtype="int64")
    comm.all_to_all(aa, _t([10 * r + p for p in range(n)], "int64"))
    np.testing.assert_array_equal(aa.numpy(), [10 * p + r for p in range(n)])

    # Uneven: rank r sends (r + p) % 3 elements valued 100r + 10p + k to p.
    counts = [(r + p) % 3 for p in range(n)]
    sent = [100 * r + 10 * p + k for p in range(n) for k in range(counts[p])]
    want = [100 * p + 10 * r + k for p in range(n) for k in range(counts[p])]
    got = oar.zeros([len(want)], dtype="int32")
    comm.all_to_all_v(got, _t(sent, "int32"), counts, counts)
    np.testing.assert_array_equal(got.numpy(), want)

    # A ring of send/recv.
    buf = oar.zeros([3])
    right, left = (r + 1) % n, (r - 1) % n
    if r == 0:  # the classic ring pass: safe when send blocks until received
        comm.send(_t([r, r, r]), right)
        comm.recv(buf, left)
    else:
        comm.recv(buf, left)
        comm.send(_t([r, r, r]), right, async_op=True).wait()
    np.testing.assert_array_equal(buf.numpy(), [left] * 3)

    with pytest.raises(ValueError, match=f"broadcast on group 'world': root {n} is outside"):
        comm.broadcast(b, root=n)
    with pytest.raises(ValueError, match="out has 1 elements but"):
        comm.all_gather(oar.zeros([1]), _t([1.0]))
    view = oar.to_tensor(np.zeros((2, 3), dtype="float32")).t()
    with pytest.raises(ValueError, match=r"all_reduce on group 'world': the input tensor of shape \[3, 2\] is a "
                                         r"strided view; pass t.contiguous\(\)"):
        comm.all_reduce(view)
    with pytest.raises(TypeError, match="must be an oar Tensor"):
        comm.all_reduce([1.0])
    comm.barrier()
    comm.destroy()
    comm.destroy()
    with pytest.raises(ValueError, match="the communicator was destroyed"):
        comm.all_reduce(x)


def scenario_dead(comm, store):
    if comm.rank == 1:
        store.wait("oar/progress/test/py/1", 5.0)  # its progress is published
        os._exit(0)
    x = _t([1, 2, 3])
    start = time.monotonic()
    # The mock times out; Gloo sees the peer's connection close.
    with pytest.raises(RuntimeError, match=r"all_reduce #1 on group 'world' \(rank 0 of 2, f32 x 3\) (did not "
                                           r"complete within 2 s|failed): rank 1 is unreachable or died \(it has "
                                           r"not started a collective on this group\)"):
        comm.all_reduce(x)
    assert time.monotonic() - start < 8


def scenario_mismatch(comm, store):
    comm.destroy()
    checked = dist.Communicator(store, comm.device, 2, comm.rank, key="test/py/check", timeout=5.0, check=1)
    t = oar.zeros([16])
    with pytest.raises(ValueError) as info:
        if checked.rank == 0:
            checked.all_reduce(t)
        else:
            checked.broadcast(t, root=0)
    assert str(info.value) == ("collective mismatch at #1 on group 'world': rank 0 called all_reduce(f32, 16 "
                               "elements) but rank 1 called broadcast(f32, 16 elements, root 0)")


def _child(scenario, rank, nranks, directory, device):
    oar.set_device(device)
    store = dist.FileStore(directory)
    timeout = 2.0 if scenario == "dead" else 10.0
    comm = dist.Communicator(store, device, nranks, rank, key="test/py", timeout=timeout)
    {"values": scenario_values, "dead": scenario_dead, "mismatch": scenario_mismatch}[scenario](comm, store)


# --- the parent side ---

def _run(scenario, nranks, device, limit=90.0):
    with tempfile.TemporaryDirectory() as directory:
        procs = []
        try:
            for r in range(nranks):
                procs.append(subprocess.Popen(
                    [sys.executable, __file__, scenario, str(r), str(nranks), directory + "/store", device],
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
            deadline = time.monotonic() + limit
            outputs = []
            for p in procs:
                out, _ = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
                outputs.append(out)
            for r, (p, out) in enumerate(zip(procs, outputs)):
                assert p.returncode == 0, f"{scenario} on {device}: rank {r} of {nranks} exited {p.returncode}:\n{out}"
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("nranks", [2, 3])
def test_collectives_values(device, nranks):
    _run("values", nranks, device)


@pytest.mark.parametrize("device", DEVICES)
def test_dead_rank_is_named(device):
    _run("dead", 2, device)


@pytest.mark.parametrize("device", DEVICES)
def test_check_mode_mismatch_on_both_ranks(device):
    _run("mismatch", 2, device)


if __name__ == "__main__":
    _child(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5])
