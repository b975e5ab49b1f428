"""The compiler's switches, disk cache and failure paths, each in a fresh
Python process (the environment is read by the core and the plugin, and a
process remembers what it compiled): OAR_COMPILER=1, FLAGS_use_cinn=1 with
FLAGS_prim_all=1, OAR_COMPILER_LOG=1, OAR_COMPILER_KEEP_SOURCE=1; a second
process and a second batch size load the cache without compiling; a
truncated or overwritten .so is recompiled, never loaded; two processes
filling one empty cache at once; a failing compiler (OAR_COMPILER_CXX=false)
and a compile past OAR_COMPILER_TIMEOUT fall back to the uncompiled ops
with a warning naming the group; a jit.save'd program with a fusion_group
runs where nothing can be compiled. docs/compiler.md describes them."""
import json
import os
import re
import subprocess
import sys
import textwrap
import time

import pytest

# The child: RMSNorm written as primitives and F.softmax (a composite op),
# traced with a dynamic batch, run at `rows`, compared with numpy (float64).
CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import oar
    import oar.nn.functional as F
    from oar.static import InputSpec
    rows, backend = int(sys.argv[1]), (sys.argv[2] or None)
    oar.set_device("cpu")
    def f(x, w):
        r = x * oar.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
        return r, F.softmax(x)
    sf = oar.jit.to_static(f, input_spec=[InputSpec([None, 96]), InputSpec([96])], backend=backend)
    rng = np.random.default_rng(rows)
    x = rng.standard_normal([rows, 96]).astype(np.float32)
    w = rng.standard_normal([96]).astype(np.float32)
    r, s = sf(oar.to_tensor(x), oar.to_tensor(w))
    x64 = x.astype(np.float64)
    want_r = x64 / np.sqrt((x64 * x64).mean(-1, keepdims=True) + 1e-6) * w
    e = np.exp(x64 - x64.max(-1, keepdims=True))
    want_s = e / e.sum(-1, keepdims=True)
    print("RESULT " + json.dumps({
        "error": max(float(np.abs(r.numpy() - want_r).max()), float(np.abs(s.numpy() - want_s).max())),
        "groups": sf.program.count("fusion_group("),
        "rms_norm_op": " rms_norm(" in sf.program,
        "softmax_op": " softmax(" in sf.program}))
