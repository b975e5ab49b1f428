"""oar.linalg: linear algebra with Paddle's names and signatures (paddle.linalg).

The decompositions and solvers are core ops with LAPACK kernels on the cpu
device (core/src/ops/linalg_lapack.cpp, plugins/cpu/kernels_linalg.cpp),
batched over the leading dims, in float32 and float64, each with its VJP.
The rest (norm, cond, matrix_rank, ...) is composed of them here, so it is
differentiable through them. A singular or non-positive-definite input is
an error naming the op and the batch index, never a silent NaN.
"""
import math as _math
import numbers

import numpy as np

from . import _C
from . import math as _m
from .creation import zeros as _zeros
from .framework import Tensor, convert_dtype, int64

_la = _C.linalg
_ops = _C.ops

__all__ = ["inv", "solve", "det", "slogdet", "cholesky", "qr", "svd", "svdvals", "eig", "eigvals", "eigh", "eigvalsh", "lstsq",
           "pinv", "matrix_power", "norm", "vector_norm", "matrix_norm", "matrix_rank", "cond",
           "triangular_solve", "multi_dot", "cholesky_inverse", "cholesky_solve", "cov", "corrcoef",
           "householder_product", "ormqr", "matrix_exp", "lu", "lu_unpack", "lu_solve", "svd_lowrank", "pca_lowrank"]


def _eps(x):
    return float(np.finfo(np.float64 if x.dtype == convert_dtype("float64") else np.float32).eps)


def _mT(x):
    perm = list(range(len(x.shape)))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return _ops.transpose(x, perm)


def _require_matrix(op, x, square=False):
    s = list(x.shape)
    if len(s) < 2 or (square and s[-1] != s[-2]):
        kind = "a square matrix or a batch of them [*, n, n]" if square else "a matrix or a batch of them [*, m, n]"
        raise ValueError(f"{op}: x must be {kind} but has shape {s}")


def inv(x, name=None):
    """The inverse of each square matrix of x [*, n, n]."""
    return _la.inv(x)


def solve(x, y, left=True, name=None):
    """x^-1 y (left) or y x^-1 (left=False); y may be a vector [n]; batch dims broadcast."""
    if not left:
        return _mT(_la.solve(_mT(x), _mT(y)))
    if len(y.shape) == 1:
        return _ops.squeeze(_la.solve(x, _ops.unsqueeze(y, [-1])), [-1])
    return _la.solve(x, y)


def det(x, name=None):
    """The determinant of each square matrix: shape x.shape[:-2]."""
    return _la.det(x)


def slogdet(x, name=None):
    """Sign and log|det| stacked as Paddle returns them: shape [2, *x.shape[:-2]]."""
    sign, logabsdet = _la.slogdet(x)
    return _m.stack([sign, logabsdet], axis=0)


def cholesky(x, upper=False, name=None):
    """L with x = L L^T (or U with x = U^T U when upper) of a symmetric positive definite x."""
    return _la.cholesky(x, bool(upper))


def qr(x, mode="reduced", name=None):
    """(Q, R) with x = Q R; mode "reduced", "complete", or "r" (R only)."""
    q, r = _la.qr(x, str(mode))
    return r if mode == "r" else (q, r)


def svd(x, full_matrices=False, name=None):
    """(U, S, VH) with x = U diag(S) VH, S descending."""
    return _la.svd(x, bool(full_matrices))


def svdvals(x, name=None):
    """The singular values, descending."""
    return _la.svd(x, False)[1]


def eigh(x, UPLO="L", name=None):  # noqa: N803 - Paddle's name
    """(w, V) of a symmetric (or complex Hermitian) x: eigenvalues ascending, eigenvectors as V's columns."""
    if isinstance(x, Tensor) and x.dtype.is_complex:
        return _more.hermitian_eigh(x, str(UPLO))
    return _la.eigh(x, str(UPLO))


def eigvalsh(x, UPLO="L", name=None):  # noqa: N803
    """The eigenvalues of a symmetric (or complex Hermitian) x, ascending."""
    return eigh(x, UPLO)[0]


def eig(x, name=None):
    """(w, V) of a general square x: complex eigenvalues and unit eigenvectors as V's columns (LAPACK geev)."""
    return _la.eig(x)


def eigvals(x, name=None):
    """The complex eigenvalues of a general square x."""
    return _la.eig(x)[0]


def triangular_solve(x, y, upper=True, transpose=False, unitriangular=False, name=None):
    """op(x)^-1 y for a triangular x; only x's `upper` (or lower) triangle is read."""
    return _la.triangular_solve(x, y, bool(upper), bool(transpose), bool(unitriangular))


