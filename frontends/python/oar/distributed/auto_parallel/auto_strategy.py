"""Automatic strategy choice (issue 14, item 7): Paddle 3's
`dist.to_distributed(model, optimizer, dataloader, device_num, node_num=1,
config=None)`. Given a model without annotations, it

1. probes the model once on a sample batch (forward hooks on every leaf
   layer, one autograd query per Linear pair) to find the Megatron pairs:
   a group of Linear layers reading the same input (q/k/v, or one fc1) whose
   outputs feed the next Linear of the same block (proj, fc2) through
   non-Linear ops; and counts parameters, Linear flops and activation bytes;
2. enumerates candidates: DP, DP with sharding stage 1/2/3, TP (the pairs
   column -> row), DP x TP on a 2-D mesh (with the stages on its dp dim) and
   a PP split (estimated, never applied: see Note [Pipeline candidates]);
3. estimates each one's step time and peak memory (Note [Auto cost model]),
   rejects those over the memory budget with the reason, picks the fastest,
   prints the table, and applies it with the strategies' own code paths
   (shard_layer, shard_optimizer, shard_dataloader).

Note [Auto cost model]
time = compute + communication, per rank.
- compute: the probe's Linear flops (2*m*k*n per call, scaled to the batch)
  times 3 (forward + the two backward matmuls), divided by the data-parallel
  degree, the paired layers' part also by the tensor-parallel degree; at the
  device throughput measured by timing one [256, 512] x [512, 512] matmul.
  Matmuls outside nn.Linear (attention's scores) are not counted.
- communication: the collectives the placements imply, each as (kind,
  bytes of this rank's input, group size), the same quantity
  `_C.dist.collective_stats()` counts: TP: one all_reduce of the row layer's
  output per pair forward; backward (when the group's input needs a
  gradient) one all_reduce of that input's gradient per column group (q, k
  and v's Partial gradients are summed first and reduced once: Note
  [Summing partial gradients] in core/src/autograd/engine.cpp) and one of
  each parameter gradient of the layer that made
  the input (layer_norm's weight and bias see a Partial gradient); DP: the gradients all_reduced together in
  buckets of 25 MB (Note [Bucketed gradient reduction] in
  core/src/autograd/engine.cpp; with TP one per gradient); stage 1
  adds an all_gather of each updated piece; stage 2 a reduce_scatter of each
  gradient plus the all_gather; stage 3 an all_gather of each piece in the
  forward and a reduce_scatter of each gradient. A collective costs
  latency + ring_factor * bytes / bandwidth (all_reduce 2(n-1)/n of its
  input, reduce_scatter (n-1)/n, all_gather (n-1) times its piece), latency
  and bandwidth measured by timing all_reduces of 4 bytes and of 4 MB.
  Every rank takes the slowest rank's measurements (an all_reduce MAX), so
  every rank picks the same candidate.
- memory: parameters + gradients + optimizer state (2 moments for Adam /
  AdamW, 1 for Momentum), each split by TP for paired layers and by the
  stage along dp (stage 1: state, 2: + gradients, 3: + parameters, plus the
  largest layer gathered), + activations: the bytes of every leaf layer's
  output in the probe, scaled to the batch, / dp (column outputs also / tp).

Note [Pipeline candidates]
Pipeline parallel runs only through dist.to_static with the stages' layers
placed on two meshes (strategy.pipeline); to_distributed returns an eager
model, so a ppN row is estimated (compute / N with the 1F1B bubble
(m + N - 1) / m for m = N micro-batches, parameters / N, one send of the
boundary activation per micro-batch each way) and marked "static only".
"""
import math
import time

import numpy as np

from ... import _C

_ADAM_STATES = {"Adam": 2, "AdamW": 2, "Lamb": 2, "Momentum": 1, "SGD": 0}


