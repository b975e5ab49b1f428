#!/usr/bin/env python3
"""The PINN training step of bench/pinn_step.cpp in PyTorch and PaddlePaddle.

Same network (2 -> width x depth, tanh -> 1, Xavier init), points, loss
(Laplacian by grad-of-grad with create_graph), Adam (the framework's own,
lr 1e-3) and dtype. Threads: --threads, also exported as OMP_NUM_THREADS
before either framework is imported. A peer that cannot be imported is
reported and skipped. Prints one JSON line per peer.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--width", type=int, default=32)
    p.add_argument("--depth", type=int, default=3)
    p.add_argument("--points", type=int, default=1024)
    p.add_argument("--boundary", type=int, default=256)
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--threads", type=int, default=int(os.environ.get("OAR_NUM_THREADS", os.cpu_count() or 1)))
    p.add_argument("--peers", default="torch,paddle")
    p.add_argument("--table", action="store_true", help="read JSON lines on stdin and print the comparison table")
    return p.parse_args()


def timed(step, args):
    for _ in range(args.warmup):
        step()
    ms = []
    loss = 0.0
    for _ in range(args.steps):
        start = time.perf_counter()
        loss = step()
        ms.append((time.perf_counter() - start) * 1e3)
    return statistics.median(ms), min(ms), loss


def case_name(args):
    return f"pinn_step_w{args.width}_d{args.depth}_n{args.points}_b{args.boundary}_{args.dtype}"


def sizes(args):
    return [2] + [args.width] * args.depth + [1]


def bench_torch(args):
    import torch

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    dtype = getattr(torch, args.dtype)
    params = []
    s = sizes(args)
    for i, o in zip(s[:-1], s[1:]):
        params.append((torch.randn(i, o, dtype=dtype) * math.sqrt(2.0 / (i + o))).requires_grad_())
        params.append(torch.zeros(o, dtype=dtype, requires_grad=True))
    opt = torch.optim.Adam(params, lr=1e-3)
    x = torch.rand(args.points, 2, dtype=dtype, requires_grad=True)
    forcing = 2 * math.pi**2 * torch.sin(math.pi * x[:, 0:1].detach()) * torch.sin(math.pi * x[:, 1:2].detach())
    xb = torch.rand(args.boundary, 2, dtype=dtype)

    def net(h):
        n = len(params) // 2
        for l in range(n - 1):
            h = torch.tanh(h @ params[2 * l] + params[2 * l + 1])
        return h @ params[-2] + params[-1]

    def step():
        u = net(x)
        (g,) = torch.autograd.grad(u.sum(), x, create_graph=True)
        u_xx = torch.autograd.grad(g[:, 0:1].sum(), x, create_graph=True)[0][:, 0:1]
        u_yy = torch.autograd.grad(g[:, 1:2].sum(), x, create_graph=True)[0][:, 1:2]
        residual = u_xx + u_yy + forcing
        ub = net(xb)
        loss = (residual * residual).mean() + 10.0 * (ub * ub).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()

    return torch.__version__, timed(step, args)


def bench_paddle(args):
    import paddle

    if hasattr(paddle, "set_num_threads"):
        paddle.set_num_threads(args.threads)
    paddle.set_device("cpu")
    paddle.seed(0)
    paddle.set_default_dtype(args.dtype)
    params = []
    s = sizes(args)
    for i, o in zip(s[:-1], s[1:]):
        w = paddle.randn([i, o], dtype=args.dtype) * math.sqrt(2.0 / (i + o))
        b = paddle.zeros([o], dtype=args.dtype)
        for t in (w, b):
            p = paddle.create_parameter(t.shape, args.dtype)
            p.set_value(t)
            params.append(p)
    opt = paddle.optimizer.Adam(learning_rate=1e-3, parameters=params)
    x = paddle.rand([args.points, 2], dtype=args.dtype)
    x.stop_gradient = False
    xd = x.detach()
    forcing = 2 * math.pi**2 * paddle.sin(math.pi * xd[:, 0:1]) * paddle.sin(math.pi * xd[:, 1:2])
    xb = paddle.rand([args.boundary, 2], dtype=args.dtype)

    def net(h):
        n = len(params) // 2
        for l in range(n - 1):
            h = paddle.tanh(paddle.matmul(h, params[2 * l]) + params[2 * l + 1])
        return paddle.matmul(h, params[-2]) + params[-1]

    def step():
        u = net(x)
        (g,) = paddle.grad(u.sum(), x, create_graph=True)
        u_xx = paddle.grad(g[:, 0:1].sum(), x, create_graph=True)[0][:, 0:1]
        u_yy = paddle.grad(g[:, 1:2].sum(), x, create_graph=True)[0][:, 1:2]
        residual = u_xx + u_yy + forcing
        ub = net(xb)
        loss = (residual * residual).mean() + 10.0 * (ub * ub).mean()
        loss.backward()
        opt.step()
        opt.clear_grad()
        return float(loss)

    return paddle.__version__, timed(step, args)


def print_table(lines):
    """One row per case: medians and ratios (peer ms / oar ms, >1 means oar faster)."""
    by_case = {}
    for line in lines:
        line = line.strip()
        if line.startswith("{"):
            r = json.loads(line)
            by_case.setdefault(r["case"], {})[r["framework"]] = r["median_ms"]

    def cell(v, width, digits):
        return f"{v:{width}.{digits}f}" if v is not None else f"{'-':>{width}}"

    print("median ms per step; ratio = peer ms / oar ms (>1 means oar faster)")
    print(f"{'case':<36} {'oar ms':>9} {'torch ms':>9} {'paddle ms':>9} {'oar/torch':>9} {'oar/paddle':>10}")
    for case, ms in by_case.items():
        o, t, p = ms.get("oar"), ms.get("torch"), ms.get("paddle")
        ratio_t = t / o if o and t else None
        ratio_p = p / o if o and p else None
        print(f"{case:<36} {cell(o, 9, 3)} {cell(t, 9, 3)} {cell(p, 9, 3)} {cell(ratio_t, 9, 2)} {cell(ratio_p, 10, 2)}")


def main():
    args = parse_args()
    if args.table:
        print_table(sys.stdin)
        return
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    os.environ.setdefault("MKL_NUM_THREADS", str(args.threads))
    runners = {"torch": bench_torch, "paddle": bench_paddle}
    for name in args.peers.split(","):
        try:
            version, (median, fastest, loss) = runners[name](args)
        except ImportError as e:
            print(f"pinn_peers: {name} could not be imported ({e}); skipped", file=sys.stderr)
            continue
        print(json.dumps({"framework": name, "version": version, "case": case_name(args), "threads": args.threads,
                          "steps": args.steps, "median_ms": round(median, 4), "min_ms": round(fastest, 4),
                          "loss": loss}), flush=True)


if __name__ == "__main__":
    main()
