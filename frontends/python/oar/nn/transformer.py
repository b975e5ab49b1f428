"""MultiHeadAttention and the Transformer encoder (paddle.nn.MultiHeadAttention,
TransformerEncoderLayer, TransformerEncoder), with Paddle's sublayer names so
state dicts match."""
import collections

from .. import _C
from . import functional as F
from .functional_conv import _attention_bias
from .layer import Layer
from .layers import Dropout, LayerList, LayerNorm, Linear

_ops = _C.ops


def _attr_list(attr, n):
    """Paddle's per-sublayer attributes: one for all, or a list of 1 or n."""
    if isinstance(attr, (list, tuple)):
        if len(attr) == 1:
            return list(attr) * n
        if len(attr) != n:
            raise ValueError(f"expected 1 or {n} parameter attributes, got {len(attr)}")
        return list(attr)
    return [attr] * n


class MultiHeadAttention(Layer):
    """query/key/value [batch, seq, embed_dim]; key defaults to query, value to
    key. attn_mask broadcasts to [batch, num_heads, seq_q, seq_k]: a bool/int
    mask keeps True entries, a float mask is added to the scores. With a cache
    (see gen_cache) forward also returns the updated cache."""
    Cache = collections.namedtuple("Cache", ["k", "v"])
    StaticCache = collections.namedtuple("StaticCache", ["k", "v"])

    def __init__(self, embed_dim, num_heads, dropout=0.0, kdim=None, vdim=None, need_weights=False,
                 weight_attr=None, bias_attr=None):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"MultiHeadAttention: embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.kdim, self.vdim = kdim or embed_dim, vdim or embed_dim
        self.head_dim = embed_dim // num_heads
        self.need_weights = need_weights
        self.q_proj = Linear(embed_dim, embed_dim, weight_attr, bias_attr)
        self.k_proj = Linear(self.kdim, embed_dim, weight_attr, bias_attr)
        self.v_proj = Linear(self.vdim, embed_dim, weight_attr, bias_attr)
        self.out_proj = Linear(embed_dim, embed_dim, weight_attr, bias_attr)

    def _heads(self, x):
        # 0 copies batch and sequence, so a trace keeps their symbols (a dynamic or loop-grown length)
        return _ops.transpose(_ops.reshape(x, [0, 0, self.num_heads, self.head_dim]), [0, 2, 1, 3])

    def _project(self, key, value):
        return self._heads(self.k_proj(key)), self._heads(self.v_proj(value))

    def gen_cache(self, key, value=None, type=None):  # noqa: A002 - Paddle's name
        """StaticCache: key/value projected once (cross-attention over a fixed
        memory); Cache with value None: empty keys/values [batch, heads, 0,
        head_dim] that each forward extends; else Cache(key, value) as given."""
        type = type or MultiHeadAttention.Cache
        if type is MultiHeadAttention.StaticCache:
            return MultiHeadAttention.StaticCache(*self._project(key, key if value is None else value))
        if value is None:
            empty = _ops.full([key.shape[0], self.num_heads, 0, self.head_dim], 0.0, key.dtype)
            return MultiHeadAttention.Cache(empty, empty)
        return MultiHeadAttention.Cache(key, value)

    def forward(self, query, key=None, value=None, attn_mask=None, cache=None):
        key = query if key is None else key
        value = key if value is None else value
        q = self._heads(self.q_proj(query))
        if isinstance(cache, MultiHeadAttention.StaticCache):
            k, v = cache.k, cache.v
        else:
            k, v = self._project(key, value)
        if isinstance(cache, MultiHeadAttention.Cache):
            k, v = _ops.concat([cache.k, k], 2), _ops.concat([cache.v, v], 2)
            cache = MultiHeadAttention.Cache(k, v)
        scores = _ops.matmul(_ops.multiply_scalar(q, self.head_dim ** -0.5), k, False, True)
        bias = _attention_bias(attn_mask, scores.dtype)
        if bias is not None:
            scores = _ops.add(scores, bias)
        weights = _ops.softmax(scores, -1)
        if self.dropout:
            weights = F.dropout(weights, self.dropout, training=self.training)
        out = _ops.transpose(_ops.matmul(weights, v, False, False), [0, 2, 1, 3])
        out = self.out_proj(_ops.reshape(out, [0, 0, self.embed_dim]))
        outs = [out] + ([weights] if self.need_weights else []) + ([cache] if cache is not None else [])
        return outs[0] if len(outs) == 1 else tuple(outs)

    def extra_repr(self):
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, dropout={self.dropout}"


