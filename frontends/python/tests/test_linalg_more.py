import numpy as np
import pytest

import oar
from conftest import assert_close

LA = oar.linalg
rng = np.random.default_rng(7)


def _spd(n):
    a = rng.standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


def test_cholesky_inverse_and_solve():
    a = _spd(3)
    low = np.linalg.cholesky(a)
    assert_close(LA.cholesky_inverse(oar.to_tensor(low)), np.linalg.inv(a), rtol=1e-6, atol=1e-9)
    assert_close(LA.cholesky_inverse(oar.to_tensor(low.T.copy()), upper=True), np.linalg.inv(a), rtol=1e-6,
                 atol=1e-9)
    b = rng.standard_normal((3, 2))
    assert_close(LA.cholesky_solve(oar.to_tensor(b), oar.to_tensor(low)), np.linalg.solve(a, b), rtol=1e-6)
    assert_close(LA.cholesky_solve(oar.to_tensor(b), oar.to_tensor(low.T.copy()), upper=True),
                 np.linalg.solve(a, b), rtol=1e-6)


def test_cov_and_corrcoef():
    x = rng.standard_normal((3, 6))
    fw, aw = np.array([1, 2, 1, 3, 1, 1]), rng.random(6)
    assert_close(LA.cov(oar.to_tensor(x)), np.cov(x), rtol=1e-6)
    assert_close(LA.cov(oar.to_tensor(x.T.copy()), rowvar=False, ddof=False), np.cov(x, ddof=0), rtol=1e-6)
    assert_close(LA.cov(oar.to_tensor(x), fweights=oar.to_tensor(fw), aweights=oar.to_tensor(aw)),
                 np.cov(x, fweights=fw, aweights=aw), rtol=1e-6)
    assert_close(LA.corrcoef(oar.to_tensor(x)), np.corrcoef(x), rtol=1e-6)
    with pytest.raises(ValueError, match="cov: fweights"):
        LA.cov(oar.to_tensor(x), fweights=oar.to_tensor(np.ones(5)))


def test_householder_product_and_ormqr_rebuild_q():
    a = rng.standard_normal((4, 3))
    q, r = np.linalg.qr(a)
    # reflectors by hand (LAPACK geqrf's layout) for a: v_i[i] = 1, tau_i = 2 / |v_i|^2
    x, taus, work = np.zeros((4, 3)), [], a.copy()
    qs = np.eye(4)
    for i in range(3):
        col = work[i:, i]
        alpha = -np.sign(col[0]) * np.linalg.norm(col)
        v = col.copy()
        v[0] -= alpha
        v /= v[0]
        tau = 2 / (v @ v)
        h = np.eye(4)
        h[i:, i:] -= tau * np.outer(v, v)
        work = h @ work
        qs = qs @ h
        x[i + 1:, i], x[i, i:] = v[1:], work[i, i:]
        taus.append(tau)
    got = LA.householder_product(oar.to_tensor(x), oar.to_tensor(np.array(taus)))
    assert_close(got, qs[:, :3], rtol=1e-6, atol=1e-9)
    assert_close(np.abs(got.numpy()), np.abs(q), rtol=1e-6, atol=1e-9)
    y = rng.standard_normal((4, 2))
    assert_close(LA.ormqr(oar.to_tensor(x), oar.to_tensor(np.array(taus)), oar.to_tensor(y), transpose=True),
                 qs.T @ y, rtol=1e-6, atol=1e-9)


