"""The Transformer decoder and the full encoder-decoder model
(paddle.nn.TransformerDecoderLayer, TransformerDecoder, Transformer), with
Paddle's sublayer names so state dicts match."""
import numpy as np

from .. import _C
from . import functional as F
from .layer import Layer
from .layers import Dropout, LayerList, LayerNorm, Linear
from .transformer import MultiHeadAttention, TransformerEncoder, TransformerEncoderLayer, _attr_list

_ops = _C.ops


class TransformerDecoderLayer(Layer):
    """Self-attention over tgt, cross-attention over memory, then a
    feed-forward block; each with a residual and a LayerNorm (after, or
    before with normalize_before=True). weight_attr/bias_attr may be lists of
    3 (self-attention, cross-attention, feed-forward)."""

    def __init__(self, d_model, nhead, dim_feedforward, dropout=0.1, activation="relu", attn_dropout=None,
                 act_dropout=None, normalize_before=False, weight_attr=None, bias_attr=None, layer_norm_eps=1e-5):
        config = {k: v for k, v in locals().items() if k not in ("self", "__class__")}
        super().__init__()
        self._config = config
        if not hasattr(F, activation):
            raise ValueError(f"TransformerDecoderLayer: unknown activation '{activation}'")
        attn_dropout = dropout if attn_dropout is None else attn_dropout
        act_dropout = dropout if act_dropout is None else act_dropout
        weights, biases = _attr_list(weight_attr, 3), _attr_list(bias_attr, 3)
        self.normalize_before = normalize_before
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout=attn_dropout, weight_attr=weights[0],
                                            bias_attr=biases[0])
        self.cross_attn = MultiHeadAttention(d_model, nhead, dropout=attn_dropout, weight_attr=weights[1],
                                             bias_attr=biases[1])
        self.linear1 = Linear(d_model, dim_feedforward, weights[2], biases[2])
        self.dropout = Dropout(act_dropout, mode="upscale_in_train")
        self.linear2 = Linear(dim_feedforward, d_model, weights[2], biases[2])
        self.norm1 = LayerNorm(d_model, layer_norm_eps)
        self.norm2 = LayerNorm(d_model, layer_norm_eps)
        self.norm3 = LayerNorm(d_model, layer_norm_eps)
        self.dropout1 = Dropout(dropout, mode="upscale_in_train")
        self.dropout2 = Dropout(dropout, mode="upscale_in_train")
        self.dropout3 = Dropout(dropout, mode="upscale_in_train")
        self.activation = getattr(F, activation)

    def _residual(self, x, norm, dropout, block):
        y = norm(x) if self.normalize_before else x
        y = _ops.add(x, dropout(block(y)))
        return y if self.normalize_before else norm(y)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, cache=None):
        """cache: (incremental Cache, StaticCache) from gen_cache; with it the
        result is (output, updated cache)."""
        new_cache = []

        def self_block(x):
            if cache is None:
                return self.self_attn(x, x, x, tgt_mask)
            out, incremental = self.self_attn(x, x, x, tgt_mask, cache[0])
            new_cache.append(incremental)
            return out

        def cross_block(x):
            if cache is None:
                return self.cross_attn(x, memory, memory, memory_mask)
            return self.cross_attn(x, memory, memory, memory_mask, cache[1])[0]

        tgt = self._residual(tgt, self.norm1, self.dropout1, self_block)
        tgt = self._residual(tgt, self.norm2, self.dropout2, cross_block)
        tgt = self._residual(tgt, self.norm3, self.dropout3,
                             lambda x: self.linear2(self.dropout(self.activation(self.linear1(x)))))
        return tgt if cache is None else (tgt, (new_cache[0], cache[1]))

    def gen_cache(self, memory):
        """(an empty incremental Cache for self-attention, a StaticCache of memory for cross-attention)."""
        return (self.self_attn.gen_cache(memory, type=MultiHeadAttention.Cache),
                self.cross_attn.gen_cache(memory, memory, type=MultiHeadAttention.StaticCache))


