#!/usr/bin/env python3
"""Eager CPU speed (issue 20): oar, PyTorch and PaddlePaddle in ONE process,
the same inputs, the same thread count, medians of interleaved repeats.

    bench/bench_eager.py [--threads 1,2] [--busy] [--launches 5] [--rows pow,sum] [--repeats 30]

The driver (this script without --worker) starts one worker process per
thread count (OAR_NUM_THREADS = OMP_NUM_THREADS = MKL_NUM_THREADS = n,
torch.set_num_threads(n)); each worker imports the three frameworks (a
missing peer is reported and skipped) and times every row in turn: for each
repeat it times a batch of calls of each framework, rotating which goes
first, so a noisy moment hits all of them. A row marked `launches` (matmul)
is also measured in --launches separate worker processes and reported as
the median over launches, with the spread. --busy starts one busy process
(`yes > /dev/null`) per core beside the workers, kills it afterwards (also
when the driver is interrupted or dies: PR_SET_PDEATHSIG) and prints the
quiet table, the busy table and the busy/quiet slowdown of each framework.

Speed ratio = peer time / oar time (> 1: oar is faster). A row's target is
a minimum speed ratio against torch; with threads 1 and 2 the step rows also
get a scaling line (1-thread time / 2-thread time, oar against torch).

Adding a row: a function decorated with @row(name, label, unit, target)
that takes a Framework (fw.name, fw.m the module, fw.t(ndarray) a tensor)
and returns the zero-argument callable to time (or raises to skip that
framework's cell, with the message in the table's notes).
"""
import argparse
import contextlib
import ctypes
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import time

FRAMEWORKS = ("oar", "torch", "paddle")
WORKER_ENV = "OAR_BENCH_EAGER_WORKER"  # set in workers: a worker never spawns
ROWS = []


class Row:
    def __init__(self, name, label, unit, target, fn, launches=False, step=False, scaling=False, note=""):
        self.name, self.label, self.unit, self.target, self.fn = name, label, unit, target, fn
        self.launches, self.step, self.scaling, self.note = launches, step, scaling, note


def row(name, label, unit="ms", target=1.0, launches=False, step=False, scaling=False, note=""):
    """Registers a row. unit: 'ms' or 'us'; target: the minimum torch time /
    oar time; launches: also measured as the median over --launches process
    launches; step: a training step (timed one call at a time, --step-repeats);
    scaling: its 1 -> 2 thread gain must be at least torch's."""
    def register(fn):
        ROWS.append(Row(name, label, unit, target, fn, launches, step, scaling, note))
        return fn
    return register


class Framework:
    """One framework in this process: fw.m is the module, fw.t(a) makes a
    float32 (or the array's dtype) tensor from a numpy array."""

    def __init__(self, name, threads):
        self.name = name
        if name == "oar":
            import oar
            oar.set_device("cpu")
            self.m = oar
            self.t = lambda a, grad=False: self._paddle_like(oar.to_tensor(a), grad)
        elif name == "torch":
            import torch
            torch.set_num_threads(threads)
            self.m = torch
            self.t = lambda a, grad=False: torch.tensor(a).requires_grad_(grad)
        else:
            import paddle
            paddle.set_device("cpu")
            if hasattr(paddle, "set_num_threads"):
                paddle.set_num_threads(threads)
            self.m = paddle
            self.t = lambda a, grad=False: self._paddle_like(paddle.to_tensor(a), grad)
        self.version = getattr(self.m, "__version__", "?")

    @staticmethod
    def _paddle_like(x, grad):
        x.stop_gradient = not grad
        return x

    def seed(self, s=0):
        (self.m.manual_seed if self.name == "torch" else self.m.seed)(s)

    def optimizer(self, kind, params, lr=1e-3):
        """Adam or AdamW with the framework's defaults."""
        if self.name == "torch":
            return getattr(self.m.optim, kind)(params, lr=lr)
        return getattr(self.m.optimizer, kind)(learning_rate=lr, parameters=params)

    def zero_grad(self, opt):
        opt.zero_grad(set_to_none=True) if self.name == "torch" else opt.clear_grad()

    def value(self, loss):
        """The loss as a float: the step is done when it can be read."""
        return loss.item() if self.name == "torch" else float(loss)

    def grad(self, y, x):
        """dy/dx with create_graph (y a scalar)."""
        if self.name == "torch":
            return self.m.autograd.grad(y, x, create_graph=True)[0]
        return self.m.grad(y, x, create_graph=True)[0]


