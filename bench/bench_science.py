#!/usr/bin/env python3
"""Science benchmark (issue 16): oar against PyTorch and PaddlePaddle in one run.

Cases (the issue's benchmark rows):
  fft_c64_2^20       oar.fft.fft of 2^20 complex64 points
  rfft2_1024x1024    oar.fft.rfft2 of a 1024 x 1024 float32 array
  fft_4096x256       oar.fft.fft of a 4096 x 256 complex64 batch (last axis)
  svd_512_f64        oar.linalg.svd(full_matrices=False) of a 512 x 512 float64 matrix
  eigh_512_f64       oar.linalg.eigh of a symmetric 512 x 512 float64 matrix
  matmul_c64_1024    complex64 matmul, 1024^3
  matmul_f64_1024    float64 matmul, 1024^3
  pinn_step_f64      the PINN training step of bench/pinn_step.cpp and
                     bench/pinn_peers.py (2 -> 32 x 3 tanh -> 1, 1024 interior
                     + 256 boundary points, Laplacian by grad-of-grad, Adam
                     lr 1e-3), in float64, written in each framework's Python

Each framework runs in its own worker process (oar from --oar-python, the
peers from --peer-python), all started with the same thread count
(--threads: OMP/MKL/OpenBLAS/OAR_NUM_THREADS and the frameworks' own
setters). The workers stay up; the driver asks them for one timed call at a
time, interleaved (repeat r: every case, every framework in turn), so load
changes hit all frameworks alike; the driver pauses --pause seconds before
each call, so the previous worker's OpenMP threads have stopped spinning
(a 2-core machine otherwise charges one framework's spin to the next one's
timing). Inputs are the same numpy arrays in every
framework. Reported: the median of --repeats timings after --warmup untimed
calls; ratio = the faster peer's ms / oar's ms (> 1 means oar is faster) and
the issue's target for it. An oar case whose op does not exist (yet) prints
"missing" with the reason, so the script runs at every stage of the work.

  bench/bench_science.py                      # 2 threads
  bench/bench_science.py --threads 1 --repeats 21
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = ["fft_c64_2^20", "rfft2_1024x1024", "fft_4096x256", "svd_512_f64", "eigh_512_f64", "matmul_c64_1024",
         "matmul_f64_1024", "pinn_step_f64"]
TARGETS = {"fft_c64_2^20": 1.0, "rfft2_1024x1024": 1.0, "fft_4096x256": 1.0, "svd_512_f64": 0.9,
           "eigh_512_f64": 0.9, "matmul_c64_1024": 1.0, "matmul_f64_1024": 1.0, "pinn_step_f64": 1.0}
FRAMEWORKS = ["oar", "torch", "paddle"]


# ---------------------------------------------------------------- inputs
def inputs(case):
    """The case's numpy inputs (the same in every framework)."""
    import numpy as np
    rng = np.random.default_rng(16)

    def c64(*shape):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)

    if case == "fft_c64_2^20":
        return [c64(1 << 20)]
    if case == "rfft2_1024x1024":
        return [rng.standard_normal((1024, 1024)).astype(np.float32)]
    if case == "fft_4096x256":
        return [c64(4096, 256)]
    if case == "svd_512_f64":
        return [rng.standard_normal((512, 512))]
    if case == "eigh_512_f64":
        a = rng.standard_normal((512, 512))
        return [a + a.T]
    if case == "matmul_c64_1024":
        return [c64(1024, 1024), c64(1024, 1024)]
    if case == "matmul_f64_1024":
        return [rng.standard_normal((1024, 1024)), rng.standard_normal((1024, 1024))]
    raise KeyError(case)


def pinn_arrays():
    """Weights (Xavier normal, as pinn_peers.py), interior and boundary points, float64."""
    import numpy as np
    rng = np.random.default_rng(0)
    sizes = [2, 32, 32, 32, 1]
    weights = []
    for i, o in zip(sizes[:-1], sizes[1:]):
        weights += [rng.standard_normal((i, o)) * math.sqrt(2.0 / (i + o)), np.zeros(o)]
    return weights, rng.random((1024, 2)), rng.random((256, 2))


