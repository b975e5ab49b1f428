"""paddle.autograd.PyLayer, autograd.backward/jacobian/hessian, retain_grads, against hand-computed values."""
import numpy as np
import pytest

import oar
from oar.autograd import PyLayer
from conftest import assert_close


class Tanh(PyLayer):
    @staticmethod
    def forward(ctx, x, func1=oar.tanh, func2=oar.square):
        ctx.func = func2
        y = func1(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, dy):
        (y,) = ctx.saved_tensor()
        return dy * (1 - ctx.func(y))


class Scale3(PyLayer):
    """A wrong-on-purpose backward (3x) shows the custom rule is what runs."""

    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, dy):
        return dy * 3.0


class MulAdd(PyLayer):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y, x + y

    @staticmethod
    def backward(ctx, d_prod, d_sum):
        x, y = ctx.saved_tensor()
        return d_prod * y + d_sum, d_prod * x + d_sum


def test_pylayer_forward_and_backward(device):
    a = np.array([0.5, -1.0, 2.0], np.float32)
    x = oar.to_tensor(a, stop_gradient=False)
    y = Tanh.apply(x)
    assert not y.stop_gradient
    assert_close(y, np.tanh(a))
    y.sum().backward()
    assert_close(x.grad, 1 - np.tanh(a) ** 2, rtol=1e-5)


def test_the_custom_backward_is_used_and_composes(device):
    x = oar.to_tensor([1.0, 2.0], stop_gradient=False)
    (Scale3.apply(x * 2.0) * x).sum().backward()
    # d/dx [s(2x) * x] with s' = 3: 3 * 2 * x + s(2x) = 6x + 2x.
    assert_close(x.grad, [8.0, 16.0])


def test_two_inputs_two_outputs_and_an_unused_output(device):
    x = oar.to_tensor([1.0, 2.0], stop_gradient=False)
    y = oar.to_tensor([3.0, 4.0], stop_gradient=False)
    p, s = MulAdd.apply(x, y)
    p.sum().backward()
    assert_close(x.grad, [3.0, 4.0])
    assert_close(y.grad, [1.0, 2.0])
    x.clear_gradient()
    y.clear_gradient()
    p, s = MulAdd.apply(x, y)
    (p * 2.0 + s).sum().backward()
    assert_close(x.grad, [7.0, 9.0])
    assert_close(y.grad, [3.0, 5.0])


def test_repeated_backward_passes_reset_the_state(device):
    x = oar.to_tensor([1.0, 2.0], stop_gradient=False)
    y = Scale3.apply(x)
    y.sum().backward(retain_graph=True)
    (y * 2.0).sum().backward()
    assert_close(x.grad, [3.0 + 6.0, 3.0 + 6.0])


def test_grad_of_grad_through_a_pylayer(device):
    a = np.array([0.5, -0.3], np.float32)
    x = oar.to_tensor(a, stop_gradient=False)
    y = Tanh.apply(x)
    (dx,) = oar.grad(y.sum(), x, create_graph=True)
    assert_close(dx, 1 - np.tanh(a) ** 2, rtol=1e-5)
    dx.sum().backward()
    t = np.tanh(a)
    assert_close(x.grad, -2 * t * (1 - t ** 2), rtol=1e-4, atol=1e-6)


def test_mark_non_differentiable_and_no_grad_inputs(device):
    class ArgMaxAndValue(PyLayer):
        @staticmethod
        def forward(ctx, x):
            idx = oar.argmax(x)
            big = x * 2.0
            ctx.mark_non_differentiable(idx)
            return big, idx

        @staticmethod
        def backward(ctx, d_big, d_idx):
            return d_big * 2.0

    x = oar.to_tensor([1.0, 5.0], stop_gradient=False)
    big, idx = ArgMaxAndValue.apply(x)
    assert idx.stop_gradient and not big.stop_gradient
    big.sum().backward()
    assert_close(x.grad, [2.0, 2.0])
    z = Tanh.apply(oar.to_tensor([1.0]))  # nothing requires grad: a plain forward
    assert z.stop_gradient


def test_backward_returning_the_wrong_count_is_an_error(device):
    class Bad(PyLayer):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, dy):
            return dy

    x = oar.to_tensor([1.0], stop_gradient=False)
    with pytest.raises(ValueError, match="Bad.backward returned 1 gradients, but forward took 2 tensor inputs"):
        Bad.apply(x, x * 1.0).sum().backward()


def test_autograd_backward_jacobian_hessian(device):
    x = oar.to_tensor([1.0, 2.0], stop_gradient=False)
    y = oar.to_tensor([3.0, 4.0], stop_gradient=False)
    oar.autograd.backward([(x * y).sum(), (x * x).sum()], [oar.to_tensor(1.0), oar.to_tensor(2.0)])
    assert_close(x.grad, [3.0 + 4.0, 4.0 + 8.0])
    jx, jy = oar.autograd.jacobian(x * y, [x, y])
    assert_close(jx[:], np.diag([3.0, 4.0]))
    assert_close(jy[:], np.diag([1.0, 2.0]))
    assert jx.shape == [2, 2]
    h = oar.autograd.hessian((x * x * y).sum(), x)
    assert_close(h[:], np.diag([6.0, 8.0]))
    b = oar.to_tensor([[1.0, 2.0], [3.0, 4.0]], stop_gradient=False)
    jb = oar.autograd.jacobian(b * b, b, batch_axis=0)
    assert_close(jb[:], [np.diag([2.0, 4.0]), np.diag([6.0, 8.0])])


def test_backward_of_a_non_scalar_seeds_ones(device):
    x = oar.to_tensor([1.0, 2.0, 3.0], stop_gradient=False)
    (x * x).backward()
    assert_close(x.grad, [2.0, 4.0, 6.0])


def test_retain_grads_keeps_a_non_leaf_gradient(device):
    x = oar.to_tensor([1.0, 2.0], stop_gradient=False)
    h = x * 3.0
    h.retain_grads()
    (h * h).sum().backward()
    assert_close(h.grad, [6.0, 12.0])
    assert_close(x.grad, [18.0, 36.0])
    z = x * 2.0
    (z * z).sum().backward()
    assert z.grad is None  # not retained


def test_register_hook_handle_remove(device):
    x = oar.to_tensor([1.0, 2.0], stop_gradient=False)
    h = x.register_hook(lambda g: g * 10.0)
    (x * 1.0).sum().backward()
    assert_close(x.grad, [10.0, 10.0])
    h.remove()
    x.clear_gradient()
    (x * 1.0).sum().backward()
    assert_close(x.grad, [1.0, 1.0])
    with pytest.raises(RuntimeError, match="register_hook: cannot register a hook on a tensor that stops gradient"):
        oar.to_tensor([1.0]).register_hook(lambda g: g)


def test_hessian_of_a_linear_function_is_zero(device):
    x1 = oar.to_tensor([1.0, 2.0, 3.0], stop_gradient=False)
    x2 = oar.to_tensor([1.0, 2.0], stop_gradient=False)
    h = oar.autograd.hessian(x1.sum() + x2.sum(), (x1, x2))
    assert [list(h[i][j][:].shape) for i in range(2) for j in range(2)] == [[3, 3], [3, 2], [2, 3], [2, 2]]
    assert float(np.abs(h[0][1][:].numpy()).sum()) == 0.0
