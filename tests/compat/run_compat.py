"""Paddle docstring-example compatibility harness (see README.md).

    /work/paddle-venv/bin/python tests/compat/run_compat.py \
        --oar-python /work/main/.venv/bin/python -j 2 [--area nn.functional] \
        [--filter NAME] [--write docs/compat.md]

Runs under a Python with paddle installed: extracts the examples from that
paddle, runs each under paddle (cached) and under oar, compares the tensors
they leave behind, and prints a per-area table with the failures grouped.
"""
import argparse
import collections
import concurrent.futures
import datetime
import hashlib
import importlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness_compare as hc  # noqa: E402
import harness_extract as he  # noqa: E402

HARNESS_VERSION = "3"          # bump when the child's output format changes
PADDLE_SEEDS = "2026,7"        # two seeds: a value that changes with the seed is random
OAR_SEED = "2026"
CHILD = os.path.join(HERE, "harness_child.py")


def child_env(pythonpath):
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    env.update(CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONHASHSEED="0", MPLBACKEND="Agg", GLOG_minloglevel="2",
               PYTHONDONTWRITEBYTECODE="1")
    return env


class ForkServer:
    """A harness_child --serve process: the framework imported once, a fork per example."""

    def __init__(self, python, framework, pythonpath):
        self.cmd = [python, CHILD, "--framework", framework, "--serve"]
        self.env = child_env(pythonpath)
        self.proc = None

    def run(self, tmp, src, res, seeds, timeout):
        """Returns {"status": ...}, {"timeout": True} or {"crash": why}."""
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, env=self.env, text=True,
                                         cwd=tempfile.gettempdir())
        req = {"code": src, "out": res, "seeds": seeds, "cwd": tmp, "timeout": timeout}
        try:
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except (BrokenPipeError, OSError):
            line = ""
        if not line:
            self.close()
            return {"crash": "the fork server died"}
        return json.loads(line)

    def close(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


_servers = threading.local()
USE_FORK_SERVER = True


def run_child(python, framework, code, seeds, timeout, pythonpath):
    """Run one example in a fresh process; returns a list of run results."""
    with tempfile.TemporaryDirectory(prefix=f"compat-{framework}-") as tmp:
        src = os.path.join(tmp, "example.py")
        with open(src, "w") as f:
            f.write(code)
        res = os.path.join(tmp, "result.npz")
        if USE_FORK_SERVER:
            key = (python, framework, pythonpath)
            servers = _servers.__dict__.setdefault("by_key", {})
            server = servers.setdefault(key, ForkServer(python, framework, pythonpath))
            reply = server.run(tmp, src, res, seeds, timeout)
        else:
            reply = run_process(python, framework, tmp, src, res, seeds, timeout, pythonpath)
        if reply.get("timeout"):
            return [{"error": None, "values": {}, "timeout": timeout}]
        if not os.path.exists(res):
            why = reply.get("crash") or f"process ended with status {reply.get('status')}"
            try:
                lines = open(os.path.join(tmp, "stderr.txt"), errors="replace").read().splitlines()
            except OSError:
                lines = []
            last = f": {lines[-1][:300]}" if lines else ""
            return [{"error": {"type": "crash", "message": why + last, "name": None, "line": None},
                     "values": {}}]
        return load_result(res)


def run_process(python, framework, tmp, src, res, seeds, timeout, pythonpath):
    """The same as a fork server request, in a process of its own (--no-fork)."""
    cmd = [python, CHILD, "--framework", framework, "--code", src, "--out", res, "--seeds", seeds]
    with open(os.path.join(tmp, "stderr.txt"), "w") as err:
        proc = subprocess.Popen(cmd, cwd=tmp, env=child_env(pythonpath), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        try:
            return {"status": proc.wait(timeout=timeout)}
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return {"timeout": True}


def load_result(path):
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["__meta__"]))
        for run in meta:
            for v in run["values"].values():
                v["array"] = z[v.pop("key")]
    return meta


