"""paddle.amp.GradScaler: loss scaling for mixed-precision training.

The loss is multiplied by the scale before backward so small float16
gradients do not flush to zero; step() divides the gradients by it again and
skips the update when any gradient is inf or nan. With dynamic loss scaling
the scale is multiplied by decr_ratio after decr_every_n_nan_or_inf steps
with inf/nan gradients and by incr_ratio after incr_every_n_steps finite
steps in a row."""
from collections import defaultdict
from enum import Enum

import numpy as np

from .. import _C
from ..autograd import no_grad
from ..framework import Tensor, float32

_ops = _C.ops


class OptimizerState(Enum):
    INIT = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_state():
    return {"state": OptimizerState.INIT}


class AmpScaler:
    """The loss scaler behind GradScaler (Paddle's base class of the same name)."""

    def __init__(self, enable=True, init_loss_scaling=2.0**15, incr_ratio=2.0, decr_ratio=0.5,
                 incr_every_n_steps=1000, decr_every_n_nan_or_inf=1, use_dynamic_loss_scaling=True):
        self._enable = bool(enable)
        self._use_dynamic_loss_scaling = False
        self._init_loss_scaling = 1.0
        self._scale = 1.0
        self._found_inf = False
        self._cache_found_inf = False
        self._optimizer_states = defaultdict(_fresh_state)
        if not self._enable:
            return
        if not incr_ratio > 1.0:
            raise ValueError(f"GradScaler: incr_ratio must be > 1.0, but got {incr_ratio}")
        if not decr_ratio < 1.0:
            raise ValueError(f"GradScaler: decr_ratio must be < 1.0, but got {decr_ratio}")
        if not init_loss_scaling > 0:
            raise ValueError(f"GradScaler: init_loss_scaling must be positive, but got {init_loss_scaling}")
        self._init_loss_scaling = float(init_loss_scaling)
        self._scale = float(init_loss_scaling)
        self._incr_ratio = float(incr_ratio)
        self._decr_ratio = float(decr_ratio)
        self._incr_every_n_steps = int(incr_every_n_steps)
        self._decr_every_n_nan_or_inf = int(decr_every_n_nan_or_inf)
        self._incr_count = 0
        self._decr_count = 0
        self._use_dynamic_loss_scaling = bool(use_dynamic_loss_scaling)

    def scale(self, var):
        """`var` (the loss) times the loss scaling; `var` itself when disabled."""
        if not isinstance(var, Tensor):
            raise TypeError(f"GradScaler.scale: var must be a Tensor, but got {type(var).__name__}")
        if not self._enable:
            return var
        return _ops.multiply_scalar(var, self._scale)

    def minimize(self, optimizer, *args, **kwargs):
        """Unscales the gradients (unless unscale_ ran), then runs
        optimizer.minimize(*args) unless a gradient is inf/nan, then updates the scale."""
        if not self._enable:
            return optimizer.minimize(*args, **kwargs)
        state = self._optimizer_states[id(optimizer)]
        if state["state"] is OptimizerState.INIT:
            self._unscale(optimizer)
        result = (None, None)
        self._cache_found_inf = self._found_inf
        if not self._found_inf:
            result = optimizer.minimize(*args, **kwargs)
        if self._use_dynamic_loss_scaling:
            self._update()
        self._optimizer_states = defaultdict(_fresh_state)
        return result

    @no_grad()
    def _unscale(self, optimizer):
        if not self._enable:
            return
        state = self._optimizer_states[id(optimizer)]
        if state["state"] is OptimizerState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["state"] is OptimizerState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv = 1.0 / self._scale
        bad = []
        for p in optimizer._parameter_list:
            g = p.grad
            if g is None:
                continue
            g = _ops.multiply_scalar(g, inv)
            p._set_grad(g)
            g32 = g if g.dtype == float32 else _ops.cast(g, float32)
            # |g| - |g| is 0 for finite elements and nan for inf or nan ones.
            bad.append(_ops.sum(_ops.subtract(_ops.abs(g32), _ops.abs(g32)), [], False))
        total = bad[0] if bad else None
        for b in bad[1:]:
            total = _ops.add(total, b)
        self._found_inf = total is not None and not np.isfinite(float(total.numpy()))
        state["state"] = OptimizerState.UNSCALED

    def _update(self):
        """The dynamic loss scaling rule, after one step (found inf or not)."""
        if not self._enable:
            return
        if self._cache_found_inf:
            self._incr_count = 0
            self._decr_count += 1
            if self._decr_count == self._decr_every_n_nan_or_inf:
                self._scale = self._scale * self._decr_ratio
                self._decr_count = 0
        else:
            self._decr_count = 0
            self._incr_count += 1
            if self._incr_count == self._incr_every_n_steps:
                self._scale = self._scale * self._incr_ratio
                self._incr_count = 0

    # ---- settings ----
    def is_enable(self):
        return self._enable

    def is_use_dynamic_loss_scaling(self):
        return self._use_dynamic_loss_scaling

    def get_loss_scaling(self):
        """The current loss scaling, a float32 Tensor of shape [1]."""
        from ..creation import to_tensor
        return to_tensor(np.array([self._scale], dtype=np.float32))

    def get_init_loss_scaling(self):
        return self._init_loss_scaling

    def set_init_loss_scaling(self, new_init_loss_scaling):
        self._init_loss_scaling = float(new_init_loss_scaling)
        self._scale = float(new_init_loss_scaling)

    def get_incr_ratio(self):
        return self._incr_ratio

    def set_incr_ratio(self, new_incr_ratio):
        if not new_incr_ratio > 1.0:
            raise ValueError(f"GradScaler: incr_ratio must be > 1.0, but got {new_incr_ratio}")
        self._incr_ratio = float(new_incr_ratio)

    def get_decr_ratio(self):
        return self._decr_ratio

    def set_decr_ratio(self, new_decr_ratio):
        if not new_decr_ratio < 1.0:
            raise ValueError(f"GradScaler: decr_ratio must be < 1.0, but got {new_decr_ratio}")
        self._decr_ratio = float(new_decr_ratio)

    def get_incr_every_n_steps(self):
        return self._incr_every_n_steps

    def set_incr_every_n_steps(self, new_incr_every_n_steps):
        self._incr_every_n_steps = int(new_incr_every_n_steps)

    def get_decr_every_n_nan_or_inf(self):
        return self._decr_every_n_nan_or_inf

    def set_decr_every_n_nan_or_inf(self, new_decr_every_n_nan_or_inf):
        self._decr_every_n_nan_or_inf = int(new_decr_every_n_nan_or_inf)

    def state_dict(self):
        """The scaler's state ({} when disabled); `scale` is a float32 numpy array of shape [1]."""
        if not self._enable:
            return {}
        return {"scale": np.array([self._scale], dtype=np.float32), "incr_ratio": self._incr_ratio,
                "decr_ratio": self._decr_ratio, "incr_every_n_steps": self._incr_every_n_steps,
                "decr_every_n_nan_or_inf": self._decr_every_n_nan_or_inf, "incr_count": self._incr_count,
                "decr_count": self._decr_count, "use_dynamic_loss_scaling": self._use_dynamic_loss_scaling}

    def load_state_dict(self, state_dict):
        if not self._enable:
            return
        if not state_dict:
            raise RuntimeError("GradScaler.load_state_dict: the state dict is empty, possibly because it was "
                               "saved from a disabled GradScaler")
        scale = state_dict["scale"]
        scale = float(np.asarray(scale.numpy() if isinstance(scale, Tensor) else scale).reshape(-1)[0])
        self._init_loss_scaling = self._scale = scale
        self._incr_ratio = state_dict["incr_ratio"]
        self._decr_ratio = state_dict["decr_ratio"]
        self._incr_every_n_steps = state_dict["incr_every_n_steps"]
        self._decr_every_n_nan_or_inf = state_dict["decr_every_n_nan_or_inf"]
        self._incr_count = state_dict["incr_count"]
        self._decr_count = state_dict["decr_count"]
        self._use_dynamic_loss_scaling = state_dict["use_dynamic_loss_scaling"]


