"""Conv1D/2D/3D and their transposes, 1-D/3-D pooling layers, adaptive pooling
and max unpooling (paddle.nn), over the functions of nn.functional."""
from . import functional as F
from . import initializer as I
from .functional_nd import ntuple
from .layer import Layer

_FORMATS = {1: "NCL", 2: "NCHW", 3: "NCDHW"}


class _ConvNd(Layer):
    """weight [out, in / groups, *k] ([in, out / groups, *k] when transposed),
    initialized Normal(0, sqrt(2 / (prod(k) * in_channels))) as Paddle; bias zeros."""
    _n, _transposed, _name = 2, False, "Conv2D"

    def _setup(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, output_padding=0,
               bias=True, padding_mode="zeros", device=None, dtype=None, weight_attr=None, bias_attr=None,
               data_format=None):
        n, what = self._n, self._name
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError(f"{what}: padding_mode must be 'zeros', 'reflect', 'replicate' or 'circular', "
                             f"got '{padding_mode}'")
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise ValueError(f"{what}: in_channels {in_channels} and out_channels {out_channels} must be "
                             f"divisible by groups {groups}")
        if padding_mode != "zeros" and isinstance(padding, str):
            raise ValueError(f"{what}: padding_mode '{padding_mode}' needs numeric padding, got '{padding}'")
        self._in_channels, self._out_channels, self._groups = in_channels, out_channels, groups
        self._kernel_size = ntuple(kernel_size, n, f"{what}: kernel_size")
        self._stride, self._padding, self._dilation = stride, padding, dilation
        self._output_padding, self._padding_mode = output_padding, padding_mode
        self._data_format = data_format or _FORMATS[n]
        if dtype is not None:
            from ..framework import convert_dtype
            self._dtype = convert_dtype(dtype)
        fan_in = in_channels
        for k in self._kernel_size:
            fan_in *= k
        shape = ([in_channels, out_channels // groups] if self._transposed else
                 [out_channels, in_channels // groups]) + self._kernel_size
        self.weight = self.create_parameter(shape, attr=weight_attr,
                                            default_initializer=I.Normal(0.0, (2.0 / fan_in) ** 0.5))
        self.bias = self.create_parameter([out_channels], attr=False if not bias else bias_attr, is_bias=True)
        if device is not None:
            self.to(device)

    def _mode_padded(self, x):
        """x padded by padding_mode (the conv then pads nothing)."""
        from .functional_nd import padding_pairs
        pairs = padding_pairs(self._padding, self._n, self._kernel_size, [1] * self._n, [1] * self._n,
                              [1] * self._n, self._name)
        flat = [p for pair in reversed(pairs) for p in pair]
        return F.pad(x, flat, self._padding_mode, data_format=self._data_format)

    def forward(self, x):
        fn = getattr(F, f"conv{self._n}d")
        if self._padding_mode != "zeros":
            return fn(self._mode_padded(x), self.weight, self.bias, self._stride, 0, self._dilation, self._groups,
                      self._data_format)
        return fn(x, self.weight, self.bias, self._stride, self._padding, self._dilation, self._groups,
                  self._data_format)

    def extra_repr(self):
        one = [1] * self._n
        s = f"{self._in_channels}, {self._out_channels}, kernel_size={self._kernel_size}"
        if ntuple(self._stride, self._n, "stride") != one:
            s += f", stride={self._stride}"
        if self._padding != 0:
            s += f", padding={self._padding}"
        if self._padding_mode != "zeros":
            s += f", padding_mode={self._padding_mode}"
        if self._transposed and self._output_padding != 0:
            s += f", output_padding={self._output_padding}"
        if ntuple(self._dilation, self._n, "dilation") != one:
            s += f", dilation={self._dilation}"
        if self._groups != 1:
            s += f", groups={self._groups}"
        return s + f", data_format={self._data_format}"


class _ConvTransposeNd(_ConvNd):
    _transposed = True

    def forward(self, x, output_size=None):
        fn = getattr(F, f"conv{self._n}d_transpose")
        output_padding = 0 if output_size is not None else self._output_padding
        return fn(x, self.weight, self.bias, stride=self._stride, padding=self._padding,
                  output_padding=output_padding, dilation=self._dilation, groups=self._groups,
                  output_size=output_size, data_format=self._data_format)


class Conv1D(_ConvNd):
    """x [N, C, L] (or NLC) -> [N, out_channels, L_out]."""
    _n, _name = 1, "Conv1D"

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, *,
                 bias=True, padding_mode="zeros", device=None, dtype=None, weight_attr=None, bias_attr=None,
                 data_format="NCL"):
        super().__init__()
        self._setup(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, 0, bias,
                    padding_mode, device, dtype, weight_attr, bias_attr, data_format)


class Conv2D(_ConvNd):
    """x [N, C, H, W] (or NHWC) -> [N, out_channels, H_out, W_out]."""
    _n, _name = 2, "Conv2D"

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, *,
                 bias=True, padding_mode="zeros", device=None, dtype=None, weight_attr=None, bias_attr=None,
                 data_format="NCHW"):
        super().__init__()
        self._setup(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, 0, bias,
                    padding_mode, device, dtype, weight_attr, bias_attr, data_format)


class Conv3D(_ConvNd):
    """x [N, C, D, H, W] (or NDHWC) -> [N, out_channels, D_out, H_out, W_out]."""
    _n, _name = 3, "Conv3D"

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, *,
                 bias=True, padding_mode="zeros", device=None, dtype=None, weight_attr=None, bias_attr=None,
                 data_format="NCDHW"):
        super().__init__()
        self._setup(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, 0, bias,
                    padding_mode, device, dtype, weight_attr, bias_attr, data_format)


