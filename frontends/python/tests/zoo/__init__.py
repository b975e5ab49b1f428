"""A model zoo for measuring dynamic-to-static export (issue 17, item 4).

Each entry is a ZooModel: `build()` returns an oar.nn.Layer (seeded with
oar.seed(0) inside, so two builds hold the same weights) and `inputs()` a
tuple of tensors made from a numpy RandomState (the same on every call).
The models are written the way their authors write Paddle code, not
adapted to oar: where an op or a construct is missing, the model fails and
the failure is what the zoo measures (harness.py, scripts/run_zoo.py,
test_zoo.py).

The models live in modules by family (vision, sequence, generative, misc);
each registers its models with the `register` decorator."""
import collections

import numpy as np

import oar

ZooModel = collections.namedtuple("ZooModel", ["name", "build", "inputs", "trainable", "notes"])
ZooModel.__new__.__defaults__ = (True, "")

MODELS = []


def register(name, inputs, trainable=True, notes=""):
    """Decorates a function that builds the model's Layer: seeds oar with 0
    before it runs and adds the model to MODELS."""
    def decorate(make):
        def build():
            oar.seed(0)
            return make()
        build.__name__ = f"build_{name}"
        if any(m.name == name for m in MODELS):
            raise ValueError(f"zoo: the model name '{name}' is registered twice")
        MODELS.append(ZooModel(name, build, inputs, trainable, notes))
        return make
    return decorate


# ---- deterministic inputs ----------------------------------------------------

def floats(*shape, seed=0, scale=1.0):
    """A float32 tensor of normal values from RandomState(seed)."""
    return oar.to_tensor((np.random.RandomState(seed).randn(*shape) * scale).astype("float32"))


def ints(low, high, *shape, seed=0):
    """An int64 tensor of values in [low, high) from RandomState(seed)."""
    return oar.to_tensor(np.random.RandomState(seed).randint(low, high, size=shape).astype("int64"))


def by_name(name):
    for model in MODELS:
        if model.name == name:
            return model
    raise KeyError(f"zoo: no model named '{name}'")


from . import vision, sequence, generative, misc  # noqa: E402,F401  (they fill MODELS)
