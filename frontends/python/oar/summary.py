"""oar.summary (paddle.summary): a table of the layers, their output shapes
(when an input size or input is given) and parameter counts."""
import numpy as np


def summary(net, input_size=None, dtypes=None, input=None):  # noqa: A002 - paddle's name
    """Prints the table; returns {'total_params': n, 'trainable_params': n}."""
    from .autograd import no_grad
    from .creation import zeros
    rows, handles = [], []
    leaves = [(n, layer) for n, layer in net.named_sublayers() if not layer._sub_layers] or [("", net)]
    shapes = {}
    for name, layer in leaves:
        def hook(layer, inputs, out, name=name):
            first = out[0] if isinstance(out, (list, tuple)) else out
            shapes[name] = list(first.shape)
        handles.append(layer.register_forward_post_hook(hook))
    if input is None and input_size is not None:
        sizes = input_size if isinstance(input_size, list) and isinstance(input_size[0], (list, tuple)) \
            else [input_size]
        input = [zeros([1 if s is None or s == -1 else int(s) for s in size], dtype=dtypes or "float32")
                 for size in sizes]
    if input is not None:
        was_training = net.training
        net.eval()
        with no_grad():
            net(*(input if isinstance(input, (list, tuple)) else [input]))
        if was_training:
            net.train()
    for h in handles:
        h.remove()
    for name, layer in leaves:
        count = sum(int(np.prod(p.shape)) for p in layer.parameters(include_sublayers=False))
        rows.append((f"{type(layer).__name__}-{name}" if name else type(layer).__name__,
                     str(shapes.get(name, "-")), f"{count:,}"))
    total = sum(int(np.prod(p.shape)) for p in net.parameters())
    trainable = sum(int(np.prod(p.shape)) for p in net.parameters() if not p.stop_gradient)
    widths = [max(len(h), *(len(r[i]) for r in rows)) + 2 for i, h in enumerate(("Layer (type)", "Output Shape",
                                                                               "Param #"))]
    line = "-" * sum(widths)
    print(line)
    print("".join(h.center(w) for h, w in zip(("Layer (type)", "Output Shape", "Param #"), widths)))
    print("=" * sum(widths))
    for r in rows:
        print("".join(c.center(w) for c, w in zip(r, widths)))
    print("=" * sum(widths))
    print(f"Total params: {total:,}\nTrainable params: {trainable:,}\nNon-trainable params: {total - trainable:,}")
    print(line)
    return {"total_params": total, "trainable_params": trainable}
