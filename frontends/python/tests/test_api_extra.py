"""The top-level functions and Tensor methods of math_extra.py and manip_extra.py, against numpy and hand values."""
import numpy as np
import pytest

import oar
from conftest import assert_close

R = np.random.RandomState(0)
A = R.randn(3, 4).astype(np.float32)
P = (R.rand(3, 4) * 0.8 + 0.1).astype(np.float32)  # in (0.1, 0.9): a domain for asin, atanh, logit


def T(a, **kw):
    return oar.to_tensor(a, **kw)


def num_grad(fn, a, eps=1e-3):
    """Central differences of sum(fn(a)) in float64."""
    a = a.astype(np.float64)
    g = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        hi, lo = a.copy(), a.copy()
        hi[i] += eps
        lo[i] -= eps
        g[i] = (fn(hi).sum() - fn(lo).sum()) / (2 * eps)
    return g


UNARY = [  # name, numpy reference, input
    ("sinh", np.sinh, A), ("cosh", np.cosh, A), ("asin", np.arcsin, P), ("acos", np.arccos, P),
    ("atan", np.arctan, A), ("asinh", np.arcsinh, A), ("acosh", np.arccosh, 1 + P), ("atanh", np.arctanh, P),
    ("deg2rad", np.deg2rad, A), ("rad2deg", np.rad2deg, A), ("sinc", np.sinc, A),
    ("frac", lambda a: a - np.trunc(a), A * 3),
    ("logit", lambda a: np.log(a / (1 - a)), P), ("signbit", np.signbit, A), ("sgn", np.sign, A),
    ("i0", np.i0, A), ("nan_to_num", np.nan_to_num, np.array([1.0, np.nan, np.inf, -np.inf], np.float32)),
    ("isposinf", np.isposinf, np.array([1.0, np.inf, -np.inf], np.float32)),
    ("isneginf", np.isneginf, np.array([1.0, np.inf, -np.inf], np.float32)),
]


@pytest.mark.parametrize("name,ref,a", UNARY, ids=[u[0] for u in UNARY])
def test_unary_vs_numpy(device, name, ref, a):
    out = getattr(oar, name)(T(a))
    assert_close(out, ref(a), rtol=1e-5, atol=1e-5)
    assert_close(getattr(T(a), name)(), out.numpy())


@pytest.mark.parametrize("name,ref,a", [u for u in UNARY if u[0] in ("sinh", "asin", "atan", "acosh", "logit", "sinc")],
                         ids=["sinh", "asin", "atan", "acosh", "logit", "sinc"])
def test_unary_gradients_vs_finite_differences(device, name, ref, a):
    x = T(a, stop_gradient=False)
    getattr(oar, name)(x).sum().backward()
    assert_close(x.grad, num_grad(ref, a), rtol=2e-3, atol=2e-3)


def test_binary_elementwise_vs_numpy(device):
    b = R.randn(3, 4).astype(np.float32)
    assert_close(oar.atan2(T(A), T(b)), np.arctan2(A, b))
    assert_close(oar.hypot(T(A), T(b)), np.hypot(A, b))
    assert_close(oar.logaddexp(T(A), T(b)), np.logaddexp(A, b))
    assert_close(oar.copysign(T(A), T(b)), np.copysign(A, b))
    assert_close(oar.copysign(T([1.0, 2.0]), T([-0.0, 0.0])), [-1.0, 2.0])
    assert_close(oar.heaviside(T([-1.0, 0.0, 2.0]), T([0.5, 0.5, 0.5])), [0.0, 0.5, 1.0])
    assert_close(oar.fmax(T([1.0, np.nan, 3.0]), T([np.nan, 2.0, 1.0])), [1.0, 2.0, 3.0])
    assert_close(oar.fmin(T([1.0, np.nan, 3.0]), T([np.nan, 2.0, 1.0])), [1.0, 2.0, 1.0])
    assert_close(oar.lerp(T(A), T(b), 0.25), A + 0.25 * (b - A))
    assert_close(oar.ldexp(T([1.0, 3.0]), T([2, -1])), [4.0, 1.5])
    m, e = oar.frexp(T([8.0, -3.0, 0.0, 0.75]))
    nm, ne = np.frexp(np.array([8.0, -3.0, 0.0, 0.75]))
    assert_close(m, nm)
    assert_close(e, ne)
    assert_close(oar.nextafter(T([1.0]), T([2.0])), np.nextafter(np.float32(1), np.float32(2)))


def test_atan2_gradient(device):
    b = R.randn(3, 4).astype(np.float32)
    x, y = T(A, stop_gradient=False), T(b, stop_gradient=False)
    oar.atan2(x, y).sum().backward()
    r2 = A.astype(np.float64) ** 2 + b ** 2
    assert_close(x.grad, b / r2, rtol=1e-4, atol=1e-4)
    assert_close(y.grad, -A / r2, rtol=1e-4, atol=1e-4)


def test_round_half_to_even_and_decimals(device):
    x = T([0.5, 1.5, 2.5, -0.5, -1.5, -2.6, 1.234])
    assert_close(oar.round(x), np.round([0.5, 1.5, 2.5, -0.5, -1.5, -2.6, 1.234]))
    assert_close(x.round(), np.round(x.numpy()))
    assert_close(oar.round(T([1.2345, 2.5]), decimals=2), [1.23, 2.5])
    assert oar.round(T([1, 2])).dtype == oar.int64