# ---------------------------------------------------------------- per framework
def setup_framework(name, threads):
    if name == "oar":
        import oar
        oar.set_device("cpu")
        return oar
    if name == "torch":
        import torch
        torch.set_num_threads(threads)
        return torch
    import paddle
    paddle.set_device("cpu")
    return paddle


def build_case(name, fw, case):
    """A zero-argument callable running the case once in framework `fw`."""
    if case == "pinn_step_f64":
        return build_pinn(name, fw)
    arrays = inputs(case)
    if name == "torch":
        xs = [fw.from_numpy(a) for a in arrays]
    else:
        xs = [fw.to_tensor(a) for a in arrays]
    if case in ("fft_c64_2^20", "fft_4096x256"):
        fn = fw.fft.fft
        return lambda: fn(xs[0])
    if case == "rfft2_1024x1024":
        fn = fw.fft.rfft2
        return lambda: fn(xs[0])
    if case == "svd_512_f64":
        fn = fw.linalg.svd
        return lambda: fn(xs[0], full_matrices=False)
    if case == "eigh_512_f64":
        fn = fw.linalg.eigh
        return lambda: fn(xs[0])
    fn = fw.matmul
    return lambda: fn(xs[0], xs[1])


def build_pinn(name, fw):
    weights, interior, boundary = pinn_arrays()
    if name == "torch":
        params = [fw.from_numpy(w.copy()).requires_grad_() for w in weights]
        opt = fw.optim.Adam(params, lr=1e-3)
        x = fw.from_numpy(interior).requires_grad_()
        xb = fw.from_numpy(boundary)
        grad, sin, tanh = fw.autograd.grad, fw.sin, fw.tanh

        def zero():
            opt.zero_grad(set_to_none=True)
    else:
        params = []
        for w in weights:
            p = fw.create_parameter(list(w.shape), "float64")
            p.set_value(fw.to_tensor(w))
            params.append(p)
        opt = fw.optimizer.Adam(learning_rate=1e-3, parameters=params)
        x = fw.to_tensor(interior)
        x.stop_gradient = False
        xb = fw.to_tensor(boundary)
        grad, sin, tanh = fw.grad, fw.sin, fw.tanh
        zero = opt.clear_grad
    xd = x.detach()
    forcing = 2 * math.pi ** 2 * sin(math.pi * xd[:, 0:1]) * sin(math.pi * xd[:, 1:2])

    def net(h):
        for layer in range(len(params) // 2 - 1):
            h = tanh(fw.matmul(h, params[2 * layer]) + params[2 * layer + 1])
        return fw.matmul(h, params[-2]) + params[-1]

    def step():
        u = net(x)
        (g,) = grad(u.sum(), x, create_graph=True)
        u_xx = grad(g[:, 0:1].sum(), x, create_graph=True)[0][:, 0:1]
        u_yy = grad(g[:, 1:2].sum(), x, create_graph=True)[0][:, 1:2]
        residual = u_xx + u_yy + forcing
        ub = net(xb)
        loss = (residual * residual).mean() + 10.0 * (ub * ub).mean()
        loss.backward()
        opt.step()
        zero()
        return float(loss)

    return step


def worker(name, threads):
    """Reads {"case", "warmup"} lines on stdin; answers one JSON line each: ms of one call, or missing."""
    fw = setup_framework(name, threads)
    version = getattr(fw, "__version__", "?")
    if name == "oar":
        version = getattr(fw, "__version__", None) or "source tree"
    built = {}
    print(json.dumps({"ready": name, "version": str(version)}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        case = request["case"]
        try:
            if case not in built:
                built[case] = build_case(name, fw, case)
                for _ in range(request.get("warmup", 2)):
                    built[case]()
            start = time.perf_counter()
            built[case]()
            reply = {"ms": (time.perf_counter() - start) * 1e3}
        except Exception as e:  # noqa: BLE001 - an op that is not there yet is a result here
            built[case] = None
            reply = {"missing": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:110]}
        if built.get(case) is None:
            built.pop(case, None)
            reply.setdefault("missing", "not built")
        print(json.dumps(reply), flush=True)


# ---------------------------------------------------------------- driver
def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=11)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--pause", type=float, default=0.3,
                   help="seconds between two timed calls, so the previous worker's spinning OpenMP threads "
                        "(KMP_BLOCKTIME is 200 ms) are asleep before the next call starts")
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    p.add_argument("--oar-python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    p.add_argument("--peer-python", default=os.path.join(ROOT, ".venv-bench", "bin", "python"))
    p.add_argument("--worker", choices=FRAMEWORKS, help=argparse.SUPPRESS)
    return p.parse_args()


def start_worker(name, args):
    python = args.oar_python if name == "oar" else args.peer_python
    n = str(args.threads)
    env = dict(os.environ, OMP_NUM_THREADS=n, MKL_NUM_THREADS=n, OPENBLAS_NUM_THREADS=n, OAR_NUM_THREADS=n,
               FLAGS_cpu_math_library_num_threads=n)
    # From /tmp, so `import oar` is the installed package, not the source tree.
    proc = subprocess.Popen([python, os.path.abspath(__file__), "--worker", name, "--threads", n], cwd="/tmp",
                            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, bufsize=1)
    hello = proc.stdout.readline()
    if not hello:
        proc.wait()
        return None, f"{python} could not start the {name} worker"
    return proc, json.loads(hello)["version"]


def ask(proc, case, warmup):
    proc.stdin.write(json.dumps({"case": case, "warmup": warmup}) + "\n")
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())


