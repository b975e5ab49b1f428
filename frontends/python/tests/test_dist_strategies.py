"""The parallel strategies of issue 14 on the tiny GPT (tiny_gpt.py), each
against the single-process loss curve (f32 tolerance): data parallel,
Megatron tensor parallel by placements only, sequence parallel around
layer_norm/dropout, sharding stages 1-3, DP x TP on a 2x2 mesh, eager and
(some) through dist.to_static, pipeline parallel (static); plus the
pieces of oar.distributed.auto_parallel.sharding (shard_layer,
shard_optimizer's placements, shard_dataloader) with values checked by hand.

Ranks run through dist_harness.run_ranks (Gloo on cpu). Curves are 3 steps
(the example examples/python/tiny_gpt_dist.py runs 50)."""
import numpy as np
import pytest

import oar
import oar.distributed as dist
from dist_harness import run_ranks

import tiny_gpt

STEPS = 3
RTOL, ATOL = 2e-4, 2e-5


@pytest.fixture(scope="module")
def dense_curve():
    return tiny_gpt.single_process_curve(STEPS)


@pytest.fixture(scope="module")
def dense_curve_dropout():
    return tiny_gpt.single_process_curve(STEPS, tiny_gpt.GPTConfig(dropout=0.1))


def test_single_process_curve_decreases():
    curve = tiny_gpt.single_process_curve(12)
    assert curve[0] == pytest.approx(np.log(256), rel=0.05)  # near-uniform logits at init
    assert curve[-1] < curve[0] - 0.5, curve
    assert curve == tiny_gpt.single_process_curve(12)  # deterministic


def test_sdpa_variant_matches_plain_attention():
    plain = tiny_gpt.single_process_curve(3)
    sdpa = tiny_gpt.single_process_curve(3, tiny_gpt.GPTConfig(sdpa=True))
    np.testing.assert_allclose(sdpa, plain, rtol=RTOL, atol=ATOL)


# ---- strategies vs one process ----
def _curve(rank, world, strategy, steps, dropout=0.0, sdpa=False):
    return tiny_gpt.strategy_curve(strategy, steps, tiny_gpt.GPTConfig(dropout=dropout, sdpa=sdpa))


@pytest.mark.parametrize("strategy", ["dp", "tp", "sp", "stage1", "stage2", "stage3"])
def test_strategy_two_ranks(strategy, dense_curve):
    curves = run_ranks(_curve, world=2, args=(strategy, STEPS), timeout=180)
    for curve in curves:
        np.testing.assert_allclose(curve, dense_curve, rtol=RTOL, atol=ATOL, err_msg=strategy)


def _stage3_by_rules(rank, world, steps):
    """Stage 3 without the layers (Paddle's signature): the sharded
    parameters go into their ops as they are and the rules reshard them."""
    model = tiny_gpt.TinyGPT()
    mesh = dist.ProcessMesh([0, 1], dim_names=["dp"])
    dist.shard_layer(model, mesh)
    opt = dist.shard_optimizer(tiny_gpt.make_optimizer(model), dist.ShardingStage3("dp", mesh))
    curve = tiny_gpt.train(model, opt, tiny_gpt.batches(steps),
                           lambda t: dist.shard_tensor(t, mesh, [dist.Shard(0)]))
    return {"curve": curve, "placements": repr(model.blocks[0].mlp.fc1.weight.placements)}


def test_stage3_without_layers_uses_the_rules(dense_curve):
    for r in run_ranks(_stage3_by_rules, world=2, args=(STEPS,), timeout=180):
        assert r["placements"] == "[Shard(dim=0)]"
        np.testing.assert_allclose(r["curve"], dense_curve, rtol=RTOL, atol=ATOL)


def _uneven_curve(rank, world, strategy, steps, batch, seq):
    return tiny_gpt.strategy_curve(strategy, steps, tiny_gpt.GPTConfig(seq=seq), batch=batch)


