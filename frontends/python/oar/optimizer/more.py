"""More of Paddle's optimizers: Adagrad, Adadelta, RMSProp, NAdam, RAdam,
ASGD and Rprop. Each `_update` returns the parameter's new value from its
gradient (weight decay already folded in as L2/L1 on the gradient)."""
import math

from .optimizer import Optimizer, _ops


def _axpby(a, x, b, y):
    """a * x + b * y for scalars a, b."""
    return _ops.add(_ops.multiply_scalar(x, a), _ops.multiply_scalar(y, b))


def _bump_step(opt, p):
    """p's update count, this update included."""
    key = ("step", id(p))
    opt._accumulators[key] = opt._accumulators.get(key, 0) + 1
    return opt._accumulators[key]


def _sq(x):
    return _ops.multiply(x, x)


class Adagrad(Optimizer):
    """moment += g^2; p -= lr * g / (sqrt(moment) + epsilon)."""

    def __init__(self, learning_rate, epsilon=1e-06, parameters=None, weight_decay=None, grad_clip=None,
                 name=None, initial_accumulator_value=0.0):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._epsilon, self._initial = float(epsilon), float(initial_accumulator_value)

    def _update(self, p, g, lr, group):
        g = self._regularized(p, g, group)
        moment = _ops.add(self._acc("moment", p, self._initial), _sq(g))
        self._set_acc("moment", p, moment)
        step = _ops.divide(g, _ops.add_scalar(_ops.sqrt(moment), self._epsilon))
        return _ops.subtract(p.detach(), _ops.multiply_scalar(step, lr))


class Adadelta(Optimizer):
    """E[g^2] = rho E[g^2] + (1-rho) g^2; u = sqrt((E[u^2] + eps) / (E[g^2] + eps)) * g;
    E[u^2] = rho E[u^2] + (1-rho) u^2; p -= lr * u."""

    def __init__(self, learning_rate=0.001, epsilon=1e-06, rho=0.95, parameters=None, weight_decay=None,
                 grad_clip=None, name=None):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._epsilon, self._rho = float(epsilon), float(rho)

    def _update(self, p, g, lr, group):
        g = self._regularized(p, g, group)
        rho, eps = self._rho, self._epsilon
        avg_g2 = _axpby(rho, self._acc("avg_squared_grad", p), 1 - rho, _sq(g))
        ratio = _ops.divide(_ops.add_scalar(self._acc("avg_squared_update", p), eps), _ops.add_scalar(avg_g2, eps))
        update = _ops.multiply(_ops.sqrt(ratio), g)
        self._set_acc("avg_squared_grad", p, avg_g2)
        self._set_acc("avg_squared_update", p, _axpby(rho, self._acc("avg_squared_update", p), 1 - rho, _sq(update)))
        return _ops.subtract(p.detach(), _ops.multiply_scalar(update, lr))


class RMSProp(Optimizer):
    """ms = rho ms + (1-rho) g^2 (centered: minus mg^2, mg = rho mg + (1-rho) g);
    mom = momentum mom + lr g / sqrt(ms + eps); p -= mom."""

    def __init__(self, learning_rate, rho=0.95, epsilon=1e-06, momentum=0.0, centered=False, parameters=None,
                 weight_decay=None, grad_clip=None, name=None):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._rho, self._epsilon, self._momentum, self._centered = float(rho), float(epsilon), float(momentum), centered

    def _update(self, p, g, lr, group):
        g = self._regularized(p, g, group)
        rho = self._rho
        ms = _axpby(rho, self._acc("mean_square", p), 1 - rho, _sq(g))
        self._set_acc("mean_square", p, ms)
        denom = ms
        if self._centered:
            mg = _axpby(rho, self._acc("mean_grad", p), 1 - rho, g)
            self._set_acc("mean_grad", p, mg)
            denom = _ops.subtract(ms, _sq(mg))
        step = _ops.divide(_ops.multiply_scalar(g, lr), _ops.sqrt(_ops.add_scalar(denom, self._epsilon)))
        mom = _ops.add(_ops.multiply_scalar(self._acc("momentum", p), self._momentum), step)
        self._set_acc("momentum", p, mom)
        return _ops.subtract(p.detach(), mom)


class NAdam(Optimizer):
    """Adam with Nesterov momentum and the momentum-decay schedule
    mu_t = beta1 (1 - 0.5 * 0.96^(t * momentum_decay))."""

    def __init__(self, learning_rate=0.002, beta1=0.9, beta2=0.999, epsilon=1e-08, momentum_decay=0.004,
                 parameters=None, weight_decay=None, grad_clip=None, name=None):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._beta1, self._beta2, self._epsilon = float(beta1), float(beta2), float(epsilon)
        self._momentum_decay = float(momentum_decay)

    def _update(self, p, g, lr, group):
        g = self._regularized(p, g, group)
        b1, b2 = self._beta1, self._beta2
        t = _bump_step(self, p)
        mu = b1 * (1 - 0.5 * 0.96 ** (t * self._momentum_decay))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * self._momentum_decay))
        mu_product = self._accumulators.get(("mu_product", id(p)), 1.0) * mu
        self._accumulators[("mu_product", id(p))] = mu_product
        m = _axpby(b1, self._acc("moment1", p), 1 - b1, g)
        v = _axpby(b2, self._acc("moment2", p), 1 - b2, _sq(g))
        self._set_acc("moment1", p, m)
        self._set_acc("moment2", p, v)
        m_hat = _axpby(mu_next / (1 - mu_product * mu_next), m, (1 - mu) / (1 - mu_product), g)
        denom = _ops.add_scalar(_ops.sqrt(_ops.multiply_scalar(v, 1 / (1 - b2 ** t))), self._epsilon)
        return _ops.subtract(p.detach(), _ops.multiply_scalar(_ops.divide(m_hat, denom), lr))


