"""paddle.flops: the FLOPs of one forward pass, counted per leaf layer by
its type with Paddle's rules (multiply-adds of a convolution or linear
layer count once; activations, pooling maxima and dropout count zero)."""
import numpy as np


def _numel(t):
    return int(np.prod(t.shape))


def _count_conv(m, x, y):
    x = x[0]
    kernel = int(np.prod(m.weight.shape[2:]))
    bias = 1 if getattr(m, "bias", None) is not None else 0
    groups = getattr(m, "_groups", 1)
    m.total_ops += abs(int(_numel(y) * (x.shape[1] / groups * kernel + bias)))


def _count_elements(m, x, y):
    m.total_ops += _numel(x[0])


def _count_bn(m, x, y):
    m.total_ops += 2 * _numel(x[0])  # evaluated in eval mode: scale and shift


def _count_linear(m, x, y):
    m.total_ops += int(m.weight.shape[0]) * _numel(y)


def _count_avgpool(m, x, y):
    m.total_ops += _numel(y)


def _count_adaptive_avgpool(m, x, y):
    kernel = np.array(x[0].shape[2:]) // np.array(y.shape[2:])
    m.total_ops += abs(int((int(np.prod(kernel)) + 1) * _numel(y)))


def _count_zero(m, x, y):
    m.total_ops += 0


# Layer class names of oar.nn -> count rule (Paddle's table; a class oar lacks is skipped).
_RULES = {
    "Conv1D": _count_conv, "Conv2D": _count_conv, "Conv3D": _count_conv, "Conv1DTranspose": _count_conv,
    "Conv2DTranspose": _count_conv, "Conv3DTranspose": _count_conv, "BatchNorm2D": _count_bn,
    "BatchNorm": _count_bn, "ReLU": _count_zero, "ReLU6": _count_zero, "LeakyReLU": _count_elements,
    "Linear": _count_linear, "Dropout": _count_zero, "AvgPool1D": _count_avgpool, "AvgPool2D": _count_avgpool,
    "AvgPool3D": _count_avgpool, "AdaptiveAvgPool1D": _count_adaptive_avgpool,
    "AdaptiveAvgPool2D": _count_adaptive_avgpool, "AdaptiveAvgPool3D": _count_adaptive_avgpool,
}


def _register_hooks():
    from . import nn
    return {getattr(nn, name): rule for name, rule in _RULES.items() if isinstance(getattr(nn, name, None), type)}


def layer_param_count(layer):
    """The parameters a leaf layer holds as Paddle counts them: its own
    parameters plus a batch norm's running mean and variance (parameters in Paddle)."""
    from .nn.layers_conv import _BatchNormBase
    n = sum(_numel(p) for p in layer.parameters(include_sublayers=False))
    if isinstance(layer, _BatchNormBase):
        n += sum(_numel(b) for k, b in layer._buffers.items() if k in ("_mean", "_variance") and b is not None)
    return n


def _print_table(rows):
    heads = ["Layer Name", "Input Shape", "Output Shape", "Params", "Flops"]
    widths = [max(len(str(r[i])) for r in [heads] + rows) for i in range(len(heads))]
    shelf = "".join("+" + "-" * (w + 2) for w in widths) + "+"
    print(shelf)
    for k, r in enumerate([heads] + rows):
        print("".join("|" + str(c).center(w + 2) for c, w in zip(r, widths)) + "|")
        if k == 0:
            print(shelf)
    print(shelf)


def flops(net, input_size, custom_ops=None, print_detail=False):
    """The FLOPs of net(x) for one random input of shape `input_size`; prints
    the totals (and a per-layer table with print_detail). custom_ops maps a
    layer class to fn(layer, inputs, output) that adds to layer.total_ops."""
    from .autograd import no_grad
    from .creation import randn
    from .nn import Layer
    if not isinstance(net, Layer):
        raise TypeError(f"flops: net must be an oar.nn.Layer, but got {type(net).__name__}")
    if not isinstance(input_size, (list, tuple)) or not all(isinstance(s, (int, np.integer)) and s > 0
                                                            for s in input_size):
        raise ValueError(f"flops: input_size must be a list of positive ints, but got {input_size!r}")
    custom_ops = custom_ops or {}
    rules = _register_hooks()
    seen, handles, leaves, shapes = set(), [], [], {}
    for m in net.sublayers(include_self=True):
        if m._sub_layers:
            continue
        kind = type(m)
        fn = custom_ops.get(kind) or rules.get(kind)
        if kind not in seen:
            if kind in custom_ops:
                print(f"Customize Function has been applied to {kind}")
            elif kind in rules:
                print(f"{kind}'s flops has been counted")
            else:
                print(f"Cannot find suitable count function for {kind}. Treat it as zero FLOPs.")
            seen.add(kind)
        m.total_ops = 0
        leaves.append(m)

        def hook(layer, inputs, output, fn=fn):
            out = output[0] if isinstance(output, (list, tuple)) else output
            shapes[id(layer)] = (list(inputs[0].shape), list(out.shape))
            if fn is not None:
                fn(layer, inputs, out)
        handles.append(m.register_forward_post_hook(hook))
    training = net.training
    net.eval()
    try:
        with no_grad():
            net(randn([int(s) for s in input_size]))
    finally:
        for h in handles:
            h.remove()
        if training:
            net.train()
    total_ops = total_params = 0
    rows = []
    for m in leaves:
        ops = int(m.total_ops.numpy().sum()) if hasattr(m.total_ops, "numpy") else int(m.total_ops)
        del m.total_ops
        if id(m) not in shapes:  # not called in forward
            continue
        params = layer_param_count(m)
        total_ops += ops
        total_params += params
        rows.append([m.full_name(), shapes[id(m)][0], shapes[id(m)][1], params, ops])
    if print_detail:
        _print_table(rows)
    print(f"Total Flops: {total_ops}     Total Params: {total_params}")
    return total_ops
