"""More of paddle.linalg, composed of oar's ops (so differentiable through
them): Cholesky inverse/solve, cov/corrcoef, Householder products (ormqr),
matrix_exp, LU (factorization on the host; unpack and solve composed),
randomized low-rank SVD/PCA, and eigh of complex Hermitian matrices through
their real 2n x 2n embedding."""
import math

import numpy as np

from . import creation
from . import math as M
from .complex_ops import complex as _complex, conj as _conj, imag as _imag, real as _real
from .framework import Tensor


def _mT(x):  # noqa: N802
    perm = list(range(x.ndim))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return M.transpose(x, perm)


def _la():
    from . import linalg
    return linalg


def _require(op, x, square=False):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: x must be a Tensor, got {type(x).__name__}")
    if x.ndim < 2 or square and x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{op}: x must be a {'square ' if square else ''}matrix (or a batch of them), "
                         f"got shape {list(x.shape)}")


def _eye_like(x, n):
    return creation.eye(n, dtype=x.dtype)


def cholesky_inverse(x, upper=False, name=None):
    """The inverse of A from its Cholesky factor x (A = x x^T, or x^T x when upper)."""
    _require("cholesky_inverse", x, square=True)
    inv = _la().triangular_solve(x, _eye_like(x, x.shape[-1]), upper=upper)
    return M.matmul(inv, _mT(inv)) if upper else M.matmul(_mT(inv), inv)


def cholesky_solve(x, y, upper=False, name=None):
    """The solution z of A z = x, where y is A's Cholesky factor (A = y y^T, or y^T y when upper)."""
    _require("cholesky_solve", y, square=True)
    ts = _la().triangular_solve
    if upper:
        return ts(y, ts(y, x, upper=True, transpose=True), upper=True)
    return ts(y, ts(y, x, upper=False), upper=False, transpose=True)


def cov(x, rowvar=True, ddof=True, fweights=None, aweights=None, name=None):
    """The covariance matrix of the variables (rows of x, or columns when rowvar is False)."""
    if x.ndim > 2:
        raise ValueError(f"cov: x must have at most 2 dims, got shape {list(x.shape)}")
    obs = x.reshape([1, -1]) if x.ndim < 2 else (x if rowvar else _mT(x))
    n = obs.shape[1]
    w = None
    for what, given in (("fweights", fweights), ("aweights", aweights)):
        if given is None:
            continue
        if given.ndim > 1 or given.shape[0] != n:
            raise ValueError(f"cov: {what} must be 1-D with one weight per observation ({n}), "
                             f"got shape {list(given.shape)}")
        if bool((given.numpy() < 0).any()):
            raise ValueError(f"cov: {what} must be non-negative")
        given = given.astype(obs.dtype)
        w = given if w is None else w * given
    if w is None:
        w = creation.ones([n], dtype=obs.dtype)
    w_sum = w.sum()
    avg = (obs * w).sum(axis=1, keepdim=True) / w_sum
    if not ddof:
        norm = w_sum
    elif aweights is None:
        norm = w_sum - 1
    else:
        norm = w_sum - (w * aweights.astype(obs.dtype)).sum() / w_sum
    centered = obs - avg
    out = M.matmul(centered * w, _mT(centered)) / norm
    return out.reshape([]) if out.shape == [1, 1] else out


def corrcoef(x, rowvar=True, name=None):
    """Pearson correlation coefficients of the variables: cov / (std_i std_j), within [-1, 1]."""
    c = cov(x, rowvar)
    if c.ndim == 0:
        return c / c
    d = M.sqrt(M.diagonal(c))
    return M.clip(c / d.unsqueeze(1) / d.unsqueeze(0), -1.0, 1.0)


# ---- Householder reflectors (LAPACK's geqrf layout: v_i below x's diagonal, v_i[i] = 1) ----

def _reflectors_product(x, tau, columns):
    """H_0 H_1 ... H_{k-1} (m x m), H_i = I - tau_i v_i v_i^H, truncated to `columns` columns."""
    m, k = x.shape[-2], tau.shape[-1]
    rows = np.arange(m)
    q = _eye_like(x, m)
    for i in range(k):
        below = creation.to_tensor((rows > i).astype(np.float64)).astype(x.dtype)
        unit = creation.to_tensor((rows == i).astype(np.float64)).astype(x.dtype)
        v = (x[..., :, i] * below + unit).unsqueeze(-1)
        t = tau[..., i].unsqueeze(-1).unsqueeze(-1)
        q = q - M.matmul(M.matmul(q, v) * t, _conj(_mT(v)) if x.dtype.is_complex else _mT(v))
    return q[..., :, :columns]


