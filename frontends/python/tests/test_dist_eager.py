"""Semi-auto parallel in eager mode on 2 cpu ranks (dist_harness): meshes,
placements, shard_tensor / dtensor_from_local / reshard / unshard, and the
errors of bad input on every rank."""
import numpy as np
import pytest

import oar
import oar.distributed as dist
from dist_harness import run_ranks


def full(shape, start=0.0):
    return (np.arange(int(np.prod(shape)), dtype=np.float32) + start).reshape(shape)


# ---- single process: the mesh and the placements ----

def test_process_mesh_matches_paddle():
    mesh = dist.ProcessMesh([[0, 1], [2, 3]], dim_names=["x", "y"])
    assert mesh.shape == [2, 2] and mesh.process_ids == [0, 1, 2, 3] and mesh.ndim == 2
    assert mesh.dim_names == ["x", "y"]
    by_y = mesh.get_mesh_with_dim("y")
    assert by_y.process_ids == [0, 2, 1, 3] and by_y.dim_names == ["y", "x"]
    sub = mesh.get_mesh_with_dim("y", 1)
    assert sub.process_ids == [1, 3] and sub.dim_names == ["x"]
    assert mesh[0].process_ids == [0, 1] and mesh[0].dim_names == ["y"]
    assert mesh == dist.ProcessMesh([[0, 1], [2, 3]], dim_names=["a", "b"])  # Paddle ignores the names
    assert mesh != dist.ProcessMesh([[0, 2], [1, 3]])
    assert dist.ProcessMesh([0, 1]).dim_names == ["d0"]


def test_process_mesh_bad_input():
    with pytest.raises(ValueError, match="appears twice"):
        dist.ProcessMesh([0, 0])
    with pytest.raises(ValueError, match="dim_names"):
        dist.ProcessMesh([[0, 1]], dim_names=["x"])


def test_placements():
    assert dist.Shard(1) == dist.Shard(1) and dist.Shard(0) != dist.Shard(1)
    assert repr(dist.Shard(1)) == "Shard(dim=1)" and repr(dist.Replicate()) == "Replicate()"
    assert repr(dist.Partial()) == "Partial(reduce_type=SUM)"
    assert dist.Partial(dist.ReduceType.kRedMax).reduce_type() == dist.ReduceType.kRedMax
    assert dist.Shard(0).is_shard() and dist.Shard(0).is_shard(0) and not dist.Shard(0).is_shard(1)
    assert dist.Replicate().is_replicated() and dist.Partial().is_partial()
    with pytest.raises(ValueError, match="kRedProd"):
        dist.Partial(dist.ReduceType.kRedProd)


def test_one_rank_mesh_in_one_process():
    mesh = dist.ProcessMesh([0], dim_names=["x"])
    x = dist.shard_tensor(full([4, 3]), mesh, [dist.Shard(0)])
    assert x.is_dist() and x.shape == [4, 3] and x.placements == [dist.Shard(0)]
    assert x.process_mesh == mesh
    np.testing.assert_array_equal(x._local_value().numpy(), full([4, 3]))
    assert "local_shape=[4, 3]" in repr(x) and "placements=[Shard(dim=0)]" in repr(x)
    assert not oar.to_tensor([1.0]).is_dist() and oar.to_tensor([1.0]).placements is None


def test_bad_input_one_process():
    mesh = dist.ProcessMesh([0], dim_names=["x"])
    with pytest.raises(ValueError, match=r"shard_tensor.*\[Shard\(2\)\].*2 dims"):
        dist.shard_tensor(full([4, 3]), mesh, [dist.Shard(2)])
    with pytest.raises(ValueError, match=r"shard_tensor.*2 placements.*1 dims"):
        dist.shard_tensor(full([4, 3]), mesh, [dist.Shard(0), dist.Replicate()])
    with pytest.raises(ValueError, match=r"shard_tensor.*names process 1 but the job has 1 process"):
        dist.shard_tensor(full([4, 3]), dist.ProcessMesh([0, 1]), [dist.Shard(0)])
    with pytest.raises(TypeError, match="list of Placement"):
        dist.shard_tensor(full([4, 3]), mesh, dist.Shard(0))


