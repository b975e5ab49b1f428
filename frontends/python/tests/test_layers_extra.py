"""Conv2D, pooling, BatchNorm2D, MultiHeadAttention, TransformerEncoderLayer,
create_parameter, hooks and LR schedulers: against numpy, finite differences
and values printed by PaddlePaddle 3.3 for the same calls."""
import numpy as np
import pytest

import oar
import oar.nn as nn
import oar.nn.functional as F
from conftest import assert_close
from test_autograd import check_grad

rng = np.random.default_rng(5)


def r(*shape):
    return rng.standard_normal(shape)


def conv_ref(x, w, b=None, stride=(1, 1), pads=(0, 0, 0, 0), dilation=(1, 1), groups=1):
    """Direct loops: x [N, C, H, W], w [O, C/g, kh, kw], pads top, bottom, left, right."""
    x = np.pad(x, ((0, 0), (0, 0), pads[:2], pads[2:]))
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    eh, ew = (kh - 1) * dilation[0] + 1, (kw - 1) * dilation[1] + 1
    oh, ow = (h - eh) // stride[0] + 1, (wd - ew) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    for oc in range(o):
        g = oc // (o // groups)
        for i in range(oh):
            for j in range(ow):
                patch = x[:, g * cg:(g + 1) * cg, i * stride[0]:i * stride[0] + eh:dilation[0],
                          j * stride[1]:j * stride[1] + ew:dilation[1]]
                out[:, oc, i, j] = (patch * w[oc]).sum(axis=(1, 2, 3))
    return out if b is None else out + b.reshape(1, -1, 1, 1)


def pool_ref(x, k, s, p, mode, exclusive=True):
    n, c, h, w = x.shape
    fill = -np.inf if mode == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)), constant_values=fill)
    ones = np.pad(np.ones((h, w)), p)
    oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * s:i * s + k, j * s:j * s + k]
            if mode == "max":
                out[:, :, i, j] = win.max(axis=(2, 3))
            else:
                count = ones[i * s:i * s + k, j * s:j * s + k].sum() if exclusive else k * k
                out[:, :, i, j] = win.sum(axis=(2, 3)) / count
    return out


@pytest.mark.parametrize("kwargs,pads", [
    ({}, (0, 0, 0, 0)),
    ({"stride": 2, "padding": 1}, (1, 1, 1, 1)),
    ({"padding": [1, 2]}, (1, 1, 2, 2)),
    ({"padding": [0, 1, 1, 0]}, (0, 1, 1, 0)),
    ({"stride": 2, "padding": "SAME"}, (1, 1, 1, 1)),
    ({"dilation": 2, "padding": 2}, (2, 2, 2, 2)),
])
def test_conv2d_matches_numpy(device, kwargs, pads):
    x, w, b = r(2, 4, 7, 7), r(6, 4, 3, 3), r(6)
    stride = (kwargs.get("stride", 1),) * 2
    dilation = (kwargs.get("dilation", 1),) * 2
    out = F.conv2d(oar.to_tensor(x), oar.to_tensor(w), oar.to_tensor(b), **kwargs)
    assert_close(out, conv_ref(x, w, b, stride, pads, dilation), rtol=1e-6, atol=1e-9)