def householder_product(x, tau, name=None):
    """The first n columns of the product of the Householder reflectors stored in x (m x n, m >= n) and tau."""
    _require("householder_product", x)
    m, n = x.shape[-2], x.shape[-1]
    if m < n or tau.shape[-1] > n or list(tau.shape[:-1]) != list(x.shape[:-2]):
        raise ValueError(f"householder_product: x must be m x n with m >= n and tau [..., k] with k <= n, got x "
                         f"{list(x.shape)} and tau {list(tau.shape)}")
    return _reflectors_product(x, tau, n)


def ormqr(x, tau, y, left=True, transpose=False, name=None):
    """Q y (or y Q; Q^T with transpose) for the Q of x's Householder reflectors and tau."""
    _require("ormqr", x)
    m = x.shape[-2]
    if (y.shape[-2] if left else y.shape[-1]) != m:
        raise ValueError(f"ormqr: y's {'rows' if left else 'columns'} must match x's {m} rows, got y "
                         f"{list(y.shape)}")
    q = _reflectors_product(x, tau, m)
    if transpose:
        q = _conj(_mT(q)) if q.dtype.is_complex else _mT(q)
    return M.matmul(q, y) if left else M.matmul(y, q)


def matrix_exp(x, name=None):
    """e^x of square matrices by scaling and squaring a Taylor series."""
    _require("matrix_exp", x, square=True)
    norm = float(np.abs(x.detach().numpy()).sum(-2).max()) if x.size else 0.0
    squarings = max(0, int(math.ceil(math.log2(norm))) + 1) if norm > 0.5 else 0
    a = x / float(2 ** squarings)
    term = _eye_like(x, x.shape[-1]) + a * 0
    out = term
    for k in range(1, 19):
        term = M.matmul(term, a) / float(k)
        out = out + term
    for _ in range(squarings):
        out = M.matmul(out, out)
    return out


# ---- LU ----

def _lu_host(a):
    """(packed LU, 1-based pivots, info) of one m x n matrix by partial pivoting."""
    a = a.copy()
    m, n = a.shape
    pivots, info = np.zeros(min(m, n), dtype=np.int32), 0
    for j in range(min(m, n)):
        p = j + int(np.argmax(np.abs(a[j:, j])))
        pivots[j] = p + 1
        if a[p, j] == 0:
            info = info or j + 1
            continue
        a[[j, p]] = a[[p, j]]
        a[j + 1:, j] /= a[j, j]
        a[j + 1:, j + 1:] -= np.outer(a[j + 1:, j], a[j, j + 1:])
    return a, pivots, info


def lu(x, pivot=True, get_infos=False, name=None):
    """(LU, pivots[, infos]): x = P L U with L unit lower and U upper packed in one matrix, pivots 1-based
    (int32), infos nonzero for a singular matrix. Computed on the host: no gradient flows through it."""
    _require("lu", x)
    if not pivot:
        raise ValueError("lu: pivot=False is not supported on the cpu (as Paddle's cpu kernel)")
    a = x.detach().numpy()
    batch = a.shape[:-2]
    flat = a.reshape((-1,) + a.shape[-2:])
    parts = [_lu_host(m) for m in flat]
    packed = np.stack([p[0] for p in parts]).reshape(a.shape)
    pivots = np.stack([p[1] for p in parts]).reshape(batch + (min(a.shape[-2:]),))
    infos = np.array([p[2] for p in parts], dtype=np.int32).reshape(batch)
    out = (creation.to_tensor(packed), creation.to_tensor(pivots))
    return out + (creation.to_tensor(infos),) if get_infos else out


def _permutation(pivots, m):
    """P (m x m, numpy) with x = P L U for LAPACK-style 1-based row swaps."""
    perm = np.arange(m)
    for j, p in enumerate(pivots):
        perm[[j, p - 1]] = perm[[p - 1, j]]
    return np.eye(m)[:, perm]


def lu_unpack(x, y, unpack_ludata=True, unpack_pivots=True, name=None):
    """(P, L, U) from lu's packed factors x and pivots y."""
    _require("lu_unpack", x)
    m, n = x.shape[-2], x.shape[-1]
    k = min(m, n)
    P = L = U = None  # noqa: N806
    if unpack_ludata:
        L = M.tril(x[..., :, :k], -1) + creation.eye(m, k, dtype=x.dtype)  # noqa: N806
        U = M.triu(x[..., :k, :])  # noqa: N806
    if unpack_pivots:
        piv = y.numpy().reshape((-1, y.shape[-1]))
        mats = np.stack([_permutation(p, m) for p in piv]).reshape(tuple(y.shape[:-1]) + (m, m))
        P = creation.to_tensor(mats).astype(x.dtype)  # noqa: N806
    return P, L, U


