"""f32 matmul on the cpu plugin's two libraries (Note [f32 GEMM on AVX2 machines],
plugins/cpu/kernels_matmul.cpp): oneDNN, and OpenBLAS for the problems where oneDNN's AVX2
sgemm is slow. OAR_CPU_SGEMM=onednn|openblas forces one library; auto (the default) picks by
shape and machine. Every layout the kernel accepts is checked against numpy in f64 under each
setting, so a path that computed nothing or read an operand with the wrong leading dimension
fails here."""
import json
import os
import subprocess
import sys

import pytest

# Cases: (name, a shape, b shape, transpose_x, transpose_y, how b is made).
_CASES = r"""
import json, numpy as np, oar
rng = np.random.default_rng(0)
def check(name, a, b, tx=False, ty=False):
    an, bn = a.numpy().astype(np.float64), b.numpy().astype(np.float64)
    if tx: an = np.swapaxes(an, -1, -2)
    if ty: bn = np.swapaxes(bn, -1, -2)
    ref = np.matmul(an, bn)
    got = oar.matmul(a, b, transpose_x=tx, transpose_y=ty).numpy()
    scale = max(1.0, float(np.abs(ref).max())) if ref.size else 1.0
    err = float(np.abs(got - ref).max()) / scale if ref.size else 0.0
    out[name] = [list(got.shape), err]
def r(*shape):
    return oar.to_tensor(rng.standard_normal(shape).astype(np.float32))
out = {}
check("nn_pow2", r(64, 784), r(784, 1024))            # the auto rule's case: rows 1024 floats apart
check("nn_other", r(64, 784), r(784, 1000))
check("nt", r(64, 1024), r(784, 1024), ty=True)
check("tn", r(784, 64), r(784, 1024), tx=True)
check("tt", r(300, 64), r(512, 300), tx=True, ty=True)
check("batched", r(3, 40, 256), r(3, 256, 512))
check("broadcast_b", r(4, 33, 128), r(1, 128, 512))
check("broadcast_a", r(1, 17, 64), r(5, 64, 1024))
wide = r(256, 2048)
check("column_slice", r(96, 256), wide[:, :512])       # b's rows 2048 floats apart, N = 512
check("column_slice_offset", r(96, 256), wide[:, 512:1536])
check("row_slice", r(64, 600)[:, 88:], r(512, 1024))  # a strided (rows 600 apart)
check("m1", r(1, 512), r(512, 1024))
check("k1", r(512, 1), r(1, 2048))
check("n1", r(512, 700), r(700, 1))
check("empty_m", r(0, 512), r(512, 1024))
print(json.dumps(out))
"""


def _run(env_extra):
    env = dict(os.environ, OAR_PLUGIN_PROBE_CACHE="", **env_extra)
    return subprocess.run([sys.executable, "-c", _CASES], env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("backend", ["onednn", "openblas", "auto"])
def test_f32_matmul_matches_numpy_on_each_library(backend):
    for threads in ("1", "2"):
        out = _run({"OAR_CPU_SGEMM": backend, "OAR_NUM_THREADS": threads})
        assert out.returncode == 0, out.stderr
        results = json.loads(out.stdout.strip().splitlines()[-1])
        for name, (shape, err) in results.items():
            assert err < 2e-5, f"{backend}, {threads} thread(s), {name} {shape}: relative error {err}"
        assert results["nn_pow2"][0] == [64, 1024] and results["empty_m"][0] == [0, 1024]
        assert results["broadcast_a"][0] == [5, 17, 1024]


def _has_avx512():
    try:
        with open("/proc/cpuinfo") as f:
            return " avx512f" in f.read()
    except OSError:
        return None


def test_the_choice_is_logged_and_follows_the_machine():
    code = "import oar; oar.matmul(oar.ones([2, 2]), oar.ones([2, 2]))"
    env = dict(os.environ, OAR_LOG_LEVEL="info", OAR_PLUGIN_PROBE_CACHE="")
    env.pop("OAR_CPU_SGEMM", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stderr.splitlines() if "cpu plugin: f32 matmul" in line]
    assert lines, out.stderr
    avx512 = _has_avx512()
    if avx512 is True:
        assert "f32 matmul on oneDNN (AVX-512)" in lines[0]
    elif avx512 is False:
        assert "on OpenBLAS where the right operand's rows are a multiple of 512 floats apart" in lines[0]
    for value, says in (("onednn", "f32 matmul on oneDNN (OAR_CPU_SGEMM=onednn)"),
                        ("openblas", "f32 matmul on OpenBLAS (OAR_CPU_SGEMM=openblas)")):
        env["OAR_CPU_SGEMM"] = value
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and says in out.stderr, out.stderr


def test_a_bad_value_is_named_and_ignored():
    code = "import oar; print(oar.matmul(oar.ones([2, 3]), oar.ones([3, 2])).numpy().tolist())"
    env = dict(os.environ, OAR_CPU_SGEMM="mkl", OAR_PLUGIN_PROBE_CACHE="")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "[[3.0, 3.0], [3.0, 3.0]]" in out.stdout
    assert "ignoring OAR_CPU_SGEMM='mkl' (expected auto, onednn or openblas)" in out.stderr
