"""paddle.autograd.PyLayer (a function with a hand-written backward),
paddle.autograd.backward, jacobian and hessian.

Note [PyLayer through hooks]: the core can record a custom node
(oar::record_custom) but oar._C does not expose it, so PyLayer joins the
tape with ops and gradient hooks instead. forward runs under no_grad; each
differentiable input x_i gets a proxy p_i = x_i + 0 (a node of its own), and
each output becomes y_j = where(true, value_j, anchor) with anchor a sum of
the proxies: y_j's value is value_j exactly, and the gradient reaching the
proxies through where is zero. A hook on each y_j records its gradient; the
first hook on a proxy (every y_j is downstream of every proxy, so all output
gradients have arrived) calls backward(ctx, *dy) once, and each proxy's hook
replaces its zero gradient with backward's result for x_i. The forward's
output tensors are rebound to the y_j (Note [Rebinding]), so a tensor saved
with ctx.save_for_backward(y) is the recorded output, as in Paddle: a
backward written in ops is differentiable again (create_graph), and the
second pass goes through the same hooks. State is reset when each pass ends
(_C.queue_backward_callback). A binding of record_custom would make this one
node instead of 2 + inputs + 2 * outputs."""
import numpy as np

from . import _C
from .autograd import grad, no_grad
from .framework import Tensor, convert_dtype

_ops = _C.ops
_FLOAT32 = convert_dtype("float32")


class PyLayerContext:
    """What forward leaves for backward: saved tensors and any attributes set on it."""

    def __init__(self):
        self._saved = ()
        self._non_differentiable = []
        self._materialize_grads = True
        self.not_inplace_tensors = ()

    def save_for_backward(self, *tensors):
        self._saved = tensors

    def saved_tensor(self):
        return self._saved

    def mark_non_differentiable(self, *tensors):
        """These outputs of forward get no gradient (their stop_gradient stays True)."""
        self._non_differentiable.extend(tensors)

    def mark_not_inplace(self, *tensors):
        self.not_inplace_tensors = tensors

    def set_grad_in_dtype_consistent(self, value):
        """Paddle's switch for casting each input's gradient to the input's dtype; oar's engine always
        does (core/src/autograd/engine.cpp pass_on), so only True is accepted."""
        if not value:
            raise ValueError("set_grad_in_dtype_consistent: oar always gives each input its gradient in the "
                             "input's dtype; False is not supported")

    def set_materialize_grads(self, value):
        """With True (the default), an output that got no gradient gives backward zeros instead of None."""
        self._materialize_grads = bool(value)


def _differentiable(t):
    return isinstance(t, Tensor) and not t.stop_gradient and (t.dtype.is_floating_point or t.dtype.is_complex)


class _Pass:
    """The output gradients of one backward pass through one PyLayer call (one per tensor
    output of forward, differentiable or not) and backward's answer."""

    def __init__(self, layer, ctx, outputs, n_inputs):
        self.layer, self.ctx, self.outputs, self.n_inputs = layer, ctx, outputs, n_inputs
        self.reset()

    def reset(self):
        self.grads = [None] * len(self.outputs)
        self.answer = None
        self.queued = False

    def output_hook(self, j):
        def hook(g):
            if not self.queued:
                self.queued = True
                _C.queue_backward_callback(self.reset)
            self.grads[j] = g
            return None
        return hook

    def input_hook(self, i):
        def hook(zero_grad):
            if self.answer is None:
                self.answer = self._run_backward()
            g = self.answer[i]
            return zero_grad if g is None else g
        return hook

    def _run_backward(self):
        dys = []
        for out, g in zip(self.outputs, self.grads):
            if g is None and self.ctx._materialize_grads:
                g = _ops.zeros_like(out.detach())
            dys.append(g)
        res = self.layer.backward(self.ctx, *dys)
        res = list(res) if isinstance(res, (list, tuple)) else [res]
        if len(res) != self.n_inputs:
            raise ValueError(f"{self.layer.__name__}.backward returned {len(res)} gradients, but forward took "
                             f"{self.n_inputs} tensor inputs; return one per tensor input (None for no gradient)")
        for r in res:
            if r is not None and not isinstance(r, Tensor):
                raise TypeError(f"{self.layer.__name__}.backward must return Tensors or None, got {type(r).__name__}")
        return res