class GradScaler(AmpScaler):
    """Loss scaling for AMP training: scale(loss).backward(); step(opt); update()
    (or minimize(opt, scaled_loss)). step() skips the update when a gradient is inf/nan."""

    def __init__(self, enable=True, init_loss_scaling=2.0**16, incr_ratio=2.0, decr_ratio=0.5,
                 incr_every_n_steps=2000, decr_every_n_nan_or_inf=1, use_dynamic_loss_scaling=True):
        super().__init__(enable, init_loss_scaling, incr_ratio, decr_ratio, incr_every_n_steps,
                         decr_every_n_nan_or_inf, use_dynamic_loss_scaling)

    def step(self, optimizer):
        """Unscales the gradients (unless unscale_ ran) and runs optimizer.step()
        unless a gradient is inf or nan."""
        if not self._enable:
            return optimizer.step()
        state = self._optimizer_states[id(optimizer)]
        if state["state"] is OptimizerState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["state"] is OptimizerState.INIT:
            self._unscale(optimizer)
        self._cache_found_inf = self._found_inf
        if not self._found_inf:
            optimizer.step()
        state["state"] = OptimizerState.STEPPED
        if not self._use_dynamic_loss_scaling:
            self._optimizer_states = defaultdict(_fresh_state)

    def update(self):
        """Updates the loss scaling after step() (dynamic loss scaling only)."""
        if not self._enable:
            return
        if self._use_dynamic_loss_scaling:
            self._update()
            self._optimizer_states = defaultdict(_fresh_state)

    def unscale_(self, optimizer):
        """Divides the gradients of optimizer's parameters by the loss scaling (once per step)."""
        return self._unscale(optimizer)
