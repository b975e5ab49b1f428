"""oar.distributed's collectives on 2 and 3 processes, on cpu (Gloo) and
mock, for every dtype, against numpy. One child program per (device,
ranks) runs every check and saves its results; the tests below compare
them (dist_helpers.run_ranks)."""
import os

import numpy as np
import pytest

import oar
from dist_helpers import DTYPES, data, run_ranks

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = [(d, n) for d in ("cpu", "mock") if d in oar.get_all_device_type() for n in (2, 3)]

CHILD = """
sys.path.insert(0, os.environ["OAR_TEST_DIR"])
from dist_helpers import DTYPES, data
oar.set_device(os.environ["OAR_TEST_DEVICE"])
world_group = dist.init_parallel_env()
assert dist.init_parallel_env() is world_group  # idempotent
world = dist.get_world_size()
results.update(rank=dist.get_rank(), world=world, backend=dist.get_backend(), initialized=dist.is_initialized(),
               group=[world_group.id, world_group.rank, world_group.nranks, world_group.ranks])
Op = dist.ReduceOp
OPS = {"SUM": Op.SUM, "PROD": Op.PROD, "MAX": Op.MAX, "MIN": Op.MIN, "AVG": Op.AVG}

def T(seed, dt, shape=(2, 3)):
    return oar.to_tensor(data(seed, dt, shape), dtype=dt)

def N(t):
    return np.asarray(t.numpy())

def error(fn):
    try:
        fn()
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return ""

for dt in DTYPES:
    for name, op in OPS.items():
        x = T(rank, dt)
        if dt == "bool" and name == "AVG":
            results["bool_avg_error"] = error(lambda: dist.all_reduce(x, op))
            continue
        dist.all_reduce(x, op)
        save(f"{dt}/all_reduce/{name}", N(x))
    x = T(rank, dt); dist.broadcast(x, src=world - 1); save(f"{dt}/broadcast", N(x))
    x = T(rank, dt); dist.reduce(x, dst=1); save(f"{dt}/reduce", N(x))
    got = []; dist.all_gather(got, T(rank, dt)); save(f"{dt}/all_gather", np.stack([N(t) for t in got]))
    got = [oar.zeros([2, 3], dtype=dt) for _ in range(world)]
    dist.all_gather(got, T(rank, dt)); save(f"{dt}/all_gather_filled", np.stack([N(t) for t in got]))
    x = oar.zeros([2, 3], dtype=dt); dist.reduce_scatter(x, [T(rank * 7 + i, dt) for i in range(world)])
    save(f"{dt}/reduce_scatter", N(x))
    x = oar.zeros([2, 3], dtype=dt)
    dist.scatter(x, [T(100 + i, dt) for i in range(world)] if rank == 0 else None, src=0)
    save(f"{dt}/scatter", N(x))
    got = []; dist.alltoall(got, [T(rank * 7 + i, dt) for i in range(world)])
    save(f"{dt}/alltoall", np.stack([N(t) for t in got]))
    # Uneven: rank r sends i+1 rows to rank i and so receives r+1 rows from each.
    rows = sum(i + 1 for i in range(world))
    src = oar.to_tensor(data(rank, dt, (rows, 3)), dtype=dt)
    x = oar.zeros([world * (rank + 1), 3], dtype=dt)
    dist.alltoall_single(x, src, in_split_sizes=[i + 1 for i in range(world)], out_split_sizes=[rank + 1] * world)
    save(f"{dt}/alltoall_single", N(x))
    # A ring: rank 0 sends first, every other rank receives first (one
    # communicator runs its operations in issue order, and a send waits for
    # its receiver).
    x = oar.zeros([2, 3], dtype=dt)
    if rank == 0:
        dist.send(T(rank + 50, dt), dst=1)
        dist.recv(x, src=world - 1)
    else:
        dist.recv(x, src=rank - 1)
        task = dist.isend(T(rank + 50, dt), (rank + 1) % world)
        task.wait()
    save(f"{dt}/ring", N(x))

# Async, strided views, even alltoall_single, barrier, the errors.
x = T(rank, "float32")
task = dist.all_reduce(x, sync_op=False)
results["async_wait"] = task.wait()
results["async_completed"] = task.is_completed()
save("async", N(x))
x = oar.zeros([3], dtype="int64")
if rank == 0:
    tasks = [dist.isend(oar.to_tensor(np.array([7, 8, 9]) * q), q) for q in range(1, world)]
else:
    tasks = [dist.irecv(x, src=0)]
for t in tasks:
    t.wait()
save("irecv", N(x))
base = oar.to_tensor(data(rank, "float32", (3, 2)))
view = base.transpose([1, 0])
results["view_contiguous"] = view.is_contiguous()
dist.all_reduce(view)
save("view", N(view))
x = oar.zeros([2 * world, 1], dtype="int64")
dist.alltoall_single(x, oar.to_tensor(np.arange(2 * world, dtype=np.int64).reshape(-1, 1) + 100 * rank))
save("alltoall_single_even", N(x))
# AVG (Note in divide_by_ranks, core/src/runtime/distributed.cpp): a tensor alone with its memory takes the
# quotient's; one whose memory a view shares gets the quotient copied in, so the view sees it too.
x = T(rank, "float32"); alias = x
dist.all_reduce(x, Op.AVG); save("avg_alone", N(x)); save("avg_alias", N(alias))
base = T(rank, "float32", (4, 3)); rows = base[1:3]  # a view of base's middle rows
dist.all_reduce(base, Op.AVG); save("avg_base", N(base)); save("avg_view", N(rows))
dist.barrier()
results["err_list_len"] = error(lambda: dist.all_gather([oar.zeros([2, 3])], T(rank, "float32")))
results["err_list_shape"] = error(lambda: dist.reduce_scatter(oar.zeros([2, 3]), [oar.zeros([3, 2])] * world))
results["err_split"] = error(lambda: dist.alltoall_single(oar.zeros([world, 3]), oar.zeros([world, 3]),
                                                          in_split_sizes=[world + 1] + [0] * (world - 1)))
results["err_src"] = error(lambda: dist.broadcast(oar.zeros([1]), src=world))

# Python objects of different pickled sizes.
objs = []
dist.all_gather_object(objs, {"rank": rank, "pad": "x" * (10 * rank)})
results["all_gather_object"] = objs
items = [{"from": rank}, [rank] * 3] if rank == world - 1 else [None]
dist.broadcast_object_list(items, src=world - 1)
results["broadcast_object_list"] = items

# Subgroups: [0, 2] (rank 1 outside), then [1, 2]; every rank creates both in the same order.
if world == 3:
    g02 = dist.new_group([2, 0])
    g12 = dist.new_group([1, 2])
    results["g02"] = [g02.id, g02.rank, g02.nranks, g02.ranks, dist.get_rank(g02), dist.get_world_size(g02)]
    results["g12"] = [g12.id, g12.rank, g12.nranks, g12.ranks]
    x = T(rank, "float32")
    ret = dist.all_reduce(x, group=g02)
    results["g02_returned_none"] = ret is None
    save("g02_all_reduce", N(x))
    x = T(rank, "int64"); dist.broadcast(x, src=2, group=g02); save("g02_broadcast", N(x))
    got = []; dist.all_gather(got, T(rank, "int32"), group=g12)
    results["g12_gathered"] = len(got)
    if got:
        save("g12_all_gather", np.stack([N(t) for t in got]))
    results["g02_err_src"] = error(lambda: dist.broadcast(oar.zeros([1]), src=1, group=g02)) if rank != 1 else ""
    results["get_group"] = [dist.get_group(g02.id) is g02, dist.get_group(0) is world_group]
dist.destroy_process_group()
results["after_destroy"] = dist.is_initialized()
"""


