"""Gradient clipping (paddle.nn.ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue).

A clip object is called with [(param, grad), ...] and returns the clipped pairs."""
from .. import _C
from .. import math as M

_ops = _C.ops


class ClipGradBase:
    def __call__(self, params_grads):
        return self._clip(params_grads)


class ClipGradByValue(ClipGradBase):
    def __init__(self, max, min=None):  # noqa: A002
        self.max = float(max)
        self.min = -self.max if min is None else float(min)

    def _clip(self, params_grads):
        return [(p, g if g is None or not getattr(p, "need_clip", True) else M.clip(g, self.min, self.max))
                for p, g in params_grads]


class ClipGradByNorm(ClipGradBase):
    def __init__(self, clip_norm):
        self.clip_norm = float(clip_norm)

    def _clip(self, params_grads):
        out = []
        for p, g in params_grads:
            if g is None or not getattr(p, "need_clip", True):
                out.append((p, g))
                continue
            norm = _ops.sqrt(_ops.sum(_ops.multiply(g, g), [], False))
            scale = M.divide(self.clip_norm, M.maximum(norm, self.clip_norm))
            out.append((p, _ops.multiply(g, M.cast(scale, g.dtype))))
        return out


class ClipGradByGlobalNorm(ClipGradBase):
    """g *= clip_norm / max(global_norm, clip_norm), global_norm over every clipped grad."""

    def __init__(self, clip_norm, group_name="default_group", auto_skip_clip=False):
        self.clip_norm = float(clip_norm)

    def _clip(self, params_grads):
        squares = [_ops.cast(_ops.sum(_ops.multiply(g, g), [], False), M.convert_dtype("float32"))
                   for p, g in params_grads if g is not None and getattr(p, "need_clip", True)]
        if not squares:
            return list(params_grads)
        total = squares[0]
        for s in squares[1:]:
            total = _ops.add(total, s)
        global_norm = _ops.sqrt(total)
        scale = M.divide(self.clip_norm, M.maximum(global_norm, self.clip_norm))
        return [(p, g if g is None or not getattr(p, "need_clip", True) else _ops.multiply(g, M.cast(scale, g.dtype)))
                for p, g in params_grads]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    params = [p for p in parameters if p.grad is not None]
    pairs = ClipGradByGlobalNorm(max_norm)([(p, p.grad) for p in params])
    for p, g in pairs:
        p._set_grad(g)
