"""TransformerDecoderLayer, TransformerDecoder, Transformer and attention
caches: against a numpy forward pass with the layers' own weights, the
incremental-decoding identity, finite differences and, where installed, Paddle."""
import numpy as np
import pytest

import oar
import oar.nn as nn
from conftest import assert_close

rng = np.random.default_rng(14)


def r(*shape):
    return rng.standard_normal(shape).astype("float32")


def _np(p):
    return p.numpy().astype(np.float64)


def layer_norm_ref(x, norm):
    m, v = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - m) / np.sqrt(v + norm._epsilon) * _np(norm.weight) + _np(norm.bias)


def mha_ref(attn, q, k, v, mask=None):
    def proj(x, lin):
        return x @ _np(lin.weight) + _np(lin.bias)

    def heads(x):
        b, s, _ = x.shape
        return x.reshape(b, s, attn.num_heads, attn.head_dim).transpose(0, 2, 1, 3)
    qh, kh, vh = heads(proj(q, attn.q_proj)), heads(proj(k, attn.k_proj)), heads(proj(v, attn.v_proj))
    scores = qh @ kh.transpose(0, 1, 3, 2) / np.sqrt(attn.head_dim)
    if mask is not None:
        scores = scores + mask
    w = np.exp(scores - scores.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    out = (w @ vh).transpose(0, 2, 1, 3).reshape(q.shape[0], q.shape[1], -1)
    return proj(out, attn.out_proj)


def decoder_layer_ref(layer, tgt, memory, tgt_mask=None, memory_mask=None):
    def block(x, norm, fn):
        y = layer_norm_ref(x, norm) if layer.normalize_before else x
        y = x + fn(y)
        return y if layer.normalize_before else layer_norm_ref(y, norm)
    x = block(tgt, layer.norm1, lambda y: mha_ref(layer.self_attn, y, y, y, tgt_mask))
    x = block(x, layer.norm2, lambda y: mha_ref(layer.cross_attn, y, memory, memory, memory_mask))
    relu = lambda y: np.maximum(y, 0.0)  # noqa: E731
    return block(x, layer.norm3, lambda y: relu(y @ _np(layer.linear1.weight) + _np(layer.linear1.bias))
                 @ _np(layer.linear2.weight) + _np(layer.linear2.bias))


def causal(n):
    return np.triu(np.full((n, n), -1e9), 1)


@pytest.mark.parametrize("normalize_before", [False, True])
def test_decoder_layer_matches_numpy(device, normalize_before):
    layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, normalize_before=normalize_before)
    tgt, memory = r(2, 4, 8), r(2, 5, 8)
    memory_mask = np.zeros((2, 1, 1, 5), dtype="float32")
    memory_mask[1, ..., 3:] = -1e9  # the second sample's memory is 3 long
    out = layer(oar.to_tensor(tgt), oar.to_tensor(memory), oar.to_tensor(causal(4).astype("float32")),
                oar.to_tensor(memory_mask))
    assert_close(out, decoder_layer_ref(layer, tgt, memory, causal(4), memory_mask), rtol=1e-4, atol=1e-5)
    # a bool mask keeps True entries
    keep = oar.to_tensor(np.tril(np.ones((4, 4), dtype=bool)))
    assert_close(layer(oar.to_tensor(tgt), oar.to_tensor(memory), keep), decoder_layer_ref(layer, tgt, memory,
                 causal(4)), rtol=1e-4, atol=1e-5)


