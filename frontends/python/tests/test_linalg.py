"""oar.linalg against numpy.linalg on random well-conditioned batches; gradients
by central differences in float64 (second order for inv, solve, det); the
errors for singular and non-positive-definite inputs and undefined gradients."""
import numpy as np
import pytest

import oar
import oar.linalg as LA

rng = np.random.default_rng(7)
DTYPES = ["float32", "float64"]
TOL = {"float32": dict(rtol=2e-4, atol=2e-4), "float64": dict(rtol=1e-10, atol=1e-10)}


@pytest.fixture(autouse=True)
def on_cpu():
    previous = oar._C.get_device()
    oar.set_device("cpu")
    yield
    oar._C.set_device(previous)


def general(*shape):
    """Batches of well-conditioned square matrices: randn + n I."""
    n = shape[-1]
    return rng.standard_normal(shape) + n * np.eye(n)


def spd(*shape):
    m = rng.standard_normal(shape)
    return m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])


def t(a, dtype="float64", grad=False):
    return oar.to_tensor(np.asarray(a, dtype=dtype), stop_gradient=not grad)


def close(actual, expected, dtype="float64", scale=1.0):
    tol = TOL[dtype]
    a = actual.numpy() if isinstance(actual, oar.Tensor) else np.asarray(actual)
    np.testing.assert_allclose(a, expected, rtol=tol["rtol"] * scale, atol=tol["atol"] * scale)


# ---------------------------------------------------------------- values ---

@pytest.mark.parametrize("dtype", DTYPES)
def test_inv_solve_det_slogdet(dtype):
    a, b = general(2, 3, 4, 4), rng.standard_normal((2, 3, 4, 2))
    close(LA.inv(t(a, dtype)), np.linalg.inv(a), dtype, 10)
    close(oar.inverse(t(a, dtype)), np.linalg.inv(a), dtype, 10)
    close(LA.solve(t(a, dtype), t(b, dtype)), np.linalg.solve(a, b), dtype, 10)
    close(LA.det(t(a, dtype)), np.linalg.det(a), dtype, 100)
    g = rng.standard_normal((2, 3, 4, 4))  # some negative determinants
    sign, logabs = np.linalg.slogdet(g)
    out = LA.slogdet(t(g, dtype))
    assert out.shape == [2, 2, 3]
    close(out[0], sign, dtype)
    close(out[1], logabs, dtype, 10)
    assert (sign < 0).any()


def test_solve_broadcast_vector_and_right():
    a, b = general(3, 4, 4), rng.standard_normal((2, 1, 4, 3))
    close(LA.solve(t(a), t(b)), np.linalg.solve(a, b))  # batch dims [3] and [2, 1] -> [2, 3]
    v = rng.standard_normal(4)
    close(LA.solve(t(a[0]), t(v)), np.linalg.solve(a[0], v))
    c = rng.standard_normal((3, 2, 4))
    close(LA.solve(t(a), t(c), left=False), c @ np.linalg.inv(a))


def test_det_of_small_integers_is_exact_and_singular_is_zero():
    close(LA.det(t([[2.0, 1.0], [7.0, 4.0]])), 1.0)
    close(LA.det(t([[1.0, 2.0], [2.0, 4.0]])), 0.0)
    out = LA.slogdet(t([[1.0, 2.0], [2.0, 4.0]])).numpy()
    assert out[0] == 0 and out[1] == -np.inf


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(dtype, upper):
    a = spd(3, 5, 5)
    ref = np.linalg.cholesky(a)
    out = LA.cholesky(t(a, dtype), upper=upper)
    close(out, np.swapaxes(ref, -1, -2) if upper else ref, dtype, 10)
    close(oar.cholesky(t(a, dtype)), ref, dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 5, 3), (2, 3, 5), (4, 4)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr(dtype, shape, mode):
    a = rng.standard_normal(shape)
    q, r = LA.qr(t(a, dtype), mode=mode)
    qn, rn = np.linalg.qr(a, mode=mode)
    assert q.shape == list(qn.shape) and r.shape == list(rn.shape)
    q, r = q.numpy(), r.numpy()
    close(q @ r, a, dtype, 10)
    close(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(q.shape[-1]), q.shape[:-2] + (q.shape[-1],) * 2),
          dtype, 10)
    close(np.abs(r), np.abs(rn), dtype, 10)  # the same Householder factorization, up to row signs
    assert np.all(np.tril(r, -1) == 0)
    close(LA.qr(t(a, dtype), mode="r"), r[..., :min(shape[-2:]), :], dtype)  # R of "reduced"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 6, 4), (3, 4, 6), (5, 5)])