def rand(*shape, seed=0):
    import numpy as np
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ------------------------------------------------------------------ rows ---
# RMSNorm and its parts: the first rows.
@row("rmsnorm_ops", "RMSNorm as ops [4096,768]")
def rmsnorm_ops(fw):
    x, w = fw.t(rand(4096, 768)), fw.t(rand(768, seed=1))
    return lambda: fw.m.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * x * w


@row("pow2", "x.pow(2) [4096,768]")
def pow2(fw):
    x = fw.t(rand(4096, 768))
    return lambda: x.pow(2)


@row("mean_last", "x.mean(-1,keepdim) [4096,768]")
def mean_last(fw):
    x = fw.t(rand(4096, 768))
    return lambda: x.mean(-1, keepdim=True)


@row("sum_last", "x.sum(-1) [4096,768]")
def sum_last(fw):
    x = fw.t(rand(4096, 768))
    return lambda: x.sum(-1)


# Small-op overhead (item 2): within 1.5x torch's time. rsqrt [4096, 1] is a
# row of the table, whose benchmark asks every row for 1.0x.
SMALL = 1 / 1.5


@row("rsqrt_4096x1", "rsqrt [4096,1]", "us")
def rsqrt_4096x1(fw):
    x = fw.t(abs(rand(4096, 1)) + 0.5)
    return lambda: fw.m.rsqrt(x)


@row("exp_4096", "exp [4096]", "us", SMALL)
def exp_4096(fw):
    x = fw.t(rand(4096))
    return lambda: fw.m.exp(x)


@row("relu_4096", "relu [4096]", "us", SMALL)
def relu_4096(fw):
    x = fw.t(rand(4096))
    relu = fw.m.relu if fw.name == "torch" else fw.m.nn.functional.relu
    return lambda: relu(x)


@row("rsqrt_4096", "rsqrt [4096]", "us", SMALL)
def rsqrt_4096(fw):
    x = fw.t(abs(rand(4096)) + 0.5)
    return lambda: fw.m.rsqrt(x)


@row("add_4096", "add [4096] + [4096]", "us", SMALL)
def add_4096(fw):
    x, y = fw.t(rand(4096)), fw.t(rand(4096, seed=1))
    return lambda: x + y


@row("matmul_1024", "matmul 1024^3 f32", launches=True)
def matmul_1024(fw):
    x, y = fw.t(rand(1024, 1024)), fw.t(rand(1024, 1024, seed=1))
    return lambda: fw.m.matmul(x, y)


@row("numpy_12mb", "tensor.numpy() 12 MB", "us", SMALL, note="time<=1.5x torch's (a view)")
def numpy_12mb(fw):
    x = fw.t(rand(3 * 1024 * 1024))
    return lambda: x.numpy()


# Training steps: each returns the loss as a float (the step is done then).
@row("mlp_step", "MLP 784-256-10 Adam step, batch 64", step=True)
def mlp_step(fw):
    import numpy as np
    fw.seed()
    nn = fw.m.nn
    x = fw.t(rand(64, 784))
    y = fw.t(np.random.default_rng(0).integers(0, 10, 64).astype(np.int64))
    net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    loss_fn = nn.CrossEntropyLoss()
    opt = fw.optimizer("Adam", net.parameters())

    def step():
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        fw.zero_grad(opt)
        return fw.value(loss)
    return step


@row("pinn_step", "PINN 2-64-64-1 tanh, 1024 pts, Adam", step=True, scaling=True)
def pinn_step(fw):
    import numpy as np
    sizes = [2, 64, 64, 1]
    params = []
    for k, (i, o) in enumerate(zip(sizes[:-1], sizes[1:])):
        params.append(fw.t(rand(i, o, seed=10 + k) * math.sqrt(2.0 / (i + o)), grad=True))
        params.append(fw.t(np.zeros(o, np.float32), grad=True))
    if fw.name != "torch":  # paddle and oar optimizers take parameters
        params = [as_parameter(fw, p) for p in params]
    opt = fw.optimizer("Adam", params)
    pts = np.random.default_rng(1).random((1024, 2)).astype(np.float32)
    x = fw.t(pts, grad=True)
    forcing = fw.t((2 * math.pi**2 * np.sin(math.pi * pts[:, :1]) * np.sin(math.pi * pts[:, 1:])).astype(np.float32))
    xb = fw.t(np.random.default_rng(2).random((256, 2)).astype(np.float32))
    mm, tanh = fw.m.matmul, fw.m.tanh

    def net(h):
        for k in range(0, len(params) - 2, 2):
            h = tanh(mm(h, params[k]) + params[k + 1])
        return mm(h, params[-2]) + params[-1]

    def step():
        u = net(x)
        g = fw.grad(u.sum(), x)
        u_xx = fw.grad(g[:, 0:1].sum(), x)[:, 0:1]
        u_yy = fw.grad(g[:, 1:2].sum(), x)[:, 1:2]
        residual = u_xx + u_yy + forcing
        ub = net(xb)
        loss = (residual * residual).mean() + 10.0 * (ub * ub).mean()
        fw.zero_grad(opt)
        loss.backward()
        opt.step()
        return fw.value(loss)
    return step


