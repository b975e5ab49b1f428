"""paddle.tensor and its submodules (paddle.tensor.math, .manipulation, .search, ...): in oar every
tensor function is a top-level function, so each of these namespaces holds all of them."""
import sys
import types

import oar as _oar

_SUBMODULES = ("attribute", "creation", "einsum", "linalg", "logic", "manipulation", "math", "random", "search",
               "stat", "to_string", "array", "layer_function_generator", "ops")

class _CallableModule(types.ModuleType):
    """paddle.tensor is also a function: paddle.tensor(data, dtype, device, requires_grad)."""

    def __call__(self, data, dtype=None, device=None, requires_grad=False, pin_memory=False):
        return _oar.to_tensor(data, dtype=dtype, place=device, stop_gradient=not requires_grad)


sys.modules[__name__].__class__ = _CallableModule

_public = {n: v for n, v in vars(_oar).items() if not n.startswith("_") and callable(v)
           and not isinstance(v, types.ModuleType)}
globals().update(_public)
for _name in _SUBMODULES:
    _mod = types.ModuleType(f"{__name__}.{_name}", f"paddle.tensor.{_name}: oar's tensor functions")
    _mod.__dict__.update(_public)
    sys.modules[_mod.__name__] = _mod
    globals()[_name] = _mod