def lstsq(x, y, rcond=None, driver=None, name=None):
    """(solution, residuals, rank, singular_values) of min ||x s - y|| (LAPACK gelsd for every driver).

    residuals are the squared residuals per column when m > n and every matrix
    has full rank, else an empty tensor; as Paddle's, gelsy (the default)
    leaves residuals and singular_values empty and gels the rank too."""
    if driver not in (None, "gels", "gelsy", "gelsd", "gelss"):
        raise ValueError(f'lstsq: driver must be one of "gels", "gelsy", "gelsd", "gelss" but is {driver!r}')
    _require_matrix("lstsq", x)
    vector = len(y.shape) == 1
    yy = _ops.unsqueeze(y, [-1]) if vector else y
    m, n = x.shape[-2], x.shape[-1]
    if rcond is None:
        rcond = max(m, n) * _eps(x)
    solution, rank, sv = _la.lstsq(x, yy, float(rcond))
    # What each driver reports, as Paddle's cpu kernels: gelsy (the default)
    # no residuals or singular values, gels no rank either.
    driver = driver or "gelsy"
    residuals = _zeros([0], dtype=x.dtype)
    if driver != "gelsy" and m > n and bool(np.all(rank.numpy() == n)):
        residuals = _ops.sum(_m.square(_ops.subtract(_m.matmul(x, solution), yy)), [-2], False)
    if driver == "gels":
        rank = _zeros([0], dtype="int64")
    elif rank.dtype != convert_dtype("int32"):
        rank = _ops.cast(rank, convert_dtype("int32"))
    if driver in ("gels", "gelsy"):
        sv = _zeros([0], dtype=x.dtype)
    if vector:
        solution = _ops.squeeze(solution, [-1])
    return solution, residuals, rank, sv


def pinv(x, rcond=1e-15, hermitian=False, name=None):
    """The Moore-Penrose pseudo-inverse (by svd, or eigh when hermitian)."""
    return _la.pinv(x, float(rcond), bool(hermitian))


def matrix_power(x, n, name=None):
    """x^n by repeated squaring; n < 0 inverts, n = 0 gives the identity."""
    return _la.matrix_power(x, int(n))


def multi_dot(x, name=None):
    """The product of a list of matrices, left to right."""
    x = list(x)
    out = x[0]
    for t in x[1:]:
        out = _m.matmul(out, t)
    return out


# ---- norms ----

def _vector_norm(x, p, axes, keepdim):
    a = _ops.abs(x)
    if p is None or p in ("fro",) or (isinstance(p, numbers.Number) and p == 2):
        return _ops.sqrt(_ops.sum(_ops.multiply(x, x), axes, keepdim))
    if not isinstance(p, numbers.Number):
        raise ValueError(f"norm: p={p!r} is not a vector norm (a number, inf or -inf)")
    if p == _math.inf:
        return _ops.max(a, axes, keepdim)
    if p == -_math.inf:
        return _ops.min(a, axes, keepdim)
    if p == 0:
        return _ops.sum(_ops.cast(_ops.not_equal(x, _ops.zeros_like(x)), x.dtype), axes, keepdim)
    if p == 1:
        return _ops.sum(a, axes, keepdim)
    return _ops.pow_scalar(_ops.sum(_ops.pow_scalar(a, float(p)), axes, keepdim), 1.0 / float(p))


def _matrix_norm(x, p, axes, keepdim):
    nd = len(x.shape)
    r, c = (a % nd for a in axes)
    if r == c:
        raise ValueError(f"norm: the two axes of a matrix norm must differ but are {list(axes)}")
    if p is None or p == "fro":
        return _ops.sqrt(_ops.sum(_ops.multiply(x, x), [r, c], keepdim))
    if p in ("nuc", 2, -2):
        order = [a for a in range(nd) if a not in (r, c)] + [r, c]
        s = svdvals(_ops.transpose(x, order))
        out = _ops.sum(s, [-1], False) if p == "nuc" else (_ops.max if p == 2 else _ops.min)(s, [-1], False)
        if keepdim:
            out = _ops.unsqueeze(out, sorted([r, c]))
        return out
    a = _ops.abs(x)
    if p in (_math.inf, -_math.inf):   # max / min over rows of the row sums
        sums, other = _ops.sum(a, [c], True), r
    elif p in (1, -1):                 # max / min over columns of the column sums
        sums, other = _ops.sum(a, [r], True), c
    else:
        raise ValueError(f"norm: p={p!r} is not a matrix norm ('fro', 'nuc', inf, -inf, 1, -1, 2, -2)")
    reduce = _ops.max if p in (_math.inf, 1) else _ops.min
    out = reduce(sums, [other], True)
    return out if keepdim else _ops.squeeze(out, sorted([r, c]))