def as_parameter(fw, t):
    p = fw.m.create_parameter(list(t.shape), "float32")
    p.set_value(t)
    return p


@row("transformer_step", "TransformerEncoderLayer(128,4,512) 8x64 AdamW", step=True, scaling=True)
def transformer_step(fw):
    fw.seed()
    nn = fw.m.nn
    if fw.name == "torch":
        layer = nn.TransformerEncoderLayer(128, 4, 512, batch_first=True)
    else:
        layer = nn.TransformerEncoderLayer(128, 4, 512)
    layer.train()
    x = fw.t(rand(8, 64, 128))
    opt = fw.optimizer("AdamW", layer.parameters())

    def step():
        loss = (layer(x) ** 2).mean()
        loss.backward()
        opt.step()
        fw.zero_grad(opt)
        return fw.value(loss)
    return step


# ---------------------------------------------------------------- worker ---
def calibrate(fn, unit):
    """Calls per timed batch: ~2 ms of work for microsecond rows, 1 for ms rows."""
    if unit == "ms":
        return 1
    t0 = time.perf_counter()
    for _ in range(20):
        fn()
    per_call = (time.perf_counter() - t0) / 20
    return max(1, min(2000, int(2e-3 / max(per_call, 1e-9))))


def measure(r, fws, repeats, warmup):
    """{framework: (median, min)} in r.unit per call, and {framework: note}."""
    fns, notes = {}, {}
    for fw in fws:
        try:
            fn = r.fn(fw)
            for _ in range(warmup):
                fn()
            fns[fw.name] = (fn, calibrate(fn, r.unit))
        except Exception as e:  # a framework without the op: its cell is '-'
            notes[fw.name] = f"{type(e).__name__}: {str(e).splitlines()[0][:100] if str(e) else ''}"
    scale = 1e6 if r.unit == "us" else 1e3
    times = {name: [] for name in fns}
    order = list(fns)
    for k in range(repeats if order else 0):
        for name in order[k % len(order):] + order[:k % len(order)]:
            fn, calls = fns[name]
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            times[name].append((time.perf_counter() - t0) * scale / calls)
            # libgomp's workers spin up to ~300k pauses (several ms) after a
            # region: let them go idle before the next framework's batch.
            time.sleep(0.01)
    return {n: (statistics.median(v), min(v)) for n, v in times.items()}, notes


def worker(args):
    threads = int(os.environ.get("OAR_NUM_THREADS", "1"))
    if args.oar_site:  # after the peers' own paths: their numpy stays first
        sys.path.append(args.oar_site)
    fws = []
    for name in args.peers.split(","):
        try:
            fws.append(Framework(name, threads))
        except Exception as e:
            print(f"bench_eager: {name} could not be imported ({e}); skipped", file=sys.stderr)
            emit({"framework": name, "missing": str(e)[:200]})
    for fw in fws:
        emit({"framework": fw.name, "version": fw.version})
    for r in selected_rows(args.rows):
        if r.launches and args.launches > 1 and not args.launch_only:
            continue  # measured by the driver's launch workers
        result, notes = measure(r, fws, args.step_repeats if r.step else args.repeats, args.warmup)
        for name, (med, fastest) in result.items():
            emit({"row": r.name, "framework": name, "median": med, "min": fastest, "unit": r.unit})
        for name, note in notes.items():
            emit({"row": r.name, "framework": name, "error": note})


def emit(obj):
    print(json.dumps(obj), flush=True)


def selected_rows(spec):
    if not spec:
        return ROWS
    keys = spec.split(",")
    rows = [r for r in ROWS if any(k in r.name for k in keys)]
    if not rows:
        sys.exit(f"bench_eager: --rows {spec} matches none of {', '.join(r.name for r in ROWS)}")
    return rows


# ---------------------------------------------------------------- driver ---
def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="rows: " + ", ".join(r.name for r in ROWS))
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts, one worker process each")
    p.add_argument("--busy", action="store_true", help="also measure beside one busy process per core")
    p.add_argument("--launches", type=int, default=1, help="process launches for the launch rows (matmul)")
    p.add_argument("--rows", default="", help="comma-separated substrings of row names (default: all)")
    p.add_argument("--peers", default=",".join(FRAMEWORKS), help="frameworks to load (oar first)")
    p.add_argument("--repeats", type=int, default=30, help="timed batches per framework and op row")
    p.add_argument("--step-repeats", type=int, default=30, help="timed steps per framework and step row")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--oar-site", default=default_oar_site(),
                   help="site-packages holding oar, put on the workers' sys.path (default: the tree's .venv)")
    p.add_argument("--json", help="also append every measurement to this file as JSON lines")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--launch-only", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args()


