"""Issue 14, item 7: how good is dist.to_distributed's choice?

Runs every applicable candidate of the cost model for the tiny GPT (2
layers, 4 heads, width 128, vocab 256, batch 4 x 16 tokens, AdamW) on 2 cpu
ranks (Gloo), and with --world 4 also on 4 ranks (DP x TP), measures each
one's eager step time (median of --steps steps after --warmup, the slowest
rank's), and prints the estimates next to the measurements and where the
cost model's choice ranks among the measured times.

    .venv/bin/python bench/bench_auto_strategy.py [--world 2 4] [--steps 5]
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "frontends", "python", "tests"))

import numpy as np  # noqa: E402


def _loader(steps, cfg):
    import oar
    from tiny_gpt import batches

    class Samples(oar.io.Dataset):
        def __init__(self, data):
            self.items = [(t[i], y[i]) for t, y in data for i in range(t.shape[0])]

        def __getitem__(self, i):
            return self.items[i]

        def __len__(self):
            return len(self.items)
    return oar.io.DataLoader(Samples(batches(steps, 4, cfg)), batch_size=4, shuffle=False)


def _rank_body(rank, world, steps, warmup):
    import oar
    import oar.distributed as dist
    from oar.distributed.auto_parallel import auto_strategy as A
    from tiny_gpt import GPTConfig, TinyGPT, loss_fn, make_optimizer
    cfg = GPTConfig()
    hw = A.measure_hardware(world)
    model = TinyGPT(cfg)
    cands, best, _ = A.plan(model, make_optimizer(model), [next(iter(_loader(1, cfg)))[0]], world, hardware=hw)
    rows = []
    for c in cands:
        row = {"name": c.name, "est": c.time, "memory": c.memory, "verdict": c.verdict, "measured": None}
        if c.applicable:
            model = TinyGPT(cfg)
            opt = make_optimizer(model)
            config = dist.ToDistributedConfig(hardware=hw, candidates=[c.name], print_table=False)
            model, opt, loader = dist.to_distributed(model, opt, _loader(steps + warmup, cfg), world, config=config)
            oar.seed(2)
            model.train()
            times = []
            for tokens, labels in loader():
                dist.barrier()
                t0 = time.perf_counter()
                loss = loss_fn(model(tokens), labels)
                loss.backward()
                opt.step()
                opt.clear_grad()
                loss._local_value().numpy()
                times.append(time.perf_counter() - t0)
            worst = oar.to_tensor(np.array([float(np.median(times[warmup:]))], np.float64))
            dist.all_reduce(worst, op=dist.ReduceOp.MAX)
            row["measured"] = float(worst.numpy()[0])
        rows.append(row)
    return {"rows": rows, "chosen": best.name, "hw": repr(hw)}


def report(world, result):
    rows = result["rows"]
    ran = sorted((r for r in rows if r["measured"] is not None), key=lambda r: r["measured"])
    rank_of = {r["name"]: i + 1 for i, r in enumerate(ran)}
    est_rank = {r["name"]: i + 1 for i, r in enumerate(sorted(ran, key=lambda r: r["est"]))}
    print(f"\n## {world} ranks  ({result['hw']})")
    print(f"| candidate | est. ms | measured ms | est. rank | measured rank | est. memory | verdict |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for r in sorted(rows, key=lambda r: (r["measured"] is None, r["measured"] or 0)):
        m = f"{r['measured'] * 1e3:.2f}" if r["measured"] is not None else "not run"
        print(f"| {r['name']} | {r['est'] * 1e3:.2f} | {m} | {est_rank.get(r['name'], '-')} | "
              f"{rank_of.get(r['name'], '-')} | {r['memory'] / 2**20:.2f} MiB | {r['verdict']} |")
    chosen = result["chosen"]
    print(f"\nthe cost model chose {chosen}: measured rank {rank_of.get(chosen)} of {len(ran)} "
          f"(fastest measured: {ran[0]['name']}, {ran[0]['measured'] * 1e3:.2f} ms; "
          f"{chosen}: {next(r for r in ran if r['name'] == chosen)['measured'] * 1e3:.2f} ms)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--world", type=int, nargs="+", default=[2])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    args = ap.parse_args()
    from dist_harness import run_ranks
    sys.path.insert(0, HERE)
    import bench_auto_strategy as me  # run_ranks loads the body's module by name: not as __main__
    for world in args.world:
        t0 = time.time()
        results = run_ranks(me._rank_body, world=world, args=(args.steps, args.warmup), timeout=1800)
        report(world, results[0])
        print(f"({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
