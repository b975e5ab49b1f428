"""nn.Layer: parameters, sublayers, buffers, state_dict, train/eval, hooks."""
import collections
import itertools
import re

from ..framework import Tensor
from .parameter import Parameter, ParamAttr, create_parameter


_NAME_COUNTERS = collections.defaultdict(itertools.count)


def _unique_full_name(prefix):
    """Paddle's full names: "<prefix>_<n>", n counting the layers of that prefix made so far."""
    return f"{prefix}_{next(_NAME_COUNTERS[prefix])}"


def _snake_case(name):
    """Conv2D -> conv2d, BatchNorm2D -> batch_norm2d, ReLU -> re_lu, as Paddle names layers."""
    return re.sub("([a-z])([A-Z])", r"\1_\2", re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)).lower()


class Layer:
    """Base class of every layer (paddle.nn.Layer)."""

    def __init__(self, name_scope=None, dtype="float32"):
        object.__setattr__(self, "_parameters", collections.OrderedDict())
        object.__setattr__(self, "_sub_layers", collections.OrderedDict())
        object.__setattr__(self, "_buffers", collections.OrderedDict())
        object.__setattr__(self, "_non_persistable_buffer_names", set())
        object.__setattr__(self, "_forward_pre_hooks", collections.OrderedDict())
        object.__setattr__(self, "_forward_post_hooks", collections.OrderedDict())
        object.__setattr__(self, "_hook_id", 0)
        self.training = True
        self._dtype = dtype
        self._full_name = _unique_full_name(name_scope or _snake_case(type(self).__name__))

    # ---- attributes ----
    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise RuntimeError(f"{type(self).__name__}: call super().__init__() before setting attributes")
        if isinstance(value, Parameter):
            self.__dict__.pop(name, None)
            self._sub_layers.pop(name, None)
            self._buffers.pop(name, None)
            self._parameters[name] = value
        elif isinstance(value, Layer):
            self.__dict__.pop(name, None)
            self._parameters.pop(name, None)
            self._buffers.pop(name, None)
            self._sub_layers[name] = value
        elif name in self._buffers and (value is None or isinstance(value, Tensor)):
            self._buffers[name] = value
        elif name in self._parameters and value is None:
            self._parameters[name] = None
        else:
            for store in (self._parameters, self._sub_layers, self._buffers):
                store.pop(name, None)
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_sub_layers", "_buffers"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for store in (self._parameters, self._sub_layers, self._buffers):
            if name in store:
                del store[name]
                return
        object.__delattr__(self, name)

    # ---- building ----
    def create_parameter(self, shape, attr=None, dtype=None, is_bias=False, default_initializer=None):
        if attr is False:
            return None
        return create_parameter(shape, dtype or self._dtype, attr=attr, is_bias=is_bias,
                                default_initializer=default_initializer)

    def add_parameter(self, name, parameter):
        self._parameters[name] = parameter
        return parameter

    def add_sublayer(self, name, sublayer):
        self._sub_layers[str(name)] = sublayer
        return sublayer

    def register_buffer(self, name, tensor, persistable=True):
        self._buffers[name] = tensor
        if not persistable:
            self._non_persistable_buffer_names.add(name)
        else:
            self._non_persistable_buffer_names.discard(name)

    # ---- traversal ----
    def named_sublayers(self, prefix="", include_self=False, layers_set=None, remove_duplicate=True):
        """(name, layer) of every sublayer, depth first; a layer reached twice
        is listed once unless remove_duplicate is False."""
        layers_set = set() if layers_set is None else layers_set
        if include_self and (not remove_duplicate or id(self) not in layers_set):
            layers_set.add(id(self))
            yield prefix, self
        for name, layer in self._sub_layers.items():
            if layer is None or (remove_duplicate and id(layer) in layers_set):
                continue
            p = prefix + ("." if prefix else "") + name
            layers_set.add(id(layer))
            yield p, layer
            yield from layer.named_sublayers(p, False, layers_set, remove_duplicate)

    def sublayers(self, include_self=False):
        return [layer for _, layer in self.named_sublayers(include_self=include_self)]

    def named_children(self):
        seen = set()
        for name, layer in self._sub_layers.items():
            if layer is not None and id(layer) not in seen:
                seen.add(id(layer))
                yield name, layer

    def children(self):
        return [layer for _, layer in self.named_children()]

    def named_parameters(self, prefix="", include_sublayers=True):
        seen = set()
        layers = self.named_sublayers(prefix, include_self=True) if include_sublayers else [(prefix, self)]
        for lp, layer in layers:
            for name, p in layer._parameters.items():
                if p is None or id(p) in seen:
                    continue
                seen.add(id(p))
                yield lp + ("." if lp else "") + name, p

    def parameters(self, include_sublayers=True):
        return [p for _, p in self.named_parameters(include_sublayers=include_sublayers)]

    def named_buffers(self, prefix="", include_sublayers=True):
        layers = self.named_sublayers(prefix, include_self=True) if include_sublayers else [(prefix, self)]
        for lp, layer in layers:
            for name, b in layer._buffers.items():
                if b is not None:
                    yield lp + ("." if lp else "") + name, b

    def buffers(self, include_sublayers=True):
        return [b for _, b in self.named_buffers(include_sublayers=include_sublayers)]

    def apply(self, fn):
        for layer in self.children():
            layer.apply(fn)
        fn(self)
        return self

    # ---- modes ----
    def train(self):
        for layer in self.sublayers(include_self=True):
            layer.training = True
        return self

    def eval(self):
        for layer in self.sublayers(include_self=True):
            layer.training = False
        return self

    # ---- state ----
    def state_dict(self, destination=None, include_sublayers=True, structured_name_prefix="",
                   use_hook=True, keep_vars=True):
        # Paddle's order: each layer's parameters, then its persistable buffers, then its
        # sublayers in turn; a layer or parameter used twice appears under each of its names.
        out = collections.OrderedDict() if destination is None else destination
        prefix = structured_name_prefix  # prepended as it is, as in Paddle
        for name, p in self._parameters.items():
            if p is not None:
                out[prefix + name] = p
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistable_buffer_names:
                out[prefix + name] = b
        if include_sublayers:
            for name, layer in self._sub_layers.items():
                if layer is not None:
                    layer.state_dict(out, True, prefix + name + ".", use_hook, keep_vars)
        return out

    def to_static_state_dict(self, destination=None, include_sublayers=True, structured_name_prefix="",
                             use_hook=True):
        """The state dict with every buffer, persistable or not (Paddle's name for saving a static program)."""
        out = self.state_dict(destination, include_sublayers, structured_name_prefix, use_hook)
        layers = self.named_sublayers(structured_name_prefix.rstrip("."), include_self=True) \
            if include_sublayers else [(structured_name_prefix.rstrip("."), self)]
        for lp, layer in layers:
            for name, b in layer._buffers.items():
                if b is not None:
                    out.setdefault(lp + ("." if lp else "") + name, b)
        return out

    def set_state_dict(self, state_dict, use_structured_name=True):
        """Copies values into the parameters and buffers by name; returns
        (missing_keys, unexpected_keys). A shape mismatch is a ValueError."""
        from ..tensor_methods import _set_value
        own = self.state_dict()
        missing, unexpected = [], []
        # A tensor listed under several names (a shared layer) is set once from any of them.
        given = {id(t) for name, t in own.items() if name in state_dict}
        for name, target in own.items():
            if name not in state_dict:
                if id(target) not in given:
                    missing.append(name)
                continue
            value = state_dict[name]
            shape = list(value.shape)
            if shape != list(target.shape):
                raise ValueError(f"set_state_dict: '{name}' has shape {shape} in the state dict but "
                                 f"{list(target.shape)} in the layer")
            _set_value(target, value)
        for name in state_dict:
            if name not in own:
                unexpected.append(name)
        return missing, unexpected

    set_dict = set_state_dict
    load_dict = set_state_dict

    # ---- calling ----
    def register_forward_pre_hook(self, hook):
        return self._add_hook(self._forward_pre_hooks, hook)

    def register_forward_post_hook(self, hook):
        return self._add_hook(self._forward_post_hooks, hook)

    def _add_hook(self, hooks, hook):
        hid = self._hook_id
        object.__setattr__(self, "_hook_id", hid + 1)
        hooks[hid] = hook

        class _Handle:
            def remove(self_):
                hooks.pop(hid, None)
        return _Handle()

    def forward(self, *inputs, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}.forward is not implemented")

    def __call__(self, *inputs, **kwargs):
        for hook in list(self._forward_pre_hooks.values()):
            r = hook(self, inputs)
            if r is not None:
                inputs = r if isinstance(r, tuple) else (r,)
        out = self.forward(*inputs, **kwargs)
        for hook in list(self._forward_post_hooks.values()):
            r = hook(self, inputs, out)
            if r is not None:
                out = r
        return out

    def clear_gradients(self, set_to_zero=True):
        for p in self.parameters():
            if not p.stop_gradient:
                p.clear_gradient(set_to_zero)

    def to(self, device=None, dtype=None, blocking=None):
        from ..tensor_methods import _to
        for p in self.parameters():
            p._set_data_(_to(p.detach(), device=device, dtype=dtype))
        for lp, layer in self.named_sublayers(include_self=True):
            for name, b in list(layer._buffers.items()):
                if b is not None:
                    b._set_data_(_to(b.detach(), device=device, dtype=dtype))
        return self

    def astype(self, dtype):
        return self.to(dtype=dtype)

    def float(self):
        return self.to(dtype="float32")

    def extra_repr(self):
        return ""

    def full_name(self):
        return self._full_name

    def __repr__(self):
        lines = []
        for name, layer in self._sub_layers.items():
            sub = repr(layer).replace("\n", "\n  ")
            lines.append(f"({name}): {sub}")
        head = f"{type(self).__name__}({self.extra_repr()}"
        if not lines:
            return head + ")"
        return head + "\n  " + "\n  ".join(lines) + "\n)"

    def __dir__(self):
        return list(super().__dir__()) + list(self._parameters) + list(self._sub_layers) + list(self._buffers)


__all__ = ["Layer", "Parameter", "ParamAttr"]
