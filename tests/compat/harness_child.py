"""Runs one example in this (fresh) process and saves the tensors it leaves.

    python harness_child.py --framework paddle|oar --code ex.py --out res.npz [--seeds 2026,7]
    python harness_child.py --framework paddle|oar --serve    (see serve())

Under oar, `paddle` is aliased to `oar` first. With several seeds the example
is run once per seed in fresh namespaces (paddle only): the harness treats a
value that changes with the seed as random. The output is an .npz with the
arrays and a JSON `__meta__` entry (see save()).
"""
import argparse
import contextlib
import io
import json
import os
import random
import sys
import traceback

import numpy as np

MAX_ITEMS = 64  # elements of a list/dict collected before giving up on it


def to_record(value, tensor_type):
    """(kind, dtype, shape, array) for a tensor-like value, or None."""
    if isinstance(value, tensor_type):
        dtype = str(value.dtype).split(".")[-1].lower()
        t = value.astype("float32") if dtype in ("bfloat16", "float16") else value
        arr = np.asarray(t.numpy())
        return "tensor", dtype, list(value.shape), arr
    if isinstance(value, np.ndarray) and value.dtype != object:
        return "ndarray", str(value.dtype), list(value.shape), value
    # numpy scalars count as the Python number they stand for: np.float64 is a float
    if isinstance(value, (bool, np.bool_)):
        return "scalar", "bool", [], np.asarray(bool(value))
    if isinstance(value, (int, np.integer)):
        return "scalar", "int", [], np.asarray(int(value))
    if isinstance(value, (float, np.floating)):
        return "scalar", "float", [], np.asarray(float(value))
    if isinstance(value, (complex, np.complexfloating)):
        return "scalar", "complex", [], np.asarray(complex(value))
    return None


def collect(namespace, tensor_type):
    """Flatten the namespace into {name: record}; lists/tuples/dicts by item.

    A public name holding nothing tensor-like (a layer, a module, a static
    graph variable) gets an "other" record with its type name.
    """
    out = {}

    def visit(name, value, depth):
        rec = to_record(value, tensor_type)
        if rec is not None:
            out[name] = rec
        elif depth < 3 and isinstance(value, (list, tuple)) and len(value) <= MAX_ITEMS:
            for i, item in enumerate(value):
                visit(f"{name}[{i}]", item, depth + 1)
        elif depth < 3 and isinstance(value, dict) and len(value) <= MAX_ITEMS:
            for k, item in value.items():
                if isinstance(k, (str, int)):
                    visit(f"{name}[{k!r}]", item, depth + 1)

    for name, value in namespace.items():
        if not name.startswith("_"):
            before = len(out)
            try:
                visit(name, value, 0)
            except Exception as e:  # a value that cannot be read is a finding
                out[name] = ("unreadable", type(e).__name__, [], np.asarray(str(e)[:200]))
            if len(out) == before:  # nothing tensor-like: keep the name and its type
                out[name] = ("other", type(value).__name__, [], np.asarray(0))
    return out


def run_once(code, seed, framework):
    """Execute code with fixed seeds; returns (error or None, records)."""
    import paddle  # aliased to oar under oar
    random.seed(seed)
    np.random.seed(seed)
    if hasattr(paddle, "seed"):  # a missing seed() shows up in the examples that call it
        paddle.seed(seed)
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    error = None
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink):
            exec(compile(code, "<example>", "exec"), namespace)
    except BaseException as e:  # SystemExit too: the example failed
        tb = traceback.extract_tb(e.__traceback__)
        line = next((f.lineno for f in reversed(tb) if f.filename == "<example>"), None)
        msg = str(e).strip().splitlines()
        error = {"type": type(e).__name__, "message": msg[0][:500] if msg else "",
                 "name": getattr(e, "name", None) if isinstance(e, (AttributeError, ImportError)) else None,
                 "line": line}
    try:
        if paddle.in_dynamic_mode() is False:
            paddle.disable_static()
    except Exception:
        pass
    return error, collect(namespace, paddle.Tensor)


def save(path, runs):
    """runs: list of (error, records) per seed."""
    meta, arrays = [], {}
    for r, (error, records) in enumerate(runs):
        entry = {"error": error, "values": {}}
        for i, (name, (kind, dtype, shape, arr)) in enumerate(records.items()):
            key = f"r{r}_{i}"
            entry["values"][name] = {"kind": kind, "dtype": dtype, "shape": shape, "key": key}
            arrays[key] = arr
        meta.append(entry)
    np.savez(path, __meta__=np.asarray(json.dumps(meta)), **arrays)


def run_example(code_path, out_path, seeds, framework):
    """Run the example once per seed (stopping at an error) and save the runs."""
    code = open(code_path).read()
    runs = []
    for seed in [int(x) for x in seeds.split(",")]:
        try:
            runs.append(run_once(code, seed, framework))
        except BaseException as e:  # importing the framework itself failed
            runs.append(({"type": type(e).__name__, "message": str(e)[:500], "name": None,
                          "line": None}, {}))
        if runs[-1][0] is not None:
            break
    save(out_path, runs)


def serve(framework):
    """Fork server: import the framework once, then fork a fresh child per request.

    Requests on stdin, one JSON line each: {"code", "out", "seeds", "cwd",
    "timeout"}. One JSON reply line each: {"status": exit status} or
    {"timeout": true}. The child's stdout/stderr go to files in its cwd.
    """
    import select
    import signal
    import time
    replies = os.fdopen(os.dup(1), "w")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    devnull_in = os.open(os.devnull, os.O_RDONLY)
    try:
        import paddle  # noqa: F401  (oar under the alias)
    except BaseException:
        pass  # each example then reports the import error itself
    for line in sys.stdin:
        req = json.loads(line)
        pid = os.fork()
        if pid == 0:
            try:
                os.dup2(devnull_in, 0)  # an example reading stdin must not eat requests
                os.chdir(req["cwd"])
                sys.path[0] = req["cwd"]
                err = os.open("stderr.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                os.dup2(err, 2)
                run_example(req["code"], req["out"], req["seeds"], framework)
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(0)
        deadline = time.monotonic() + req["timeout"]
        reply = None
        while reply is None:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                reply = {"status": status}
            elif time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                reply = {"timeout": True}
            else:
                select.select([], [], [], 0.02)
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--framework", choices=["paddle", "oar"], required=True)
    ap.add_argument("--serve", action="store_true", help="run as a fork server (see serve())")
    ap.add_argument("--code")
    ap.add_argument("--out")
    ap.add_argument("--seeds", default="2026")
    args = ap.parse_args()
    if args.framework == "oar":
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import harness_alias
        harness_alias.install()
        sys.path.pop(0)
    sys.path[0] = os.getcwd()  # the example sees its temp dir, not the harness
    if args.serve:
        serve(args.framework)
        return
    run_example(args.code, args.out, args.seeds, args.framework)
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown: some frameworks hang in atexit


if __name__ == "__main__":
    main()
