"""paddle.tensor and its submodules (paddle.tensor.math, .manipulation, .search, ...): in oar every
tensor function is a top-level function, so each of these namespaces holds all of them."""
import sys
import types

import oar as _oar

_SUBMODULES = ("attribute", "creation", "einsum", "linalg", "logic", "manipulation", "math", "random", "search",
               "stat", "to_string", "array", "layer_function_generator", "ops")

_public = {n: v for n, v in vars(_oar).items() if not n.startswith("_") and callable(v)
           and not isinstance(v, types.ModuleType)}
globals().update(_public)
for _name in _SUBMODULES:
    _mod = types.ModuleType(f"{__name__}.{_name}", f"paddle.tensor.{_name}: oar's tensor functions")
    _mod.__dict__.update(_public)
    sys.modules[_mod.__name__] = _mod
    globals()[_name] = _mod
