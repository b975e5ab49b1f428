"""oar.save / oar.load: state dicts (and nested dicts/lists of tensors and
plain values) in the safetensors format: an 8-byte little-endian header
length, a JSON header {name: {dtype, shape, data_offsets}}, then the raw
little-endian data. Non-tensor structure goes into the header's
__metadata__ ("oar.structure"), so any safetensors reader sees the tensors."""
import json
import os
import struct

import numpy as np

from . import _C
from .framework import Tensor, convert_dtype

_ST_DTYPES = {
    "float32": "F32", "float64": "F64", "float16": "F16", "bfloat16": "BF16", "int8": "I8", "uint8": "U8",
    "int32": "I32", "int64": "I64", "bool": "BOOL",
}
_FROM_ST = {v: k for k, v in _ST_DTYPES.items()}
_NP_FOR_ST = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "I8": np.int8, "U8": np.uint8,
              "I32": np.int32, "I64": np.int64, "BOOL": np.bool_, "BF16": np.uint16}


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
    """Writes a tensor, a state dict or nested dicts/lists of tensors and plain values."""
    tensors = {}
    structure = _flatten(obj, "", tensors)
    header, blobs, offset = {}, [], 0
    for key, t in tensors.items():
        if isinstance(t, np.ndarray):
            from .creation import to_tensor
            t = to_tensor(t)
        data = t._raw_bytes()
        header[key] = {"dtype": _ST_DTYPES[t.dtype.name], "shape": list(t.shape),
                       "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = {"format": "oar", "oar.structure": json.dumps(structure)}
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    directory = os.path.dirname(os.fspath(path))
    if directory:
        os.makedirs(directory, exist_ok=True)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for b in blobs:
            f.write(b)


def _read(path):
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) != 8:
            raise ValueError(f"load: '{path}' is not a safetensors file (shorter than 8 bytes)")
        (n,) = struct.unpack("<Q", head)
        try:
            header = json.loads(f.read(n))
        except (ValueError, UnicodeDecodeError):
            raise ValueError(f"load: '{path}' is not a safetensors file (bad JSON header)") from None
        data = f.read()
    return header, data


def load(path, return_numpy=False, **configs):
    """Reads what save wrote (or any safetensors file: a dict of tensors)."""
    header, data = _read(path)
    meta = header.pop("__metadata__", {}) or {}
    values = {}
    for key, info in header.items():
        begin, end = info["data_offsets"]
        dtype = info["dtype"]
        if dtype not in _FROM_ST:
            raise ValueError(f"load: '{path}' tensor '{key}' has dtype {dtype}, which oar does not support")
        t = _C.from_bytes(data[begin:end], [int(s) for s in info["shape"]], convert_dtype(_FROM_ST[dtype]))
        values[key] = t
    if "oar.structure" not in meta:
        return {k: (v.numpy() if return_numpy else v) for k, v in values.items()}
    return _unflatten(json.loads(meta["oar.structure"]), values, return_numpy)


def _unflatten(node, values, return_numpy):
    if isinstance(node, dict):
        if "__tensor__" in node:
            t = values[node["__tensor__"]]
            return t.numpy() if (return_numpy or node.get("__numpy__")) else t
        if "__dict__" in node:
            return {k: _unflatten(v, values, return_numpy) for k, v in node["__dict__"]}
        if "__list__" in node:
            return [_unflatten(v, values, return_numpy) for v in node["__list__"]]
        if "__tuple__" in node:
            return tuple(_unflatten(v, values, return_numpy) for v in node["__tuple__"])
    return node