# ---- two ranks ----

def pieces_body(rank, world):
    mesh = dist.ProcessMesh([0, 1], dim_names=["x"])
    data = full([5, 4])  # 5 rows over 2 ranks: chunks of 3 and 2 (torch.chunk)
    rows = dist.shard_tensor(data, mesh, [dist.Shard(0)])
    cols = dist.shard_tensor(data, mesh, [dist.Shard(1)])
    part = dist.shard_tensor(data, mesh, [dist.Partial()])
    rep = dist.shard_tensor(data, mesh, [dist.Replicate()])
    w = dist.shard_tensor(oar.to_tensor(data, stop_gradient=False), mesh, [dist.Shard(1)])
    local = dist.dtensor_from_local(oar.to_tensor(full([2, 3], 10 * rank)), mesh, [dist.Shard(0)])
    out = {"rows": rows._local_value(), "cols": cols._local_value(), "part": part._local_value(),
           "rep": rep._local_value(), "shape": rows.shape, "whole": cols,
           "w_leaf": (w.is_leaf, w.stop_gradient), "local_shape": local.shape,
           "repr": repr(rows)}
    # R -> S is a local slice, needing no other rank.
    out["resharded"] = dist.reshard(rep, mesh, [dist.Shard(1)])._local_value()
    out["from_fn"] = dist.dtensor_from_fn(oar.ones, mesh, [dist.Shard(0)], [3, 2])._local_value()
    param = dist.shard_tensor(oar.create_parameter([4, 2], "float32"), mesh, [dist.Shard(0)])
    whole = dist.unshard_dtensor(param)
    out["param"] = (type(param).__name__, param.stop_gradient, type(whole).__name__, whole.is_dist(), whole.shape)
    out["partial_item"] = float(dist.shard_tensor(oar.to_tensor([2.5]), mesh, [dist.Partial()]).sum())
    uneven = dist.dtensor_from_local(oar.to_tensor(full([3 - rank, 2])), mesh, [dist.Shard(0)], global_shape=[5, 2])
    out["uneven"] = (uneven.shape, uneven)
    return out


def test_pieces_on_two_ranks():
    results = run_ranks(pieces_body, world=2)
    data = full([5, 4])
    for rank, r in enumerate(results):
        np.testing.assert_array_equal(r["rows"], data[:3] if rank == 0 else data[3:])
        np.testing.assert_array_equal(r["cols"], data[:, 2 * rank:2 * rank + 2])
        np.testing.assert_array_equal(r["part"], data if rank == 0 else np.zeros_like(data))
        np.testing.assert_array_equal(r["rep"], data)
        np.testing.assert_array_equal(r["whole"], data)  # numpy() of a distributed tensor: the whole value
        np.testing.assert_array_equal(r["resharded"], data[:, 2 * rank:2 * rank + 2])
        assert r["shape"] == [5, 4]
        assert r["w_leaf"] == (True, False)
        assert r["local_shape"] == [4, 3]
        assert "shape=[5, 4], local_shape=[%d, 4]" % (3 if rank == 0 else 2) in r["repr"]
        np.testing.assert_array_equal(r["from_fn"], np.ones((2 if rank == 0 else 1, 2)))
        assert r["param"] == ("Parameter", False, "Parameter", False, [4, 2])
        assert r["partial_item"] == 2.5  # numpy()/item() of a Partial value: the sum of the pieces
        assert r["uneven"][0] == [5, 2]
        np.testing.assert_array_equal(r["uneven"][1], np.concatenate([full([3, 2]), full([2, 2])]))


def bad_placement_body(rank, world):
    mesh = dist.ProcessMesh([0, 1], dim_names=["x"])
    dist.shard_tensor(full([4]), mesh, [dist.Shard(1)])