def norm(x, p=None, axis=None, keepdim=False, name=None):
    """Vector norm (axis an int, or None: x flattened) or matrix norm (axis two ints), as paddle.linalg.norm."""
    if isinstance(axis, Tensor):
        axis = axis.numpy().tolist()
    if isinstance(axis, (list, tuple)) and len(axis) == 1:
        axis = int(axis[0])
    if axis is None:
        if p == "nuc":
            if len(x.shape) != 2:
                raise ValueError(f"norm: p='nuc' needs a matrix (or axis of two ints) but x has shape {list(x.shape)}")
            return _matrix_norm(x, p, [-2, -1], keepdim)
        return _vector_norm(x, p, list(range(len(x.shape))), keepdim)
    if isinstance(axis, numbers.Integral):
        if p == "nuc":
            raise ValueError("norm: p='nuc' is a matrix norm; axis must be two ints")
        return _vector_norm(x, p, [int(axis)], keepdim)
    axis = [int(a) for a in axis]
    if len(axis) != 2:
        raise ValueError(f"norm: axis must be None, an int or two ints but is {axis}")
    return _matrix_norm(x, p, axis, keepdim)


def vector_norm(x, p=2.0, axis=None, keepdim=False, name=None):
    """The p-norm over `axis` (an int, ints, or None: all), as paddle.linalg.vector_norm."""
    axes = [] if axis is None else ([int(axis)] if isinstance(axis, numbers.Integral) else [int(a) for a in axis])
    if not axes:
        axes = list(range(len(x.shape)))
    return _vector_norm(x, p, axes, keepdim)


def matrix_norm(x, p="fro", axis=(-2, -1), keepdim=False, name=None):
    """A matrix norm over the two `axis`, as paddle.linalg.matrix_norm."""
    return _matrix_norm(x, p, [int(a) for a in axis], keepdim)


# ---- rank and condition number ----

def matrix_rank(x, tol=None, hermitian=False, atol=None, rtol=None, name=None):
    """The number of singular values (|eigenvalues| when hermitian) above the tolerance (int64)."""
    _require_matrix("matrix_rank", x)
    s = _ops.abs(eigvalsh(x)) if hermitian else svdvals(x)
    smax = _ops.max(s, [-1], True)
    m, n = x.shape[-2], x.shape[-1]
    if tol is not None:
        if atol is not None or rtol is not None:
            raise ValueError("matrix_rank: give tol, or atol and rtol, not both")
        cut = tol if isinstance(tol, Tensor) else _ops.scalar_like(s, float(tol))
        if isinstance(cut, Tensor) and len(cut.shape) > 0:
            cut = _ops.unsqueeze(cut, [-1])
    elif atol is None and rtol is None:
        cut = _ops.multiply_scalar(smax, max(m, n) * _eps(x))
    else:
        a = 0.0 if atol is None else atol
        r = rtol if rtol is not None else (0.0 if (not isinstance(a, Tensor) and a > 0) else max(m, n) * _eps(x))
        at = a if isinstance(a, Tensor) else _ops.scalar_like(s, float(a))
        rt = _ops.multiply(smax, r) if isinstance(r, Tensor) else _ops.multiply_scalar(smax, float(r))
        cut = _ops.maximum(at, rt)
    return _ops.sum(_ops.cast(_ops.greater_than(s, cut), int64), [-1], False)


def cond(x, p=None, name=None):
    """The condition number in norm p: None/2/-2 by singular values, else norm(x) * norm(inv(x))."""
    _require_matrix("cond", x)
    if p in (None, 2, -2):
        s = svdvals(x)
        big, small = _ops.max(s, [-1], False), _ops.min(s, [-1], False)
        return _ops.divide(big, small) if p != -2 else _ops.divide(small, big)
    if p in ("fro", "nuc", _math.inf, -_math.inf, 1, -1):
        _require_matrix("cond", x, square=True)
        return _ops.multiply(norm(x, p, [-2, -1]), norm(inv(x), p, [-2, -1]))
    raise ValueError(f"cond: p must be None, 'fro', 'nuc', inf, -inf, 1, -1, 2 or -2 but is {p!r}")


from . import linalg_more as _more  # noqa: E402
from .linalg_more import (cholesky_inverse, cholesky_solve, corrcoef, cov, householder_product, lu,  # noqa: E402,F401
                          lu_solve, lu_unpack, matrix_exp, ormqr, pca_lowrank, svd_lowrank)
from .math_extra import vecdot  # noqa: E402,F401 - paddle.linalg.vecdot
