"""oar.save / oar.load: state dicts (and nested dicts/lists of tensors and
plain values) in the safetensors format: an 8-byte little-endian header
length, a JSON header {name: {dtype, shape, data_offsets}}, then the raw
little-endian data. Non-tensor structure goes into the header's
__metadata__ ("oar.structure"), so any safetensors reader sees the tensors.
Reading and writing are the core's (oar._C.load_safetensors,
save_safetensors): one reader for C++ and Python."""
import errno
import json
import os
import re
import tempfile

import numpy as np

from . import _C
from .framework import Tensor



def _flatten(obj, prefix, tensors):
    """The object with each tensor replaced by {"__tensor__": key}; tensors collected by key."""
    if isinstance(obj, (Tensor, np.ndarray)):
        key = prefix or "tensor"
        tensors[key] = obj
        return {"__tensor__": key, "__numpy__": isinstance(obj, np.ndarray)}
    if isinstance(obj, dict):
        return {"__dict__": [[k, _flatten(v, f"{prefix}.{k}" if prefix else str(k), tensors)] for k, v in obj.items()]}
    if isinstance(obj, (list, tuple)):
        items = [_flatten(v, f"{prefix}.{i}" if prefix else str(i), tensors) for i, v in enumerate(obj)]
        return {"__tuple__" if isinstance(obj, tuple) else "__list__": items}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"save: cannot store a value of type {type(obj).__name__}")


def save(obj, path, protocol=4, **configs):
    """Writes a tensor, a state dict or nested dicts/lists of tensors and plain values.

    The file is written durably: to a temporary file in the same directory,
    flushed to disk, then renamed over `path`, so a crash or kill during the
    save leaves the previous file intact (the core's safetensors writer)."""
    tensors = {}
    structure = _flatten(obj, "", tensors)
    for key, t in tensors.items():
        if isinstance(t, np.ndarray):
            from .creation import to_tensor
            tensors[key] = to_tensor(t)
    if _is_stream(path):
        _save_to_stream(tensors, structure, path)
        return
    path = os.fspath(path)
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    _C.save_safetensors(path, tensors, {"format": "oar", "oar.structure": json.dumps(structure)})


def _is_stream(path):
    return hasattr(path, "write") or hasattr(path, "read")


def _save_to_stream(tensors, structure, stream):
    """One safetensors record written at the stream's position (through a
    temporary file: the core writes files); records can follow each other."""
    with tempfile.TemporaryDirectory() as tmp:
        name = os.path.join(tmp, "record.safetensors")
        _C.save_safetensors(name, tensors, {"format": "oar", "oar.structure": json.dumps(structure)})
        with open(name, "rb") as f:
            stream.write(f.read())


def _load_from_stream(stream, return_numpy):
    """Reads the one safetensors record at the stream's position (its header
    says where it ends) and leaves the stream after it."""
    what = f"the stream {type(stream).__name__}"
    head = stream.read(8)
    if len(head) != 8:
        raise ValueError(f"load: cannot read a safetensors record from {what}: it has {len(head)} bytes left, "
                         "fewer than the 8 of a header length")
    size = int.from_bytes(head, "little")
    header = stream.read(size) if size <= 100_000_000 else b""
    if len(header) != size:
        raise ValueError(f"load: cannot read a safetensors record from {what}: its header of {size} bytes is cut "
                         "short or too large")
    try:
        entries = json.loads(header)
        end = max([int(e["data_offsets"][1]) for k, e in entries.items() if k != "__metadata__"], default=0)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as e:
        raise ValueError(f"load: cannot read a safetensors record from {what}: its header is broken ({e})") from None
    data = stream.read(end)
    with tempfile.TemporaryDirectory() as tmp:
        name = os.path.join(tmp, "record.safetensors")
        with open(name, "wb") as f:
            f.write(head + header + data)
        return load(name, return_numpy)


# The deepest JSON nesting of "oar.structure" that load accepts: three
# levels per level of nested Python containers, far below Python's
# recursion limit, so a hostile file cannot raise RecursionError.
_MAX_STRUCTURE_DEPTH = 300
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_JSON_BRACKET = re.compile(r"[\[\]{}]")


def _json_depth(text):
    depth = deepest = 0
    for m in _JSON_BRACKET.finditer(_JSON_STRING.sub('""', text)):
        depth += 1 if m.group() in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def load(path, return_numpy=False, **configs):
    """Reads what save wrote (or any safetensors file: a dict of tensors).

    Any fault of the file (truncated, garbage, bad JSON, bad dtype, shapes or
    offsets that do not match, overlapping tensors, duplicate keys, a broken
    oar.structure) raises ValueError naming the file and the fault."""
    if _is_stream(path):
        return _load_from_stream(path, return_numpy)
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(errno.ENOENT, f"load: there is no file '{path}'", path)
    try:
        values, meta = _C.load_safetensors(path)
    except ValueError as e:
        reason = str(e)
        if reason.startswith(path + ": "):
            reason = reason[len(path) + 2:]
        raise ValueError(f"load: cannot read '{path}' as a safetensors file: {reason}") from None
    if "oar.structure" not in meta:
        return {k: (v.numpy() if return_numpy else v) for k, v in values.items()}
    text = meta["oar.structure"]
    if _json_depth(text) > _MAX_STRUCTURE_DEPTH:
        raise ValueError(f"load: '{path}' has an oar.structure that nests more than "
                         f"{_MAX_STRUCTURE_DEPTH} levels deep")
    try:
        node = json.loads(text)
    except ValueError as e:
        raise ValueError(f"load: '{path}' has an oar.structure that is not valid JSON ({e})") from None
    return _Unflatten(path, values, return_numpy).node(node)


class _Unflatten:
    """Rebuilds the saved object from oar.structure, checking every node."""

    def __init__(self, path, values, return_numpy):
        self.path, self.values, self.return_numpy = path, values, return_numpy

    def fail(self, what):
        raise ValueError(f"load: '{self.path}' has a broken oar.structure: {what}")

    def node(self, node):
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if not isinstance(node, dict) or len(node) == 0:
            self.fail(f"a node is {json.dumps(node)[:80]}, not a value or a tagged object")
        if "__tensor__" in node:
            key = node["__tensor__"]
            if not isinstance(key, str) or key not in self.values:
                self.fail(f"it names the tensor {json.dumps(key)[:80]}, which the file does not hold")
            t = self.values[key]
            return t.numpy() if (self.return_numpy or node.get("__numpy__") is True) else t
        if len(node) != 1:
            self.fail(f"a node has the keys {sorted(node)[:8]}; expected one of __dict__, __list__, __tuple__")
        (tag, items), = node.items()
        if tag not in ("__dict__", "__list__", "__tuple__") or not isinstance(items, list):
            self.fail(f"a node is tagged {tag!r} with a value of type {type(items).__name__}; expected "
                      "__dict__, __list__ or __tuple__ with a list")
        if tag == "__list__":
            return [self.node(v) for v in items]
        if tag == "__tuple__":
            return tuple(self.node(v) for v in items)
        out = {}
        for item in items:
            if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], (str, int, float, bool))
                    and item[0] is not None):
                self.fail(f"a __dict__ item is {json.dumps(item)[:80]}, not a [key, value] pair")
            out[item[0]] = self.node(item[1])
        return out