def default_oar_site():
    import glob
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = sorted(glob.glob(os.path.join(root, ".venv", "lib", "python*", "site-packages")))
    return found[-1] if found else ""


def _die_with_parent():
    """In a child before exec: SIGKILL it when the driver dies (PR_SET_PDEATHSIG)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)


@contextlib.contextmanager
def burners(count):
    """count busy processes (`yes > /dev/null`), killed on the way out."""
    procs = []
    try:
        for _ in range(count):
            procs.append(subprocess.Popen(["yes"], stdout=subprocess.DEVNULL, preexec_fn=_die_with_parent))
        time.sleep(0.5)
        yield
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def run_worker(args, threads, rows, launch_only=False):
    """The JSON lines of one worker process."""
    print(f"bench_eager: {threads} thread(s), rows {rows or 'all'}{' (one launch)' if launch_only else ''}",
          file=sys.stderr, flush=True)
    env = dict(os.environ, **{WORKER_ENV: "1"})
    for var in ("OAR_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(threads)
    # Paddle's Intel OpenMP workers spin KMP_BLOCKTIME (default 200 ms)
    # after each of its regions, holding the cores while the next framework
    # is timed: with 2 threads oar's and torch's matmul took twice as long
    # beside it (24 and 40 ms against 12 and 16 ms). Sleeping at once keeps
    # one framework from taxing another in the shared process.
    env.setdefault("KMP_BLOCKTIME", "0")
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--rows", rows, "--peers", args.peers,
           "--repeats", str(args.repeats), "--step-repeats", str(args.step_repeats), "--warmup", str(args.warmup),
           "--launches", str(args.launches), "--oar-site", args.oar_site] + (["--launch-only"] if launch_only else [])
    # From /tmp so `import oar` is the installed package, not a source tree.
    proc = subprocess.run(cmd, env=env, cwd="/tmp", stdout=subprocess.PIPE, text=True,
                          preexec_fn=_die_with_parent, check=False)
    if proc.returncode != 0:
        print(f"bench_eager: the {threads}-thread worker exited with {proc.returncode}", file=sys.stderr)
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def collect(args, threads, mode):
    """{'load', 'versions', 'missing', rows: {row: {fw: cell}}} for one thread count."""
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    lines = run_worker(args, threads, args.rows)
    launch_rows = [r for r in selected_rows(args.rows) if r.launches] if args.launches > 1 else []
    per_launch = {}
    for r in launch_rows:
        for _ in range(args.launches):
            for rec in run_worker(args, threads, r.name, launch_only=True):
                if "median" in rec:
                    per_launch.setdefault((rec["row"], rec["framework"]), []).append(rec)
                elif "error" in rec:
                    lines.append(rec)
    out = {"threads": threads, "mode": mode, "load": load, "versions": {}, "missing": {}, "rows": {}}
    for rec in lines:
        if "version" in rec:
            out["versions"][rec["framework"]] = rec["version"]
        elif "missing" in rec:
            out["missing"][rec["framework"]] = rec["missing"]
        elif "row" in rec:
            out["rows"].setdefault(rec["row"], {})[rec["framework"]] = rec
    for (name, fw), recs in per_launch.items():
        medians = sorted(r["median"] for r in recs)
        out["rows"].setdefault(name, {})[fw] = {"median": statistics.median(medians), "min": medians[0],
                                               "spread": (medians[0], medians[-1]), "launches": len(medians)}
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(out) + "\n")
    return out


def fmt_time(cell, unit):
    if not cell or "median" not in cell:
        return "-"
    v = cell["median"]
    return f"{v:.{3 if v < 10 else 2 if v < 100 else 1}f} {unit}"


def fmt_ratio(v):
    return "-" if v is None else f"{v:.2f}"


def speed(cells, peer):
    o, p = cells.get("oar", {}), cells.get(peer, {})
    return p["median"] / o["median"] if "median" in o and "median" in p else None


def print_table(res, rows):
    print(f"\n== {res['threads']} thread(s), {res['mode']} (load before: {res['load']}) ==")
    print(f"{'row':<48} {'oar':>11} {'torch':>11} {'paddle':>11} {'oar/torch':>9} {'oar/paddle':>10}  target")
    notes = []
    for r in rows:
        cells = res["rows"].get(r.name, {})
        st, sp = speed(cells, "torch"), speed(cells, "paddle")
        verdict = "-" if st is None else "met" if st >= r.target else "MISSED"
        label = r.label + (f" (median of {cells['oar']['launches']} launches)"
                           if "launches" in cells.get("oar", {}) else "")
        print(f"{label:<48} {fmt_time(cells.get('oar'), r.unit):>11} {fmt_time(cells.get('torch'), r.unit):>11} "
              f"{fmt_time(cells.get('paddle'), r.unit):>11} {fmt_ratio(st):>9} {fmt_ratio(sp):>10}  "
              f">={r.target:.2f} {verdict}")
        for fw, cell in cells.items():
            if "error" in cell:
                notes.append(f"{r.name}: {fw}: {cell['error']}")
            if "spread" in cell:
                notes.append(f"{r.name}: {fw} launches {cell['spread'][0]:.3f}-{cell['spread'][1]:.3f} {r.unit}")
        if r.note:
            notes.append(f"{r.name}: target {r.note}")
    for fw, why in res["missing"].items():
        notes.append(f"{fw} missing: {why}")
    for n in notes:
        print("  note: " + n)


def print_scaling(by_threads, rows, mode):
    """Scaling rows: 1-thread / 2-thread time of oar against torch's."""
    one, two = by_threads.get(1), by_threads.get(2)
    if not one or not two or not any(r.scaling for r in rows):
        return
    print(f"\n== 1 -> 2 thread gain ({mode}): 1-thread time / 2-thread time; target oar's >= torch's ==")
    for r in rows:
        if not r.scaling:
            continue
        gains = {}
        for fw in FRAMEWORKS:
            a, b = one["rows"].get(r.name, {}).get(fw, {}), two["rows"].get(r.name, {}).get(fw, {})
            gains[fw] = a["median"] / b["median"] if "median" in a and "median" in b else None
        met = "-" if None in (gains["oar"], gains["torch"]) else "met" if gains["oar"] >= gains["torch"] else "MISSED"
        print(f"{r.label:<48} oar {fmt_ratio(gains['oar']):>5}  torch {fmt_ratio(gains['torch']):>5}  "
              f"paddle {fmt_ratio(gains['paddle']):>5}  {met}")


