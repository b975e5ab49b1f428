#!/usr/bin/env python3
"""Distributed benchmark at 2 ranks on one machine: oar (Gloo in the cpu
plugin) against torch.distributed with its Gloo backend, every rank with
the same thread count.

Cases:
  all_reduce  f32 sum, 4 KB .. 256 MB (powers of 4): latency per call (us)
              and bus bandwidth (GB/s, bytes / time); each timing is a loop
              of calls sized to the message
  dp_step     one data-parallel training step of a 784-1024-1024-10 MLP
              (ReLU), batch 64 per rank, cross-entropy, forward + backward
              (bucketed gradient all-reduce) + SGD step + clear grads (ms):
              oar.DataParallel against torch DDP, both with 25 MB buckets
  local_step  the same step without the wrapper (no communication): how
              much of dp_step is the single-process step itself

--framework F --spawn runs the two ranks of F as processes and prints rank
0's JSON lines (one per case and size: the median over --repeats timings).
`--table` reads such lines from several interleaved rounds and prints the
median over rounds per framework and case, with the ratio torch / oar.
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

SIZES = [4 << 10 << (2 * i) for i in range(9)]  # 4 KB .. 256 MB
KB, MB = 1 << 10, 1 << 20


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--framework", choices=["oar", "torch"])
    p.add_argument("--spawn", action="store_true", help="run both ranks of --framework, print rank 0's lines")
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--max-size", type=int, default=SIZES[-1], help="largest all_reduce in bytes")
    p.add_argument("--timeout", type=float, default=600.0)
    p.add_argument("--table", action="store_true", help="read JSON lines on stdin and print the table")
    return p.parse_args()


def size_name(n):
    return f"{n // MB} MB" if n >= MB else f"{n // KB} KB"


def calls_per_timing(nbytes):
    return max(1, min(200, (32 * MB) // nbytes))


# ---- one rank ----

class OarSide:
    def __init__(self, args):
        import oar
        import oar.distributed as dist
        oar.set_device("cpu")
        dist.init_parallel_env()
        self.oar, self.dist = oar, dist
        self.version = oar.__version__

    def tensor(self, array):
        return self.oar.to_tensor(array)

    def all_reduce(self, t):
        self.dist.all_reduce(t)

    def barrier(self):
        self.dist.barrier()

    def dp_step_fn(self, x, y, wrap=True):
        oar, nn = self.oar, self.oar.nn
        oar.seed(0)
        net = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
        model = oar.DataParallel(net) if wrap else net
        opt = oar.optimizer.SGD(learning_rate=0.01, parameters=model.parameters())
        loss_fn = nn.CrossEntropyLoss()
        x, y = oar.to_tensor(x), oar.to_tensor(y)

        def step():
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            return float(loss)
        return step

    def close(self):
        self.dist.destroy_process_group()


class TorchSide:
    def __init__(self, args):
        import torch
        import torch.distributed as dist
        torch.set_num_threads(args.threads)
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=args.rank,
                                world_size=args.world)
        self.torch, self.dist = torch, dist
        self.version = torch.__version__

    def tensor(self, array):
        return self.torch.from_numpy(array)

    def all_reduce(self, t):
        self.dist.all_reduce(t)

    def barrier(self):
        self.dist.barrier()

    def dp_step_fn(self, x, y, wrap=True):
        torch, nn = self.torch, self.torch.nn
        torch.manual_seed(0)
        net = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
        model = nn.parallel.DistributedDataParallel(net) if wrap else net
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        loss_fn = nn.CrossEntropyLoss()
        x, y = torch.from_numpy(x), torch.from_numpy(y)

        def step():
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return float(loss.detach())
        return step

    def close(self):
        self.dist.destroy_process_group()


def run_rank(args):
    import numpy as np
    os.environ["OMP_NUM_THREADS"] = os.environ["OAR_NUM_THREADS"] = str(args.threads)
    side = OarSide(args) if args.framework == "oar" else TorchSide(args)
    out = []
    for nbytes in [s for s in SIZES if s <= args.max_size]:
        t = side.tensor(np.ones(nbytes // 4, np.float32))
        calls = calls_per_timing(nbytes)
        for _ in range(max(3, calls // 4)):  # warm-up: connections, buffers, both ranks settled
            side.all_reduce(t)
        times = []
        for _ in range(args.repeats):
            side.barrier()
            start = time.perf_counter()
            for _ in range(calls):
                side.all_reduce(t)
            times.append((time.perf_counter() - start) / calls)
        med = statistics.median(times)
        out.append({"case": "all_reduce", "size": nbytes, "us": med * 1e6, "gbps": nbytes / med / 1e9})
        del t
    rng = np.random.default_rng(args.rank)
    x = rng.standard_normal((64, 784)).astype(np.float32)
    y = rng.integers(0, 10, 64).astype(np.int64)
    for case, wrap in (("dp_step", True), ("local_step", False)):  # local: the same step, no communication
        step = side.dp_step_fn(x, y, wrap)
        for _ in range(3):
            step()
        side.barrier()
        times = []
        for _ in range(args.steps):
            start = time.perf_counter()
            step()
            times.append((time.perf_counter() - start) * 1e3)
        out.append({"case": case, "size": 0, "ms": statistics.median(times)})
    side.barrier()
    side.close()
    if args.rank == 0:
        for r in out:
            print(json.dumps({"framework": args.framework, "version": side.version, "threads": args.threads, **r}),
                  flush=True)


def spawn_ranks(script, world, threads, job, rank_args, timeout):
    """Runs `world` ranks of `script` (python script --rank r + rank_args(r))
    with the launcher's variables; rank 0's stdout passed through. Shared by
    the distributed benchmarks."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    try:
        for rank in range(world):
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                       LOCAL_WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                       OAR_JOB_ID=f"{job}-{port}", OAR_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
            cmd = [sys.executable, os.path.abspath(script), "--rank", str(rank)] + rank_args(port)
            procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE if rank == 0 else subprocess.DEVNULL))
        out, _ = procs[0].communicate(timeout=timeout)
        sys.stdout.write(out.decode())
        for p in procs[1:]:
            p.wait(timeout=60)
        return max(p.returncode for p in procs)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def spawn(args):
    """Both ranks of args.framework as processes; rank 0's output passed through."""
    return spawn_ranks(__file__, args.world, args.threads, "bench", lambda port: [
        "--framework", args.framework, "--world", str(args.world), "--port", str(port),
        "--threads", str(args.threads), "--repeats", str(args.repeats), "--steps", str(args.steps),
        "--max-size", str(args.max_size)], args.timeout)


