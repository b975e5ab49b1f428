"""paddle.nn layers over functional_more and loss_more: activations, the
feature and alpha dropouts, Bilinear, PReLU, distances, the remaining loss
layers, AdaptiveLogSoftmaxWithLoss, ParameterDict and SyncBatchNorm."""
import math

from .. import math as M
from . import functional as F
from . import initializer as I
from .layer import Layer
from .layers_conv import _BatchNormBase
from .layers_conv_nd import functional_layer

_SELU = {"scale": 1.0507009873554805, "alpha": 1.6732632423543772}

CELU = functional_layer("CELU", "celu", [], {"alpha": 1.0})
SELU = functional_layer("SELU", "selu", [], _SELU)
GLU = functional_layer("GLU", "glu", [], {"axis": -1})
Silu = functional_layer("Silu", "silu", [], {"inplace": False})
Hardshrink = functional_layer("Hardshrink", "hardshrink", [], {"threshold": 0.5})
Hardtanh = functional_layer("Hardtanh", "hardtanh", [], {"min": -1.0, "max": 1.0})
LogSigmoid = functional_layer("LogSigmoid", "log_sigmoid", [], {})
Maxout = functional_layer("Maxout", "maxout", ["groups"], {"axis": 1})
Softshrink = functional_layer("Softshrink", "softshrink", [], {"threshold": 0.5})
Softsign = functional_layer("Softsign", "softsign", [], {})
Tanhshrink = functional_layer("Tanhshrink", "tanhshrink", [], {})
ThresholdedReLU = functional_layer("ThresholdedReLU", "thresholded_relu", [], {"threshold": 1.0, "value": 0.0})
CosineSimilarity = functional_layer("CosineSimilarity", "cosine_similarity", [], {"axis": 1, "eps": 1e-8})
PairwiseDistance = functional_layer("PairwiseDistance", "pairwise_distance", [],
                                    {"p": 2.0, "epsilon": 1e-6, "keepdim": False})

CosineEmbeddingLoss = functional_layer("CosineEmbeddingLoss", "cosine_embedding_loss", [],
                                       {"margin": 0, "reduction": "mean"})
GaussianNLLLoss = functional_layer("GaussianNLLLoss", "gaussian_nll_loss", [],
                                   {"full": False, "epsilon": 1e-6, "reduction": "mean"})
HingeEmbeddingLoss = functional_layer("HingeEmbeddingLoss", "hinge_embedding_loss", [],
                                      {"margin": 1.0, "reduction": "mean"})
KLDivLoss = functional_layer("KLDivLoss", "kl_div", [], {"reduction": "mean", "log_target": False})
MarginRankingLoss = functional_layer("MarginRankingLoss", "margin_ranking_loss", [],
                                     {"margin": 0.0, "reduction": "mean"})
MultiLabelMarginLoss = functional_layer("MultiLabelMarginLoss", "multi_label_margin_loss", [], {"reduction": "mean"})
MultiLabelSoftMarginLoss = functional_layer("MultiLabelSoftMarginLoss", "multi_label_soft_margin_loss", [],
                                            {"weight": None, "reduction": "mean"})
MultiMarginLoss = functional_layer("MultiMarginLoss", "multi_margin_loss", [],
                                   {"p": 1, "margin": 1.0, "weight": None, "reduction": "mean"})
PoissonNLLLoss = functional_layer("PoissonNLLLoss", "poisson_nll_loss", [],
                                  {"log_input": True, "full": False, "epsilon": 1e-8, "reduction": "mean"})
SoftMarginLoss = functional_layer("SoftMarginLoss", "soft_margin_loss", [], {"reduction": "mean"})
TripletMarginLoss = functional_layer("TripletMarginLoss", "triplet_margin_loss", [],
                                     {"margin": 1.0, "p": 2.0, "epsilon": 1e-6, "swap": False, "reduction": "mean"})
TripletMarginWithDistanceLoss = functional_layer(
    "TripletMarginWithDistanceLoss", "triplet_margin_with_distance_loss", [],
    {"distance_function": None, "margin": 1.0, "swap": False, "reduction": "mean"})


class RReLU(Layer):
    """Randomized leaky ReLU: random slopes in U(lower, upper) when training."""

    def __init__(self, lower=1.0 / 8.0, upper=1.0 / 3.0, name=None):
        super().__init__()
        self._lower, self._upper = lower, upper

    def forward(self, x):
        return F.rrelu(x, self._lower, self._upper, training=self.training)

    def extra_repr(self):
        return f"lower={self._lower}, upper={self._upper}"


class PReLU(Layer):
    """x where x > 0, weight * x elsewhere, one learnt weight or one per channel."""

    def __init__(self, num_parameters=1, init=0.25, weight_attr=None, data_format="NCHW", name=None):
        super().__init__()
        self._num_parameters, self._init, self._data_format = num_parameters, init, data_format
        # Paddle names the parameter _weight (so does its state dict)
        self._weight = self.create_parameter([num_parameters], attr=weight_attr,
                                             default_initializer=I.Constant(float(init)))

    def forward(self, x):
        return F.prelu(x, self._weight, self._data_format)

    def extra_repr(self):
        return f"num_parameters={self._num_parameters}, data_format={self._data_format}, init={self._init}"


