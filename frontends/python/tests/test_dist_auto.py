"""dist.to_distributed (issue 14, item 7): the candidates it enumerates, the
Megatron pairs its probe finds, the cost model's memory and communication
counts against hand-computed ones, the memory rejection, and the chosen
strategy training the tiny GPT to the single-process curve on 2 ranks."""
import numpy as np
import pytest

import oar
import oar.distributed as dist
import oar.nn as nn
import oar.nn.functional as F
from oar.distributed.auto_parallel import auto_strategy as A

from dist_harness import run_ranks
from tiny_gpt import GPTConfig, TinyGPT, batches, loss_fn, loss_value, make_optimizer, single_process_curve

# Fixed numbers so the estimates are reproducible (no measuring in these tests).
HW = A.Hardware(flops=1e10, latency=1e-4, bandwidth=1e9)


class MLP(nn.Layer):
    """8 -> 32 -> 8, relu: one column -> row pair."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 32)
        self.fc2 = nn.Linear(32, 8)
        rng = np.random.RandomState(0)
        for p in self.parameters():
            p.set_value((0.1 * rng.standard_normal(p.shape)).astype(np.float32))

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def mlp_sample(batch=4):
    return oar.to_tensor(np.random.RandomState(3).standard_normal((batch, 8)).astype(np.float32))


def names(cands):
    return sorted(c.name for c in cands)


def test_enumeration_for_2_and_4_devices():
    assert names(A.enumerate_candidates(2)) == sorted(
        ["dp2", "dp2+stage1", "dp2+stage2", "dp2+stage3", "tp2", "pp2"])
    assert names(A.enumerate_candidates(4)) == sorted(
        ["dp4", "dp4+stage1", "dp4+stage2", "dp4+stage3", "tp4", "pp4",
         "dp2xtp2", "dp2xtp2+stage1", "dp2xtp2+stage2", "dp2xtp2+stage3"])
    assert names(A.enumerate_candidates(1)) == ["single"]
    with pytest.raises(ValueError, match="to_distributed: device_num"):
        A.enumerate_candidates(0)


def test_probe_finds_the_megatron_pairs_of_the_tiny_gpt():
    model = TinyGPT(GPTConfig())
    info = A.probe_model(model, [oar.to_tensor(batches(1)[0][0])])
    pairs = [(cols, row) for cols, row, *_ in info.pairs]
    want = []
    for b in range(2):
        attn, mlp = f"blocks.{b}.attn.", f"blocks.{b}.mlp."
        want += [([attn + "q_proj", attn + "k_proj", attn + "v_proj"], attn + "proj"), ([mlp + "fc1"], mlp + "fc2")]
    assert pairs == want  # the head (128 -> 256) has no row partner: it stays replicated
    assert all(p[4] for p in info.pairs)  # each block input needs a gradient (backward all_reduce)
    assert [p[5] for p in info.pairs] == [f"blocks.{b}.{ln}" for b in range(2) for ln in ("ln1", "ln2")]
    # Linear flops per sample: 16 tokens * 2 * (4*128*128 + 2*128*512) per block + the head 2*128*256.
    per_token = 2 * (2 * (4 * 128 * 128 + 2 * 128 * 512) + 128 * 256)
    assert sum(f for _, _, f, _ in info.linears.values()) == pytest.approx(16 * per_token)
    cands, best, _ = A.plan(model, make_optimizer(model), [oar.to_tensor(batches(1)[0][0])], 2, hardware=HW)
    verdicts = {c.name: c.verdict for c in cands}
    assert verdicts["pp2"].startswith("static only: pipeline runs in dist.to_static")
    assert best.name != "pp2" and best.verdict == "chosen"


def test_probe_finds_the_mlp_pair_and_counts_its_parameters():
    info = A.probe_model(MLP(), [mlp_sample()])
    assert [(c, r, needs, producer) for c, r, _, _, needs, producer in info.pairs] == [(["fc1"], "fc2", False, None)]
    assert info.param_bytes == 4 * (8 * 32 + 32 + 32 * 8 + 8)


def _mlp_plan(budget=None, world=2):
    model = MLP()
    opt = oar.optimizer.AdamW(learning_rate=1e-2, parameters=model.parameters())
    return A.plan(model, opt, [mlp_sample()], world, memory_budget=budget, hardware=HW)


def test_memory_estimates_by_hand_and_the_budget_rejects_dp_keeps_stage3():
    cands, best, _ = _mlp_plan()
    by = {c.name: c for c in cands}
    P = 4.0 * (8 * 32 + 32 + 32 * 8 + 8)  # parameter bytes
    # activations: the outputs of the leaf layers fc1 [4, 32] and fc2 [4, 8] (relu is a function), / dp
    dp_act = 4.0 * (4 * 32 + 4 * 8) / 2
    assert by["dp2"].memory == pytest.approx(P + P + 2 * P + dp_act)
    # stage 3: params, grads, Adam's 2 moments all / 2, plus the largest layer gathered (fc1: 8*32+32 floats).
    assert by["dp2+stage3"].memory == pytest.approx(P / 2 + P / 2 + 2 * P / 2 + 4 * (8 * 32 + 32) + dp_act)
    assert by["dp2+stage1"].memory == pytest.approx(P + P + 2 * P / 2 + dp_act)
    assert by["dp2+stage2"].memory == pytest.approx(P + P / 2 + 2 * P / 2 + dp_act)
    budget = (by["dp2"].memory + by["dp2+stage3"].memory) / 2
    cands, best, _ = _mlp_plan(budget)
    by = {c.name: c for c in cands}
    assert by["dp2"].verdict.startswith("rejected: memory")
    assert "budget" in by["dp2"].verdict
    assert by["dp2+stage3"].applicable
    assert best is not None and best.memory <= budget
    cands, best, _ = _mlp_plan(1.0)  # one byte: nothing fits
    assert best is None and all(not c.applicable for c in cands)


def test_communication_counts_by_hand_on_the_mlp():
    """TP: one all_reduce of fc2's [4, 8] output (x needs no gradient, so no
    backward one); DP: one all_reduce of every gradient together (a bucket); stage 3: an all_gather of
    each half and a reduce_scatter of each gradient."""
    cands, _, info = _mlp_plan()
    by = {c.name: c for c in cands}
    assert by["tp2"].collectives == [("all_reduce", 4 * 4 * 8, 2, 1)]
    sizes = [4 * 8 * 32, 4 * 32, 4 * 32 * 8, 4 * 8]
    assert by["dp2"].collectives == [("all_reduce", sum(sizes), 2, 1)]  # one bucket
    st3 = [c for b in sizes for c in (("all_gather", b / 2, 2, 1), ("reduce_scatter", b, 2, 1))]
    assert by["dp2+stage3"].collectives == st3
    # time = latency + ring bytes / bandwidth per collective, plus flops / throughput
    assert by["tp2"].comm == pytest.approx(1e-4 + 2 * 0.5 * 128 / 1e9)
    flops = 3 * 2 * 4 * (8 * 32 + 32 * 8)
    assert by["tp2"].compute == pytest.approx(flops / 2 / 1e10)
    assert by["dp2"].compute == pytest.approx(flops / 2 / 1e10)


def test_the_table_lists_every_candidate_with_its_verdict():
    cands, best, _ = _mlp_plan()
    text = A.table(cands)
    for c in cands:
        assert c.name in text
    assert "chosen" in text
    assert {c.name: c.verdict for c in cands}["pp2"] == "rejected: 1 blocks cannot split into 2 pipeline stages"
    assert best.verdict == "chosen" and best.time == min(c.time for c in cands if c.applicable)


def test_to_distributed_checks_the_world_size():
    with pytest.raises(ValueError, match="to_distributed: device_num \\* node_num = 2 but the job has 1"):
        dist.to_distributed(MLP(), None, None, device_num=2)


def test_one_device_keeps_the_model_and_prints_the_table(capsys):
    model = MLP()
    opt = oar.optimizer.AdamW(learning_rate=1e-2, parameters=model.parameters())
    loader = [(mlp_sample(), mlp_sample())]
    out = dist.to_distributed(model, opt, loader, device_num=1, config=dist.ToDistributedConfig(hardware=HW))
    assert out[0] is model and out[1] is opt and out[2] is loader
    assert not model.fc1.weight.is_dist()
    text = capsys.readouterr().out
    assert "to_distributed: candidates" in text and "single" in text and "chosen" in text


# ----------------------------------------------------------------- on 2 ranks
class _Samples(oar.io.Dataset):
    def __init__(self, data):
        self.items = [(t[i], y[i]) for t, y in data for i in range(t.shape[0])]

    def __getitem__(self, i):
        return self.items[i]

    def __len__(self):
        return len(self.items)


def _train_auto(rank, world, steps, candidates):
    cfg = GPTConfig()
    model = TinyGPT(cfg)
    opt = make_optimizer(model)
    loader = oar.io.DataLoader(_Samples(batches(steps, 4, cfg)), batch_size=4, shuffle=False)
    config = dist.ToDistributedConfig(hardware=HW, candidates=candidates, print_table=False)
    model, opt, loader = dist.to_distributed(model, opt, loader, device_num=world, config=config)
    best, _ = model._auto_plan
    oar.seed(2)
    model.train()
    curve = []
    for tokens, labels in loader():
        loss = loss_fn(model(tokens), labels)
        loss.backward()
        opt.step()
        opt.clear_grad()
        curve.append(loss_value(loss))
    placed = {n: str(p.placements) for n, p in model.named_parameters()}
    return {"chosen": best.name, "curve": curve, "placed": placed, "batch": str(tokens.placements)}


@pytest.mark.parametrize("candidates", [None, ["dp2+stage3"]], ids=["chosen", "stage3"])
def test_the_chosen_strategy_trains_the_tiny_gpt_to_the_single_process_curve(candidates):
    want = single_process_curve(3)
    results = run_ranks(_train_auto, world=2, args=(3, candidates), timeout=120)
    assert results[0]["chosen"] == results[1]["chosen"]
    chosen = results[0]["chosen"]
    if candidates:
        assert chosen == candidates[0]
    for r in results:
        np.testing.assert_allclose(r["curve"], want, rtol=2e-5, atol=2e-5)
    placed = results[0]["placed"]
    if chosen.startswith("tp"):
        assert "Shard(dim=1)" in placed["blocks.0.attn.q_proj.weight"]
        assert "Shard(dim=0)" in placed["blocks.1.mlp.fc2.weight"]
        assert "Shard" not in placed["head.weight"]
        assert "Shard" not in results[0]["batch"]
    else:
        assert "Shard(dim=0)" in results[0]["batch"]


def _counted(rank, world, name):
    model = MLP()
    opt = oar.optimizer.AdamW(learning_rate=1e-2, parameters=model.parameters())
    x = mlp_sample()
    target = oar.to_tensor(np.ones((4, 8), np.float32))
    loader = [(x, target)]
    config = dist.ToDistributedConfig(hardware=HW, candidates=[name], print_table=False)
    model, opt, loader = dist.to_distributed(model, opt, loader, device_num=world, config=config)
    best, _ = model._auto_plan
    xs, ts = next(iter(loader))
    oar._C.dist.reset_collective_stats()
    loss = oar.mean(oar.square(oar.subtract(model(xs), ts)))
    loss.backward()
    opt.step()  # stage 1 / 2 gather the updated pieces here
    stats = oar._C.dist.collective_stats()
    return {"stats": {k: tuple(v) for k, v in stats.items()}, "model": best.collectives}


@pytest.mark.skipif(not hasattr(oar._C.dist, "collective_stats"), reason="needs _C.dist.collective_stats (H2)")
@pytest.mark.parametrize("name", ["tp2", "dp2", "dp2+stage1", "dp2+stage2", "dp2+stage3"])
def test_cost_model_bytes_equal_the_counted_collectives(name):
    """One eager step (forward, backward, optimizer step) on the MLP runs
    exactly the collectives the cost model counts: calls and input bytes."""
    for r in run_ranks(_counted, world=2, args=(name,)):
        want = {}
        for kind, b, _, calls in r["model"]:
            c, total = want.get("c_" + kind, (0, 0))
            want["c_" + kind] = (c + calls, total + int(b) * calls)
        got = {k: v for k, v in r["stats"].items() if v[0]}
        assert got == want


def _static_program(rank, world, name):
    model = MLP()
    opt = oar.optimizer.AdamW(learning_rate=1e-2, parameters=model.parameters())
    loader = [(mlp_sample(), oar.to_tensor(np.ones((4, 8), np.float32)))]
    config = dist.ToDistributedConfig(hardware=HW, candidates=[name], print_table=False)
    model, opt, loader = dist.to_distributed(model, opt, loader, device_num=world, config=config)
    best, _ = model._auto_plan
    dist_model = dist.to_static(model, None, lambda y, t: oar.mean(oar.square(oar.subtract(y, t))), opt)
    dist_model.train()
    xs, ts = next(iter(loader))
    dist_model(xs, ts)
    return {"text": "\n".join(b.local_text for b in dist_model._programs.values()), "model": best.collectives}


def _program_collectives(text):
    """{op: (calls, bytes of the input)} of the all_reduces in a per-rank
    program, less the scalar one (the whole loss DistModel returns: a read
    of the loss, not part of the step the cost model counts)."""
    import re
    out = {}
    for dtype, shape, op in re.findall(r"%\w+: (\w+)\[([\d, ]*)\] = (c_\w+)\(", text):
        assert op == "c_all_reduce" and dtype == "f32", (op, dtype)  # TP and DP need nothing else
        dims = [int(d) for d in shape.split(",") if d.strip()]
        if not dims:
            continue
        calls, total = out.get(op, (0, 0))
        out[op] = (calls + 1, total + 4 * int(np.prod(dims)))
    return out


@pytest.mark.parametrize("name", ["tp2", "dp2"])
def test_cost_model_collectives_equal_the_static_programs(name):
    """The collectives the cost model counts for TP and DP on the MLP are the
    ones dist.to_static's partition inserts in each rank's program."""
    for r in run_ranks(_static_program, world=2, args=(name,)):
        want = {}
        for kind, b, _, calls in r["model"]:
            c, total = want.get("c_" + kind, (0, 0))
            want["c_" + kind] = (c + calls, total + int(b) * calls)
        if name == "dp2":  # the scalar loss rides in the gradients' bucket (Note [Bucketed gradient reduction])
            want["c_all_reduce"] = (want["c_all_reduce"][0], want["c_all_reduce"][1] + 4)
        assert _program_collectives(r["text"]) == want, r["text"]


def _counted_gpt(rank, world, name):
    cfg = GPTConfig()
    model = TinyGPT(cfg)
    loader = oar.io.DataLoader(_Samples(batches(1, 4, cfg)), batch_size=4, shuffle=False)
    config = dist.ToDistributedConfig(hardware=HW, candidates=[name], print_table=False)
    model, opt, loader = dist.to_distributed(model, make_optimizer(model), loader, device_num=world, config=config)
    best, _ = model._auto_plan
    tokens, labels = next(iter(loader))
    oar._C.dist.reset_collective_stats()
    loss_fn(model(tokens), labels).backward()
    opt.step()
    stats = oar._C.dist.collective_stats()
    return {"stats": {k: tuple(v) for k, v in stats.items() if v[0]}, "model": best.collectives}


@pytest.mark.skipif(not hasattr(oar._C.dist, "collective_stats"), reason="needs _C.dist.collective_stats (H2)")
def test_cost_model_counts_the_tiny_gpts_tensor_parallel_collectives():
    """tp2 on the tiny GPT, one eager step: per block 2 forward all_reduces
    of a [4, 16, 128] activation, backward 1 (q, k and v's gradients summed
    first) + 1 (fc1) of the block's input gradient and 4 of the layer_norms'
    parameter gradients (Megatron's minimum is the 2 + 2 big ones)."""
    r = run_ranks(_counted_gpt, world=2, args=("tp2",))[0]
    act, ln = 4 * 16 * 128 * 4, 128 * 4
    # ... the 8 layer_norm gradients reduced together in one bucket
    # (Note [Bucketed gradient reduction]): 9 calls against Megatron's 8.
    assert r["stats"] == {"c_all_reduce": (2 * (2 + 2) + 1, 2 * ((2 + 2) * act + 4 * ln))}
    calls = sum(k for _, _, _, k in r["model"])
    moved = sum(int(b) * k for _, b, _, k in r["model"])
    assert (calls, moved) == r["stats"]["c_all_reduce"]
