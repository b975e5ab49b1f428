"""DenseNet 121/161/169/201/264 (paddle.vision.models.densenet*)."""
import math

from ... import nn
from ...math import concat, flatten
from ...nn import functional as F
from ._utils import no_pretrained


class _BatchNormReLU(nn.BatchNorm2D):
    """BatchNorm2D followed by ReLU (Paddle's legacy nn.BatchNorm(act='relu'); same state dict names)."""

    def forward(self, x):
        return F.relu(super().forward(x))


class BNACConvLayer(nn.Layer):
    """BatchNorm + ReLU, then a bias-free conv."""

    def __init__(self, num_channels, num_filters, filter_size, stride=1, pad=0, groups=1, act="relu"):
        super().__init__()
        self._batch_norm = _BatchNormReLU(num_channels)
        self._conv = nn.Conv2D(num_channels, num_filters, filter_size, stride=stride, padding=pad, groups=groups,
                               bias_attr=False)

    def forward(self, input):  # noqa: A002 - paddle's name
        return self._conv(self._batch_norm(input))


class DenseLayer(nn.Layer):
    """1x1 then 3x3 BN-ReLU-conv; the growth_rate new channels are appended to the input."""

    def __init__(self, num_channels, growth_rate, bn_size, dropout):
        super().__init__()
        self.dropout = dropout
        self.bn_ac_func1 = BNACConvLayer(num_channels, bn_size * growth_rate, 1, pad=0, stride=1)
        self.bn_ac_func2 = BNACConvLayer(bn_size * growth_rate, growth_rate, 3, pad=1, stride=1)
        if dropout:
            self.dropout_func = nn.Dropout(p=dropout, mode="downscale_in_infer")

    def forward(self, input):  # noqa: A002
        conv = self.bn_ac_func2(self.bn_ac_func1(input))
        if self.dropout:
            conv = self.dropout_func(conv)
        return concat([input, conv], axis=1)


class DenseBlock(nn.Layer):
    def __init__(self, num_channels, num_layers, bn_size, growth_rate, dropout, name=None):
        super().__init__()
        self.dropout = dropout
        self.dense_layer_func = [
            self.add_sublayer(f"{name}_{i + 1}", DenseLayer(num_channels + i * growth_rate, growth_rate, bn_size,
                                                             dropout)) for i in range(num_layers)]

    def forward(self, input):  # noqa: A002
        for layer in self.dense_layer_func:
            input = layer(input)
        return input


class TransitionLayer(nn.Layer):
    """BN-ReLU-1x1 conv, then a 2x2 average pool."""

    def __init__(self, num_channels, num_output_features):
        super().__init__()
        self.conv_ac_func = BNACConvLayer(num_channels, num_output_features, 1, pad=0, stride=1)
        self.pool2d_avg = nn.AvgPool2D(kernel_size=2, stride=2, padding=0)

    def forward(self, input):  # noqa: A002
        return self.pool2d_avg(self.conv_ac_func(input))


class ConvBNLayer(nn.Layer):
    def __init__(self, num_channels, num_filters, filter_size, stride=1, pad=0, groups=1, act="relu"):
        super().__init__()
        self._conv = nn.Conv2D(num_channels, num_filters, filter_size, stride=stride, padding=pad, groups=groups,
                               bias_attr=False)
        self._batch_norm = _BatchNormReLU(num_filters)

    def forward(self, input):  # noqa: A002
        return self._batch_norm(self._conv(input))


# layers: (initial features, growth rate, layers per dense block)
_SPECS = {121: (64, 32, [6, 12, 24, 16]), 161: (96, 48, [6, 12, 36, 24]), 169: (64, 32, [6, 12, 32, 32]),
          201: (64, 32, [6, 12, 48, 32]), 264: (64, 32, [6, 12, 64, 48])}


class DenseNet(nn.Layer):
    def __init__(self, layers=121, bn_size=4, dropout=0.0, num_classes=1000, with_pool=True):
        super().__init__()
        if layers not in _SPECS:
            raise ValueError(f"DenseNet: layers must be one of {sorted(_SPECS)}, got {layers}")
        self.num_classes, self.with_pool = num_classes, with_pool
        num_features, growth_rate, block_config = _SPECS[layers]
        self.block_config = block_config
        self.conv1_func = ConvBNLayer(3, num_features, 7, stride=2, pad=3, act="relu")
        self.pool2d_max = nn.MaxPool2D(kernel_size=3, stride=2, padding=1)
        self.dense_block_func_list, self.transition_func_list = [], []
        for i, num_layers in enumerate(block_config):
            self.dense_block_func_list.append(self.add_sublayer(
                f"db_conv_{i + 2}", DenseBlock(num_features, num_layers, bn_size, growth_rate, dropout,
                                               name=f"conv{i + 2}")))
            num_features += num_layers * growth_rate
            if i != len(block_config) - 1:
                self.transition_func_list.append(self.add_sublayer(
                    f"tr_conv{i + 2}_blk", TransitionLayer(num_features, num_features // 2)))
                num_features //= 2
        self.batch_norm = _BatchNormReLU(num_features)
        if with_pool:
            self.pool2d_avg = nn.AdaptiveAvgPool2D(1)
        if num_classes > 0:
            stdv = 1.0 / math.sqrt(num_features)
            self.out = nn.Linear(num_features, num_classes,
                                 weight_attr=nn.ParamAttr(initializer=nn.initializer.Uniform(-stdv, stdv)))

    def forward(self, input):  # noqa: A002
        y = self.pool2d_max(self.conv1_func(input))
        for i in range(len(self.block_config)):
            y = self.dense_block_func_list[i](y)
            if i != len(self.block_config) - 1:
                y = self.transition_func_list[i](y)
        y = self.batch_norm(y)
        if self.with_pool:
            y = self.pool2d_avg(y)
        if self.num_classes > 0:
            y = self.out(flatten(y, 1))
        return y


def _builder(layers):
    arch = f"densenet{layers}"

    def build(pretrained=False, **kwargs):
        no_pretrained(arch, pretrained)
        return DenseNet(layers=layers, **kwargs)
    build.__name__ = build.__qualname__ = arch
    build.__doc__ = f"DenseNet-{layers}."
    return build


densenet121, densenet161, densenet169 = _builder(121), _builder(161), _builder(169)
densenet201, densenet264 = _builder(201), _builder(264)
