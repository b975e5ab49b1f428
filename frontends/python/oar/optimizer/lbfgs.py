"""L-BFGS (paddle.optimizer.LBFGS): a limited-memory quasi-Newton method
driven by a closure that re-evaluates the loss and its gradient.

Note [L-BFGS]
All parameters are treated as one flat vector x (their gradients as one flat
g, concatenated in parameter order). Each iteration of `step`:
  1. builds the direction d = -H g by the two-loop recursion over the last
     `history_size` pairs s = x_{k+1} - x_k, y = g_{k+1} - g_k (Nocedal &
     Wright, Numerical Optimization, 2nd ed., Algorithm 7.4), with the initial
     inverse Hessian H0 = (s.y / y.y) I of the newest pair; a pair with
     s.y <= 1e-10 (no positive curvature) is skipped, so H stays positive
     definite;
  2. moves x along d: with line_search_fn=None by the fixed step
     t = learning_rate (the very first iteration: learning_rate *
     min(1, 1 / |g|_1), since H0 = I knows no scale yet); with "strong_wolfe"
     by a step that satisfies the strong Wolfe conditions (c1 = 1e-4,
     c2 = 0.9), found by bracketing and zooming with safeguarded cubic
     interpolation (Algorithms 3.5 and 3.6 there);
  3. stops on: max_iter iterations in this call; max_eval closure calls in
     this call (a hard bound: the line search gets only the calls left);
     |g|_inf <= tolerance_grad; |t d|_inf <= tolerance_change; a loss change
     below tolerance_change; or a direction that is not a descent direction
     (g.d > -tolerance_change).
The history, the last direction and step survive between `step` calls (and
in state_dict), so calling step repeatedly continues one run.
Scalars (dot products, step sizes) are Python floats (f64); the flat vectors
keep the parameters' dtype and device.
weight_decay adds coeff * p (L2Decay or a float) or coeff * sign(p) (L1Decay)
to the gradient and the matching 0.5 coeff |p|^2 or coeff |p|_1 to the loss
the line search sees, so the two stay consistent; grad_clip is applied to the
gathered gradient (the loss is not changed, so a clipping grad_clip makes the
Wolfe conditions harder to meet)."""
from .. import _C
from ..autograd import enable_grad, no_grad
from ..framework import Tensor
from .optimizer import L1Decay, Optimizer

_ops = _C.ops


def _dot(a, b):
    return float(_ops.sum(_ops.multiply(a, b), [], False))


def _max_abs(a):
    return float(_ops.max(_ops.abs(a), [], False))


def _axpy(alpha, x, y):
    """y + alpha * x."""
    return _ops.add(y, _ops.multiply_scalar(x, float(alpha)))


def _cubic_minimizer(x1, f1, g1, x2, f2, g2, lo=None, hi=None):
    """The minimizer in [lo, hi] (default: between x1 and x2) of the cubic that
    interpolates f and its slope g at x1 and x2; the midpoint where that cubic
    has no minimum (Nocedal & Wright (3.59))."""
    if lo is None:
        lo, hi = min(x1, x2), max(x1, x2)
    d1 = g1 + g2 - 3.0 * (f1 - f2) / (x1 - x2)
    disc = d1 * d1 - g1 * g2
    if disc < 0.0:
        return 0.5 * (lo + hi)
    d2 = disc ** 0.5
    if x1 <= x2:
        t = x2 - (x2 - x1) * (g2 + d2 - d1) / (g2 - g1 + 2.0 * d2)
    else:
        t = x1 - (x1 - x2) * (g1 + d2 - d1) / (g1 - g2 + 2.0 * d2)
    if t != t:  # 0/0 when the two points carry the same slope and value
        return 0.5 * (lo + hi)
    return min(max(t, lo), hi)


