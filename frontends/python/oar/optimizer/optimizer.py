"""Optimizers (paddle.optimizer): SGD, Momentum, Adam, AdamW.

Updates run under no_grad and rebind each parameter to its new value
(Note [Rebinding] in src/tensor.cpp); the parameter keeps its identity,
gradient and hooks."""
import numbers

from .. import _C
from ..autograd import no_grad
from ..framework import Tensor, bfloat16 as _bfloat16, float16 as _float16, float32 as _float32
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
        only = getattr(self, "_only", None)  # set by apply_gradients
        for group in self._param_groups:
            for p in group["params"]:
                if p.stop_gradient or p.grad is None or only is not None and id(p) not in only:
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
        self._step()

    def _step(self, before=None, after=None):
        """One optimizer step. The per-parameter hooks (used by
        dist.shard_optimizer): before(p, g) -> the gradient to use,
        after(p, new) -> the value p takes. Without hooks the updates may run
        fused across parameters (_apply_updates)."""
        triples = self._params_grads()
        if self._grad_clip is not None and triples:
            clipped = self._grad_clip([(p, g) for p, g, _ in triples])
            triples = [(p, g, grp) for (p, g), (_, _, grp) in zip(clipped, triples)]
        self._step_count += 1
        base_lr = self.get_lr()
        entries = []
        for p, g, group in triples:
            if g is None:
                continue
            lr = float(group.get("learning_rate", 1.0)) * base_lr * getattr(p, "optimize_attr", {}).get(
                "learning_rate", 1.0)
            if g.dtype != p.dtype:
                g = _ops.cast(g, p.dtype)
            if before is None and after is None:
                entries.append((p, g, lr, group))
                continue
            if before is not None:
                g = before(p, g)
            new = self._update(p, g, lr, group)
            if after is not None:
                new = after(p, new)
            p._set_data_(new.detach())
        if entries:
            self._apply_updates(entries)

    _multi_precision = False  # keep float32 master weights of half parameters (amp.decorate O2)

    def _apply_updates(self, entries):
        """Updates every (param, grad, lr, group) of `entries`; an optimizer
        with a fused update overrides it."""
        for p, g, lr, group in entries:
            if self._multi_precision and p.dtype in (_float16, _bfloat16):
                self._master_update(p, g, lr, group)
            else:
                p._set_data_(self._update(p, g, lr, group).detach())

    def _master_update(self, p, g, lr, group):
        """The update of a half parameter on its float32 master weight: p holds
        the master while _update runs (so accumulators are float32 too), then
        the master's value cast back to p's dtype."""
        half = p.dtype
        key = ("master_weight", id(p))
        master = self._accumulators.get(key)
        if master is None:
            master = _ops.cast(p.detach(), _float32)
        p._set_data_(master)
        try:
            new = self._update(p, _ops.cast(g, _float32), lr, group).detach()
        finally:
            p._set_data_(_ops.cast(master, half))
        self._accumulators[key] = new
        p._set_data_(_ops.cast(new, half))

    def backward(self, loss, startup_program=None, parameters=None, no_grad_set=None, callbacks=None):
        """In dynamic mode, Paddle's backward does no differentiation: it
        returns the (param, grad) pairs of the parameters that hold a gradient
        (from an earlier loss.backward())."""
        params = self._parameter_list if parameters is None else list(parameters)
        return [(p, p.grad) for p in params if not p.stop_gradient and p.grad is not None]

    def apply_gradients(self, params_grads):
        """Updates the parameters of `params_grads` with their current gradients."""
        self._only = {id(p) for p, _ in params_grads}
        try:
            self.step()
        finally:
            self._only = None
        return []

    def minimize(self, loss, startup_program=None, parameters=None, no_grad_set=None):
        """backward + apply_gradients: like Paddle's dynamic mode, it uses the
        gradients already computed (call loss.backward() first)."""
        params_grads = self.backward(loss, startup_program, parameters, no_grad_set)
        self.apply_gradients(params_grads)
        return [], params_grads

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
        """Accumulators by '<param name or index>_<name>' (tensors; update counts as ints) and the LR
        scheduler's state, with Paddle's keys (no '@step')."""
        names = self._param_names()
        state = {}
        for (name, pid), value in self._accumulators.items():
            state[f"{names[pid]}_{name}"] = value
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
            elif isinstance(value, (Tensor, numbers.Number)):
                pname, _, acc = key.rpartition("_")
                for n in sorted(by_name, key=len, reverse=True):
                    if key.startswith(n + "_"):
                        pname, acc = n, key[len(n) + 1:]
                        break
                if pname in by_name:
                    self._accumulators[(acc, by_name[pname])] = value.detach() if isinstance(value, Tensor) else value

    def _param_names(self):
        # By position, so a state dict fits a freshly built model of the same architecture.
        return {id(p): f"param_{i}" for i, p in enumerate(self._parameter_list)}


class SGD(Optimizer):
    def __init__(self, learning_rate=0.001, parameters=None, weight_decay=None, grad_clip=None,
                 multi_precision=False, name=None):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._multi_precision = bool(multi_precision)

    def _update(self, p, g, lr, group):
        g = self._regularized(p, g, group)
        return _ops.subtract(p.detach(), _ops.multiply_scalar(g, lr))


