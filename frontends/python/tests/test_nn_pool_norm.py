"""1-D/2-D/3-D pooling (masks, ceil_mode, exclusive), adaptive pooling,
max_unpool and GroupNorm/InstanceNorm/LocalResponseNorm/BatchNorm3D against
numpy loops, finite differences and, where installed, Paddle."""
import numpy as np
import pytest

import oar
import oar.nn as nn
import oar.nn.functional as F
from conftest import assert_close
from test_autograd import check_grad

rng = np.random.default_rng(12)


def r(*shape):
    return rng.standard_normal(shape)


def pool_ref(x, kernel, stride, pads, mode, ceil_mode=False, exclusive=True, divisor=None):
    """Direct loops; returns (values, flat argmax in the unpadded input) with
    Paddle's divisors (inside x if exclusive, else inside x and its padding)."""
    n = x.ndim - 2
    sizes = x.shape[2:]
    outs = []
    for s, k, st, (a, b) in zip(sizes, kernel, stride, pads):
        span = s + a + b - k
        outs.append((-(-span // st) if ceil_mode else span // st) + 1)
    y = np.zeros(x.shape[:2] + tuple(outs))
    mask = np.zeros(y.shape, dtype=np.int64)
    for o in np.ndindex(*outs):
        lo = [oi * st - a for oi, st, (a, _) in zip(o, stride, pads)]
        hi = [l + k for l, k in zip(lo, kernel)]
        inner = tuple(slice(max(l, 0), min(h, s)) for l, h, s in zip(lo, hi, sizes))
        window = x[(slice(None), slice(None)) + inner].reshape(x.shape[0], x.shape[1], -1)
        if mode == "max":
            y[(slice(None), slice(None)) + o] = window.max(-1)
            local = np.unravel_index(window.argmax(-1), [sl.stop - sl.start for sl in inner])
            mask[(slice(None), slice(None)) + o] = np.ravel_multi_index(
                [li + sl.start for li, sl in zip(local, inner)], sizes)
        else:
            if divisor:
                count = divisor
            elif exclusive:
                count = window.shape[-1]
            else:
                count = np.prod([min(h, s + b) - l for l, h, s, (_, b) in zip(lo, hi, sizes, pads)])
            y[(slice(None), slice(None)) + o] = window.sum(-1) / count
    return y, mask


@pytest.mark.parametrize("n,kernel,stride,pads,ceil_mode", [
    (1, [3], [2], [(1, 1)], False),
    (1, [2], [2], [(0, 0)], True),
    (2, [3, 2], [2, 1], [(1, 1), (0, 0)], False),
    (2, [3, 2], [2, 2], [(1, 1), (1, 1)], True),
    (3, [2, 2, 2], [2, 2, 2], [(0, 0)] * 3, False),
    (3, [3, 2, 3], [2, 1, 2], [(1, 1), (0, 0), (1, 1)], True),
])
def test_max_and_avg_pool_match_numpy(device, n, kernel, stride, pads, ceil_mode):
    x = r(*([2, 3] + [7, 6, 5][:n]))
    padding = [p for p, _ in pads]
    xt = oar.to_tensor(x)
    values, mask = pool_ref(x, kernel, stride, pads, "max", ceil_mode)
    fmax, favg = getattr(F, f"max_pool{n}d"), getattr(F, f"avg_pool{n}d")
    y, m = fmax(xt, kernel, stride, padding, return_mask=True, ceil_mode=ceil_mode)
    assert_close(y, values)
    assert m.dtype == oar.int32
    np.testing.assert_array_equal(m.numpy(), mask)
    assert_close(fmax(xt, kernel, stride, padding, ceil_mode=ceil_mode), values)
    for exclusive in (True, False):
        expected, _ = pool_ref(x, kernel, stride, pads, "avg", ceil_mode, exclusive)
        assert_close(favg(xt, kernel, stride, padding, exclusive=exclusive, ceil_mode=ceil_mode), expected)


def test_pool_channel_last_divisor_and_same(device):
    x = r(1, 2, 5, 6, 4)
    xt = oar.to_tensor(x.transpose(0, 2, 3, 4, 1))
    expected, _ = pool_ref(x, [2, 3, 2], [1, 2, 2], [(0, 0)] * 3, "avg", divisor=5)
    out = F.avg_pool3d(xt, [2, 3, 2], [1, 2, 2], divisor_override=5, data_format="NDHWC")
    assert_close(out, expected.transpose(0, 2, 3, 4, 1))
    x2 = r(1, 2, 5, 7)
    expected, _ = pool_ref(x2, [3, 3], [2, 2], [(1, 1), (1, 1)], "max")
    assert_close(F.max_pool2d(oar.to_tensor(x2), 3, 2, "SAME"), expected)
    assert_close(F.avg_pool2d(oar.to_tensor(x2), 2, 2, [0, 1, 1, 0]),
                 pool_ref(x2, [2, 2], [2, 2], [(0, 1), (1, 0)], "avg")[0])


def adaptive_ref(x, outs, reduce):
    sizes = x.shape[2:]
    y = np.zeros(x.shape[:2] + tuple(outs))
    for o in np.ndindex(*outs):
        sl = tuple(slice(i * s // oo, -(-((i + 1) * s) // oo)) for i, s, oo in zip(o, sizes, outs))
        window = x[(slice(None), slice(None)) + sl].reshape(x.shape[0], x.shape[1], -1)
        y[(slice(None), slice(None)) + o] = getattr(window, reduce)(-1)
    return y


@pytest.mark.parametrize("n,outs", [(1, [3]), (2, [3, 4]), (2, [2, 2]), (3, [2, 3, 2])])
def test_adaptive_pools_match_numpy(device, n, outs):
    x = r(*([2, 3] + [5, 7, 4][:n]))
    xt = oar.to_tensor(x)
    size = outs[0] if n == 1 else outs
    assert_close(getattr(F, f"adaptive_avg_pool{n}d")(xt, size), adaptive_ref(x, outs, "mean"))
    y, mask = getattr(F, f"adaptive_max_pool{n}d")(xt, size, return_mask=True)
    assert_close(y, adaptive_ref(x, outs, "max"))
    flat = x.reshape(2, 3, -1)
    picked = np.take_along_axis(flat, mask.numpy().reshape(2, 3, -1).astype(np.int64), 2)
    assert_close(picked.reshape(y.shape), y.numpy())


def test_adaptive_values_from_paddle():
    # paddle.nn.functional.adaptive_avg_pool1d(arange(5), 3) and adaptive_max_pool2d(arange(16) 4x4, 3).
    assert_close(F.adaptive_avg_pool1d(oar.arange(5, dtype="float32").reshape([1, 1, 5]), 3), [[[0.5, 2.0, 3.5]]])
    y, mask = F.adaptive_max_pool2d(oar.arange(16, dtype="float32").reshape([1, 1, 4, 4]), 3, return_mask=True)
    assert_close(y, [[[[5, 6, 7], [9, 10, 11], [13, 14, 15]]]])
    np.testing.assert_array_equal(mask.numpy(), [[[[5, 6, 7], [9, 10, 11], [13, 14, 15]]]])
    assert F.adaptive_avg_pool3d(oar.ones([1, 2, 4, 4, 4]), [2, None, 1]).shape == [1, 2, 2, 4, 1]


def test_max_unpool_inverts_max_pool(device):
    for n, shape in ((1, [1, 2, 8]), (2, [1, 2, 4, 6]), (3, [1, 1, 4, 4, 2])):
        x = r(*shape)
        y, mask = getattr(F, f"max_pool{n}d")(oar.to_tensor(x), 2, return_mask=True)
        up = getattr(F, f"max_unpool{n}d")(y, mask, 2)
        assert up.shape == shape
        expected = np.zeros(x.size)
        expected[mask.numpy().reshape(x.shape[0] * x.shape[1], -1) + np.arange(x.shape[0] * x.shape[1])[:, None]
                 * (x.size // (x.shape[0] * x.shape[1]))] = y.numpy().reshape(x.shape[0] * x.shape[1], -1)
        assert_close(up, expected.reshape(shape))
    y, mask = F.max_pool2d(oar.to_tensor(r(1, 1, 5, 5)), 2, return_mask=True)
    assert F.max_unpool2d(y, mask, 2, output_size=[5, 5]).shape == [1, 1, 5, 5]
    with pytest.raises(ValueError, match="max_unpool2d: indices"):
        F.max_unpool2d(y, mask, 2)  # the 4 x 4 default is too small for positions in 5 x 5
    y, mask = F.max_pool2d(oar.to_tensor(r(1, 1, 4, 4)), 2, return_mask=True)
    assert nn.MaxUnPool2D(2)(y, mask).shape == [1, 1, 4, 4]


def test_pool_gradients_vs_finite_differences():
    check_grad(lambda x: (F.max_pool3d(x, 2, 1, ceil_mode=True) ** 2).sum(), r(1, 2, 3, 3, 3))
    check_grad(lambda x: (F.avg_pool1d(x, 3, 2, 1, exclusive=False, ceil_mode=True) ** 2).sum(), r(1, 2, 6))
    check_grad(lambda x: (F.adaptive_avg_pool3d(x, [2, 3, 2]) ** 2).sum(), r(1, 1, 3, 4, 5))
    check_grad(lambda x: (F.adaptive_max_pool1d(x, 3) ** 2).sum(), r(1, 2, 7))
    check_grad(lambda x: (F.max_unpool1d(*F.max_pool1d(x, 2, return_mask=True), 2) ** 2).sum(), r(1, 2, 6))


def test_pool_layers_and_errors():
    assert nn.MaxPool1D(2)(oar.ones([1, 2, 6])).shape == [1, 2, 3]
    y, mask = nn.MaxPool3D(2, return_mask=True)(oar.ones([1, 1, 4, 4, 4]))
    assert y.shape == mask.shape == [1, 1, 2, 2, 2]
    assert nn.AvgPool1D(3, 1, 1)(oar.ones([1, 1, 5])).shape == [1, 1, 5]
    assert nn.AvgPool3D(2, ceil_mode=True)(oar.ones([1, 1, 3, 3, 3])).shape == [1, 1, 2, 2, 2]
    assert nn.AdaptiveAvgPool1D(2)(oar.ones([1, 1, 5])).shape == [1, 1, 2]
    assert nn.AdaptiveMaxPool3D(1)(oar.ones([1, 1, 3, 3, 3])).shape == [1, 1, 1, 1, 1]
    assert nn.AdaptiveMaxPool2D(2, return_mask=True)(oar.ones([1, 1, 4, 4]))[1].dtype == oar.int32
    assert str(nn.MaxPool3D(2)) == "MaxPool3D(kernel_size=2, stride=None, padding=0)"  # Paddle's repr
    with pytest.raises(ValueError, match="max_pool1d: x must be a 3-D"):
        F.max_pool1d(oar.ones([1, 4]), 2)
    with pytest.raises(ValueError, match="kernel_size"):
        F.max_pool2d(oar.ones([1, 1, 2, 2]), 3)
    with pytest.raises(TypeError, match="unexpected argument"):
        nn.MaxPool1D(2, data_format="NCL")


# ---- normalization ----

def test_group_norm_matches_numpy(device):
    x, w, b = r(2, 6, 3, 4), r(6), r(6)
    g = x.reshape(2, 3, -1)
    expected = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
    expected = expected * w[:, None, None] + b[:, None, None]
    assert_close(F.group_norm(oar.to_tensor(x), 3, weight=oar.to_tensor(w), bias=oar.to_tensor(b)), expected)
    nhwc = F.group_norm(oar.to_tensor(x.transpose(0, 2, 3, 1)), 3, weight=oar.to_tensor(w), bias=oar.to_tensor(b),
                        data_format="NHWC")
    assert_close(nhwc, expected.transpose(0, 2, 3, 1))
    layer = nn.GroupNorm(3, 6)
    assert layer.weight.shape == [6] and str(layer) == "GroupNorm(num_groups=3, num_channels=6, epsilon=1e-05)"
    assert nn.GroupNorm(3, 6, affine=False).weight is None
    with pytest.raises(ValueError, match="divisible"):
        nn.GroupNorm(4, 6)


def test_instance_norm_matches_numpy(device):
    x = r(2, 3, 4, 5)
    m, v = x.mean((2, 3), keepdims=True), x.var((2, 3), keepdims=True)
    expected = (x - m) / np.sqrt(v + 1e-5)
    assert_close(F.instance_norm(oar.to_tensor(x)), expected)
    layer = nn.InstanceNorm2D(3)
    assert sorted(layer.state_dict()) == ["bias", "scale"]
    assert_close(layer(oar.to_tensor(x.astype("float32"))), expected, rtol=1e-4, atol=1e-5)
    x1 = r(2, 3, 6)
    assert_close(nn.InstanceNorm1D(3)(oar.to_tensor(x1)), (x1 - x1.mean(2, keepdims=True)) /
                 np.sqrt(x1.var(2, keepdims=True) + 1e-5), rtol=1e-4, atol=1e-5)
    assert nn.InstanceNorm3D(2)(oar.ones([1, 2, 2, 2, 2])).shape == [1, 2, 2, 2, 2]


def test_local_response_norm_matches_numpy(device):
    x = r(2, 5, 3, 3)
    size, alpha, beta, k = 3, 1e-2, 0.75, 2.0
    sq = np.pad(x ** 2, ((0, 0), (size // 2, (size - 1) // 2), (0, 0), (0, 0)))
    window = sum(sq[:, i:i + 5] for i in range(size))
    expected = x / (k + alpha / size * window) ** beta
    assert_close(F.local_response_norm(oar.to_tensor(x), size, alpha, beta, k), expected)
    assert_close(nn.LocalResponseNorm(size, alpha, beta, k)(oar.to_tensor(x)), expected)
    nhwc = F.local_response_norm(oar.to_tensor(x.transpose(0, 2, 3, 1)), size, alpha, beta, k, data_format="NHWC")
    assert_close(nhwc, expected.transpose(0, 2, 3, 1))


def test_batch_norm_3d():
    bn = nn.BatchNorm3D(2)
    x = r(3, 2, 2, 3, 2).astype("float32")
    m, v = x.mean((0, 2, 3, 4), keepdims=True), x.var((0, 2, 3, 4), keepdims=True)
    assert_close(bn(oar.to_tensor(x)), (x - m) / np.sqrt(v + 1e-5), rtol=1e-4, atol=1e-5)
    assert_close(bn._mean, 0.1 * m.reshape(-1), rtol=1e-4, atol=1e-6)


def test_lp_pool_values_from_paddle(device):
    x = oar.to_tensor([[[1.0, -2.0, 3.0, -4.0, 5.0]]])
    assert_close(F.lp_pool1d(x, 2, 2), [[[5 ** 0.5, 5.0]]])
    assert_close(F.lp_pool1d(x, 2, 2, ceil_mode=True), [[[5 ** 0.5, 5.0, 5.0]]])
    assert_close(F.lp_pool1d(x, float("inf"), 2), [[[1.0, 3.0]]])
    assert_close(F.lp_pool1d(x, 1, 2), [[[-1.0, -1.0]]])
    x2 = r(1, 2, 4, 6)
    expected = (x2 ** 2).reshape(1, 2, 2, 2, 3, 2).sum((3, 5)) ** 0.5
    assert_close(F.lp_pool2d(oar.to_tensor(x2), 2, 2), expected)
    assert_close(nn.LPPool2D(2, 2)(oar.to_tensor(x2)), expected)
    assert str(nn.LPPool1D(2, 3)) == "LPPool1D(norm_type=2, kernel_size=3, stride=None, padding=0)"


def test_legacy_batch_norm_and_softmax2d():
    bn = nn.BatchNorm(2, act="relu")
    assert sorted(bn.state_dict()) == ["_mean", "_variance", "bias", "weight"]
    x = r(3, 2, 2, 2).astype("float32")
    m, v = x.mean((0, 2, 3), keepdims=True), x.var((0, 2, 3), keepdims=True)
    assert_close(bn(oar.to_tensor(x)), np.maximum((x - m) / np.sqrt(v + 1e-5), 0), rtol=1e-4, atol=1e-5)
    assert nn.BatchNorm(2, dtype="float64").weight.dtype == oar.float64
    s = nn.Softmax2D()(oar.to_tensor(x))
    assert_close(s, np.exp(x) / np.exp(x).sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="Softmax2D"):
        nn.Softmax2D()(oar.ones([2, 3]))


def test_spectral_norm_matches_power_iteration():
    sn = nn.SpectralNorm([2, 3, 4], dim=1, power_iters=2)
    assert sorted(sn.state_dict()) == ["weight_u", "weight_v"] and sn.weight_u.shape == [3]
    assert sn.weight_v.shape == [8] and sn.weight_u.stop_gradient
    w = r(2, 3, 4)
    u = sn.weight_u.numpy().astype(np.float64)
    mat = np.moveaxis(w, 1, 0).reshape(3, -1)
    for _ in range(2):
        v = mat.T @ u
        v /= np.linalg.norm(v) + 1e-12
        u = mat @ v
        u /= np.linalg.norm(u) + 1e-12
    assert_close(sn(oar.to_tensor(w.astype("float32"))), w / (u @ mat @ v), rtol=1e-4, atol=1e-6)
    # many iterations reach the largest singular value
    many = nn.SpectralNorm([4, 3], power_iters=50)
    m = r(4, 3)
    assert_close(many(oar.to_tensor(m.astype("float32"))), m / np.linalg.svd(m)[1][0], rtol=1e-4, atol=1e-5)
    # converged, the gradient is that of W / sigma_max(W) (finite differences;
    # Paddle 3.3's kernel gives another value here)
    exact = nn.SpectralNorm([4, 3], power_iters=60, dtype="float64")
    check_grad(lambda w: (exact(w) * oar.to_tensor(np.arange(12.0).reshape(4, 3))).sum(), m)


def test_norm_gradients_vs_finite_differences():
    check_grad(lambda x, w, b: (F.group_norm(x, 2, weight=w, bias=b) ** 3).sum(), r(2, 4, 3), r(4), r(4))
    check_grad(lambda x: (F.instance_norm(x) ** 3).sum(), r(2, 2, 5))
    check_grad(lambda x: (F.local_response_norm(x, 3, 0.1) ** 2).sum(), r(1, 4, 2, 2))


def test_against_paddle():
    paddle = pytest.importorskip("paddle")
    pf = paddle.nn.functional
    x = r(2, 3, 7, 6, 5)
    for name, kwargs in (("max_pool3d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
                         ("avg_pool3d", dict(kernel_size=[2, 3, 2], stride=2, padding=1, exclusive=False)),
                         ("adaptive_avg_pool3d", dict(output_size=[3, 4, 2])),
                         ("adaptive_max_pool3d", dict(output_size=[3, 4, 2]))):
        assert_close(getattr(F, name)(oar.to_tensor(x), **kwargs), getattr(pf, name)(paddle.to_tensor(x),
                                                                                       **kwargs).numpy())
    x1 = r(2, 3, 9)
    ours = F.max_pool1d(oar.to_tensor(x1), 3, 2, 1, return_mask=True)
    ref = pf.max_pool1d(paddle.to_tensor(x1), 3, 2, 1, return_mask=True)
    np.testing.assert_array_equal(ours[1].numpy(), ref[1].numpy())
    assert_close(F.avg_pool1d(oar.to_tensor(x1), 4, 3, 1, ceil_mode=True),
                 pf.avg_pool1d(paddle.to_tensor(x1), 4, 3, 1, ceil_mode=True).numpy())
    x2 = r(2, 6, 4, 5)
    assert_close(F.local_response_norm(oar.to_tensor(x2), 5), pf.local_response_norm(paddle.to_tensor(x2), 5).numpy())
    assert_close(F.group_norm(oar.to_tensor(x2), 3), pf.group_norm(paddle.to_tensor(x2), 3).numpy())
