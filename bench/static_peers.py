#!/usr/bin/env python3
"""The transformer block of bench/static_bench.cpp in PyTorch and PaddlePaddle.

One training step (forward, loss mean(y*y), backward, SGD update with the
framework's own SGD) and the forward alone under no_grad, at the same sizes:
layer_norm -> q/k/v projections -> causal attention (written out: matmul,
scale, mask, softmax, matmul, as oar decomposes it) -> output projection +
residual -> rms_norm -> MLP (gelu) + residual. PaddlePaddle runs eagerly and
under paddle.jit.to_static (its static mode, the closest peer of oar's
executor). Prints one JSON line per measurement; --table reads the lines of
bench_static and this script on stdin and prints ratios.
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
    p.add_argument("--dim", type=int, default=32)
    p.add_argument("--seq", type=int, default=8)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--heads", type=int, default=2)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--threads", type=int, default=int(os.environ.get("OAR_NUM_THREADS", os.cpu_count() or 1)))
    p.add_argument("--peers", default="torch,paddle")
    p.add_argument("--table", action="store_true")
    return p.parse_args()


def median_us(fn, args):
    for _ in range(args.warmup):
        fn()
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e6)
    return statistics.median(times)


def emit(peer, mode, case, us, args):
    print(json.dumps({"peer": peer, "mode": mode, "case": case, "dim": args.dim, "seq": args.seq,
                      "batch": args.batch, "us": round(us, 1)}), flush=True)


def bench_torch(args):
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(args.threads)
    D, H, T, B = args.dim, args.heads, args.seq, args.batch
    g = torch.Generator().manual_seed(1)

    def w(*shape, scale=0.2):
        return ((torch.rand(*shape, generator=g) * 2 - 1) * scale).requires_grad_()

    p = {"ln.weight": torch.ones(D, requires_grad=True), "ln.bias": torch.zeros(D, requires_grad=True),
         "wq": w(D, D), "wk": w(D, D), "wv": w(D, D), "wo": w(D, D),
         "rms.weight": torch.ones(D, requires_grad=True), "w1": w(D, 4 * D), "w2": w(4 * D, D, scale=0.1)}
    mask = torch.ones(T, T, dtype=torch.bool).tril()

    def block(x):
        h = F.layer_norm(x, (D,), p["ln.weight"], p["ln.bias"])

        def heads(t):
            return t.reshape(B, T, H, D // H).transpose(1, 2)
        q, k, v = heads(h @ p["wq"]), heads(h @ p["wk"]), heads(h @ p["wv"])
        s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(D // H))
        a = torch.softmax(s.masked_fill(~mask, -1e30), -1) @ v
        x1 = x + a.transpose(1, 2).reshape(B, T, D) @ p["wo"]
        r = x1 * torch.rsqrt(x1.pow(2).mean(-1, keepdim=True) + 1e-6) * p["rms.weight"]
        return x1 + F.gelu(r @ p["w1"]) @ p["w2"]

    x = torch.rand(B, T, D, generator=g) * 2 - 1
    opt = torch.optim.SGD(list(p.values()), lr=1e-3)

    def step():
        opt.zero_grad(set_to_none=True)
        y = block(x)
        loss = (y * y).mean()
        loss.backward()
        opt.step()
        return loss.item()

    def forward():
        with torch.no_grad():
            return block(x).sum().item()

    emit("torch", "eager", "transformer_train_step", median_us(step, args), args)
    emit("torch", "eager", "transformer_forward", median_us(forward, args), args)


def bench_paddle(args):
    import paddle
    import paddle.nn.functional as F
    paddle.set_device("cpu")
    D, H, T, B = args.dim, args.heads, args.seq, args.batch
    paddle.seed(1)

    class Block(paddle.nn.Layer):
        def __init__(self):
            super().__init__()

            def w(*shape, scale=0.2):
                return self.create_parameter(list(shape), default_initializer=paddle.nn.initializer.Uniform(-scale, scale))
            self.ln_w = self.create_parameter([D], default_initializer=paddle.nn.initializer.Constant(1.0))
            self.ln_b = self.create_parameter([D], default_initializer=paddle.nn.initializer.Constant(0.0))
            self.wq, self.wk, self.wv, self.wo = w(D, D), w(D, D), w(D, D), w(D, D)
            self.rms_w = self.create_parameter([D], default_initializer=paddle.nn.initializer.Constant(1.0))
            self.w1, self.w2 = w(D, 4 * D), w(4 * D, D, scale=0.1)
            self.mask = paddle.tril(paddle.ones([T, T], dtype="bool"))

        def forward(self, x):
            h = F.layer_norm(x, [D], self.ln_w, self.ln_b)

            def heads(t):
                return t.reshape([B, T, H, D // H]).transpose([0, 2, 1, 3])
            q, k, v = heads(h @ self.wq), heads(h @ self.wk), heads(h @ self.wv)
            s = paddle.matmul(q, k, transpose_y=True) * (1.0 / math.sqrt(D // H))
            s = paddle.where(self.mask, s, paddle.full_like(s, -1e30))
            a = paddle.matmul(F.softmax(s, -1), v)
            x1 = x + a.transpose([0, 2, 1, 3]).reshape([B, T, D]) @ self.wo
            r = x1 * paddle.rsqrt((x1 * x1).mean(-1, keepdim=True) + 1e-6) * self.rms_w
            return x1 + F.gelu(r @ self.w1) @ self.w2

    x = paddle.rand([B, T, D]) * 2 - 1
    for mode in ("eager", "to_static"):
        model = Block()
        opt = paddle.optimizer.SGD(learning_rate=1e-3, parameters=model.parameters())
        if mode == "to_static":
            # Paddle's training pattern: the model's forward (and, through
            # its run_program op, backward) run as a static program; loss,
            # backward call and optimizer stay in the step.
            model = paddle.jit.to_static(model, full_graph=True)

        def train(inp):
            y = model(inp)
            loss = (y * y).mean()
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss

        def infer(inp):
            return model(inp).sum()
        def forward():
            with paddle.no_grad():
                return float(infer(x))
        emit("paddle", mode, "transformer_train_step", median_us(lambda: float(train(x)), args), args)
        emit("paddle", mode, "transformer_forward", median_us(forward, args), args)


def table():
    rows = {}
    for line in sys.stdin:
        line = line.strip()
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        if "peer" in r:
            key = (r["case"], r["dim"], r["seq"], r["batch"])
            rows.setdefault(key, {})[f'{r["peer"]} {r["mode"]}'] = r["us"]
        elif r.get("case", "").startswith("transformer"):
            key = (r["case"], r["dim"], r["seq"], r["batch"])
            rows.setdefault(key, {})["oar eager"] = r["eager_us"]
            rows.setdefault(key, {})["oar static"] = r["static_us"]
    cols = ["oar eager", "oar static", "torch eager", "paddle eager", "paddle to_static"]
    print(f'{"case (dim, seq, batch)":38}' + "".join(f"{c:>17}" for c in cols) +
          f'{"static/eager":>14}{"x torch":>9}{"x paddle st":>13}')
    for key, r in rows.items():
        name = f"{key[0]} ({key[1]}, {key[2]}, {key[3]})"
        cells = "".join(f'{r.get(c, float("nan")):>15.1f}us' for c in cols)
        s = r.get("oar static", float("nan"))
        ratio = lambda c: r.get(c, float("nan")) / s
        print(f"{name:38}{cells}{ratio('oar eager'):>13.2f}x{ratio('torch eager'):>8.2f}x{ratio('paddle to_static'):>12.2f}x")


def main():
    args = parse_args()
    if args.table:
        table()
        return
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    for peer in args.peers.split(","):
        try:
            {"torch": bench_torch, "paddle": bench_paddle}[peer](args)
        except Exception as e:  # a peer that cannot run is reported, not fatal
            print(f"static_peers: {peer} skipped: {type(e).__name__}: {e}", file=sys.stderr)


if __name__ == "__main__":
    main()
