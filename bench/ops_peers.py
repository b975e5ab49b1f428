"""The cases of bench/ops_bench.cpp in PyTorch and PaddlePaddle (CPU), one
JSON line per case and framework (median ms over --reps calls). Either peer
may be missing: its lines are skipped with a note on stderr.

    python bench/ops_peers.py --threads 2 [--reps 20] [--warmup 3]
"""
import argparse
import json
import os
import sys
import time


def median_ms(fn, reps, warmup):
    for _ in range(warmup):
        fn()
    ms = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ms.append((time.perf_counter() - t0) * 1e3)
    ms.sort()
    return ms[len(ms) // 2]


def emit(op, shape, framework, ms, gbytes=None):
    row = {"op": op, "shape": shape, "framework": framework, "median_ms": ms}
    if gbytes:
        row["gbps"] = gbytes / (ms * 1e-3)
    print(json.dumps(row), flush=True)


BIG = 16 << 20
CONV = "8x64x56x56 k3 p1 f32"


def run_torch(a):
    import torch
    torch.set_num_threads(a.threads)
    t = lambda ms_fn: median_ms(ms_fn, a.reps, a.warmup)
    with torch.no_grad():
        for dt, name in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
            for n in (256, 1024, 2048):
                x, y = torch.rand(n, n, dtype=dt), torch.rand(n, n, dtype=dt)
                emit("matmul", f"{n}^3 {name}", "torch", t(lambda: torch.matmul(x, y)))
        x, y = torch.rand(BIG), torch.rand(BIG)
        emit("add", "16M f32", "torch", t(lambda: torch.add(x, y)), 12 * BIG / 1e9)
        emit("reduce_sum", "16M f32", "torch", t(lambda: torch.sum(x)), 4 * BIG / 1e9)
        m = torch.rand(4096, 4096)
        w, b = torch.rand(4096), torch.rand(4096)
        emit("softmax", "4096x4096 f32", "torch", t(lambda: torch.softmax(m, -1)))
        emit("log_softmax", "4096x4096 f32", "torch", t(lambda: torch.log_softmax(m, -1)))
        emit("layer_norm", "4096x4096 f32", "torch",
             t(lambda: torch.nn.functional.layer_norm(m, (4096,), w, b, 1e-5)))
        x = torch.rand(8, 64, 56, 56)
        wt = torch.rand(64, 64, 3, 3)
        g = torch.rand(8, 64, 56, 56)
        conv = torch.nn.functional.conv2d
        emit("conv2d_fwd", CONV, "torch", t(lambda: conv(x, wt, None, 1, 1)))
        bwd = torch.ops.aten.convolution_backward
        args = (g, x, wt, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
        emit("conv2d_bwd_data", CONV, "torch", t(lambda: bwd(*args, [True, False, False])))
        emit("conv2d_bwd_weights", CONV, "torch", t(lambda: bwd(*args, [False, True, False])))
        a1, b1 = torch.ones(1), torch.ones(1)
        calls = 20000

        def tiny():
            for _ in range(calls):
                torch.add(a1, b1)
        emit("tiny_add_us", "1 f32", "torch", t(tiny) * 1e3 / calls)

    def fwd_bwd():
        xr, wr = x.clone().requires_grad_(), wt.clone().requires_grad_()
        torch.autograd.grad(conv(xr, wr, None, 1, 1), [xr, wr], g)
    emit("conv2d_fwd_bwd", CONV, "torch", t(fwd_bwd))


def run_paddle(a):
    import paddle
    paddle.set_device("cpu")
    t = lambda fn: median_ms(fn, a.reps, a.warmup)
    for dt, name in (("float32", "f32"), ("bfloat16", "bf16")):
        for n in (256, 1024, 2048):
            try:
                x = paddle.rand([n, n]).astype(dt)
                y = paddle.rand([n, n]).astype(dt)
                emit("matmul", f"{n}^3 {name}", "paddle", t(lambda: paddle.matmul(x, y)))
            except Exception as e:  # bf16 matmul may be missing on CPU
                print(f"ops_peers: paddle matmul {name}: {e}", file=sys.stderr)
    x, y = paddle.rand([BIG]), paddle.rand([BIG])
    emit("add", "16M f32", "paddle", t(lambda: paddle.add(x, y)), 12 * BIG / 1e9)
    emit("reduce_sum", "16M f32", "paddle", t(lambda: paddle.sum(x)), 4 * BIG / 1e9)
    m = paddle.rand([4096, 4096])
    w, b = paddle.rand([4096]), paddle.rand([4096])
    F = paddle.nn.functional
    emit("softmax", "4096x4096 f32", "paddle", t(lambda: F.softmax(m, -1)))
    emit("log_softmax", "4096x4096 f32", "paddle", t(lambda: F.log_softmax(m, -1)))
    emit("layer_norm", "4096x4096 f32", "paddle", t(lambda: F.layer_norm(m, [4096], w, b, 1e-5)))
    x = paddle.rand([8, 64, 56, 56])
    wt = paddle.rand([64, 64, 3, 3])
    g = paddle.rand([8, 64, 56, 56])
    emit("conv2d_fwd", CONV, "paddle", t(lambda: F.conv2d(x, wt, None, 1, 1)))

    def fwd_bwd():
        xr, wr = x.clone(), wt.clone()
        xr.stop_gradient = False
        wr.stop_gradient = False
        paddle.grad([F.conv2d(xr, wr, None, 1, 1)], [xr, wr], [g])
    emit("conv2d_fwd_bwd", CONV, "paddle", t(fwd_bwd))
    a1, b1 = paddle.ones([1]), paddle.ones([1])
    calls = 20000

    def tiny():
        for _ in range(calls):
            paddle.add(a1, b1)
    emit("tiny_add_us", "1 f32", "paddle", t(tiny) * 1e3 / calls)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--only", choices=["torch", "paddle"], default=None)
    a = p.parse_args()
    for name, fn in (("torch", run_torch), ("paddle", run_paddle)):
        if a.only and a.only != name:
            continue
        try:
            fn(a)
        except ImportError as e:
            print(f"ops_peers: {name} not available ({e}); skipped", file=sys.stderr)


if __name__ == "__main__":
    main()
