"""oar.sparse (paddle.sparse): COO and CSR tensors and the ops on them.

Elementwise ops that keep zero at zero (abs, sin, tanh, sqrt, relu, ...)
apply to the stored values; add/subtract take the union of two patterns,
multiply their intersection; matmul of a sparse and a dense matrix is dense.
Gradients flow to the values (see tensor.py)."""
import numpy as np

from .. import _C
from .. import math as M
from ..framework import Tensor, convert_dtype
from .tensor import (SparseCooTensor, SparseCsrTensor, sparse_coo_tensor, sparse_csr_tensor, is_sparse, _host,
                     _index, _zeros, install_tensor_methods)
from . import nn  # noqa: F401

_ops = _C.ops
install_tensor_methods()


def _check_sparse(x, op):
    if not is_sparse(x):
        raise TypeError(f"sparse.{op}: expected a sparse tensor (SparseCooTensor or SparseCsrTensor), got "
                        f"{type(x).__name__}")


def _as_format(coo, like):
    """`coo` in the format of `like` (CSR results are coalesced)."""
    return coo.to_sparse_csr() if like.is_sparse_csr() else coo


def _coo(x):
    return x.to_sparse_coo(2) if x.is_sparse_csr() else x


# ---- elementwise on the values ----
def _unary(name, fn):
    def op(x, name=None):
        _check_sparse(x, op.__name__)
        return x._with_values(fn(x.values()))
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"sparse.{name}: {name} of the stored values (zero stays zero)."
    return op


# Zero-preserving elementwise ops (those oar.math has), applied to the values.
_UNARY = {name: getattr(M, name) for name in ("abs", "sin", "tan", "asin", "atan", "sinh", "tanh", "asinh", "atanh",
                                                "sqrt", "square", "log1p", "expm1", "deg2rad", "rad2deg")
          if hasattr(M, name)}
_UNARY["neg"] = _ops.neg
for _name, _fn in _UNARY.items():
    globals()[_name] = _unary(_name, _fn)


def pow(x, factor, name=None):  # noqa: A001 - paddle name
    """x ** factor on the stored values."""
    _check_sparse(x, "pow")
    return x._with_values(M.pow(x.values(), factor))


def cast(x, index_dtype=None, value_dtype=None, name=None):
    """The indices as index_dtype and the values as value_dtype (None: unchanged)."""
    _check_sparse(x, "cast")
    values = x.values() if value_dtype is None else M.cast(x.values(), value_dtype)
    out = x._with_values(values)
    if index_dtype is not None:
        dt = convert_dtype(index_dtype)
        if dt not in (convert_dtype("int32"), convert_dtype("int64")):
            raise ValueError(f"sparse.cast: index_dtype must be int32 or int64, got {dt.name}")
        if dt != convert_dtype("int64"):
            if out.is_sparse_coo():
                out._indices = _ops.cast(out._indices, dt)
            else:
                out._crows, out._cols = _ops.cast(out._crows, dt), _ops.cast(out._cols, dt)
    return out


def coalesce(x, name=None):
    """A COO tensor with sorted, unique indices (duplicates summed)."""
    _check_sparse(x, "coalesce")
    return _coo(x).coalesce()


# ---- binary ----
def _same_shape(x, y, op):
    _check_sparse(x, op)
    if not is_sparse(y):
        raise TypeError(f"sparse.{op}: y must be a sparse tensor like x, got {type(y).__name__}")
    if x.shape != y.shape:
        raise ValueError(f"sparse.{op}: x has shape {x.shape} but y has shape {y.shape}")
    if x.is_sparse_coo() != y.is_sparse_coo():
        raise TypeError(f"sparse.{op}: x and y must have the same format (both COO or both CSR)")
    cx, cy = _coo(x), _coo(y)
    if cx.sparse_dim != cy.sparse_dim:
        raise ValueError(f"sparse.{op}: x has {cx.sparse_dim} sparse dims but y has {cy.sparse_dim}")
    return cx, cy


def _union(x, y, y_values):
    coo = SparseCooTensor(_index(np.concatenate([_host(x.indices()), _host(y.indices())], axis=1), x.values()),
                          _ops.concat([x.values(), y_values], 0), x.shape)
    return coo.coalesce()


