"""Sparse tensors of paddle.sparse: COO (indices [sparse_dim, nnz] + values
[nnz, *dense dims]) and CSR (2-D: crows [rows + 1], cols [nnz], values [nnz]).

The index tensors are int64 oar tensors computed on the host (numpy); the
values are an oar tensor, and every conversion or op moves values with
gather / scatter_add / elementwise ops, so gradients flow to the values a
sparse tensor was built from."""
import math

import numpy as np

from .. import _C
from ..creation import to_tensor
from ..framework import Tensor, convert_dtype

_ops = _C.ops
_INT64 = convert_dtype("int64")


def _host(t):
    return t.numpy() if isinstance(t, Tensor) else np.asarray(t)


def _index(array, like):
    """An int64 oar tensor on `like`'s device."""
    return to_tensor(np.ascontiguousarray(array, dtype=np.int64), place=like._device)


def _zeros(shape, like):
    return _ops.full([int(s) for s in shape], 0.0, like.dtype, like._device)


class _Sparse:
    """What COO and CSR tensors share: shape, dtype, values, printing."""

    def __init__(self, values, shape):
        self._values = values
        self._shape = [int(s) for s in shape]

    @property
    def shape(self):
        return list(self._shape)

    @property
    def ndim(self):
        return len(self._shape)

    def dim(self):
        return len(self._shape)

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def place(self):
        return self._values.place

    @property
    def stop_gradient(self):
        return self._values.stop_gradient

    @stop_gradient.setter
    def stop_gradient(self, value):
        self._values.stop_gradient = value

    def values(self):
        return self._values

    @property
    def grad(self):
        """The gradient of the values, in this tensor's pattern (None before a backward)."""
        g = self._values.grad
        return None if g is None else self._with_values(g)

    def nnz(self):
        return int(self._values.shape[0])

    def numel(self):
        return math.prod(self._shape)

    def is_sparse(self):
        return True

    def numpy(self):
        return self.to_dense().numpy()

    def astype(self, dtype):
        from . import cast
        return cast(self, value_dtype=dtype)

    def __neg__(self):
        return self._with_values(_ops.neg(self._values))

    def __add__(self, other):
        from . import add
        return add(self, other)

    def __sub__(self, other):
        from . import subtract
        return subtract(self, other)

    def __mul__(self, other):
        from . import multiply
        return multiply(self, other)

    def __matmul__(self, other):
        from . import matmul
        return matmul(self, other)

    def _header(self):
        return (f"Tensor(shape={self.shape}, dtype={self.dtype.name}, place={self.place}, "
                f"stop_gradient={self.stop_gradient}, \n")

    def __repr__(self):
        rows = [f"       {name}={np.array2string(_host(t), separator=', ', prefix=' ' * (8 + len(name)))}"
                for name, t in self._printed()]
        return self._header() + ", \n".join(rows) + ")"

    __str__ = __repr__


class SparseCooTensor(_Sparse):
    """A COO tensor: indices [sparse_dim, nnz] (int64) and values [nnz, *dense dims]."""

    def __init__(self, indices, values, shape, coalesced=False):
        super().__init__(values, shape)
        self._indices = indices
        self._coalesced = coalesced

    def indices(self):
        return self._indices

    @property
    def sparse_dim(self):
        return int(self._indices.shape[0])

    def is_sparse_coo(self):
        return True

    def is_sparse_csr(self):
        return False

    def is_coalesced(self):
        return self._coalesced

    def _printed(self):
        return [("indices", self._indices), ("values", self._values)]

    def _with_values(self, values):
        return SparseCooTensor(self._indices, values, self._shape, self._coalesced)

    def _flat(self):
        """Row-major positions of the entries in the sparse dims (numpy)."""
        idx = _host(self._indices)
        if idx.shape[1] == 0:
            return np.zeros([0], np.int64)
        return np.ravel_multi_index(tuple(idx), self._shape[:self.sparse_dim]).astype(np.int64)

    def coalesce(self):
        """Sorted indices, duplicates summed."""
        if self._coalesced:
            return self
        flat = self._flat()
        unique, inverse = np.unique(flat, return_inverse=True)
        sparse_shape = self._shape[:self.sparse_dim]
        indices = np.array(np.unravel_index(unique, sparse_shape), dtype=np.int64).reshape(len(sparse_shape), -1)
        values = self._values
        if len(unique) != len(flat) or np.any(np.diff(flat) < 0):
            values = _ops.scatter_add(_zeros([len(unique)] + list(values.shape[1:]), values), _index(inverse, values),
                                      values, 0)
        return SparseCooTensor(_index(indices, self._values), values, self._shape, coalesced=True)

    def to_dense(self):
        sparse_shape = self._shape[:self.sparse_dim]
        dense_dims = list(self._values.shape[1:])
        flat = _zeros([math.prod(sparse_shape)] + dense_dims, self._values)
        out = _ops.scatter_add(flat, _index(self._flat(), self._values), self._values, 0)
        return _ops.reshape(out, self._shape)

    def to_sparse_coo(self, sparse_dim=None):
        if sparse_dim is None or sparse_dim == self.sparse_dim:
            return self
        return self.to_dense().to_sparse_coo(sparse_dim)

    def to_sparse_csr(self):
        if self.ndim != 2 or self.sparse_dim != 2:
            raise ValueError(f"to_sparse_csr: oar's CSR tensors are 2-D with no dense dims; this COO tensor has "
                             f"shape {self.shape} and sparse_dim {self.sparse_dim}")
        c = self.coalesce()
        idx = _host(c._indices)
        crows = np.concatenate([[0], np.cumsum(np.bincount(idx[0], minlength=self._shape[0]))])
        return SparseCsrTensor(_index(crows, c._values), _index(idx[1], c._values), c._values, self._shape)


