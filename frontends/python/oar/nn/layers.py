"""Layers: Linear, activations, containers, normalization, Embedding, Dropout, losses."""
import collections
import numbers

from . import functional as F
from . import initializer as I
from .layer import Layer
from .parameter import ParamAttr


class Linear(Layer):
    """y = x @ weight + bias with weight [in_features, out_features] (Paddle's layout)."""

    def __init__(self, in_features, out_features, weight_attr=None, bias_attr=None, name=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = self.create_parameter([in_features, out_features], attr=weight_attr)
        self.bias = self.create_parameter([out_features], attr=bias_attr, is_bias=True)

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, dtype={self._dtype}"


def _activation(name, fn, **defaults):
    def __init__(self, *args, name=None, **kwargs):
        Layer.__init__(self)
        params = dict(defaults)
        params.update(zip(list(defaults), args))
        params.update(kwargs)
        self._kwargs = params

    def forward(self, x):
        return fn(x, **self._kwargs)

    def extra_repr(self):
        return ", ".join(f"{k}={v}" for k, v in self._kwargs.items())

    return type(name, (Layer,), {"__init__": __init__, "forward": forward, "extra_repr": extra_repr})


ReLU = _activation("ReLU", F.relu)
ReLU6 = _activation("ReLU6", F.relu6)
LeakyReLU = _activation("LeakyReLU", F.leaky_relu, negative_slope=0.01)
ELU = _activation("ELU", F.elu, alpha=1.0)
GELU = _activation("GELU", F.gelu, approximate=False)
SiLU = _activation("SiLU", F.silu)
Swish = _activation("Swish", F.silu)
Sigmoid = _activation("Sigmoid", F.sigmoid)
Tanh = _activation("Tanh", F.tanh)
Softplus = _activation("Softplus", F.softplus, beta=1, threshold=20)
Mish = _activation("Mish", F.mish)
Hardswish = _activation("Hardswish", F.hardswish)
Hardsigmoid = _activation("Hardsigmoid", F.hardsigmoid)
Softmax = _activation("Softmax", F.softmax, axis=-1)
LogSoftmax = _activation("LogSoftmax", F.log_softmax, axis=-1)


class Identity(Layer):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


class Flatten(Layer):
    def __init__(self, start_axis=1, stop_axis=-1):
        super().__init__()
        self.start_axis, self.stop_axis = start_axis, stop_axis

    def forward(self, x):
        from ..math import flatten
        return flatten(x, self.start_axis, self.stop_axis)


class Sequential(Layer):
    """Sequential(l1, l2, ...) or Sequential(('name', l1), ...) or an OrderedDict."""

    def __init__(self, *layers):
        super().__init__()
        if len(layers) == 1 and isinstance(layers[0], (dict, collections.OrderedDict)):
            layers = tuple(layers[0].items())
        for i, layer in enumerate(layers):
            if isinstance(layer, (list, tuple)) and len(layer) == 2:
                self.add_sublayer(layer[0], layer[1])
            else:
                self.add_sublayer(str(i), layer)

    def forward(self, x):
        for layer in self._sub_layers.values():
            x = layer(x)
        return x

    def __getitem__(self, index):
        if isinstance(index, str):
            return self._sub_layers[index]
        layers = list(self._sub_layers.values())
        if isinstance(index, slice):
            return Sequential(*layers[index])
        return layers[index]

    def __setitem__(self, index, layer):
        key = index if isinstance(index, str) else list(self._sub_layers)[index]
        self._sub_layers[key] = layer

    def __delitem__(self, index):
        keys = [index] if isinstance(index, str) else list(self._sub_layers)[index]
        for key in [keys] if isinstance(keys, str) else keys:
            del self._sub_layers[key]

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers.values())

    def append(self, layer):
        self.add_sublayer(str(len(self._sub_layers)), layer)
        return self

    def insert(self, index, layer):
        """Insert layer before position index; the layers are renumbered 0, 1, ..."""
        n = len(self._sub_layers)
        if not -n <= index <= n:
            raise IndexError(f"Sequential.insert: index {index} is out of range for {n} layers")
        layers = list(self._sub_layers.values())
        layers.insert(index if index >= 0 else index + n, layer)
        self._sub_layers.clear()
        for i, item in enumerate(layers):
            self._sub_layers[str(i)] = item
        return self

    def extend(self, layers):
        for layer in layers:
            self.append(layer)
        return self