# ---- the table ----

def table():
    runs, versions, threads = {}, {}, set()
    for line in sys.stdin:
        line = line.strip()
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        value = r["ms"] if r["case"].endswith("_step") else r["us"]
        runs.setdefault((r["case"], r["size"], r["framework"]), []).append(value)
        versions[r["framework"]] = r["version"]
        threads.add(r["threads"])
    med = {k: statistics.median(v) for k, v in runs.items()}
    rounds = max((len(v) for v in runs.values()), default=0)
    print(f"2 ranks, threads per rank: {', '.join(map(str, sorted(threads)))}; "
          f"versions: {', '.join(f'{f} {v}' for f, v in sorted(versions.items()))}; median of {rounds} rounds")
    print("ratio = torch time / oar time (>= 1: oar at least as fast); target: >= 1.0 from 1 MB up, "
          ">= 0.5 below (latency under 2x)")
    print(f"{'all_reduce f32':<16}{'oar us':>11}{'torch us':>11}{'oar GB/s':>10}{'torch GB/s':>11}{'ratio':>8}"
          f"{'target':>9}")
    for size in SIZES:
        o, t = med.get(("all_reduce", size, "oar")), med.get(("all_reduce", size, "torch"))
        if o is None:
            continue
        tstr = f"{t:>11.1f}" if t is not None else f"{'-':>11}"
        tbw = f"{size / t / 1e3:>11.3f}" if t is not None else f"{'-':>11}"
        ratio = t / o if t is not None else None
        need = 1.0 if size >= MB else 0.5
        verdict = "-" if ratio is None else ("met" if ratio >= need else "MISSED")
        rstr = f"{ratio:>8.2f}" if ratio is not None else f"{'-':>8}"
        print(f"{size_name(size):<16}{o:>11.1f}{tstr}{size / o / 1e3:>10.3f}{tbw}{rstr}{verdict:>9}")
    for case, target in (("dp_step", 1.0), ("local_step", None)):
        o, t = med.get((case, 0, "oar")), med.get((case, 0, "torch"))
        if o is None:
            continue
        ratio = t / o if t is not None else None
        verdict = "-" if ratio is None or target is None else ("met" if ratio >= target else "MISSED")
        tstr = f"{t:>11.2f}" if t is not None else f"{'-':>11}"
        rstr = f"{ratio:>8.2f}" if ratio is not None else f"{'-':>8}"
        print(f"{case + ' (ms)':<16}{o:>11.2f}{tstr}{'':>21}{rstr}{verdict:>9}")


if __name__ == "__main__":
    a = parse_args()
    if a.table:
        table()
    elif a.spawn:
        sys.exit(spawn(a))
    else:
        run_rank(a)
