"""ShuffleNetV2 (paddle.vision.models.shufflenet_v2_*)."""
from ... import nn
from ...math import concat, flatten, reshape, split, transpose
from ._utils import ConvNormActivation, no_pretrained


def create_activation_layer(act):
    acts = {"swish": nn.Swish, "relu": nn.ReLU, None: None}
    if act not in acts:
        raise ValueError(f"ShuffleNetV2: act must be 'relu', 'swish' or None, got '{act}'")
    return acts[act]


def channel_shuffle(x, groups):
    """[N, g * k, H, W] -> interleaves the g groups of k channels."""
    n, c, h, w = x.shape[0:4]
    x = transpose(reshape(x, [n, groups, c // groups, h, w]), [0, 2, 1, 3, 4])
    return reshape(x, [n, c, h, w])


def _conv(cin, cout, k, stride, groups, act):
    return ConvNormActivation(cin, cout, kernel_size=k, stride=stride, padding=(k - 1) // 2, groups=groups,
                              activation_layer=act)


class InvertedResidual(nn.Layer):
    """Half the channels pass through, the other half go through 1x1, 3x3 depthwise, 1x1."""

    def __init__(self, in_channels, out_channels, stride, activation_layer=nn.ReLU):
        super().__init__()
        half = out_channels // 2
        self._conv_pw = _conv(in_channels // 2, half, 1, 1, 1, activation_layer)
        self._conv_dw = _conv(half, half, 3, stride, half, None)
        self._conv_linear = _conv(half, half, 1, 1, 1, activation_layer)

    def forward(self, inputs):
        c = inputs.shape[1]
        x1, x2 = split(inputs, [c // 2, c // 2], axis=1)
        x2 = self._conv_linear(self._conv_dw(self._conv_pw(x2)))
        return channel_shuffle(concat([x1, x2], axis=1), 2)


class InvertedResidualDS(nn.Layer):
    """The downsampling block: two strided branches, concatenated and shuffled."""

    def __init__(self, in_channels, out_channels, stride, activation_layer=nn.ReLU):
        super().__init__()
        half = out_channels // 2
        self._conv_dw_1 = _conv(in_channels, in_channels, 3, stride, in_channels, None)
        self._conv_linear_1 = _conv(in_channels, half, 1, 1, 1, activation_layer)
        self._conv_pw_2 = _conv(in_channels, half, 1, 1, 1, activation_layer)
        self._conv_dw_2 = _conv(half, half, 3, stride, half, None)
        self._conv_linear_2 = _conv(half, half, 1, 1, 1, activation_layer)

    def forward(self, inputs):
        x1 = self._conv_linear_1(self._conv_dw_1(inputs))
        x2 = self._conv_linear_2(self._conv_dw_2(self._conv_pw_2(inputs)))
        return channel_shuffle(concat([x1, x2], axis=1), 2)


_STAGE_CHANNELS = {0.25: [24, 24, 48, 96, 512], 0.33: [24, 32, 64, 128, 512], 0.5: [24, 48, 96, 192, 1024],
                   1.0: [24, 116, 232, 464, 1024], 1.5: [24, 176, 352, 704, 1024], 2.0: [24, 224, 488, 976, 2048]}


class ShuffleNetV2(nn.Layer):
    def __init__(self, scale=1.0, act="relu", num_classes=1000, with_pool=True):
        super().__init__()
        if scale not in _STAGE_CHANNELS:
            raise ValueError(f"ShuffleNetV2: scale must be one of {sorted(_STAGE_CHANNELS)}, got {scale}")
        self.scale, self.num_classes, self.with_pool = scale, num_classes, with_pool
        act_layer = create_activation_layer(act)
        channels = _STAGE_CHANNELS[scale]
        self._conv1 = _conv(3, channels[0], 3, 2, 1, act_layer)
        self._max_pool = nn.MaxPool2D(kernel_size=3, stride=2, padding=1)
        self._block_list = []
        for stage, repeats in enumerate([4, 8, 4]):
            for i in range(repeats):
                block = InvertedResidualDS(channels[stage], channels[stage + 1], 2, act_layer) if i == 0 else \
                    InvertedResidual(channels[stage + 1], channels[stage + 1], 1, act_layer)
                self._block_list.append(self.add_sublayer(f"{stage + 2}_{i + 1}", block))
        self._last_conv = _conv(channels[-2], channels[-1], 1, 1, 1, act_layer)
        if with_pool:
            self._pool2d_avg = nn.AdaptiveAvgPool2D(1)
        if num_classes > 0:
            self._out_c = channels[-1]
            self._fc = nn.Linear(channels[-1], num_classes)

    def forward(self, inputs):
        x = self._max_pool(self._conv1(inputs))
        for block in self._block_list:
            x = block(x)
        x = self._last_conv(x)
        if self.with_pool:
            x = self._pool2d_avg(x)
        if self.num_classes > 0:
            x = self._fc(flatten(x, 1))
        return x


def _builder(arch, scale, act="relu"):
    def build(pretrained=False, **kwargs):
        no_pretrained(arch, pretrained)
        return ShuffleNetV2(scale=scale, act=act, **kwargs)
    build.__name__ = build.__qualname__ = arch
    build.__doc__ = f"ShuffleNetV2 with scale {scale} and {act} activations."
    return build


shufflenet_v2_x0_25 = _builder("shufflenet_v2_x0_25", 0.25)
shufflenet_v2_x0_33 = _builder("shufflenet_v2_x0_33", 0.33)
shufflenet_v2_x0_5 = _builder("shufflenet_v2_x0_5", 0.5)
shufflenet_v2_x1_0 = _builder("shufflenet_v2_x1_0", 1.0)
shufflenet_v2_x1_5 = _builder("shufflenet_v2_x1_5", 1.5)
shufflenet_v2_x2_0 = _builder("shufflenet_v2_x2_0", 2.0)
shufflenet_v2_swish = _builder("shufflenet_v2_swish", 1.0, "swish")
