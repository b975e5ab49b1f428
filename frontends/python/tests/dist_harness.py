"""Runs a test function on N cpu ranks (Gloo) and returns each rank's result.

    from dist_harness import run_ranks

    def body(rank, world):          # module level, in an importable file
        mesh = dist.ProcessMesh([0, 1], dim_names=["x"])
        ...
        return {"y": y}             # picklable; oar Tensors become numpy

    results = run_ranks(body, world=2)   # [rank 0's result, rank 1's result]

Each rank is a fresh `python` process with the torchrun variables (RANK,
WORLD_SIZE, MASTER_ADDR, a free MASTER_PORT) that imports the function's
file, calls init_parallel_env() on cpu, and runs fn(rank, world, *args).
An oar Tensor in the result becomes a numpy array: numpy(), which for a
distributed tensor is the whole value, as in Paddle (every rank converts
the same results in the same order, so the gathers match); return
t._local_value() for this rank's piece.

A rank that raises makes run_ranks raise AssertionError with that rank's
traceback; the other ranks get a short grace period and are then killed,
so a failure never hangs the suite (collectives also time out after
OAR_COLLECTIVE_TIMEOUT, 30 s here). `expect_error=True` returns, per rank,
the exception text instead (bad-input tests: every rank must raise).
Reuses dist_helpers' environment handling (the test_dist_*.py harness)."""
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time

from dist_helpers import clean_env, free_port, torchrun_env

HERE = os.path.dirname(os.path.abspath(__file__))

_CHILD = r"""
import importlib.util, os, pickle, sys, traceback
path, name, fn_name, args_file, out_file = sys.argv[1:6]
sys.path.insert(0, os.path.dirname(path))
sys.path.insert(0, {here!r})

def plain(v):
    import numpy as np
    import oar
    if isinstance(v, oar.Tensor):
        return np.array(v.numpy())
    if isinstance(v, dict):
        return {{k: plain(x) for k, x in v.items()}}
    if isinstance(v, (list, tuple)):
        return type(v)(plain(x) for x in v)
    return v

status = ("error", "the rank did not start")
try:
    import oar
    import oar.distributed as dist
    oar.set_device("cpu")
    dist.init_parallel_env()
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    with open(args_file, "rb") as f:
        args, kwargs = pickle.load(f)
    rank, world = dist.get_rank(), dist.get_world_size()
    status = ("ok", plain(getattr(module, fn_name)(rank, world, *args, **kwargs)))
except BaseException as e:  # noqa: BLE001 - reported to the parent
    status = ("error", traceback.format_exc(), f"{{type(e).__name__}}: {{e}}")
with open(out_file, "wb") as f:
    pickle.dump(status, f)
sys.stdout.flush()
if status[0] == "ok":
    # Rank 0 serves the job's store: no rank leaves while another may still
    # build a communicator (a failed rank skips this; the parent then kills
    # the waiting ones after its grace period, their results saved).
    try:
        dist.barrier()
    except BaseException:  # noqa: BLE001 - the result is already written
        pass
os._exit(0 if status[0] == "ok" else 1)
"""


class RankError(AssertionError):
    """A rank raised; .tracebacks[r] is rank r's traceback (None if it did not fail)."""

    def __init__(self, message, tracebacks):
        super().__init__(message)
        self.tracebacks = tracebacks