def test_bad_placements_error_on_every_rank():
    errors = run_ranks(bad_placement_body, world=2, expect_error=True)
    for e in errors:
        assert "shard_tensor" in e and "[Shard(1)]" in e and "1 dims" in e, e


def missing_process_body(rank, world):
    mesh = dist.ProcessMesh([0, 1, 2], dim_names=["x"])
    dist.shard_tensor(full([6]), mesh, [dist.Shard(0)])


def test_a_mesh_naming_a_missing_process_errors_on_every_rank():
    for e in run_ranks(missing_process_body, world=2, expect_error=True):
        assert "shard_tensor" in e and "names process 2 but the job has 2 processes" in e, e


def failing_body(rank, world):
    if rank == 1:
        raise RuntimeError("rank one fails on purpose")
    mesh = dist.ProcessMesh([0, 1])
    x = dist.shard_tensor(full([4]), mesh, [dist.Shard(0)])
    return dist.unshard_dtensor(x)  # waits for rank 1, which is gone


def test_harness_reports_a_failing_rank_without_hanging():
    import time
    start = time.monotonic()
    with pytest.raises(AssertionError, match="rank one fails on purpose"):
        run_ranks(failing_body, world=2, timeout=60)
    assert time.monotonic() - start < 30


# ---- the eager dispatch: an MLP, Megatron-style and data parallel ----

def mlp_data():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 6)).astype(np.float32)
    w1 = rng.standard_normal((6, 8)).astype(np.float32) * 0.5
    w2 = rng.standard_normal((8, 5)).astype(np.float32) * 0.5
    return x, w1, w2


def mlp(x, w1, w2):
    h = oar.nn.functional.relu(oar.matmul(x, w1))
    y = oar.matmul(h, w2)
    return y, (y * y).mean()


def dense_mlp():
    x, w1, w2 = mlp_data()
    tw1 = oar.to_tensor(w1, stop_gradient=False)
    tw2 = oar.to_tensor(w2, stop_gradient=False)
    y, loss = mlp(oar.to_tensor(x), tw1, tw2)
    loss.backward()
    out = y.numpy(), float(loss), tw1.grad.numpy(), tw2.grad.numpy()
    oar.optimizer.Adam(learning_rate=0.1, parameters=[tw1, tw2]).step()
    return out + (tw1.numpy(), tw2.numpy())


def megatron_body(rank, world, dp):
    x, w1, w2 = mlp_data()
    mesh = dist.ProcessMesh([0, 1], dim_names=["x"])
    if dp:  # data parallel: the batch sharded, the weights replicated
        tx = dist.shard_tensor(x, mesh, [dist.Shard(0)])
        p1, p2 = [dist.Replicate()], [dist.Replicate()]
    else:  # tensor parallel: column then row split
        tx = oar.to_tensor(x)
        p1, p2 = [dist.Shard(1)], [dist.Shard(0)]
    tw1 = dist.shard_tensor(oar.to_tensor(w1, stop_gradient=False), mesh, p1)
    tw2 = dist.shard_tensor(oar.to_tensor(w2, stop_gradient=False), mesh, p2)
    y, loss = mlp(tx, tw1, tw2)
    out = {"y_placements": repr(y.placements), "loss_placements": repr(loss.placements)}
    oar._C.dist.reset_collective_stats()
    loss.backward()
    out["backward_collectives"] = {k: tuple(v) for k, v in oar._C.dist.collective_stats().items()}
    out.update(y=y, loss=loss, g1=tw1.grad, g2=tw2.grad, g1_placements=repr(tw1.grad.placements),
               g2_placements=repr(tw2.grad.placements), g1_local=tw1.grad._local_value())
    # An optimizer step on distributed parameters keeps them placed.
    oar.optimizer.Adam(learning_rate=0.1, parameters=[tw1, tw2]).step()
    out.update(w1=tw1, w2=tw2, w1_placements=repr(tw1.placements))
    return out