def _strong_wolfe(phi, t, d, f0, g0, gtd0, tolerance_change, max_calls, c1=1e-4, c2=0.9):
    """A step t along d meeting the strong Wolfe conditions
        f(t) <= f0 + c1 t f'(0),   |f'(t)| <= c2 |f'(0)|
    where phi(t) returns (f(t), grad(t)) and f'(t) = grad(t).d; at most
    max_calls calls of phi. Returns (f, grad, t, calls) of the best point."""
    d_scale = _max_abs(d)
    f, g = phi(t)
    calls = 1
    gtd = _dot(g, d)
    # Bracketing (Algorithm 3.5): grow t until an interval holds a Wolfe point.
    prev = (0.0, f0, g0, gtd0)
    bracket = None
    while True:
        if f > f0 + c1 * t * gtd0 or (calls > 1 and f >= prev[1]):
            bracket = [prev, (t, f, g, gtd)]
            break
        if abs(gtd) <= -c2 * gtd0:
            return f, g, t, calls
        if gtd >= 0.0:
            bracket = [prev, (t, f, g, gtd)]
            break
        if calls >= max_calls:
            return f, g, t, calls  # sufficient decrease holds here; out of budget
        t_next = _cubic_minimizer(prev[0], prev[1], prev[3], t, f, gtd, lo=t + 0.01 * (t - prev[0]), hi=10.0 * t)
        prev = (t, f, g, gtd)
        t = t_next
        f, g = phi(t)
        calls += 1
        gtd = _dot(g, d)
    # Zoom (Algorithm 3.6): shrink the bracket; `low` is its end with the lower loss.
    low, high = (0, 1) if bracket[0][1] <= bracket[1][1] else (1, 0)
    stuck = False
    while calls < max_calls:
        (ta, fa, _, ga), (tb, fb, _, gb) = bracket
        if abs(tb - ta) * d_scale < tolerance_change:
            break
        t = _cubic_minimizer(ta, fa, ga, tb, fb, gb)
        # Keep t away from the ends: a point there barely shrinks the bracket.
        a, b = min(ta, tb), max(ta, tb)
        margin = 0.1 * (b - a)
        if min(b - t, t - a) < margin:
            if stuck or t >= b or t <= a:
                t = b - margin if abs(t - b) < abs(t - a) else a + margin
                stuck = False
            else:
                stuck = True
        else:
            stuck = False
        f, g = phi(t)
        calls += 1
        gtd = _dot(g, d)
        point = (t, f, g, gtd)
        if f > f0 + c1 * t * gtd0 or f >= bracket[low][1]:
            bracket[high] = point
        else:
            if abs(gtd) <= -c2 * gtd0:
                return f, g, t, calls
            if gtd * (bracket[high][0] - bracket[low][0]) >= 0.0:
                bracket[high] = bracket[low]
            bracket[low] = point
        low, high = (0, 1) if bracket[0][1] <= bracket[1][1] else (1, 0)
    t, f, g, _ = bracket[low]
    return f, g, t, calls