""")

CLEAN = ("OAR_COMPILER", "FLAGS_use_cinn", "FLAGS_prim_all", "OAR_COMPILER_LOG", "OAR_COMPILER_CXX",
         "OAR_COMPILER_TIMEOUT", "OAR_COMPILER_KEEP_SOURCE", "OAR_COMPILER_CACHE_DIR")


def run_child(cache, rows=8, backend="", env=None, timeout=240, wait=True):
    """Runs CHILD with a clean compiler environment plus `env`; returns
    (result dict, stderr) or, with wait=False, the Popen."""
    full = {k: v for k, v in os.environ.items() if k not in CLEAN}
    full.update({"OAR_COMPILER_CACHE_DIR": str(cache), "OAR_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})
    full.update(env or {})
    args = [sys.executable, "-c", CHILD, str(rows), backend]
    if not wait:
        return subprocess.Popen(args, env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    p = subprocess.run(args, env=full, capture_output=True, text=True, timeout=timeout)
    return parse(p.returncode, p.stdout, p.stderr)


def parse(returncode, stdout, stderr):
    assert returncode == 0, f"child failed ({returncode}):\n{stdout}\n{stderr}"
    line = [ln for ln in stdout.splitlines() if ln.startswith("RESULT ")]
    assert line, stdout + stderr
    return json.loads(line[-1][len("RESULT "):]), stderr


def entries(cache):
    """{file name: (size, mtime_ns)} of the cache directory."""
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in cache.iterdir()}


def libraries(cache):
    return sorted(p for p in cache.iterdir() if p.name.endswith(".so"))


def test_without_a_switch_nothing_is_compiled(tmp_path):
    result, _ = run_child(tmp_path)
    assert result["groups"] == 0 and result["error"] < 1e-5
    assert libraries(tmp_path) == []


@pytest.mark.parametrize("env", [{"OAR_COMPILER": "1"}, {"FLAGS_use_cinn": "1", "FLAGS_prim_all": "1"},
                                 {"FLAGS_use_cinn": "true", "FLAGS_prim_all": "true"}])
def test_the_environment_switches_the_compiler_on_and_decomposes_composites(tmp_path, env):
    result, _ = run_child(tmp_path, env=env)
    assert result["error"] < 1e-5
    # the primitives' RMSNorm and F.softmax (decomposed first) fuse (into one
    # group: both reduce the rows of x, so they merge horizontally)
    assert result["groups"] >= 1, result
    assert not result["softmax_op"], "F.softmax was not decomposed under " + str(env)
    assert libraries(tmp_path)


def test_oar_compiler_0_turns_it_off(tmp_path):
    result, _ = run_child(tmp_path, env={"OAR_COMPILER": "0"})
    assert result["groups"] == 0 and libraries(tmp_path) == []


def test_log_prints_groups_and_cache_misses_then_hits(tmp_path):
    _, first = run_child(tmp_path, env={"OAR_COMPILER": "1", "OAR_COMPILER_LOG": "1"})
    lines = [ln for ln in first.splitlines() if ln.startswith("oar compiler:")]
    assert lines, first
    assert re.search(r"g\d+_", first), "the log names no group:\n" + first
    assert re.search(r"miss|compil", first, re.I), first
    _, second = run_child(tmp_path, env={"OAR_COMPILER": "1", "OAR_COMPILER_LOG": "1"})
    assert re.search(r"hit", second, re.I), "a second process logs no cache hit:\n" + second


def test_a_second_process_and_batch_size_load_the_cache_without_compiling(tmp_path):
    env = {"OAR_COMPILER": "1", "OAR_COMPILER_KEEP_SOURCE": "1"}
    result, _ = run_child(tmp_path, rows=8, env=env)
    assert result["groups"] >= 1 and result["error"] < 1e-5
    before = entries(tmp_path)
    libs = [n for n in before if n.endswith(".so")]
    assert libs
    for lib in libs:  # each binary has its checked sidecar and, kept, its source
        key = lib[:-3]
        assert key + ".meta" in before and key + ".cpp" in before, sorted(before)
    assert not [n for n in before if ".tmp." in n], sorted(before)
    for rows in (8, 1, 301):
        result, _ = run_child(tmp_path, rows=rows, env=env)
        assert result["error"] < 1e-5
        assert entries(tmp_path) == before, f"rows={rows} changed the cache"


def corrupt(lib, how):
    data = lib.read_bytes()
    if how == "truncated":
        lib.write_bytes(data[: len(data) // 2])
    else:  # same size, different bytes: only the checksum can tell
        lib.write_bytes(bytes(b ^ 0x5A for b in data[:4096]) + data[4096:])
    return data


@pytest.mark.parametrize("how", ["truncated", "overwritten"])
def test_a_corrupt_cache_entry_is_recompiled_never_loaded(tmp_path, how):
    env = {"OAR_COMPILER": "1"}
    run_child(tmp_path, env=env)
    libs = libraries(tmp_path)
    original = {lib.name: corrupt(lib, how) for lib in libs}
    result, stderr = run_child(tmp_path, env=dict(env, OAR_COMPILER_LOG="1"))
    assert result["error"] < 1e-5 and result["groups"] >= 1, (result, stderr)
    assert "cache hit" not in stderr, "a corrupt entry was loaded:\n" + stderr
    for lib in libs:  # rebuilt: the same compiler and source give a sound binary again
        assert lib.stat().st_size == len(original[lib.name]), f"{lib.name} was not recompiled"
        assert lib.read_bytes()[:4096] == original[lib.name][:4096] or how == "truncated"


def test_two_processes_filling_one_empty_cache_at_once(tmp_path):
    env = {"OAR_COMPILER": "1"}
    children = [run_child(tmp_path, rows=rows, env=env, wait=False) for rows in (5, 6)]
    for child in children:
        out, err = child.communicate(timeout=300)
        result, _ = parse(child.returncode, out, err)
        assert result["error"] < 1e-5 and result["groups"] >= 1
    names = sorted(entries(tmp_path))
    assert not [n for n in names if ".tmp." in n], names
    assert libraries(tmp_path)
    before = entries(tmp_path)
    run_child(tmp_path, env=env)  # a third process finds sound entries
    assert entries(tmp_path) == before


def test_a_failing_compiler_falls_back_with_a_warning_naming_the_group(tmp_path):
    result, stderr = run_child(tmp_path, env={"OAR_COMPILER": "1", "OAR_COMPILER_CXX": "false"})
    assert result["error"] < 1e-5, "the fallback gave wrong values"
    warnings = [ln for ln in stderr.splitlines() if "warning" in ln and "compiler" in ln]
    assert warnings, stderr
    assert re.search(r"g\d+_\w+", "\n".join(warnings)), "no group named in:\n" + stderr
    assert libraries(tmp_path) == []


def test_a_compile_past_the_timeout_falls_back(tmp_path):
    # A "compiler" that states the real one's version (the cache key needs it)
    # and then hangs.
    slow = tmp_path / "slow-cxx"
    slow.write_text('#!/bin/sh\nif [ "$1" = "--version" ]; then exec c++ --version; fi\nexec sleep 60\n')
    slow.chmod(0o755)
    cache = tmp_path / "cache"
    cache.mkdir()
    start = time.monotonic()
    result, stderr = run_child(cache, env={"OAR_COMPILER": "1", "OAR_COMPILER_CXX": str(slow),
                                           "OAR_COMPILER_TIMEOUT": "1"})
    elapsed = time.monotonic() - start
    assert result["error"] < 1e-5
    assert re.search(r"time", stderr, re.I) and re.search(r"g\d+_", stderr), stderr
    assert elapsed < 50, f"the child took {elapsed:.0f} s: the hung compiler was not killed at the timeout"
    assert libraries(cache) == []


SAVE_CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import oar
    from oar.static import InputSpec
    oar.set_device("cpu")
    def rms(x, w):
        return x * oar.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    if sys.argv[1] == "save":
        sf = oar.jit.to_static(rms, input_spec=[InputSpec([None, 64]), InputSpec([64])], backend="CINN")
        oar.jit.save(sf, sys.argv[2])
    else:
        m = oar.jit.load(sys.argv[2])
        rng = np.random.default_rng(0)
        x, w = rng.standard_normal([7, 64]).astype(np.float32), rng.standard_normal([64]).astype(np.float32)
        want = x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-6) * w
        print("RESULT", float(np.abs(m(oar.to_tensor(x), oar.to_tensor(w)).numpy() - want).max()))
""")


def test_a_saved_program_with_fusion_groups_runs_where_it_cannot_compile(tmp_path):
    # Saved with its fusion_group; loaded where the compiler fails and the
    # cache is empty: the group's kernel declines and its primitives run.
    def child(*args, env):
        full = {k: v for k, v in os.environ.items() if k not in CLEAN}
        full.update(env, OAR_NUM_THREADS="1")
        p = subprocess.run([sys.executable, "-c", SAVE_CHILD, *args], env=full, capture_output=True, text=True,
                           timeout=240)
        assert p.returncode == 0, p.stdout + p.stderr
        return p.stdout
    path = str(tmp_path / "saved" / "rms")
    child("save", path, env={"OAR_COMPILER_CACHE_DIR": str(tmp_path / "c1")})
    assert "fusion_group" in open(path + ".json").read()
    out = child("load", path, env={"OAR_COMPILER_CACHE_DIR": str(tmp_path / "c2"), "OAR_COMPILER_CXX": "false"})
    error = float([ln for ln in out.splitlines() if ln.startswith("RESULT")][0].split()[1])
    assert error < 1e-5
    assert not (tmp_path / "c2").exists() or not list((tmp_path / "c2").glob("*.so"))
