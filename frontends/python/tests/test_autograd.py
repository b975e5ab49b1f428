"""Autograd: backward, grad, hooks, no_grad; gradients against finite differences."""
import numpy as np
import pytest

import oar
import oar.nn.functional as F
from conftest import assert_close


def numeric_grad(fn, x, eps=1e-6):
    """Central differences of scalar fn(x) (x float64)."""
    g = np.zeros_like(x)
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = (fn(xp) - fn(xm)) / (2 * eps)
    return g


def check_grad(f, *arrays, rtol=1e-4, atol=1e-6):
    """f maps oar tensors (float64) to a scalar tensor; compares every input's gradient."""
    tensors = [oar.to_tensor(a, stop_gradient=False) for a in arrays]
    out = f(*tensors)
    grads = oar.grad(out, tensors)
    for k, a in enumerate(arrays):
        def scalar(v, k=k):
            args = [oar.to_tensor(v if j == k else arrays[j]) for j in range(len(arrays))]
            return f(*args).item()
        np.testing.assert_allclose(grads[k].numpy(), numeric_grad(scalar, a.copy()), rtol=rtol, atol=atol)


rng = np.random.default_rng(1)


def r(*shape):
    return rng.standard_normal(shape)


CASES = {
    "mul_add_broadcast": (lambda a, b: ((a * b + b) ** 2).sum(), [r(3, 4), r(4)]),
    "divide": (lambda a, b: (a / (b * b + 1)).sum(), [r(3), r(3)]),
    "matmul": (lambda a, b: oar.matmul(a, b).tanh().sum(), [r(2, 3), r(3, 4)]),
    "exp_log": (lambda a: (a.exp() + (a * a + 1).log()).mean(), [r(5)]),
    "softmax": (lambda a: (F.softmax(a, -1) * oar.arange(4).astype("float64")).sum(), [r(3, 4)]),
    "log_softmax": (lambda a: F.log_softmax(a, 0)[1].sum(), [r(3, 4)]),
    "gelu_silu_sigmoid": (lambda a: (F.gelu(a) + F.silu(a) + F.sigmoid(a)).sum(), [r(6)]),
    "gelu_tanh": (lambda a: (F.gelu(a, approximate=True) * oar.arange(6).astype("float64")).sum(), [3 * r(6)]),
    "gelu_erf": (lambda a: (F.gelu(a) * oar.arange(6).astype("float64")).sum(), [3 * r(6)]),
    "layer_norm": (lambda a, w, b: (F.layer_norm(a, 4, w, b) ** 2 * oar.arange(4).astype("float64")).sum(),
                   [r(2, 4), r(4), r(4)]),
    "rms_norm": (lambda a, w: (F.rms_norm(a, 4, w) * oar.arange(4).astype("float64")).sum(), [r(3, 4), r(4)]),
    "reductions": (lambda a: a.max(axis=1).sum() + a.mean() * 3 + a.var(), [r(3, 4)]),
    "slicing_concat": (lambda a: (oar.concat([a[:, 1:], a[:, :1] * 2], 1) ** 2).sum() + a[1, ::2].sum(), [r(3, 4)]),
    "gather_where": (lambda a: oar.where(a > 0, a, a * 0.1).sum() + oar.gather(a, oar.to_tensor([2, 2, 0])).sum(),
                     [r(3, 2)]),
    "stack_split": (lambda a: (oar.stack(oar.split(a, 2, axis=1), 0) ** 3).sum(), [r(2, 4)]),
    "mse": (lambda a, b: F.mse_loss(a, b), [r(4, 3), r(4, 3)]),
    "cross_entropy": (lambda a: F.cross_entropy(a, oar.to_tensor([1, 0, 2])), [r(3, 4)]),
    "linear": (lambda x, w, b: F.linear(x, w, b).sin().sum(), [r(2, 3), r(3, 5), r(5)]),
    "transpose_reshape": (lambda a: (a.transpose([1, 0]).reshape([-1]) * oar.arange(6).astype("float64")).sum(),
                          [r(2, 3)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_vs_finite_differences(device, name):
    f, arrays = CASES[name]
    check_grad(f, *arrays)


def test_backward_accumulates_and_clears(device):
    x = oar.to_tensor([1.0, 2.0], stop_gradient=False)
    (x * x).sum().backward()
    assert_close(x.grad, [2.0, 4.0])
    (x * 3).sum().backward()
    assert_close(x.grad, [5.0, 7.0])
    x.clear_gradient()
    assert_close(x.grad, [0.0, 0.0])
    x.clear_grad()
    assert x.grad is None
    assert x.is_leaf and not (x * 2).is_leaf


def test_backward_with_grad_tensor_and_retain(device):
    x = oar.to_tensor([1.0, 2.0, 3.0], stop_gradient=False)
    y = x * x
    y.backward(oar.to_tensor([1.0, 0.0, 2.0]), retain_graph=True)
    assert_close(x.grad, [2.0, 0.0, 12.0])
    y.sum().backward()
    assert_close(x.grad, [4.0, 4.0, 18.0])


def test_stop_gradient_and_detach(device):
    x = oar.to_tensor([1.0, 2.0], stop_gradient=False)
    c = oar.to_tensor([3.0, 4.0])
    y = (x * c).sum() + (x.detach() * 100).sum()
    y.backward()
    assert_close(x.grad, [3.0, 4.0])
    assert c.grad is None
    z = x * 2
    z.stop_gradient = True
    assert z.is_leaf


def test_no_grad(device):
    x = oar.to_tensor([1.0], stop_gradient=False)
    with oar.no_grad():
        y = x * 2
        assert not oar.is_grad_enabled()
    assert oar.is_grad_enabled()
    assert y.stop_gradient

    @oar.no_grad()
    def f(t):
        return t * 3
    assert f(x).stop_gradient
    with oar.no_grad():
        with oar.enable_grad():
            assert not (x * 2).stop_gradient
        assert (x * 2).stop_gradient


def test_grad_api_create_graph_second_order(device):
    x = oar.to_tensor([0.5, -1.0], dtype="float64", stop_gradient=False)
    y = (x ** 3).sum()
    (g,) = oar.grad(y, [x], create_graph=True)
    assert_close(g, 3 * np.array([0.5, -1.0]) ** 2)
    (gg,) = oar.grad(g.sum(), [x])
    assert_close(gg, 6 * np.array([0.5, -1.0]))
    unused = oar.to_tensor([1.0], stop_gradient=False)
    res = oar.grad((x * 2).sum(), [x, unused], allow_unused=True)
    assert res[1] is None
    assert x.grad is None


def test_hooks(device):
    x = oar.to_tensor([1.0, 2.0], stop_gradient=False)
    seen = []
    handle = x.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 10)
    (x * 3).sum().backward()
    assert_close(seen[0], [3.0, 3.0])
    assert_close(x.grad, [30.0, 30.0])
    handle.remove()
    x.clear_grad()
    (x * 3).sum().backward()
    assert_close(x.grad, [3.0, 3.0])
    y = x * 2
    y.register_hook(lambda g: g * 0)
    x.clear_grad()
    (y * 5).sum().backward()
    assert_close(x.grad, [0.0, 0.0])


def test_backward_of_a_non_scalar_seeds_ones_as_paddle(device):
    # paddle.Tensor.backward() without grad_tensor fills it with ones.
    x = oar.to_tensor([1.0, 2.0, 3.0], stop_gradient=False)
    (x * x).backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])
    w = oar.to_tensor([[1.0, 2.0], [3.0, 4.0]], stop_gradient=False)
    (w * 3.0).backward(oar.to_tensor([[1.0, 0.0], [0.0, 2.0]]))
    np.testing.assert_allclose(w.grad.numpy(), [[3.0, 0.0], [0.0, 6.0]])


