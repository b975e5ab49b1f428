"""paddle.nn.loss: the loss layers (the classes of oar.nn whose names end in Loss)."""


def __getattr__(name):
    from .. import nn
    if name.endswith("Loss") and hasattr(nn, name):
        return getattr(nn, name)
    raise AttributeError(f"module 'oar.nn.loss' has no attribute '{name}'")


def __dir__():
    from .. import nn
    return sorted(n for n in dir(nn) if n.endswith("Loss"))
