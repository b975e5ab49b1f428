"""Optimizers (paddle.optimizer): SGD, Momentum, Adam, AdamW.

Updates run under no_grad and rebind each parameter to its new value
(Note [Rebinding] in src/tensor.cpp); the parameter keeps its identity,
gradient and hooks."""
import numbers

from .. import _C
from ..autograd import no_grad
from ..framework import Tensor
from .lr import LRScheduler

_ops = _C.ops


class L2Decay:
    def __init__(self, coeff=0.0):
        self.coeff = float(coeff)


class L1Decay:
    def __init__(self, coeff=0.0):
        self.coeff = float(coeff)


class Optimizer:
    def __init__(self, learning_rate=0.001, parameters=None, weight_decay=None, grad_clip=None, name=None):
        if parameters is None:
            raise ValueError("optimizer: `parameters` is required in dynamic mode (pass model.parameters())")
        params = list(parameters)
        if params and isinstance(params[0], dict):
            self._param_groups = [dict(g, params=list(g["params"])) for g in params]
        else:
            self._param_groups = [{"params": params}]
        self._learning_rate = learning_rate
        self._weight_decay = weight_decay
        self._grad_clip = grad_clip
        self._accumulators = {}  # (name, id(param)) -> Tensor
        self._step_count = 0

    @property
    def _parameter_list(self):
        return [p for g in self._param_groups for p in g["params"]]

    # ---- learning rate ----
    def get_lr(self):
        lr = self._learning_rate
        return float(lr()) if isinstance(lr, LRScheduler) else float(lr)

    def set_lr(self, value):
        if isinstance(self._learning_rate, LRScheduler):
            raise RuntimeError("set_lr: the optimizer uses an LRScheduler; step the scheduler instead")
        self._learning_rate = float(value)

    def set_lr_scheduler(self, scheduler):
        self._learning_rate = scheduler

    # ---- gradients ----
    def clear_grad(self, set_to_zero=True):
        for p in self._parameter_list:
            if not p.stop_gradient:
                p.clear_gradient(set_to_zero)

    clear_gradients = clear_grad

    def _params_grads(self):
        pairs = []
        for group in self._param_groups:
            for p in group["params"]:
                if p.stop_gradient or p.grad is None:
                    continue
                pairs.append((p, p.grad, group))
        return pairs

    def _decay_coeff(self, p, group):
        wd = group.get("weight_decay", self._weight_decay)
        reg = getattr(p, "regularizer", None)
        if reg is not None:
            wd = reg
        if wd is None:
            return None, 0.0
        if isinstance(wd, numbers.Number):
            return "l2", float(wd)
        return ("l1" if isinstance(wd, L1Decay) else "l2"), wd.coeff

    def _regularized(self, p, g, group):
        kind, coeff = self._decay_coeff(p, group)
        if coeff == 0.0:
            return g
        if kind == "l1":
            return _ops.add(g, _ops.multiply_scalar(_ops.sign(p.detach()), coeff))
        return _ops.add(g, _ops.multiply_scalar(p.detach(), coeff))

    @no_grad()
    def step(self):
        triples = self._params_grads()
        if self._grad_clip is not None and triples:
            clipped = self._grad_clip([(p, g) for p, g, _ in triples])
            triples = [(p, g, grp) for (p, g), (_, _, grp) in zip(clipped, triples)]
        self._step_count += 1
        base_lr = self.get_lr()
        for p, g, group in triples:
            if g is None:
                continue
            lr = float(group.get("learning_rate", 1.0)) * base_lr * getattr(p, "optimize_attr", {}).get(
                "learning_rate", 1.0)
            if g.dtype != p.dtype:
                g = _ops.cast(g, p.dtype)
            new = self._update(p, g, lr, group)
            p._set_data_(new.detach())

    def minimize(self, loss, startup_program=None, parameters=None, no_grad_set=None):
        loss.backward()
        self.step()
        return None, None

    def _acc(self, name, p, init=0.0):
        key = (name, id(p))
        if key not in self._accumulators:
            self._accumulators[key] = _ops.full_like(p.detach(), init)
        return self._accumulators[key]

    def _set_acc(self, name, p, value):
        self._accumulators[(name, id(p))] = value

    def _update(self, p, g, lr, group):
        raise NotImplementedError

    # ---- state ----
    def state_dict(self):
        """Accumulators by '<param name or index>_<name>', plus the step count and LR scheduler state."""
        names = self._param_names()
        state = {}
        for (name, pid), value in self._accumulators.items():
            state[f"{names[pid]}_{name}"] = value
        state["@step"] = self._step_count
        if isinstance(self._learning_rate, LRScheduler):
            state["LR_Scheduler"] = self._learning_rate.state_dict()
        return state

    def set_state_dict(self, state_dict):
        names = self._param_names()
        by_name = {v: k for k, v in names.items()}
        for key, value in state_dict.items():
            if key == "@step":
                self._step_count = int(value)
            elif key == "LR_Scheduler":
                if isinstance(self._learning_rate, LRScheduler):
                    self._learning_rate.set_state_dict(value)
            elif isinstance(value, Tensor):
                pname, _, acc = key.rpartition("_")
                for n in sorted(by_name, key=len, reverse=True):
                    if key.startswith(n + "_"):
                        pname, acc = n, key[len(n) + 1:]
                        break
                if pname in by_name:
                    self._accumulators[(acc, by_name[pname])] = value.detach()

    def _param_names(self):
        # By position, so a state dict fits a freshly built model of the same architecture.
        return {id(p): f"param_{i}" for i, p in enumerate(self._parameter_list)}


