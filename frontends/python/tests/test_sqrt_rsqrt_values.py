"""sqrt and rsqrt on cpu (issue 20 item 2): values after the speed fix.
rsqrt and sqrt of 4096 floats took 11 us against exp's 3.4 us: with errno, 1 / std::sqrt compiled
to a scalar sqrtss plus a sqrtf call per element. The cpu plugin builds
with -fno-math-errno (plugins/cpu/CMakeLists.txt) so they vectorize; the
values must not change (IEEE sqrt and division are correctly rounded).
Their speed is measured by bench/bench_eager.py (rows rsqrt_4096*), not here."""
import numpy as np
import pytest

import oar


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sqrt_and_rsqrt_values(dtype):
    a = np.array([4.0, 2.0, 1e-30, 0.0, -0.0, -1.0, np.inf, np.nan, 1e30] * 512, dtype=dtype)
    x = oar.to_tensor(a, place="cpu")
    with np.errstate(divide="ignore", invalid="ignore"):
        want_sqrt = np.sqrt(a)
        want_rsqrt = 1 / np.sqrt(a)
    got_sqrt, got_rsqrt = oar.sqrt(x).numpy(), oar.rsqrt(x).numpy()
    np.testing.assert_array_equal(got_sqrt, want_sqrt)      # bit for bit, NaN where numpy has NaN
    np.testing.assert_array_equal(got_rsqrt, want_rsqrt)
    assert np.signbit(got_sqrt[4]) and got_rsqrt[4] == -np.inf  # sqrt(-0) = -0, 1/sqrt(-0) = -inf