class LBFGS(Optimizer):
    """paddle.optimizer.LBFGS: `step(closure)` runs up to max_iter L-BFGS
    iterations (Note [L-BFGS] in this file). The closure clears the
    gradients, computes the loss, calls backward and returns the loss:

        def closure():
            opt.clear_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            return loss
        opt.step(closure)

    max_eval defaults to max_iter * 5 // 4; tolerance_grad bounds the
    gradient's largest absolute entry."""

    def __init__(self, learning_rate=1.0, max_iter=20, max_eval=None, tolerance_grad=1e-07,
                 tolerance_change=1e-09, history_size=100, line_search_fn=None, parameters=None,
                 weight_decay=None, grad_clip=None, name=None):
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(f"LBFGS: line_search_fn must be None or 'strong_wolfe', got {line_search_fn!r}")
        if int(max_iter) < 1 or int(history_size) < 1:
            raise ValueError(f"LBFGS: max_iter and history_size must be at least 1, got {max_iter} and "
                             f"{history_size}")
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._max_iter = int(max_iter)
        self._max_eval = int(max_eval) if max_eval is not None else self._max_iter * 5 // 4
        if self._max_eval < 1:
            raise ValueError(f"LBFGS: max_eval must be at least 1, got {max_eval}")
        self._tolerance_grad = float(tolerance_grad)
        self._tolerance_change = float(tolerance_change)
        self._history_size = int(history_size)
        self._line_search_fn = line_search_fn
        self._params = [p for p in self._parameter_list if not p.stop_gradient]
        self._state = {"func_evals": 0, "n_iter": 0}

    # ---- the flat views of parameters and gradients ----
    def _flat_params(self):
        return _ops.concat([_ops.reshape(p.detach(), [-1]) for p in self._params], 0)

    def _set_flat_params(self, flat):
        offset = 0
        for p in self._params:
            n = p.size
            p._set_data_(_ops.reshape(flat[offset:offset + n], list(p.shape)).detach())
            offset += n

    def _flat_grad(self):
        pairs = []
        for p in self._params:
            g = p.grad
            g = _ops.zeros_like(p.detach()) if g is None else g.detach()
            if g.dtype != p.dtype:
                g = _ops.cast(g, p.dtype)
            kind, coeff = self._decay(p)
            if coeff:
                reg = _ops.sign(p.detach()) if kind == "l1" else p.detach()
                g = _axpy(coeff, reg, g)
            pairs.append((p, g))
        if self._grad_clip is not None and pairs:
            pairs = self._grad_clip(pairs)
        return _ops.concat([_ops.reshape(g, [-1]) for _, g in pairs], 0)

    def _decay(self, p):
        reg = getattr(p, "regularizer", None) or self._weight_decay
        if reg is None:
            return None, 0.0
        if isinstance(reg, (int, float)):
            return "l2", float(reg)
        return ("l1" if isinstance(reg, L1Decay) else "l2"), float(reg.coeff)

    def _decay_loss(self):
        total = 0.0
        for p in self._params:
            kind, coeff = self._decay(p)
            if coeff:
                x = p.detach()
                total += coeff * (float(_ops.sum(_ops.abs(x), [], False)) if kind == "l1" else 0.5 * _dot(x, x))
        return total

    def _evaluate(self, closure):
        """Runs the closure with grad enabled; returns (its loss tensor, loss as a float with the decay
        term, the flat gradient)."""
        with enable_grad():
            loss = closure()
        if not isinstance(loss, Tensor):
            raise TypeError(f"LBFGS.step: the closure must return the loss as a Tensor, got {type(loss).__name__}")
        self._state["func_evals"] += 1
        return loss, float(loss) + self._decay_loss(), self._flat_grad()

    # ---- the two-loop recursion ----
    def _direction(self, g):
        s_list, y_list, rho = self._state["old_sk"], self._state["old_yk"], self._state["ro"]
        q = _ops.neg(g)
        alphas = [0.0] * len(s_list)
        for i in range(len(s_list) - 1, -1, -1):
            alphas[i] = rho[i] * _dot(s_list[i], q)
            q = _axpy(-alphas[i], y_list[i], q)
        r = _ops.multiply_scalar(q, self._state["H_diag"])
        for i in range(len(s_list)):
            beta = rho[i] * _dot(y_list[i], r)
            r = _axpy(alphas[i] - beta, s_list[i], r)
        return r

    def _remember(self, s, y):
        ys = _dot(y, s)
        if ys <= 1e-10:
            return
        st = self._state
        if len(st["old_sk"]) == self._history_size:
            for key in ("old_sk", "old_yk", "ro"):
                st[key].pop(0)
        st["old_sk"].append(s)
        st["old_yk"].append(y)
        st["ro"].append(1.0 / ys)
        st["H_diag"] = ys / _dot(y, y)

    @no_grad()
    def step(self, closure=None):
        """Runs up to max_iter iterations; returns the loss of the closure's first call."""
        if closure is None:
            raise ValueError("LBFGS.step: a closure is required (it re-evaluates the loss and calls backward)")
        st = self._state
        lr = self.get_lr()
        evals_at_start = st["func_evals"]
        orig_loss, loss, g = self._evaluate(closure)
        if _max_abs(g) <= self._tolerance_grad:
            return orig_loss
        tol_change = self._tolerance_change
        iters = 0
        while iters < self._max_iter:
            iters += 1
            st["n_iter"] += 1
            if st["n_iter"] == 1:
                st.update(old_sk=[], old_yk=[], ro=[], H_diag=1.0)
                d = _ops.neg(g)
                t = lr * min(1.0, 1.0 / float(_ops.sum(_ops.abs(g), [], False)))
            else:
                self._remember(_ops.multiply_scalar(st["d"], st["t"]), _ops.subtract(g, st["prev_flat_grad"]))
                d = self._direction(g)
                t = lr
            st["prev_flat_grad"], st["prev_loss"] = g, loss
            gtd = _dot(g, d)
            if gtd > -tol_change:
                st["d"], st["t"] = d, 0.0
                break
            calls_left = self._max_eval - (st["func_evals"] - evals_at_start)
            if calls_left <= 0:
                st["d"], st["t"] = d, 0.0
                break
            if self._line_search_fn == "strong_wolfe":
                x0 = self._flat_params()

                def phi(step_size):
                    self._set_flat_params(_axpy(step_size, d, x0))
                    return self._evaluate(closure)[1:]

                loss, g, t, _ = _strong_wolfe(phi, t, d, loss, g, gtd, tol_change, calls_left)
                self._set_flat_params(_axpy(t, d, x0))
            else:
                self._set_flat_params(_axpy(t, d, self._flat_params()))
                if iters < self._max_iter:
                    _, loss, g = self._evaluate(closure)
            st["d"], st["t"] = d, t
            if iters == self._max_iter or st["func_evals"] - evals_at_start >= self._max_eval:
                break
            if _max_abs(g) <= self._tolerance_grad:
                break
            if abs(t) * _max_abs(d) <= tol_change or abs(loss - st["prev_loss"]) < tol_change:
                break
        self._step_count += 1
        return orig_loss

    def minimize(self, loss, startup_program=None, parameters=None, no_grad_set=None):
        raise NotImplementedError("LBFGS.minimize: L-BFGS re-evaluates the loss; use step(closure)")

    # ---- state ----
    def state_dict(self):
        """{'state': {...}}: func_evals, n_iter, the last direction d and step t, the history
        (old_sk, old_yk, ro), H_diag, prev_flat_grad and prev_loss (Paddle's keys)."""
        return {"state": {k: (list(v) if isinstance(v, list) else v) for k, v in self._state.items()}}

    def set_state_dict(self, state_dict):
        state = state_dict.get("state", state_dict)
        self._state = {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in state.items()}
        self._state.setdefault("func_evals", 0)
        self._state.setdefault("n_iter", 0)
