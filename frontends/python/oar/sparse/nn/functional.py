"""paddle.sparse.nn.functional: activations on the stored values of a sparse tensor."""
import numpy as np

from ... import _C
from ...nn import functional as F

_ops = _C.ops


def _values_op(fn, name):
    def op(x, *args, **kwargs):
        from .. import _check_sparse
        _check_sparse(x, f"nn.functional.{name}")
        kwargs.pop("name", None)
        return x._with_values(fn(x.values(), *args, **kwargs))
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"sparse {name}: {name} of the stored values (zero stays zero)."
    return op


relu = _values_op(F.relu, "relu")
relu6 = _values_op(F.relu6, "relu6")
leaky_relu = _values_op(F.leaky_relu, "leaky_relu")



def softmax(x, axis=-1, name=None):
    """Softmax over the stored entries of each row of a 2-D sparse matrix
    (missing entries count as -inf, as in Paddle)."""
    from .. import _matrix, _as_format
    from ..tensor import _host, _index, _zeros
    if axis not in (-1, 1):
        raise ValueError(f"sparse.nn.functional.softmax: only the last axis is supported, got axis={axis}")
    coo = _matrix(x, "nn.functional.softmax").coalesce()
    rows = _host(coo.indices())[0]
    values = coo.values()
    # Each row shifted by its own max (a constant: softmax does not change).
    row_max = np.full(coo.shape[0], -np.inf, dtype=np.float64)
    np.maximum.at(row_max, rows, values.detach().numpy().astype(np.float64))
    shift = _C.from_numpy(row_max[rows].astype(values.numpy().dtype), None, values._device)
    e = _ops.exp(_ops.subtract(values, shift))
    sums = _ops.scatter_add(_zeros([coo.shape[0]], values), _index(rows, values), e, 0)
    out = _ops.divide(e, _ops.gather(sums, _index(rows, values), 0))
    return _as_format(coo._with_values(out), x)


__all__ = ["relu", "relu6", "leaky_relu", "softmax"]
