"""oar.summary (paddle.summary): Paddle's table of the layers of a network,
their input and output shapes and parameter counts, and the size estimates."""
import numbers

import numpy as np


def _is_shape(shape):
    return isinstance(shape, (list, tuple)) and all(not isinstance(s, (list, tuple)) for s in shape)


def _checked_shape(shape):
    unknown, out = 0, []
    for s in shape:
        if s is None or s == -1:
            unknown += 1
            if unknown > 1:
                raise ValueError("summary: only the batch dim of input_size can be None or -1")
            s = 1
        elif not isinstance(s, numbers.Number) or s <= 0:
            raise ValueError(f"summary: expected the dims of input_size to be positive, but got {s}")
        out.append(int(s))
    return tuple(out)


def _checked_sizes(input_size):
    if _is_shape(input_size):
        return _checked_shape(input_size)
    return [_checked_sizes(s) for s in input_size]


def _shapes_of(x):
    from .framework import Tensor
    if isinstance(x, Tensor):
        return list(x.shape)
    if isinstance(x, (list, tuple)):
        return [_shapes_of(t) for t in x]
    return []


def _class_index(layer, fallback):
    """Paddle's "<Class>-<n>": n is 1 + the counter in the layer's full name (conv2d_3 -> 4)."""
    try:
        return int(layer.full_name().split("_")[-1]) + 1
    except ValueError:
        return fallback + 1


def _collect(net, inputs):
    from .autograd import no_grad
    from .dynamic_flops import layer_param_count
    from .nn import LayerList, Sequential
    rows = {}
    has_sublayers = bool(net.sublayers())

    def hook(layer, args, output):
        key = f"{type(layer).__name__}-{_class_index(layer, len(rows))}"
        trainable = sum(int(np.prod(p.shape)) for p in layer.parameters(include_sublayers=False)
                        if getattr(p, "trainable", True) and not p.stop_gradient)
        rows[key] = {"input_shape": _shapes_of(list(args)), "output_shape": _shapes_of(output),
                     "nb_params": layer_param_count(layer), "trainable_params": trainable}

    handles = [layer.register_forward_post_hook(hook) for layer in net.sublayers(include_self=True)
               if not isinstance(layer, (Sequential, LayerList)) and (layer is not net or not has_sublayers)]
    try:
        with no_grad():
            net(*inputs)
    finally:
        for h in handles:
            h.remove()
    return rows


def _build_inputs(sizes, dtypes):
    from .creation import rand
    from .math import cast
    if _is_shape(sizes):
        dtype = dtypes[0] if isinstance(dtypes, (list, tuple)) else dtypes
        return cast(rand(list(sizes)), dtype or "float32")
    if not isinstance(dtypes, (list, tuple)):
        dtypes = [dtypes] * len(sizes)
    return [_build_inputs(s, d) for s, d in zip(sizes, dtypes)]


def _input_mb(sizes):
    if _is_shape(sizes):
        return abs(float(np.prod(sizes)) * 4.0 / 1024 ** 2)
    return sum(_input_mb(s) for s in sizes)


def _output_elements(shape):
    if _is_shape(shape):
        return int(np.prod(shape)) if shape else 0
    return sum(_output_elements(s) for s in shape)


def _format(rows, sizes):
    widths = {"layer": 15, "input": 20, "output": 20, "params": 15}
    for key, r in rows.items():
        widths["layer"] = max(widths["layer"], len(key))
        widths["input"] = max(widths["input"], len(str(r["input_shape"])))
        widths["output"] = max(widths["output"], len(str(r["output_shape"])))
        widths["params"] = max(widths["params"], len(str(r["nb_params"])))
    table = max(75, sum(widths.values()) + 5)
    w = list(widths.values())

    def line(*cells):
        return " ".join(f"{c:^{n}}" for c, n in zip(cells, w))
    out = ["-" * table, line("Layer (type)", "Input Shape", "Output Shape", "Param #"), "=" * table]
    total = trainable = elements = 0
    for key, r in rows.items():
        out.append(line(key, str(r["input_shape"]), str(r["output_shape"]), f"{r['nb_params']:,}"))
        total += r["nb_params"]
        trainable += r["trainable_params"]
        elements += _output_elements(r["output_shape"])
    input_mb = _input_mb(sizes)
    output_mb = abs(2.0 * elements * 4.0 / 1024 ** 2)  # x2: the gradients
    params_mb = abs(total * 4.0 / 1024 ** 2)
    out += ["=" * table, f"Total params: {total:,}", f"Trainable params: {trainable:,}",
            f"Non-trainable params: {total - trainable:,}", "-" * table,
            f"Input size (MB): {input_mb:0.2f}", f"Forward/backward pass size (MB): {output_mb:0.2f}",
            f"Params size (MB): {params_mb:0.2f}", f"Estimated Total Size (MB): {input_mb + output_mb + params_mb:0.2f}",
            "-" * table, ""]
    return "\n".join(out), {"total_params": total, "trainable_params": trainable}


def summary(net, input_size=None, dtypes=None, input=None):  # noqa: A002 - paddle's name
    """Runs net once in eval mode (on random inputs of `input_size`, or on
    `input`), prints the table of its layers and returns
    {'total_params': n, 'trainable_params': n}."""
    from .framework import Tensor
    if input_size is None and input is None:
        raise ValueError("summary: input_size and input cannot both be None")
    if input_size is None:
        if isinstance(input, Tensor):
            input_size = tuple(input.shape)
        elif isinstance(input, (list, tuple)):
            input_size = [tuple(t.shape) for t in input]
        elif isinstance(input, dict):
            input_size = [tuple(t.shape) for t in input.values()]
        else:
            raise ValueError("summary: input must be a Tensor, a list, a tuple or a dict of Tensors, "
                             f"but got {type(input).__name__}")
    if isinstance(input_size, numbers.Integral):
        input_size = (input_size,)
    elif isinstance(input_size, list) and not _is_shape(input_size):
        input_size = [(s,) if isinstance(s, numbers.Integral) else tuple(s) for s in input_size]
    sizes = _checked_sizes(input_size)
    was_training = net.training
    if was_training:
        net.eval()
    try:
        if input is not None:
            inputs = list(input.values()) if isinstance(input, dict) else (
                [input] if isinstance(input, Tensor) else list(input))
        else:
            built = _build_inputs(sizes, dtypes)
            inputs = [built] if _is_shape(sizes) else built
        rows = _collect(net, inputs)
    finally:
        if was_training:
            net.train()
    text, info = _format(rows, sizes)
    print(text)
    return info
