"""paddle.nn normalization (GroupNorm, InstanceNorm*, LocalResponseNorm,
BatchNorm3D), padding (Pad*, ZeroPad*, ...), resizing (Upsample*), Unfold/Fold,
shuffles and Unflatten layers."""
import numbers

from .. import _C
from . import functional as F
from . import initializer as I
from .layer import Layer
from .layers_conv import _BatchNormBase
from .layers_conv_nd import functional_layer

_ops = _C.ops


class BatchNorm3D(_BatchNormBase):
    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None, bias_attr=None,
                 data_format="NCDHW", use_global_stats=None, name=None):
        super().__init__(num_features, momentum, epsilon, weight_attr, bias_attr, data_format, use_global_stats)


class BatchNorm(_BatchNormBase):
    """Paddle's older batch norm layer: BatchNorm2D's behaviour with
    data_layout, an optional activation (act) applied after, and dtype."""

    def __init__(self, num_channels, act=None, is_test=False, momentum=0.9, epsilon=1e-05, param_attr=None,
                 bias_attr=None, dtype="float32", data_layout="NCHW", in_place=False, moving_mean_name=None,
                 moving_variance_name=None, do_model_average_for_mean_and_var=True, use_global_stats=False,
                 trainable_statistics=False):
        if trainable_statistics:
            raise ValueError("BatchNorm: trainable_statistics=True is not supported")
        if act is not None and not hasattr(F, act):
            raise ValueError(f"BatchNorm: unknown activation '{act}'")
        super().__init__(num_channels, momentum, epsilon, param_attr, bias_attr, data_layout, use_global_stats)
        self._act = act
        from ..framework import convert_dtype, float32
        if convert_dtype(dtype) != float32:
            self.to(dtype=dtype)

    def forward(self, x):
        y = super().forward(x)
        return getattr(F, self._act)(y) if self._act else y


class Softmax2D(Layer):
    """Softmax over the channels of a [C, H, W] or [N, C, H, W] x."""

    def __init__(self, name=None):
        super().__init__()

    def forward(self, x):
        if len(x.shape) not in (3, 4):
            raise ValueError(f"Softmax2D: x must be 3-D or 4-D, got shape {list(x.shape)}")
        return F.softmax(x, -3)


class SpectralNorm(Layer):
    """forward(weight) = weight / sigma, sigma its largest singular value (with
    dim moved first and the rest flattened) estimated by power_iters power
    iterations from weight_u; weight_u and weight_v are Normal(0, 1) and not
    trained, and sigma's gradient treats the iterated vectors as constants."""

    def __init__(self, weight_shape, dim=0, power_iters=1, eps=1e-12, dtype="float32"):
        super().__init__()
        from ..framework import convert_dtype
        self._dtype = convert_dtype(dtype)
        shape = [int(s) for s in weight_shape]
        if not -len(shape) <= dim < len(shape):
            raise ValueError(f"SpectralNorm: dim {dim} is out of range for weight_shape {shape}")
        self._dim, self._power_iters, self._eps = dim % len(shape), int(power_iters), float(eps)
        h = shape[self._dim]
        w = 1
        for i, s in enumerate(shape):
            w *= s if i != self._dim else 1
        self.weight_u = self.create_parameter([h], default_initializer=I.Normal(0.0, 1.0))
        self.weight_v = self.create_parameter([w], default_initializer=I.Normal(0.0, 1.0))
        self.weight_u.stop_gradient = self.weight_v.stop_gradient = True

    def _unit(self, v):
        return _ops.divide(v, _ops.add_scalar(_ops.sqrt(_ops.sum(_ops.multiply(v, v), [], False)), self._eps))

    def forward(self, weight):
        nd = len(weight.shape)
        perm = [self._dim] + [i for i in range(nd) if i != self._dim]
        mat = _ops.reshape(_ops.transpose(weight, perm), [weight.shape[self._dim], -1])
        frozen = mat.detach()
        u, v = _ops.reshape(self.weight_u.detach(), [-1, 1]), _ops.reshape(self.weight_v.detach(), [-1, 1])
        for _ in range(self._power_iters):
            v = self._unit(_ops.matmul(frozen, u, True, False))
            u = self._unit(_ops.matmul(frozen, v, False, False))
        sigma = _ops.reshape(_ops.matmul(_ops.matmul(u, mat, True, False), v, False, False), [])
        return _ops.divide(weight, sigma)