def _dropout_layer(cls_name, fn_name, defaults):
    """A dropout layer: F.<fn_name>(x, p, training=self.training, **rest)."""
    def __init__(self, *args, name=None, **kwargs):
        Layer.__init__(self)
        given = dict(defaults)
        given.update(zip(defaults, args))
        given.update(kwargs)
        self._kwargs = given

    def forward(self, x):
        return getattr(F, fn_name)(x, training=self.training, **self._kwargs)

    def extra_repr(self):
        return ", ".join(f"{k}={v}" for k, v in self._kwargs.items())

    return type(cls_name, (Layer,), {"__init__": __init__, "forward": forward, "extra_repr": extra_repr})


AlphaDropout = _dropout_layer("AlphaDropout", "alpha_dropout", {"p": 0.5})
FeatureAlphaDropout = _dropout_layer("FeatureAlphaDropout", "feature_alpha_dropout", {"p": 0.5})
Dropout2D = _dropout_layer("Dropout2D", "dropout2d", {"p": 0.5, "data_format": "NCHW"})
Dropout3D = _dropout_layer("Dropout3D", "dropout3d", {"p": 0.5, "data_format": "NCDHW"})


class Bilinear(Layer):
    """out = x1 @ weight[o] @ x2 + bias, weight [out, in1, in2], bias [1, out]."""

    def __init__(self, in1_features, in2_features, out_features, weight_attr=None, bias_attr=None, name=None):
        super().__init__()
        self._in1, self._in2, self._out = in1_features, in2_features, out_features
        bound = 1.0 / math.sqrt(in1_features)
        self.weight = self.create_parameter([out_features, in1_features, in2_features], attr=weight_attr,
                                            default_initializer=I.Uniform(-bound, bound))
        self.bias = None if bias_attr is False else self.create_parameter(
            [1, out_features], attr=bias_attr, is_bias=True, default_initializer=I.Uniform(-bound, bound))

    def forward(self, x1, x2):
        return F.bilinear(x1, x2, self.weight, self.bias)

    def extra_repr(self):
        return f"in1_features={self._in1}, in2_features={self._in2}, out_features={self._out}, dtype={self._dtype}"


class CTCLoss(Layer):
    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__()
        self._blank, self._reduction, self._zero_infinity = blank, reduction, zero_infinity

    def forward(self, log_probs, labels, input_lengths, label_lengths, norm_by_times=False):
        return F.ctc_loss(log_probs, labels, input_lengths, label_lengths, self._blank, self._reduction,
                          norm_by_times, self._zero_infinity)


class RNNTLoss(Layer):
    def __init__(self, blank=0, fastemit_lambda=0.001, reduction="mean", name=None):
        super().__init__()
        self._blank, self._fastemit_lambda, self._reduction = blank, fastemit_lambda, reduction

    def forward(self, input, label, input_lengths, label_lengths):  # noqa: A002
        return F.rnnt_loss(input, label, input_lengths, label_lengths, self._blank, self._fastemit_lambda,
                           self._reduction)


class HSigmoidLoss(Layer):
    """Hierarchical sigmoid loss with weight [num_classes - 1, feature_size]
    and bias [num_classes - 1, 1] (is_custom: the tree comes with each call)."""

    def __init__(self, feature_size, num_classes, weight_attr=None, bias_attr=None, is_custom=False,
                 is_sparse=False, name=None):
        super().__init__()
        if num_classes < 2 and not is_custom:
            raise ValueError(f"HSigmoidLoss: num_classes must be at least 2, got {num_classes}")
        self._num_classes, self._is_custom = num_classes, is_custom
        rows = num_classes if is_custom else num_classes - 1
        self.weight = self.create_parameter([rows, feature_size], attr=weight_attr)
        self.bias = None if bias_attr is False else self.create_parameter([rows, 1], attr=bias_attr, is_bias=True)

    def forward(self, input, label, path_table=None, path_code=None):  # noqa: A002
        return F.hsigmoid_loss(input, label, self._num_classes, self.weight, self.bias, path_table, path_code)