def paddle_result(ex, args):
    """paddle's runs of ex, from the cache when there."""
    key = hashlib.sha256((HARNESS_VERSION + PADDLE_SEEDS + ex.code).encode()).hexdigest()[:24]
    path = os.path.join(args.cache_dir, key + ".npz")
    if os.path.exists(path):
        return load_result(path)
    runs = run_child(sys.executable, "paddle", ex.code, PADDLE_SEEDS, args.timeout, None)
    if len(runs) > 1 and runs[0]["error"] is None and runs[1]["error"] is not None:
        # the second seed's run can trip over state the first left behind
        # (a parameter name taken): give it a fresh process of its own
        second_seed = PADDLE_SEEDS.split(",")[1]
        runs[1:] = run_child(sys.executable, "paddle", ex.code, second_seed, args.timeout, None)
    if runs[0].get("timeout"):
        runs = [{"error": {"type": "Timeout", "message": f"no result within {args.timeout} s",
                           "name": None, "line": None}, "values": {}}]
    if not args.no_cache:
        save_runs(path, runs)
    return runs


def save_runs(path, runs):
    """Write runs in the child's .npz format (atomically)."""
    import harness_child
    plain = [(r["error"], {n: (v["kind"], v["dtype"], v["shape"], v["array"])
                           for n, v in r["values"].items()}) for r in runs]
    harness_child.save(path + ".tmp.npz", plain)
    os.replace(path + ".tmp.npz", path)


def evaluate(ex, args):
    """One record for the report: status pass / fail / skip, reason, detail."""
    rec = {"id": ex.id, "area": ex.area, "random": ex.random}
    if ex.skip:
        return dict(rec, status="skip", reason=ex.skip, detail="")
    ref = paddle_result(ex, args)
    if ref[0]["error"] is not None and ref[0]["error"]["type"] == "Timeout":
        return dict(rec, status="skip", reason="times out under paddle", detail="")
    if ref[0]["error"] is not None:
        return dict(rec, status="skip", reason=f"raises under paddle ({ref[0]['error']['type']})",
                    detail="")
    random_names = hc.seed_dependent(ref)
    if args.paddle_only:
        return dict(rec, status="ref", reason="", detail="")
    got = run_child(args.oar_python, "oar", ex.code, OAR_SEED, args.timeout,
                    args.oar_pythonpath)[0]
    bad = hc.compare(ref[0], got, ex.random, random_names)
    rec["random_names"] = sorted(random_names)
    rec["compared"] = sum(v["kind"] != "other" for v in ref[0]["values"].values())
    if bad is None:
        return dict(rec, status="pass", reason="", detail="")
    return dict(rec, status="fail", reason=bad[0], detail=bad[1])


# ---------------------------------------------------------------- reporting

def area_table(records):
    rows, tot = [], collections.Counter()
    for area, _ in he.AREAS:
        rs = [r for r in records if r["area"] == area]
        if not rs:
            continue
        c = collections.Counter(r["status"] for r in rs)
        runnable = c["pass"] + c["fail"]
        tot.update(c)
        rows.append((area, len(rs), c["skip"], runnable, c["pass"]))
    rows.append(("overall", sum(r[1] for r in rows), tot["skip"], tot["pass"] + tot["fail"],
                 tot["pass"]))
    lines = ["| area | examples | not runnable | runnable | pass | pass % |",
             "|---|---:|---:|---:|---:|---:|"]
    for area, n, skip, runnable, passed in rows:
        pct = f"{100.0 * passed / runnable:.1f}" if runnable else "-"
        name = f"**{area}**" if area == "overall" else area
        lines.append(f"| {name} | {n} | {skip} | {runnable} | {passed} | {pct} |")
    return lines


def grouped_failures(records):
    """{reason: {detail key: [ids]}}; for value/dtype/shape failures the key is the id's detail."""
    groups = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in records:
        if r["status"] == "fail":
            key = r["detail"] if r["reason"] in (hc.MISSING, hc.EXCEPTION, hc.TIMEOUT) else ""
            groups[r["reason"]][key].append(r["id"] if key else f"{r['id']} ({r['detail']})")
    return groups