class ToDistributedConfig:
    """Paddle's ToDistributedConfig (input_spec, sequence_parallel) plus the
    automatic choice's own knobs: memory_budget (bytes per device, None: no
    limit), hardware (a Hardware, None: measured at start-up), candidates (a
    list of names to consider, None: all), print_table."""

    def __init__(self, input_spec=None, sequence_parallel=False, memory_budget=None, hardware=None,
                 candidates=None, print_table=True):
        if sequence_parallel:
            raise NotImplementedError("to_distributed: sequence_parallel is not chosen automatically; place the "
                                      "model by hand (see tiny_gpt.py's 'sp' strategy)")
        self.input_spec, self.sequence_parallel = input_spec, sequence_parallel
        self.memory_budget, self.hardware = memory_budget, hardware
        self.candidates, self.print_table = candidates, print_table


class Hardware:
    """Measured (or given) device and link numbers: flops (per second),
    latency (seconds per collective), bandwidth (bytes per second)."""

    def __init__(self, flops, latency, bandwidth):
        self.flops, self.latency, self.bandwidth = float(flops), float(latency), float(bandwidth)

    def __repr__(self):
        return (f"Hardware(flops={self.flops / 1e9:.2f} GFLOP/s, latency={self.latency * 1e6:.0f} us, "
                f"bandwidth={self.bandwidth / 1e9:.3f} GB/s)")