class AdaptiveLogSoftmaxWithLoss(Layer):
    """Adaptive softmax: a head over the first cutoffs[0] classes plus one
    entry per cluster; cluster i is [in -> in / div_value^(i+1) -> its size]."""

    def __init__(self, in_features, n_classes, cutoffs, weight_attr=None, bias_attr=None, div_value=4.0,
                 head_bias=False, name=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if (not cutoffs or cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("AdaptiveLogSoftmaxWithLoss: cutoffs must be a sorted list of unique positive integers "
                             f"below n_classes - 1 = {n_classes - 1}, got {cutoffs}")
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.shortlist_size = cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head_weight = self.create_parameter([in_features, self.head_size], attr=weight_attr)
        self.head_bias = self.create_parameter([self.head_size], attr=bias_attr, is_bias=True) if head_bias else None
        self.tail_weights = []
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            pair = [self.create_parameter([in_features, hidden], attr=weight_attr),
                    self.create_parameter([hidden, size], attr=weight_attr)]
            for j, p in enumerate(pair):
                self.add_parameter(f"tail_weights_{i}_{j}", p)
            self.tail_weights.append(pair)

    def forward(self, input, label):  # noqa: A002
        return F.adaptive_log_softmax_with_loss(input, label, self.head_weight, self.tail_weights, self.cutoffs,
                                                self.head_bias)

    def log_prob(self, input):  # noqa: A002
        """log p(class | input) for every class: [N, n_classes]."""
        head = M.matmul(input, self.head_weight)
        if self.head_bias is not None:
            head = M.add(head, self.head_bias)
        head_lp = F.log_softmax(head, -1)
        parts = [head_lp[:, :self.shortlist_size]]
        for i, (w1, w2) in enumerate(self.tail_weights):
            tail_lp = F.log_softmax(M.matmul(M.matmul(input, w1), w2), -1)
            parts.append(M.add(tail_lp, head_lp[:, self.shortlist_size + i:self.shortlist_size + i + 1]))
        return M.concat(parts, axis=1)

    def predict(self, input):  # noqa: A002
        """The most likely class of each row: [N], float32 as in Paddle."""
        return M.cast(M.argmax(self.log_prob(input), axis=1), "float32")  # Paddle returns float32 ids


class ParameterDict(Layer):
    """A dict of parameters registered on the layer under their keys."""

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        return self._parameters[key]

    def __setitem__(self, key, parameter):
        self.add_parameter(key, parameter)

    def __delitem__(self, key):
        del self._parameters[key]

    def __contains__(self, key):
        return key in self._parameters

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def keys(self):
        return self._parameters.keys()

    def values(self):
        return self._parameters.values()

    def items(self):
        return self._parameters.items()

    def update(self, parameters):
        """Add or replace the parameters of a dict, a ParameterDict or (name, parameter) pairs."""
        items = parameters.items() if hasattr(parameters, "items") else parameters
        for i, kv in enumerate(items):
            if not isinstance(kv, (list, tuple)) or len(kv) != 2:
                raise ValueError(f"ParameterDict.update: item {i} must be a (name, parameter) pair, got {kv!r}")
            self.add_parameter(kv[0], kv[1])


class SyncBatchNorm(_BatchNormBase):
    """Batch norm whose statistics would be reduced across processes; on one
    process (the only case oar runs here) it is BatchNorm over the local batch."""

    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None, bias_attr=None,
                 data_format="NCHW", name=None):
        super().__init__(num_features, momentum, epsilon, weight_attr, bias_attr, data_format)

    @classmethod
    def convert_sync_batchnorm(cls, layer):
        """layer with every batch norm sublayer replaced by a SyncBatchNorm
        that shares its parameters and running statistics."""
        if isinstance(layer, _BatchNormBase) and not isinstance(layer, SyncBatchNorm):
            out = cls.__new__(cls)
            Layer.__init__(out)
            for attr in ("_num_features", "_momentum", "_epsilon", "_data_format", "_use_global_stats"):
                setattr(out, attr, getattr(layer, attr))
            out._data_format = {"NC": "NCHW", "NCL": "NCHW", "NLC": "NHWC"}.get(out._data_format, out._data_format)
            out.weight, out.bias = layer.weight, layer.bias
            out.register_buffer("_mean", layer._mean)
            out.register_buffer("_variance", layer._variance)
            out.training = layer.training
            return out
        for name, sub in list(layer._sub_layers.items()):
            if sub is not None:
                layer._sub_layers[name] = cls.convert_sync_batchnorm(sub)
        return layer


__all__ = ["CELU", "SELU", "GLU", "Silu", "Hardshrink", "Hardtanh", "LogSigmoid", "Maxout", "Softshrink", "Softsign",
           "Tanhshrink", "ThresholdedReLU", "CosineSimilarity", "PairwiseDistance", "CosineEmbeddingLoss",
           "GaussianNLLLoss", "HingeEmbeddingLoss", "KLDivLoss", "MarginRankingLoss", "MultiLabelMarginLoss",
           "MultiLabelSoftMarginLoss", "MultiMarginLoss", "PoissonNLLLoss", "SoftMarginLoss", "TripletMarginLoss",
           "TripletMarginWithDistanceLoss", "RReLU", "PReLU", "AlphaDropout", "FeatureAlphaDropout",
           "Dropout2D", "Dropout3D", "Bilinear", "CTCLoss", "RNNTLoss", "HSigmoidLoss", "AdaptiveLogSoftmaxWithLoss",
           "ParameterDict", "SyncBatchNorm"]

for _name in __all__:  # the classes made by functional_layer report this module
    globals()[_name].__module__ = __name__