class GroupNorm(Layer):
    """weight [num_channels] (ones) and bias (zeros); affine=False leaves both out."""

    def __init__(self, num_groups, num_channels, epsilon=1e-05, *, affine=True, device=None, dtype=None,
                 weight_attr=None, bias_attr=None, data_format="NCHW", name=None):
        super().__init__()
        if num_groups < 1 or num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels {num_channels} is not divisible by num_groups {num_groups}")
        self._num_groups, self._num_channels, self._epsilon = num_groups, num_channels, epsilon
        self._data_format = data_format
        if dtype is not None:
            from ..framework import convert_dtype
            self._dtype = convert_dtype(dtype)
        self.weight = self.create_parameter([num_channels], attr=weight_attr if affine else False,
                                            default_initializer=I.Constant(1.0))
        self.bias = self.create_parameter([num_channels], attr=bias_attr if affine else False, is_bias=True)
        if device is not None:
            self.to(device)

    def forward(self, x):
        return F.group_norm(x, self._num_groups, self._epsilon, self.weight, self.bias, self._data_format)

    def extra_repr(self):
        return f"num_groups={self._num_groups}, num_channels={self._num_channels}, epsilon={self._epsilon}"


class _InstanceNormBase(Layer):
    """scale [num_features] (ones) and bias (zeros), Paddle's names; statistics
    always from the input."""
    _default_format = "NCHW"

    def __init__(self, num_features, epsilon=1e-05, momentum=0.9, weight_attr=None, bias_attr=None,
                 data_format=None, name=None):
        super().__init__()
        self._num_features, self._epsilon, self._momentum = num_features, epsilon, momentum
        self._data_format = data_format or self._default_format
        if weight_attr is False or bias_attr is False:
            self.scale, self.bias = None, None
        else:
            self.scale = self.create_parameter([num_features], attr=weight_attr, default_initializer=I.Constant(1.0))
            self.bias = self.create_parameter([num_features], attr=bias_attr, is_bias=True)

    def forward(self, x):
        return F.instance_norm(x, weight=self.scale, bias=self.bias, eps=self._epsilon,
                               data_format=self._data_format)

    def extra_repr(self):
        return f"num_features={self._num_features}, epsilon={self._epsilon}"


class InstanceNorm1D(_InstanceNormBase):
    _default_format = "NCL"


class InstanceNorm2D(_InstanceNormBase):
    _default_format = "NCHW"


class InstanceNorm3D(_InstanceNormBase):
    _default_format = "NCDHW"


LocalResponseNorm = functional_layer("LocalResponseNorm", "local_response_norm", ["size"],
                                     {"alpha": 0.0001, "beta": 0.75, "k": 1.0, "data_format": "NCHW"})


# ---- padding ----

class _PadNd(Layer):
    _n, _mode = 2, None

    def __init__(self, padding, mode="constant", value=0.0, data_format=None, name=None):
        super().__init__()
        n = self._n
        if isinstance(padding, numbers.Integral):
            padding = [int(padding)] * (2 * n)
        elif not hasattr(padding, "numpy"):
            padding = [int(p) for p in padding]
            if len(padding) != 2 * n:
                raise ValueError(f"{type(self).__name__}: padding must be an int or {2 * n} ints, got {padding}")
        self._pad, self._mode = padding, self._mode or mode
        self._value = value
        self._data_format = data_format or {1: "NCL", 2: "NCHW", 3: "NCDHW"}[n]

    def forward(self, x):
        return F.pad(x, self._pad, self._mode, self._value, self._data_format)

    def extra_repr(self):
        return f"padding={self._pad}, mode={self._mode}, value={self._value}, data_format={self._data_format}"


def _pad_layer(cls_name, n, mode, with_mode):
    if with_mode:
        def __init__(self, padding, mode="constant", value=0.0, data_format=None, name=None):
            _PadNd.__init__(self, padding, mode, value, data_format)
    elif mode == "constant_value":
        def __init__(self, padding, value, data_format=None, name=None):
            _PadNd.__init__(self, padding, "constant", value, data_format)
    else:
        def __init__(self, padding, data_format=None, name=None):
            _PadNd.__init__(self, padding, mode, 0.0, data_format)
    return type(cls_name, (_PadNd,), {"__init__": __init__, "_n": n,
                                      "_mode": None if with_mode or mode == "constant_value" else mode})


