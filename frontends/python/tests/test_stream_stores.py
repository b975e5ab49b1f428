"""Elementwise ops whose output is larger than the last-level cache write it with streaming
(non-temporal) stores (Note [Streaming stores for big outputs], plugins/cpu/cpu_common.h).
OAR_CPU_STREAM_MIN_BYTES=0 streams every output, so these small cases run the streamed path:
each must equal numpy bit for bit (add/mul/sub/div/max/sqrt are exactly rounded), on the
contiguous, scalar-broadcast and row-broadcast loops, with odd lengths (a tail under 16 bytes),
unaligned inputs, f64, in-place writes and 1 and 2 threads. The same script under a threshold
no output reaches checks the normal stores give the same bits."""
import json
import os
import subprocess
import sys

import pytest

_CASES = r"""
import json, numpy as np, oar
rng = np.random.default_rng(0)
out = {}
def check(name, got, want):
    got = got.numpy()
    out[name] = bool(got.shape == want.shape and got.dtype == want.dtype
                     and np.array_equal(got.view(np.uint8), want.view(np.uint8)))
for dt in ("float32", "float64"):
    for n in (1, 3, 5, 4095, 70001, 262147):       # tails of 1..15 bytes and several 4 KB chunks
        a = rng.standard_normal(n).astype(dt); b = rng.standard_normal(n).astype(dt)
        ta, tb = oar.to_tensor(a), oar.to_tensor(b)
        check(f"add_{dt}_{n}", ta + tb, a + b)
        check(f"mul_{dt}_{n}", ta * tb, a * b)
        check(f"div_{dt}_{n}", ta / tb, a / b)
        check(f"max_{dt}_{n}", oar.maximum(ta, tb), np.maximum(a, b))
        check(f"scalar_b_{dt}_{n}", ta * 3.0, a * np.array(3.0, dt))
        check(f"scalar_a_{dt}_{n}", 2.0 - ta, np.array(2.0, dt) - a)
        check(f"square_{dt}_{n}", ta.pow(2), a * a)
        check(f"abs_{dt}_{n}", oar.abs(ta), np.abs(a))
        check(f"sqrt_{dt}_{n}", oar.sqrt(oar.abs(ta)), np.sqrt(np.abs(a)))
    x = rng.standard_normal((257, 771)).astype(dt)
    r = rng.standard_normal((257, 1)).astype(dt)
    w = rng.standard_normal(771).astype(dt)
    tx = oar.to_tensor(x)
    check(f"row_bcast_{dt}", tx * oar.to_tensor(r), x * r)
    check(f"col_bcast_{dt}", tx * oar.to_tensor(w), x * w)
    big = rng.standard_normal(100003).astype(dt)
    tbig = oar.to_tensor(big)
    check(f"unaligned_inputs_{dt}", tbig[1:] + tbig[:-1], big[1:] + big[:-1])
    y = tx.clone()
    y.add_(oar.to_tensor(x))
    check(f"inplace_{dt}", y, x + x)
print(json.dumps(out))
"""


def _run(env_extra):
    env = dict(os.environ, OAR_PLUGIN_PROBE_CACHE="", OAR_LOG_LEVEL="info", **env_extra)
    return subprocess.run([sys.executable, "-c", _CASES], env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("threshold", ["0", str(1 << 40)])
@pytest.mark.parametrize("threads", ["1", "2"])
def test_elementwise_bits_with_and_without_streaming_stores(threshold, threads):
    res = _run({"OAR_CPU_STREAM_MIN_BYTES": threshold, "OAR_NUM_THREADS": threads})
    assert res.returncode == 0, res.stderr
    assert f"elementwise outputs of {threshold} bytes or more use streaming stores" in res.stderr
    results = json.loads(res.stdout.strip().splitlines()[-1])
    wrong = sorted(name for name, ok in results.items() if not ok)
    assert not wrong, f"differ from numpy (threshold {threshold}, {threads} threads): {wrong}"
    assert len(results) == 2 * (6 * 9 + 4)


def test_bad_threshold_is_reported_and_the_cache_size_used():
    res = _run({"OAR_CPU_STREAM_MIN_BYTES": "lots"})
    assert res.returncode == 0, res.stderr
    assert "ignoring OAR_CPU_STREAM_MIN_BYTES='lots' (expected a non-negative integer)" in res.stderr
    assert "use streaming stores" in res.stderr