class PyLayer:
    """Subclass with static forward(ctx, *args) and backward(ctx, *output_grads)
    (one gradient per tensor input of forward); call with Layer.apply(*args)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("PyLayer: a subclass must define forward(ctx, ...)")

    @staticmethod
    def backward(ctx, *args):
        raise NotImplementedError("PyLayer: a subclass must define backward(ctx, ...)")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = PyLayerContext()
        with no_grad():
            result = cls.forward(ctx, *args, **kwargs)
        tensor_inputs = [a for a in list(args) + list(kwargs.values()) if isinstance(a, Tensor)]
        diff = [i for i, t in enumerate(tensor_inputs) if _differentiable(t)]
        single = not isinstance(result, (list, tuple))
        outs = [result] if single else list(result)
        if not diff or not _C.is_grad_enabled():
            return result
        skip = {id(t) for t in ctx._non_differentiable}
        connect = [j for j, o in enumerate(outs) if isinstance(o, Tensor) and id(o) not in skip and
                   (o.dtype.is_floating_point or o.dtype.is_complex)]
        if not connect:
            return result
        proxies = {i: _ops.add_scalar(tensor_inputs[i], 0.0) for i in diff}
        anchor = None
        for p in proxies.values():
            s = _ops.sum(_ops.cast(_ops.real(p) if p.dtype.is_complex else p, _FLOAT32), [], False)
            anchor = s if anchor is None else _ops.add(anchor, s)
        tensor_outs = [j for j, o in enumerate(outs) if isinstance(o, Tensor)]
        state = _Pass(cls, ctx, [outs[j] for j in tensor_outs], len(tensor_inputs))
        inputs_ids = {id(t) for t in tensor_inputs}
        for j in connect:
            value = outs[j]
            mask = _ops.full(list(value.shape), 1.0, convert_dtype("bool"), value._device)
            y = _ops.where(mask, value.detach(), _ops.cast(anchor, value.dtype))
            if id(value) in inputs_ids:
                outs[j] = y  # forward returned an input: a new tensor, the input stays as it is
            else:
                value._rebind_(y)  # saved tensors and ctx attributes see the recorded output
                outs[j] = value
            outs[j]._register_hook(state.output_hook(tensor_outs.index(j)))
        for i, p in proxies.items():
            p._register_hook(state.input_hook(i))
        state.outputs = [outs[j] for j in tensor_outs]
        if single:
            return outs[0]
        return type(result)(outs) if isinstance(result, tuple) else outs


Function = PyLayer


def backward(tensors, grad_tensors=None, retain_graph=False):
    """Runs backward from each tensor (seeded with grad_tensors, default ones), adding into the leaves' .grad."""
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    if grad_tensors is None:
        grad_tensors = [None] * len(tensors)
    elif isinstance(grad_tensors, Tensor):
        grad_tensors = [grad_tensors]
    grad_tensors = list(grad_tensors)
    if len(grad_tensors) != len(tensors):
        raise ValueError(f"backward: {len(tensors)} tensors but {len(grad_tensors)} grad_tensors")
    if len(set(id(t) for t in tensors)) != len(tensors):
        raise ValueError("backward: the same tensor appears twice in tensors")
    for k, (t, g) in enumerate(zip(tensors, grad_tensors)):
        keep = retain_graph or k < len(tensors) - 1
        t.backward(g, retain_graph=keep)


class Jacobian:
    """The Jacobian of ys with respect to xs, flattened to [M, N] (or [B, M, N] with batch_axis=0);
    index it (J[:], J[i, j]) to get a tensor."""

    def __init__(self, ys, xs, batch_axis=None):
        if batch_axis not in (None, 0):
            raise ValueError(f"jacobian: batch_axis must be None or 0, got {batch_axis}")
        self._value = _jacobian_matrix(ys, xs, batch_axis)
        self.shape = list(self._value.shape)

    def __getitem__(self, key):
        return self._value[key]

    def __repr__(self):
        return f"Jacobian(shape={self.shape})"


def _jacobian_matrix(ys, xs, batch_axis):
    from . import math as M
    if ys.stop_gradient:  # ys does not depend on anything that requires grad: a zero Jacobian
        m, n = int(np.prod(ys.shape)), int(np.prod(xs.shape))
        if batch_axis is None:
            return _ops.full([m, n], 0.0, xs.dtype, xs._device)
        b = ys.shape[0]
        return _ops.full([b, m // b, n // b], 0.0, xs.dtype, xs._device)
    if batch_axis is None:
        yf, n = M.reshape(ys, [-1]), int(np.prod(xs.shape))
        rows = []
        for i in range(yf.shape[0]):
            g = grad(yf[i], xs, retain_graph=True, create_graph=True, allow_unused=True)[0]
            rows.append(M.reshape(g, [-1]) if g is not None else _ops.zeros_like(M.reshape(xs, [-1]).detach()))
        return M.stack(rows, 0) if rows else _ops.full([0, n], 0.0, xs.dtype, None)
    b = ys.shape[0]
    yf = M.reshape(ys, [b, -1])
    rows = []
    for i in range(yf.shape[1]):
        g = grad(M.sum(yf[:, i]), xs, retain_graph=True, create_graph=True, allow_unused=True)[0]
        rows.append(M.reshape(g, [b, -1]) if g is not None else _ops.zeros_like(M.reshape(xs, [b, -1]).detach()))
    return M.stack(rows, 1)


def jacobian(ys, xs, batch_axis=None):
    """Jacobian objects: one, or tuples over a sequence of ys and/or xs."""
    def over_xs(y):
        if isinstance(xs, (list, tuple)):
            return tuple(Jacobian(y, x, batch_axis) for x in xs)
        return Jacobian(y, xs, batch_axis)
    if isinstance(ys, (list, tuple)):
        return tuple(over_xs(y) for y in ys)
    return over_xs(ys)


def hessian(ys, xs, batch_axis=None):
    """The Hessian of the scalar ys (one value per batch row with batch_axis=0) with respect to xs."""
    from . import math as M
    n = 1 if batch_axis is None else ys.shape[0]
    if int(np.prod(ys.shape)) != n:
        raise ValueError(f"hessian: ys must hold one value{' per batch row' if batch_axis == 0 else ''}, "
                         f"got shape {list(ys.shape)}")
    single = not isinstance(xs, (list, tuple))
    xl = [xs] if single else list(xs)
    target = M.sum(ys)
    gs = grad(target, xl, retain_graph=True, create_graph=True, allow_unused=True)
    gs = [g if g is not None else _ops.zeros_like(x.detach()) for g, x in zip(gs, xl)]
    if single:
        return Jacobian(gs[0], xs, batch_axis)
    return tuple(tuple(Jacobian(g, x, batch_axis) for x in xl) for g in gs)
