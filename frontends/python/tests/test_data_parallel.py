"""oar.DataParallel and fleet: 2-rank training equals one process on the
whole batch; bucket plan; overlap through the event order; no_sync;
unused parameters. Ranks are processes (dp_worker.py) on cpu (Gloo) and mock."""
import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

import oar
from oar.distributed.data_parallel import plan_buckets

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import dp_worker  # noqa: E402

RANKS = 2
MB = 1024 * 1024
needs_store = pytest.mark.skipif(not hasattr(oar._C.distributed, "TCPStore"),
                                 reason="_C.distributed has no TCPStore yet (the store bindings, branch d-store)")


# ---- the bucket plan (no communication) ----

def f32(n):
    return oar.zeros([n], dtype="float32")


def test_plan_takes_parameters_in_reverse_and_closes_buckets_at_their_size():
    # 4 bytes each: a 1000 (4000 B), b 100 (400 B), c 300000 (1.2 MB), d 10 (40 B).
    params = [f32(1000), f32(100), f32(300000), f32(10)]
    # First bucket 1 MB: d then c (1.2 MB >= 1 MB closes it); the next, 2 MB: b, a (never full).
    assert plan_buckets(params, comm_buffer_size=2, last_comm_buffer_size=1) == [[3, 2], [1, 0]]
    # Then 300 B buckets: b (400 B) fills one alone, a the next.
    assert plan_buckets(params, comm_buffer_size=300 / MB, last_comm_buffer_size=1) == [[3, 2], [1], [0]]
    # 40 B first bucket: d alone; then 400 B: c alone, b alone, a alone.
    assert plan_buckets(params, comm_buffer_size=400 / MB, last_comm_buffer_size=40 / MB) == [[3], [2], [1], [0]]


def test_plan_keeps_one_dtype_per_bucket():
    params = [f32(10), oar.zeros([10], dtype="float64"), f32(10), oar.zeros([10], dtype="float64")]
    # f32: 40 B each, f64: 80 B each; first buckets 1 MB: nothing closes.
    assert plan_buckets(params) == [[3, 1], [2, 0]]
    # 80 B first bucket per dtype: f64 [3] closes alone, f32 [2, 0] (80 B) closes at 0; then f64 [1].
    assert plan_buckets(params, comm_buffer_size=1, last_comm_buffer_size=80 / MB) == [[3], [2, 0], [1]]


def test_plan_rejects_a_non_positive_size():
    with pytest.raises(ValueError, match="must be positive"):
        plan_buckets([f32(1)], comm_buffer_size=0)


# ---- 2 ranks as processes ----

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_RUNS = {}  # (scenario, device) -> results: a scenario runs once per session


def run_ranks(scenario, device, tmp_path, timeout=60):
    """Runs dp_worker.py SCENARIO on RANKS processes; returns each rank's npz contents."""
    if (scenario, device) not in _RUNS:
        _RUNS[scenario, device] = _run_ranks(scenario, device, tmp_path, timeout)
    return _RUNS[scenario, device]