def main():
    args = parse_args()
    if args.worker:
        worker(args.worker, args.threads)
        return 0
    cases = args.cases.split(",")
    workers, versions = {}, {}
    for name in args.frameworks.split(","):
        proc, version = start_worker(name, args)
        if proc is None:
            print(f"bench_science: {version}; {name} skipped", file=sys.stderr)
            continue
        workers[name], versions[name] = proc, version
    times = {(c, f): [] for c in cases for f in workers}
    missing = {}
    for r in range(args.repeats):
        for case in cases:
            order = list(workers)
            order = order[r % len(order):] + order[:r % len(order)]  # rotate who goes first
            for name in order:
                if (case, name) in missing:
                    continue
                time.sleep(args.pause)
                reply = ask(workers[name], case, args.warmup)
                if "missing" in reply:
                    missing[(case, name)] = reply["missing"]
                else:
                    times[(case, name)].append(reply["ms"])
    for proc in workers.values():
        proc.stdin.close()
        proc.wait()
    print_table(cases, list(workers), times, missing, versions, args)
    return 0


def print_table(cases, names, times, missing, versions, args):
    load = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else ["?"]
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  threads {args.threads}, median of {args.repeats} "
          f"interleaved repeats, load {' '.join(load)}; " + ", ".join(f"{n} {versions[n]}" for n in names))
    print("ms per call; ratio = the faster peer's ms / oar ms (> 1: oar faster)")
    print(f"{'case':<18}" + "".join(f"{n + ' ms':>12}" for n in names) + f"{'ratio':>8}{'target':>8}  verdict")
    for case in cases:
        med = {n: statistics.median(times[(case, n)]) if times[(case, n)] else None for n in names}
        cells = []
        for n in names:
            cells.append(f"{med[n]:12.3f}" if med[n] is not None else f"{'missing':>12}")
        peers = [med[n] for n in names if n != "oar" and med[n] is not None]
        line = f"{case:<18}" + "".join(cells)
        if med.get("oar") is not None and peers:
            ratio = min(peers) / med["oar"]
            verdict = "meets" if ratio >= TARGETS[case] else "misses"
            line += f"{ratio:8.2f}{TARGETS[case]:8.1f}  {verdict}"
        else:
            line += f"{'-':>8}{TARGETS[case]:8.1f}"
        print(line)
    for (case, name), why in sorted(missing.items()):
        print(f"  missing: {name} {case}: {why}")


if __name__ == "__main__":
    sys.exit(main())