def test_conv2d_groups_nhwc_and_layer(device):
    x, w = r(1, 4, 5, 5), r(4, 2, 3, 3)
    assert_close(F.conv2d(oar.to_tensor(x), oar.to_tensor(w), groups=2, padding=1),
                 conv_ref(x, w, pads=(1, 1, 1, 1), groups=2), rtol=1e-6, atol=1e-9)
    nhwc = F.conv2d(oar.to_tensor(x.transpose(0, 2, 3, 1)), oar.to_tensor(w), groups=2, data_format="NHWC")
    assert_close(nhwc, conv_ref(x, w, groups=2).transpose(0, 2, 3, 1), rtol=1e-6, atol=1e-9)
    conv = nn.Conv2D(3, 8, 3, padding=1)
    assert conv.weight.shape == [8, 3, 3, 3] and conv.bias.shape == [8]
    assert_close(conv.bias, np.zeros(8))
    # Paddle's default: Normal(0, sqrt(2 / (3 * 3 * 3))).
    assert 0.15 < conv.weight.numpy().std() < 0.4
    xs = r(2, 3, 6, 6).astype(np.float32)
    assert_close(conv(oar.to_tensor(xs)), conv_ref(xs, conv.weight.numpy(), conv.bias.numpy(), pads=(1, 1, 1, 1)),
                 rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("k,s,p", [(2, 2, 0), (3, 1, 1), (3, 2, 1)])
def test_pooling_matches_numpy(device, mode, k, s, p):
    x = r(2, 3, 7, 7)
    fn = F.max_pool2d if mode == "max" else F.avg_pool2d
    assert_close(fn(oar.to_tensor(x), k, s, p), pool_ref(x, k, s, p, mode))
    layer = nn.MaxPool2D(k, s, p) if mode == "max" else nn.AvgPool2D(k, s, p, exclusive=False)
    assert_close(layer(oar.to_tensor(x)), pool_ref(x, k, s, p, mode, exclusive=False))


def test_pooling_values_from_paddle(device):
    x = oar.to_tensor(np.arange(50, dtype=np.float32).reshape(2, 1, 5, 5))
    assert F.max_pool2d(x, 2).shape == [2, 1, 2, 2]
    assert_close(F.avg_pool2d(x, 3, 1, 1)[0, 0, 0], [3.0, 3.5, 4.5, 5.5, 6.0])
    assert_close(F.avg_pool2d(x, 3, 1, 1, exclusive=False)[0, 0, 0], [4 / 3, 7 / 3, 3.0, 11 / 3, 8 / 3])
    assert_close(F.adaptive_avg_pool2d(x, 2)[0, 0], [[6.0, 8.0], [16.0, 18.0]])
    assert_close(nn.AdaptiveAvgPool2D(1)(x)[:, :, 0, 0], [[12.0], [37.0]])
    assert_close(F.conv2d(x, oar.ones([1, 1, 2, 2]), stride=2, padding="SAME")[0, 0],
                 [[12, 20, 13], [52, 60, 33], [41, 45, 24]])


def test_conv_pool_gradients_vs_finite_differences(device):
    check_grad(lambda x, w, b: (F.conv2d(x, w, b, stride=2, padding=1) ** 2).sum(), r(1, 2, 5, 5), r(3, 2, 3, 3),
               r(3))
    check_grad(lambda x: (F.max_pool2d(x, 2) * F.max_pool2d(x, 2)).sum() + F.avg_pool2d(x, 3, 1, 1).sum(),
               r(1, 2, 4, 4))


def test_batchnorm2d_train_eval_like_paddle(device):
    bn = nn.BatchNorm2D(2)
    assert list(bn.state_dict()) == ["weight", "bias", "_mean", "_variance"]
    x = np.arange(16, dtype=np.float32).reshape(2, 2, 2, 2)
    y = bn(oar.to_tensor(x))
    mean, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    assert_close(y, (x - mean.reshape(1, 2, 1, 1)) / np.sqrt(var.reshape(1, 2, 1, 1) + 1e-5), rtol=1e-5, atol=1e-5)
    # Paddle: running = 0.9 * running + 0.1 * batch, with the biased variance.
    assert_close(bn._mean, [0.55, 0.95], rtol=1e-5)
    assert_close(bn._variance, [2.625, 2.625], rtol=1e-5)
    bn.eval()
    y = bn(oar.to_tensor(x))
    assert_close(y, (x - np.array([0.55, 0.95]).reshape(1, 2, 1, 1)) / np.sqrt(2.625 + 1e-5), rtol=1e-5, atol=1e-5)
    assert_close(bn._mean, [0.55, 0.95], rtol=1e-5)  # eval does not update
    fresh = nn.BatchNorm2D(2)
    fresh.set_state_dict(bn.state_dict())
    fresh.eval()
    assert_close(fresh(oar.to_tensor(x)), y.numpy())
    check_grad(lambda a, w, b: (F.batch_norm(a, oar.zeros([3], "float64"), oar.ones([3], "float64"), w, b,
                                             training=True) ** 3).sum(), r(2, 3, 2, 2), r(3), r(3), rtol=1e-3)


def mha_ref(layer, q, k, v, mask=None):
    def proj(lin, t):
        return t @ lin.weight.numpy() + lin.bias.numpy()
    b, s, e = q.shape
    h, d = layer.num_heads, e // layer.num_heads

    def heads(t):
        return t.reshape(b, t.shape[1], h, d).transpose(0, 2, 1, 3)
    qh, kh, vh = heads(proj(layer.q_proj, q)), heads(proj(layer.k_proj, k)), heads(proj(layer.v_proj, v))
    scores = qh @ kh.transpose(0, 1, 3, 2) / np.sqrt(d)
    if mask is not None:
        scores = scores + (mask if mask.dtype != bool else (mask.astype(np.float32) - 1) * 1e9)
    w = np.exp(scores - scores.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    out = (w @ vh).transpose(0, 2, 1, 3).reshape(b, s, e)
    return proj(layer.out_proj, out), w


def test_multi_head_attention(device):
    mha = nn.MultiHeadAttention(8, 2)
    assert list(mha.state_dict()) == ["q_proj.weight", "q_proj.bias", "k_proj.weight", "k_proj.bias",
                                      "v_proj.weight", "v_proj.bias", "out_proj.weight", "out_proj.bias"]
    q, kv = r(2, 3, 8).astype(np.float32), r(2, 5, 8).astype(np.float32)
    assert_close(mha(oar.to_tensor(q)), mha_ref(mha, q, q, q)[0], rtol=1e-4, atol=1e-5)
    assert_close(mha(oar.to_tensor(q), oar.to_tensor(kv), oar.to_tensor(kv)), mha_ref(mha, q, kv, kv)[0],
                 rtol=1e-4, atol=1e-5)
    causal = np.tril(np.ones((3, 3), dtype=bool))
    assert_close(mha(oar.to_tensor(q), attn_mask=oar.to_tensor(causal)), mha_ref(mha, q, q, q, causal)[0],
                 rtol=1e-4, atol=1e-5)
    additive = r(2, 1, 3, 3).astype(np.float32)
    mha.need_weights = True
    out, weights = mha(oar.to_tensor(q), attn_mask=oar.to_tensor(additive))
    ref_out, ref_w = mha_ref(mha, q, q, q, additive)
    assert_close(out, ref_out, rtol=1e-4, atol=1e-5)
    assert_close(weights, ref_w, rtol=1e-4, atol=1e-5)


def layer_norm(x, ln):
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * ln.weight.numpy() + ln.bias.numpy()


@pytest.mark.parametrize("normalize_before", [False, True])
def test_transformer_encoder_layer(device, normalize_before):
    enc = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu", normalize_before=normalize_before)
    assert list(enc.state_dict())[:2] == ["self_attn.q_proj.weight", "self_attn.q_proj.bias"]
    assert list(enc.state_dict())[8:] == ["linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
                                          "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"]
    x = r(2, 4, 8).astype(np.float32)
    from math import erf
    gelu = np.vectorize(lambda v: 0.5 * v * (1 + erf(v / np.sqrt(2))))

    def ffn(t):
        h = gelu(t @ enc.linear1.weight.numpy() + enc.linear1.bias.numpy())
        return h @ enc.linear2.weight.numpy() + enc.linear2.bias.numpy()
    if normalize_before:
        a = x + mha_ref(enc.self_attn, *(layer_norm(x, enc.norm1),) * 3)[0]
        ref = a + ffn(layer_norm(a, enc.norm2))
    else:
        a = layer_norm(x + mha_ref(enc.self_attn, x, x, x)[0], enc.norm1)
        ref = layer_norm(a + ffn(a), enc.norm2)
    assert_close(enc(oar.to_tensor(x)), ref, rtol=1e-4, atol=1e-4)
    stack = nn.TransformerEncoder(enc, 3, norm=nn.LayerNorm(8))
    assert stack(oar.to_tensor(x)).shape == [2, 4, 8]
    assert len(stack.parameters()) == 3 * 16 + 2 and stack.layers[0] is enc


def test_create_parameter_and_hooks(device):
    p = oar.create_parameter([3, 2], "float32", default_initializer=nn.initializer.Constant(0.5))
    assert isinstance(p, nn.Parameter) and not p.stop_gradient
    assert_close(p, np.full((3, 2), 0.5))
    b = oar.create_parameter([4], "float32", is_bias=True)
    assert_close(b, np.zeros(4))
    lin = nn.Linear(2, 2, bias_attr=False)
    nn.initializer.Constant(1.0)(lin.weight)
    h1 = lin.register_forward_pre_hook(lambda layer, inputs: (inputs[0] * 2,))
    h2 = lin.register_forward_post_hook(lambda layer, inputs, out: out + 1)
    assert_close(lin(oar.ones([1, 2])), [[5.0, 5.0]])
    h1.remove()
    h2.remove()
    assert_close(lin(oar.ones([1, 2])), [[2.0, 2.0]])


def lrs(s, n, metrics=None):
    out = []
    for i in range(n):
        out.append(round(s(), 6))
        s.step(metrics[i]) if metrics else s.step()
    return out


def test_lr_schedulers_match_paddle():
    L = oar.optimizer.lr
    # Values printed by paddle.optimizer.lr (PaddlePaddle 3.3.1) for the same calls.
    assert lrs(L.StepDecay(1.0, step_size=2, gamma=0.5), 5) == [1.0, 1.0, 0.5, 0.5, 0.25]
    assert lrs(L.CosineAnnealingDecay(1.0, T_max=10, eta_min=0.1), 13) == [
        1.0, 0.977975, 0.914058, 0.814503, 0.689058, 0.55, 0.410942, 0.285497, 0.185942, 0.122025, 0.1, 0.122025,
        0.185942]
    assert lrs(L.LinearWarmup(0.5, warmup_steps=4, start_lr=0.0, end_lr=0.5), 6) == [0.0, 0.125, 0.25, 0.375, 0.5,
                                                                                    0.5]
    assert lrs(L.LinearWarmup(L.StepDecay(0.5, step_size=2, gamma=0.5), 3, 0.1, 0.5), 10) == [
        0.1, 0.233333, 0.366667, 0.5, 0.5, 0.25, 0.25, 0.125, 0.125, 0.0625]
    assert lrs(L.PiecewiseDecay([2, 4], [1.0, 0.5, 0.1]), 6) == [1.0, 1.0, 0.5, 0.5, 0.1, 0.1]
    assert lrs(L.PolynomialDecay(1.0, 4, 0.1, 2.0), 6) == [1.0, 0.60625, 0.325, 0.15625, 0.1, 0.1]
    assert lrs(L.NoamDecay(16, 3, 2.0), 5) == [0.0, 0.096225, 0.19245, 0.288675, 0.25]
    assert lrs(L.ReduceOnPlateau(1.0, patience=1, factor=0.5), 8, [5, 4, 4, 4, 4, 3, 3, 3]) == [
        1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5]


def test_optimizer_follows_scheduler(device):
    sched = oar.optimizer.lr.StepDecay(0.1, step_size=1, gamma=0.5)
    p = oar.create_parameter([1], "float32", default_initializer=nn.initializer.Constant(1.0))
    opt = oar.optimizer.SGD(learning_rate=sched, parameters=[p])
    for expected in (0.9, 0.85, 0.825):
        (p * 1.0).sum().backward()
        opt.step()
        opt.clear_grad()
        sched.step()
        assert_close(p, [expected], rtol=1e-6)
    assert opt.get_lr() == pytest.approx(0.0125)
    assert opt.state_dict()["LR_Scheduler"]["last_epoch"] == 3


def test_accuracy_metric():
    m = oar.metric.Accuracy(topk=(1, 2))
    assert m.name() == ["acc_top1", "acc_top2"] and oar.metric.Accuracy().name() == ["acc"]
    pred = oar.to_tensor([[0.1, 0.7, 0.2], [0.5, 0.2, 0.3], [0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
    label = oar.to_tensor([[1], [2], [2], [1]])
    assert m.update(m.compute(pred, label)) == [0.5, 1.0]
    assert m.accumulate() == [0.5, 1.0]
    m.reset()
    assert m.accumulate() == [0.0, 0.0]
    assert oar.metric.accuracy(pred, label).item() == pytest.approx(0.5)


def test_fast_operator_paths_and_lazy_zero_grads(device):
    a, b = oar.to_tensor([1.0, 2.0]), oar.to_tensor([3.0, 5.0])
    assert_close(a + b, [4.0, 7.0])
    assert_close(oar.add(x=a, y=b, name="s"), [4.0, 7.0])
    assert_close(oar.multiply(a, 2), [2.0, 4.0])  # scalar: the Python rules
    assert_close(a - 1, [0.0, 1.0])
    assert_close(a.add(b), [4.0, 7.0])
    i, j = oar.to_tensor([3, 4]), oar.to_tensor([2, 8])
    q = i / j  # int / int is true division (Paddle 3)
    assert q.dtype == oar.float32 and np.allclose(q.numpy(), [1.5, 0.5])
    assert (a + np.float32(1)).dtype == oar.float32
    p = oar.create_parameter([2], "float32", default_initializer=nn.initializer.Constant(1.0))
    (p * p).sum().backward()
    assert_close(p.grad, [2.0, 2.0])
    p.clear_gradient()  # set_to_zero: reads as zeros until the next backward
    assert_close(p.grad, [0.0, 0.0])
    (p * 3).sum().backward()
    assert_close(p.grad, [3.0, 3.0])
    p.clear_gradient()
    (p * 3).sum().backward()
    (p * 1).sum().backward()  # accumulates
    assert_close(p.grad, [4.0, 4.0])
    p.clear_gradient(set_to_zero=False)
    assert p.grad is None


def test_scaled_dot_product_attention_masks(device):
    q, k, v = (r(2, 3, 2, 4).astype(np.float32) for _ in range(3))  # [batch, seq, heads, head_dim]

    def ref(bias):
        qh, kh, vh = (t.transpose(0, 2, 1, 3) for t in (q, k, v))
        s = qh @ kh.transpose(0, 1, 3, 2) / 2.0 + bias
        w = np.exp(s - s.max(-1, keepdims=True))
        return ((w / w.sum(-1, keepdims=True)) @ vh).transpose(0, 2, 1, 3)
    tq, tk, tv = (oar.to_tensor(t) for t in (q, k, v))
    causal = np.tril(np.ones((3, 3), dtype=bool))
    bias = np.where(causal, 0.0, -1e9)
    assert_close(F.scaled_dot_product_attention(tq, tk, tv), ref(0.0), rtol=1e-4, atol=1e-5)
    assert_close(F.scaled_dot_product_attention(tq, tk, tv, is_causal=True), ref(bias), rtol=1e-4, atol=1e-5)
    assert_close(F.scaled_dot_product_attention(tq, tk, tv, attn_mask=oar.to_tensor(causal)), ref(bias),
                 rtol=1e-4, atol=1e-5)
    add = r(3, 3).astype(np.float32)
    assert_close(F.scaled_dot_product_attention(tq, tk, tv, attn_mask=oar.to_tensor(add)), ref(add),
                 rtol=1e-4, atol=1e-5)