def _run_ranks(scenario, device, tmp_path, timeout):
    port = free_port()
    procs, outs = [], []
    try:
        for rank in range(RANKS):
            out = str(tmp_path / f"{scenario}_{device}_{rank}.npz")
            outs.append(out)
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(RANKS), LOCAL_RANK=str(rank),
                       LOCAL_WORLD_SIZE=str(RANKS), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                       OAR_JOB_ID=f"test-dp-{port}", OAR_COLLECTIVE_TIMEOUT="20", OAR_NUM_THREADS="1",
                       OMP_NUM_THREADS="1")
            for k in ("OAR_LAUNCHER", "PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM", "SLURM_PROCID",
                      "OMPI_COMM_WORLD_RANK", "OAR_DIST_DEVICE"):
                env.pop(k, None)
            procs.append(subprocess.Popen([sys.executable, os.path.join(HERE, "dp_worker.py"), scenario, device, out],
                                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
        logs = []
        for p in procs:
            logs.append(p.communicate(timeout=timeout)[0].decode(errors="replace"))
        for rank, (p, log) in enumerate(zip(procs, logs)):
            assert p.returncode == 0, f"rank {rank} of '{scenario}' on {device} exited {p.returncode}:\n{log[-3000:]}"
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    results = []
    for out in outs:
        with np.load(out) as z:
            results.append({k: z[k] for k in z.files})
    return results


def info(result):
    return json.loads(str(result["info"]))


def reference_train(device, optimizer_name, steps=20):
    """One process, rank 0's initial parameters, the whole batch."""
    oar.set_device(device)
    model = dp_worker.make_model(100)
    opt = dp_worker.make_optimizer(optimizer_name, model.parameters())
    for step in range(steps):
        x, y = dp_worker.batch(step)
        dp_worker.loss_of(model, x, y).backward()
        opt.step()
        opt.clear_grad()
    return model


def assert_params_equal(results, model, rtol, atol):
    expected = dp_worker.params_of(model)
    for rank, r in enumerate(results):
        for name, value in expected.items():
            np.testing.assert_allclose(r["param/" + name], value, rtol=rtol, atol=atol,
                                       err_msg=f"rank {rank}, parameter {name}")


@needs_store
@pytest.mark.parametrize("optimizer_name,rtol,atol", [("sgd", 1e-5, 1e-6), ("adam", 1e-4, 1e-5)])
def test_two_ranks_train_like_one_process_on_the_doubled_batch(device, tmp_path, optimizer_name, rtol, atol):
    results = run_ranks("train_" + optimizer_name, device, tmp_path)
    assert_params_equal(results, reference_train(device, optimizer_name), rtol, atol)
    r0 = info(results[0])
    # The rank-1 model started from other values (seed 101): the broadcast made them equal.
    assert r0["keys"] == list(dp_worker.make_model(0).state_dict().keys())  # no wrapper prefix
    assert r0["buckets"] > 1


@needs_store
def test_the_first_bucket_is_reduced_while_backward_still_runs(device, tmp_path):
    results = run_ranks("train_sgd", device, tmp_path)
    for r in results:
        events = [tuple(e) for e in info(r)["events"]]
        buckets = info(r)["buckets"]
        assert buckets > 1
        starts = [e for e in events if e[0] == "allreduce_start"]
        assert [b for _, b in starts] == list(range(buckets))  # in bucket order
        first_start = events.index(("allreduce_start", 0))
        # Bucket 0's all-reduce started before the last bucket's gradients were
        # even computed, and before the backward pass ended.
        assert first_start < events.index(("grad_ready", buckets - 1))
        assert first_start < events.index(("backward_end", None))
        assert events[-buckets:] == [("allreduce_end", b) for b in range(buckets)]


@needs_store
def test_no_sync_accumulates_locally_then_reduces_the_sum(device, tmp_path):
    results = run_ranks("no_sync", device, tmp_path)
    oar.set_device(device)
    x0, y0 = dp_worker.batch(0)
    x1, y1 = dp_worker.batch(1)
    for rank, r in enumerate(results):
        assert info(r)["events_in_no_sync"] == []  # no communication inside no_sync
        lo, hi = rank * 4, rank * 4 + 4
        model = dp_worker.make_model(100)
        dp_worker.loss_of(model, x0[lo:hi], y0[lo:hi]).backward()
        for name, g in dp_worker.grads_of(model).items():
            if "extra" not in name:
                np.testing.assert_allclose(r["local/" + name], g, rtol=1e-5, atol=1e-6, err_msg=name)
    # Synchronized: the average over ranks of (micro-batch 0 + micro-batch 1) = the
    # gradient of both whole-batch losses.
    model = dp_worker.make_model(100)
    (dp_worker.loss_of(model, x0, y0) + dp_worker.loss_of(model, x1, y1)).backward()
    for rank, r in enumerate(results):
        for name, g in dp_worker.grads_of(model).items():
            if "extra" not in name:
                np.testing.assert_allclose(r["synced/" + name], g, rtol=1e-5, atol=1e-6,
                                           err_msg=f"rank {rank} {name}")


@needs_store
def test_unused_parameters_on_some_ranks_are_averaged_with_zeros(device, tmp_path):
    results = run_ranks("unused", device, tmp_path)
    oar.set_device(device)
    model = dp_worker.make_model(100, with_extra=True)
    opt = dp_worker.make_optimizer("sgd", model.parameters())
    for step in range(5):
        x, y = dp_worker.batch(step)
        # rank 0's half uses `extra`, rank 1's does not; each half's mean, averaged
        loss = (dp_worker.loss_of(model, x[:4], y[:4], use_extra=True) + dp_worker.loss_of(model, x[4:], y[4:])) * 0.5
        loss.backward()
        opt.step()
        opt.clear_grad()
    assert_params_equal(results, model, 1e-5, 1e-6)
    for r in results:  # used by no rank in the last pass: left as clear_grad made it
        np.testing.assert_array_equal(r["extra_grad_after_unused_pass"], np.zeros((16, 3), np.float32))


@needs_store
def test_an_unused_parameter_without_find_unused_parameters_is_an_error(tmp_path):
    results = run_ranks("unused_without_flag", "cpu", tmp_path)
    for rank, r in enumerate(results):
        error = info(r)["error"]
        assert f"DataParallel: rank {rank} did not use parameter(s) extra.weight, extra.bias" in error
        assert "find_unused_parameters=True" in error


@needs_store
def test_fleet_collective_mode(tmp_path):
    results = run_ranks("fleet", "cpu", tmp_path)
    for rank, r in enumerate(results):
        i = info(r)
        assert (i["worker_index"], i["worker_num"], i["is_first_worker"]) == (rank, 2, rank == 0)
        assert i["wrapped"] == "DataParallel"
        assert i["buckets"] > 1  # the strategy's small bucket sizes reached DataParallel
    assert_params_equal(results, reference_train("cpu", "sgd", steps=3), 1e-5, 1e-6)


def test_fleet_refuses_parameter_server_mode():
    from oar.distributed import fleet
    with pytest.raises(NotImplementedError, match="only collective training is supported"):
        fleet.init(is_collective=False)
    s = fleet.DistributedStrategy()
    s.hybrid_configs = {"dp_degree": 2}
    assert s.hybrid_configs["dp_degree"] == 2 and s.hybrid_configs["mp_degree"] == 1
    with pytest.raises(AttributeError, match="no field 'fuse_grad_size_in_mb'"):
        s.fuse_grad_size_in_mb = 4