def run_ranks(fn, world=2, args=(), kwargs=None, timeout=60.0, grace=3.0, extra_env=None, expect_error=False):
    """fn(rank, world, *args, **kwargs) on `world` ranks; returns the list of
    results in rank order (see the module docstring)."""
    path = os.path.abspath(sys.modules[fn.__module__].__file__)
    name = fn.__module__.rsplit(".", 1)[-1]
    tmp = tempfile.mkdtemp(prefix="oar_ranks_")
    args_file = os.path.join(tmp, "args.pkl")
    with open(args_file, "wb") as f:
        pickle.dump((tuple(args), dict(kwargs or {})), f)
    script = os.path.join(tmp, "child.py")
    with open(script, "w") as f:
        f.write(_CHILD.format(here=HERE))
    port = free_port()
    procs, logs, outs = [], [], []
    try:
        for r in range(world):
            env = clean_env({"OAR_COLLECTIVE_TIMEOUT": "30", **(extra_env or {})})
            env.update(torchrun_env(r, world, port))
            out = os.path.join(tmp, f"{r}.pkl")
            log = open(os.path.join(tmp, f"{r}.log"), "w+")
            outs.append(out)
            logs.append(log)
            procs.append(subprocess.Popen([sys.executable, script, path, name, fn.__name__, args_file, out],
                                          env=env, stdout=log, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + timeout
        failed_at = None
        while True:
            codes = [p.poll() for p in procs]  # every one, so each returncode is current
            if all(c is not None for c in codes):
                break
            now = time.monotonic()
            if failed_at is None and any(c not in (None, 0) for c in codes):
                failed_at = now  # a rank failed: the others get `grace` seconds to fail too
            if now > deadline or (failed_at is not None and now > failed_at + grace):
                break
            time.sleep(0.02)
        timed_out = [r for r, p in enumerate(procs) if p.poll() is None]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    statuses, outputs = [], []
    for r in range(world):
        logs[r].seek(0)
        outputs.append(logs[r].read())
        logs[r].close()
        status = None
        if os.path.exists(outs[r]):
            with open(outs[r], "rb") as f:
                status = pickle.load(f)
        statuses.append(status)
    shutil.rmtree(tmp, ignore_errors=True)
    if expect_error:
        missing = [r for r in range(world) if not statuses[r] or statuses[r][0] != "error"]
        if missing:
            raise AssertionError(f"ranks {missing} did not raise (expect_error):\n" + _report(statuses, outputs))
        return [s[2] for s in statuses]
    if any(not s or s[0] != "ok" for s in statuses):
        head = (f"ranks {timed_out} did not finish within {timeout} s" if timed_out and failed_at is None
                else "a rank failed")
        raise RankError(head + ":\n" + _report(statuses, outputs),
                        [s[1] if s and s[0] == "error" else None for s in statuses])
    return [s[1] for s in statuses]


def _report(statuses, outputs):
    parts = []
    for r, (s, text) in enumerate(zip(statuses, outputs)):
        if s is None:
            what = "killed or crashed (no result)"
        elif s[0] == "ok":
            what = "ok"
        else:
            what = "raised:\n" + s[1]
        tail = text[-3000:] if text else ""
        parts.append(f"--- rank {r}: {what}" + (f"\n[output]\n{tail}" if tail and (not s or s[0] != 'ok') else ""))
    return "\n".join(parts)


# ---- every placement combination (test_spmd_*_2rank.py) --------------------
# The 2-rank SPMD tests run each case under every combination of input
# placements, written as codes: "R" Replicate, "S<d>" Shard(d), "P" Partial.

def placement_codes(a, partial=True):
    """The codes an input of a's rank can take on a 1-d mesh; no "P" when
    `partial` is false (bool and integer inputs cannot be partial sums)."""
    codes = ["R"] + [f"S{d}" for d in range(a.ndim)]
    return codes + ["P"] if partial else codes


def placement(code):
    """The placement a code names."""
    import oar.distributed as dist
    if code == "R":
        return dist.Replicate()
    if code == "P":
        return dist.Partial()
    if code.startswith("S") and code[1:].isdigit():
        return dist.Shard(int(code[1:]))
    raise ValueError(f"placement code {code!r}: expected 'R', 'P' or 'S<dim>'")


def as_list(y):
    return list(y) if isinstance(y, (list, tuple)) else [y]


def outputs_and_grads(fn, tensors, weights=None):
    """Runs fn(*tensors); returns (outputs, gradients, placements): the
    outputs as whole numpy arrays, the gradient of sum_i(sum(y_i * w_i))
    per input (None for inputs that need none, or for all when `weights` is
    None: no backward), and each output's placements as text ("dense" for
    a dense output). `weights(ys)` gives one numpy array per output."""
    import oar
    import oar.distributed as dist
    ys = as_list(fn(*tensors))
    grads = [None] * len(tensors)
    if weights is not None:
        loss = None
        for y, w in zip(ys, weights(ys)):
            term = oar.sum(oar.multiply(y, oar.to_tensor(w)))
            loss = term if loss is None else oar.add(loss, term)
        loss.backward()
        for i, t in enumerate(tensors):
            g = None if t.stop_gradient else t.grad
            grads[i] = None if g is None else (dist.unshard_dtensor(g) if g.is_dist() else g).numpy()
    placed = [repr(y.placements) if y.is_dist() else "dense" for y in ys]
    whole = [dist.unshard_dtensor(y) if y.is_dist() else y for y in ys]
    return [y.numpy() for y in whole], grads, placed
