"""The ops a small transformer's training step leans on, on their fast
paths: layer_norm's VJP rule (against the formula in numpy, and
grad-of-grad against finite differences) and dropout's random numbers
drawn a Philox block at a time (Note [Random blocks] in
plugins/cpu/kernels_cast_fill.cpp), the same bits as the mock's
per-element reference."""
import numpy as np
import pytest

import oar
import oar.nn.functional as F


def layer_norm_grads_numpy(x, w, g, axes, eps=1e-5):
    mu = x.mean(axis=axes, keepdims=True)
    xc = x - mu
    rstd = 1.0 / np.sqrt((xc * xc).mean(axis=axes, keepdims=True) + eps)
    xhat = xc * rstd
    gw = g * w
    dx = rstd * (gw - gw.mean(axis=axes, keepdims=True) - xhat * (gw * xhat).mean(axis=axes, keepdims=True))
    batch = tuple(range(x.ndim - w.ndim))
    return dx, (g * xhat).sum(axis=batch), g.sum(axis=batch)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("shape,normalized", [((4, 6), (6,)), ((2, 3, 5), (3, 5)), ((7,), (7,)), ((300, 130), (130,))])
def test_layer_norm_gradients_equal_the_formula(device, shape, normalized, dtype):
    # On cpu the backward is the fused layer_norm_grad kernel; the mock runs its decomposition.
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape)
    w = rng.uniform(0.5, 1.5, normalized)
    b = rng.standard_normal(normalized)
    g = rng.standard_normal(shape)
    xt, wt, bt = (oar.to_tensor(a, dtype=dtype, stop_gradient=False) for a in (x, w, b))
    y = F.layer_norm(xt, list(normalized), wt, bt)
    (y * oar.to_tensor(g, dtype=dtype)).sum().backward()
    axes = tuple(range(len(shape) - len(normalized), len(shape)))
    dx, dw, db = layer_norm_grads_numpy(x, w, g, axes)
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == "float64" else dict(rtol=2e-4, atol=2e-4)
    np.testing.assert_allclose(xt.grad.numpy(), dx, **tol)
    np.testing.assert_allclose(wt.grad.numpy(), dw, **tol)
    np.testing.assert_allclose(bt.grad.numpy(), db, **tol)


def test_layer_norm_second_order_equals_finite_differences(device):
    rng = np.random.default_rng(4)
    x0 = rng.standard_normal((3, 4))
    w = oar.to_tensor(rng.uniform(0.5, 1.5, (4,)), dtype="float64")
    b = oar.to_tensor(rng.standard_normal((4,)), dtype="float64")
    r = rng.standard_normal((3, 4))

    def first_grad_dot_r(xa, create_graph):
        x = oar.to_tensor(xa, dtype="float64", stop_gradient=False)
        y = F.layer_norm(x, [4], w, b)
        (gx,) = oar.grad((y * y * y).sum(), x, create_graph=create_graph)
        return x, (gx * oar.to_tensor(r, dtype="float64")).sum()

    x, s = first_grad_dot_r(x0, True)
    (hr,) = oar.grad(s, x)  # Hessian of sum(y^3) times r, through layer_norm's VJP rule
    eps = 1e-6
    fd = np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        e = np.zeros_like(x0)
        e[i] = eps
        fd[i] = (float(first_grad_dot_r(x0 + e, False)[1]) - float(first_grad_dot_r(x0 - e, False)[1])) / (2 * eps)
    np.testing.assert_allclose(hr.numpy(), fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [1, 5, 4099, 40001])
@pytest.mark.parametrize("draw", ["rand", "randn"])
def test_random_numbers_equal_the_mock_reference(n, draw):
    if "mock" not in oar.get_all_device_type():
        pytest.skip("the mock plugin is not built")
    previous = oar._C.get_device()
    values = {}
    try:
        for dev in ("cpu", "mock"):
            oar.set_device(dev)
            oar.seed(77)
            getattr(oar, draw)([n])  # advance the generator once: a nonzero offset
            values[dev] = getattr(oar, draw)([n]).numpy()
    finally:
        oar._C.set_device(previous)
    np.testing.assert_array_equal(values["cpu"], values["mock"])
    assert len(np.unique(values["cpu"])) > 0.9 * n


def test_dropout_mask_equals_the_mock_reference():
    if "mock" not in oar.get_all_device_type():
        pytest.skip("the mock plugin is not built")
    previous = oar._C.get_device()
    masks = {}
    try:
        for dev in ("cpu", "mock"):
            oar.set_device(dev)
            oar.seed(5)
            masks[dev] = F.dropout(oar.ones([64, 130]), 0.25, training=True).numpy()
    finally:
        oar._C.set_device(previous)
    np.testing.assert_array_equal(masks["cpu"], masks["mock"])
    kept = masks["cpu"] != 0
    assert set(np.unique(masks["cpu"])) == {0.0, np.float32(1 / 0.75)}
    assert 0.7 < kept.mean() < 0.8
