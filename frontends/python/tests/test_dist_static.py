"""dist.to_static: the seed demo on 2 ranks equals one process; a tensor-
parallel MLP trains in static mode exactly as in eager distributed mode and
as dense in one process; the per-rank programs hold the collectives the
SPMD rules ask for (Note [Distributed programs])."""
import numpy as np
import pytest

import oar
import oar.distributed as dist
from dist_harness import run_ranks


# ---- the seed demo (examples/python/seed_demo_dist.py) ----

def _demo_data():
    rng = np.random.RandomState(2024)
    return rng.rand(8, 2).astype("float32"), rng.rand(8, 4).astype("float32")


class _Pairs(oar.io.Dataset):
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __getitem__(self, i):
        return self.x[i], self.y[i]

    def __len__(self):
        return len(self.x)


def _demo_weight():
    oar.seed(7)
    return oar.nn.Layer().create_parameter(shape=[2, 4])


def _seed_demo(rank, world):
    mesh = dist.ProcessMesh([0, 1], dim_names=["x"])

    class DemoLayer(oar.nn.Layer):
        def __init__(self):
            super().__init__()
            self.w0 = dist.shard_tensor(_demo_weight(), mesh, [dist.Shard(1)])

        def forward(self, x):
            return oar.matmul(x, self.w0)

    layer = DemoLayer()
    loader = oar.io.DataLoader(_Pairs(*_demo_data()), batch_size=2)
    model = dist.to_static(layer, loader, oar.nn.MSELoss())
    model.eval()
    losses = [float(model(d[0], d[1])) for d in loader()]
    return {"losses": losses, "local_w": layer.w0._local_value().numpy(),
            "program": model.dist_main_program(), "dense": model.dense_program()}


def test_seed_demo_on_two_ranks_prints_the_dense_losses():
    x, y = _demo_data()
    w = _demo_weight().numpy()
    dense = [float(np.mean((x[i:i + 2] @ w - y[i:i + 2]) ** 2)) for i in range(0, 8, 2)]
    r0, r1 = run_ranks(_seed_demo, world=2)
    np.testing.assert_allclose(r0["losses"], dense, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(r1["losses"], dense, rtol=1e-6, atol=1e-7)
    # Each rank holds two of the four columns of the weight ...
    np.testing.assert_array_equal(r0["local_w"], w[:, :2])
    np.testing.assert_array_equal(r1["local_w"], w[:, 2:])
    # ... so its program computes on column pieces and combines them with a
    # collective (the seed's figure gathers the matmul's output; the rules
    # may as well reduce the loss's partial sums); the dense program has none.
    for r in (r0, r1):
        assert "c_all_gather" in r["program"] or "c_all_reduce" in r["program"], r["program"]
        assert "c_all_gather" not in r["dense"] and "c_all_reduce" not in r["dense"], r["dense"]
        assert "f32[2, 2]" in r["program"]  # the local piece of the weight


# ---- a tensor-parallel MLP: static == eager distributed == dense ----

STEPS = 5


def _mlp_data():
    rng = np.random.RandomState(3)
    return rng.randn(STEPS, 4, 6).astype("float32"), rng.randn(STEPS, 4, 3).astype("float32")


def _mlp_weights():
    rng = np.random.RandomState(5)
    return rng.randn(6, 8).astype("float32") * 0.5, rng.randn(8, 3).astype("float32") * 0.5


class _Mlp(oar.nn.Layer):
    """x @ w1 -> relu -> @ w2; w1 column-parallel, w2 row-parallel (Megatron) when a mesh is given."""

    def __init__(self, mesh=None):
        super().__init__()
        w1, w2 = _mlp_weights()
        self.w1 = self.create_parameter(shape=[6, 8])
        self.w2 = self.create_parameter(shape=[8, 3])
        self.w1.set_value(w1)
        self.w2.set_value(w2)
        if mesh is not None:
            self.w1 = dist.shard_tensor(self.w1, mesh, [dist.Shard(1)])
            self.w2 = dist.shard_tensor(self.w2, mesh, [dist.Shard(0)])

    def forward(self, x):
        return oar.matmul(oar.nn.functional.relu(oar.matmul(x, self.w1)), self.w2)


def _mlp_tp(rank, world, static):
    mesh = dist.ProcessMesh([0, 1], dim_names=["mp"])
    layer = _Mlp(mesh)
    opt = oar.optimizer.SGD(learning_rate=0.1, parameters=layer.parameters())
    loss_fn = oar.nn.MSELoss()
    xs, ys = _mlp_data()
    losses = []
    if static:
        model = dist.to_static(layer, None, loss_fn, opt)
        assert model.mode == "train"
        for x, y in zip(xs, ys):
            losses.append(float(model(oar.to_tensor(x), oar.to_tensor(y))))
        program = model.dist_main_program()
    else:
        for x, y in zip(xs, ys):
            loss = loss_fn(layer(oar.to_tensor(x)), oar.to_tensor(y))
            loss.backward()
            opt.step()
            opt.clear_grad()
            losses.append(float(dist.unshard_dtensor(loss).numpy()) if loss.is_dist() else float(loss.numpy()))
        program = ""
    return {"losses": losses, "w1": dist.unshard_dtensor(layer.w1).numpy(),
            "w2": dist.unshard_dtensor(layer.w2).numpy(), "program": program,
            "state": sorted(dist.to_static(layer, None, loss_fn).state_dict("param"))}


def _mlp_dense():
    layer = _Mlp()
    opt = oar.optimizer.SGD(learning_rate=0.1, parameters=layer.parameters())
    loss_fn = oar.nn.MSELoss()
    losses = []
    for x, y in zip(*_mlp_data()):
        loss = loss_fn(layer(oar.to_tensor(x)), oar.to_tensor(y))
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss.numpy()))
    return losses, layer.w1.numpy(), layer.w2.numpy()


