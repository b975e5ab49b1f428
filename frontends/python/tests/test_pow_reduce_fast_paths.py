"""pow with a scalar exponent (Note [pow fast paths] in core/src/ops/elementwise.cpp)
and the CPU reductions (Note [Blocked reduction] in plugins/cpu/kernels_reduce.cpp):
values against numpy, gradients against the analytic derivative and finite
differences, every way Python reaches pow."""
import zlib

import numpy as np
import pytest

import oar

SPECIAL = [-np.inf, -3.5, -2.0, -1.0, -0.5, -0.0, 0.0, 0.25, 1.0, 1.5, 3.0, np.inf, np.nan]
# Exponents of the fast paths (copy, multiplies, division, sqrt, rsqrt,
# repeated squaring), the limits of repeated squaring, and the general op.
EXPONENTS = [1, 2, 3, 4, 5, 7, 8, 13, 32, -1, -2, -3, -4, -7, -32, 0.5, -0.5, 0, 33, -33, 2.5, -1.5, 1e-3]


def _pow_all_ways(x, e):
    """x.pow(e), x ** e, oar.pow(x, e): the three Python spellings (paddle.pow is oar.pow)."""
    return [x.pow(e), x ** e, oar.pow(x, e)]


def _expected(xn, e):
    with np.errstate(all="ignore"):
        want = np.power(xn, xn.dtype.type(e))
    # rsqrt for -0.5, as torch: pow(-0, -0.5) = 1 / sqrt(-0) = -inf and
    # pow(-inf, -0.5) = 1 / sqrt(-inf) = nan, where C's pow gives +inf and 0.
    if e == -0.5:
        want = np.where(np.signbit(xn) & (xn == 0), -np.inf, want)
        want = np.where(xn == -np.inf, np.nan, want)
    return want.astype(xn.dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("e", EXPONENTS)
def test_pow_scalar_exponent_matches_numpy_on_special_values(dtype, e):
    xn = np.array(SPECIAL, dtype=dtype)
    want = _expected(xn, e)
    # Repeated squaring rounds up to 2 log2|e| times; std::pow once.
    rtol = (4e-6 if dtype == "float32" else 1e-14) * (1 + abs(e) // 4)
    for got in _pow_all_ways(oar.to_tensor(xn), e):
        g = got.numpy()
        assert g.dtype == xn.dtype
        np.testing.assert_allclose(g, want, rtol=rtol, atol=0, equal_nan=True, err_msg=f"x^{e}")
        # Signs of zeros and infinities as numpy's (x^3 of -0 is -0, x^-1 of -0 is -inf).
        finite_or_inf = ~np.isnan(want)
        assert (np.signbit(g) == np.signbit(want))[finite_or_inf].all(), (e, g, want)


@pytest.mark.parametrize("e", [2, 3, 5, 8, -2, -3, 0.5, -0.5, -1, 1])
def test_pow_scalar_exponent_matches_numpy_on_random_values(e):
    rng = np.random.default_rng(3)
    xn = rng.uniform(-3, 3, size=(37, 41)).astype(np.float32)
    if e in (0.5, -0.5):
        xn = np.abs(xn) + 0.01
    got = (oar.to_tensor(xn) ** e).numpy()
    np.testing.assert_allclose(got, np.power(xn, np.float32(e)), rtol=2e-6 * (1 + abs(e) // 4))


def test_pow_one_is_a_new_tensor():
    x = oar.to_tensor(np.array([1.0, -2.0], np.float32))
    y = x.pow(1)
    y[0] = 5.0
    assert x.numpy().tolist() == [1.0, -2.0]


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("e", [1, 2, 3, 4, 5, 7])
def test_pow_of_integer_tensors_by_multiplication(dtype, e):
    xn = np.array([-7, -3, -1, 0, 1, 2, 5, 11], dtype=dtype)
    got = (oar.to_tensor(xn) ** e).numpy()
    assert got.dtype == xn.dtype
    np.testing.assert_array_equal(got, np.power(xn, e))


def test_pow_of_integer_tensors_wraps_as_numpy():
    xn = np.array([3, -3, 1000], dtype=np.int32)
    got = oar.to_tensor(xn).pow(7).numpy()
    np.testing.assert_array_equal(got, np.power(xn, 7))  # 1000^7 wraps in int32


@pytest.mark.parametrize("e", [2, 3, 4, 5, -1, -2, -3, 0.5, -0.5, 2.5])
def test_pow_gradients_first_and_second_order(e):
    xs = np.array([0.3, 0.7, 1.3, 2.2], np.float64)
    if float(e).is_integer():
        xs = np.concatenate([xs, -xs])  # negative bases too
    x = oar.to_tensor(xs, stop_gradient=False)
    y = x.pow(e)
    (g,) = oar.grad(y.sum(), x, create_graph=True)
    np.testing.assert_allclose(g.numpy(), e * xs ** (e - 1), rtol=1e-12)
    (g2,) = oar.grad(g.sum(), x)
    np.testing.assert_allclose(g2.numpy(), e * (e - 1) * xs ** (e - 2), rtol=1e-11)
    # And the first derivative against central finite differences of the forward.
    h = 1e-6
    fd = (np.power(xs + h, e) - np.power(xs - h, e)) / (2 * h)
    np.testing.assert_allclose(g.numpy(), fd, rtol=1e-6)


# ---------------------------------------------------------------- reductions


def _ref(op, xn, axis, keepdim):
    x64 = xn.astype(np.float64) if xn.dtype.kind == "f" or xn.dtype == np.dtype("V2") else xn
    fn = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod}[op]
    return fn(x64, axis=axis, keepdims=keepdim)


def _oar_reduce(op, t, axis, keepdim):
    return getattr(t, op)(axis=axis, keepdim=keepdim)


SHAPES_AXES = [
    ((4096, 768), -1), ((7, 13), -1), ((7, 13), 0), ((1000, 3), -1), ((999, 31), 1), ((33, 5, 17), -1),
    ((33, 5, 17), 1), ((33, 5, 17), 0), ((33, 5, 17), (0, 2)), ((5, 40000), -1), ((3, 1, 9), -1),
    ((2, 70000), 0), ((1, 100003), -1), ((64, 2), -1), ((5,), 0),
]


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("shape,axis", SHAPES_AXES)
@pytest.mark.parametrize("keepdim", [False, True])
def test_reductions_match_numpy(op, shape, axis, keepdim):
    # A seed that does not change with PYTHONHASHSEED (hash() of a str does).
    rng = np.random.default_rng(zlib.crc32(repr((op, shape)).encode()))
    lo, hi = (0.9, 1.1) if op == "prod" else (-2, 2)
    xn = rng.uniform(lo, hi, size=shape).astype(np.float32)
    got = _oar_reduce(op, oar.to_tensor(xn), axis, keepdim).numpy()
    want = _ref(op, xn, axis, keepdim)
    assert got.shape == want.shape
    atol = 1e-5
    if op in ("sum", "mean"):
        # f32 partials of up to 32 values per lane, then f64 (Note [Accumulators in
        # registers], kernels_reduce.cpp): the error stays below 4e-9 of sum(|x|)
        # (2e-9 measured over 200 [5, 40000] draws; numpy's own f32 sum: 2e-9 too).
        scale = np.abs(xn.astype(np.float64)).sum(axis=axis, keepdims=keepdim)
        if op == "mean":
            scale = scale / (xn.size // max(want.size, 1))
        atol = 1e-5 + 4e-9 * scale
    err = np.abs(got.astype(np.float64) - want)
    bound = atol + 2e-6 * np.abs(want)
    assert (err <= bound).all(), f"{op}{shape} axis {axis}: max error {err.max():.3e}, bound {np.min(bound):.3e}"


@pytest.mark.parametrize("op", ["sum", "max", "min", "prod"])
@pytest.mark.parametrize("dtype", ["float64", "int32", "int64"])
@pytest.mark.parametrize("shape,axis", [((1000, 3), -1), ((37, 300), -1), ((37, 300), 0), ((4, 9, 65), (0, 2))])
def test_reductions_other_dtypes_match_numpy(op, dtype, shape, axis):
    rng = np.random.default_rng(7)
    if dtype.startswith("int"):
        xn = rng.integers(-3, 4, size=shape).astype(dtype)
    else:
        xn = rng.uniform(0.9 if op == "prod" else -2, 1.1 if op == "prod" else 2, size=shape).astype(dtype)
    got = _oar_reduce(op, oar.to_tensor(xn), axis, False).numpy()
    want = _ref(op, xn, axis, False)
    if dtype.startswith("int") and op in ("sum", "prod"):
        assert got.dtype == np.int64  # integer sums and products write int64 (wrapping)
        np.testing.assert_array_equal(got, want.astype(np.int64))
    elif dtype.startswith("int"):
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-13)


@pytest.mark.parametrize("shape,axis", [((4096, 768), -1), ((1000, 3), -1), ((64, 96), 0)])
def test_bf16_sum_and_max(shape, axis):
    rng = np.random.default_rng(11)
    x = oar.to_tensor(rng.uniform(-2, 2, size=shape).astype(np.float32)).astype("bfloat16")
    xn = x.astype("float32").numpy().astype(np.float64)  # the bf16 values, exactly
    got_sum = x.sum(axis=axis).astype("float32").numpy()
    np.testing.assert_allclose(got_sum, xn.sum(axis=axis), rtol=8e-3, atol=0.05)  # one bf16 rounding
    got_max = x.max(axis=axis).astype("float32").numpy()
    np.testing.assert_array_equal(got_max, xn.max(axis=axis))


def test_reductions_nan_and_inf_rows():
    xn = np.array([[1, np.nan, 2], [np.inf, 1, -1], [-np.inf, np.inf, 0], [3, 4, 5]] * 20, np.float32)
    t = oar.to_tensor(xn)
    np.testing.assert_array_equal(t.sum(-1).numpy(), xn.sum(-1))
    np.testing.assert_array_equal(t.max(-1).numpy(), xn.max(-1))  # NaN wins
    np.testing.assert_array_equal(t.min(-1).numpy(), xn.min(-1))


@pytest.mark.parametrize("shape,axis", [((0, 5), 1), ((0, 5), 0), ((4, 0), 1), ((4, 0, 3), 1)])
def test_empty_sum_and_prod(shape, axis):
    xn = np.zeros(shape, np.float32)
    t = oar.to_tensor(xn)
    for keepdim in (False, True):
        s = t.sum(axis=axis, keepdim=keepdim).numpy()
        np.testing.assert_array_equal(s, xn.sum(axis=axis, keepdims=keepdim))
        p = t.prod(axis=axis, keepdim=keepdim).numpy()
        np.testing.assert_array_equal(p, xn.prod(axis=axis, keepdims=keepdim))


def test_rmsnorm_as_ops_matches_numpy_with_gradients():
    rng = np.random.default_rng(5)
    xn = rng.standard_normal((64, 96)).astype(np.float64)
    wn = rng.standard_normal(96).astype(np.float64)
    x = oar.to_tensor(xn, stop_gradient=False)
    w = oar.to_tensor(wn, stop_gradient=False)
    y = oar.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * x * w
    r = 1 / np.sqrt((xn ** 2).mean(-1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(y.numpy(), r * xn * wn, rtol=1e-12)
    gy = rng.standard_normal(y.shape)
    gx, gw = oar.grad((y * oar.to_tensor(gy)).sum(), [x, w])
    np.testing.assert_allclose(gw.numpy(), (gy * r * xn).sum(0), rtol=1e-11)
    # d/dx of r * x * w: r * w * g - x * r^3 * mean(g * w * x)
    want_gx = r * wn * gy - xn * r ** 3 * (gy * wn * xn).mean(-1, keepdims=True)
    np.testing.assert_allclose(gx.numpy(), want_gx, rtol=1e-10, atol=1e-12)