class Momentum(Optimizer):
    """v = momentum * v + g; p -= lr * v (nesterov: p -= lr * (g + momentum * v))."""

    def __init__(self, learning_rate=0.001, momentum=0.9, parameters=None, use_nesterov=False,
                 weight_decay=None, grad_clip=None, multi_precision=False, rescale_grad=1.0, name=None):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._momentum = float(momentum)
        self._multi_precision = bool(multi_precision)
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
        self._multi_precision = bool(multi_precision)

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

    # ---- the fused update: Note [Fused Adam] in core/src/ops/optimizer_ops.cpp ----
    def _fused_terms(self, p, g, lr, group):
        """(gradient, learning rate, decoupled weight decay) of the fused op."""
        return self._regularized(p, g, group), lr, 0.0

    def _fused_key(self, p, g):
        """How p batches into one adam_update call, or None for the op-by-op
        update (complex or integer params, moments of another dtype, a
        distributed param whose gradient is placed otherwise or Partial)."""
        d = p.dtype
        if not d.is_floating_point or d.is_complex or g.dtype != d:
            return None
        if p.is_dist() or g.is_dist():
            # Note [Fused Adam on distributed parameters]: the update is
            # elementwise, so each rank updates its own pieces when the
            # gradient is placed exactly as the parameter and holds its
            # value (no Partial); moments are placed as the parameter.
            if not (p.is_dist() and g.is_dist()):
                return None
            attr = _C.dist.dist_attr(p)
            if _C.dist.dist_attr(g) != attr or any(kind == 2 for kind, _, _ in attr[1]):
                return None
            for name in ("moment1", "moment2") + (("moment2_max",) if self._amsgrad else ()):
                acc = self._accumulators.get((name, id(p)))
                if acc is not None and (not acc.is_dist() or _C.dist.dist_attr(acc) != attr):
                    return None
        half = d in (_float16, _bfloat16)
        moment = _float32 if half else d
        for name in ("moment1", "moment2") + (("moment2_max",) if self._amsgrad else ()):
            acc = self._accumulators.get((name, id(p)))
            if acc is not None and acc.dtype != moment:
                return None
        master = half and self._multi_precision
        return moment, master, p._device

    def _apply_updates(self, entries):
        batches, rest = {}, []
        for p, g, lr, group in entries:
            key = self._fused_key(p, g)
            if key is None:
                rest.append((p, g, lr, group))
                continue
            g, lr_eff, wd = self._fused_terms(p, g, lr, group)
            t = self._accumulators.get(("step", id(p)), 0) + 1
            batches.setdefault((key, float(lr_eff), t, float(wd)), []).append((p, g))
        super()._apply_updates(rest)
        for ((moment, master, _), lr, t, wd), items in batches.items():
            self._fused_adam(items, moment, master, lr, t, wd)

    def _fused_adam(self, items, moment, master, lr, t, wd):
        names = ("moment1", "moment2") + (("moment2_max",) if self._amsgrad else ())
        # Note [Fused Adam on distributed parameters]: the op runs on this
        # rank's pieces (local values); its outputs are placed back as each
        # parameter (make_dist: no communication).
        attrs = [_C.dist.dist_attr(p) if p.is_dist() else None for p, _ in items]

        def local(x, attr):
            if attr is None:
                return x
            piece = _C.dist.local_value(x)  # a replicated piece may be a strided view
            return piece if piece.is_contiguous() else piece.contiguous()

        def placed(x, p, attr):
            return x if attr is None else _C.dist.make_dist(x, attr[0], attr[1], list(p.shape))

        params = [local(p.detach(), a) for (p, _), a in zip(items, attrs)]
        inputs = params + [local(g, a) for (_, g), a in zip(items, attrs)]
        for name in names:
            for (p, _), value, a in zip(items, params, attrs):
                key = (name, id(p))
                if key not in self._accumulators:
                    self._accumulators[key] = placed(_ops.cast(_ops.full_like(value, 0.0), moment), p, a)
                inputs.append(local(self._accumulators[key], a))
        if master:
            names += ("master_weight",)
            for (p, _), value, a in zip(items, params, attrs):
                key = ("master_weight", id(p))
                if key not in self._accumulators:
                    self._accumulators[key] = placed(_ops.cast(value, moment), p, a)
                inputs.append(local(self._accumulators[key], a))
        outs = _ops.call("adam_update", inputs, {
            "lr": lr, "beta1": self._beta1, "beta2": self._beta2, "epsilon": self._epsilon, "step": t,
            "weight_decay": wd, "amsgrad": self._amsgrad, "master_weights": master})
        n = len(items)
        for i, ((p, _), a) in enumerate(zip(items, attrs)):
            p._set_data_(placed(outs[i], p, a))
            for k, name in enumerate(names):
                self._accumulators[(name, id(p))] = placed(outs[(k + 1) * n + i], p, a)
            self._accumulators[("step", id(p))] = t

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

    def _decoupled(self, p, lr, group):
        """(lr * lr_ratio, the decay coefficient or 0 where apply_decay_param_fun excludes p)."""
        coeff = float(group.get("weight_decay", self._coeff))
        ratio = self._lr_ratio(p) if self._lr_ratio is not None else 1.0
        decay = self._apply_decay_param_fun is None or self._apply_decay_param_fun(getattr(p, "name", None))
        return lr * ratio, (coeff if decay else 0.0)

    def _fused_terms(self, p, g, lr, group):
        lr_eff, coeff = self._decoupled(p, lr, group)
        return g, lr_eff, coeff

    def _update(self, p, g, lr, group):
        lr_eff, coeff = self._decoupled(p, lr, group)
        value = p.detach()
        if coeff != 0.0:
            value = _ops.multiply_scalar(value, 1.0 - lr_eff * coeff)
        return _ops.subtract(value, self._adam(p, g, lr_eff))