class RAdam(Optimizer):
    """Adam with the variance rectification term r_t once rho_t > 5 (plain
    momentum SGD on the bias-corrected first moment before that)."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08, parameters=None,
                 weight_decay=None, grad_clip=None, name=None):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._beta1, self._beta2, self._epsilon = float(beta1), float(beta2), float(epsilon)

    def _update(self, p, g, lr, group):
        g = self._regularized(p, g, group)
        b1, b2 = self._beta1, self._beta2
        t = _bump_step(self, p)
        m = _axpby(b1, self._acc("moment1", p), 1 - b1, g)
        v = _axpby(b2, self._acc("moment2", p), 1 - b2, _sq(g))
        self._set_acc("moment1", p, m)
        self._set_acc("moment2", p, v)
        m_hat = _ops.multiply_scalar(m, 1 / (1 - b1 ** t))
        rho_inf = 2 / (1 - b2) - 1
        rho_t = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
        if rho_t <= 5:
            return _ops.subtract(p.detach(), _ops.multiply_scalar(m_hat, lr))
        r = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
        adaptive = _ops.divide(_ops.full_like(v, math.sqrt(1 - b2 ** t)), _ops.add_scalar(_ops.sqrt(v), self._epsilon))
        return _ops.subtract(p.detach(), _ops.multiply_scalar(_ops.multiply(m_hat, adaptive), lr * r))


class ASGD(Optimizer):
    """Averaged SGD over the last batch_num gradients: d += g - y[i]; y[i] = g;
    p -= lr / min(t, batch_num) * d, with i = t mod batch_num."""

    def __init__(self, learning_rate=0.001, batch_num=1, parameters=None, weight_decay=None, grad_clip=None,
                 multi_precision=False, name=None):
        if not isinstance(batch_num, int) or batch_num < 1:
            raise ValueError(f"ASGD: batch_num must be a positive int, got {batch_num!r}")
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._batch_num = batch_num

    def _update(self, p, g, lr, group):
        g = self._regularized(p, g, group)
        t = _bump_step(self, p)
        slot = f"y_{(t - 1) % self._batch_num}"
        d = _ops.add(_ops.subtract(self._acc("d", p), self._acc(slot, p)), g)
        self._set_acc("d", p, d)
        self._set_acc(slot, p, g)
        return _ops.subtract(p.detach(), _ops.multiply_scalar(d, lr / min(t, self._batch_num)))


class Rprop(Optimizer):
    """Resilient backprop: each element's step grows by etas[1] while its
    gradient keeps its sign and shrinks by etas[0] (skipping that update)
    when it flips, within learning_rate_range; p -= sign(g) * step."""

    def __init__(self, learning_rate=0.001, learning_rate_range=(1e-05, 50), parameters=None, etas=(0.5, 1.2),
                 grad_clip=None, multi_precision=False, name=None):
        low, high = learning_rate_range
        if not 0 < low <= high:
            raise ValueError(f"Rprop: learning_rate_range must be (low, high) with 0 < low <= high, "
                             f"got {learning_rate_range!r}")
        if not 0 < etas[0] < 1 < etas[1]:
            raise ValueError(f"Rprop: etas must be (decrease, increase) with 0 < decrease < 1 < increase, got {etas!r}")
        super().__init__(learning_rate, parameters, None, grad_clip, name)
        self._range, self._etas = (float(low), float(high)), (float(etas[0]), float(etas[1]))

    def _update(self, p, g, lr, group):
        steps = self._acc("learning_rate", p, lr)
        agreement = _ops.multiply(g, self._acc("prev", p))
        zero = _ops.zeros_like(g)
        grow = _ops.greater_than(agreement, zero)
        flip = _ops.less_than(agreement, zero)
        low, high = self._range
        steps = _ops.where(grow, _ops.minimum(_ops.multiply_scalar(steps, self._etas[1]), _ops.full_like(steps, high)),
                           _ops.where(flip, _ops.maximum(_ops.multiply_scalar(steps, self._etas[0]),
                                                         _ops.full_like(steps, low)), steps))
        g = _ops.where(flip, zero, g)
        self._set_acc("learning_rate", p, steps)
        self._set_acc("prev", p, g)
        return _ops.subtract(p.detach(), _ops.multiply(_ops.sign(g), steps))
