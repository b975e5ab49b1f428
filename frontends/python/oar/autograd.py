"""no_grad, enable_grad, set_grad_enabled, grad (paddle.grad)."""
import functools

from . import _C
from .framework import Tensor


class _GradMode:
    """Context manager and decorator setting grad mode (nests)."""

    def __init__(self, enabled):
        self._enabled = enabled
        self._scope = _C.GradModeScope(enabled)

    def __enter__(self):
        self._scope.__enter__()
        return self

    def __exit__(self, *exc):
        self._scope.__exit__()
        return False

    def __call__(self, fn):
        enabled = self._enabled

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with _GradMode(enabled):
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_GradMode):  # noqa: N801 - paddle.no_grad
    """`with oar.no_grad():` or `@oar.no_grad()`: no op is recorded for autograd."""

    def __init__(self, func=None):
        super().__init__(False)
        self._func = func

    def __new__(cls, func=None):
        if callable(func) and not isinstance(func, _GradMode):
            return _GradMode(False)(func)
        return super().__new__(cls)


class enable_grad(_GradMode):  # noqa: N801
    def __init__(self):
        super().__init__(True)


class set_grad_enabled(_GradMode):  # noqa: N801
    def __init__(self, mode):
        super().__init__(bool(mode))


def is_grad_enabled():
    return _C.is_grad_enabled()


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=False, no_grad_vars=None):
    """Gradients of outputs with respect to inputs (paddle.grad); None for an unused input."""
    single = isinstance(inputs, Tensor)
    outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    inputs = [inputs] if single else list(inputs)
    if grad_outputs is None:
        grad_outputs = []
    elif isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs]
    else:
        grad_outputs = list(grad_outputs)
    gap = _C.ir.tape_gap() if any(_C.ir.is_symbolic(t) for t in outputs) else ""
    if gap:
        raise ValueError(gap)
    grads = _C.grad(outputs, inputs, grad_outputs, create_graph, retain_graph, allow_unused)
    return grads


from .autograd_pylayer import PyLayer, PyLayerContext, Function, backward, jacobian, hessian  # noqa: E402,F401