class SparseCsrTensor(_Sparse):
    """A 2-D CSR tensor: crows [rows + 1], cols [nnz] (int64) and values [nnz]."""

    def __init__(self, crows, cols, values, shape):
        super().__init__(values, shape)
        self._crows, self._cols = crows, cols

    def crows(self):
        return self._crows

    def cols(self):
        return self._cols

    def is_sparse_coo(self):
        return False

    def is_sparse_csr(self):
        return True

    def _printed(self):
        return [("crows", self._crows), ("cols", self._cols), ("values", self._values)]

    def _with_values(self, values):
        return SparseCsrTensor(self._crows, self._cols, values, self._shape)

    def _rows(self):
        return np.repeat(np.arange(self._shape[0], dtype=np.int64), np.diff(_host(self._crows)))

    def to_sparse_coo(self, sparse_dim=2):
        coo = SparseCooTensor(_index(np.stack([self._rows(), _host(self._cols)]), self._values), self._values,
                              self._shape, coalesced=_sorted_unique(self._rows(), _host(self._cols), self._shape))
        return coo if sparse_dim == 2 else coo.to_sparse_coo(sparse_dim)

    def to_sparse_csr(self):
        return self

    def to_dense(self):
        return self.to_sparse_coo().to_dense()


def _sorted_unique(rows, cols, shape):
    flat = rows * shape[1] + cols
    return bool(np.all(np.diff(flat) > 0))


# ---- dense Tensor methods ----
def dense_to_sparse_coo(x, sparse_dim):
    """The entries of `x` whose slice over the dense dims is not all zero."""
    if not isinstance(sparse_dim, (int, np.integer)) or not 1 <= sparse_dim <= len(x.shape):
        raise ValueError(f"to_sparse_coo: sparse_dim must be in [1, {len(x.shape)}] for a tensor of shape "
                         f"{list(x.shape)}, got {sparse_dim!r}")
    sparse_shape = list(x.shape[:sparse_dim])
    dense_dims = list(x.shape[sparse_dim:])
    host = x.detach().numpy().reshape([math.prod(sparse_shape), -1] if dense_dims else [-1])
    keep = np.flatnonzero(host.any(axis=1) if dense_dims else host != 0).astype(np.int64)
    indices = np.array(np.unravel_index(keep, sparse_shape), dtype=np.int64).reshape(sparse_dim, -1)
    flat = _ops.reshape(x, [math.prod(sparse_shape)] + dense_dims)
    values = _ops.gather(flat, _index(keep, x), 0)
    return SparseCooTensor(_index(indices, x), values, list(x.shape), coalesced=True)


def dense_to_sparse_csr(x):
    if len(x.shape) != 2:
        raise ValueError(f"to_sparse_csr: oar's CSR tensors are 2-D; got a tensor of shape {list(x.shape)}")
    return dense_to_sparse_coo(x, 2).to_sparse_csr()


def _not_sparse(x):
    return False


