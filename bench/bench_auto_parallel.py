#!/usr/bin/env python3
"""Semi-auto parallel benchmark at 2 ranks on one machine (issue 14): one
training step of the tiny GPT (frontends/python/tests/tiny_gpt.py: 2 layers,
4 heads, width 128, vocab 256, batch 8 x 16 tokens; AdamW) placed by

  tp   Megatron tensor parallel on a 1-d mesh of 2 (qkv/fc1 column, proj/fc2
       row): oar by placements only (dist.shard_layer), torch with DTensor's
       parallelize_module(ColwiseParallel / RowwiseParallel), Gloo
  dp   data parallel (batch Shard(0)): oar by placements, torch with DDP

and, for oar, in eager mode and through dist.to_static (DistModel.train()).
Every rank runs with the same thread count (default 1: 2 ranks on 2 cores).

It also counts the collectives one oar TP step runs (eager:
_C.dist.collective_stats()) against the analytic minimum of Megatron TP:
per layer 2 all_reduces forward (after attn.proj and mlp.fc2) and 2 backward
(the input gradients of the column-parallel q/k/v and fc1 matmuls), each of
batch x seq x width f32.

--framework F --spawn runs both ranks of F and prints rank 0's JSON lines;
--table reads the lines of several interleaved rounds and prints medians
over rounds and the ratio torch / oar (>= 1: oar at least as fast).
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(HERE, "..", "frontends", "python", "tests")
BATCH, SEQ, WIDTH, HEADS, LAYERS, VOCAB = 8, 16, 128, 4, 2, 256


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--framework", choices=["oar", "torch"])
    p.add_argument("--spawn", action="store_true")
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--steps", type=int, default=15)
    p.add_argument("--cases", default="tp,dp", help="comma-separated: tp, dp")
    p.add_argument("--timeout", type=float, default=900.0)
    p.add_argument("--table", action="store_true")
    return p.parse_args()


def batch_data(steps, seed=1):
    """`steps` (tokens, labels) int64 pairs of [BATCH, SEQ] (random tokens: the step time does not depend on them)."""
    import numpy as np
    rng = np.random.RandomState(seed)
    seqs = [rng.randint(0, VOCAB, size=(BATCH, SEQ + 1)).astype(np.int64) for _ in range(steps)]
    return [(s[:, :-1].copy(), s[:, 1:].copy()) for s in seqs]


def timed(step, steps, barrier):
    for _ in range(3):  # warm-up: connections, caches, traces
        step(0)
    barrier()
    times = []
    for i in range(steps):
        start = time.perf_counter()
        step(i)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


# ---- oar ----

def run_oar(args, cases):
    import numpy as np
    import oar
    import oar.distributed as dist
    sys.path.insert(0, TESTS)
    import tiny_gpt
    oar.set_device("cpu")
    dist.init_parallel_env()
    cfg = tiny_gpt.GPTConfig(seq=SEQ)
    data = batch_data(args.steps + 3)
    out = []
    for case in cases:
        for mode in ("eager", "static"):
            model = tiny_gpt.TinyGPT(cfg)
            opt, place_batch = tiny_gpt.setup_strategy(model, case)
            feed = [(place_batch(oar.to_tensor(x)), place_batch(oar.to_tensor(y))) for x, y in data]
            if mode == "eager":
                def step(i, model=model, opt=opt, feed=feed):
                    x, y = feed[i % len(feed)]
                    loss = tiny_gpt.loss_fn(model(x), y)
                    loss.backward()
                    opt.step()
                    opt.clear_grad()
            else:
                try:
                    dm = dist.to_static(model, None, tiny_gpt.loss_fn, opt)
                    dm.train()
                except Exception as e:  # not every strategy has a static path yet: say so in the table
                    out.append({"case": f"{case}_step", "mode": mode, "error": str(e).splitlines()[0][:120]})
                    continue

                def step(i, dm=dm, feed=feed):
                    x, y = feed[i % len(feed)]
                    dm(x, y)
            try:
                ms = timed(step, args.steps, dist.barrier)
                out.append({"case": f"{case}_step", "mode": mode, "ms": ms})
            except Exception as e:
                out.append({"case": f"{case}_step", "mode": mode, "error": str(e).splitlines()[0][:120]})
            if case == "tp" and mode == "eager" and hasattr(oar._C.dist, "collective_stats"):
                oar._C.dist.reset_collective_stats()
                step(0)
                stats = oar._C.dist.collective_stats()
                out.append({"case": "tp_collectives", "stats": {k: list(v) for k, v in stats.items()}})
    dist.barrier()
    return oar.__version__, out


# ---- torch ----

def torch_gpt():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            d = WIDTH
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.q_proj, self.k_proj, self.v_proj, self.proj = (nn.Linear(d, d) for _ in range(4))
            self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def attn(self, x):
            b, s, _ = x.shape
            hd = WIDTH // HEADS
            # -1 heads: the local head count under tensor parallel
            q, k, v = (p(x).view(b, s, -1, hd).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
            scores = q @ k.transpose(-1, -2) / hd ** 0.5
            mask = torch.triu(torch.full((s, s), -1e9), 1)
            out = torch.softmax(scores + mask, -1) @ v
            return self.proj(out.transpose(1, 2).reshape(b, s, -1))

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(VOCAB, WIDTH), nn.Embedding(SEQ, WIDTH)
            self.blocks = nn.ModuleList([Block() for _ in range(LAYERS)])
            self.ln_f, self.head = nn.LayerNorm(WIDTH), nn.Linear(WIDTH, VOCAB)

        def forward(self, t):
            x = self.wte(t) + self.wpe(torch.arange(t.shape[1]))
            for b in self.blocks:
                x = b(x)
            return self.head(self.ln_f(x))

    torch.manual_seed(0)
    return GPT()


def run_torch(args, cases):
    import torch
    import torch.distributed as tdist
    import torch.nn.functional as F
    torch.set_num_threads(args.threads)
    tdist.init_process_group("gloo")
    data = batch_data(args.steps + 3)
    out = []
    for case in cases:
        model = torch_gpt()
        if case == "tp":
            from torch.distributed.device_mesh import init_device_mesh
            from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
            mesh = init_device_mesh("cpu", (args.world,))
            plan = {}
            for i in range(LAYERS):
                for n in ("q_proj", "k_proj", "v_proj", "fc1"):
                    plan[f"blocks.{i}.{n}"] = ColwiseParallel()
                for n in ("proj", "fc2"):
                    plan[f"blocks.{i}.{n}"] = RowwiseParallel()
            model = parallelize_module(model, mesh, plan)
            feed = [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in data]  # every rank: the whole batch
        else:
            from torch.nn.parallel import DistributedDataParallel
            model = DistributedDataParallel(model)
            half = BATCH // args.world
            feed = [(torch.from_numpy(x[args.rank * half:(args.rank + 1) * half]),
                     torch.from_numpy(y[args.rank * half:(args.rank + 1) * half])) for x, y in data]
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)

        def step(i, model=model, opt=opt, feed=feed):
            x, y = feed[i % len(feed)]
            loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        out.append({"case": f"{case}_step", "mode": "eager", "ms": timed(step, args.steps, tdist.barrier)})
    tdist.barrier()
    tdist.destroy_process_group()
    return torch.__version__, out


def run_rank(args):
    os.environ["OMP_NUM_THREADS"] = os.environ["OAR_NUM_THREADS"] = str(args.threads)
    cases = [c for c in args.cases.split(",") if c]
    version, out = (run_oar if args.framework == "oar" else run_torch)(args, cases)
    if args.rank == 0:
        for r in out:
            print(json.dumps({"framework": args.framework, "version": version, "threads": args.threads, **r}),
                  flush=True)


def spawn(args):
    sys.path.insert(0, HERE)
    from bench_distributed import spawn_ranks
    return spawn_ranks(__file__, args.world, args.threads, "bench-ap", lambda port: [
        "--framework", args.framework, "--world", str(args.world), "--threads", str(args.threads),
        "--steps", str(args.steps), "--cases", args.cases], args.timeout)


def analytic_tp_minimum():
    """Megatron TP per step: 4 all_reduces per layer (2 forward, 2 backward) of batch x seq x width f32."""
    return {"c_all_reduce": (4 * LAYERS, 4 * LAYERS * BATCH * SEQ * WIDTH * 4)}


def table():
    runs, versions, threads, errors, stats = {}, {}, set(), {}, None
    for line in sys.stdin:
        line = line.strip()
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        versions[r["framework"]] = r["version"]
        threads.add(r["threads"])
        if r["case"] == "tp_collectives":
            stats = r["stats"]
        elif "error" in r:
            errors[(r["framework"], r["case"], r["mode"])] = r["error"]
        else:
            runs.setdefault((r["framework"], r["case"], r["mode"]), []).append(r["ms"])
    med = {k: statistics.median(v) for k, v in runs.items()}
    rounds = max((len(v) for v in runs.values()), default=0)
    print(f"2 ranks, threads per rank: {', '.join(map(str, sorted(threads)))}; "
          f"versions: {', '.join(f'{f} {v}' for f, v in sorted(versions.items()))}; median of {rounds} rounds")
    print(f"{'tiny GPT step (ms)':<22}{'oar eager':>11}{'oar static':>12}{'torch':>9}"
          f"{'torch/eager':>13}{'torch/static':>14}{'eager/static':>14}")
    for case in ("tp_step", "dp_step"):
        e, s, t = med.get(("oar", case, "eager")), med.get(("oar", case, "static")), med.get(("torch", case, "eager"))
        if e is None and t is None:
            continue

        def f(v, w=9):
            return f"{v:>{w}.2f}" if v is not None else f"{'-':>{w}}"

        def ratio(a, b):
            return a / b if a is not None and b is not None else None
        print(f"{case:<22}{f(e, 11)}{f(s, 12)}{f(t)}{f(ratio(t, e), 13)}{f(ratio(t, s), 14)}{f(ratio(e, s), 14)}")
    for (fw, case, mode), msg in sorted(errors.items()):
        print(f"  {fw} {case} {mode}: not run: {msg}")
    print("targets: torch/oar >= 1.0 for tp and dp; eager/static >= 1.5")
    if stats is not None:
        print("collectives in one eager TP step (rank 0) vs the analytic Megatron minimum:")
        minimum = analytic_tp_minimum()
        for op in sorted(set(stats) | set(minimum)):
            calls, nbytes = stats.get(op, (0, 0))
            mc, mb = minimum.get(op, (0, 0))
            print(f"  {op:<18} calls {calls:>4} (minimum {mc:>3})  bytes {nbytes:>10} (minimum {mb:>9})")


if __name__ == "__main__":
    a = parse_args()
    if a.table:
        table()
    elif a.spawn:
        sys.exit(spawn(a))
    else:
        run_rank(a)