def test_decoder_stack_and_transformer_structure():
    layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0)
    decoder = nn.TransformerDecoder(layer, 3, nn.LayerNorm(8))
    assert len(decoder.layers) == 3 and decoder.layers[0] is layer
    tgt, memory = r(1, 3, 8), r(1, 4, 8)
    expected = tgt.astype(np.float64)
    for sub in decoder.layers:
        expected = decoder_layer_ref(sub, expected, memory)
    expected = layer_norm_ref(expected, decoder.norm)
    assert_close(decoder(oar.to_tensor(tgt), oar.to_tensor(memory)), expected, rtol=1e-4, atol=1e-5)

    model = nn.Transformer(8, 2, 2, 1, 16, dropout=0.0)
    keys = list(model.state_dict())
    assert "encoder.norm.weight" in keys and "decoder.norm.bias" in keys
    assert "decoder.layers.0.cross_attn.q_proj.weight" in keys and "decoder.layers.0.norm3.weight" in keys
    assert len([k for k in keys if k.startswith("encoder.layers.1.")]) == 16
    src = r(2, 5, 8)
    mask = model.generate_square_subsequent_mask(3)
    assert_close(mask, [[0, -np.inf, -np.inf], [0, 0, -np.inf], [0, 0, 0]])
    out = model(oar.to_tensor(src), oar.to_tensor(r(2, 3, 8)), tgt_mask=mask)
    assert out.shape == [2, 3, 8]
    with pytest.raises(ValueError, match="divisible"):
        nn.Transformer(10, 3)


def test_incremental_decoding_with_cache_matches_full_pass(device):
    decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0), 2)
    tgt, memory = oar.to_tensor(r(2, 4, 8)), oar.to_tensor(r(2, 5, 8))
    full = decoder(tgt, memory, oar.to_tensor(causal(4).astype("float32")))
    cache = decoder.gen_cache(memory)
    assert isinstance(cache[0][0], nn.MultiHeadAttention.Cache)
    assert isinstance(cache[0][1], nn.MultiHeadAttention.StaticCache)
    steps = []
    for t in range(4):
        out, cache = decoder(tgt[:, t:t + 1], memory, None, None, cache)
        steps.append(out.numpy())
    assert cache[0][0].k.shape == [2, 2, 4, 4]
    assert_close(np.concatenate(steps, 1), full.numpy(), rtol=1e-4, atol=1e-5)
    zipped = decoder.gen_cache(memory, do_zip=True)
    assert len(zipped) == 2 and len(zipped[0]) == 2


def test_encoder_cache_and_mha_outputs():
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 2)
    src = oar.to_tensor(r(1, 3, 8))
    cache = encoder.gen_cache(src)
    out, new_cache = encoder(src, None, cache)
    assert out.shape == [1, 3, 8] and new_cache[1].k.shape == [1, 2, 3, 4]
    assert_close(out, encoder(src).numpy(), rtol=1e-5, atol=1e-6)
    attn = nn.MultiHeadAttention(8, 2, need_weights=True)
    q = oar.to_tensor(r(1, 3, 8))
    out, weights, cache = attn(q, q, q, None, attn.gen_cache(q))
    assert weights.shape == [1, 2, 3, 3] and cache.k.shape == [1, 2, 3, 4]
    static = attn.gen_cache(q, q, type=nn.MultiHeadAttention.StaticCache)
    out2, _, _ = attn(q, q, q, None, static)
    assert_close(out2, out.numpy(), rtol=1e-5, atol=1e-6)


def test_decoder_gradients_flow():
    layer = nn.TransformerDecoderLayer(4, 2, 8, dropout=0.0)
    tgt = oar.to_tensor(r(1, 2, 4), stop_gradient=False)
    (layer(tgt, oar.to_tensor(r(1, 3, 4))) ** 2).sum().backward()
    assert tgt.grad is not None and np.abs(tgt.grad.numpy()).sum() > 0
    assert all(p.grad is not None for p in layer.parameters())


def test_against_paddle():
    paddle = pytest.importorskip("paddle")
    ours = nn.Transformer(8, 2, 1, 2, 16, dropout=0.0, normalize_before=True)
    theirs = paddle.nn.Transformer(8, 2, 1, 2, 16, dropout=0.0, normalize_before=True)
    state = theirs.state_dict()
    assert sorted(state) == sorted(ours.state_dict())
    ours.set_state_dict({k: v.numpy() for k, v in state.items()})
    src, tgt = r(2, 5, 8), r(2, 3, 8)
    mask = theirs.generate_square_subsequent_mask(3)
    expected = theirs(paddle.to_tensor(src), paddle.to_tensor(tgt), tgt_mask=mask).numpy()
    got = ours(oar.to_tensor(src), oar.to_tensor(tgt), tgt_mask=ours.generate_square_subsequent_mask(3))
    assert_close(got, expected, rtol=1e-4, atol=1e-5)