class LayerList(Layer):
    def __init__(self, sublayers=None):
        super().__init__()
        for layer in sublayers or []:
            self.append(layer)

    def append(self, layer):
        self.add_sublayer(str(len(self._sub_layers)), layer)
        return self

    def extend(self, layers):
        for layer in layers:
            self.append(layer)
        return self

    def insert(self, index, layer):
        layers = list(self._sub_layers.values())
        layers.insert(index, layer)
        self._sub_layers.clear()
        for i, item in enumerate(layers):
            self._sub_layers[str(i)] = item

    def __getitem__(self, index):
        layers = list(self._sub_layers.values())
        if isinstance(index, slice):
            return LayerList(layers[index])
        return layers[index]

    def __setitem__(self, index, layer):
        key = list(self._sub_layers)[index]
        self._sub_layers[key] = layer

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers.values())


class LayerDict(Layer):
    def __init__(self, sublayers=None):
        super().__init__()
        for k, v in (sublayers or {}).items():
            self.add_sublayer(k, v)

    def __getitem__(self, key):
        return self._sub_layers[key]

    def __setitem__(self, key, layer):
        self.add_sublayer(key, layer)

    def __delitem__(self, key):
        del self._sub_layers[key]

    def __contains__(self, key):
        return key in self._sub_layers

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers)

    def clear(self):
        self._sub_layers.clear()

    def pop(self, key):
        return self._sub_layers.pop(key)

    def update(self, sublayers):
        """Add or replace the layers of a dict, a LayerDict or a list of (name, layer) pairs."""
        items = sublayers.items() if hasattr(sublayers, "items") else sublayers
        for i, kv in enumerate(items):
            if not isinstance(kv, (list, tuple)) or len(kv) != 2:
                raise ValueError(f"LayerDict.update: item {i} must be a (name, layer) pair, got {kv!r}")
            self.add_sublayer(kv[0], kv[1])

    def keys(self):
        return self._sub_layers.keys()

    def values(self):
        return self._sub_layers.values()

    def items(self):
        return self._sub_layers.items()


class ParameterList(Layer):
    def __init__(self, parameters=None):
        super().__init__()
        for p in parameters or []:
            self.append(p)

    def append(self, parameter):
        self.add_parameter(str(len(self._parameters)), parameter)
        return self

    def __getitem__(self, index):
        return list(self._parameters.values())[index]

    def __setitem__(self, index, parameter):
        self._parameters[list(self._parameters)[index]] = parameter

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())


def _normalized(shape):
    return [shape] if isinstance(shape, numbers.Integral) else list(shape)


class LayerNorm(Layer):
    def __init__(self, normalized_shape, epsilon=1e-05, weight_attr=None, bias_attr=None, name=None):
        super().__init__()
        self._normalized_shape = _normalized(normalized_shape)
        self._epsilon = epsilon
        self.weight = self.create_parameter(self._normalized_shape, attr=weight_attr,
                                            default_initializer=I.Constant(1.0))
        self.bias = self.create_parameter(self._normalized_shape, attr=bias_attr, is_bias=True)

    def forward(self, x):
        return F.layer_norm(x, self._normalized_shape, self.weight, self.bias, self._epsilon)

    def extra_repr(self):
        return f"normalized_shape={self._normalized_shape}, epsilon={self._epsilon}"