@pytest.fixture(scope="module", params=CONFIGS, ids=[f"{d}-{n}ranks" for d, n in CONFIGS])
def run(request, tmp_path_factory):
    device, world = request.param
    ranks = run_ranks(CHILD, world, tmp_path_factory.mktemp("dist"), timeout=90,
                      extra_env={"OAR_TEST_DIR": HERE, "OAR_TEST_DEVICE": device, "OAR_COLLECTIVE_TIMEOUT": "20"})
    return device, world, ranks


def _tolerance(dt):
    return {"float16": 2e-3, "bfloat16": 1e-2}.get(dt, 1e-6)


def _check(actual, expected, dt, what):
    expected = np.asarray(expected)
    if dt == "bool":
        np.testing.assert_array_equal(actual.astype(bool), expected.astype(bool), err_msg=what)
    elif dt.startswith("float") or dt == "bfloat16":
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=_tolerance(dt),
                                   err_msg=what)
    else:
        np.testing.assert_array_equal(actual.astype(np.int64), expected.astype(np.int64), err_msg=what)


def _reduce(values, name, dt):
    v = np.stack([np.asarray(x, dtype=np.float64) for x in values])
    if dt == "bool":
        return v.any(0) if name in ("SUM", "MAX") else v.all(0)
    if name == "SUM":
        return v.sum(0)
    if name == "PROD":
        return v.prod(0)
    if name == "MAX":
        return v.max(0)
    if name == "MIN":
        return v.min(0)
    s = v.sum(0)
    # AVG: floats divide; integers truncate towards zero.
    return s / len(values) if dt.startswith("float") or dt == "bfloat16" else np.trunc(s / len(values))


