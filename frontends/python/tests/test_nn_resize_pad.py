"""F.pad modes, interpolate/upsample, unfold/fold, pixel and channel shuffles
and their layers: against numpy, values printed by PaddlePaddle 3.3 for the
same calls, finite differences and, where installed, Paddle itself."""
import numpy as np
import pytest

import oar
import oar.nn as nn
import oar.nn.functional as F
from conftest import assert_close
from test_autograd import check_grad

rng = np.random.default_rng(13)


def r(*shape):
    return rng.standard_normal(shape)


NUMPY_MODE = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_modes_match_numpy(device, mode):
    x3, x4, x5 = r(2, 3, 5), r(1, 2, 4, 5), r(1, 2, 3, 4, 3)
    assert_close(F.pad(oar.to_tensor(x3), [2, 1], mode), np.pad(x3, ((0, 0), (0, 0), (2, 1)), NUMPY_MODE[mode]))
    # [left, right, top, bottom]
    assert_close(F.pad(oar.to_tensor(x4), [1, 0, 2, 3], mode),
                 np.pad(x4, ((0, 0), (0, 0), (2, 3), (1, 0)), NUMPY_MODE[mode]))
    assert_close(F.pad(oar.to_tensor(x5), [1, 2, 0, 1, 2, 1], mode),
                 np.pad(x5, ((0, 0), (0, 0), (2, 1), (0, 1), (1, 2)), NUMPY_MODE[mode]))
    nhwc = F.pad(oar.to_tensor(x4.transpose(0, 2, 3, 1)), [1, 0, 2, 3], mode, data_format="NHWC")
    assert_close(nhwc, np.pad(x4, ((0, 0), (0, 0), (2, 3), (1, 0)), NUMPY_MODE[mode]).transpose(0, 2, 3, 1))


def test_pad_constant_forms_from_paddle():
    x = oar.ones([1, 2, 3])
    assert F.pad(x, [0, 0, 1, 0, 0, 2]).shape == [1, 3, 5]  # pairs from the first dim
    assert F.pad(x, [0, 0, 1, 0, 0, 2], pad_from_left_axis=False).shape == [3, 3, 3]
    assert F.pad(oar.ones([1, 2, 3, 4]), [1, 0]).shape == [1, 2, 3, 5]
    assert F.pad(oar.ones([2, 3]), [1, 1, 0, 2]).shape == [4, 5]
    assert F.pad(oar.ones([1, 2, 5]), [1, 1], data_format="NLC").shape == [1, 4, 5]
    assert_close(F.pad(oar.to_tensor([[1.0, 2.0]]), [1, 1], value=7.0), [[7.0, 1.0, 2.0, 7.0]])
    assert_close(F.zeropad2d(oar.ones([1, 1, 1, 1]), [1, 0, 0, 1]), [[[[0, 1], [0, 0]]]])
    with pytest.raises(ValueError, match="reflect padding"):
        F.pad(oar.ones([1, 1, 2]), [2, 0], "reflect")
    with pytest.raises(ValueError, match="mode"):
        F.pad(oar.ones([1, 1, 2]), [1, 0], "symmetric")


def test_pad_layers():
    x = oar.to_tensor(np.arange(6, dtype="float32").reshape(1, 2, 3))
    assert_close(nn.Pad1D([1, 2], mode="reflect")(x), [[[1, 0, 1, 2, 1, 0], [4, 3, 4, 5, 4, 3]]])
    assert_close(nn.ReplicationPad1D(1)(x), [[[0, 0, 1, 2, 2], [3, 3, 4, 5, 5]]])
    assert_close(nn.CircularPad1D([1, 0])(x), [[[2, 0, 1, 2], [5, 3, 4, 5]]])
    assert_close(nn.ConstantPad1D([0, 1], 9.0)(x), [[[0, 1, 2, 9], [3, 4, 5, 9]]])
    assert nn.ZeroPad2D(1)(oar.ones([1, 1, 2, 2])).shape == [1, 1, 4, 4]
    assert nn.ReflectionPad3D([1, 1, 0, 0, 1, 0])(oar.ones([1, 1, 2, 2, 2])).shape == [1, 1, 3, 2, 4]
    assert str(nn.Pad2D(1)) == "Pad2D(padding=[1, 1, 1, 1], mode=constant, value=0.0, data_format=NCHW)"