class SGD(Optimizer):
    def __init__(self, learning_rate=0.001, parameters=None, weight_decay=None, grad_clip=None,
                 multi_precision=False, name=None):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)

    def _update(self, p, g, lr, group):
        g = self._regularized(p, g, group)
        return _ops.subtract(p.detach(), _ops.multiply_scalar(g, lr))


class Momentum(Optimizer):
    """v = momentum * v + g; p -= lr * v (nesterov: p -= lr * (g + momentum * v))."""

    def __init__(self, learning_rate=0.001, momentum=0.9, parameters=None, use_nesterov=False,
                 weight_decay=None, grad_clip=None, multi_precision=False, rescale_grad=1.0, name=None):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._momentum = float(momentum)
        self._use_nesterov = use_nesterov
        self._rescale_grad = float(rescale_grad)

    def _update(self, p, g, lr, group):
        if self._rescale_grad != 1.0:
            g = _ops.multiply_scalar(g, self._rescale_grad)
        g = self._regularized(p, g, group)
        v = _ops.add(_ops.multiply_scalar(self._acc("velocity", p), self._momentum), g)
        self._set_acc("velocity", p, v)
        step = _ops.add(g, _ops.multiply_scalar(v, self._momentum)) if self._use_nesterov else v
        return _ops.subtract(p.detach(), _ops.multiply_scalar(step, lr))


class Adam(Optimizer):
    """Paddle's Adam: m, v moments; lr_t = lr * sqrt(1 - b2^t) / (1 - b1^t);
    p -= lr_t * m / (sqrt(v) + epsilon * sqrt(1 - b2^t))."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08, parameters=None,
                 weight_decay=None, grad_clip=None, lazy_mode=False, multi_precision=False, amsgrad=False,
                 name=None):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._beta1, self._beta2, self._epsilon = float(beta1), float(beta2), float(epsilon)
        self._amsgrad = amsgrad

    def _adam(self, p, g, lr):
        t = self._bump_step(p)
        m = _ops.add(_ops.multiply_scalar(self._acc("moment1", p), self._beta1),
                     _ops.multiply_scalar(g, 1.0 - self._beta1))
        # A complex parameter is a pair of real ones (as PyTorch's Adam views it):
        # the second moment holds re(g)^2 and im(g)^2 as its two parts.
        g2 = (_ops.complex(_ops.multiply(_ops.real(g), _ops.real(g)), _ops.multiply(_ops.imag(g), _ops.imag(g)))
              if g.dtype.is_complex else _ops.multiply(g, g))
        v = _ops.add(_ops.multiply_scalar(self._acc("moment2", p), self._beta2),
                     _ops.multiply_scalar(g2, 1.0 - self._beta2))
        self._set_acc("moment1", p, m)
        self._set_acc("moment2", p, v)
        if self._amsgrad:
            v = _ops.maximum(self._acc("moment2_max", p), v)
            self._set_acc("moment2_max", p, v)
        b1p, b2p = self._beta1 ** t, self._beta2 ** t
        lr_t = lr * (1.0 - b2p) ** 0.5 / (1.0 - b1p)
        eps = self._epsilon * (1.0 - b2p) ** 0.5
        if g.dtype.is_complex:  # per part: re(m) / (sqrt(re(v)) + eps), the same for im
            def part(f):
                return _ops.divide(f(m), _ops.add_scalar(_ops.sqrt(f(v)), eps))
            return _ops.multiply_scalar(_ops.complex(part(_ops.real), part(_ops.imag)), lr_t)
        denom = _ops.add_scalar(_ops.sqrt(v), eps)
        return _ops.multiply_scalar(_ops.divide(m, denom), lr_t)

    def _bump_step(self, p):
        key = ("step", id(p))
        t = self._accumulators.get(key, 0) + 1
        self._accumulators[key] = t
        return t

    def _update(self, p, g, lr, group):
        g = self._regularized(p, g, group)
        return _ops.subtract(p.detach(), self._adam(p, g, lr))

    def state_dict(self):
        state = super().state_dict()
        return {k: v for k, v in state.items() if not k.endswith("_step")} | {
            f"{n}_step": self._accumulators[("step", pid)] for pid, n in self._param_names().items()
            if ("step", pid) in self._accumulators}

    def set_state_dict(self, state_dict):
        names = {v: k for k, v in self._param_names().items()}
        for key, value in state_dict.items():
            if key.endswith("_step") and not isinstance(value, Tensor) and key[:-5] in names:
                self._accumulators[("step", names[key[:-5]])] = int(value)
        super().set_state_dict({k: v for k, v in state_dict.items() if not k.endswith("_step")})


class AdamW(Adam):
    """Adam with decoupled weight decay: p -= lr * lr_ratio * coeff * p before the Adam step."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08, parameters=None,
                 weight_decay=0.01, lr_ratio=None, apply_decay_param_fun=None, grad_clip=None, lazy_mode=False,
                 multi_precision=False, amsgrad=False, name=None):
        super().__init__(learning_rate, beta1, beta2, epsilon, parameters, None, grad_clip, lazy_mode,
                         multi_precision, amsgrad, name)
        self._coeff = weight_decay.coeff if isinstance(weight_decay, (L2Decay, L1Decay)) else float(weight_decay)
        self._lr_ratio = lr_ratio
        self._apply_decay_param_fun = apply_decay_param_fun

    def _update(self, p, g, lr, group):
        coeff = float(group.get("weight_decay", self._coeff))
        ratio = self._lr_ratio(p) if self._lr_ratio is not None else 1.0
        value = p.detach()
        decay = self._apply_decay_param_fun is None or self._apply_decay_param_fun(getattr(p, "name", None))
        if decay and coeff != 0.0:
            value = _ops.multiply_scalar(value, 1.0 - lr * ratio * coeff)
        return _ops.subtract(value, self._adam(p, g, lr * ratio))
