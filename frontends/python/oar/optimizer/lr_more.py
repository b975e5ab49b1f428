"""More learning-rate schedulers: LinearLR, CosineAnnealingWarmRestarts,
CyclicLR and OneCycleLR. Each computes the rate of `last_epoch` in closed form."""
import math

from .lr import LRScheduler


def _positive_int(value, what, owner):
    if not isinstance(value, int) or value <= 0:
        raise ValueError(f"{owner}: {what} must be a positive int, got {value!r}")


class LinearLR(LRScheduler):
    """Scales the rate linearly from start_factor to end_factor over total_steps."""

    def __init__(self, learning_rate, total_steps, start_factor=1.0 / 3, end_factor=1.0, last_epoch=-1,
                 verbose=False):
        _positive_int(total_steps, "total_steps", "LinearLR")
        if not 0 < start_factor <= 1:
            raise ValueError(f"LinearLR: start_factor must be in (0, 1], got {start_factor}")
        self.total_steps, self.start_factor, self.end_factor = total_steps, start_factor, end_factor
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        t = min(self.last_epoch, self.total_steps)
        return self.base_lr * (self.start_factor + (self.end_factor - self.start_factor) * t / self.total_steps)


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from the base rate to eta_min, restarting after T_0
    epochs, then T_0 * T_mult, T_0 * T_mult^2, ..."""

    def __init__(self, learning_rate, T_0, T_mult=1, eta_min=0, last_epoch=-1, verbose=False):  # noqa: N803
        _positive_int(T_0, "T_0", "CosineAnnealingWarmRestarts")
        if not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(f"CosineAnnealingWarmRestarts: T_mult must be an int >= 1, got {T_mult!r}")
        self.T_0, self.T_mult, self.eta_min = T_0, T_mult, eta_min
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        epoch = self.last_epoch
        if self.T_mult == 1:
            t_cur, t_i = epoch % self.T_0, self.T_0
        else:
            n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
            t_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
            t_i = self.T_0 * self.T_mult ** n
        return self.eta_min + (self.base_lr - self.eta_min) * (1 + math.cos(math.pi * t_cur / t_i)) / 2


class CyclicLR(LRScheduler):
    """Cycles between base_learning_rate and max_learning_rate (up in
    step_size_up steps, down in step_size_down), the amplitude scaled by mode
    (triangular: 1, triangular2: halved each cycle, exp_range: exp_gamma^step)
    or by scale_fn."""

    def __init__(self, base_learning_rate, max_learning_rate, step_size_up, step_size_down=None, mode="triangular",
                 exp_gamma=1.0, scale_fn=None, scale_mode="cycle", last_epoch=-1, verbose=False):
        _positive_int(step_size_up, "step_size_up", "CyclicLR")
        step_size_down = step_size_up if step_size_down is None else step_size_down
        _positive_int(step_size_down, "step_size_down", "CyclicLR")
        if scale_fn is None and mode not in ("triangular", "triangular2", "exp_range"):
            raise ValueError(f"CyclicLR: mode must be 'triangular', 'triangular2' or 'exp_range', got {mode!r}")
        if scale_mode not in ("cycle", "iterations"):
            raise ValueError(f"CyclicLR: scale_mode must be 'cycle' or 'iterations', got {scale_mode!r}")
        self.max_lr = float(max_learning_rate)
        self.cycle_size = step_size_up + step_size_down
        self.step_up_ratio = step_size_up / self.cycle_size
        if scale_fn is not None:
            self.scale_fn, self.scale_mode = scale_fn, scale_mode
        elif mode == "triangular":
            self.scale_fn, self.scale_mode = (lambda x: 1.0), "cycle"
        elif mode == "triangular2":
            self.scale_fn, self.scale_mode = (lambda x: 1 / 2.0 ** (x - 1)), "cycle"
        else:
            self.scale_fn, self.scale_mode = (lambda x: exp_gamma ** x), "iterations"
        super().__init__(base_learning_rate, last_epoch, verbose)

    def get_lr(self):
        cycle = math.floor(1 + self.last_epoch / self.cycle_size)
        pct = 1.0 + self.last_epoch / self.cycle_size - cycle
        factor = pct / self.step_up_ratio if pct <= self.step_up_ratio else (1 - pct) / (1 - self.step_up_ratio)
        height = (self.max_lr - self.base_lr) * factor
        return self.base_lr + height * self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)


class OneCycleLR(LRScheduler):
    """The one-cycle policy: up from max_learning_rate / divide_factor to
    max_learning_rate over phase_pct of total_steps, then down to
    end_learning_rate (three_phase: back to the initial rate first)."""

    def __init__(self, max_learning_rate, total_steps, divide_factor=25.0, end_learning_rate=0.0001, phase_pct=0.3,
                 anneal_strategy="cos", three_phase=False, last_epoch=-1, verbose=False):
        _positive_int(total_steps, "total_steps", "OneCycleLR")
        if not 0 <= phase_pct <= 1:
            raise ValueError(f"OneCycleLR: phase_pct must be in [0, 1], got {phase_pct}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got {anneal_strategy!r}")
        initial = max_learning_rate / divide_factor
        self.total_steps = total_steps
        up_end = float(phase_pct * total_steps) - 1
        if three_phase:
            self._phases = [(up_end, initial, max_learning_rate), (2 * up_end, max_learning_rate, initial),
                            (total_steps - 1, initial, end_learning_rate)]
        else:
            self._phases = [(up_end, initial, max_learning_rate), (total_steps - 1, max_learning_rate,
                                                                     end_learning_rate)]
        self._anneal = self._cos if anneal_strategy == "cos" else self._linear
        super().__init__(initial, last_epoch, verbose)

    @staticmethod
    def _cos(start, end, pct):
        return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)

    @staticmethod
    def _linear(start, end, pct):
        return (end - start) * pct + start

    def get_lr(self):
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"OneCycleLR: stepped {step} times, past total_steps={self.total_steps}")
        start_step = 0
        for i, (end_step, start_lr, end_lr) in enumerate(self._phases):
            if step <= end_step or i == len(self._phases) - 1:
                return self._anneal(start_lr, end_lr, (step - start_step) / (end_step - start_step))
            start_step = end_step