def print_busy(quiet, busy, rows):
    """busy time / quiet time per framework; target oar's <= torch's."""
    print(f"\n== {quiet['threads']} thread(s): busy / quiet time (slowdown); target oar's <= torch's ==")
    print(f"{'row':<48} {'oar':>7} {'torch':>7} {'paddle':>7}")
    for r in rows:
        slow = {}
        for fw in FRAMEWORKS:
            q, b = quiet["rows"].get(r.name, {}).get(fw, {}), busy["rows"].get(r.name, {}).get(fw, {})
            slow[fw] = b["median"] / q["median"] if "median" in q and "median" in b else None
        met = "-" if None in (slow["oar"], slow["torch"]) else "met" if slow["oar"] <= slow["torch"] else "MISSED"
        print(f"{r.label:<48} {fmt_ratio(slow['oar']):>7} {fmt_ratio(slow['torch']):>7} "
              f"{fmt_ratio(slow['paddle']):>7}  {met}")


def driver(args):
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally blocks: kill the burners
    threads = [int(t) for t in args.threads.split(",") if t]
    rows = selected_rows(args.rows)
    cores = os.cpu_count() or 1
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               "?")
    print(f"bench_eager {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: {cpu}, {cores} cores, "
          f"threads {args.threads}, repeats {args.repeats}/{args.step_repeats}, launches {args.launches}")
    quiet = {t: collect(args, t, "quiet") for t in threads}
    if quiet:
        v = next(iter(quiet.values()))["versions"]
        print("versions: " + ", ".join(f"{k} {x}" for k, x in v.items()))
    for t in threads:
        print_table(quiet[t], rows)
    print_scaling(quiet, rows, "quiet")
    if args.busy:
        with burners(cores):
            busy = {t: collect(args, t, f"busy: {cores} x yes beside it") for t in threads}
        for t in threads:
            print_table(busy[t], rows)
        print_scaling(busy, rows, "busy")
        for t in threads:
            print_busy(quiet[t], busy[t], rows)


def main():
    in_worker = os.environ.get(WORKER_ENV) == "1"
    args = parse_args()
    if in_worker != args.worker:
        sys.exit("bench_eager: --worker is internal (and a worker never starts processes)")
    if in_worker:
        worker(args)
    else:
        driver(args)


if __name__ == "__main__":
    main()