@pytest.mark.parametrize("strategy, batch, seq", [("dp", 3, 16), ("sp", 4, 15)])
def test_uneven_shards(strategy, batch, seq):
    """A batch of 3 over 2 ranks (chunks 2 and 1); a sequence of 15 (8 and 7)."""
    want = tiny_gpt.single_process_curve(2, tiny_gpt.GPTConfig(seq=seq), batch=batch)
    for curve in run_ranks(_uneven_curve, world=2, args=(strategy, 2, batch, seq), timeout=180):
        np.testing.assert_allclose(curve, want, rtol=RTOL, atol=ATOL)


def test_tensor_parallel_through_sdpa(dense_curve):
    """scaled_dot_product_attention has no rule: its decomposition runs on the head-sharded q, k, v."""
    for curve in run_ranks(_curve, world=2, args=("tp", STEPS, 0.0, True), timeout=180):
        np.testing.assert_allclose(curve, dense_curve, rtol=RTOL, atol=ATOL)


def _static_curve(rank, world, strategy, steps):
    return tiny_gpt.strategy_curve(strategy, steps, static=True)


@pytest.mark.parametrize("strategy", ["dp", "tp", "sp", "stage3", "dp_tp"])
def test_strategy_through_to_static(strategy, dense_curve):
    """The same placements through dist.to_static: one program per rank."""
    steps = 2 if strategy == "dp_tp" else 3
    for curve in run_ranks(_static_curve, world=tiny_gpt.world_of(strategy), args=(strategy, steps), timeout=300):
        np.testing.assert_allclose(curve, dense_curve[:steps], rtol=RTOL, atol=ATOL, err_msg=strategy)


def _pipeline_curve(rank, world, schedule, steps):
    """PP=2 in static mode: embeddings and both blocks on mesh [0], the final
    layer_norm and the head on mesh [1], the activation sent at the model's
    "head_in" point (a dist.reshard inside forward); 2 micro-batches."""
    mesh0, mesh1 = dist.ProcessMesh([0], dim_names=["pp"]), dist.ProcessMesh([1], dim_names=["pp"])
    model = tiny_gpt.TinyGPT(tiny_gpt.GPTConfig())

    def stage_1(name, layer, mesh):
        if name in ("ln_f", "head"):
            for key in ("weight", "bias"):
                setattr(layer, key, dist.shard_tensor(getattr(layer, key), mesh1, [dist.Replicate()]))
    dist.shard_layer(model, mesh0, stage_1)
    model.placements["head_in"] = (mesh1, [dist.Replicate()])
    opt = tiny_gpt.make_optimizer(model)
    strategy = dist.Strategy({"pipeline": {"enable": True, "schedule_mode": schedule, "accumulate_steps": 2}})
    oar.seed(2)
    dist_model = dist.to_static(model, None, tiny_gpt.loss_fn, opt, strategy)
    dist_model.train()
    curve = [float(dist_model(oar.to_tensor(t), oar.to_tensor(y))) for t, y in tiny_gpt.batches(steps)]
    dist.barrier()  # the last transfer (stage 1's loss to stage 0) has arrived before anyone exits
    held = {n: p._local_value().shape for n, p in model.named_parameters()}
    return {"curve": curve, "program": dist_model.dist_main_program(),
            "schedule": dist_model._built("train").schedule, "head": held["head.weight"], "wte": held["wte.weight"]}


@pytest.mark.parametrize("schedule", ["FThenB", "1F1B"])
def test_pipeline_parallel_through_to_static(schedule, dense_curve):
    r0, r1 = run_ranks(_pipeline_curve, world=2, args=(schedule, STEPS), timeout=180)
    for r in (r0, r1):  # every rank reports the whole loss
        np.testing.assert_allclose(r["curve"], dense_curve, rtol=RTOL, atol=ATOL, err_msg=schedule)
    # Each stage holds only its layers and the activation crosses by send/recv.
    assert (r0["wte"], r0["head"]) == ([256, 128], [0, 0]) and (r1["wte"], r1["head"]) == ([0, 0], [128, 256])
    assert "c_send" in r0["program"] and "c_recv" in r1["program"]
    assert len(r0["schedule"]) == 4  # 2 micro-batches: a forward and a backward part each