@pytest.mark.parametrize("full", [False, True])
def test_svd(dtype, shape, full):
    a = rng.standard_normal(shape)
    u, s, vh = LA.svd(t(a, dtype), full_matrices=full)
    un, sn, vhn = np.linalg.svd(a, full_matrices=full)
    assert u.shape == list(un.shape) and vh.shape == list(vhn.shape)
    close(s, sn, dtype, 10)
    k = min(shape[-2:])
    u, s, vh = u.numpy(), s.numpy(), vh.numpy()
    close((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a, dtype, 10)
    close(np.swapaxes(u, -1, -2) @ u, np.broadcast_to(np.eye(u.shape[-1]), u.shape[:-2] + (u.shape[-1],) * 2),
          dtype, 10)
    close(vh @ np.swapaxes(vh, -1, -2),
          np.broadcast_to(np.eye(vh.shape[-2]), vh.shape[:-2] + (vh.shape[-2],) * 2), dtype, 10)
    close(LA.svdvals(t(a, dtype)), sn, dtype, 10)


@pytest.mark.parametrize("shape", [(160, 130), (130, 160)])
def test_svd_eigh_large(shape):
    # Orders >= 128 run LAPACK on OpenBLAS's threads (Note [LAPACK threads]).
    a = rng.standard_normal(shape)
    u, s, vh = LA.svd(t(a, "float64"), full_matrices=True)
    np.testing.assert_allclose(s.numpy(), np.linalg.svd(a, compute_uv=False), rtol=1e-10, atol=1e-10)
    k = min(shape)
    np.testing.assert_allclose((u.numpy()[:, :k] * s.numpy()) @ vh.numpy()[:k], a, atol=1e-10)
    np.testing.assert_allclose(u.numpy().T @ u.numpy(), np.eye(shape[0]), atol=1e-10)
    np.testing.assert_allclose(vh.numpy() @ vh.numpy().T, np.eye(shape[1]), atol=1e-10)
    sym = a[:k, :k] + a[:k, :k].T
    w, v = LA.eigh(t(sym, "float64"))
    np.testing.assert_allclose(w.numpy(), np.linalg.eigvalsh(sym), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose((v.numpy() * w.numpy()) @ v.numpy().T, sym, atol=1e-10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(dtype, uplo):
    a = rng.standard_normal((3, 5, 5))
    sym = a + np.swapaxes(a, -1, -2)
    # Only the UPLO triangle is read: garbage in the other one changes nothing.
    junk = np.triu(a, 1) if uplo == "L" else np.tril(a, -1)
    w, v = LA.eigh(t(np.where(junk != 0, 99.0, sym), dtype), UPLO=uplo)
    wn = np.linalg.eigvalsh(sym)
    close(w, wn, dtype, 10)
    v = v.numpy()
    close((v * w.numpy()[..., None, :]) @ np.swapaxes(v, -1, -2), sym, dtype, 10)
    close(LA.eigvalsh(t(sym, dtype)), wn, dtype, 10)
    close(oar.eigvalsh(t(sym, dtype)), wn, dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("unit", [False, True])
def test_triangular_solve(dtype, upper, transpose, unit):
    a, b = general(2, 4, 4), rng.standard_normal((2, 4, 3))
    tri = np.triu(a) if upper else np.tril(a)
    if unit:
        idx = np.arange(4)
        tri[..., idx, idx] = 1.0
    op = np.swapaxes(tri, -1, -2) if transpose else tri
    # The other triangle of x (and with unitriangular its diagonal, about 4 here) is not read.
    x = a
    out = LA.triangular_solve(t(x, dtype), t(b, dtype), upper=upper, transpose=transpose, unitriangular=unit)
    close(out, np.linalg.solve(op, b), dtype, 10)


def test_triangular_solve_paddle_example():
    x = t([[1, 1, 1], [0, 2, 1], [0, 0, -1]])
    y = t([[0], [-9], [5]])
    close(LA.triangular_solve(x, y, upper=True), [[7], [-2], [-5]])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 6, 3), (2, 3, 5)])
def test_lstsq(dtype, shape):
    a, b = rng.standard_normal(shape), rng.standard_normal(shape[:-1] + (2,))
    sol, res, rank, sv = LA.lstsq(t(a, dtype), t(b, dtype), driver="gelsd")
    for i in range(shape[0]):
        ref, ref_res, ref_rank, ref_sv = np.linalg.lstsq(a[i], b[i], rcond=None)
        close(sol[i], ref, dtype, 10)
        close(sv[i], ref_sv, dtype, 10)
        assert int(rank[i].item()) == ref_rank
        if shape[-2] > shape[-1]:
            close(res[i], ref_res, dtype, 100)
    if shape[-2] <= shape[-1]:
        assert res.shape == [0]


def test_lstsq_rank_deficient():
    a = rng.standard_normal((6, 2)) @ rng.standard_normal((2, 4))  # rank 2
    b = rng.standard_normal((6, 1))
    sol, res, rank, _ = LA.lstsq(t(a), t(b))
    assert int(rank.item()) == 2 and res.shape == [0]
    close(sol, np.linalg.lstsq(a, b, rcond=None)[0], scale=1e3)


@pytest.mark.parametrize("dtype", DTYPES)
def test_pinv(dtype):
    a = rng.standard_normal((2, 5, 3))
    close(LA.pinv(t(a, dtype)), np.linalg.pinv(a), dtype, 10)
    low = rng.standard_normal((4, 2)) @ rng.standard_normal((2, 4))  # rank 2: the cutoff matters
    close(LA.pinv(t(low), rcond=1e-10), np.linalg.pinv(low, rcond=1e-10), scale=1e3)
    s = spd(4, 4) - 6 * np.eye(4)  # symmetric, indefinite
    close(LA.pinv(t(s, dtype), hermitian=True), np.linalg.pinv(s, hermitian=True), dtype, 100)


@pytest.mark.parametrize("n", [0, 1, 2, 5, -1, -3])
def test_matrix_power(n):
    a = general(2, 3, 3) / 3
    close(LA.matrix_power(t(a), n), np.linalg.matrix_power(a, n), scale=100)


@pytest.mark.parametrize("p", [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])
def test_matrix_norms(p):
    a = rng.standard_normal((3, 4, 5))
    ref = np.linalg.norm(a, ord=p, axis=(1, 2))
    close(LA.norm(t(a), p=p, axis=[1, 2]), ref)
    close(LA.norm(t(a), p=p, axis=[1, 2], keepdim=True), np.linalg.norm(a, ord=p, axis=(1, 2), keepdims=True))
    close(LA.norm(t(a), p=p, axis=[2, 0]), np.linalg.norm(a, ord=p, axis=(2, 0)))


@pytest.mark.parametrize("p", [None, 2, 1, 0, 3, 0.5, np.inf, -np.inf])
def test_vector_norms(p):
    a = rng.standard_normal((3, 4))
    a[0, 1] = 0.0
    close(LA.norm(t(a), p=p, axis=1), np.linalg.norm(a, ord=p, axis=1))
    close(LA.norm(t(a), p=p, axis=0, keepdim=True), np.linalg.norm(a, ord=p, axis=0, keepdims=True))
    flat = np.linalg.norm(a.ravel(), ord=p)
    close(LA.norm(t(a), p=p), flat)  # axis None: x taken as a vector (Paddle)
    close(LA.vector_norm(t(a), p=2 if p is None else p), flat)
    close(LA.matrix_norm(t(a)), np.linalg.norm(a, "fro"))


def test_matrix_rank():
    low = rng.standard_normal((3, 6, 2)) @ rng.standard_normal((3, 2, 5))
    full = rng.standard_normal((6, 5))
    assert LA.matrix_rank(t(low)).numpy().tolist() == [2, 2, 2]
    assert int(LA.matrix_rank(t(full)).item()) == 5
    assert LA.matrix_rank(t(low)).dtype == oar.int64
    sym = low[0] @ low[0].T
    assert int(LA.matrix_rank(t(sym), hermitian=True).item()) == np.linalg.matrix_rank(sym, hermitian=True)
    assert int(LA.matrix_rank(t(np.diag([5.0, 1.0, 1e-3])), tol=1e-2).item()) == 2
    assert int(LA.matrix_rank(t(np.diag([5.0, 1.0, 1e-3])), atol=0.5, rtol=0.0).item()) == 2
    assert int(LA.matrix_rank(t(np.diag([5.0, 1.0, 1e-3])), rtol=0.5).item()) == 1


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", 1, -1, np.inf, -np.inf])
def test_cond(p):
    a = general(2, 4, 4)
    close(LA.cond(t(a), p=p), np.linalg.cond(a, p=p), scale=1e3)


def test_multi_dot():
    a, b, c = rng.standard_normal((2, 3)), rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    close(LA.multi_dot([t(a), t(b), t(c)]), np.linalg.multi_dot([a, b, c]))


# ------------------------------------------------------------- gradients ---

def numeric_grad(fn, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = (fn(xp) - fn(xm)) / (2 * eps)
    return g


def check_grad(f, *arrays, rtol=1e-5, atol=1e-6, eps=1e-6):
    """f maps float64 tensors to a scalar tensor; every input's gradient against central differences."""
    tensors = [t(a, grad=True) for a in arrays]
    grads = oar.grad(f(*tensors), tensors)
    for k, a in enumerate(arrays):
        def scalar(v, k=k):
            return f(*[t(v if j == k else arrays[j]) for j in range(len(arrays))]).item()
        np.testing.assert_allclose(grads[k].numpy(), numeric_grad(scalar, a.copy(), eps), rtol=rtol, atol=atol)


def check_second_order(f, a, rtol=1e-4, atol=1e-6):
    """The gradient of <grad f(a), w> against central differences of grad f (w fixed, random)."""
    w = rng.standard_normal(a.shape)

    def first(v, create_graph=False):
        x = t(v, grad=True)
        (g,) = oar.grad(f(x), [x], create_graph=create_graph)
        return x, g

    x, g = first(a, create_graph=True)
    (gg,) = oar.grad(oar.sum(g * t(w)), [x])
    ref = numeric_grad(lambda v: float(np.sum(first(v)[1].numpy() * w)), a.copy())
    np.testing.assert_allclose(gg.numpy(), ref, rtol=rtol, atol=atol)


def weights(*shape):
    return t(rng.standard_normal(shape))


def sym(x):
    return (x + oar.transpose(x, [0, 2, 1])) * 0.5


def test_grad_inv_solve_det_slogdet():
    a, b = general(2, 3, 3), rng.standard_normal((2, 3, 2))
    w = weights(2, 3, 3)
    check_grad(lambda x: oar.sum(LA.inv(x) * w), a)
    wb = weights(2, 3, 2)
    check_grad(lambda x, y: oar.sum(LA.solve(x, y) * wb), a, b)
    check_grad(lambda x: oar.sum(LA.det(x) * t([1.5, -0.5])), a)
    check_grad(lambda x: oar.sum(LA.slogdet(x - t(6 * np.eye(3)))[1] * t([1.5, -0.5])), a)


def test_grad_solve_broadcast():
    a, b = general(3, 3), rng.standard_normal((2, 3, 2))
    wb = weights(2, 3, 2)
    check_grad(lambda x, y: oar.sum(LA.solve(x, y) * wb), a, b)


def test_second_order_inv_solve_det():
    a = general(2, 3, 3)
    w = weights(2, 3, 3)
    check_second_order(lambda x: oar.sum(LA.inv(x) * w), a)
    b = t(rng.standard_normal((2, 3, 2)))
    wb = weights(2, 3, 2)
    check_second_order(lambda x: oar.sum(LA.solve(x, b) * wb), a)
    check_second_order(lambda x: oar.sum(LA.det(x) * t([1.5, -0.5])), a)


@pytest.mark.parametrize("upper", [False, True])
def test_grad_cholesky(upper):
    a = spd(2, 4, 4)
    w = weights(2, 4, 4)
    check_grad(lambda x: oar.sum(LA.cholesky(sym(x), upper=upper) * w), a)


@pytest.mark.parametrize("shape", [(2, 5, 3), (4, 4)])
def test_grad_qr(shape):
    a = rng.standard_normal(shape)
    k = min(shape[-2:])
    wq, wr = weights(*shape[:-1], k), weights(*shape[:-2], k, shape[-1])
    check_grad(lambda x: oar.sum(LA.qr(x)[0] * wq) + oar.sum(LA.qr(x)[1] * wr), a)
    check_grad(lambda x: oar.sum(LA.qr(x, mode="r") * wr), a)


def _gauge_free(u, c):
    """sum_j c_j u_j u_j^T: does not change when a column of u flips sign."""
    return oar.matmul(u * c, oar.transpose(u, [0, 2, 1]))


@pytest.mark.parametrize("shape", [(2, 5, 3), (2, 3, 5), (2, 4, 4)])
@pytest.mark.parametrize("full", [False, True])
def test_grad_svd(shape, full):
    a = rng.standard_normal(shape)
    k = min(shape[-2:])
    c = t(rng.standard_normal(k) + 2)
    wu, wv, ws = weights(2, shape[1], shape[1]), weights(2, shape[2], shape[2]), weights(2, k)

    def f(x):
        u, s, vh = LA.svd(x, full_matrices=full)
        u, v = u[:, :, :k], oar.transpose(vh[:, :k, :], [0, 2, 1])
        return oar.sum(_gauge_free(u, c) * wu) + oar.sum(_gauge_free(v, c) * wv) + oar.sum(s * ws)

    check_grad(f, a, rtol=1e-4, atol=1e-6)
    check_grad(lambda x: oar.sum(LA.svdvals(x) * ws), a)


def test_grad_eigh():
    a = rng.standard_normal((2, 4, 4))
    c = t(rng.standard_normal(4))
    ww, wv = weights(2, 4), weights(2, 4, 4)

    def f(x):
        w, v = LA.eigh(sym(x))
        return oar.sum(w * ww) + oar.sum(_gauge_free(v, c) * wv)

    check_grad(f, a, rtol=1e-4)
    check_grad(lambda x: oar.sum(LA.eigvalsh(sym(x)) * ww), a)


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("unit", [False, True])
def test_grad_triangular_solve(upper, transpose, unit):
    a, b = general(2, 3, 3), rng.standard_normal((2, 3, 2))
    w = weights(2, 3, 2)
    check_grad(lambda x, y: oar.sum(LA.triangular_solve(x, y, upper, transpose, unit) * w), a, b)


def test_grad_composites():
    a = rng.standard_normal((2, 4, 3))
    w = weights(2, 3, 4)
    check_grad(lambda x: oar.sum(LA.pinv(x) * w), a, rtol=1e-4)
    sq = general(2, 3, 3) / 3
    w3 = weights(2, 3, 3)
    check_grad(lambda x: oar.sum(LA.matrix_power(x, 3) * w3), sq)
    check_grad(lambda x: oar.sum(LA.matrix_power(x, -2) * w3), sq, rtol=1e-4)
    check_grad(lambda x: oar.sum(LA.norm(x, p="nuc", axis=[1, 2])), a, rtol=1e-4)
    check_grad(lambda x: oar.sum(LA.norm(x, p=2, axis=[1, 2])), a, rtol=1e-4)
    check_grad(lambda x: oar.sum(LA.cond(x)), a, rtol=1e-4)


# ---------------------------------------------------------------- errors ---

def test_singular_inputs_name_the_op_and_batch():
    a = general(3, 3, 3)
    a[1] = [[1, 2, 3], [2, 4, 6], [0, 1, 1]]
    with pytest.raises(ValueError, match=r"inv: the matrix \(batch 1\) is singular"):
        LA.inv(t(a))
    with pytest.raises(ValueError, match=r"solve: the matrix \(batch 1\) is singular"):
        LA.solve(t(a), t(np.ones((3, 3, 1))))
    x = np.triu(general(2, 3, 3))
    x[1, 2, 2] = 0
    with pytest.raises(ValueError, match=r"triangular_solve: the triangular matrix \(batch 1\) is singular "
                                         r"\(its diagonal element \[2, 2\] is zero\)"):
        LA.triangular_solve(t(x), t(np.ones((2, 3, 1))))


def test_cholesky_not_positive_definite():
    a = spd(4, 3, 3)
    a[3] = [[1, 2, 0], [2, 1, 0], [0, 0, 1]]
    with pytest.raises(ValueError, match=r"cholesky: the matrix \(batch 3\) is not positive definite "
                                         r"\(the leading minor of order 2 is not positive\)"):
        LA.cholesky(t(a))


def test_undefined_gradients_raise():
    x = t(np.eye(3), grad=True)  # singular values and eigenvalues all equal
    u, s, vh = LA.svd(x)
    with pytest.raises(ValueError, match=r"svd: the gradient through U or VH is undefined.*repeated"):
        oar.grad(oar.sum(u * t(rng.standard_normal((3, 3)))), [x])
    (g,) = oar.grad(oar.sum(LA.svdvals(x)), [x])  # through S only: defined (the identity)
    close(g, np.eye(3))
    w, v = LA.eigh(x)
    with pytest.raises(ValueError, match=r"eigh: the gradient through the eigenvectors is undefined"):
        oar.grad(oar.sum(v * t(rng.standard_normal((3, 3)))), [x])
    wide = t(rng.standard_normal((2, 4)), grad=True)
    with pytest.raises(RuntimeError, match=r"qr: the gradient is defined for m >= n"):
        oar.grad(oar.sum(LA.qr(wide)[1]), [wide])


def test_shape_dtype_and_device_errors():
    with pytest.raises(ValueError, match=r"inv: x must be a square matrix or a batch of them"):
        LA.inv(t(np.ones((2, 3))))
    with pytest.raises((TypeError, ValueError), match=r"inv"):
        LA.inv(oar.to_tensor(np.eye(2, dtype=np.int64)))
    with pytest.raises(ValueError, match=r"solve: x has shape \[3, 3\] so y must be \[\*, 3, k\]"):
        LA.solve(t(np.eye(3)), t(np.ones((2, 1))))
    with pytest.raises(ValueError, match=r"qr: mode must be"):
        LA.qr(t(np.eye(2)), mode="economic")
    if "mock" in oar.get_all_device_type():
        oar.set_device("mock")
        with pytest.raises(Exception, match=r"cholesky: device type 'mock' has no kernel"):
            LA.cholesky(oar.to_tensor(np.eye(2)))


# ------------------------------------------------------- edges, programs ---

def test_empty_matrices_and_batches():
    assert LA.inv(t(np.zeros((2, 0, 0)))).shape == [2, 0, 0]
    close(LA.det(t(np.zeros((2, 0, 0)))), [1.0, 1.0])  # the empty product, as numpy
    assert LA.cholesky(t(np.zeros((0, 3, 3)))).shape == [0, 3, 3]
    assert LA.solve(t(np.eye(3)), t(np.zeros((3, 0)))).shape == [3, 0]
    u, s, vh = LA.svd(t(np.zeros((3, 0))))
    assert u.shape == [3, 0] and s.shape == [0] and vh.shape == [0, 0]
    q, r = LA.qr(t(np.zeros((0, 2))))
    assert q.shape == [0, 0] and r.shape == [0, 2]


def test_traced_program_matches_eager_with_gradients():
    from oar.static import InputSpec

    def f(x):
        u, s, vh = LA.svd(x)
        w, v = LA.eigh(oar.matmul(x, oar.transpose(x, [1, 0])))
        return LA.inv(x) * oar.sum(s) + LA.det(x) * oar.max(w) + LA.cholesky(oar.matmul(x, oar.transpose(x, [1, 0])))

    g = oar.jit.to_static(f, input_spec=[InputSpec([3, 3], "float64")])
    a = general(3, 3)
    x = t(a, grad=True)
    close(g(x), f(x).numpy())
    assert "svd" in g.program and "eigh" in g.program and "cholesky" in g.program
    (traced,) = oar.grad(oar.sum(g(x)), [x])
    (eager,) = oar.grad(oar.sum(f(x)), [x])
    close(traced, eager.numpy(), scale=1e3)


# ------------------------------------------------------------ eig (complex) ---

@pytest.mark.parametrize("dtype,cdtype", [("float32", "complex64"), ("float64", "complex128")])
def test_eig_real_input(dtype, cdtype):
    a = rng.standard_normal((3, 5, 5))  # complex pairs occur
    w, v = LA.eig(t(a, dtype))
    assert str(w.dtype).endswith(cdtype) and str(v.dtype).endswith(cdtype)
    w, v = w.numpy(), v.numpy()
    assert np.iscomplexobj(w) and np.abs(w.imag).max() > 0.1
    close(np.sort_complex(w), np.sort_complex(np.linalg.eigvals(a)), dtype, 10)
    close(a @ v, v * w[..., None, :], dtype, 10)             # A V = V diag(w)
    close(np.linalg.norm(v, axis=-2), np.ones((3, 5)), dtype, 10)  # unit columns
    close(np.sort_complex(LA.eigvals(t(a, dtype)).numpy()), np.sort_complex(np.linalg.eigvals(a)), dtype, 10)


def test_eig_complex_input():
    a = rng.standard_normal((2, 4, 4)) + 1j * rng.standard_normal((2, 4, 4))
    w, v = LA.eig(oar.to_tensor(a))
    w, v = w.numpy(), v.numpy()
    close(a @ v, v * w[..., None, :], scale=10)
    close(np.sort_complex(w), np.sort_complex(np.linalg.eigvals(a)), scale=10)


def test_eig_is_not_differentiable():
    x = t(general(3, 3), grad=True)
    with pytest.raises(Exception, match="eig"):
        oar.grad(oar.sum(oar.cast(LA.eig(x)[0], "float64")), [x])