def add(x, y, name=None):
    """x + y of two sparse tensors of one shape and format (the union of their patterns)."""
    cx, cy = _same_shape(x, y, "add")
    return _as_format(_union(cx, cy, cy.values()), x)


def subtract(x, y, name=None):
    cx, cy = _same_shape(x, y, "subtract")
    return _as_format(_union(cx, cy, _ops.neg(cy.values())), x)


def _intersection(x, y):
    cx, cy = x.coalesce(), y.coalesce()
    common, ix, iy = np.intersect1d(cx._flat(), cy._flat(), assume_unique=True, return_indices=True)
    del common
    xv = _ops.gather(cx.values(), _index(ix, cx.values()), 0)
    yv = _ops.gather(cy.values(), _index(iy, cy.values()), 0)
    indices = _index(_host(cx.indices())[:, ix], cx.values())
    return indices, xv, yv, cx


def multiply(x, y, name=None):
    """x * y: a sparse tensor times a number, or two sparse tensors of one
    shape and format (their common entries)."""
    if isinstance(y, (int, float)):
        _check_sparse(x, "multiply")
        return x._with_values(M.multiply(x.values(), y))
    cx, cy = _same_shape(x, y, "multiply")
    indices, xv, yv, c = _intersection(cx, cy)
    return _as_format(SparseCooTensor(indices, _ops.multiply(xv, yv), c.shape, coalesced=True), x)


def divide(x, y, name=None):
    """x / y: by a number, or by a sparse tensor with the same pattern."""
    if isinstance(y, (int, float)):
        _check_sparse(x, "divide")
        return x._with_values(M.divide(x.values(), y))
    cx, cy = _same_shape(x, y, "divide")
    cx, cy = cx.coalesce(), cy.coalesce()
    if not np.array_equal(cx._flat(), cy._flat()):
        raise ValueError("sparse.divide: x and y must have the same sparsity pattern (a missing entry of y "
                         "divides by zero)")
    return _as_format(cx._with_values(_ops.divide(cx.values(), cy.values())), x)


def _matrix(x, op):
    _check_sparse(x, op)
    coo = _coo(x)
    if coo.ndim != 2 or coo.sparse_dim != 2:
        raise ValueError(f"sparse.{op}: x must be a 2-D sparse matrix with no dense dims, got shape {x.shape} "
                         f"with sparse_dim {coo.sparse_dim}")
    return coo


def _sparse_dense(coo, y):
    """coo @ y for a dense 2-D y: each stored x[i, k] adds x[i, k] * y[k, :] to row i."""
    rows, cols = _host(coo.indices())
    values = coo.values()
    picked = _ops.gather(y, _index(cols, y), 0)
    weighted = _ops.multiply(picked, _ops.unsqueeze(_ops.cast(values, y.dtype) if values.dtype != y.dtype
                                                    else values, [1]))
    return _ops.scatter_add(_zeros([coo.shape[0], y.shape[1]], y), _index(rows, y), weighted, 0)


def matmul(x, y, name=None):
    """x @ y for a 2-D sparse x: a dense y gives a dense result; a sparse y a
    sparse result in x's format."""
    coo = _matrix(x, "matmul")
    dense_y = y.to_dense() if is_sparse(y) else y
    if not isinstance(dense_y, Tensor) or len(dense_y.shape) != 2:
        raise ValueError(f"sparse.matmul: y must be a 2-D tensor, got "
                         f"{list(dense_y.shape) if isinstance(dense_y, Tensor) else type(y).__name__}")
    if dense_y.shape[0] != coo.shape[1]:
        raise ValueError(f"sparse.matmul: x has shape {x.shape} but y has shape {list(dense_y.shape)}; the "
                         f"contracted dims {coo.shape[1]} and {dense_y.shape[0]} differ")
    out = _sparse_dense(coo, dense_y)
    if is_sparse(y):
        result = out.to_sparse_coo(2)
        return result.to_sparse_csr() if x.is_sparse_csr() else result
    return out


def mv(x, vec, name=None):
    """x @ vec for a 2-D sparse x and a 1-D dense vec."""
    if not isinstance(vec, Tensor) or len(vec.shape) != 1:
        raise ValueError("sparse.mv: vec must be a 1-D dense tensor")
    return _ops.reshape(matmul(x, _ops.reshape(vec, [-1, 1])), [-1])