def install_tensor_methods():
    Tensor.to_sparse_coo = dense_to_sparse_coo
    Tensor.to_sparse_csr = dense_to_sparse_csr
    Tensor.to_dense = lambda x: x
    Tensor.is_sparse = _not_sparse
    Tensor.is_sparse_coo = _not_sparse
    Tensor.is_sparse_csr = _not_sparse
    Tensor.is_dense = lambda x: True


def _values_tensor(values, dtype, place, stop_gradient):
    if isinstance(values, Tensor):
        v = values if dtype is None or values.dtype == convert_dtype(dtype) else _ops.cast(values, convert_dtype(dtype))
        if not stop_gradient and v.is_leaf:
            v.stop_gradient = False
        return v
    v = to_tensor(values, dtype=dtype, place=place)
    v.stop_gradient = stop_gradient
    return v


def sparse_coo_tensor(indices, values, shape=None, dtype=None, place=None, stop_gradient=True):
    """A COO tensor from indices [sparse_dim, nnz] and values [nnz, *dense dims]
    (paddle.sparse.sparse_coo_tensor); shape defaults to the smallest that
    holds the indices. Duplicate indices are kept until coalesce()."""
    idx = _host(indices)
    if idx.ndim != 2 or not (np.issubdtype(idx.dtype, np.integer) or idx.size == 0):
        raise ValueError(f"sparse_coo_tensor: indices must be a 2-D integer array [sparse_dim, nnz], got shape "
                         f"{list(idx.shape)} of {idx.dtype}")
    idx = idx.astype(np.int64)
    v = _values_tensor(values, dtype, place, stop_gradient)
    if len(v.shape) == 0 or v.shape[0] != idx.shape[1]:
        raise ValueError(f"sparse_coo_tensor: indices hold {idx.shape[1]} entries but values has shape "
                         f"{list(v.shape)}; expected values of shape [{idx.shape[1]}, ...]")
    if idx.size and idx.min() < 0:
        raise ValueError("sparse_coo_tensor: indices must be >= 0")
    sparse_dim = idx.shape[0]
    if shape is None:
        shape = [int(m) + 1 for m in (idx.max(axis=1) if idx.size else np.zeros(sparse_dim, np.int64))]
        shape += list(v.shape[1:])
    shape = [int(s) for s in shape]
    if len(shape) != sparse_dim + len(v.shape) - 1 or list(v.shape[1:]) != shape[sparse_dim:]:
        raise ValueError(f"sparse_coo_tensor: shape {shape} does not fit indices of {sparse_dim} sparse dims and "
                         f"values of shape {list(v.shape)}")
    if idx.size and np.any(idx.max(axis=1) >= np.array(shape[:sparse_dim])):
        raise ValueError(f"sparse_coo_tensor: an index is out of range for shape {shape} (largest indices: "
                         f"{idx.max(axis=1).tolist()})")
    return SparseCooTensor(_index(idx, v), v, shape)


def sparse_csr_tensor(crows, cols, values, shape, dtype=None, place=None, stop_gradient=True):
    """A 2-D CSR tensor (paddle.sparse.sparse_csr_tensor): row r holds
    cols[crows[r]:crows[r + 1]] and the values there."""
    cr, co = _host(crows).astype(np.int64).reshape(-1), _host(cols).astype(np.int64).reshape(-1)
    v = _values_tensor(values, dtype, place, stop_gradient)
    shape = [int(s) for s in shape]
    if len(shape) != 2:
        raise ValueError(f"sparse_csr_tensor: oar's CSR tensors are 2-D; got shape {shape}")
    if len(cr) != shape[0] + 1 or cr[0] != 0 or np.any(np.diff(cr) < 0) or cr[-1] != len(co):
        raise ValueError(f"sparse_csr_tensor: crows must be {shape[0] + 1} non-decreasing offsets from 0 to "
                         f"nnz={len(co)}; got {cr.tolist()}")
    if list(v.shape) != [len(co)]:
        raise ValueError(f"sparse_csr_tensor: cols hold {len(co)} entries but values has shape {list(v.shape)}")
    if len(co) and (co.min() < 0 or co.max() >= shape[1]):
        raise ValueError(f"sparse_csr_tensor: a column index is out of range for shape {shape}")
    return SparseCsrTensor(_index(cr, v), _index(co, v), v, shape)


def is_sparse(x):
    return isinstance(x, _Sparse)