def test_tensor_parallel_mlp_trains_in_static_mode_as_eager_and_dense():
    dense_losses, w1, w2 = _mlp_dense()
    assert dense_losses[-1] < dense_losses[0]  # it trains
    static = run_ranks(_mlp_tp, world=2, args=(True,))
    eager = run_ranks(_mlp_tp, world=2, args=(False,))
    for r in static + eager:
        np.testing.assert_allclose(r["losses"], dense_losses, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(r["w1"], w1, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(r["w2"], w2, rtol=1e-5, atol=1e-6)
        assert r["state"] == ["w1", "w2"]
    for r0, r1 in zip(static, eager):
        np.testing.assert_allclose(r0["losses"], r1["losses"], rtol=1e-6, atol=1e-7)
    # The row-parallel matmul's output is Partial: the program all-reduces it.
    for r in static:
        assert "c_all_reduce" in r["program"], r["program"]


# ---- data parallel, predict mode, printing, bad input ----

def _mlp_dp(rank, world):
    import contextlib
    import io
    mesh = dist.ProcessMesh([0, 1], dim_names=["dp"])
    layer = _Mlp()
    layer.w1 = dist.shard_tensor(layer.w1, mesh, [dist.Replicate()])
    layer.w2 = dist.shard_tensor(layer.w2, mesh, [dist.Replicate()])
    opt = oar.optimizer.SGD(learning_rate=0.1, parameters=layer.parameters())
    model = dist.to_static(layer, None, oar.nn.MSELoss(), opt, print_program=True)
    printed = io.StringIO()
    losses = []
    with contextlib.redirect_stderr(printed):
        for x, y in zip(*_mlp_data()):
            losses.append(float(model(oar.to_tensor(x), oar.to_tensor(y))))
    model.predict()
    x = oar.to_tensor(_mlp_data()[0][0])
    out = model(x)
    return {"losses": losses, "w1": layer.w1._local_value().numpy(), "printed": printed.getvalue(),
            "out_placements": repr(out.placements), "out": dist.unshard_dtensor(out).numpy(),
            "out_local_shape": list(out._local_value().shape)}


def test_data_parallel_trains_in_static_mode_as_dense_and_predicts():
    dense_losses, w1, w2 = _mlp_dense()
    for r in run_ranks(_mlp_dp, world=2):
        np.testing.assert_allclose(r["losses"], dense_losses, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(r["w1"], w1, rtol=1e-5, atol=1e-6)  # every rank holds the whole weight
        # The batch is split over "dp" (each rank's program reads 2 of the 4
        # rows) and the gradients' partial sums are all-reduced.
        dense, local = r["printed"].split("// dist.to_static: program of rank")[:2]
        assert "input %x0: f32[4, 6]" in dense and "c_all_reduce" not in dense
        assert "input %x0: f32[2, 6]" in local and "c_all_reduce" in local
        # predict: the outputs stay split by rows, and equal the dense layer's.
        x = oar.to_tensor(_mlp_data()[0][0])
        dense_layer = _Mlp()
        dense_layer.w1.set_value(w1)
        dense_layer.w2.set_value(w2)
        np.testing.assert_allclose(r["out"], dense_layer(x).numpy(), rtol=1e-5, atol=1e-6)
        assert r["out_placements"] == "[Shard(dim=0)]" and r["out_local_shape"] == [2, 3]


def _dp_sharded_adamw(rank, world):
    mesh = dist.ProcessMesh([0, 1], dim_names=["dp"])
    layer = _Mlp()
    layer.w1 = dist.shard_tensor(layer.w1, mesh, [dist.Replicate()])
    layer.w2 = dist.shard_tensor(layer.w2, mesh, [dist.Replicate()])
    opt = dist.shard_optimizer(oar.optimizer.AdamW(learning_rate=0.05, parameters=layer.parameters()),
                               dist.ShardingStage1(mesh=mesh))
    xs, ys = _mlp_data()
    loader = oar.io.DataLoader(_Pairs(xs.reshape(-1, 6), ys.reshape(-1, 3)), batch_size=4)
    model = dist.to_static(layer, loader, oar.nn.MSELoss(), opt)
    losses = [float(model(x, y)) for x, y in model.dist_loader()]  # batches split over "dp"
    return {"losses": losses, "w1": dist.unshard_dtensor(layer.w1).numpy(), "program": model.dist_main_program()}


def test_sharded_loader_and_sharding_stage1_optimizer_in_static_mode():
    layer = _Mlp()
    opt = oar.optimizer.AdamW(learning_rate=0.05, parameters=layer.parameters())
    dense = []
    for x, y in zip(*_mlp_data()):
        loss = oar.nn.MSELoss()(layer(oar.to_tensor(x)), oar.to_tensor(y))
        loss.backward()
        opt.step()
        opt.clear_grad()
        dense.append(float(loss.numpy()))
    for r in run_ranks(_dp_sharded_adamw, world=2):
        np.testing.assert_allclose(r["losses"], dense, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(r["w1"], layer.w1.numpy(), rtol=1e-5, atol=1e-6)
        # the loss and both gradients: one bucket (Note [Bucketed gradient reduction])
        assert "input %x0: f32[2, 6]" in r["program"] and r["program"].count("c_all_reduce") == 1, r["program"]


def _two_meshes(rank, world):
    layer = _Mlp()
    layer.w1 = dist.shard_tensor(layer.w1, dist.ProcessMesh([0, 1], dim_names=["mp"]), [dist.Shard(1)])
    model = dist.to_static(layer, None, oar.nn.MSELoss())
    x = dist.shard_tensor(oar.ones([4, 6]), dist.ProcessMesh([1, 0], dim_names=["mp"]), [dist.Replicate()])
    model(x, oar.ones([4, 3]))


def test_inputs_on_another_mesh_are_an_error_on_every_rank():
    errors = run_ranks(_two_meshes, world=2, expect_error=True)
    for e in errors:
        assert "matmul" in e and "mesh" in e, e


# ---- pipeline parallel: stage 0 on mesh [0], stage 1 on mesh [1] ----

def _mlp_pp(rank, world, schedule, steps):
    mesh0 = dist.ProcessMesh([0], dim_names=["pp"])
    mesh1 = dist.ProcessMesh([1], dim_names=["pp"])

    class Staged(_Mlp):
        def forward(self, x):
            h = oar.nn.functional.relu(oar.matmul(x, self.w1))
            h = dist.reshard(h, mesh1, [dist.Replicate()])  # stage 0 -> stage 1
            return oar.matmul(h, self.w2)

    layer = Staged()
    layer.w1 = dist.shard_tensor(layer.w1, mesh0, [dist.Replicate()])
    layer.w2 = dist.shard_tensor(layer.w2, mesh1, [dist.Replicate()])
    opt = oar.optimizer.SGD(learning_rate=0.1, parameters=layer.parameters())
    strategy = dist.Strategy({"pipeline": {"enable": True, "schedule_mode": schedule, "accumulate_steps": steps}})
    model = dist.to_static(layer, None, oar.nn.MSELoss(), opt, strategy)
    losses = [float(model(oar.to_tensor(x), oar.to_tensor(y))) for x, y in zip(*_mlp_data())]
    mine = layer.w1 if rank == 0 else layer.w2
    # The last transfer is stage 1's loss to stage 0: wait until it has
    # arrived before this process exits (an exit may drop unread bytes).
    dist.barrier()
    return {"losses": losses, "w": mine._local_value().numpy(), "program": model.dist_main_program(),
            "schedule": model._built("train").schedule}


@pytest.mark.parametrize("schedule,steps", [("FThenB", 2), ("1F1B", 4)])
def test_pipeline_parallel_in_static_mode_equals_one_process(schedule, steps):
    dense_losses, w1, w2 = _mlp_dense()
    r0, r1 = run_ranks(_mlp_pp, world=2, args=(schedule, steps))
    for r in (r0, r1):  # every rank reports the whole loss
        np.testing.assert_allclose(r["losses"], dense_losses, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(r0["w"], w1, rtol=1e-5, atol=1e-6)  # each stage holds and updates its own weight
    np.testing.assert_allclose(r1["w"], w2, rtol=1e-5, atol=1e-6)
    # Stage 0 sends activations and receives their gradients; stage 1 the reverse.
    assert "c_send" in r0["program"] and "c_recv" in r0["program"], r0["program"]
    assert "c_recv" in r1["program"] and "c_send" in r1["program"], r1["program"]
    rows = 4 // steps  # each micro-batch's program reads batch / accumulate_steps rows
    assert f"input %x0: f32[{rows}, 6]" in r0["program"]
    # The program runs as a forward part and a backward part per micro-batch,
    # in the schedule's order.
    F, B = (lambda m: ("F", m)), (lambda m: ("B", m))
    if schedule == "FThenB":
        assert r0["schedule"] == r1["schedule"] == [F(0), F(1), B(0), B(1)]
    else:  # stage 0 warms up with one forward; the last stage alternates from the start
        assert r0["schedule"] == [F(0), F(1), B(0), F(2), B(1), F(3), B(2), B(3)]
        assert r1["schedule"] == [F(0), B(0), F(1), B(1), F(2), B(2), F(3), B(3)]
    forward0, backward0 = r0["program"].split("// forward part")[1].split("// backward part")
    forward1, backward1 = r1["program"].split("// forward part")[1].split("// backward part")
    # Stage 0's forward sends the activation, its backward receives the gradient (and the loss) ...
    assert "c_send" in forward0 and "c_recv" not in forward0 and "c_recv" in backward0, r0["program"]
    # ... stage 1's forward receives the activation, its backward sends back the gradient.
    assert "c_recv" in forward1 and "c_send" not in forward1 and "c_send" in backward1, r1["program"]
    assert "carry_0" in backward0 and "carry_0" in backward1


# ---- one process: the API's errors ----

def test_to_static_refuses_what_it_cannot_run():
    layer = _Mlp()
    with pytest.raises(ValueError, match="train: training needs a loss and an optimizer"):
        dist.to_static(layer, None, oar.nn.MSELoss()).train()
    with pytest.raises(ValueError, match="no distributed parameter"):
        dist.to_static(layer, None, oar.nn.MSELoss())(oar.ones([4, 6]), oar.ones([4, 3]))
    with pytest.raises(ValueError, match="call takes the inputs and then the label"):
        dist.to_static(layer, None, oar.nn.MSELoss())(oar.ones([4, 6]))
    with pytest.raises(TypeError, match="strategy must be a dist.Strategy"):
        dist.to_static(layer, None, None, strategy={"pipeline": {}})
    with pytest.raises(ValueError, match="schedule_mode must be 'FThenB' or '1F1B'"):
        vpp = dist.Strategy({"pipeline": {"enable": True, "schedule_mode": "VPP"}})
        dist.to_static(layer, None, None, strategy=vpp)


def test_strategy_sections_and_unknown_options():
    s = dist.Strategy({"pipeline": {"enable": False, "schedule_mode": "FThenB", "micro_batch_size": 2}})
    assert (s.pipeline.schedule_mode, s.pipeline.micro_batch_size, s.pipeline.accumulate_steps) == ("FThenB", 2, 1)
    assert s.sharding.stage == 1 and not s.sharding.enable
    s.sharding.stage = 3
    assert s.sharding.stage == 3
    with pytest.raises(AttributeError, match="'pipeline' section has no option 'micro_batch'"):
        s.pipeline.micro_batch = 2
    with pytest.raises(ValueError, match="unknown section 'pipe'"):
        dist.Strategy({"pipe": {}})