def lu_solve(b, lu, pivots, trans="N", name=None):
    """The solution of A x = b (A^T x = b for trans 'T', A^H for 'C') from A's lu factors."""
    if trans not in ("N", "T", "C"):
        raise ValueError(f"lu_solve: trans must be 'N', 'T' or 'C', got {trans!r}")
    _require("lu_solve", lu, square=True)
    P, L, U = lu_unpack(lu, pivots)  # noqa: N806
    ts = _la().triangular_solve
    if trans == "N":
        return ts(U, ts(L, M.matmul(_mT(P), b), upper=False, unitriangular=True), upper=True)
    # A^T = U^T L^T P^T: solve U^T w = b, L^T z = w, x = P z
    w = ts(U, b, upper=True, transpose=True)
    return M.matmul(P, ts(L, w, upper=False, transpose=True, unitriangular=True))


# ---- randomized low-rank SVD ----

def svd_lowrank(x, q=None, niter=2, M=None, name=None):  # noqa: N803 - Paddle's name
    """(U, S, V) of a rank-q approximation of x (or x - M) by randomized subspace iteration."""
    _require("svd_lowrank", x)
    m, n = x.shape[-2], x.shape[-1]
    q = min(6, m, n) if q is None else q
    if not 0 < q <= min(m, n):
        raise ValueError(f"svd_lowrank: q must be in [1, {min(m, n)}] for a {m} x {n} matrix, got {q}")
    a = x if M is None else x - M
    la = _la()
    transposed = m < n
    if transposed:
        a = _mT(a)
    omega = creation.randn(list(a.shape[:-2]) + [a.shape[-1], q], dtype=a.dtype)
    basis = la.qr(_matmul(a, omega))[0]
    for _ in range(niter):
        basis = la.qr(_matmul(_mT(a), basis))[0]
        basis = la.qr(_matmul(a, basis))[0]
    u, s, vh = la.svd(_matmul(_mT(basis), a))
    u, v = _matmul(basis, u), _mT(vh)
    return (v, s, u) if transposed else (u, s, v)


def _matmul(a, b):  # svd_lowrank's argument M shadows the math module there
    return M.matmul(a, b)


def pca_lowrank(x, q=None, center=True, niter=2, name=None):
    """(U, S, V) of the principal components of x's rows (x centered by column means unless center=False)."""
    _require("pca_lowrank", x)
    m, n = x.shape[-2], x.shape[-1]
    q = min(6, m, n) if q is None else q
    a = x - x.mean(axis=-2, keepdim=True) if center else x
    return svd_lowrank(a, q, niter)


# ---- complex Hermitian eigh ----

def hermitian_eigh(x, UPLO="L"):  # noqa: N803
    """(w, V) of complex Hermitian x through the real symmetric [[A, -B], [B, A]] of x = A + iB:
    each eigenvalue of x appears twice there, with eigenvector [u; v] for x's u + iv."""
    la = _la()
    a, b = _real(x), _imag(x)
    if UPLO == "L":  # read the lower triangle only, as LAPACK does
        a = M.tril(a) + _mT(M.tril(a, -1))
        b = M.tril(b, -1) - _mT(M.tril(b, -1))
    else:
        a = M.triu(a) + _mT(M.triu(a, 1))
        b = M.triu(b, 1) - _mT(M.triu(b, 1))
    embedded = M.concat([M.concat([a, -b], axis=-1), M.concat([b, a], axis=-1)], axis=-2)
    w, vecs = la.eigh(embedded)
    n = x.shape[-1]
    w = w[..., 0::2]
    vecs = vecs[..., :, 0::2]
    z = _complex(vecs[..., :n, :], vecs[..., n:, :])
    # a unit phase per vector: the first (UPLO 'L') or last ('U') component real, as LAPACK's zheevd leaves it
    ref = z[..., 0:1, :] if UPLO == "L" else z[..., n - 1:n, :]
    mag = M.abs(ref)
    safe = creation.to_tensor((mag.numpy() > 1e-30).astype(np.float64)).astype(mag.dtype)
    phase = _complex(_real(ref) * safe / (mag + (1 - safe)) + (1 - safe), -_imag(ref) * safe / (mag + (1 - safe)))
    return w, z * phase