class TransformerEncoderLayer(Layer):
    """Self-attention then a feed-forward block, each with a residual and a
    LayerNorm (after, or before with normalize_before=True)."""

    def __init__(self, d_model, nhead, dim_feedforward, dropout=0.1, activation="relu", attn_dropout=None,
                 act_dropout=None, normalize_before=False, weight_attr=None, bias_attr=None, layer_norm_eps=1e-5):
        config = {k: v for k, v in locals().items() if k not in ("self", "__class__")}
        super().__init__()
        self._config = config
        if not hasattr(F, activation):
            raise ValueError(f"TransformerEncoderLayer: unknown activation '{activation}'")
        attn_dropout = dropout if attn_dropout is None else attn_dropout
        act_dropout = dropout if act_dropout is None else act_dropout
        self.normalize_before = normalize_before
        weights, biases = _attr_list(weight_attr, 2), _attr_list(bias_attr, 2)
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout=attn_dropout, weight_attr=weights[0],
                                            bias_attr=biases[0])
        self.linear1 = Linear(d_model, dim_feedforward, weights[1], biases[1])
        self.dropout = Dropout(act_dropout, mode="upscale_in_train")
        self.linear2 = Linear(dim_feedforward, d_model, weights[1], biases[1])
        self.norm1 = LayerNorm(d_model, layer_norm_eps)
        self.norm2 = LayerNorm(d_model, layer_norm_eps)
        self.dropout1 = Dropout(dropout, mode="upscale_in_train")
        self.dropout2 = Dropout(dropout, mode="upscale_in_train")
        self.activation = getattr(F, activation)

    def forward(self, src, src_mask=None, cache=None):
        residual = src
        if self.normalize_before:
            src = self.norm1(src)
        attended = self.self_attn(src, src, src, src_mask, cache)
        if cache is not None:
            attended, cache = attended
        src = _ops.add(residual, self.dropout1(attended))
        if not self.normalize_before:
            src = self.norm1(src)
        residual = src
        if self.normalize_before:
            src = self.norm2(src)
        src = self.linear2(self.dropout(self.activation(self.linear1(src))))
        src = _ops.add(residual, self.dropout2(src))
        if not self.normalize_before:
            src = self.norm2(src)
        return src if cache is None else (src, cache)

    def gen_cache(self, src):
        return self.self_attn.gen_cache(src, type=MultiHeadAttention.Cache)


class TransformerEncoder(Layer):
    """num_layers fresh copies of encoder_layer's configuration (the first is
    encoder_layer itself, as in Paddle), then an optional norm."""

    def __init__(self, encoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = LayerList([encoder_layer if i == 0 else type(encoder_layer)(**encoder_layer._config)
                                 for i in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, src_mask=None, cache=None):
        new_caches = []
        for i, layer in enumerate(self.layers):
            if cache is None:
                src = layer(src, src_mask)
            else:
                src, layer_cache = layer(src, src_mask, cache[i])
                new_caches.append(layer_cache)
        src = self.norm(src) if self.norm is not None else src
        return src if cache is None else (src, new_caches)

    def gen_cache(self, src):
        return [layer.gen_cache(src) for layer in self.layers]


__all__ = ["MultiHeadAttention", "TransformerEncoderLayer", "TransformerEncoder"]
