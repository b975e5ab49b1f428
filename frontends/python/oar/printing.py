"""print(tensor) in Paddle's format, and paddle.set_printoptions.

Every value of a tensor is written the same width: floats with `precision`
decimals (an integral value as "3."), a column of spaces kept for the sign
when some value is negative; more than `threshold` values print only
`edgeitems` at each end of every axis, with "..." between."""
import numpy as np

_OPTIONS = {"precision": 8, "threshold": 1000, "edgeitems": 3, "sci_mode": False, "linewidth": 80}


def set_printoptions(precision=None, threshold=None, edgeitems=None, sci_mode=None, linewidth=None):
    """Sets how tensors print (None leaves an option as it is)."""
    for key, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                       ("linewidth", linewidth)):
        if value is not None:
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
                raise TypeError(f"set_printoptions: {key} must be an int, got {type(value).__name__}")
            _OPTIONS[key] = int(value)
    if sci_mode is not None:
        if not isinstance(sci_mode, bool):
            raise TypeError(f"set_printoptions: sci_mode must be a bool, got {type(sci_mode).__name__}")
        _OPTIONS["sci_mode"] = sci_mode


def _item_str(v):
    p = _OPTIONS["precision"]
    if isinstance(v, (np.floating, float)):
        if _OPTIONS["sci_mode"]:
            return f"{v:.{p}e}"
        return f"{v:.0f}." if np.ceil(v) == v else f"{v:.{p}f}"
    if isinstance(v, (np.complexfloating, complex)):
        if _OPTIONS["sci_mode"]:
            return f"({v.real:.{p}e}{v.imag:+.{p}e}j)"
        return f"({v.real:.{p}f}{v.imag:+.{p}f}j)"
    return f"{v}"


def _format_item(v, width, signed):
    s = _item_str(v)
    if width <= len(s):
        return s
    if signed and not (np.real(v) < 0):
        return " " + s.ljust(width - 1)
    return s.ljust(width)


def _summary(a):
    """The values that print when the tensor is summarized (for the width)."""
    e = _OPTIONS["edgeitems"]
    if a.size == 0:
        return np.array([])
    if a.ndim == 0:
        return a
    rows = list(a[:e]) + list(a[-e:]) if a.shape[0] > 2 * e else list(a)
    if a.ndim == 1:
        return np.array(rows)
    return np.stack([_summary(r) for r in rows])


def _format(a, summary, indent, width, signed):
    e = _OPTIONS["edgeitems"]
    if a.ndim == 0:
        return _format_item(a[()], width, signed)
    n = a.shape[0]
    cut = summary and n > 2 * e
    picks = list(range(e)) + [None] + list(range(n - e, n)) if cut else list(range(n))
    if a.ndim == 1:
        items = ["..." if i is None else _format_item(a[i], width, signed) for i in picks]
        per_line = max(1, (_OPTIONS["linewidth"] - indent) // (width + 2))
        lines = [items[i:i + per_line] for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(", ".join(line) for line in lines) + "]"
    parts = ["..." if i is None else _format(a[i], summary, indent + 1, width, signed) for i in picks]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def tensor_to_string(x, prefix="Tensor"):
    """Tensor(shape=[...], dtype=..., place=..., stop_gradient=...,\\n       values)."""
    if not x._defined:
        return f"{prefix}(Not initialized)"
    a = x.numpy()  # bfloat16 comes back as float32
    indent = len(prefix) + 1
    summary = a.ndim > 0 and a.size > _OPTIONS["threshold"]
    width, signed = 0, False
    for v in _summary(a).reshape(-1):
        signed = signed or bool(np.real(v) < 0)
        width = max(width, len(_item_str(v)))
    data = _format(a, summary, indent, width, signed)
    return (f"{prefix}(shape={list(x.shape)}, dtype={x.dtype.name}, place={x.place}, "
            f"stop_gradient={x.stop_gradient},\n{' ' * indent}{data})")