def test_interpolate_values_from_paddle():
    x1 = oar.arange(5, dtype="float32").reshape([1, 1, 5])
    assert_close(F.interpolate(x1, scale_factor=1.7, mode="linear"),
                 [[[0.0, 0.38235298, 0.9705883, 1.5588236, 2.147059, 2.7352943, 3.3235295, 3.9117649]]])
    assert_close(F.interpolate(x1, size=[8], mode="linear"),
                 [[[0.0, 0.4375, 1.0625, 1.6875, 2.3125, 2.9375, 3.5625, 4.0]]])
    x = oar.arange(9, dtype="float32").reshape([1, 1, 3, 3])
    assert_close(F.interpolate(x, size=[4, 4], mode="bicubic")[0, 0],
                 [[-0.287109, 0.314453, 1.254883, 1.856445], [1.517578, 2.119141, 3.05957, 3.661133],
                  [4.338867, 4.94043, 5.880859, 6.482422], [6.143555, 6.745117, 7.685547, 8.287109]], atol=1e-5)
    assert_close(F.interpolate(x, size=[4, 5], mode="bicubic", align_corners=True)[0, 0, 1],
                 [1.722222, 2.128472, 2.722222, 3.315972, 3.722223], atol=1e-5)
    assert_close(F.interpolate(x, scale_factor=2, mode="bilinear", align_mode=1)[0, 0, 1],
                 [1.5, 2.0, 2.5, 3.0, 3.5, 3.5])
    assert_close(F.interpolate(x, scale_factor=[1.5, 2], mode="nearest")[0, 0],
                 [[0, 0, 1, 1, 2, 2], [0, 0, 1, 1, 2, 2], [3, 3, 4, 4, 5, 5], [6, 6, 7, 7, 8, 8]])
    x3 = oar.arange(8, dtype="float32").reshape([1, 1, 2, 2, 2])
    assert_close(F.interpolate(x3, size=[3, 3, 3], mode="trilinear", align_corners=True)[0, 0, 1],
                 [[2.0, 2.5, 3.0], [3.0, 3.5, 4.0], [4.0, 4.5, 5.0]])
    assert_close(F.interpolate(x, size=[2, 2], mode="area")[0, 0], [[2.0, 3.0], [5.0, 6.0]])
    assert F.interpolate(oar.ones([1, 5, 4, 3]), scale_factor=2, data_format="NHWC").shape == [1, 10, 8, 3]
    assert_close(F.upsample(x, size=[5, 5], mode="bilinear", align_corners=True)[0, 0, 1],
                 [1.5, 2.0, 2.5, 3.0, 3.5])


def bilinear_ref(x, out_h, out_w):
    """Half-pixel bilinear (align_corners=False, align_mode=0) by direct loops."""
    h, w = x.shape[2:]
    y = np.zeros(x.shape[:2] + (out_h, out_w))
    for i in range(out_h):
        si = max((i + 0.5) * h / out_h - 0.5, 0.0)
        i0 = min(int(np.floor(si)), h - 1)
        i1, fi = min(i0 + 1, h - 1), si - i0
        for j in range(out_w):
            sj = max((j + 0.5) * w / out_w - 0.5, 0.0)
            j0 = min(int(np.floor(sj)), w - 1)
            j1, fj = min(j0 + 1, w - 1), sj - j0
            y[:, :, i, j] = ((1 - fi) * ((1 - fj) * x[:, :, i0, j0] + fj * x[:, :, i0, j1]) +
                             fi * ((1 - fj) * x[:, :, i1, j0] + fj * x[:, :, i1, j1]))
    return y