def _clipped_curve(rank, world, strategy, steps, sharding):
    model = tiny_gpt.TinyGPT()
    opt, place_batch = tiny_gpt.setup_strategy(model, strategy, sharding=sharding)
    getattr(opt, "_inner_opt", opt)._grad_clip = oar.nn.ClipGradByGlobalNorm(0.5)
    return tiny_gpt.train(model, opt, tiny_gpt.batches(steps), place_batch)


@pytest.mark.parametrize("strategy, sharding", [("tp", None), ("dp", "stage3")])
def test_global_norm_clip_over_sharded_gradients(strategy, sharding):
    """The global norm sums every shard's squares (TP's and ZeRO-3's gradients are split)."""
    model = tiny_gpt.TinyGPT()
    opt = tiny_gpt.make_optimizer(model)
    opt._grad_clip = oar.nn.ClipGradByGlobalNorm(0.5)
    want = tiny_gpt.train(model, opt, tiny_gpt.batches(STEPS))
    assert abs(want[2] - tiny_gpt.single_process_curve(STEPS)[2]) > 1e-3  # the clip bites
    for curve in run_ranks(_clipped_curve, world=2, args=(strategy, STEPS, sharding), timeout=180):
        np.testing.assert_allclose(curve, want, rtol=RTOL, atol=ATOL)


def test_sequence_parallel_with_dropout(dense_curve_dropout):
    curves = run_ranks(_curve, world=2, args=("sp", STEPS, 0.1), timeout=180)
    for curve in curves:
        np.testing.assert_allclose(curve, dense_curve_dropout, rtol=RTOL, atol=ATOL)


def test_dp_x_tp_four_ranks(dense_curve):
    curves = run_ranks(_curve, world=4, args=("dp_tp", 2), timeout=300)
    for curve in curves:
        np.testing.assert_allclose(curve, dense_curve[:2], rtol=RTOL, atol=ATOL)


def _activation_placements(rank, world, strategy):
    """The placements of block 0's sublayer outputs, the loss and two weight
    gradients after one forward and backward."""
    model = tiny_gpt.TinyGPT()
    _, place_batch = tiny_gpt.setup_strategy(model, strategy)
    seen = {}
    for name, sub in model.named_sublayers():
        if name.startswith("blocks.0.") or name == "head":
            sub.register_forward_post_hook(lambda _l, _i, out, n=name: seen.__setitem__(n, repr(out.placements)))
    tokens, labels = tiny_gpt.batches(1)[0]
    loss = tiny_gpt.loss_fn(model(place_batch(oar.to_tensor(tokens))), place_batch(oar.to_tensor(labels)))
    loss.backward()
    seen["grad q_proj"] = repr(model.blocks[0].attn.q_proj.weight.grad.placements)
    seen["grad fc2"] = repr(model.blocks[0].mlp.fc2.weight.grad.placements)
    named = dict(model.named_parameters())
    for n in ("blocks.0.attn.q_proj.weight", "blocks.0.attn.q_proj.bias", "blocks.0.attn.proj.weight",
              "blocks.0.attn.proj.bias", "blocks.1.mlp.fc1.weight", "blocks.1.mlp.fc2.weight", "wte.weight"):
        seen["param " + n] = repr(named[n].placements)
    seen["n_params"] = len(named)
    seen["all_dist"] = all(p.is_dist() for p in named.values())
    seen["local q"] = list(named["blocks.0.attn.q_proj.weight"]._local_value().shape)
    return seen