@pytest.mark.parametrize("approximate", [False, True])
def test_gelu_rule_second_order(device, approximate):
    # gelu's VJP (nn.cpp) is written in ops: its gradient differentiates again, and matches the
    # decomposition's (the formula by hand: d/dx x Phi(x)).
    from math import erf, exp, pi, sqrt, tanh
    xs = [-2.5, -0.7, 0.0, 0.4, 1.9]
    x = oar.to_tensor(xs, dtype="float64", stop_gradient=False)
    (g,) = oar.grad(F.gelu(x, approximate=approximate).sum(), [x], create_graph=True)

    def gelu(v):
        if approximate:
            return 0.5 * v * (1 + tanh(sqrt(2 / pi) * (v + 0.044715 * v ** 3)))
        return 0.5 * v * (1 + erf(v / sqrt(2)))
    h = 1e-5
    want = [(gelu(v + h) - gelu(v - h)) / (2 * h) for v in xs]
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-8, atol=1e-9)
    if not approximate:
        np.testing.assert_allclose(g.numpy(), [0.5 * (1 + erf(v / sqrt(2))) + v * exp(-v * v / 2) / sqrt(2 * pi)
                                               for v in xs], rtol=1e-12)
    (gg,) = oar.grad(g.sum(), [x])
    want2 = [(gelu(v + h) - 2 * gelu(v) + gelu(v - h)) / (h * h) for v in xs]
    np.testing.assert_allclose(gg.numpy(), want2, rtol=1e-4, atol=1e-5)