def test_integer_ops_vs_numpy(device):
    a, b = np.array([12, -7, 5, 0]), np.array([8, 3, 5, 4])
    for name, ref in [("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or), ("bitwise_xor", np.bitwise_xor),
                      ("gcd", np.gcd), ("lcm", np.lcm)]:
        out = getattr(oar, name)(T(a), T(b))
        assert out.dtype == oar.int64
        np.testing.assert_array_equal(out.numpy(), ref(a, b))
    np.testing.assert_array_equal(oar.bitwise_not(T(a)).numpy(), ~a)
    np.testing.assert_array_equal(oar.bitwise_left_shift(T(a), T([1, 1, 2, 0])).numpy(), a << np.array([1, 1, 2, 0]))
    np.testing.assert_array_equal(oar.bitwise_right_shift(T(a), T([1, 1, 2, 0])).numpy(), a >> np.array([1, 1, 2, 0]))
    # A logical shift fills with zeros: -8 >> 1 as unsigned 8-bit is 124.
    assert oar.bitwise_right_shift(T([-8], dtype="int8"), T([1], dtype="int8"), is_arithmetic=False).numpy()[0] == 124
    np.testing.assert_array_equal(oar.bitwise_and(T([True, False]), T([True, True])).numpy(), [True, False])
    with pytest.raises(TypeError, match="bitwise_and: expected integer"):
        oar.bitwise_and(T([1.0]), T([1.0]))
    np.testing.assert_array_equal(oar.isin(T(a), T([5, 0])).numpy(), [False, False, True, True])


def test_counting_vs_numpy(device):
    v = np.array([1, 3, 3, 0, 5])
    np.testing.assert_array_equal(oar.bincount(T(v)).numpy(), np.bincount(v))
    assert_close(oar.bincount(T(v), weights=T([0.5, 1.0, 1.0, 2.0, 1.0]), minlength=7),
                 np.bincount(v, [0.5, 1.0, 1.0, 2.0, 1.0], 7))
    with pytest.raises(ValueError, match="bincount: x must be non-negative"):
        oar.bincount(T([-1, 2]))
    h = oar.histogram(T([1.0, 2.0, 1.0]), bins=4, min=0, max=3)
    assert h.dtype == oar.int64
    np.testing.assert_array_equal(h.numpy(), [0, 2, 1, 0])  # bins of width 0.75 from 0
    np.testing.assert_array_equal(oar.histogram(T([1.0, 2.0, 1.0]), bins=2).numpy(), [2, 1])
    pts = R.rand(20, 2).astype(np.float32)
    hist, edges = oar.histogramdd(T(pts), bins=[2, 3], ranges=[0.0, 1.0, 0.0, 1.0])
    nh, ne = np.histogramdd(pts, bins=[2, 3], range=[(0, 1), (0, 1)])
    assert_close(hist, nh)
    assert_close(edges[1], ne[1])


def test_reductions_vs_numpy(device):
    a = A.copy()
    a[0, 1] = np.nan
    assert_close(oar.nansum(T(a), axis=1), np.nansum(a, 1))
    assert_close(oar.nanmean(T(a)), np.nanmean(a))
    np.testing.assert_array_equal(oar.count_nonzero(T([[0, 1], [2, 3]]), axis=0).numpy(), [1, 2])
    assert_close(oar.trace(T(A[:, :3])), np.trace(A[:, :3]))
    assert_close(oar.cumprod(T(A), dim=1), np.cumprod(A, 1), rtol=1e-5)
    assert_close(oar.logcumsumexp(T(A), axis=0), np.logaddexp.accumulate(A, 0), rtol=1e-5)
    assert_close(oar.diff(T(A), axis=0), np.diff(A, axis=0))
    assert_close(oar.diff(T([1.0, 4.0, 9.0]), n=2, prepend=T([0.0])), np.diff([0.0, 1, 4, 9], 2))
    assert_close(oar.trapezoid(T(A)), np.trapz(A) if hasattr(np, "trapz") else np.trapezoid(A))
    assert_close(oar.trapezoid(T([1.0, 2.0, 3.0]), x=T([0.0, 1.0, 3.0])), 1.5 + 5.0)
    assert_close(oar.cumulative_trapezoid(T([1.0, 2.0, 3.0]), dx=2.0), [3.0, 8.0])


def test_cumprod_gradient_with_a_zero(device):
    a = np.array([2.0, 0.0, 3.0], np.float32)
    x = T(a, stop_gradient=False)
    oar.cumprod(x, 0).sum().backward()
    assert_close(x.grad, num_grad(lambda v: np.cumprod(v), a))


def test_cummax_cummin_last_index_on_ties(device):
    v, i = oar.cummax(T([1.0, 3.0, 3.0, 2.0, 5.0, 5.0, 0.0]))
    assert_close(v, [1, 3, 3, 3, 5, 5, 5])
    np.testing.assert_array_equal(i.numpy(), [0, 1, 2, 2, 4, 5, 5])
    v, i = oar.cummin(T([[3, 1], [2, 2]]), axis=0)
    np.testing.assert_array_equal(v.numpy(), [[3, 1], [2, 1]])
    np.testing.assert_array_equal(i.numpy(), [[0, 0], [1, 0]])


def test_products_vs_numpy(device):
    x, y, z = R.randn(2, 3).astype(np.float32), R.randn(3, 4).astype(np.float32), R.randn(2, 4).astype(np.float32)
    assert_close(oar.addmm(T(z), T(x), T(y), beta=0.5, alpha=2.0), 0.5 * z + 2 * x @ y, rtol=1e-5)
    bx, by = R.randn(2, 2, 3).astype(np.float32), R.randn(2, 3, 2).astype(np.float32)
    assert_close(oar.baddbmm(T(np.ones((2, 2, 2), np.float32)), T(bx), T(by)), 1 + bx @ by, rtol=1e-5)
    assert_close(oar.kron(T(x), T(y)), np.kron(x, y), rtol=1e-5)
    assert_close(oar.inner(T(x), T(z[:, :3])), np.inner(x, z[:, :3]), rtol=1e-5)
    assert_close(oar.mv(T(y), T(z[0])), y @ z[0], rtol=1e-5)
    u, v = R.randn(4, 3).astype(np.float32), R.randn(4, 3).astype(np.float32)
    assert_close(oar.cross(T(u), T(v)), np.cross(u, v), rtol=1e-5, atol=1e-5)
    assert_close(oar.tensordot(T(bx), T(by), axes=[[1, 2], [2, 1]]), np.tensordot(bx, by, axes=([1, 2], [2, 1])),
                 rtol=1e-5)
    assert_close(oar.tensordot(T(x), T(y), axes=1), np.tensordot(x, y, 1), rtol=1e-5)
    assert_close(oar.dist(T(x), T(z[:, :3]), p=3), np.sum(np.abs(x - z[:, :3]) ** 3) ** (1 / 3), rtol=1e-5)
    c = oar.cdist(T(u), T(v[:2]))
    assert_close(c, np.sqrt(((u[:, None] - v[None, :2]) ** 2).sum(-1)), rtol=1e-5)
    assert_close(oar.einsum("ij,jk->ik", T(x), T(y)), x @ y, rtol=1e-5)
    assert_close(oar.einsum("bij,bjk->bki", T(bx), T(by)), np.einsum("bij,bjk->bki", bx, by), rtol=1e-5)
    assert_close(oar.einsum("ii", T(y[:, :3])), np.trace(y[:, :3]), rtol=1e-5)
    assert_close(oar.einsum("i,j", T(x[0]), T(y[0])), np.outer(x[0], y[0]), rtol=1e-5)
    r = oar.renorm(T(x), 2, 0, 1.0)
    assert_close(np.linalg.norm(r.numpy(), axis=1), np.minimum(np.linalg.norm(x, axis=1), 1.0), rtol=1e-4)


def test_scatter_modes_as_paddle(device):
    x = oar.zeros([3, 2])
    upd = T([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    # overwrite=False: the indexed rows are zeroed, then every update for them is added.
    assert_close(oar.scatter(oar.ones([3, 2]), T([1, 1, 0]), upd, overwrite=False), [[3, 3], [3, 3], [1, 1]])
    # overwrite=True: the last update for a row wins.
    assert_close(oar.scatter(oar.ones([3, 2]), T([1, 1, 0]), upd), [[3, 3], [2, 2], [1, 1]])
    assert_close(x.scatter(T([2]), T([[5.0, 6.0]])), [[0, 0], [0, 0], [5, 6]])
    u = T(upd.numpy(), stop_gradient=False)
    oar.scatter(oar.ones([3, 2]), T([1, 1, 0]), u).sum().backward()
    assert_close(u.grad, [[0, 0], [1, 1], [1, 1]])


def test_take_and_put_along_axis(device):
    x = T(np.arange(12, dtype=np.float32).reshape(3, 4))
    assert_close(oar.take_along_axis(x, T([[0], [1]]), 0), [[0, 1, 2, 3], [4, 5, 6, 7]])
    assert_close(oar.take_along_axis(x, T([[0, 1]]), 0, broadcast=False), [[0, 5]])
    assert_close(x.take_along_axis(T([[3], [-1], [0]]), 1), [[3], [7], [8]])
    idx = T([[0, 0, 0, 0], [0, 0, 0, 0]])
    vals = T([[1.0, 2, 3, 4], [5, 6, 7, 8]])
    row0 = lambda r: oar.put_along_axis(x, idx, vals, 0, reduce=r).numpy()[0].tolist()  # noqa: E731
    assert row0("add") == [6, 9, 12, 15]
    assert row0("mul") == [0, 12, 42, 96]
    assert row0("mean") == [2, 3, 4, 5]
    assert row0("amax") == [5, 6, 7, 8]
    assert row0("amin") == [0, 1, 2, 3]
    assert row0("assign") == [5, 6, 7, 8]
    assert oar.put_along_axis(x, idx, vals, 0, reduce="mean", include_self=False).numpy()[0].tolist() == [3, 4, 5, 6]
    assert_close(oar.put_along_axis(x, T([[0], [1], [2]]), 99.0, 1).numpy().diagonal(), [99, 99, 99])
    assert_close(oar.put_along_axis(x, T([[0], [0]]), T([[1.0], [2.0]]), 0, reduce="add")[0], [3, 4, 5, 6])
    with pytest.raises(ValueError, match="put_along_axis: index 5"):
        oar.put_along_axis(x, T([[5]]), 1.0, 0)
    v = T(vals.numpy(), stop_gradient=False)
    oar.put_along_axis(x, idx, v, 0, reduce="add").sum().backward()
    assert_close(v.grad, np.ones((2, 4)))


def test_scatter_reduce_index_ops(device):
    x = T(np.zeros(4, np.float32))
    assert_close(oar.scatter_reduce(x, 0, T([0, 0, 2]), T([1.0, 2.0, 3.0]), "sum"), [3, 0, 3, 0])
    assert_close(oar.scatter_reduce(x + 1, 0, T([0, 0]), T([2.0, 3.0]), "prod", include_self=False), [6, 1, 1, 1])
    m = T(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert_close(oar.index_fill(m, T([0, 2]), 1, -1.0), [[-1, 1, -1], [-1, 4, -1]])
    assert_close(oar.index_add(m, T([1]), 0, T([[1.0, 1.0, 1.0]])), [[0, 1, 2], [4, 5, 6]])
    assert_close(oar.index_put(m, (T([0, 1]), T([2, 0])), T(9.0)), [[0, 1, 9], [9, 4, 5]])
    assert_close(oar.index_put(m, (T([0, 0]), T([1, 1])), T([1.0, 2.0]), accumulate=True)[0], [0, 4, 2])
    assert_close(oar.gather_nd(m, T([[1, 2], [0, 0]])), [5, 0])
    assert_close(oar.scatter_nd_add(m, T([[1, 2], [1, 2]]), T([1.0, 1.0]))[1], [3, 4, 7])
    assert_close(oar.scatter_nd(T([[1], [1]]), T([1.0, 2.0]), [3]), [0, 3, 0])
    assert_close(oar.index_sample(m, T([[2, 0], [1, 1]])), [[2, 0], [4, 4]])
    assert_close(oar.take(m, T([[0, 5], [-1, 2]])), [[0, 5], [5, 2]])
    assert_close(oar.take(m, T([7]), mode="wrap"), [1])
    assert_close(oar.masked_scatter(m, T([[True, False, True], [False, False, True]]), T([7.0, 8.0, 9.0, 10.0])),
                 [[7, 1, 8], [3, 4, 9]])
    assert_close(oar.select_scatter(m, T([7.0, 8.0]), 1, 1), [[0, 7, 2], [3, 8, 5]])
    assert_close(oar.slice_scatter(m, T([[7.0], [8.0]]), [1], [0], [3], [2])[0], [7, 1, 7])
    assert_close(oar.diagonal_scatter(m, T([7.0, 8.0])), [[7, 1, 2], [3, 8, 5]])
    assert_close(oar.masked_fill(m, T([[True, False, False], [False, False, True]]), 0.5),
                 [[0.5, 1, 2], [3, 4, 0.5]])


def test_sorting_and_selection_as_paddle(device):
    x = T([[3.0, 1.0, 2.0], [1.0, 1.0, 0.0]])
    assert_close(oar.sort(x), np.sort(x.numpy()))
    np.testing.assert_array_equal(oar.argsort(T([3.0, 1.0, 2.0]), descending=True).numpy(), [0, 2, 1])
    assert_close(x.sort(axis=0, descending=True), -np.sort(-x.numpy(), 0))
    v, i = oar.topk(T([1, 3, 3, 2]), 2)
    np.testing.assert_array_equal(v.numpy(), [3, 3])
    np.testing.assert_array_equal(i.numpy(), [1, 2])
    v, i = oar.topk(x, 1, largest=False)
    np.testing.assert_array_equal(i.numpy(), [[1], [2]])
    v, i = oar.kthvalue(x, 2, axis=1)
    assert_close(v, [2.0, 1.0])
    np.testing.assert_array_equal(i.numpy(), [2, 0])
    v, i = oar.mode(T([[1, 2, 2, 3, 3], [5, 5, 1, 1, 0]]))
    np.testing.assert_array_equal(v.numpy(), [2, 1])
    np.testing.assert_array_equal(i.numpy(), [2, 3])
    assert_close(oar.median(T([1.0, 2.0, 3.0, 4.0])), 2.5)
    v, i = oar.median(T([[1.0, 2, 3, 4], [4, 3, 2, 1]]), axis=1, mode="min")
    assert_close(v, [2.0, 2.0])
    np.testing.assert_array_equal(i.numpy(), [1, 2])
    assert_close(oar.nanmedian(T([1.0, np.nan, 3.0, 4.0])), 3.0)
    assert np.isnan(oar.median(T([1.0, np.nan, 3.0])).numpy())
    q = R.rand(5, 4).astype(np.float32)
    assert_close(oar.quantile(T(q), 0.3, axis=0), np.quantile(q, 0.3, axis=0), rtol=1e-5)
    assert_close(oar.quantile(T(q), [0.1, 0.9], axis=1, keepdim=True),
                 np.quantile(q, [0.1, 0.9], axis=1, keepdims=True), rtol=1e-5)
    for how in ("lower", "higher", "nearest", "midpoint"):
        assert_close(oar.quantile(T(q), 0.4, interpolation=how), np.quantile(q, 0.4, method=how), rtol=1e-5)
    qn = q.copy()
    qn[0, 0] = np.nan
    assert_close(oar.nanquantile(T(qn), 0.5, axis=0), np.nanquantile(qn, 0.5, axis=0), rtol=1e-5)
    np.testing.assert_array_equal(oar.searchsorted(T([1, 3, 5]), T([3, 4])).numpy(), [1, 2])
    np.testing.assert_array_equal(oar.searchsorted(T([1, 3, 5]), T([3]), right=True).numpy(), [2])
    np.testing.assert_array_equal(oar.bucketize(T([3, 4]), T([1, 3, 5])).numpy(), [1, 2])


def test_sort_gradient_goes_to_the_sorted_positions(device):
    x = T([3.0, 1.0, 2.0], stop_gradient=False)
    (oar.sort(x) * T([1.0, 10.0, 100.0])).sum().backward()
    assert_close(x.grad, [100.0, 1.0, 10.0])


def test_unique_as_paddle(device):
    out, index, inverse, counts = oar.unique(T([2, 3, 3, 1, 5, 3]), return_index=True, return_inverse=True,
                                             return_counts=True)
    np.testing.assert_array_equal(out.numpy(), [1, 2, 3, 5])
    np.testing.assert_array_equal(index.numpy(), [3, 0, 1, 4])
    np.testing.assert_array_equal(inverse.numpy(), [1, 2, 2, 0, 3, 2])
    np.testing.assert_array_equal(counts.numpy(), [1, 1, 3, 1])
    out, inverse, counts = oar.unique_consecutive(T([1, 1, 2, 2, 3, 1, 1, 2]), return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(out.numpy(), [1, 2, 3, 1, 2])
    np.testing.assert_array_equal(inverse.numpy(), [0, 0, 1, 1, 2, 3, 3, 4])
    np.testing.assert_array_equal(counts.numpy(), [2, 2, 1, 2, 1])
    np.testing.assert_array_equal(oar.unique(T([[1, 2], [1, 2], [0, 1]]), axis=0).numpy(), [[0, 1], [1, 2]])


def test_shape_functions_vs_numpy(device):
    gx, gy = oar.meshgrid(T([1, 2]), T([3, 4, 5]))
    nx, ny = np.meshgrid([1, 2], [3, 4, 5], indexing="ij")
    np.testing.assert_array_equal(gx.numpy(), nx)
    np.testing.assert_array_equal(gy.numpy(), ny)
    assert [list(g.shape) for g in oar.meshgrid([T([1, 2]), T([3, 4, 5])])] == [[2, 3], [2, 3]]
    for got, ref in zip(oar.meshgrid(T([1, 2]), T([3, 4, 5]), indexing="xy"), np.meshgrid([1, 2], [3, 4, 5])):
        np.testing.assert_array_equal(got.numpy(), ref)
    assert [p.numpy().tolist() for p in oar.tensor_split(oar.arange(7), 3)] == [[0, 1, 2], [3, 4], [5, 6]]
    assert [p.numpy().tolist() for p in oar.tensor_split(oar.arange(7), [2, 5])] == [[0, 1], [2, 3, 4], [5, 6]]
    c = np.arange(24).reshape(2, 3, 4)
    for name in ("hsplit", "vsplit", "dsplit"):
        parts = getattr(oar, name)(T(c), 2 if name != "hsplit" else [1])
        ref = getattr(np, name)(c, 2 if name != "hsplit" else [1])
        assert [p.numpy().tolist() for p in parts] == [r.tolist() for r in ref]
    with pytest.raises(ValueError, match="vsplit: axis 0 of size 2 cannot be split into 3"):
        oar.vsplit(T(c), 3)
    for name in ("hstack", "vstack", "dstack", "column_stack"):
        np.testing.assert_array_equal(getattr(oar, name)([T([1, 2]), T([3, 4])]).numpy(),
                                      getattr(np, name)([[1, 2], [3, 4]]))
    assert list(oar.atleast_3d(T(1.0)).shape) == [1, 1, 1]
    assert [list(t.shape) for t in oar.atleast_2d(T(1.0), T([1, 2]))] == [[1, 1], [1, 2]]
    assert_close(oar.diag_embed(T([1.0, 2.0])), np.diag([1.0, 2.0]))
    assert_close(oar.diag_embed(T([[1.0, 2.0], [3.0, 4.0]]), offset=1)[1], np.diag([3.0, 4.0], 1))
    np.testing.assert_array_equal(oar.diagflat(T([[1, 2], [3, 4]]), offset=1).numpy(), np.diagflat([1, 2, 3, 4], 1))
    assert_close(oar.diag(T([1.0, 2.0]), padding_value=7), [[1, 7], [7, 2]])
    assert_close(oar.diag(T(A), offset=1), np.diag(A, 1))
    for k in range(-1, 4):
        np.testing.assert_array_equal(oar.rot90(T(c), k, axes=[1, 2]).numpy(), np.rot90(c, k, axes=(1, 2)))
    np.testing.assert_array_equal(oar.repeat_interleave(T([[1, 2], [3, 4]]), 2).numpy(), [1, 1, 2, 2, 3, 3, 4, 4])
    np.testing.assert_array_equal(oar.repeat_interleave(T([[1, 2], [3, 4]]), T([1, 2]), axis=0).numpy(),
                                  [[1, 2], [3, 4], [3, 4]])
    assert list(oar.unflatten(T(c), 2, [2, -1]).shape) == [2, 3, 2, 2]
    np.testing.assert_array_equal(oar.unfold(oar.arange(6), 0, 3, 2).numpy(), [[0, 1, 2], [2, 3, 4]])
    np.testing.assert_array_equal(oar.as_strided(oar.arange(6), [2, 2], [1, 2], 1).numpy(), [[1, 3], [2, 4]])
    np.testing.assert_array_equal(oar.narrow(T(c), 2, 1, 2).numpy(), c[:, :, 1:3])
    assert_close(oar.vander(T([1.0, 2.0, 3.0])), np.vander([1.0, 2.0, 3.0]))
    assert_close(oar.vander(T([1.0, 2.0]), n=3, increasing=True), np.vander([1.0, 2.0], 3, increasing=True))
    np.testing.assert_array_equal(oar.block_diag([T([[1, 2]]), T([[3], [4]])]).numpy(),
                                  [[1, 2, 0], [0, 0, 3], [0, 0, 4]])
    np.testing.assert_array_equal(oar.cartesian_prod([T([1, 2]), T([3, 4])]).numpy(), [[1, 3], [1, 4], [2, 3], [2, 4]])
    np.testing.assert_array_equal(oar.combinations(T([1, 2, 3])).numpy(), [[1, 2], [1, 3], [2, 3]])
    np.testing.assert_array_equal(oar.tril_indices(3, 3).numpy(), np.stack(np.tril_indices(3)))
    np.testing.assert_array_equal(oar.triu_indices(3, 4, 1).numpy(), np.stack(np.triu_indices(3, 1, 4)))
    np.testing.assert_array_equal(oar.swapaxes(T(c), 0, 2).numpy(), np.swapaxes(c, 0, 2))
    np.testing.assert_array_equal(T(c).permute(2, 0, 1).numpy(), c.transpose(2, 0, 1))
    np.testing.assert_array_equal(oar.matrix_transpose(T(c)).numpy(), c.transpose(0, 2, 1))
    np.testing.assert_array_equal(oar.crop(T(c), [1, 2, 2], [1, 1, 1]).numpy(), c[1:2, 1:3, 1:3])
    np.testing.assert_array_equal(oar.multiplex([T([[1, 2], [3, 4]]), T([[5, 6], [7, 8]])], T([[1], [0]])).numpy(),
                                  [[5, 6], [3, 4]])
    assert oar.rank(T(c)).item() == 3
    assert oar.broadcast_shape([2, 1], [3]) == [2, 3]


def test_aliases(device):
    x, y = T([1.0, 4.0]), T([2.0, 2.0])
    assert_close(oar.div(x, y), [0.5, 2.0])
    assert_close(oar.div(T([-7.0]), T([2.0]), rounding_mode="floor"), [-4.0])
    assert_close(oar.div(T([-7.0]), T([2.0]), rounding_mode="trunc"), [-3.0])
    assert_close(oar.sub(x, y, alpha=2), [-3.0, 0.0])
    assert_close(oar.clamp(x, 2, 3), [2.0, 3.0])
    assert oar.eq(x, y).numpy().tolist() == [False, False] and oar.gt(x, y).numpy().tolist() == [False, True]
    assert_close(oar.add_n([x, y, x]), [4.0, 10.0])
    assert oar.is_floating_point(x) and not oar.is_integer(x) and not oar.is_empty(x).item()
    assert_close(x.negative(), [-1.0, -4.0])


def test_size_iinfo_finfo():
    s = oar.ones([2, 3]).shape
    assert isinstance(s, oar.Size) and isinstance(s, list)
    assert s == [2, 3] and s.numel() == 6 and repr(s) == "paddle.Size([2, 3])"
    assert isinstance(s[1:], oar.Size) and s[1:] == [3] and s + [4] == [2, 3, 4]
    i = oar.iinfo(oar.int32)
    assert (i.min, i.max, i.bits, i.dtype) == (-2**31, 2**31 - 1, 32, "int32")
    assert oar.iinfo("uint8").max == 255
    f = oar.finfo(oar.float32)
    assert (f.eps, f.max, f.bits, f.dtype) == (float(np.finfo(np.float32).eps), float(np.finfo(np.float32).max), 32,
                                               "float32")
    assert oar.finfo(oar.bfloat16).eps == 0.0078125
    assert oar.finfo("complex64").dtype == "float32"
    with pytest.raises(ValueError, match="iinfo: expected an integer dtype"):
        oar.iinfo(oar.float32)


@pytest.mark.skipif(not hasattr(oar._C, "random_state"), reason="needs this branch's oar._C (random_state)")
def test_rng_state_round_trip():
    oar.seed(7)
    state = oar.get_rng_state()
    a = oar.rand([4]).numpy()
    b = oar.randn([2]).numpy()
    oar.set_rng_state(state)
    np.testing.assert_array_equal(oar.rand([4]).numpy(), a)
    np.testing.assert_array_equal(oar.randn([2]).numpy(), b)
    assert state[0].current_seed() == 7
    assert oar.get_cuda_rng_state() == []
    with pytest.raises(ValueError, match="set_rng_state: expected the list get_rng_state returned"):
        oar.set_rng_state([1, 2])


def test_random_creation_functions():
    x = oar.ones([3, 4])
    assert_close(oar.logspace(0, 2, 3), [1.0, 10.0, 100.0])
    assert_close(oar.logspace(0, 3, 4, base=2.0), [1.0, 2.0, 4.0, 8.0])
    for t in (oar.rand_like(x), oar.randn_like(x)):
        assert list(t.shape) == [3, 4] and t.dtype == oar.float32
    r = oar.randint_like(x, 2, 5)
    assert r.dtype == oar.float32 and set(np.unique(r.numpy())) <= {2.0, 3.0, 4.0}
    assert set(np.unique(oar.bernoulli(oar.full([100], 0.5)).numpy())) == {0.0, 1.0}
    assert oar.bernoulli(oar.zeros([10])).numpy().sum() == 0
    m = oar.multinomial(oar.to_tensor([[0.0, 1.0, 0.0], [0.5, 0.0, 0.5]]), 2)
    assert m.dtype == oar.int64 and m.numpy()[0, 0] == 1 and sorted(m.numpy()[1].tolist()) == [0, 2]
    assert sorted(oar.multinomial(oar.to_tensor([1.0, 1.0, 1.0]), 3).numpy().tolist()) == [0, 1, 2]
    draws = oar.multinomial(oar.to_tensor([0.0, 3.0, 1.0]), 400, replacement=True).numpy()
    assert 0 not in draws and 0.6 < (draws == 1).mean() < 0.9
    p = oar.poisson(oar.full([2000], 4.0))
    assert p.dtype == oar.float32 and abs(p.numpy().mean() - 4.0) < 0.3
    oar.seed(3)
    a = oar.poisson(oar.full([5], 2.0)).numpy()
    oar.seed(3)
    np.testing.assert_array_equal(oar.poisson(oar.full([5], 2.0)).numpy(), a)


def test_state_dict_order_as_paddle():
    nn = oar.nn

    class Net(nn.Layer):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(1, 1)
            self.register_buffer("buf", oar.ones([1]))
            self.w = self.create_parameter([1])
            self.shared = self.a

    # Paddle: own parameters, own buffers, then each sublayer (a shared one under each name).
    assert list(Net().state_dict()) == ["w", "buf", "a.weight", "a.bias", "shared.weight", "shared.bias"]
    assert list(Net().state_dict(structured_name_prefix="m.")) == ["m.w", "m.buf", "m.a.weight", "m.a.bias",
                                                                  "m.shared.weight", "m.shared.bias"]
    assert [n for n, _ in Net().named_parameters()] == ["w", "a.weight", "a.bias"]


def test_dataloader_call_gives_batches_in_order():
    ds = oar.io.TensorDataset([oar.arange(10).astype("float32").reshape([10, 1])])
    loader = oar.io.DataLoader(ds, batch_size=4, num_workers=2)
    batches = [b[0].numpy().reshape(-1).tolist() for b in loader()]
    assert batches == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_special_functions_vs_math():
    import math
    xs = np.array([-2.5, -0.7, 0.1, 0.5, 1.0, 1.5, 3.3, 10.0], np.float64)
    assert_close(oar.lgamma(T(xs)), [math.lgamma(v) for v in xs], rtol=1e-10, atol=1e-10)
    assert oar.gammaln(T([1.0])).dtype == oar.float32
    # digamma(1) = -Euler's gamma, digamma(x + 1) = digamma(x) + 1 / x
    g = 0.5772156649015329
    assert_close(oar.digamma(T([1.0, 2.0, 0.5], dtype="float64")), [-g, 1 - g, -g - 2 * np.log(2)], rtol=1e-10)
    d = oar.digamma(T(xs)).numpy()
    assert_close(oar.digamma(T(xs + 1)), d + 1 / xs, rtol=1e-9, atol=1e-9)
    # polygamma(1, 1) = pi^2 / 6, polygamma(2, 1) = -2 zeta(3)
    assert_close(oar.polygamma(T([1.0], dtype="float64"), 1), [np.pi ** 2 / 6], rtol=1e-8)
    assert_close(oar.polygamma(T([1.0], dtype="float64"), 2), [-2 * 1.2020569031595942], rtol=1e-8)
    e = np.array([-0.999, -0.5, 0.0, 0.3, 0.9], np.float64)
    y = oar.erfinv(T(e)).numpy()
    assert_close(np.array([math.erf(v) for v in y]), e, rtol=1e-12, atol=1e-12)
    assert oar.erfinv(T([1.0])).numpy()[0] == np.inf
    x = T([0.3, -0.5], stop_gradient=False)
    oar.erfinv(x).sum().backward()
    assert_close(x.grad, np.sqrt(np.pi) / 2 * np.exp(oar.erfinv(T([0.3, -0.5])).numpy() ** 2), rtol=1e-5)
    x = T([0.3, 2.0], stop_gradient=False)
    oar.lgamma(x).sum().backward()
    assert_close(x.grad, oar.digamma(T([0.3, 2.0])).numpy(), rtol=1e-5)
    assert_close(oar.multigammaln(T([2.5]), 2), [np.log(np.pi) / 2 + math.lgamma(2.5) + math.lgamma(2.0)], rtol=1e-6)


def test_distances_windows_and_misc():
    assert_close(oar.pdist(T([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]])), [5.0, 10.0, 5.0])
    assert_close(oar.reduce_as(oar.ones([2, 3]), oar.ones([3])), [2.0, 2.0, 2.0])
    assert_close(oar.hann_window(5), np.hanning(6)[:-1], atol=1e-6)
    assert_close(oar.hamming_window(4, periodic=False), np.hamming(4), atol=1e-6)
    assert_close(oar.kaiser_window(4, beta=12.0), np.kaiser(5, 12.0)[:-1], atol=1e-6)
    assert_close(oar.bartlett_window(5), np.bartlett(6)[:-1], atol=1e-6)
    assert oar.hann_window(4, dtype="float64").dtype == oar.float64
    t = T([1, 2])
    assert oar.as_tensor(t) is t and oar.as_tensor([1.5]).dtype == oar.float32
    assert oar.asarray([1, 2], copy=True).dtype == oar.int64
    assert [b for b in oar.batch(lambda: iter(range(5)), 2)()] == [[0, 1], [2, 3], [4]]
    assert oar.pi == np.pi and oar.float == oar.float32 and oar.long == oar.int64 and oar.int == oar.int32
    np.testing.assert_array_equal(oar.cat([t, t]).numpy(), [1, 2, 1, 2])


def test_more_tensor_methods():
    t = T([1, 2])
    assert t.float().dtype == oar.float32 and t.double().dtype == oar.float64 and t.bool().dtype == oar.bool
    assert t.int().dtype == oar.int32 and t.long().dtype == oar.int64 and t.half().dtype == oar.float16
    assert t.itemsize == 8 and t.ndimension() == 1 and not t.is_cuda and t.get_device() == -1
    assert t.stride() == [1] and t.offset == 0 and t.device == "cpu"
    f = oar.ones([2, 3])
    assert list(f.mT.shape) == [3, 2] and f.is_same_shape(oar.zeros([2, 3]))
    assert t.type_as(f).dtype == oar.float32
    np.testing.assert_array_equal(t.repeat(2).numpy(), [1, 2, 1, 2])
    np.testing.assert_array_equal(t.repeat(2, 1).numpy(), [[1, 2], [1, 2]])
    n = t.new_full([2], 3.0)
    assert n.dtype == oar.int64 and n.numpy().tolist() == [3, 3]
    assert t.new_zeros([2, 2]).numpy().sum() == 0 and t.new_ones(3).numpy().tolist() == [1, 1, 1]
    r = oar.ones([2])
    r.requires_grad = True
    assert not r.stop_gradient and r.requires_grad
    assert [list(p.shape) for p in f.split_with_sizes([1, 1])] == [[1, 3], [1, 3]]
    assert_close(T([[2.0, 0.0], [0.0, 4.0]]).inverse(), [[0.5, 0.0], [0.0, 0.25]])


def test_paddle_range_tensor_namespace_and_fixes():
    np.testing.assert_array_equal(oar.range(5).numpy(), [0, 1, 2, 3, 4, 5])  # end included, float32
    assert oar.range(3, 9, 2.0).dtype == oar.float32 and oar.range(3, 9, 2.0).numpy().tolist() == [3, 5, 7, 9]
    assert oar.tensor.search.argwhere(T([[1.0, 0.0], [0.0, 2.0]])).numpy().tolist() == [[0, 0], [1, 1]]
    from oar.tensor.math import add  # noqa: F401 - paddle.tensor.math is importable
    z = oar.randn([3], dtype="complex64")
    assert z.dtype == oar.complex64
    assert oar.mean(oar.ones([2]), dtype="float64").dtype == oar.float64
    x = oar.arange(12).reshape([3, 4])
    assert oar.median(x, mode="min").item() == 5 and oar.median(x).item() == 5.5
    assert_close(oar.nanmedian(T([[1.0, 2.0], [3.0, np.nan]]), axis=(0, 1)), 2.0)
    a, b = np.arange(24.0).reshape(2, 3, 4), np.arange(36.0).reshape(3, 3, 4)
    assert_close(oar.tensordot(T(a), T(b), axes=[1, 2]), np.tensordot(a, b, axes=([1, 2], [1, 2])))
    assert_close(oar.tensordot(T(a[0]), T(a[1]), axes=0), np.tensordot(a[0], a[1], axes=0))
    out = oar.scatter_add(T([[10, 20, 30], [40, 50, 60]]), 0, oar.zeros((2, 3)).astype("int32"),
                          T([[1, 2, 3], [4, 5, 6]]))
    np.testing.assert_array_equal(out.numpy(), [[15, 27, 39], [40, 50, 60]])
    c = T([1.0, 2.0])
    assert oar.increment(c, 2.0) is c and c.numpy().tolist() == [3.0, 4.0]
    assert_close(oar.linalg.vecdot(T([[1.0, 2.0]]), T([[3.0, 4.0]])), [11.0])


def test_tensor_attributes_as_paddle():
    x = T([[1.1, 2.2, 3.3]])
    assert abs(x.item(2) - 3.3) < 1e-6 and abs(x.item(0, 2) - 3.3) < 1e-6
    t = T([1.0])
    assert t.name.startswith("generated_tensor_")  # Paddle names every tensor
    t.name = "w"
    assert t.name == "w" and t.is_dense() and t.get_strides() == [1] and t.data_ptr() == t.numpy().ctypes.data
    assert oar.ones((4, 3)).fill_diagonal_tensor(oar.zeros((3,))).numpy().tolist() == [
        [0, 1, 1], [1, 0, 1], [1, 1, 0], [1, 1, 1]]
    x = T(1.0, stop_gradient=False)
    (x * x).backward()
    assert x.grad.item() == 2.0
    x.grad = T(3.0)
    assert x.grad.item() == 3.0
    assert_close(T([0.3]).apply(lambda v: 3 * v + 2), [2.9])
    with pytest.raises(RuntimeError, match="Tensor.apply: cannot apply a function to a tensor that requires gradient"):
        T([1.0], stop_gradient=False).apply(lambda v: v)


def test_out_argument_einsum_ellipsis_and_draws():
    x = T([[3.0, 1.0], [2.0, 4.0]])
    o = oar.empty_like(x)
    assert oar.msort(x, out=o) is o and o.numpy().tolist() == [[2.0, 1.0], [3.0, 4.0]]
    assert oar.tensor([1.5], requires_grad=True).stop_gradient is False
    r = np.random.RandomState(0)
    a, b = r.rand(2, 3, 2).astype(np.float32), r.rand(2, 2, 3).astype(np.float32)
    for eq, ops in [("...jk->...kj", [a]), ("...ij,...jk", [a, b]), ("i...->...", [a]), ("ijk,ikj->", [a, b])]:
        assert_close(oar.einsum(eq, *[T(v) for v in ops]), np.einsum(eq, *ops), rtol=1e-5, atol=1e-6)
    v, i = oar.median(T([[1.0, np.nan, 3.0, np.nan]]), axis=1, keepdim=True, mode="min")
    assert np.isnan(v.numpy()[0, 0]) and i.numpy()[0, 0] == 1  # the first NaN, as Paddle
    draws = oar.binomial(oar.full([4000], 10.0), oar.full([4000], 0.3))
    assert draws.dtype == oar.int64 and abs(draws.numpy().mean() - 3.0) < 0.15
    g = oar.standard_gamma(oar.full([4000], 2.0))
    assert g.dtype == oar.float32 and abs(g.numpy().mean() - 2.0) < 0.15


def test_inplace_forms_of_the_extras():
    x = T([0.5, 1.5])
    assert x.sinh_() is x
    assert_close(x, np.sinh([0.5, 1.5]))
    x = T([1.25, 2.5])
    x.round_()
    assert_close(x, [1.0, 2.0])
    z = oar.zeros([3])
    z.scatter_(T([1]), T([5.0]))
    assert_close(z, [0.0, 5.0, 0.0])
    c = T([1.0, 5.0])
    c.clamp_(2.0, 3.0)
    assert_close(c, [2.0, 3.0])


def test_fill_diagonal_as_paddle():
    x = oar.ones([4, 3])
    x.fill_diagonal_(2.0)
    assert x.numpy().tolist() == [[2, 1, 1], [1, 2, 1], [1, 1, 2], [1, 1, 1]]
    x = oar.ones([7, 3])
    x.fill_diagonal_(2.0, wrap=True)
    assert x.numpy()[4].tolist() == [2, 1, 1] and x.numpy()[3].tolist() == [1, 1, 1]
    x = oar.ones([3, 3])
    x.fill_diagonal_(2.0, offset=-1)
    assert x.numpy().tolist() == [[1, 1, 1], [2, 1, 1], [1, 2, 1]]
    y = T([0.5])
    y.apply_(lambda v: v * 4)
    assert_close(y, [2.0])