def test_strategies_really_split_the_work():
    """Not everything replicated: TP's column matmuls come out sharded on the
    features, DP's on the batch, SP's layer_norm on the sequence."""
    tp, dp, sp = (run_ranks(_activation_placements, world=2, args=(s,))[0] for s in ("tp", "dp", "sp"))
    for name in ("blocks.0.attn.q_proj", "blocks.0.attn.v_proj", "blocks.0.mlp.fc1"):
        assert tp[name] == "[Shard(dim=2)]" and sp[name] == "[Shard(dim=2)]", name
    assert tp["grad q_proj"] == "[Shard(dim=1)]" and tp["grad fc2"] == "[Shard(dim=0)]"
    assert all(dp[n] == "[Shard(dim=0)]" for n in dp if n.startswith("blocks.0.") or n == "head"), dp
    assert dp["grad q_proj"] == "[Replicate()]"  # the Partial gradient all_reduced into the leaf
    assert sp["blocks.0.ln1"] == "[Shard(dim=1)]" and sp["blocks.0.ln2"] == "[Shard(dim=1)]"
    assert sp["blocks.0.drop"] == "[Shard(dim=1)]"
    # TP's parameters, as tp_shard_fn placed them; shard_layer replicated the rest
    assert tp["all_dist"] and tp["n_params"] == len(tiny_gpt.TinyGPT().parameters())
    assert tp["param blocks.0.attn.q_proj.weight"] == "[Shard(dim=1)]" and tp["local q"] == [128, 64]
    assert tp["param blocks.0.attn.q_proj.bias"] == "[Shard(dim=0)]"
    assert tp["param blocks.0.attn.proj.weight"] == "[Shard(dim=0)]" and tp["param blocks.0.attn.proj.bias"] == "[Replicate()]"
    assert tp["param blocks.1.mlp.fc1.weight"] == "[Shard(dim=1)]" and tp["param blocks.1.mlp.fc2.weight"] == "[Shard(dim=0)]"
    assert tp["param wte.weight"] == "[Replicate()]"


def _dp_tp_stage3(rank, world, steps):
    model = tiny_gpt.TinyGPT()
    opt, place_batch = tiny_gpt.setup_strategy(model, "dp_tp", sharding="stage3")
    curve = tiny_gpt.train(model, opt, tiny_gpt.batches(steps), place_batch)
    return {"curve": curve, "q": repr(model.blocks[0].attn.q_proj.weight.placements),
            "fc2": repr(model.blocks[0].mlp.fc2.weight.placements),
            "q_local": list(model.blocks[0].attn.q_proj.weight._local_value().shape)}


def test_dp_x_tp_with_sharding_stage3(dense_curve):
    """ZeRO-3 along "dp" on top of TP along "mp": a column weight is split both ways."""
    for r in run_ranks(_dp_tp_stage3, world=4, args=(2,), timeout=300):
        assert r["q"] == "[Shard(dim=0), Shard(dim=1)]" and r["q_local"] == [64, 64]
        assert r["fc2"] == "[Shard(dim=1), Shard(dim=0)]"  # dim 0 taken by mp: dp takes dim 1
        np.testing.assert_allclose(r["curve"], dense_curve[:2], rtol=RTOL, atol=ATOL)


# ---- the pieces, by hand ----
def _stage_state(rank, world, stage):
    """A 2-layer MLP on mesh [0, 1] "dp", one AdamW step under ShardingStage<stage>."""
    mesh = dist.ProcessMesh([0, 1], dim_names=["dp"])
    rng = np.random.RandomState(0)
    model = oar.nn.Sequential(oar.nn.Linear(6, 4), oar.nn.Linear(4, 3))
    for p in model.parameters():
        p.set_value(rng.standard_normal(p.shape).astype(np.float32))
    dist.shard_layer(model, mesh)
    opt = oar.optimizer.AdamW(learning_rate=0.1, parameters=model.parameters())
    cls = {1: dist.ShardingStage1, 2: dist.ShardingStage2, 3: dist.ShardingStage3}[stage]
    opt = dist.shard_optimizer(opt, cls("dp", mesh), layers=model)
    x = dist.shard_tensor(rng.standard_normal((4, 6)).astype(np.float32), mesh, [dist.Shard(0)])
    loss = oar.mean(model(x) ** 2)
    loss.backward()
    w = model[0].weight
    grad_placements = repr(w.grad.placements)
    opt.step()
    m1 = opt._inner_opt._accumulators[("moment1", id(w))]
    return {"param": repr(w.placements), "grad": grad_placements, "moment": repr(m1.placements),
            "moment_local": list(m1._local_value().shape), "w": dist.unshard_dtensor(w)}


