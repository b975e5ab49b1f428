#!/usr/bin/env python3
"""Python-frontend benchmark: oar against PyTorch and PaddlePaddle, one
framework per process (--framework), same thread count.

Cases:
  tiny_add_op    `a + b` on two 1-element float32 tensors (us per call):
                 the Python dispatch overhead plus the framework's eager op
  tiny_add_fn    `add(a, b)` (oar.add / torch.add / paddle.add), us per call
  mlp_step       one training step of a 784-256-10 MLP (ReLU), batch 64,
                 cross-entropy, forward + backward + Adam step + clear grads (ms)

Each case: the median of --repeats timings (tiny ops: each timing is a loop
of --calls calls; mlp: one step per timing after --warmup steps). Prints
one JSON line per case; `--table` reads such lines (several rounds allowed:
the best median per framework and case is kept) and prints the comparison.
"""
import argparse
import json
import os
import statistics
import sys
import time

CASES = ["tiny_add_op", "tiny_add_fn", "mlp_step"]
UNITS = {"tiny_add_op": "us", "tiny_add_fn": "us", "mlp_step": "ms"}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--framework", choices=["oar", "torch", "paddle"])
    p.add_argument("--threads", type=int, default=int(os.environ.get("OAR_NUM_THREADS", os.cpu_count() or 1)))
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--table", action="store_true", help="read JSON lines on stdin and print the table")
    return p.parse_args()


def setup(name, threads):
    """(module, to_tensor(numpy array), mlp step function factory)."""
    os.environ["OMP_NUM_THREADS"] = str(threads)
    if name == "oar":
        import oar
        oar.set_device("cpu")
        return oar, oar.to_tensor, oar.add
    if name == "torch":
        import torch
        torch.set_num_threads(threads)
        return torch, torch.from_numpy, torch.add
    import paddle
    paddle.set_device("cpu")
    return paddle, paddle.to_tensor, paddle.add


def mlp_step_fn(name, fw, to_tensor):
    import numpy as np
    rng = np.random.default_rng(0)
    x = to_tensor(rng.standard_normal((64, 784)).astype(np.float32))
    y = to_tensor(rng.integers(0, 10, 64).astype(np.int64))
    nn = fw.nn
    net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    loss_fn = nn.CrossEntropyLoss()
    if name == "torch":
        opt = fw.optim.Adam(net.parameters(), lr=1e-3)

        def step():
            loss = loss_fn(net(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss
    else:
        opt = fw.optimizer.Adam(learning_rate=1e-3, parameters=net.parameters())

        def step():
            loss = loss_fn(net(x), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss
    return step


def run(args):
    import numpy as np
    fw, to_tensor, add = setup(args.framework, args.threads)
    a = to_tensor(np.ones([1], np.float32))
    b = to_tensor(np.ones([1], np.float32))
    results = {}
    for case, fn in (("tiny_add_op", lambda: a + b), ("tiny_add_fn", lambda: add(a, b))):
        for _ in range(args.calls // 10):
            fn()
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            for _ in range(args.calls):
                fn()
            times.append((time.perf_counter() - start) * 1e6 / args.calls)
        results[case] = times
    step = mlp_step_fn(args.framework, fw, to_tensor)
    for _ in range(args.warmup):
        step()
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        loss = step()
        float(loss)  # the step is done when its loss can be read
        times.append((time.perf_counter() - start) * 1e3)
    results["mlp_step"] = times
    version = getattr(fw, "__version__", "?")
    for case in CASES:
        print(json.dumps({"framework": args.framework, "version": version, "case": case, "threads": args.threads,
                          "median": statistics.median(results[case]), "min": min(results[case]),
                          "unit": UNITS[case]}))


def table():
    best, versions, threads = {}, {}, set()
    for line in sys.stdin:
        line = line.strip()
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        key = (r["case"], r["framework"])
        best[key] = min(best.get(key, float("inf")), r["median"])
        versions[r["framework"]] = r["version"]
        threads.add(r["threads"])
    fws = [f for f in ("oar", "torch", "paddle") if f in versions]
    print("threads: " + ", ".join(str(t) for t in sorted(threads)) + "; versions: " +
          ", ".join(f"{f} {versions[f]}" for f in fws))
    print("best median over rounds; ratio = peer / oar (>= 1: oar at least as fast)")
    head = f"{'case':<14}{'unit':>5}" + "".join(f"{f:>10}" for f in fws) + "".join(
        f"{'x ' + f:>10}" for f in fws if f != "oar") + f"{'target':>12}"
    print(head)
    for case in CASES:
        vals = {f: best.get((case, f)) for f in fws}
        if vals.get("oar") is None:
            continue
        peers = [vals[f] for f in fws if f != "oar" and vals[f] is not None]
        verdict = "met" if peers and vals["oar"] <= min(peers) else ("MISSED" if peers else "-")
        row = f"{case:<14}{UNITS[case]:>5}" + "".join(
            f"{vals[f]:>10.3f}" if vals[f] is not None else f"{'-':>10}" for f in fws)
        row += "".join(f"{vals[f] / vals['oar']:>10.2f}" if vals[f] is not None else f"{'-':>10}"
                       for f in fws if f != "oar")
        print(row + f"{verdict:>12}")


if __name__ == "__main__":
    a = parse_args()
    if a.table:
        table()
    else:
        run(a)
