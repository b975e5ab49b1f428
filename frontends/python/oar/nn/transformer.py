"""MultiHeadAttention and the Transformer encoder (paddle.nn.MultiHeadAttention,
TransformerEncoderLayer, TransformerEncoder), with Paddle's sublayer names so
state dicts match."""
from .. import _C
from . import functional as F
from .functional_conv import _attention_bias
from .layer import Layer
from .layers import Dropout, LayerList, LayerNorm, Linear

_ops = _C.ops


class MultiHeadAttention(Layer):
    """query/key/value [batch, seq, embed_dim]; key defaults to query, value to
    key. attn_mask broadcasts to [batch, num_heads, seq_q, seq_k]: a bool/int
    mask keeps True entries, a float mask is added to the scores."""

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
        b, s = x.shape[0], x.shape[1]
        return _ops.transpose(_ops.reshape(x, [b, s, self.num_heads, self.head_dim]), [0, 2, 1, 3])

    def forward(self, query, key=None, value=None, attn_mask=None, cache=None):
        if cache is not None:
            raise NotImplementedError("MultiHeadAttention: cache is not supported yet")
        key = query if key is None else key
        value = key if value is None else value
        q = self._heads(self.q_proj(query))
        k = self._heads(self.k_proj(key))
        v = self._heads(self.v_proj(value))
        scores = _ops.matmul(_ops.multiply_scalar(q, self.head_dim ** -0.5), k, False, True)
        bias = _attention_bias(attn_mask, scores.dtype)
        if bias is not None:
            scores = _ops.add(scores, bias)
        weights = _ops.softmax(scores, -1)
        if self.dropout:
            weights = F.dropout(weights, self.dropout, training=self.training)
        out = _ops.transpose(_ops.matmul(weights, v, False, False), [0, 2, 1, 3])
        out = self.out_proj(_ops.reshape(out, [out.shape[0], out.shape[1], self.embed_dim]))
        return (out, weights) if self.need_weights else out

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
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout=attn_dropout, weight_attr=weight_attr,
                                            bias_attr=bias_attr)
        self.linear1 = Linear(d_model, dim_feedforward, weight_attr, bias_attr)
        self.dropout = Dropout(act_dropout, mode="upscale_in_train")
        self.linear2 = Linear(dim_feedforward, d_model, weight_attr, bias_attr)
        self.norm1 = LayerNorm(d_model, layer_norm_eps)
        self.norm2 = LayerNorm(d_model, layer_norm_eps)
        self.dropout1 = Dropout(dropout, mode="upscale_in_train")
        self.dropout2 = Dropout(dropout, mode="upscale_in_train")
        self.activation = getattr(F, activation)

    def forward(self, src, src_mask=None, cache=None):
        if cache is not None:
            raise NotImplementedError("TransformerEncoderLayer: cache is not supported yet")
        residual = src
        if self.normalize_before:
            src = self.norm1(src)
        src = _ops.add(residual, self.dropout1(self.self_attn(src, src, src, src_mask)))
        if not self.normalize_before:
            src = self.norm1(src)
        residual = src
        if self.normalize_before:
            src = self.norm2(src)
        src = self.linear2(self.dropout(self.activation(self.linear1(src))))
        src = _ops.add(residual, self.dropout2(src))
        if not self.normalize_before:
            src = self.norm2(src)
        return src


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
        for layer in self.layers:
            src = layer(src, src_mask)
        return self.norm(src) if self.norm is not None else src


__all__ = ["MultiHeadAttention", "TransformerEncoderLayer", "TransformerEncoder"]