def _median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def measure_hardware(world=None):
    """Times one matmul and two all_reduces (well under a second), then
    takes the slowest rank's numbers on every rank (Note [Auto cost model])."""
    import oar
    from .. import parallel
    from .. import collective
    a = oar.to_tensor(np.random.RandomState(0).standard_normal((256, 512)).astype(np.float32))
    b = oar.to_tensor(np.random.RandomState(1).standard_normal((512, 512)).astype(np.float32))
    _C.ops.matmul(a, b, False, False).numpy()
    t_mm = _median_time(lambda: _C.ops.matmul(a, b, False, False).numpy(), 5)
    world = world or (parallel.get_world_size() if parallel.is_initialized() else 1)
    t_small = t_big = 0.0
    big_bytes = 4 << 20
    if world > 1:
        small = oar.to_tensor(np.zeros(1, np.float32))
        big = oar.to_tensor(np.zeros(big_bytes // 4, np.float32))
        collective.all_reduce(small)
        t_small = _median_time(lambda: collective.all_reduce(small), 5)
        t_big = _median_time(lambda: collective.all_reduce(big), 3)
        worst = oar.to_tensor(np.array([t_mm, t_small, t_big], np.float64))
        collective.all_reduce(worst, op=collective.ReduceOp.MAX)
        t_mm, t_small, t_big = (float(v) for v in worst.numpy())
    flops = 2.0 * 256 * 512 * 512 / max(t_mm, 1e-9)
    if world > 1:
        ring = 2.0 * (world - 1) / world * big_bytes
        bandwidth = ring / max(t_big - t_small, 1e-9)
    else:
        bandwidth = float("inf")
    return Hardware(flops, t_small, bandwidth)


# ------------------------------------------------------------------ the probe
class ModelInfo:
    """What the probe found: params [(name, numel, layer name)], linears
    {name: (in, out, flops per sample, output bytes per sample)}, pairs
    [(column names, row name, col input bytes/sample, row output
    bytes/sample, input needs grad, producer layer)], act_bytes and col_act_bytes per sample,
    the boundary activation bytes per sample (for PP), the number of blocks."""

    def __init__(self):
        self.params, self.linears, self.pairs = [], {}, []
        self.act_bytes = self.col_act_bytes = self.boundary_bytes = 0.0
        self.blocks = 1

    @property
    def param_bytes(self):
        return 4.0 * sum(n for _, n, _ in self.params)

    def paired_layers(self):
        out = {}
        for cols, row, *_ in self.pairs:
            for c in cols:
                out[c] = "column"
            out[row] = "row"
        return out


def _nbytes(t):
    return 4.0 * float(np.prod(t.shape)) if hasattr(t, "shape") else 0.0


def probe_model(model, sample):
    """Runs model(*sample) once with hooks (in eval mode); returns a
    ModelInfo with every per-sample quantity (divided by the sample's batch
    size)."""
    import oar
    import oar.nn as nn
    info = ModelInfo()
    sample = list(sample) if isinstance(sample, (list, tuple)) else [sample]
    batch = int(sample[0].shape[0])
    leaves = {name: sub for name, sub in model.named_sublayers() if not sub._sub_layers}
    owner = {}
    for name, sub in leaves.items():
        for pname, p in sub._parameters.items():
            if p is not None:
                owner[id(p)] = name
    for name, p in model.named_parameters():
        info.params.append((name, int(np.prod(p.shape)), owner.get(id(p), "")))
    calls, handles = [], []
    for name, sub in leaves.items():
        def hook(layer, inputs, outputs, name=name):
            calls.append((name, layer, inputs[0] if inputs else None, outputs))
        handles.append(sub.register_forward_post_hook(hook))
    was_training = model.training
    model.eval()  # dropout off: the probe draws no random numbers, so training's stream is untouched
    try:
        with oar.enable_grad():
            model(*sample)
    finally:
        for h in handles:
            h.remove()
        model.train() if was_training else model.eval()
    for name, layer, x, y in calls:
        info.act_bytes += _nbytes(y) / batch
        if isinstance(layer, nn.Linear):
            m = float(np.prod(x.shape[:-1]))
            fl = 2.0 * m * layer.in_features * layer.out_features / batch
            prev = info.linears.get(name, (0, 0, 0.0, 0.0))
            info.linears[name] = (layer.in_features, layer.out_features, prev[2] + fl, prev[3] + _nbytes(y) / batch)
    info.pairs = _find_pairs(calls, batch)
    cols = {c for cols, *_ in info.pairs for c in cols}
    info.col_act_bytes = sum(info.linears[c][3] for c in cols)
    blocks = [n for n, s in model.named_sublayers() if isinstance(s, nn.LayerList)]
    if blocks:
        lst = dict(model.named_sublayers())[blocks[0]]
        info.blocks = len(lst)
    pair_outs = [p[3] for p in info.pairs]
    info.boundary_bytes = max(pair_outs) if pair_outs else (info.act_bytes / max(len(calls), 1))
    return info


def _parent(name):
    return name.rsplit(".", 1)[0] if "." in name else ""


def _depends(y, x):
    """Whether y was computed from x (an autograd query; no gradient kept)."""
    import oar
    if getattr(y, "stop_gradient", True) or getattr(x, "stop_gradient", True):
        return False
    try:
        g = oar.grad([_C.ops.sum(y, [], False)], [x], retain_graph=True, allow_unused=True)
    except Exception:  # noqa: BLE001 - no path between them
        return False
    return g[0] is not None


def _find_pairs(calls, batch):
    """Megatron pairs in call order, each (column names, row name, input
    bytes / sample, output bytes / sample, input needs grad, the leaf layer
    that produced the input or None). A column group is the consecutive Linear
    calls of one parent layer on the same input tensor; its row layer is the
    next Linear call of that parent, whose input is computed from every
    group output without another Linear between (only the group's siblings
    ran) and whose output has the group input's width (a residual branch)."""
    import oar.nn as nn
    lin = [(n, l, x, y) for n, l, x, y in calls if isinstance(l, nn.Linear)]
    pairs, i, used = [], 0, set()
    while i < len(lin):
        name, layer, x, y = lin[i]
        group = [lin[i]]
        j = i + 1
        while j < len(lin) and lin[j][2] is x and _parent(lin[j][0]) == _parent(name):
            group.append(lin[j])
            j += 1
        if j < len(lin) and _parent(lin[j][0]) == _parent(name) and name not in used:
            rname, rlayer, rx, ry = lin[j]
            widths_ok = (rlayer.out_features == layer.in_features
                         and all(g[1].in_features == layer.in_features for g in group))
            if widths_ok and all(_depends(rx, g[3]) for g in group):
                needs_grad = not getattr(x, "stop_gradient", True)
                producer = next((n for n, _, _, out in calls if out is x), None)
                pairs.append(([g[0] for g in group], rname, _nbytes(x) / batch, _nbytes(ry) / batch, needs_grad,
                              producer))
                used.update(g[0] for g in group)
                used.add(rname)
                i = j + 1
                continue
        i = j if j > i + 1 else i + 1
    return pairs


# ------------------------------------------------------------ candidates
class Candidate:
    """One strategy: dp x tp (either may be 1), a sharding stage on dp, or a
    pipeline of pp stages. Filled by estimate(): time (seconds), compute,
    comm, memory (bytes), collectives [(kind, bytes, group size, calls)],
    verdict ("ok", "chosen", "rejected: ...", "static only: ...")."""

    def __init__(self, dp=1, tp=1, stage=0, pp=1):
        self.dp, self.tp, self.stage, self.pp = dp, tp, stage, pp
        self.time = self.compute = self.comm = self.memory = 0.0
        self.collectives = []
        self.verdict = "ok"

    @property
    def name(self):
        if self.pp > 1:
            return f"pp{self.pp}"
        parts = ([f"dp{self.dp}"] if self.dp > 1 else []) + ([f"tp{self.tp}"] if self.tp > 1 else [])
        base = "x".join(parts) or "single"
        return base + (f"+stage{self.stage}" if self.stage else "")

    @property
    def applicable(self):
        return self.verdict in ("ok", "chosen")

    def __repr__(self):
        return f"Candidate({self.name}, {self.verdict})"


def enumerate_candidates(world):
    """Every strategy for `world` devices: dpN (+stage1/2/3), tpN, dpA x tpB
    for each factorization with A, B > 1 (+stages on dp), ppN."""
    if world < 1:
        raise ValueError(f"to_distributed: device_num * node_num must be >= 1, got {world}")
    if world == 1:
        return [Candidate()]
    out = [Candidate(dp=world, stage=s) for s in range(4)] + [Candidate(tp=world)]
    for a in range(2, world):
        if world % a == 0 and world // a > 1:
            out += [Candidate(dp=a, tp=world // a, stage=s) for s in range(4)]
    out.append(Candidate(pp=world))
    return out


_BUCKET_BYTES = 25 << 20  # the engine's gradient bucket (kBucketBytes)


def _ring(kind, nbytes, n):
    if n <= 1:
        return 0.0
    return {"all_reduce": 2.0 * (n - 1) / n, "reduce_scatter": (n - 1) / n, "all_gather": float(n - 1),
            "send": 1.0}[kind] * nbytes


def collectives_of(cand, info, batch, grad_placements=True):
    """The collectives one training step of `cand` runs on one rank: a list
    of (kind, bytes of this rank's input per call, group size, calls)."""
    out = []
    tokens_batch = batch / cand.dp  # samples this rank computes
    paired = info.paired_layers() if cand.tp > 1 else {}
    if cand.tp > 1:
        small = 0.0  # the producers' Partial parameter gradients: one bucket (Note [Bucketed gradient reduction])
        for cols, row, in_b, out_b, needs_grad, producer in info.pairs:
            out.append(("all_reduce", out_b * tokens_batch, cand.tp, 1))
            if needs_grad:  # Note [Auto cost model]: one for the column group's summed Partial input gradient
                out.append(("all_reduce", in_b * tokens_batch, cand.tp, 1))
                small += sum(4.0 * n for _, n, layer in info.params if layer == producer and layer not in paired)
        if small:
            out.append(("all_reduce", small, cand.tp, 1))
    if cand.dp > 1:
        bucket = 0.0  # Note [Bucketed gradient reduction] in core/src/autograd/engine.cpp
        for name, numel, layer in info.params:
            b = 4.0 * numel / (cand.tp if layer in paired else 1)
            if cand.stage in (0, 1) and cand.tp == 1:  # gradients all_reduced in buckets of 25 MB
                bucket += b
                if bucket >= _BUCKET_BYTES:
                    out.append(("all_reduce", bucket, cand.dp, 1))
                    bucket = 0.0
                if cand.stage == 1:
                    out.append(("all_gather", b / cand.dp, cand.dp, 1))
            elif cand.stage == 0:  # with TP, sharded and replicated gradients alternate: a bucket each (at most)
                out.append(("all_reduce", b, cand.dp, 1))
            elif cand.stage == 1:
                out += [("all_reduce", b, cand.dp, 1), ("all_gather", b / cand.dp, cand.dp, 1)]
            elif cand.stage == 2:
                first = ("reduce_scatter", b, cand.dp, 1) if grad_placements else ("all_reduce", b, cand.dp, 1)
                out += [first, ("all_gather", b / cand.dp, cand.dp, 1)]
            else:
                out += [("all_gather", b / cand.dp, cand.dp, 1), ("reduce_scatter", b, cand.dp, 1)]
        if bucket:
            out.append(("all_reduce", bucket, cand.dp, 1))
    if cand.pp > 1:
        out.append(("send", info.boundary_bytes * batch / cand.pp, 2, 2 * cand.pp))  # m = pp micro-batches, each way
    return out


def estimate(cand, info, batch, hw, opt_states=2, budget=None, grad_placements=True):
    """Fills cand's time, compute, comm, memory and verdict (Note [Auto cost model])."""
    paired = info.paired_layers() if cand.tp > 1 else {}
    lin_flops = sum(f for _, _, f, _ in info.linears.values()) * batch * 3.0
    split_flops = sum(info.linears[n][2] for n in paired) * batch * 3.0
    local = (lin_flops - split_flops + split_flops / cand.tp) / cand.dp
    if cand.pp > 1:
        local = lin_flops / cand.pp * (2 * cand.pp - 1) / cand.pp  # m = pp micro-batches: (m + pp - 1) / m
    cand.compute = local / hw.flops
    cand.collectives = collectives_of(cand, info, batch, grad_placements)
    cand.comm = sum(calls * (hw.latency + _ring(kind, b, n) / hw.bandwidth)
                    for kind, b, n, calls in cand.collectives)
    cand.time = cand.compute + cand.comm
    # memory
    shard_p = cand.dp if cand.stage >= 3 else 1
    shard_g = cand.dp if cand.stage >= 2 else 1
    shard_o = cand.dp if cand.stage >= 1 else 1
    pb = sum(4.0 * n / (cand.tp if layer in paired else 1) for _, n, layer in info.params) / cand.pp
    mem = pb / shard_p + pb / shard_g + opt_states * pb / shard_o
    if cand.stage >= 3:
        per_layer = {}
        for _, n, layer in info.params:
            per_layer[layer] = per_layer.get(layer, 0.0) + 4.0 * n / (cand.tp if layer in paired else 1)
        mem += max(per_layer.values(), default=0.0)
    act = info.act_bytes - (info.col_act_bytes * (1 - 1.0 / cand.tp) if cand.tp > 1 else 0.0)
    mem += act * batch / cand.dp / cand.pp
    cand.memory = mem
    cand.verdict = _verdict(cand, info, batch, budget)
    return cand


def _verdict(cand, info, batch, budget):
    if cand.dp > 1 and batch < cand.dp:
        return f"rejected: the batch of {batch} cannot split over dp={cand.dp}"
    if cand.tp > 1:
        if not info.pairs:
            return "rejected: no column -> row Linear pair found for tensor parallel"
        for cols, row, *_ in info.pairs:
            widths = [info.linears[c][1] for c in cols] + [info.linears[row][0]]
            if any(w % cand.tp for w in widths):
                return f"rejected: {row}'s pair has widths {widths}, not divisible by tp={cand.tp}"
    if cand.pp > 1 and info.blocks < cand.pp:
        return f"rejected: {info.blocks} blocks cannot split into {cand.pp} pipeline stages"
    if budget is not None and cand.memory > budget:
        return f"rejected: memory {_mb(cand.memory)} > budget {_mb(budget)}"
    if cand.pp > 1:
        return "static only: pipeline runs in dist.to_static (strategy.pipeline), not in eager to_distributed"
    return "ok"


def _mb(b):
    return f"{b / 2**20:.2f} MiB" if b >= 2**20 else f"{b / 1024:.1f} KiB"


def choose(cands):
    """The fastest applicable candidate (first among equals); None if none is."""
    ok = [c for c in cands if c.applicable]
    if not ok:
        return None
    best = min(ok, key=lambda c: c.time)
    best.verdict = "chosen"
    return best


def table(cands):
    """The candidates as text: name, estimated time (compute + comm),
    memory, collective bytes, verdict; by estimated time, rejected last."""
    rows = sorted(cands, key=lambda c: (not (c.applicable or c.verdict.startswith("static")), c.time))
    head = f"{'candidate':<18} {'est. ms':>9} {'compute':>9} {'comm':>9} {'memory':>11} {'comm bytes':>11}  verdict"
    lines = [head, "-" * len(head)]
    for c in rows:
        moved = sum(b * k for _, b, _, k in c.collectives)
        lines.append(f"{c.name:<18} {c.time * 1e3:9.3f} {c.compute * 1e3:9.3f} {c.comm * 1e3:9.3f} "
                     f"{_mb(c.memory):>11} {moved / 1024:9.1f}Ki  {c.verdict}")
    return "\n".join(lines)


def plan(model, optimizer, sample, device_num, node_num=1, memory_budget=None, hardware=None, candidates=None,
         batch=None):
    """Probes, enumerates and estimates without placing anything: returns
    (candidates, chosen, info). `sample` is one batch of model inputs (a
    tensor or a list); `batch` its batch size (default: its dim 0)."""
    world = int(device_num) * int(node_num or 1)
    info = probe_model(model, sample)
    first = sample[0] if isinstance(sample, (list, tuple)) else sample
    batch = int(batch or first.shape[0])
    hw = hardware or measure_hardware(world)
    states = _ADAM_STATES.get(type(getattr(optimizer, "_inner_opt", optimizer)).__name__, 2) if optimizer else 2
    grad_pl = hasattr(_C.dist, "_set_grad_placements")
    cands = enumerate_candidates(world)
    if candidates is not None:
        names = set(candidates)
        cands = [c for c in cands if c.name in names]
        if not cands:
            raise ValueError(f"to_distributed: none of the candidates {sorted(names)} exists for {world} devices")
    for c in cands:
        estimate(c, info, batch, hw, states, memory_budget, grad_pl)
    return cands, choose(cands), info


# ------------------------------------------------------------------ applying
def _mesh_of(cand):
    from .process_mesh import ProcessMesh
    if cand.dp > 1 and cand.tp > 1:
        return ProcessMesh(np.arange(cand.dp * cand.tp).reshape(cand.dp, cand.tp).tolist(), dim_names=["dp", "mp"])
    if cand.tp > 1:
        return ProcessMesh(list(range(cand.tp)), dim_names=["mp"])
    return ProcessMesh(list(range(max(cand.dp, 1))), dim_names=["dp"])


def _tp_shard_fn(roles, mp_axis):
    from .api import shard_tensor
    from .placement import Replicate, Shard

    def placed(mesh, dim):
        pl = [Replicate() for _ in range(mesh.ndim)]
        pl[mp_axis] = Shard(dim)
        return pl

    def shard_fn(name, layer, mesh):
        role = roles.get(name)
        if role == "column":
            layer.weight = shard_tensor(layer.weight, mesh, placed(mesh, 1))
            if layer.bias is not None:
                layer.bias = shard_tensor(layer.bias, mesh, placed(mesh, 0))
        elif role == "row":
            layer.weight = shard_tensor(layer.weight, mesh, placed(mesh, 0))
    return shard_fn


def apply_candidate(cand, model, optimizer, dataloader, info):
    """Places model / optimizer / loader for `cand` with shard_layer,
    shard_optimizer and shard_dataloader (as tiny_gpt.setup_strategy does);
    the optimizer's parameter groups are rebound to the placed parameters."""
    from .sharding import ShardingStage1, ShardingStage2, ShardingStage3, shard_dataloader, shard_layer, \
        shard_optimizer
    if cand.pp > 1:
        raise ValueError(f"to_distributed: {cand.name} is a pipeline candidate; {cand.verdict}")
    mesh = _mesh_of(cand)
    before = dict(model.named_parameters())
    roles = info.paired_layers() if cand.tp > 1 else {}
    shard_layer(model, mesh, _tp_shard_fn(roles, mesh.ndim - 1) if roles else None)
    if optimizer is not None:
        after = dict(model.named_parameters())
        remap = {id(p): after[n] for n, p in before.items() if n in after}
        inner = getattr(optimizer, "_inner_opt", optimizer)
        for group in inner._param_groups:
            group["params"] = [remap.get(id(p), p) for p in group["params"]]
        inner._accumulators = {(k, id(remap[pid]) if pid in remap else pid): v
                               for (k, pid), v in inner._accumulators.items()}
        if cand.stage:
            stage = {1: ShardingStage1, 2: ShardingStage2, 3: ShardingStage3}[cand.stage]
            optimizer = shard_optimizer(optimizer, stage("dp", mesh), layers=model)
    loader = None
    if dataloader is not None:
        loader = shard_dataloader(dataloader, [mesh], shard_dims="dp" if cand.dp > 1 else None)
    return model, optimizer, loader


def _first_batch(dataloader, config):
    import oar
    if config is not None and config.input_spec is not None:
        spec = config.input_spec if isinstance(config.input_spec, (list, tuple)) else [config.input_spec]
        return [oar.zeros(list(s.shape), dtype=getattr(s, "dtype", "float32")) if hasattr(s, "shape") and
                not isinstance(s, oar.Tensor) else s for s in spec]
    if dataloader is None:
        raise ValueError("to_distributed: needs a dataloader (or config.input_spec) to probe the model")
    batch = next(iter(dataloader))
    if isinstance(batch, dict):
        batch = list(batch.values())
    return [batch[0]] if isinstance(batch, (list, tuple)) else [batch]


def to_distributed(model, optimizer, dataloader, device_num, node_num=1, config=None, memory_budget=None):
    """Paddle's dist.to_distributed: chooses a strategy for a model without
    annotations on device_num * node_num ranks (every rank calls it with the
    same arguments), prints the table of candidates (time and memory
    estimates, verdicts), places the model, optimizer and loader for the
    chosen one and returns them. memory_budget (bytes per device; also
    config.memory_budget) rejects candidates whose estimate exceeds it."""
    from .. import parallel
    config = config or ToDistributedConfig()
    budget = memory_budget if memory_budget is not None else config.memory_budget
    world = int(device_num) * int(node_num or 1)
    have = parallel.get_world_size() if parallel.is_initialized() else 1
    if have != world:
        raise ValueError(f"to_distributed: device_num * node_num = {world} but the job has {have} ranks "
                         "(launch it with python -m oar.distributed.launch on that many devices)")
    sample = _first_batch(dataloader, config)
    cands, best, info = plan(model, optimizer, sample, device_num, node_num, budget, config.hardware,
                             config.candidates)
    text = table(cands)
    if config.print_table and (not parallel.is_initialized() or parallel.get_rank() == 0):
        print("to_distributed: candidates (estimated per step; Note [Auto cost model])\n" + text, flush=True)
    if best is None:
        raise ValueError(f"to_distributed: no candidate fits (memory budget {budget}):\n{text}")
    if world == 1:  # one device: nothing to place
        object.__setattr__(model, "_auto_plan", (best, cands))
        return model, optimizer, dataloader
    model, optimizer, loader = apply_candidate(best, model, optimizer, dataloader, info)
    object.__setattr__(model, "_auto_plan", (best, cands))
    return model, optimizer, loader
