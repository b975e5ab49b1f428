"""paddle.nn.utils helpers."""
from .clip import clip_grad_norm_  # noqa: F401


def parameters_to_vector(parameters, name=None):
    from .. import math as M
    return M.concat([M.reshape(p, [-1]) for p in parameters])
