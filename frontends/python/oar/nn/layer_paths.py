"""Paddle's module paths for the layers: paddle.nn.layer.<group> (conv,
pooling, norm, common, ...) and paddle.nn.layer.<Name>. Each path is a module
that looks names up in oar.nn, so layers added there later appear too."""
import sys
import types

# Paddle 3.3's grouping of the layer classes (the names oar.nn lacks stay absent).
_GROUPS = {
    "activation": "CELU ELU GELU GLU Hardshrink Hardsigmoid Hardswish Hardtanh LeakyReLU LogSigmoid LogSoftmax Maxout "
                  "Mish PReLU RReLU ReLU ReLU6 SELU Sigmoid Silu Softmax Softmax2D Softplus Softshrink Softsign "
                  "Swish Tanh Tanhshrink ThresholdedReLU SiLU",
    "common": "AlphaDropout Bilinear CircularPad1D CircularPad2D CircularPad3D ConstantPad1D ConstantPad2D "
              "ConstantPad3D CosineSimilarity Dropout Dropout2D Dropout3D Embedding FeatureAlphaDropout Flatten Fold "
              "Identity Linear Pad1D Pad2D Pad3D ReflectionPad1D ReflectionPad2D ReflectionPad3D ReplicationPad1D "
              "ReplicationPad2D ReplicationPad3D Unflatten Unfold Upsample UpsamplingBilinear2D UpsamplingNearest2D "
              "ZeroPad1D ZeroPad2D ZeroPad3D",
    "container": "LayerDict LayerList ParameterDict ParameterList Sequential",
    "conv": "Conv1D Conv1DTranspose Conv2D Conv2DTranspose Conv3D Conv3DTranspose",
    "distance": "PairwiseDistance",
    "loss": "AdaptiveLogSoftmaxWithLoss BCELoss BCEWithLogitsLoss CTCLoss CosineEmbeddingLoss CrossEntropyLoss "
            "GaussianNLLLoss HSigmoidLoss HingeEmbeddingLoss KLDivLoss L1Loss MSELoss MarginRankingLoss "
            "MultiLabelMarginLoss MultiLabelSoftMarginLoss MultiMarginLoss NLLLoss PoissonNLLLoss RNNTLoss "
            "SmoothL1Loss SoftMarginLoss TripletMarginLoss TripletMarginWithDistanceLoss",
    "norm": "BatchNorm BatchNorm1D BatchNorm2D BatchNorm3D GroupNorm InstanceNorm1D InstanceNorm2D InstanceNorm3D "
            "LayerNorm LocalResponseNorm SpectralNorm SyncBatchNorm RMSNorm",
    "pooling": "AdaptiveAvgPool1D AdaptiveAvgPool2D AdaptiveAvgPool3D AdaptiveMaxPool1D AdaptiveMaxPool2D "
               "AdaptiveMaxPool3D AvgPool1D AvgPool2D AvgPool3D FractionalMaxPool2D FractionalMaxPool3D LPPool1D "
               "LPPool2D MaxPool1D MaxPool2D MaxPool3D MaxUnPool1D MaxUnPool2D MaxUnPool3D",
    "transformer": "MultiHeadAttention Transformer TransformerDecoder TransformerDecoderLayer TransformerEncoder "
                   "TransformerEncoderLayer",
    "vision": "PixelShuffle PixelUnshuffle ChannelShuffle",
    "rnn": "RNNCellBase SimpleRNNCell LSTMCell GRUCell RNN BiRNN SimpleRNN LSTM GRU",
    "layers": "Layer",
}


# Paddle's torch-style second names of the layers in this area (nn.Conv2d is nn.Conv2D).
ALIASES = {f"{name[:-1]}d": name for name in (
    "AdaptiveAvgPool1D AdaptiveAvgPool2D AdaptiveAvgPool3D AdaptiveMaxPool1D AdaptiveMaxPool2D AdaptiveMaxPool3D "
    "CircularPad1D CircularPad2D CircularPad3D ConstantPad1D ConstantPad2D ConstantPad3D Conv1D Conv2D Conv3D "
    "LPPool1D LPPool2D ReflectionPad1D ReflectionPad2D ReflectionPad3D ReplicationPad1D ReplicationPad2D "
    "ReplicationPad3D UpsamplingBilinear2D UpsamplingNearest2D ZeroPad1D ZeroPad2D ZeroPad3D").split()}
ALIASES.update({f"MaxUnpool{n}d": f"MaxUnPool{n}D" for n in (1, 2, 3)})


class _Group(types.ModuleType):
    """A module whose names are the group's classes, read from oar.nn."""

    def __init__(self, name, members):
        super().__init__(name)
        self._members = frozenset(members)

    def __getattr__(self, name):
        from .. import nn
        if name in self._members and hasattr(nn, name):
            return getattr(nn, name)
        raise AttributeError(f"module '{self.__name__}' has no attribute '{name}'")

    def __dir__(self):
        from .. import nn
        return sorted(n for n in self._members if hasattr(nn, n))

    @property
    def __all__(self):
        return self.__dir__()


def install(layer_module):
    for group, names in _GROUPS.items():
        module = _Group(f"{layer_module.__name__}.{group}", names.split())
        sys.modules[module.__name__] = module
        setattr(layer_module, group, module)

    def any_layer(name):  # paddle.nn.layer.Conv2D
        from .. import nn
        if any(name in names.split() for names in _GROUPS.values()) and hasattr(nn, name):
            return getattr(nn, name)
        raise AttributeError(f"module '{layer_module.__name__}' has no attribute '{name}'")

    layer_module.__getattr__ = any_layer
