"""An import hook that makes `paddle` and every `paddle.x.y` name oar's module.

`import paddle.nn.functional as F` then binds oar.nn.functional; a name that
oar lacks fails with an ImportError that names the paddle module asked for.
"""
import importlib
import importlib.abc
import importlib.util
import sys


class _Existing(importlib.abc.Loader):
    """Loader that hands back a module that is already imported."""

    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        pass


class AliasFinder(importlib.abc.MetaPathFinder):
    """Maps the module `source` (and its submodules) to `target`'s."""

    def __init__(self, source="paddle", target="oar"):
        self.source, self.target = source, target

    def target_name(self, fullname):
        if fullname == self.source:
            return self.target
        if fullname.startswith(self.source + "."):
            return self.target + fullname[len(self.source):]
        return None

    def find_spec(self, fullname, path=None, target=None):
        name = self.target_name(fullname)
        if name is None:
            return None
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            # only a missing module of our own tree means "oar lacks it"; a
            # missing third-party dependency is reported as itself
            if e.name is None or not (name == e.name or name.startswith(e.name + ".")):
                raise
            module = self._attribute_module(name)
            if module is None:
                raise ImportError(f"No module named '{fullname}' (oar has no module '{name}')",
                                  name=fullname) from None
        return importlib.util.spec_from_loader(fullname, _Existing(module))

    def _attribute_module(self, name):
        """A module reachable as an attribute (oar.x.y set in oar.x) but not importable."""
        import types
        parent, _, leaf = name.rpartition(".")
        owner = sys.modules.get(parent)
        value = getattr(owner, leaf, None) if owner is not None else None
        return value if isinstance(value, types.ModuleType) else None


def install(source="paddle", target="oar"):
    """Put the alias finder first on sys.meta_path; returns it."""
    finder = AliasFinder(source, target)
    sys.meta_path.insert(0, finder)
    return finder
