#!/usr/bin/env python3
"""Static mode with control flow (issue 17): oar eager vs oar to_static vs
torch eager (and paddle, eager and to_static, when installed), one framework
per process (--framework), the same thread count.

Cases (one call = the whole decode or sequence, result read back; ms):
  greedy_b1, greedy_b4   greedy decoding with a GRU-cell decoder (vocab 100,
                         embedding 32, hidden 64), batch 1 / 4, up to 32
                         tokens until every row has emitted the end token;
                         oar and paddle run one function, written as a Paddle
                         user writes it (`while step < max_len and not
                         done.all():` on tensors), eagerly and under
                         paddle.jit.to_static(full_graph=True), which turns
                         the loop into the program's while; torch runs the
                         same model as a torch user writes it (a Python
                         loop, `if done.all(): break`) under no_grad.
  lstm_layer             nn.LSTM(64, 64) over 32 steps, batch 4 (oar's and
                         paddle's LSTM unroll into a 32-step program; torch's
                         is its fused kernel).
  lstm_cell_while        an LSTMCell(64, 64) stepped by a tensor-bound while
                         (`while t < paddle.shape(x)[1]:`), 32 steps, batch 4
                         (torch: `for t in range(x.shape[1])`).

All frameworks get the same weights (numpy, fixed seed) and are checked,
before timing, against a numpy reference: the token sequences exactly, the
LSTM states with allclose; a mismatch stops the run (exit 1). The end token
is picked from the reference so that decoding ends at different steps in
different rows. Each case: the median of --repeats single-call timings after
--warmup calls. Prints one JSON line per case and mode; `--table` reads such
lines (several rounds and thread counts allowed: the best median is kept)
and prints the comparison and the target (oar static >= 1.5x oar eager on
the decoding loop).
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

VOCAB, EMBED, HIDDEN, MAX_LEN, BOS = 100, 32, 64, 32, 0
LSTM_BATCH, LSTM_STEPS, LSTM_INPUT = 4, 32, 64
CASES = ["greedy_b1", "greedy_b4", "lstm_layer", "lstm_cell_while"]
TARGET = 1.5  # oar static / oar eager speed on the decoding loop (issue 17)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--framework", choices=["oar", "torch", "paddle"])
    p.add_argument("--threads", type=int, default=int(os.environ.get("OAR_NUM_THREADS", os.cpu_count() or 1)))
    p.add_argument("--repeats", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--table", action="store_true", help="read JSON lines on stdin and print the table")
    return p.parse_args()


# ---- weights and the numpy reference ----

def weights():
    """The models' parameters in Paddle's layout (Linear weight [in, out])."""
    rng = np.random.default_rng(17)

    def uniform(*shape, scale):
        return rng.uniform(-scale, scale, shape).astype(np.float32)
    s = 1.0 / np.sqrt(HIDDEN)
    # The recurrent and output weights are scaled up so that the greedy
    # decode wanders over the vocabulary instead of settling on one token.
    return {
        "emb": rng.standard_normal((VOCAB, EMBED)).astype(np.float32),
        "gru_w_ih": uniform(3 * HIDDEN, EMBED, scale=s), "gru_w_hh": uniform(3 * HIDDEN, HIDDEN, scale=4 * s),
        "gru_b_ih": uniform(3 * HIDDEN, scale=s), "gru_b_hh": uniform(3 * HIDDEN, scale=s),
        "out_w": uniform(HIDDEN, VOCAB, scale=4 * s), "out_b": uniform(VOCAB, scale=s),
        "h0": rng.standard_normal((4, HIDDEN)).astype(np.float32),
        "lstm_w_ih": uniform(4 * HIDDEN, LSTM_INPUT, scale=s), "lstm_w_hh": uniform(4 * HIDDEN, HIDDEN, scale=s),
        "lstm_b_ih": uniform(4 * HIDDEN, scale=s), "lstm_b_hh": uniform(4 * HIDDEN, scale=s),
        "lstm_x": rng.standard_normal((LSTM_BATCH, LSTM_STEPS, LSTM_INPUT)).astype(np.float32),
    }


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def reference_decode(w, batch, eos):
    """(tokens [batch, MAX_LEN] padded with eos, steps run, smallest top-1 - top-2 logit gap)."""
    h = w["h0"][:batch].astype(np.float64)
    tok = np.full(batch, BOS)
    done = np.zeros(batch, bool)
    out = np.full((batch, MAX_LEN), eos)
    gap, step = np.inf, 0
    while step < MAX_LEN and not done.all():
        x = w["emb"][tok] @ w["gru_w_ih"].T + w["gru_b_ih"]
        hh = h @ w["gru_w_hh"].T + w["gru_b_hh"]
        xr, xz, xc = np.split(x, 3, -1)
        hr, hz, hc = np.split(hh, 3, -1)
        r, z = sigmoid(xr + hr), sigmoid(xz + hz)
        c = np.tanh(xc + r * hc)
        h = (h - c) * z + c
        logits = h @ w["out_w"] + w["out_b"]
        top2 = np.sort(logits, -1)[:, -2:]
        gap = min(gap, float((top2[:, 1] - top2[:, 0])[~done].min()))
        nxt = np.where(done, eos, logits.argmax(-1))
        out[:, step] = nxt
        done |= nxt == eos
        tok = nxt
        step += 1
    return out, step, gap


def pick_eos(w, batch):
    """The end token: of those that every row emits when decoding runs to
    MAX_LEN, the one whose decode would stop nearest 3/4 of MAX_LEN (else
    the one that ends the most rows)."""
    free, _, _ = reference_decode(w, batch, eos=-1)
    best, best_key = None, None
    for v in range(VOCAB):
        hits = [np.flatnonzero(row == v) for row in free]
        ended = sum(len(h) > 0 for h in hits)
        last = max((h[0] for h in hits if len(h)), default=-1)
        key = (ended == batch, ended, -abs(last + 1 - 3 * MAX_LEN // 4))
        if best_key is None or key > best_key:
            best, best_key = v, key
    return best


def reference_lstm(w):
    """Final (h, c) of the LSTM over lstm_x."""
    x = w["lstm_x"].astype(np.float64)
    h = np.zeros((LSTM_BATCH, HIDDEN))
    c = np.zeros((LSTM_BATCH, HIDDEN))
    for t in range(LSTM_STEPS):
        g = x[:, t] @ w["lstm_w_ih"].T + w["lstm_b_ih"] + h @ w["lstm_w_hh"].T + w["lstm_b_hh"]
        i, f, gg, o = np.split(g, 4, -1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(gg)
        h = sigmoid(o) * np.tanh(c)
    return h, c


# ---- the models: oar and paddle (one code), torch ----

def paddle_like_models(paddle, w):
    """{case: {mode: callable() -> numpy outputs}} for oar or paddle."""
    nn = paddle.nn

    def param(p, value):
        p.set_value(value)

    class GreedyDecoder(nn.Layer):
        def __init__(self, batch):
            super().__init__()
            self.batch = batch
            self.emb = nn.Embedding(VOCAB, EMBED)
            self.cell = nn.GRUCell(EMBED, HIDDEN)
            self.out = nn.Linear(HIDDEN, VOCAB)
            param(self.emb.weight, w["emb"])
            for name in ("w_ih", "w_hh", "b_ih", "b_hh"):
                param(getattr(self.cell, name.replace("w_", "weight_").replace("b_", "bias_")), w["gru_" + name])
            param(self.out.weight, w["out_w"])
            param(self.out.bias, w["out_b"])

        def forward(self, h, eos):
            tok = paddle.full([self.batch], BOS, dtype="int64")
            done = paddle.zeros([self.batch], dtype="bool")
            out = paddle.full([self.batch, MAX_LEN], 0, dtype="int64") + eos
            positions = paddle.arange(MAX_LEN, dtype="int64")
            step = paddle.zeros([], dtype="int64")
            while step < MAX_LEN and not done.all():
                h, _ = self.cell(self.emb(tok), h)
                nxt = paddle.argmax(self.out(h), axis=-1)
                nxt = paddle.where(done, paddle.full_like(nxt, 0) + eos, nxt)
                # `out[:, step] = nxt` is what a Paddle user writes; oar's
                # to_static cannot index with a tensor of the trace yet
                # (natural_indexing_works below), so the column is set by where.
                out = paddle.where(positions == step, nxt.unsqueeze(-1), out)
                done = done | (nxt == eos)
                tok = nxt
                step = step + 1
            return out, step

    class CellWhile(nn.Layer):
        def __init__(self):
            super().__init__()
            self.cell = nn.LSTMCell(LSTM_INPUT, HIDDEN)
            for name in ("w_ih", "w_hh", "b_ih", "b_hh"):
                param(getattr(self.cell, name.replace("w_", "weight_").replace("b_", "bias_")), w["lstm_" + name])

        def forward(self, x):
            h = paddle.zeros([x.shape[0], HIDDEN])
            c = paddle.zeros([x.shape[0], HIDDEN])
            t = paddle.zeros([], dtype="int64")
            while t < paddle.shape(x)[1]:
                # x[:, t] in oar's to_static: the same limitation as above.
                xt = paddle.index_select(x, t.reshape([1]), axis=1).squeeze(1)
                h, (h, c) = self.cell(xt, (h, c))
                t = t + 1
            return h, c

    class Lstm(nn.Layer):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(LSTM_INPUT, HIDDEN)
            for name in ("w_ih", "w_hh", "b_ih", "b_hh"):
                pname = name.replace("w_", "weight_").replace("b_", "bias_") + "_l0"
                param(getattr(self.lstm, pname), w["lstm_" + name])

        def forward(self, x):
            _, (h, c) = self.lstm(x)
            return h[0], c[0]

    x = paddle.to_tensor(w["lstm_x"])
    models = {}
    for case, make, inputs in (
            ("greedy_b1", lambda: GreedyDecoder(1), lambda e: (paddle.to_tensor(w["h0"][:1]), e)),
            ("greedy_b4", lambda: GreedyDecoder(4), lambda e: (paddle.to_tensor(w["h0"]), e)),
            ("lstm_layer", Lstm, lambda e: (x,)),
            ("lstm_cell_while", CellWhile, lambda e: (x,))):
        eos = paddle.full([], pick_eos(w, int(case[-1])) if case.startswith("greedy") else 0, dtype="int64")
        args = inputs(eos)
        eager, static = make(), make()
        static = paddle.jit.to_static(static, full_graph=True)

        def call(model, args=args):
            with paddle.no_grad():
                return [t.numpy() for t in model(*args)]
        models[case] = {"eager": (lambda m=eager, c=call: c(m)), "to_static": (lambda m=static, c=call: c(m))}
    return models


def torch_models(torch, w):
    nn = torch.nn

    def load(p, value):
        with torch.no_grad():
            p.copy_(torch.from_numpy(value))

    emb, cell, out = nn.Embedding(VOCAB, EMBED), nn.GRUCell(EMBED, HIDDEN), nn.Linear(HIDDEN, VOCAB)
    load(emb.weight, w["emb"])
    for name in ("w_ih", "w_hh", "b_ih", "b_hh"):
        load(getattr(cell, name.replace("w_", "weight_").replace("b_", "bias_")), w["gru_" + name])
    load(out.weight, w["out_w"].T.copy())
    load(out.bias, w["out_b"])

    def greedy(h, eos):
        batch = h.shape[0]
        tok = torch.full((batch,), BOS, dtype=torch.int64)
        done = torch.zeros(batch, dtype=torch.bool)
        tokens = torch.full((batch, MAX_LEN), eos, dtype=torch.int64)
        step = 0
        for step in range(MAX_LEN):
            h = cell(emb(tok), h)
            nxt = out(h).argmax(-1)
            nxt = torch.where(done, torch.full_like(nxt, eos), nxt)
            tokens[:, step] = nxt
            done = done | (nxt == eos)
            tok = nxt
            if done.all():
                break
        return tokens, torch.tensor(step + 1)

    lstm_cell, lstm = nn.LSTMCell(LSTM_INPUT, HIDDEN), nn.LSTM(LSTM_INPUT, HIDDEN, batch_first=True)
    for name in ("w_ih", "w_hh", "b_ih", "b_hh"):
        attr = name.replace("w_", "weight_").replace("b_", "bias_")
        load(getattr(lstm_cell, attr), w["lstm_" + name])
        load(getattr(lstm, attr + "_l0"), w["lstm_" + name])
    x = torch.from_numpy(w["lstm_x"])

    def cell_loop(x):
        h = torch.zeros(x.shape[0], HIDDEN)
        c = torch.zeros(x.shape[0], HIDDEN)
        for t in range(x.shape[1]):
            h, c = lstm_cell(x[:, t], (h, c))
        return h, c

    def layer(x):
        _, (h, c) = lstm(x)
        return h[0], c[0]

    def wrap(fn, *args):
        def call():
            with torch.no_grad():
                return [t.numpy() for t in fn(*args)]
        return {"eager": call}
    return {"greedy_b1": wrap(greedy, torch.from_numpy(w["h0"][:1]), pick_eos(w, 1)),
            "greedy_b4": wrap(greedy, torch.from_numpy(w["h0"]), pick_eos(w, 4)),
            "lstm_layer": wrap(layer, x), "lstm_cell_while": wrap(cell_loop, x)}


def natural_indexing_works(paddle):
    """Whether to_static takes `out[:, step] = v` and `x[:, step]` with a
    0-D int64 tensor of the trace (the bench uses where / index_select
    while it does not). Returns (ok, error text)."""
    def f(x, n):
        out = paddle.zeros([2, 8], dtype="float32")
        step = paddle.zeros([], dtype="int64")
        while step < n:
            out[:, step] = x[:, step]
            step = step + 1
        return out
    x = paddle.ones([2, 8])
    n = paddle.full([], 3, dtype="int64")
    try:
        got = paddle.jit.to_static(f, full_graph=True)(x, n).numpy()
    except Exception as e:  # reported, not fatal: the bench has its own form
        return False, f"{type(e).__name__}: {e}"
    want = f(x, n).numpy()
    return bool((got == want).all()), "" if (got == want).all() else f"static {got.tolist()} != eager {want.tolist()}"


# ---- checking and timing ----

def check(case, mode, outputs, w):
    """Stops the run when outputs differ from the numpy reference."""
    if case.startswith("greedy"):
        batch = int(case[-1])
        want, steps, gap = reference_decode(w, batch, pick_eos(w, batch))
        tokens, got_steps = outputs[0], int(np.asarray(outputs[1]).reshape(-1)[0])
        if tokens.shape != want.shape or (tokens != want).any() or got_steps != steps:
            sys.exit(f"bench_control_flow: {case} {mode}: tokens differ from the numpy reference\n"
                     f"  got ({got_steps} steps) {tokens.tolist()}\n  want ({steps} steps) {want.tolist()}\n"
                     f"  (smallest logit gap on the reference path {gap:.2e})")
        return {"steps": steps, "tokens": tokens.tolist(), "gap": gap}
    h, c = reference_lstm(w)
    for name, got, want in (("h", outputs[0], h), ("c", outputs[1], c)):
        if not np.allclose(got, want, rtol=1e-4, atol=1e-5):
            sys.exit(f"bench_control_flow: {case} {mode}: final {name} differs from the numpy reference by "
                     f"{np.abs(got - want).max():.3e} (rtol 1e-4, atol 1e-5)")
    return {"max_err": float(max(np.abs(outputs[0] - h).max(), np.abs(outputs[1] - c).max()))}


def median_ms(fn, args):
    for _ in range(args.warmup):
        fn()
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), min(times)


def run(args):
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    w = weights()
    if args.framework == "torch":
        import torch
        torch.set_num_threads(args.threads)
        fw, models = torch, torch_models(torch, w)
    else:
        if args.framework == "oar":
            import oar as paddle
        else:
            import paddle
        paddle.set_device("cpu")
        fw, models = paddle, paddle_like_models(paddle, w)
        if args.framework == "oar":
            ok, error = natural_indexing_works(paddle)
            if not ok:
                print(f"bench_control_flow: oar to_static does not take `out[:, step] = x[:, step]` with a "
                      f"tensor step ({error}); the cases use where / index_select instead", file=sys.stderr)
    version = getattr(fw, "__version__", "?")
    for case in args.cases.split(","):
        for mode, fn in models[case].items():
            try:
                outputs = fn()
            except Exception as e:  # a mode that cannot run is reported, the others go on
                print(f"bench_control_flow: {args.framework} {mode} {case} skipped: {type(e).__name__}: {e}",
                      file=sys.stderr)
                continue
            info = check(case, mode, outputs, w)  # exits on a mismatch
            med, best = median_ms(fn, args)
            print(json.dumps({"framework": args.framework, "version": version, "mode": mode, "case": case,
                              "threads": args.threads, "median": med, "min": best, "unit": "ms", **info}),
                  flush=True)


def table():
    best, versions, info = {}, {}, {}
    for line in sys.stdin:
        line = line.strip()
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        key = (r["threads"], r["case"], f'{r["framework"]} {r["mode"]}')
        best[key] = min(best.get(key, float("inf")), r["median"])
        versions[r["framework"]] = r["version"]
        info.setdefault(r["case"], {})[key[2]] = r
    # Every framework was checked against the numpy reference; here again
    # against each other (the same tokens, the same number of steps).
    for case, per_mode in info.items():
        seqs = {m: (r["tokens"], r["steps"]) for m, r in per_mode.items() if "tokens" in r}
        if len({json.dumps(s) for s in seqs.values()}) > 1:
            sys.exit(f"bench_control_flow: {case}: the frameworks decode different tokens: {seqs}")
    cols = ["oar eager", "oar to_static", "torch eager", "paddle eager", "paddle to_static"]
    cols = [c for c in cols if any(k[2] == c for k in best)]
    print("versions: " + ", ".join(f"{f} {v}" for f, v in versions.items()))
    print("best median over rounds, ms per call; static/eager = oar eager / oar to_static (speedup); "
          "x peer = peer / oar to_static (>= 1: oar static at least as fast)")
    peers = [c for c in cols if not c.startswith("oar")]
    print(f"{'threads':>7} {'case':<16}{'steps':>6}" + "".join(f"{c:>17}" for c in cols) +
          f"{'static/eager':>14}" + "".join(f"{'x ' + c:>19}" for c in peers) + f"{'target':>9}")
    for threads in sorted({k[0] for k in best}):
        for case in CASES:
            vals = {c: best.get((threads, case, c)) for c in cols}
            if all(v is None for v in vals.values()):
                continue
            st, ea = vals.get("oar to_static"), vals.get("oar eager")
            steps = next((r.get("steps") for r in info[case].values() if "steps" in r), None)
            row = f"{threads:>7} {case:<16}{steps if steps is not None else '-':>6}" + "".join(
                f"{vals[c]:>17.3f}" if vals[c] is not None else f"{'-':>17}" for c in cols)
            row += f"{ea / st:>13.2f}x" if st and ea else f"{'-':>14}"
            row += "".join(f"{vals[c] / st:>18.2f}x" if st and vals[c] else f"{'-':>19}" for c in peers)
            verdict = "-"
            if case.startswith("greedy") and st and ea:
                verdict = "met" if ea / st >= TARGET else "MISSED"
            print(row + f"{verdict:>9}")
    print(f"target (issue 17): oar to_static >= {TARGET}x oar eager on the greedy decoding loop")


if __name__ == "__main__":
    a = parse_args()
    if a.table:
        table()
    else:
        run(a)