def test_matrix_exp():
    theta = np.pi / 3
    a = np.array([[0, theta], [-theta, 0]])
    assert_close(LA.matrix_exp(oar.to_tensor(a)), [[np.cos(theta), np.sin(theta)], [-np.sin(theta), np.cos(theta)]],
                 rtol=1e-9, atol=1e-12)
    big = np.diag([5.0, -2.0])
    assert_close(LA.matrix_exp(oar.to_tensor(big)), np.diag(np.exp([5.0, -2.0])), rtol=1e-9)
    x = oar.to_tensor(np.diag([1.0, 2.0]), stop_gradient=False)
    LA.matrix_exp(x).sum().backward()
    # d sum(e^X) / dX at diag(a, b): e^a, e^b on the diagonal, (e^b - e^a) / (b - a) off it
    e1, e2 = np.exp(1.0), np.exp(2.0)
    assert_close(x.grad, [[e1, e2 - e1], [e2 - e1, e2]], rtol=1e-8, atol=1e-10)


def test_lu_unpack_solve():
    a = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    packed, piv, info = LA.lu(oar.to_tensor(a), get_infos=True)
    assert_close(packed, [[5, 6], [0.2, 0.8], [0.6, 0.5]], rtol=1e-12)
    assert piv.numpy().tolist() == [3, 3] and piv.dtype == oar.int32 and int(info.item()) == 0
    p, low, up = LA.lu_unpack(packed, piv)
    assert_close(p.numpy() @ low.numpy() @ up.numpy(), a, rtol=1e-12)
    sq = np.array([[3.0, 1.0], [1.0, 2.0]])
    b = np.array([[9.0, 8.0], [9.0, 8.0]])
    f, fp = LA.lu(oar.to_tensor(sq))
    assert_close(LA.lu_solve(oar.to_tensor(b), f, fp), np.linalg.solve(sq, b), rtol=1e-10)
    assert_close(LA.lu_solve(oar.to_tensor(b), f, fp, trans="T"), np.linalg.solve(sq.T, b), rtol=1e-10)
    _, _, bad = LA.lu(oar.to_tensor(np.zeros((2, 2))), get_infos=True)
    assert int(bad.item()) == 1


def test_lowrank_and_complex_eigh():
    low_rank = rng.standard_normal((6, 2)) @ rng.standard_normal((2, 5))
    u, s, v = LA.svd_lowrank(oar.to_tensor(low_rank), q=3)
    assert_close(s[:2], np.linalg.svd(low_rank)[1][:2], rtol=1e-8)
    assert_close(u.numpy()[:, :2] * s.numpy()[:2] @ v.numpy()[:, :2].T, low_rank, rtol=1e-7, atol=1e-9)
    _, s2, _ = LA.pca_lowrank(oar.to_tensor(low_rank), q=2)
    centered = low_rank - low_rank.mean(0)
    assert_close(s2, np.linalg.svd(centered)[1][:2], rtol=1e-8)
    h = np.array([[1, -2j], [2j, 5]])
    w, vecs = LA.eigh(oar.to_tensor(h))
    assert_close(w, np.linalg.eigvalsh(h), rtol=1e-6)
    z = vecs.numpy()
    assert np.allclose(h @ z, z * w.numpy(), atol=1e-5) and np.allclose(z.conj().T @ z, np.eye(2), atol=1e-5)
    assert_close(LA.eigvalsh(oar.to_tensor(h), UPLO="U"), np.linalg.eigvalsh(h), rtol=1e-6)


def test_lstsq_results_per_driver():
    x = oar.to_tensor([[1.0, 3.0], [3.0, 2.0], [5.0, 6.0]])
    y = oar.to_tensor([[3.0, 4.0, 6.0], [5.0, 3.0, 4.0], [1.0, 2.0, 1.0]])
    _, res, rank, sv = LA.lstsq(x, y)  # gelsy
    assert res.shape == [0] and rank.shape == [] and rank.dtype == oar.int32 and sv.shape == [0]
    _, res, rank, sv = LA.lstsq(x, y, driver="gels")
    assert res.shape == [3] and rank.shape == [0] and sv.shape == [0]
    _, res, rank, sv = LA.lstsq(x, y, driver="gelsd")
    assert res.shape == [3] and int(rank.item()) == 2 and sv.shape == [2]
