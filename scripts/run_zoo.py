"""Runs the model zoo (frontends/python/tests/zoo) through every export mode
and prints a table of what exports: full_graph to_static, the graph-break
run (full_graph=False), and jit.save + jit.load + oar-run, each compared
with eager mode; then the success rate of each mode.

    .venv/bin/python scripts/run_zoo.py                 # all models
    .venv/bin/python scripts/run_zoo.py -k gpt -v       # models whose name holds "gpt", with their breaks
    .venv/bin/python scripts/run_zoo.py --markdown docs/zoo.md
"""
import argparse
import contextlib
import warnings
import datetime
import io
import os
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(REPO, "frontends", "python", "tests"))

import zoo  # noqa: E402
from zoo import harness  # noqa: E402


def _cell(ok, reason, width=None):
    if ok:
        return "yes"
    text = f"no: {reason}"
    if width and len(text) > width:
        text = text[:width - 3] + "..."
    return text


def row_of(r, width=None):
    """The table cells of a harness.Result."""
    if not r.eager_ok:
        return [r.name, _cell(False, r.eager_reason, width), "no (eager fails)", "-", "-"]
    if r.save_load_ok:
        run = "yes" if r.oar_run_ok else ("skipped: " + r.oar_run_reason if r.oar_run_skipped
                                          else _cell(False, "oar-run: " + r.oar_run_reason, width))
        saved = "yes, oar-run " + run if run != "yes" else "yes"
    elif r.full_graph_traced:
        saved = _cell(False, r.save_load_reason, width)
    else:
        saved = "-"
    breaks = "-" if r.n_breaks is None else str(r.n_breaks)
    return [r.name, _cell(r.full_graph_ok, r.full_graph_reason, width),
            _cell(r.graph_break_ok, r.graph_break_reason, width), breaks, saved]


HEADER = ["model", "full_graph export", "graph-break run", "breaks", "save+load+oar-run"]


def rates(results):
    n = len(results)
    counts = [("eager", sum(r.eager_ok for r in results)),
              ("full_graph", sum(r.full_graph_ok for r in results)),
              ("graph_break", sum(r.graph_break_ok for r in results)),
              ("save+load", sum(r.save_load_ok for r in results)),
              ("oar-run", sum(r.oar_run_ok for r in results))]
    return [(mode, k, n) for mode, k in counts]


def print_table(results, verbose):
    rows = [row_of(r, width=70) for r in results]
    widths = [max(len(HEADER[i]), *(len(row[i]) for row in rows)) for i in range(len(HEADER))]
    line = "  ".join(h.ljust(w) for h, w in zip(HEADER, widths))
    print(line)
    print("-" * len(line))
    for r, row in zip(results, rows):
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)))
        if verbose:
            for b in r.breaks:
                print(f"      break: {os.path.relpath(b, REPO) if b.startswith(REPO) else b}")
    print()
    for mode, k, n in rates(results):
        print(f"{mode:12s} {k:3d}/{n} = {100.0 * k / n:5.1f}%")


def _md(text):
    return text.replace("|", "\\|").replace(REPO + os.sep, "")


def write_markdown(results, path, seconds):
    lines = [
        "# Model zoo: dynamic-to-static export",
        "",
        f"Generated on {datetime.date.today().isoformat()} by `scripts/run_zoo.py` ({len(results)} models, "
        f"{seconds:.0f} s). Regenerate with:",
        "",
        "    .venv/bin/python scripts/run_zoo.py --markdown docs/zoo.md",
        "",
        "The models (`frontends/python/tests/zoo/`) are written as their authors write Paddle code, "
        "not adapted to oar. Each runs eagerly (forward, and for a trainable model the backward of the "
        "sum of its float outputs' means) and then, on a fresh build with the same seed, through "
        "`oar.jit.to_static(full_graph=True)`, through `full_graph=False` (graph breaks allowed), and, "
        "when the full-graph forward traces, through `oar.jit.save` + `oar.jit.load` and the C++ `oar-run` "
        "(inference: outputs only); "
        "outputs and parameter gradients must equal eager's (rtol 1e-4, atol 1e-5). "
        "`frontends/python/tests/test_zoo.py` checks the same and lists the known failures in "
        "`EXPECTED_FAIL`.",
        "",
        "| mode | passes |",
        "| --- | --- |",
    ]
    lines += [f"| {mode} | {k}/{n} ({100.0 * k / n:.0f}%) |" for mode, k, n in rates(results)]
    lines += ["", "| " + " | ".join(HEADER) + " |", "|" + " --- |" * len(HEADER)]
    lines += ["| " + " | ".join(_md(c) for c in row_of(r)) + " |" for r in results]
    broken = [r for r in results if r.breaks]
    if broken:
        lines += ["", "## Graph breaks", ""]
        for r in broken:
            for b in r.breaks:
                lines.append(f"- `{r.name}`: {_md(b)}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default=None, help="run only the models whose name contains this substring")
    parser.add_argument("--markdown", default=None, metavar="FILE", help="also write the table to FILE")
    parser.add_argument("-v", "--verbose", action="store_true", help="list each model's graph breaks")
    args = parser.parse_args()
    models = [m for m in zoo.MODELS if args.k is None or args.k in m.name]
    if not models:
        sys.exit(f"run_zoo: no model name contains '{args.k}'")
    start = time.perf_counter()
    results = []
    for model in models:
        # The models' own prints (print_tensor) and oar's warnings would break up the table.
        with contextlib.redirect_stdout(io.StringIO()):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                results.append(harness.check(model))
    seconds = time.perf_counter() - start
    print_table(results, args.verbose)
    print(f"({len(results)} models in {seconds:.1f} s)")
    if args.markdown:
        write_markdown(results, args.markdown, seconds)
        print(f"wrote {args.markdown}")


if __name__ == "__main__":
    main()