def failure_lines(records):
    lines, groups = [], grouped_failures(records)
    for reason in hc.REASON_ORDER:
        if reason not in groups:
            continue
        details = sorted(groups[reason].items(), key=lambda kv: (-len(kv[1]), kv[0]))
        n = sum(len(ids) for _, ids in details)
        lines.append(f"### {reason} ({n})")
        lines.append("")
        for detail, ids in details:
            if detail:
                lines.append(f"- `{detail}` ({len(ids)}): " + ", ".join(sorted(ids)))
            else:
                lines.extend(f"- {i}" for i in sorted(ids))
        lines.append("")
    return lines


def skip_lines(records):
    by = collections.defaultdict(list)
    for r in records:
        if r["status"] == "skip":
            by[r["reason"]].append(r["id"])
    lines = []
    for reason, ids in sorted(by.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"- {reason} ({len(ids)}): " + ", ".join(sorted(ids)))
    return lines


def check_oar_imports(args):
    """None if `import paddle` works under the alias, else the error's last line."""
    code = (f"import sys; sys.path.insert(0, {HERE!r}); import harness_alias; "
            "harness_alias.install(); import paddle")
    out = subprocess.run([args.oar_python, "-c", code], capture_output=True, text=True,
                         timeout=300, env=child_env(args.oar_pythonpath), cwd=tempfile.gettempdir())
    if out.returncode == 0:
        return None
    lines = out.stderr.strip().splitlines()
    return lines[-1] if lines else f"exit status {out.returncode}"


def oar_description(args):
    """What oar was measured: --oar-label, else the version the oar Python imports."""
    if args.oar_label:
        return args.oar_label
    try:
        out = subprocess.run([args.oar_python, "-c", "import oar; print(oar.__version__)"],
                             capture_output=True, text=True, timeout=120,
                             env=child_env(args.oar_pythonpath))
        return f"oar {out.stdout.strip() or '(unknown version)'} ({args.oar_python})"
    except Exception:
        return f"oar ({args.oar_python})"


def markdown(records, oar, paddle_version, today):
    out = ["# Paddle docstring-example compatibility", "",
           f"Measured {today} with paddle {paddle_version} (CPU) as the reference and "
           f"{oar}, by `tests/compat/run_compat.py` (see tests/compat/README.md).",
           "An example passes when it runs under oar and leaves the same tensors as under paddle "
           "(shape, dtype, values; random ones by shape and dtype only).", ""]
    empty = sum(1 for r in records if r["status"] == "pass" and not r.get("compared"))
    out += area_table(records)
    out += ["", f"{empty} of the passing examples leave no value to compare: they pass by running "
            "without an error.", "", "## Failures", ""] + failure_lines(records)
    out += ["## Not runnable", "", "Skipped by the extraction rules, or failing under paddle "
            "itself on this CPU machine:", ""] + skip_lines(records) + [""]
    return "\n".join(out)


