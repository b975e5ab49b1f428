"""scatter_object_list, batch_isend_irecv (P2POp), the stream submodule and
new_group(timeout) on 2 and 3 processes (cpu through Gloo, and the mock),
checked against values each rank can compute."""
import os

import numpy as np
import pytest

import oar
from dist_helpers import run_ranks

CONFIGS = [(d, n) for d in ("cpu", "mock") if d in oar.get_all_device_type() for n in (2, 3)]

CHILD = """
import datetime
oar.set_device(os.environ["OAR_TEST_DEVICE"])
dist.init_parallel_env()
world = dist.get_world_size()

# scatter_object_list: from the last rank; out is cleared first.
out = ["stale"]
objs = [{"to": i, "pad": "y" * (7 * i)} for i in range(world)] if rank == world - 1 else None
dist.scatter_object_list(out, objs, src=world - 1)
results["scatter_object_list"] = out

# batch_isend_irecv around a ring, receives listed FIRST on every rank
# (issued in list order this would wait forever).
right, left = (rank + 1) % world, (rank - 1) % world
got = oar.zeros([4], dtype="float32")
got2 = oar.zeros([2, 2], dtype="int64")
ops = [dist.P2POp(dist.irecv, got, left), dist.P2POp(dist.irecv, got2, left),
       dist.P2POp(dist.isend, oar.full([4], float(rank + 1), dtype="float32"), right),
       dist.P2POp(dist.isend, oar.full([2, 2], 10 * rank, dtype="int64"), right)]
tasks = dist.batch_isend_irecv(ops)
results["tasks"] = len(tasks)
for t in tasks:
    t.wait()
save("ring_f32", got.numpy()); save("ring_i64", got2.numpy())

# stream: tensor forms (concatenation along dim 0).
x = oar.full([2, 3], float(rank), dtype="float32")
t = dist.stream.all_reduce(x, sync_op=False); t.wait(); save("s_all_reduce", x.numpy())
out = oar.zeros([2 * world, 3], dtype="float32")
dist.stream.all_gather(out, oar.full([2, 3], float(rank), dtype="float32")); save("s_all_gather", out.numpy())
lst = []
dist.stream.all_gather(lst, oar.full([1], float(rank), dtype="float32"))
save("s_all_gather_list", np.stack([v.numpy() for v in lst]))
inp = oar.to_tensor(np.arange(world, dtype=np.int64) + 100 * rank)
o = oar.zeros([world], dtype="int64")
dist.stream.alltoall(o, inp); save("s_alltoall", o.numpy())
# alltoall_single: rank r sends i+1 rows to rank i (out_split_sizes first in the stream API).
rows = sum(i + 1 for i in range(world))
src = oar.to_tensor(np.arange(rows, dtype=np.float32) + 1000 * rank)
o = oar.zeros([world * (rank + 1)], dtype="float32")
dist.stream.alltoall_single(o, src, out_split_sizes=[rank + 1] * world, in_split_sizes=[i + 1 for i in range(world)])
save("s_alltoall_single", o.numpy())
o = oar.zeros([2], dtype="float32")
full = oar.to_tensor(np.arange(2 * world, dtype=np.float32) * (rank + 1))
dist.stream.reduce_scatter(o, full); save("s_reduce_scatter", o.numpy())
o = oar.zeros([2], dtype="float32")
dist.stream.scatter(o, oar.to_tensor(np.arange(2 * world, dtype=np.float32)) if rank == 0 else None, src=0)
save("s_scatter", o.numpy())
y = oar.full([3], float(rank + 5), dtype="float32")
dist.stream.broadcast(y, src=world - 1, use_calc_stream=True); save("s_broadcast", y.numpy())

# new_group(timeout): the group's communicator has it; a bad one is an error.
g = dist.new_group(list(range(world)), timeout=datetime.timedelta(seconds=7))
results["group_timeout"] = g.process_group.timeout
g3 = dist.new_group(list(range(world)), timeout=3)
results["group_timeout_num"] = g3.process_group.timeout
try:
    dist.new_group(list(range(world)), timeout=0)
    results["bad_timeout"] = ""
except ValueError as e:
    results["bad_timeout"] = str(e)
"""


@pytest.fixture(scope="module", params=CONFIGS, ids=[f"{d}-{n}ranks" for d, n in CONFIGS])
def run(request, tmp_path_factory):
    device, world = request.param
    ranks = run_ranks(CHILD, world, tmp_path_factory.mktemp("p2p"), timeout=90,
                      extra_env={"OAR_TEST_DEVICE": device, "OAR_COLLECTIVE_TIMEOUT": "20"})
    return device, world, ranks


def test_scatter_object_list(run):
    _, world, ranks = run
    for r in ranks:
        assert r.results["scatter_object_list"] == [{"to": r.rank, "pad": "y" * (7 * r.rank)}]


def test_batch_isend_irecv_ring_with_receives_first(run):
    _, world, ranks = run
    for r in ranks:
        left = (r.rank - 1) % world
        assert r.results["tasks"] == 4
        np.testing.assert_array_equal(r.arrays["ring_f32"], np.full([4], left + 1, np.float32))
        np.testing.assert_array_equal(r.arrays["ring_i64"], np.full([2, 2], 10 * left, np.int64))


def test_stream_collectives(run):
    _, world, ranks = run
    total = sum(range(world))
    for r in ranks:
        a = r.arrays
        np.testing.assert_array_equal(a["s_all_reduce"], np.full([2, 3], total, np.float32))
        np.testing.assert_array_equal(a["s_all_gather"], np.repeat(np.arange(world, dtype=np.float32), 2)[:, None]
                                      * np.ones([1, 3], np.float32))
        np.testing.assert_array_equal(a["s_all_gather_list"], np.arange(world, dtype=np.float32)[:, None])
        np.testing.assert_array_equal(a["s_alltoall"], [100 * q + r.rank for q in range(world)])
        start = sum(i + 1 for i in range(r.rank))
        expected = np.concatenate([np.arange(start, start + r.rank + 1, dtype=np.float32) + 1000 * q
                                   for q in range(world)])
        np.testing.assert_array_equal(a["s_alltoall_single"], expected)
        np.testing.assert_array_equal(a["s_reduce_scatter"],
                                      sum((q + 1) * np.arange(2 * world, dtype=np.float32) for q in range(world))
                                      [2 * r.rank:2 * r.rank + 2])
        np.testing.assert_array_equal(a["s_scatter"], np.arange(2 * r.rank, 2 * r.rank + 2, dtype=np.float32))
        np.testing.assert_array_equal(a["s_broadcast"], np.full([3], world - 1 + 5, np.float32))


def test_new_group_timeout(run):
    _, _, ranks = run
    for r in ranks:
        assert r.results["group_timeout"] == 7.0
        assert r.results["group_timeout_num"] == 3.0
        assert "new_group: timeout must be positive" in r.results["bad_timeout"]
