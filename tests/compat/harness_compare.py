"""Comparison rules and failure classes of the compatibility harness.

A result is {"error": None | {type, message, name, line}, "values": {name:
{"kind", "dtype", "shape", "array"}}}. compare() returns None when oar's
result matches paddle's, else (reason class, detail).
"""
import re

import numpy as np

# (rtol, atol) per dtype; ints and bools are compared exactly.
TOLERANCE = {"float16": (1e-3, 1e-3), "bfloat16": (1e-2, 1e-2)}
DEFAULT_TOLERANCE = (1e-5, 1e-6)

# Names of dtypes that are the same thing spelled differently.
_DTYPE_ALIASES = {"fp16": "float16", "fp32": "float32", "fp64": "float64", "bf16": "bfloat16",
                  "half": "float16", "float": "float32", "double": "float64",
                  "long": "int64", "int": "int32", "bool_": "bool"}

MISSING, VALUE, DTYPE, SHAPE, STRUCTURE, EXCEPTION, TIMEOUT = (
    "missing name", "wrong value", "wrong dtype", "wrong shape", "wrong result names",
    "other exception", "timeout")
REASON_ORDER = [MISSING, EXCEPTION, VALUE, DTYPE, SHAPE, STRUCTURE, TIMEOUT]


def normalize_dtype(dtype):
    """'paddle.float32', 'oar.float32', 'DataType.FLOAT32', 'float32' -> 'float32'."""
    name = str(dtype).split(".")[-1].lower()
    return _DTYPE_ALIASES.get(name, name)


def missing_name(error):
    """The paddle name an AttributeError/ImportError says is missing, or None."""
    if error["type"] not in ("AttributeError", "ImportError", "ModuleNotFoundError"):
        return None
    msg = error["message"]
    patterns = [
        (r"module '([\w.]+)' has no attribute '(\w+)'", "{0}.{1}"),
        (r"type object '(?:[\w.]+\.)?(\w+)' has no attribute '(\w+)'", "{0}.{1}"),
        (r"'(?:[\w.]+\.)?(\w+)' object has no attribute '(\w+)'", "{0}.{1}"),
        (r"cannot import name '(\w+)' from '([\w.]+)'", "{1}.{0}"),
        (r"No module named '([\w.]+)'", "{0}"),
    ]
    for pattern, fmt in patterns:
        m = re.search(pattern, msg)
        if m:
            name = fmt.format(*m.groups())
            return re.sub(r"^oar\b", "paddle", name)
    return None


def classify_error(error):
    """(reason class, detail) of an exception oar raised."""
    name = missing_name(error)
    if name is not None:
        return MISSING, name
    return EXCEPTION, f"{error['type']}: {error['message']}".strip()


def compare_value(name, ref, got, random):
    """None if got matches ref (random: by shape and dtype only), else (class, detail)."""
    if ref["kind"] == "other":
        return None   # nothing tensor-like under paddle (a layer, a static variable)
    if ref["kind"] != got["kind"]:
        found = got["dtype"] if got["kind"] == "other" else got["kind"]
        return STRUCTURE, f"{name} is a {ref['kind']} in paddle but a {found} in oar"
    rd, gd = normalize_dtype(ref["dtype"]), normalize_dtype(got["dtype"])
    if list(ref["shape"]) != list(got["shape"]):
        return SHAPE, f"{name}: shape {list(ref['shape'])} expected, got {list(got['shape'])}"
    if rd != gd:
        return DTYPE, f"{name}: dtype {rd} expected, got {gd}"
    if random:
        return None
    a, b = np.asarray(ref["array"]), np.asarray(got["array"])
    if a.shape != b.shape:   # e.g. a 0-d tensor read back as [1]
        return SHAPE, f"{name}: array shape {list(a.shape)} expected, got {list(b.shape)}"
    if a.dtype.kind in "fc" or b.dtype.kind in "fc":
        rtol, atol = TOLERANCE.get(rd, DEFAULT_TOLERANCE)
        try:
            ok = np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
        except TypeError:
            ok = False
    else:
        ok = np.array_equal(a, b)
    if not ok:
        return VALUE, f"{name}: {_difference(a, b)}"
    return None


def _difference(a, b):
    """A one-line description of how b differs from a."""
    try:
        if a.dtype.kind in "fc" and b.dtype.kind in "fcib":
            diff = np.abs(a.astype(complex) - b.astype(complex))
            diff = np.where(np.isnan(diff), np.inf, diff)
            i = np.unravel_index(np.argmax(diff), diff.shape) if diff.ndim else ()
            return f"max abs diff {float(diff[i]):.3g} at {_index(i)} ({a[i]} vs {b[i]})"
        bad = np.argwhere(a != b)
        i = tuple(bad[0]) if bad.size else ()
        return f"{len(bad)} of {a.size} elements differ, first at {_index(i)} ({a[i]} vs {b[i]})"
    except Exception:
        return "values differ"


def _index(i):
    return "[" + ", ".join(str(int(k)) for k in i) + "]"


def compare(ref, got, random, random_names=()):
    """Compare oar's result with paddle's. None when they match."""
    if got.get("timeout"):
        return TIMEOUT, f"no result within {got['timeout']} s"
    if got["error"] is not None:
        return classify_error(got["error"])
    # what paddle holds nothing tensor-like in is not compared, items included
    skipped = {n for n, v in ref["values"].items() if v["kind"] == "other"}
    ref_names = set(ref["values"]) - skipped
    got_names = {n for n in got["values"] if n.split("[")[0] not in skipped}
    if ref_names != got_names:
        lost, extra = sorted(ref_names - got_names), sorted(got_names - ref_names)
        detail = []
        if lost:
            detail.append("missing " + ", ".join(lost[:5]))
        if extra:
            detail.append("extra " + ", ".join(extra[:5]))
        return STRUCTURE, "; ".join(detail)
    for name in sorted(ref_names):
        bad = compare_value(name, ref["values"][name], got["values"][name],
                            random or name in random_names)
        if bad is not None:
            return bad
    return None


def seed_dependent(runs):
    """Names whose values differ between paddle runs with different seeds."""
    if len(runs) < 2 or any(r["error"] is not None for r in runs):
        return set()
    first, names = runs[0]["values"], set()
    for other in runs[1:]:
        for name, ref in first.items():
            got = other["values"].get(name)
            if got is None or compare_value(name, ref, got, False) is not None:
                names.add(name)
    return names
