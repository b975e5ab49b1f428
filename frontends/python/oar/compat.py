"""paddle.compat: the torch proxy (enable_compat / disable_compat make
`import torch` give oar) and torch-style signatures (compat.nn.functional)."""
import importlib
import importlib.abc
import importlib.util
import sys
import types


class _Existing(importlib.abc.Loader):
    """Hands back a module that is already imported."""

    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        pass


def _names(value, what):
    if value is None:
        return None
    names = {value} if isinstance(value, str) else set(value)
    if not all(isinstance(n, str) for n in names):
        raise TypeError(f"enable_compat: expected {what} to be a module name or names, but got {value!r}")
    return names


def _under(module, names):
    return any(module == n or module.startswith(n + ".") for n in names)


class _TorchProxyFinder(importlib.abc.MetaPathFinder):
    """Maps `torch` and `torch.x.y` to `oar` and `oar.x.y` for the importers
    in scope (every importer when scope is None) and not blocked."""

    def __init__(self, scope, blocked):
        self.scope, self.blocked = scope, blocked or set()

    def _importer(self):
        frame = sys._getframe(2)
        while frame is not None:
            name = frame.f_globals.get("__name__", "")
            if not name.startswith(("importlib", "_frozen_importlib")) and name != __name__:
                return name
            frame = frame.f_back
        return ""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch" and not fullname.startswith("torch."):
            return None
        importer = self._importer()
        if (self.scope is not None and not _under(importer, self.scope)) or _under(importer, self.blocked):
            return None
        module = importlib.import_module("oar" + fullname[len("torch"):])
        _proxied.add(fullname)
        return importlib.util.spec_from_loader(fullname, _Existing(module))


_finder = None
_proxied = set()  # the torch module names the proxy has answered
_real = {}        # the real torch modules set aside by a global enable_compat


def enable_compat(*, scope=None, blocked_modules=None, backend="torch", silent=False):
    """`import torch` gives oar from now on: everywhere (scope None) or only
    inside the modules named by scope, never inside blocked_modules."""
    global _finder
    if backend != "torch":
        raise ValueError(f"enable_compat: the only backend is 'torch', but got {backend!r}")
    disable_compat()
    _finder = _TorchProxyFinder(_names(scope, "scope"), _names(blocked_modules, "blocked_modules"))
    sys.meta_path.insert(0, _finder)
    if _finder.scope is None:  # a real torch imported before steps aside until disable_compat
        _real.update({n: sys.modules.pop(n) for n in list(sys.modules) if n == "torch" or n.startswith("torch.")})


def disable_compat():
    """Undoes enable_compat: the proxied torch modules are forgotten."""
    global _finder
    if _finder is not None:
        sys.meta_path.remove(_finder)
        _finder = None
    for name in _proxied:
        sys.modules.pop(name, None)
    _proxied.clear()
    sys.modules.update(_real)
    _real.clear()


def _softmax(input, dim=None, dtype=None, *, out=None):  # noqa: A002 - torch names
    """Softmax along dim (the last axis when None), computed in dtype when given."""
    from . import math as M
    from .nn import functional as F
    x = input if dtype is None else M.cast(input, dtype)
    result = F.softmax(x, axis=-1 if dim is None else int(dim))
    if out is not None:
        out.set_value(result)
        return out
    return result


nn = types.ModuleType(__name__ + ".nn", "torch-style nn functions")
nn.functional = types.ModuleType(__name__ + ".nn.functional", "torch-style nn.functional")
nn.functional.softmax = _softmax
