"""paddle.static.nn.fc (a fully connected layer) and static.accuracy, built from ops."""
import math

from .. import math as M
from ..nn import functional as F
from ..nn.parameter import create_parameter


def fc(x, size, num_flatten_dims=1, weight_attr=None, bias_attr=None, activation=None, name=None):
    """out = activation(sum_i flatten(x_i) @ W_i + b): `x` (a tensor or a list
    of them) is flattened to 2-D at num_flatten_dims; bias_attr=False drops b."""
    del name
    xs = list(x) if isinstance(x, (list, tuple)) else [x]
    if not xs:
        raise ValueError("static.nn.fc: x is an empty list; expected a tensor or a list of tensors")
    if not isinstance(size, int) or size < 1:
        raise ValueError(f"static.nn.fc: size must be a positive int, got {size!r}")
    out = None
    for xi in xs:
        if not isinstance(num_flatten_dims, int) or not 1 <= num_flatten_dims < len(xi.shape):
            raise ValueError(f"static.nn.fc: num_flatten_dims must be in [1, {len(xi.shape) - 1}] for an input of "
                             f"shape {list(xi.shape)}, got {num_flatten_dims!r}")
        in_dim = math.prod(xi.shape[num_flatten_dims:])
        w = create_parameter([in_dim, size], xi.dtype, attr=weight_attr)
        if len(xi.shape) > num_flatten_dims + 1:
            xi = M.reshape(xi, [0] * num_flatten_dims + [in_dim])
        y = M.matmul(xi, w)
        out = y if out is None else M.add(out, y)
    if bias_attr is not False:
        b = create_parameter([size], xs[0].dtype, attr=bias_attr, is_bias=True)
        out = M.add(out, b)
    if activation is not None:
        fn = getattr(F, activation, None) or getattr(M, activation, None)
        if fn is None:
            raise ValueError(f"static.nn.fc: unknown activation '{activation}'")
        out = fn(out)
    return out


def accuracy(input, label, k=1, correct=None, total=None, name=None):  # noqa: A002 - paddle's name
    """The fraction of rows of input [N, C] whose label ([N, 1] or [N]) is
    the top-1 class (k=1, the only k a program computes here)."""
    del correct, total, name
    if k != 1:
        raise ValueError(f"static.accuracy: only k=1 is supported in a static program, got k={k}")
    predicted = M.argmax(input, axis=1, keepdim=True)
    hit = M.equal(predicted, M.cast(M.reshape(label, [-1, 1]), predicted.dtype))
    return M.mean(M.cast(hit, "float32"))
