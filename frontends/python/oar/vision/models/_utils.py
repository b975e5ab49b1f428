"""Pieces shared by the vision models."""
from ... import nn


def no_pretrained(arch, pretrained):
    """oar ships no weights and never downloads: pretrained=True is an error."""
    if pretrained:
        raise ValueError(f"{arch}: pretrained=True needs downloaded weights, which oar does not fetch (no network "
                         f"access); build the model with pretrained=False and load a state dict with "
                         f"set_state_dict(oar.load(path))")


def _make_divisible(v, divisor=8, min_value=None):
    """v rounded to a multiple of divisor, never more than 10% below v."""
    min_value = min_value or divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


class ConvNormActivation(nn.Sequential):
    """Conv2D, then norm_layer (if not None), then activation_layer (if not
    None); the conv has a bias only when there is no norm layer, unless bias says."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, padding=None, groups=1,
                 norm_layer=nn.BatchNorm2D, activation_layer=nn.ReLU, dilation=1, bias=None):
        if padding is None:
            padding = (kernel_size - 1) // 2 * dilation
        if bias is None:
            bias = norm_layer is None
        layers = [nn.Conv2D(in_channels, out_channels, kernel_size, stride, padding, dilation=dilation,
                            groups=groups, bias_attr=None if bias else False)]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            layers.append(activation_layer())
        super().__init__(*layers)