def failures_text(records, paddle_version, today, oar):
    """The lead's hand-out list: missing names by frequency, then every failure by area."""
    lines = [f"# oar compat failures ({today}, paddle {paddle_version}, {oar})", "",
             "An example stops at its first failure: fixing a name can expose the next one.",
             "See one example: /work/paddle-venv/bin/python tests/compat/run_compat.py --show ID;",
             "rerun some: ... run_compat.py --filter 'REGEX' --oar-pythonpath /tmp/ovl-NAME", ""]
    lines += area_table(records) + ["", "## Missing names, most frequent first", ""]
    missing = collections.defaultdict(list)
    for r in records:
        if r["status"] == "fail" and r["reason"] == hc.MISSING:
            missing[r["detail"]].append(r["id"])
    for name, ids in sorted(missing.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        lines.append(f"{len(ids):3d}  {name}   <- {', '.join(sorted(ids))}")
    lines += ["", "## Every failure, by area and reason", ""]
    for area, _ in he.AREAS:
        rs = [r for r in records if r["area"] == area and r["status"] == "fail"]
        if not rs:
            continue
        lines.append(f"### {area} ({len(rs)} failing)")
        for reason in hc.REASON_ORDER:
            for r in sorted((r for r in rs if r["reason"] == reason), key=lambda r: r["id"]):
                lines.append(f"  [{reason}] {r['id']}: {r['detail']}")
        lines.append("")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--oar-python", default="/work/main/.venv/bin/python",
                    help="the Python that imports oar")
    ap.add_argument("--oar-pythonpath", default="",
                    help="PYTHONPATH for the oar runs (e.g. /tmp/ovl-NAME)")
    ap.add_argument("--oar-label", help="how the report names the oar measured (e.g. main@abc123)")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--area", action="append", help="only this area (repeatable)")
    ap.add_argument("--filter", help="only examples whose id matches this regex")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per example run")
    ap.add_argument("--cache-dir", help="paddle results (default ~/.cache/oar-compat/<version>)")
    ap.add_argument("--no-cache", action="store_true", help="do not write paddle results")
    ap.add_argument("--paddle-only", action="store_true", help="only fill the paddle cache")
    ap.add_argument("--no-fork", action="store_true",
                    help="start a new interpreter per example instead of forking one")
    ap.add_argument("--list", action="store_true", help="list the examples and exit")
    ap.add_argument("--show", help="print the code of the example with this id and exit")
    ap.add_argument("--from-json", help="report the results of an earlier run instead of running")
    ap.add_argument("--json", default="/tmp/compat-results.json", help="per-example results")
    ap.add_argument("--write", help="write the markdown report here (e.g. docs/compat.md)")
    ap.add_argument("--failures", help="write the hand-out list of failures here")
    args = ap.parse_args(argv)

    global USE_FORK_SERVER
    USE_FORK_SERVER = not args.no_fork
    import paddle
    version = paddle.__version__
    args.cache_dir = args.cache_dir or os.path.expanduser(f"~/.cache/oar-compat/{version}")
    os.makedirs(args.cache_dir, exist_ok=True)
    examples = he.walk(paddle, importlib)
    if args.area:
        examples = [e for e in examples if e.area in args.area]
    if args.filter:
        examples = [e for e in examples if re.search(args.filter, e.id)]
    if args.show:
        for e in examples:
            if e.id == args.show:
                print(e.code)
        return 0
    if args.list:
        for e in examples:
            print(f"{e.area:14s} {e.id}" + (f"   [not runnable: {e.skip}]" if e.skip else ""))
        return 0

    if args.from_json:
        with open(args.from_json) as f:
            saved = json.load(f)
        return report(saved["records"], args, version, saved.get("measured", "unknown time"),
                      args.oar_label or saved.get("oar", "oar"))
    if not args.paddle_only:
        broken = check_oar_imports(args)
        if broken:
            print(f"run_compat: oar does not import with {args.oar_python}"
                  f"{' and PYTHONPATH=' + args.oar_pythonpath if args.oar_pythonpath else ''}: "
                  f"{broken}", file=sys.stderr)
            return 2
    records = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(evaluate, e, args) for e in examples]
        for i, fut in enumerate(futures):
            r = fut.result()
            records.append(r)
            mark = {"pass": ".", "fail": "F", "skip": "s", "ref": "r"}[r["status"]]
            print(mark, end="\n" if (i + 1) % 80 == 0 else "", flush=True)
    print()
    if args.paddle_only:
        print(f"paddle results cached in {args.cache_dir}")
        return 0
    oar = oar_description(args)
    measured = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with open(args.json, "w") as f:
        json.dump({"paddle": version, "measured": measured, "oar": oar, "records": records}, f,
                  indent=1)
    return report(records, args, version, measured, oar)


def report(records, args, version, measured, oar):
    """Print the table and the failures; write the markdown and hand-out files if asked."""
    print("\n".join(area_table(records)))
    print()
    print("\n".join(failure_lines(records)))
    if args.write:
        with open(args.write, "w") as f:
            f.write(markdown(records, oar, version, measured))
    if args.failures:
        with open(args.failures, "w") as f:
            f.write(failures_text(records, version, measured, oar))
    print(f"results: {args.json}" + (f", report: {args.write}" if args.write else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
