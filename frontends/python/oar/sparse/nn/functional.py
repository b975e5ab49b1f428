"""paddle.sparse.nn.functional: activations on the stored values of a sparse tensor."""
from ...nn import functional as F


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

__all__ = ["relu", "relu6", "leaky_relu"]