class Conv1DTranspose(_ConvTransposeNd):
    _n, _name = 1, "Conv1DTranspose"

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 dilation=1, weight_attr=None, bias_attr=None, data_format="NCL"):
        super().__init__()
        self._setup(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, output_padding,
                    weight_attr=weight_attr, bias_attr=bias_attr, data_format=data_format)


class Conv2DTranspose(_ConvTransposeNd):
    _n, _name = 2, "Conv2DTranspose"

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, dilation=1,
                 groups=1, weight_attr=None, bias_attr=None, data_format="NCHW"):
        super().__init__()
        self._setup(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, output_padding,
                    weight_attr=weight_attr, bias_attr=bias_attr, data_format=data_format)


class Conv3DTranspose(_ConvTransposeNd):
    _n, _name = 3, "Conv3DTranspose"

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, dilation=1,
                 groups=1, weight_attr=None, bias_attr=None, data_format="NCDHW"):
        super().__init__()
        self._setup(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, output_padding,
                    weight_attr=weight_attr, bias_attr=bias_attr, data_format=data_format)


def functional_layer(cls_name, fn_name, required, defaults, shown=None, doc=None):
    """A Layer class whose constructor takes Paddle's arguments (required
    names, then keyword defaults in order) and whose forward calls F.<fn_name>;
    its repr shows the arguments in shown (default: all; size or scale_factor
    only when given)."""
    names = list(required) + list(defaults)

    def __init__(self, *args, name=None, **kwargs):
        Layer.__init__(self)
        if len(args) > len(names):
            raise TypeError(f"{cls_name}() takes at most {len(names)} arguments, got {len(args)}")
        given = dict(defaults)
        given.update(zip(names, args))
        for k, v in kwargs.items():
            if k not in names:
                raise TypeError(f"{cls_name}() got an unexpected argument '{k}'")
            given[k] = v
        missing = [r for r in required if r not in given]
        if missing:
            raise TypeError(f"{cls_name}() is missing the argument(s) {missing}")
        self._kwargs = {k: given[k] for k in names}

    def forward(self, x, *inputs):
        return getattr(F, fn_name)(x, *inputs, **self._kwargs)

    def extra_repr(self):
        return ", ".join(f"{k}={v}" for k, v in self._kwargs.items() if k in (shown or names) and
                         not (v is None and k in ("size", "scale_factor")))

    return type(cls_name, (Layer,), {"__init__": __init__, "forward": forward, "extra_repr": extra_repr,
                                     "__doc__": doc or f"paddle.nn.{cls_name}: F.{fn_name} as a layer."})


_POOL_SHOWN = ["kernel_size", "stride", "padding"]


def _pool(**extra):
    base = {"stride": None, "padding": 0}
    base.update(extra)
    return base


MaxPool1D = functional_layer("MaxPool1D", "max_pool1d", ["kernel_size"], _pool(return_mask=False, ceil_mode=False),
                             _POOL_SHOWN)
MaxPool3D = functional_layer("MaxPool3D", "max_pool3d", ["kernel_size"],
                             _pool(return_mask=False, ceil_mode=False, data_format="NCDHW"), _POOL_SHOWN)
AvgPool1D = functional_layer("AvgPool1D", "avg_pool1d", ["kernel_size"], _pool(exclusive=True, ceil_mode=False),
                             _POOL_SHOWN)
AvgPool3D = functional_layer("AvgPool3D", "avg_pool3d", ["kernel_size"],
                             _pool(ceil_mode=False, exclusive=True, divisor_override=None, data_format="NCDHW"),
                             _POOL_SHOWN)
AdaptiveAvgPool1D = functional_layer("AdaptiveAvgPool1D", "adaptive_avg_pool1d", ["output_size"], {})
AdaptiveAvgPool3D = functional_layer("AdaptiveAvgPool3D", "adaptive_avg_pool3d", ["output_size"],
                                     {"data_format": "NCDHW"})
AdaptiveMaxPool1D = functional_layer("AdaptiveMaxPool1D", "adaptive_max_pool1d", ["output_size"],
                                     {"return_mask": False})
AdaptiveMaxPool3D = functional_layer("AdaptiveMaxPool3D", "adaptive_max_pool3d", ["output_size"],
                                     {"return_mask": False})
MaxUnPool1D = functional_layer("MaxUnPool1D", "max_unpool1d", ["kernel_size"],
                               _pool(data_format="NCL", output_size=None))
MaxUnPool2D = functional_layer("MaxUnPool2D", "max_unpool2d", ["kernel_size"],
                               _pool(data_format="NCHW", output_size=None))
MaxUnPool3D = functional_layer("MaxUnPool3D", "max_unpool3d", ["kernel_size"],
                               _pool(data_format="NCDHW", output_size=None))

LPPool1D = functional_layer("LPPool1D", "lp_pool1d", ["norm_type", "kernel_size"],
                            _pool(ceil_mode=False, data_format="NCL"), ["norm_type"] + _POOL_SHOWN)
LPPool2D = functional_layer("LPPool2D", "lp_pool2d", ["norm_type", "kernel_size"],
                            _pool(ceil_mode=False, data_format="NCHW"), ["norm_type"] + _POOL_SHOWN)

__all__ = ["Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose", "MaxPool1D",
           "MaxPool3D", "AvgPool1D", "AvgPool3D", "AdaptiveAvgPool1D", "AdaptiveAvgPool3D", "AdaptiveMaxPool1D",
           "AdaptiveMaxPool3D", "MaxUnPool1D", "MaxUnPool2D", "MaxUnPool3D", "LPPool1D", "LPPool2D"]