def test_world_group_and_backend(run):
    device, world, ranks = run
    for r in ranks:
        res = r.results
        assert (res["rank"], res["world"], res["initialized"]) == (r.rank, world, True)
        assert res["backend"] == ("gloo" if device == "cpu" else "mock")
        assert res["group"] == [0, r.rank, world, list(range(world))]
        assert res["after_destroy"] is False


@pytest.mark.parametrize("dt", DTYPES)
def test_reductions(run, dt):
    _, world, ranks = run
    xs = [data(r, dt) for r in range(world)]
    for r in ranks:
        for name in ("SUM", "PROD", "MAX", "MIN", "AVG"):
            if dt == "bool" and name == "AVG":
                assert "avg" in r.results["bool_avg_error"].lower(), r.results["bool_avg_error"]
                continue
            _check(r.arrays[f"{dt}/all_reduce/{name}"], _reduce(xs, name, dt), dt, f"all_reduce {name} rank {r.rank}")
        # reduce to rank 1: the sum there, the others keep their input.
        expected = _reduce(xs, "SUM", dt) if r.rank == 1 else xs[r.rank]
        _check(r.arrays[f"{dt}/reduce"], expected, dt, f"reduce rank {r.rank}")
        # reduce_scatter: rank i gets the sum over ranks of their list item i.
        _check(r.arrays[f"{dt}/reduce_scatter"], _reduce([data(q * 7 + r.rank, dt) for q in range(world)], "SUM", dt),
               dt, f"reduce_scatter rank {r.rank}")


@pytest.mark.parametrize("dt", DTYPES)
def test_data_movement(run, dt):
    _, world, ranks = run
    gathered = np.stack([data(q, dt) for q in range(world)])
    for r in ranks:
        a = r.arrays
        _check(a[f"{dt}/broadcast"], data(world - 1, dt), dt, "broadcast")
        _check(a[f"{dt}/all_gather"], gathered, dt, "all_gather (empty list)")
        _check(a[f"{dt}/all_gather_filled"], gathered, dt, "all_gather (filled list)")
        _check(a[f"{dt}/scatter"], data(100 + r.rank, dt), dt, "scatter")
        _check(a[f"{dt}/alltoall"], np.stack([data(q * 7 + r.rank, dt) for q in range(world)]), dt, "alltoall")
        _check(a[f"{dt}/ring"], data((r.rank - 1) % world + 50, dt), dt, "isend/recv ring")
        # alltoall_single: rank q's rows for rank r start at sum(i + 1 for i < r) and are r + 1 long.
        rows = sum(i + 1 for i in range(world))
        start = sum(i + 1 for i in range(r.rank))
        expected = np.concatenate([data(q, dt, (rows, 3))[start:start + r.rank + 1] for q in range(world)])
        _check(a[f"{dt}/alltoall_single"], expected, dt, "alltoall_single (uneven)")