def test_interpolate_matches_loops(device):
    x = r(2, 3, 4, 5)
    assert_close(F.interpolate(oar.to_tensor(x), size=[7, 3], mode="bilinear"), bilinear_ref(x, 7, 3))
    nearest = x[:, :, (np.arange(6) * 4) // 6][:, :, :, (np.arange(10) * 5) // 10]
    assert_close(F.interpolate(oar.to_tensor(x), size=[6, 10]), nearest)
    layer = nn.Upsample(size=[7, 3], mode="bilinear")
    assert_close(layer(oar.to_tensor(x)), bilinear_ref(x, 7, 3))
    assert_close(nn.UpsamplingNearest2D(size=[6, 10])(oar.to_tensor(x)), nearest)
    assert nn.UpsamplingBilinear2D(scale_factor=2)(oar.to_tensor(x)).shape == [2, 3, 8, 10]
    with pytest.raises(ValueError, match="mode 'bilinear' needs a 4-D"):
        F.interpolate(oar.ones([1, 1, 4]), size=[8], mode="bilinear")
    with pytest.raises(ValueError, match="exactly one"):
        F.interpolate(oar.ones([1, 1, 4, 4]))


def test_unfold_fold_match_numpy(device):
    x = r(2, 3, 5, 6)
    k, s, d = (2, 3), (1, 2), (2, 1)
    pads = [1, 0, 2, 1]  # top, left, bottom, right
    xp = np.pad(x, ((0, 0), (0, 0), (1, 2), (0, 1)))
    oh = (xp.shape[2] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (xp.shape[3] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    cols = np.zeros((2, 3, k[0], k[1], oh, ow))
    for p in range(k[0]):
        for q in range(k[1]):
            cols[:, :, p, q] = xp[:, :, p * d[0]:p * d[0] + (oh - 1) * s[0] + 1:s[0],
                                  q * d[1]:q * d[1] + (ow - 1) * s[1] + 1:s[1]]
    cols = cols.reshape(2, 3 * k[0] * k[1], oh * ow)
    out = F.unfold(oar.to_tensor(x), k, s, pads, d)
    assert_close(out, cols)
    assert_close(nn.Unfold(k, d, pads, s)(oar.to_tensor(x)), cols)
    # fold is unfold's adjoint: <unfold(x), c> == <x, fold(c)>
    c = r(*cols.shape)
    folded = F.fold(oar.to_tensor(c), [5, 6], k, s, pads, d)
    assert folded.shape == [2, 3, 5, 6]
    np.testing.assert_allclose((cols * c).sum(), (x * folded.numpy()).sum(), rtol=1e-10)
    assert_close(nn.Fold([5, 6], k, d, pads, s)(oar.to_tensor(c)), folded.numpy())
    # non-overlapping windows: fold(unfold(x)) == x
    y = r(1, 2, 4, 6)
    assert_close(F.fold(F.unfold(oar.to_tensor(y), 2, 2), [4, 6], 2, 2), y)
    with pytest.raises(ValueError, match="fold: x"):
        F.fold(oar.ones([1, 8, 5]), [4, 4], 2, 2)


def test_shuffles_match_numpy(device):
    x = r(2, 8, 3, 2)
    up = x.reshape(2, 2, 2, 2, 3, 2).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 6, 4)
    assert_close(F.pixel_shuffle(oar.to_tensor(x), 2), up)
    assert_close(F.pixel_shuffle(oar.to_tensor(x.transpose(0, 2, 3, 1)), 2, "NHWC"), up.transpose(0, 2, 3, 1))
    assert_close(F.pixel_unshuffle(oar.to_tensor(up), 2), x)
    assert_close(nn.PixelUnshuffle(2, "NHWC")(oar.to_tensor(up.transpose(0, 2, 3, 1))), x.transpose(0, 2, 3, 1))
    assert_close(nn.PixelShuffle(2)(oar.to_tensor(x)), up)
    shuffled = x.reshape(2, 4, 2, 3, 2).transpose(0, 2, 1, 3, 4).reshape(x.shape)
    assert_close(F.channel_shuffle(oar.to_tensor(x), 4), shuffled)
    assert_close(nn.ChannelShuffle(4, "NHWC")(oar.to_tensor(x.transpose(0, 2, 3, 1))), shuffled.transpose(0, 2, 3, 1))
    with pytest.raises(ValueError, match="divisible"):
        F.pixel_shuffle(oar.ones([1, 6, 2, 2]), 2)
    with pytest.raises(ValueError, match="channel_shuffle: x must be 4-D"):
        F.channel_shuffle(oar.ones([1, 6, 2]), 2)
    with pytest.raises(ValueError, match="pixel_shuffle: the factor must be a positive int"):
        F.pixel_shuffle(oar.ones([1, 4, 2, 2]), 0)
    assert nn.Unflatten(1, [2, 4])(oar.to_tensor(x)).shape == [2, 2, 4, 3, 2]
    assert str(nn.Unflatten(1, [2, 3])) == "Unflatten(axis=1, shape=[2, 3])"


def test_gradients_vs_finite_differences():
    check_grad(lambda x: (F.pad(x, [1, 2, 2, 1], "reflect") ** 2 * F.pad(x, [1, 2, 2, 1], "circular")).sum(),
               r(1, 1, 3, 4))
    check_grad(lambda x: (F.interpolate(x, size=[5, 3], mode="bilinear") ** 2).sum(), r(1, 2, 3, 4))
    check_grad(lambda x: (F.interpolate(x, scale_factor=1.5, mode="bicubic", align_corners=True) ** 2).sum(),
               r(1, 1, 3, 3))
    check_grad(lambda x: (F.fold(x, [3, 4], 2) ** 2).sum() + (F.unfold(F.fold(x, [3, 4], 2), 2) ** 3).sum(),
               r(1, 4, 6))
    check_grad(lambda x: (F.pixel_shuffle(x, 2) * oar.arange(16).astype("float64").reshape([1, 1, 4, 4])).sum(),
               r(1, 4, 2, 2))


def test_against_paddle():
    paddle = pytest.importorskip("paddle")
    pf = paddle.nn.functional
    x = r(2, 3, 5, 4)
    for kwargs in (dict(size=[7, 9], mode="bicubic"), dict(scale_factor=[1.3, 2.1], mode="bilinear"),
                   dict(size=[3, 7], mode="bilinear", align_corners=True), dict(scale_factor=0.6, mode="nearest")):
        assert_close(F.interpolate(oar.to_tensor(x), **kwargs), pf.interpolate(paddle.to_tensor(x), **kwargs).numpy())
    x5 = r(1, 2, 3, 4, 2)
    assert_close(F.interpolate(oar.to_tensor(x5), scale_factor=2, mode="trilinear"),
                 pf.interpolate(paddle.to_tensor(x5), scale_factor=2, mode="trilinear").numpy())
    assert_close(F.unfold(oar.to_tensor(x), [2, 3], 1, [1, 0, 0, 2]),
                 pf.unfold(paddle.to_tensor(x), [2, 3], 1, [1, 0, 0, 2]).numpy())
    c = r(1, 12, 15)
    assert_close(F.fold(oar.to_tensor(c), [4, 5], [2, 3], 1, [1, 0]),
                 pf.fold(paddle.to_tensor(c), [4, 5], [2, 3], 1, [1, 0]).numpy())