class TransformerDecoder(Layer):
    """num_layers copies of decoder_layer's configuration (the first is
    decoder_layer itself, as in Paddle), then an optional norm."""

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = LayerList([decoder_layer if i == 0 else type(decoder_layer)(**decoder_layer._config)
                                 for i in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, cache=None):
        new_caches = []
        for i, layer in enumerate(self.layers):
            if cache is None:
                tgt = layer(tgt, memory, tgt_mask, memory_mask)
            else:
                tgt, layer_cache = layer(tgt, memory, tgt_mask, memory_mask, cache[i])
                new_caches.append(layer_cache)
        tgt = self.norm(tgt) if self.norm is not None else tgt
        return tgt if cache is None else (tgt, new_caches)

    def gen_cache(self, memory, do_zip=False):
        cache = [layer.gen_cache(memory) for layer in self.layers]
        return list(zip(*cache)) if do_zip else cache


def _split_attrs(attr):
    """Paddle's Transformer attributes -> ([encoder's 2], [decoder's 3]): a
    list of 2 is (attention, feed-forward); of 3 (self-attention,
    cross-attention, feed-forward)."""
    attrs = list(attr) if isinstance(attr, (list, tuple)) else [attr]
    if len(attrs) == 1:
        attrs = attrs * 3
    elif len(attrs) == 2:
        attrs = [attrs[0], attrs[0], attrs[1]]
    elif len(attrs) != 3:
        raise ValueError(f"Transformer: weight_attr/bias_attr lists must have 1, 2 or 3 entries, got {len(attrs)}")
    return [attrs[0], attrs[2]], attrs


class Transformer(Layer):
    """An encoder (num_encoder_layers layers and a final LayerNorm) and a
    decoder (likewise); custom_encoder / custom_decoder replace them."""

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6, dim_feedforward=2048,
                 dropout=0.1, activation="relu", attn_dropout=None, act_dropout=None, normalize_before=False,
                 weight_attr=None, bias_attr=None, custom_encoder=None, custom_decoder=None):
        super().__init__()
        if d_model % nhead:
            raise ValueError(f"Transformer: d_model {d_model} is not divisible by nhead {nhead}")
        weights, biases = _split_attrs(weight_attr), _split_attrs(bias_attr)
        common = dict(dropout=dropout, activation=activation, attn_dropout=attn_dropout, act_dropout=act_dropout,
                      normalize_before=normalize_before)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, weight_attr=weights[0],
                                            bias_attr=biases[0], **common)
            self.encoder = TransformerEncoder(layer, num_encoder_layers, LayerNorm(d_model))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, weight_attr=weights[1],
                                            bias_attr=biases[1], **common)
            self.decoder = TransformerDecoder(layer, num_decoder_layers, LayerNorm(d_model))
        self.d_model, self.nhead = d_model, nhead

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None):
        memory = self.encoder(src, src_mask)
        return self.decoder(tgt, memory, tgt_mask, memory_mask)

    def generate_square_subsequent_mask(self, length):
        """[length, length] float mask: 0 on and below the diagonal, -inf above."""
        from ..creation import to_tensor
        if getattr(length, "_size_of", None) is not None:  # a length decided when a program runs
            from .. import _C
            from ..creation import arange
            pos = arange(length)
            above = _C.ops.greater_than(_C.ops.unsqueeze(pos, [0]), _C.ops.unsqueeze(pos, [1]))
            zero = _C.ops.full([], 0.0)
            return _C.ops.where(above, _C.ops.full([], float("-inf")), zero)
        length = int(length.item() if hasattr(length, "item") else length)
        mask = np.triu(np.full([length, length], -np.inf, dtype=np.float32), 1)
        return to_tensor(mask)


__all__ = ["TransformerDecoderLayer", "TransformerDecoder", "Transformer"]