def test_async_views_and_errors(run):
    _, world, ranks = run
    total = sum(data(q, "float32") for q in range(world))
    for r in ranks:
        res, a = r.results, r.arrays
        assert res["async_wait"] is True and res["async_completed"] is True
        np.testing.assert_allclose(a["async"], total)
        np.testing.assert_array_equal(a["irecv"], [0, 0, 0] if r.rank == 0 else np.array([7, 8, 9]) * r.rank)
        assert res["view_contiguous"] is False
        mean = sum(data(q, "float32") for q in range(world)) / world
        np.testing.assert_allclose(a["avg_alone"], mean, rtol=1e-6)
        np.testing.assert_allclose(a["avg_alias"], mean, rtol=1e-6)
        mean4 = sum(data(q, "float32", (4, 3)) for q in range(world)) / world
        np.testing.assert_allclose(a["avg_base"], mean4, rtol=1e-6)
        np.testing.assert_allclose(a["avg_view"], mean4[1:3], rtol=1e-6)
        np.testing.assert_allclose(a["view"], sum(data(q, "float32", (3, 2)) for q in range(world)).T)
        even = np.array([[100 * q + 2 * r.rank + k] for q in range(world) for k in range(2)])
        np.testing.assert_array_equal(a["alltoall_single_even"], even)
        assert res["err_list_len"].startswith("ValueError: all_gather: tensor_list has 1 tensors but the group has")
        assert "reduce_scatter: tensor_list[0] has shape [3, 2]" in res["err_list_shape"]
        assert "alltoall_single: in_split_sizes=" in res["err_split"]
        assert f"broadcast: src={world} is not a rank of the group" in res["err_src"]


def test_object_collectives(run):
    _, world, ranks = run
    for r in ranks:
        assert r.results["all_gather_object"] == [{"rank": q, "pad": "x" * (10 * q)} for q in range(world)]
        assert r.results["broadcast_object_list"] == [{"from": world - 1}, [world - 1] * 3]


def test_subgroups(run):
    _, world, ranks = run
    if world != 3:
        pytest.skip("the subgroup checks run on 3 ranks")
    g02_sum = data(0, "float32") + data(2, "float32")
    for r in ranks:
        res, a = r.results, r.arrays
        member = r.rank in (0, 2)
        assert res["g02"] == [1, {0: 0, 2: 1}.get(r.rank, -1), 2, [0, 2], {0: 0, 2: 1}.get(r.rank, -1), 2]
        assert res["g12"] == [2, {1: 0, 2: 1}.get(r.rank, -1), 2, [1, 2]]
        assert res["g02_returned_none"] is (not member)
        np.testing.assert_allclose(a["g02_all_reduce"], g02_sum if member else data(r.rank, "float32"))
        np.testing.assert_array_equal(a["g02_broadcast"], data(2 if member else r.rank, "int64"))
        assert res["g12_gathered"] == (2 if r.rank in (1, 2) else 0)
        if r.rank in (1, 2):
            np.testing.assert_array_equal(a["g12_all_gather"], np.stack([data(1, "int32"), data(2, "int32")]))
        if member:
            assert "src=1 is not a rank of the group (its global ranks are [0, 2])" in res["g02_err_src"]
        assert res["get_group"] == [True, True]


TIMEOUT_CHILD = """
oar.set_device(os.environ["OAR_TEST_DEVICE"])
dist.init_parallel_env()
flag = os.path.join(OUT, "rank0_done")
if rank == 0:
    start = time.monotonic()
    try:
        dist.all_reduce(oar.ones([4]))
        results["error"] = ""
    except Exception as e:
        results["error"] = f"{type(e).__name__}: {e}"
    results["elapsed"] = time.monotonic() - start
    open(flag, "w").close()
else:
    # Never calls the collective; waits (bounded) until rank 0 has given up.
    deadline = time.monotonic() + 30
    while not os.path.exists(flag) and time.monotonic() < deadline:
        time.sleep(0.05)
"""


@pytest.mark.parametrize("device", [d for d in ("cpu", "mock") if d in oar.get_all_device_type()])
def test_collective_timeout_names_the_missing_rank(tmp_path, device):
    ranks = run_ranks(TIMEOUT_CHILD, 2, tmp_path, timeout=40,
                      extra_env={"OAR_TEST_DEVICE": device, "OAR_COLLECTIVE_TIMEOUT": "2"})
    res = ranks[0].results
    assert res["error"], "the all_reduce that rank 1 never joined returned"
    assert "rank 1" in res["error"] and "all_reduce" in res["error"], res["error"]
    assert 1.5 < res["elapsed"] < 6.0, res