class RMSNorm(Layer):
    def __init__(self, normalized_shape, epsilon=1e-06, weight_attr=None, name=None):
        super().__init__()
        self._normalized_shape = _normalized(normalized_shape)
        self._epsilon = epsilon
        self.weight = self.create_parameter(self._normalized_shape, attr=weight_attr,
                                            default_initializer=I.Constant(1.0))

    def forward(self, x):
        return F.rms_norm(x, self._normalized_shape, self.weight, self._epsilon)

    def extra_repr(self):
        return f"normalized_shape={self._normalized_shape}, epsilon={self._epsilon}"


class Embedding(Layer):
    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, sparse=False, weight_attr=None, name=None):
        super().__init__()
        self._num_embeddings, self._embedding_dim = num_embeddings, embedding_dim
        self._padding_idx = padding_idx
        self.weight = self.create_parameter([num_embeddings, embedding_dim], attr=weight_attr,
                                            default_initializer=I.XavierNormal())
        if padding_idx is not None:
            import numpy as np
            w = self.weight.numpy()
            w[padding_idx % num_embeddings] = 0
            self.weight.set_value(w)

    def forward(self, x):
        return F.embedding(x, self.weight, self._padding_idx)

    def extra_repr(self):
        return f"{self._num_embeddings}, {self._embedding_dim}"


class Dropout(Layer):
    def __init__(self, p=0.5, axis=None, mode="upscale_in_train", name=None):
        super().__init__()
        self.p, self.axis, self.mode = p, axis, mode

    def forward(self, x):
        return F.dropout(x, self.p, self.axis, self.training, self.mode)

    def extra_repr(self):
        return f"p={self.p}, mode={self.mode}"


class MSELoss(Layer):
    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, input, label):  # noqa: A002
        return F.mse_loss(input, label, self.reduction)


class L1Loss(Layer):
    def __init__(self, reduction="mean", name=None):
        super().__init__()
        self.reduction = reduction

    def forward(self, input, label):  # noqa: A002
        return F.l1_loss(input, label, self.reduction)


class SmoothL1Loss(Layer):
    def __init__(self, reduction="mean", delta=1.0, name=None):
        super().__init__()
        self.reduction, self.delta = reduction, delta

    def forward(self, input, label):  # noqa: A002
        return F.smooth_l1_loss(input, label, self.reduction, self.delta)


class CrossEntropyLoss(Layer):
    def __init__(self, weight=None, ignore_index=-100, reduction="mean", soft_label=False, axis=-1,
                 use_softmax=True, label_smoothing=0.0, name=None):
        super().__init__()
        self._args = dict(weight=weight, ignore_index=ignore_index, reduction=reduction, soft_label=soft_label,
                          axis=axis, use_softmax=use_softmax, label_smoothing=label_smoothing)

    def forward(self, input, label):  # noqa: A002
        return F.cross_entropy(input, label, **self._args)


class NLLLoss(Layer):
    def __init__(self, weight=None, ignore_index=-100, reduction="mean", name=None):
        super().__init__()
        self._args = dict(weight=weight, ignore_index=ignore_index, reduction=reduction)

    def forward(self, input, label):  # noqa: A002
        return F.nll_loss(input, label, **self._args)


class BCELoss(Layer):
    def __init__(self, weight=None, reduction="mean", name=None):
        super().__init__()
        self.weight_, self.reduction = weight, reduction

    def forward(self, input, label):  # noqa: A002
        return F.binary_cross_entropy(input, label, self.weight_, self.reduction)


class BCEWithLogitsLoss(Layer):
    def __init__(self, weight=None, reduction="mean", pos_weight=None, name=None):
        super().__init__()
        self.weight_, self.reduction = weight, reduction

    def forward(self, logit, label):
        return F.binary_cross_entropy_with_logits(logit, label, self.weight_, self.reduction)


__all__ = [n for n, v in list(globals().items()) if isinstance(v, type) and issubclass(v, Layer)] + ["ParamAttr"]