def _dense_stage_reference():
    rng = np.random.RandomState(0)
    model = oar.nn.Sequential(oar.nn.Linear(6, 4), oar.nn.Linear(4, 3))
    for p in model.parameters():
        p.set_value(rng.standard_normal(p.shape).astype(np.float32))
    opt = oar.optimizer.AdamW(learning_rate=0.1, parameters=model.parameters())
    x = oar.to_tensor(rng.standard_normal((4, 6)).astype(np.float32))
    oar.mean(model(x) ** 2).backward()
    opt.step()
    return model[0].weight.numpy()


@pytest.mark.parametrize("stage, param, grad", [(1, "[Replicate()]", "[Replicate()]"),
                                                (2, "[Replicate()]", "[Shard(dim=0)]"),
                                                (3, "[Shard(dim=0)]", "[Shard(dim=0)]")])
def test_sharding_stage_placements(stage, param, grad):
    want = _dense_stage_reference()
    for r in run_ranks(_stage_state, world=2, args=(stage,)):
        assert r["moment"] == "[Shard(dim=0)]"  # every stage shards the optimizer state
        assert r["moment_local"] == [3, 4]  # the [6, 4] weight's moment, half the rows
        assert r["param"] == param
        assert r["grad"] == grad
        np.testing.assert_allclose(r["w"], want, rtol=1e-5, atol=1e-6)


def _loader_batches(rank, world):
    xs = np.arange(24, dtype=np.float32).reshape(8, 3)
    ys = np.arange(8, dtype=np.int64)
    loader = oar.io.DataLoader(oar.io.TensorDataset([oar.to_tensor(xs), oar.to_tensor(ys)]), batch_size=4)
    mesh = dist.ProcessMesh([[0, 1]], dim_names=["pp", "dp"])
    sharded = dist.shard_dataloader(loader, mesh, shard_dims="dp")
    out = []
    for x, y in sharded():
        out.append({"x": x._local_value(), "y": y._local_value(), "shape": list(x.shape),
                    "placements": repr(x.placements)})
    return {"batches": out, "len": len(sharded)}


def test_shard_dataloader_shards_the_batch_dim():
    xs = np.arange(24, dtype=np.float32).reshape(8, 3)
    for rank, r in enumerate(run_ranks(_loader_batches, world=2)):
        assert r["len"] == 2
        for i, b in enumerate(r["batches"]):
            rows = slice(4 * i + 2 * rank, 4 * i + 2 * rank + 2)  # batch i, this rank's half
            np.testing.assert_array_equal(b["x"], xs[rows])
            np.testing.assert_array_equal(b["y"], np.arange(8)[rows])
            assert b["shape"] == [4, 3]
            assert b["placements"] == "[Replicate(), Shard(dim=0)]"


