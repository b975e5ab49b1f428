"""conv1d/conv3d and the transposed convolutions (functional and layers)
against direct numpy loops, finite differences and, where installed, Paddle."""
import numpy as np
import pytest

import oar
import oar.nn as nn
import oar.nn.functional as F
from conftest import assert_close
from test_autograd import check_grad

rng = np.random.default_rng(11)


def r(*shape):
    return rng.standard_normal(shape)


def _taps(idx, dilation, stride, sizes):
    return tuple(slice(i * d, i * d + (s - 1) * st + 1, st) for i, d, st, s in zip(idx, dilation, stride, sizes))


def conv_ref(x, w, stride, pads, dilation, groups=1):
    """x [N, C, *S], w [O, C / g, *K], pads [(before, after)] per spatial dim."""
    n = x.ndim - 2
    x = np.pad(x, [(0, 0), (0, 0)] + list(pads))
    kernel, o = w.shape[2:], w.shape[0]
    outs = [(x.shape[2 + d] - dilation[d] * (kernel[d] - 1) - 1) // stride[d] + 1 for d in range(n)]
    y = np.zeros([x.shape[0], o] + outs)
    cg, og = x.shape[1] // groups, o // groups
    for idx in np.ndindex(*kernel):
        xs = x[(slice(None), slice(None)) + _taps(idx, dilation, stride, outs)]
        for g in range(groups):
            y[:, g * og:(g + 1) * og] += np.einsum("nc...,oc->no...", xs[:, g * cg:(g + 1) * cg],
                                                   w[(slice(g * og, (g + 1) * og), slice(None)) + idx])
    return y


def conv_transpose_ref(x, w, stride, pads, dilation, groups=1, output_padding=None):
    """x [N, Cin, *S], w [Cin, Cout / g, *K]: every input element scattered through the kernel."""
    n = x.ndim - 2
    sizes, kernel = x.shape[2:], w.shape[2:]
    output_padding = output_padding or [0] * n
    full = [(s - 1) * st + d * (k - 1) + 1 + e for s, st, d, k, e in zip(sizes, stride, dilation, kernel,
                                                                           output_padding)]
    cig, cog = x.shape[1] // groups, w.shape[1]
    y = np.zeros([x.shape[0], cog * groups] + full)
    for idx in np.ndindex(*kernel):
        target = (slice(None), slice(None)) + _taps(idx, dilation, stride, sizes)
        for g in range(groups):
            contrib = np.einsum("nc...,co->no...", x[:, g * cig:(g + 1) * cig],
                                w[(slice(g * cig, (g + 1) * cig), slice(None)) + idx])
            y[(slice(None), slice(g * cog, (g + 1) * cog)) + target[2:]] += contrib
    crop = tuple(slice(a, f - b) for (a, b), f in zip(pads, full))
    return y[(slice(None), slice(None)) + crop]


@pytest.mark.parametrize("kwargs,pads", [
    ({}, [(0, 0)]),
    ({"stride": 2, "padding": 1}, [(1, 1)]),
    ({"padding": [1, 2], "dilation": 2}, [(1, 2)]),
    ({"padding": "SAME", "stride": 2}, [(1, 1)]),
    ({"groups": 2, "padding": [[0, 0], [0, 0], [2, 1]]}, [(2, 1)]),
])
def test_conv1d_matches_numpy(device, kwargs, pads):
    kwargs = dict(kwargs)
    groups = kwargs.get("groups", 1)
    x, w, b = r(2, 4, 9), r(6, 4 // groups, 3), r(6)
    stride, dilation = [kwargs.get("stride", 1)], [kwargs.get("dilation", 1)]
    expected = conv_ref(x, w, stride, pads, dilation, groups) + b[:, None]
    out = F.conv1d(oar.to_tensor(x), oar.to_tensor(w), oar.to_tensor(b), **kwargs)
    assert_close(out, expected, rtol=1e-6, atol=1e-9)
    if isinstance(kwargs.get("padding"), list) and isinstance(kwargs["padding"][0], list):
        kwargs["padding"] = [[0, 0], kwargs["padding"][2], [0, 0]]  # the pairs follow the layout
    nlc = F.conv1d(oar.to_tensor(x.transpose(0, 2, 1)), oar.to_tensor(w), oar.to_tensor(b), data_format="NLC",
                   **kwargs)
    assert_close(nlc, expected.transpose(0, 2, 1), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("kwargs,pads", [
    ({}, [(0, 0)] * 3),
    ({"stride": [2, 1, 2], "padding": 1}, [(1, 1)] * 3),
    ({"padding": [1, 0, 2, 1, 0, 1], "dilation": [2, 1, 1]}, [(1, 0), (2, 1), (0, 1)]),
    ({"groups": 2, "padding": "SAME"}, [(1, 1)] * 3),
])
def test_conv3d_matches_numpy(device, kwargs, pads):
    groups = kwargs.get("groups", 1)
    x, w, b = r(2, 4, 5, 6, 5), r(6, 4 // groups, 3, 3, 3), r(6)
    stride = kwargs.get("stride", [1, 1, 1])
    dilation = kwargs.get("dilation", [1, 1, 1])
    expected = conv_ref(x, w, stride, pads, dilation, groups) + b[:, None, None, None]
    out = F.conv3d(oar.to_tensor(x), oar.to_tensor(w), oar.to_tensor(b), **kwargs)
    assert list(out.shape) == list(expected.shape)
    assert_close(out, expected, rtol=1e-6, atol=1e-9)
    ndhwc = F.conv3d(oar.to_tensor(x.transpose(0, 2, 3, 4, 1)), oar.to_tensor(w), oar.to_tensor(b),
                     data_format="NDHWC", **kwargs)
    assert_close(ndhwc, expected.transpose(0, 2, 3, 4, 1), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("kwargs,pads,extra", [
    ({}, None, None),
    ({"stride": 2, "padding": 1}, 1, None),
    ({"stride": 2, "padding": 1, "output_padding": 1}, 1, 1),
    ({"stride": 3, "dilation": 2, "groups": 2}, 0, None),
])
def test_conv_transpose_matches_numpy(device, n, kwargs, pads, extra):
    groups = kwargs.get("groups", 1)
    x, w, b = r(*([2, 4] + [4, 3, 5][:n])), r(*([4, 3] + [3, 2, 3][:n])), r(3 * groups)
    stride, dilation = [kwargs.get("stride", 1)] * n, [kwargs.get("dilation", 1)] * n
    pairs = [(pads or 0, pads or 0)] * n
    expected = conv_transpose_ref(x, w, stride, pairs, dilation, groups, [extra or 0] * n)
    expected = expected + b.reshape([-1] + [1] * n)
    fn = getattr(F, f"conv{n}d_transpose")
    out = fn(oar.to_tensor(x), oar.to_tensor(w), oar.to_tensor(b), **kwargs)
    assert list(out.shape) == list(expected.shape)
    assert_close(out, expected, rtol=1e-6, atol=1e-9)


def test_conv_transpose_asymmetric_padding_and_output_size(device):
    x, w = r(1, 2, 4, 5), r(2, 3, 3, 3)
    pads = [(1, 0), (2, 1)]
    out = F.conv2d_transpose(oar.to_tensor(x), oar.to_tensor(w), padding=[1, 0, 2, 1], stride=2)
    assert_close(out, conv_transpose_ref(x, w, [2, 2], pads, [1, 1]), rtol=1e-6, atol=1e-9)
    sized = F.conv2d_transpose(oar.to_tensor(x), oar.to_tensor(w), padding=1, stride=2, output_size=[8, 10])
    assert sized.shape == [1, 3, 8, 10]
    assert_close(sized, conv_transpose_ref(x, w, [2, 2], [(1, 1)] * 2, [1, 1], 1, [1, 1]), rtol=1e-6, atol=1e-9)
    nhwc = F.conv2d_transpose(oar.to_tensor(x.transpose(0, 2, 3, 1)), oar.to_tensor(w), stride=2, padding=1,
                              data_format="NHWC")
    assert_close(nhwc, conv_transpose_ref(x, w, [2, 2], [(1, 1)] * 2, [1, 1]).transpose(0, 2, 3, 1), rtol=1e-6,
                 atol=1e-9)
    # SAME pads as conv2d's SAME over x (Paddle's shape).
    assert F.conv2d_transpose(oar.to_tensor(x), oar.to_tensor(w), stride=2, padding="SAME").shape == [1, 3, 8, 9]
    with pytest.raises(ValueError, match="mutually exclusive"):
        F.conv2d_transpose(oar.to_tensor(x), oar.to_tensor(w), stride=2, output_padding=1, output_size=[8, 10])
    with pytest.raises(ValueError, match="output_size"):
        F.conv2d_transpose(oar.to_tensor(x), oar.to_tensor(w), stride=2, output_size=[20, 10])


def test_conv2d_padding_pairs_follow_the_layout(device):
    x, w = r(1, 2, 5, 6), r(3, 2, 3, 3)
    expected = conv_ref(x, w, [1, 1], [(1, 1), (2, 0)], [1, 1])
    nchw = F.conv2d(oar.to_tensor(x), oar.to_tensor(w), padding=[[0, 0], [0, 0], [1, 1], [2, 0]])
    assert_close(nchw, expected, rtol=1e-6, atol=1e-9)
    nhwc = F.conv2d(oar.to_tensor(x.transpose(0, 2, 3, 1)), oar.to_tensor(w), padding=[[0, 0], [1, 1], [2, 0], [0, 0]],
                    data_format="NHWC")
    assert_close(nhwc, expected.transpose(0, 2, 3, 1), rtol=1e-6, atol=1e-9)


def test_conv_errors_name_the_problem():
    with pytest.raises(ValueError, match="conv1d: x has 3 channels"):
        F.conv1d(oar.ones([1, 3, 5]), oar.ones([2, 2, 3]))
    with pytest.raises(ValueError, match="conv3d: x must be a 5-D"):
        F.conv3d(oar.ones([1, 3, 5, 5]), oar.ones([2, 3, 3, 3, 3]))
    with pytest.raises(ValueError, match="data_format"):
        F.conv1d(oar.ones([1, 3, 5]), oar.ones([2, 3, 3]), data_format="NCHW")
    with pytest.raises(ValueError, match="padding"):
        F.conv3d(oar.ones([1, 3, 5, 5, 5]), oar.ones([2, 3, 3, 3, 3]), padding=[1, 2])
    with pytest.raises(ValueError, match="conv1d: x's spatial shape \\[2\\]"):
        F.conv1d(oar.ones([1, 1, 2]), oar.ones([1, 1, 3]))


def test_gradients_vs_finite_differences():
    check_grad(lambda x, w, b: (F.conv1d(x, w, b, stride=2, padding=[1, 0]) ** 2).sum(), r(1, 2, 7), r(3, 2, 3),
               r(3))
    check_grad(lambda x, w: (F.conv3d(x, w, stride=[1, 2, 1], padding=1, groups=2) ** 2).sum(), r(1, 2, 3, 4, 3),
               r(2, 1, 2, 3, 2))
    check_grad(lambda x, w, b: (F.conv2d_transpose(x, w, b, stride=2, padding=1, output_padding=1) ** 2).sum(),
               r(1, 2, 3, 3), r(2, 2, 3, 3), r(2))
    check_grad(lambda x, w: (F.conv3d_transpose(x, w, stride=2, padding=[0, 1, 1]) ** 2).sum(), r(1, 2, 2, 3, 2),
               r(2, 1, 2, 3, 2))
    check_grad(lambda x, w: (F.conv1d_transpose(x, w, stride=3, dilation=2, groups=2) ** 2).sum(), r(1, 2, 4),
               r(2, 2, 3))


def test_layers_shapes_parameters_and_repr():
    conv = nn.Conv1D(4, 6, 3, padding=1)
    assert conv.weight.shape == [6, 4, 3] and conv.bias.shape == [6]
    assert 0.2 < conv.weight.numpy().std() < 0.6  # Normal(0, sqrt(2 / 12))
    x = r(2, 4, 8).astype("float32")
    assert_close(conv(oar.to_tensor(x)), conv_ref(x, conv.weight.numpy(), [1], [(1, 1)], [1]) +
                 conv.bias.numpy()[:, None], rtol=1e-5, atol=1e-5)
    assert str(conv) == "Conv1D(4, 6, kernel_size=[3], padding=1, data_format=NCL)"
    assert nn.Conv2D(2, 4, 3, stride=2, padding=1, bias=False).bias is None
    assert str(nn.Conv2DTranspose(2, 4, 3)) == "Conv2DTranspose(2, 4, kernel_size=[3, 3], data_format=NCHW)"
    assert nn.Conv3D(2, 4, 3)(oar.ones([1, 2, 5, 5, 5])).shape == [1, 4, 3, 3, 3]
    t = nn.Conv1DTranspose(2, 4, 3, stride=2)
    assert t.weight.shape == [2, 4, 3]
    assert t(oar.ones([1, 2, 5])).shape == [1, 4, 11]
    assert t(oar.ones([1, 2, 5]), output_size=[12]).shape == [1, 4, 12]
    assert nn.Conv3DTranspose(4, 2, 2, stride=2, groups=2).weight.shape == [4, 1, 2, 2, 2]
    assert nn.Conv3DTranspose(4, 2, 2, stride=2)(oar.ones([1, 4, 2, 3, 2])).shape == [1, 2, 4, 6, 4]


def test_padding_mode_reflect():
    conv = nn.Conv1D(1, 1, 3, padding=1, padding_mode="reflect", bias_attr=False)
    conv.weight.set_value(np.ones([1, 1, 3], dtype="float32"))
    # [1, 2, 3, 4] reflect-padded: [2, 1, 2, 3, 4, 3]
    assert_close(conv(oar.to_tensor([[[1.0, 2.0, 3.0, 4.0]]])), [[[5.0, 6.0, 9.0, 10.0]]])
    assert "padding_mode=reflect" in str(conv)


def test_against_paddle():
    paddle = pytest.importorskip("paddle")
    pf = paddle.nn.functional
    cases = [
        ("conv1d", r(2, 4, 9), r(6, 2, 3), dict(stride=2, padding="SAME", groups=2)),
        ("conv3d", r(1, 2, 5, 4, 6), r(4, 2, 2, 3, 3), dict(stride=[2, 1, 2], padding=[0, 1, 1, 0, 2, 1])),
        ("conv1d_transpose", r(2, 4, 5), r(4, 3, 3), dict(stride=2, padding=1, output_padding=1)),
        ("conv2d_transpose", r(1, 2, 5, 5), r(2, 3, 3, 3), dict(stride=3, padding="SAME")),
        ("conv2d_transpose", r(1, 4, 3, 4), r(4, 1, 3, 2), dict(stride=2, padding=[1, 0, 0, 1], groups=2,
                                                                 dilation=2)),
        ("conv3d_transpose", r(1, 2, 3, 2, 3), r(2, 2, 2, 3, 2), dict(stride=2, padding=1, output_size=[5, 4, 5])),
    ]
    for name, x, w, kwargs in cases:
        ours = getattr(F, name)(oar.to_tensor(x), oar.to_tensor(w), **kwargs)
        ref = getattr(pf, name)(paddle.to_tensor(x), paddle.to_tensor(w), **kwargs)
        assert_close(ours, ref.numpy(), rtol=1e-6, atol=1e-9)


def test_paddle_module_paths_and_aliases():
    import oar.nn.layer.conv as conv_module
    from oar.nn.layer.pooling import MaxPool3D
    from oar.nn.loss import MSELoss
    assert conv_module.Conv1D is nn.Conv1D and MaxPool3D is nn.MaxPool3D and MSELoss is nn.MSELoss
    assert oar.nn.layer.norm.GroupNorm is nn.GroupNorm and oar.nn.layer.Conv3DTranspose is nn.Conv3DTranspose
    assert "PixelShuffle" in dir(oar.nn.layer.vision) and "CrossEntropyLoss" in dir(oar.nn.loss)
    with pytest.raises(AttributeError):
        oar.nn.layer.conv.MaxPool2D  # noqa: B018 - pooling, not conv
    assert nn.Conv2d is nn.Conv2D and nn.MaxUnpool1d is nn.MaxUnPool1D and nn.ZeroPad2d is nn.ZeroPad2D