_PADS = {}
for _n in (1, 2, 3):
    _PADS[f"Pad{_n}D"] = _pad_layer(f"Pad{_n}D", _n, None, True)
    _PADS[f"ZeroPad{_n}D"] = _pad_layer(f"ZeroPad{_n}D", _n, "constant", False)
    _PADS[f"ConstantPad{_n}D"] = _pad_layer(f"ConstantPad{_n}D", _n, "constant_value", False)
    _PADS[f"ReflectionPad{_n}D"] = _pad_layer(f"ReflectionPad{_n}D", _n, "reflect", False)
    _PADS[f"ReplicationPad{_n}D"] = _pad_layer(f"ReplicationPad{_n}D", _n, "replicate", False)
    _PADS[f"CircularPad{_n}D"] = _pad_layer(f"CircularPad{_n}D", _n, "circular", False)
globals().update(_PADS)


# ---- resizing ----

Upsample = functional_layer("Upsample", "interpolate", [],
                            {"size": None, "scale_factor": None, "mode": "nearest", "align_corners": False,
                             "align_mode": 0, "data_format": None, "recompute_scale_factor": None},
                            ["size", "scale_factor", "mode", "align_corners", "align_mode", "data_format"])


class UpsamplingNearest2D(Layer):
    def __init__(self, size=None, scale_factor=None, data_format="NCHW", name=None):
        super().__init__()
        self._size, self._scale_factor, self._data_format = size, scale_factor, data_format

    def forward(self, x):
        return F.interpolate(x, self._size, self._scale_factor, "nearest", False, 0, self._data_format)

    def extra_repr(self):
        what = f"size={self._size}" if self._size is not None else f"scale_factor={self._scale_factor}"
        return f"{what}, data_format={self._data_format}"


class UpsamplingBilinear2D(UpsamplingNearest2D):
    """Bilinear with align_corners=True, as Paddle."""

    def forward(self, x):
        return F.interpolate(x, self._size, self._scale_factor, "bilinear", True, 0, self._data_format)


class Unfold(Layer):
    def __init__(self, kernel_sizes, dilations=1, paddings=0, strides=1, name=None):
        super().__init__()
        self._args = (kernel_sizes, strides, paddings, dilations)

    def forward(self, x):
        return F.unfold(x, *self._args)

    def extra_repr(self):
        k, s, p, d = self._args
        return f"kernel_size={k}, dilation={d}, padding={p}, stride={s}"


class Fold(Layer):
    def __init__(self, output_sizes, kernel_sizes, dilations=1, paddings=0, strides=1, name=None):
        super().__init__()
        self._args = (output_sizes, kernel_sizes, strides, paddings, dilations)

    def forward(self, x):
        return F.fold(x, *self._args)

    def extra_repr(self):
        _, k, s, p, d = self._args
        return f"kernel_size={k}, dilation={d}, padding={p}, stride={s}"


PixelShuffle = functional_layer("PixelShuffle", "pixel_shuffle", ["upscale_factor"], {"data_format": "NCHW"},
                                ["upscale_factor"])
PixelUnshuffle = functional_layer("PixelUnshuffle", "pixel_unshuffle", ["downscale_factor"], {"data_format": "NCHW"},
                                  ["downscale_factor"])
ChannelShuffle = functional_layer("ChannelShuffle", "channel_shuffle", ["groups"], {"data_format": "NCHW"},
                                  ["groups"])


class Unflatten(Layer):
    """Splits dim axis into shape."""

    def __init__(self, axis, shape, name=None):
        super().__init__()
        self._axis = int(axis)
        self._shape = [int(s) for s in (shape.numpy().tolist() if hasattr(shape, "numpy") else shape)]

    def forward(self, x):
        axis = self._axis % len(x.shape)
        return _ops.reshape(x, list(x.shape[:axis]) + self._shape + list(x.shape[axis + 1:]))

    def extra_repr(self):
        return f"axis={self._axis}, shape={self._shape}"


__all__ = ["BatchNorm", "Softmax2D", "SpectralNorm", "BatchNorm3D", "GroupNorm", "InstanceNorm1D", "InstanceNorm2D",
           "InstanceNorm3D", "LocalResponseNorm",
           "Upsample", "UpsamplingNearest2D", "UpsamplingBilinear2D", "Unfold", "Fold", "PixelShuffle",
           "PixelUnshuffle", "ChannelShuffle", "Unflatten"] + list(_PADS)