def _loader_dict_and_splitted(rank, world):
    xs = np.arange(16, dtype=np.float32).reshape(8, 2)

    class Pairs(oar.io.Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            return {"x": xs[i], "i": np.int64(i)}

    mesh = dist.ProcessMesh([0, 1], dim_names=["dp"])
    by_key = dist.shard_dataloader(oar.io.DataLoader(Pairs(), batch_size=4), mesh, input_keys=["x"], shard_dims=0)
    first = next(iter(by_key))
    local = oar.io.DataLoader(oar.io.TensorDataset([oar.to_tensor(xs[4 * rank:4 * rank + 4])]), batch_size=2)
    splitted = dist.shard_dataloader(local, mesh, shard_dims="dp", is_dataset_splitted=True)
    (y,) = next(iter(splitted))
    return {"x": first["x"]._local_value(), "i_dist": first["i"].is_dist(), "y_shape": list(y.shape),
            "y": dist.unshard_dtensor(y)}


def test_shard_dataloader_dict_batches_and_a_splitted_dataset():
    xs = np.arange(16, dtype=np.float32).reshape(8, 2)
    for rank, r in enumerate(run_ranks(_loader_dict_and_splitted, world=2)):
        np.testing.assert_array_equal(r["x"], xs[2 * rank:2 * rank + 2])
        assert r["i_dist"] is False  # not in input_keys: left as the loader gave it
        assert r["y_shape"] == [4, 2]  # each rank's 2 rows are a piece of a global 4
        np.testing.assert_array_equal(r["y"], xs[[0, 1, 4, 5]])


def _bad_loader_dim(rank, world):
    mesh = dist.ProcessMesh([0, 1], dim_names=["dp"])
    loader = oar.io.DataLoader(oar.io.TensorDataset([oar.to_tensor(np.zeros((4, 2), np.float32))]), batch_size=2)
    next(iter(dist.shard_dataloader(loader, mesh, shard_dims="mp")))


def test_shard_dataloader_on_a_missing_mesh_dim_is_an_error():
    for err in run_ranks(_bad_loader_dim, world=2, expect_error=True):
        assert "shard_dataloader" in err and "'mp'" in err and "['dp']" in err


def _bad_stage_dim(rank, world):
    mesh = dist.ProcessMesh([0, 1], dim_names=["dp"])
    model = dist.shard_layer(oar.nn.Linear(4, 4), mesh)
    opt = oar.optimizer.AdamW(parameters=model.parameters())
    dist.shard_optimizer(opt, dist.ShardingStage1("mp"))


def test_sharding_stage_on_a_missing_mesh_dim_is_an_error():
    for err in run_ranks(_bad_stage_dim, world=2, expect_error=True):
        assert "ShardingStage1" in err and "'mp'" in err and "['dp']" in err


def _layer_hooks(rank, world):
    mesh = dist.ProcessMesh([0, 1], dim_names=["x"])
    layer = oar.nn.Linear(3, 2)
    layer.weight.set_value(np.arange(6, dtype=np.float32).reshape(3, 2))

    def input_fn(inputs, mesh):
        return dist.shard_tensor(inputs[0], mesh, [dist.Shard(0)])

    def output_fn(outputs, mesh):
        return dist.unshard_dtensor(outputs)

    dist.shard_layer(layer, mesh, input_fn=input_fn, output_fn=output_fn)
    y = layer(oar.to_tensor(np.ones((4, 3), np.float32)))
    return {"dense_out": not y.is_dist(), "y": y, "weight": repr(layer.weight.placements),
            "is_param": type(layer.weight).__name__, "n": len(layer.parameters())}


def test_shard_layer_input_and_output_fn():
    for r in run_ranks(_layer_hooks, world=2):
        assert r["dense_out"] and r["weight"] == "[Replicate()]" and r["is_param"] == "Parameter" and r["n"] == 2
        np.testing.assert_allclose(r["y"], np.tile([[6.0, 9.0]], (4, 1)))  # ones @ [[0,1],[2,3],[4,5]]


def test_bad_arguments_are_sentences():
    with pytest.raises(ValueError, match="shard_layer: `process_mesh` must be a dist.ProcessMesh"):
        dist.shard_layer(oar.nn.Linear(2, 2), [0, 1])
    with pytest.raises(ValueError, match="shard_optimizer: shard_fn must be"):
        dist.shard_optimizer(oar.optimizer.SGD(parameters=oar.nn.Linear(2, 2).parameters()), lambda *a: None)
    with pytest.raises(ValueError, match="shard_dataloader: `meshes`"):
        dist.shard_dataloader([], [])