@pytest.mark.parametrize("dp", [False, True], ids=["megatron", "data_parallel"])
def test_mlp_equals_dense(dp):
    y, loss, g1, g2, w1, w2 = dense_mlp()
    results = run_ranks(megatron_body, world=2, args=(dp,))
    for rank, r in enumerate(results):
        np.testing.assert_allclose(r["w1"], w1, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(r["w2"], w2, rtol=1e-5, atol=1e-6)
        assert r["w1_placements"] == ("[Replicate()]" if dp else "[Shard(dim=1)]")
        np.testing.assert_allclose(r["y"], y, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(r["loss"], loss, rtol=1e-5)
        np.testing.assert_allclose(r["g1"], g1, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(r["g2"], g2, rtol=1e-5, atol=1e-6)
        if dp:
            assert r["y_placements"] == "[Shard(dim=0)]"
            assert r["g1_placements"] == "[Replicate()]"  # Partial, all-reduced into the leaf
            # Note [Bucketed gradient reduction]: both weights' Partial gradients
            # in ONE all_reduce of their pieces together (6*8 + 8*5 floats).
            assert r["backward_collectives"] == {"c_all_reduce": (1, 4 * (6 * 8 + 8 * 5))}
            np.testing.assert_allclose(r["g1_local"], g1, rtol=1e-5, atol=1e-6)
        else:
            assert r["y_placements"] == "[Partial(reduce_type=SUM)]"  # row-parallel matmul
            assert r["g1_placements"] == "[Shard(dim=1)]" and r["g2_placements"] == "[Shard(dim=0)]"
            np.testing.assert_allclose(r["g1_local"], g1[:, 4 * rank:4 * rank + 4], rtol=1e-5, atol=1e-6)


def dp_tp_body(rank, world):
    x, w1, w2 = mlp_data()
    mesh = dist.ProcessMesh([[0, 1], [2, 3]], dim_names=["dp", "mp"])
    tx = dist.shard_tensor(x, mesh, [dist.Shard(0), dist.Replicate()])
    tw1 = dist.shard_tensor(oar.to_tensor(w1, stop_gradient=False), mesh, [dist.Replicate(), dist.Shard(1)])
    tw2 = dist.shard_tensor(oar.to_tensor(w2, stop_gradient=False), mesh, [dist.Replicate(), dist.Shard(0)])
    y, loss = mlp(tx, tw1, tw2)
    loss.backward()
    return {"y": y, "loss": loss, "g1": tw1.grad, "g2": tw2.grad, "y_placements": repr(y.placements),
            "g2_placements": repr(tw2.grad.placements), "g2_local": tw2.grad._local_value()}


def test_mlp_on_a_2x2_mesh_dp_times_tp():
    y, loss, g1, g2, _, _ = dense_mlp()
    for rank, r in enumerate(run_ranks(dp_tp_body, world=4)):
        np.testing.assert_allclose(r["y"], y, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(r["loss"], loss, rtol=1e-5)
        np.testing.assert_allclose(r["g1"], g1, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(r["g2"], g2, rtol=1e-5, atol=1e-6)
        assert r["y_placements"] == "[Shard(dim=0), Partial(reduce_type=SUM)]"
        assert r["g2_placements"] == "[Replicate(), Shard(dim=0)]"
        mp = rank % 2
        np.testing.assert_allclose(r["g2_local"], g2[4 * mp:4 * mp + 4], rtol=1e-5, atol=1e-6)


def two_meshes_body(rank, world):
    a = dist.shard_tensor(full([2, 2]), dist.ProcessMesh([0, 1], dim_names=["x"]), [dist.Shard(0)])
    b = dist.shard_tensor(full([2, 2]), dist.ProcessMesh([1, 0], dim_names=["x"]), [dist.Replicate()])
    return a + b


def test_two_meshes_in_one_op_error_on_every_rank():
    for e in run_ranks(two_meshes_body, world=2, expect_error=True):
        assert "add" in e and "ProcessMesh(shape=[2], process_ids=[0, 1]" in e and "process_ids=[1, 0]" in e, e
        assert "[Shard(0)]" in e and "[Replicate()]" in e and "reshard" in e, e