def addmm(input, x, y, beta=1.0, alpha=1.0, name=None):  # noqa: A002 - paddle name
    """beta * input + alpha * (x @ y), x sparse and input, y dense."""
    return M.add(M.multiply(input, beta), M.multiply(matmul(x, y), alpha))


def masked_matmul(x, y, mask, name=None):
    """(x @ y) at the entries of the sparse `mask` only (a sparse result in mask's format)."""
    coo = _matrix(mask, "masked_matmul").coalesce()
    if len(x.shape) != 2 or len(y.shape) != 2 or x.shape[1] != y.shape[0] or [x.shape[0], y.shape[1]] != coo.shape:
        raise ValueError(f"sparse.masked_matmul: x {list(x.shape)} @ y {list(y.shape)} does not give the mask's "
                         f"shape {coo.shape}")
    rows, cols = _host(coo.indices())
    left = _ops.gather(x, _index(rows, x), 0)
    right = _ops.gather(_ops.transpose(y, [1, 0]), _index(cols, y), 0)
    values = _ops.sum(_ops.multiply(left, right), [1], False)
    return _as_format(coo._with_values(values), mask)


# ---- structure ----
def transpose(x, perm, name=None):
    """The sparse tensor with its dims permuted (perm over all dims; dense dims stay in place)."""
    _check_sparse(x, "transpose")
    coo = _coo(x)
    perm = [int(p) % x.ndim for p in perm]
    if sorted(perm) != list(range(x.ndim)):
        raise ValueError(f"sparse.transpose: perm {perm} is not a permutation of the {x.ndim} dims")
    k = coo.sparse_dim
    if sorted(perm[:k]) != list(range(k)):
        raise ValueError(f"sparse.transpose: perm {perm} moves a dense dim; only the first {k} (sparse) dims "
                         "may be permuted")
    values = coo.values()
    if perm[k:] != list(range(k, x.ndim)):
        values = _ops.transpose(values, [0] + [p - k + 1 for p in perm[k:]])
    out = SparseCooTensor(_index(_host(coo.indices())[perm[:k]], values), values, [x.shape[p] for p in perm])
    return out.to_sparse_csr() if x.is_sparse_csr() else out


def sum(x, axis=None, dtype=None, keepdim=False, name=None):  # noqa: A001 - paddle name
    """The sum over `axis` (None: every dim) as a sparse COO tensor, as Paddle gives it."""
    _check_sparse(x, "sum")
    coo = _coo(x)
    values = coo.values() if dtype is None else M.cast(coo.values(), dtype)
    if axis is None:
        total = _ops.reshape(_ops.sum(values, [], False), [1])
        return SparseCooTensor(_index(np.zeros([1, 1]), total), total, [1], coalesced=True)
    axis = int(axis) % x.ndim
    k = coo.sparse_dim
    if axis >= k:  # a dense dim: sum inside the values
        values = _ops.sum(values, [axis - k + 1], bool(keepdim))
        shape = list(x.shape)
        shape[axis:axis + 1] = [1] if keepdim else []
        return SparseCooTensor(coo.indices(), values, shape, coo.is_coalesced())
    idx = _host(coo.indices())
    shape = list(x.shape)
    if keepdim:
        idx = idx.copy()
        idx[axis] = 0
        shape[axis] = 1
    else:
        idx = np.delete(idx, axis, axis=0)
        del shape[axis]
    if idx.shape[0] == 0:  # every sparse dim summed: one entry holding the total
        idx = np.zeros([1, values.shape[0]], np.int64)
        shape = [1] + shape
        values = _ops.reshape(values, [values.shape[0]] + shape[1:])
    out = SparseCooTensor(_index(idx, values), values, shape).coalesce()
    return out.to_sparse_csr() if x.is_sparse_csr() and out.ndim == 2 else out


def is_same_shape(x, y):
    return list(x.shape) == list(y.shape)


__all__ = ["SparseCooTensor", "SparseCsrTensor", "sparse_coo_tensor", "sparse_csr_tensor", "is_sparse", "pow",
           "cast", "coalesce", "add", "subtract", "multiply", "divide", "matmul", "mv", "addmm", "masked_matmul",
           "transpose", "sum", "is_same_shape", "nn"] + list(_UNARY)
