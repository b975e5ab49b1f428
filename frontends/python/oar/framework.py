"""dtypes, places and devices (paddle.float32, paddle.set_device, ...)."""
import builtins
import os

import numpy as np

from . import _C

Tensor = _C.Tensor
dtype = _C.dtype

float32 = dtype.float32
float64 = dtype.float64
float16 = dtype.float16
bfloat16 = dtype.bfloat16
int8 = dtype.int8
uint8 = dtype.uint8
int32 = dtype.int32
int64 = dtype.int64
bool = dtype.bool  # noqa: A001 - paddle.bool
complex64 = dtype.complex64
complex128 = dtype.complex128

_default_dtype = float32

_ALIASES = {
    "float": float32, "float32": float32, "fp32": float32, "double": float64, "float64": float64,
    "half": float16, "float16": float16, "fp16": float16, "bfloat16": bfloat16, "bf16": bfloat16,
    "int": int64, "int64": int64, "long": int64, "int32": int32, "int8": int8, "uint8": uint8,
    "bool": bool, "complex64": complex64, "complex128": complex128, "c64": complex64, "c128": complex128,
    "cfloat": complex64, "cdouble": complex128,
}
_FROM_NUMPY = {
    np.dtype(np.float32): float32, np.dtype(np.float64): float64, np.dtype(np.float16): float16,
    np.dtype(np.int8): int8, np.dtype(np.uint8): uint8, np.dtype(np.int32): int32,
    np.dtype(np.int64): int64, np.dtype(np.bool_): bool,
    np.dtype(np.complex64): complex64, np.dtype(np.complex128): complex128,
}
_TO_NUMPY = {v: k for k, v in _FROM_NUMPY.items()}


def convert_dtype(d):
    """An oar dtype from an oar dtype, a name, a numpy dtype or a Python type; None stays None."""
    if d is None or isinstance(d, dtype):
        return d
    if isinstance(d, str):
        name = d.lower()
        if name.startswith("oar.") or name.startswith("paddle."):
            name = name.split(".", 1)[1]
        if name in _ALIASES:
            return _ALIASES[name]
        raise TypeError(f"unknown dtype '{d}'; expected one of {sorted(set(_ALIASES))}")
    if d is float:
        return _default_dtype
    if d is int:
        return int64
    if d is builtins.bool:
        return bool
    if d is complex:
        return default_complex_dtype()
    try:
        return _FROM_NUMPY[np.dtype(d)]
    except (TypeError, KeyError):
        raise TypeError(f"unsupported dtype {d!r}") from None


def to_numpy_dtype(d):
    d = convert_dtype(d)
    if d == bfloat16:
        return np.dtype(np.float32)
    return _TO_NUMPY[d]


def is_floating_point_dtype(d):
    return convert_dtype(d).is_floating_point


def set_default_dtype(d):
    global _default_dtype
    d = convert_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"set_default_dtype: default dtype must be floating, got {d.name}")
    _default_dtype = d


def get_default_dtype():
    return _default_dtype.name


def default_float_dtype():
    return _default_dtype


def default_complex_dtype():
    """The dtype of a Python complex scalar: complex128 when the default float is float64, else complex64."""
    return _C.complex_dtype_for(_default_dtype)


def is_complex_dtype(d):
    return convert_dtype(d).is_complex


class Place:
    """A device: Place('cpu:0'), Place('mock:1'). Compares equal to its string."""

    def __init__(self, device):
        if isinstance(device, Place):
            device = device._device
        device = str(device)
        if ":" not in device:
            device += ":0"
        self._device = device

    @property
    def type(self):
        return self._device.split(":")[0]

    def get_device_id(self):
        return int(self._device.split(":")[1])

    def is_cpu_place(self):
        return self.type == "cpu"

    def __str__(self):
        # Paddle prints Place(cpu) for the cpu, Place(type:index) for others.
        return "Place(cpu)" if self._device == "cpu:0" else f"Place({self._device})"

    __repr__ = __str__

    def __eq__(self, other):
        if isinstance(other, (Place, str)):
            return self._device == Place(other)._device
        return NotImplemented

    def __hash__(self):
        return hash(self._device)


def CPUPlace():  # noqa: N802 - paddle.CPUPlace
    return Place("cpu:0")


def CustomPlace(device_type, device_id=0):  # noqa: N802 - paddle.CustomPlace
    return Place(f"{device_type}:{device_id}")


def device_str(place):
    """'type:index' (or None) from a Place, a string or None."""
    if place is None:
        return None
    if isinstance(place, Place):
        return place._device
    return str(place)


def set_device(device):
    """Sets the default device ('cpu', 'mock:1'); returns its Place."""
    return Place(_C.set_device(device_str(device)))


def get_device():
    """The default device as a string: 'cpu' for cpu:0 (paddle.get_device), else 'type:index'."""
    d = _C.get_device()
    return "cpu" if d == "cpu:0" else d


def get_all_device_type():
    return list(_C.device_types())


def device_count(device_type=None):
    if device_type is None:
        return len(_C.devices())
    return _C.device_count(device_type)


def seed(value):
    """Seeds the global Philox generator (paddle.seed)."""
    _C.seed(int(value))
    return None


def environment():
    """Plugins loaded and skipped, devices, the default device and $OAR_DEVICE."""
    return {
        "plugins": _C.plugins(), "skipped": _C.skipped_plugins(), "devices": _C.devices(),
        "default_device": _C.get_device(), "OAR_DEVICE": os.environ.get("OAR_DEVICE"),
    }


class Size(list):
    """A tensor's shape (paddle.Size): a list of ints that also has numel()."""

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, key):
        out = list.__getitem__(self, key)
        return Size(out) if isinstance(key, slice) else out

    def __add__(self, other):
        return Size(list.__add__(self, list(other)))

    def __repr__(self):
        return f"paddle.Size({list.__repr__(self)})"

    __str__ = __repr__


class iinfo:  # noqa: N801 - paddle.iinfo
    """The range of an integer dtype: min, max, bits, dtype (its name)."""

    def __init__(self, dtype):
        d = convert_dtype(dtype)
        if not d.is_integer:
            raise ValueError(f"iinfo: expected an integer dtype (uint8, int8, int32, int64), got {d.name}")
        info = np.iinfo(to_numpy_dtype(d))
        self.min, self.max, self.bits, self.dtype = int(info.min), int(info.max), int(info.bits), d.name

    def __repr__(self):
        return f"paddle.iinfo(min={self.min}, max={self.max}, bits={self.bits}, dtype={self.dtype})"


# bfloat16 has no numpy dtype: its limits by hand (8 exponent bits, 7 mantissa bits).
_BF16_INFO = {"min": -3.3895313892515355e38, "max": 3.3895313892515355e38, "eps": 0.0078125, "resolution": 0.01,
              "smallest_normal": 1.1754943508222875e-38, "tiny": 1.1754943508222875e-38, "bits": 16}


class finfo:  # noqa: N801 - paddle.finfo
    """The limits of a float (or complex: its real part's) dtype."""

    def __init__(self, dtype):
        d = convert_dtype(dtype)
        if d.is_complex:
            d = _C.real_dtype_for(d)
        if not d.is_floating_point:
            raise ValueError(f"finfo: expected a floating point dtype, got {d.name}")
        self.dtype = d.name
        if d == bfloat16:
            for k, v in _BF16_INFO.items():
                setattr(self, k, v)
            return
        info = np.finfo(to_numpy_dtype(d))
        self.min, self.max, self.eps = float(info.min), float(info.max), float(info.eps)
        self.resolution, self.smallest_normal = float(info.resolution), float(info.smallest_normal)
        self.tiny, self.bits = float(info.tiny), int(info.bits)

    def __repr__(self):
        return (f"paddle.finfo(min={self.min:g}, max={self.max:g}, eps={self.eps:g}, resolution={self.resolution:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, bits={self.bits}, dtype={self.dtype})")


class GeneratorState:
    """A saved state of the global random generator (its seed and offset)."""

    def __init__(self, seed, offset):
        self.seed, self.offset = int(seed), int(offset)

    def current_seed(self):
        return self.seed

    def __repr__(self):
        return f"GeneratorState(seed={self.seed}, offset={self.offset})"


def get_rng_state(device=None):
    """[the global generator's state] (oar has one generator for every device)."""
    return [GeneratorState(*_C.random_state())]


def set_rng_state(state_list, device=None):
    """Restores a state get_rng_state returned: the draws after it repeat."""
    states = [state_list] if isinstance(state_list, GeneratorState) else list(state_list)
    if len(states) != 1 or not isinstance(states[0], GeneratorState):
        raise ValueError(f"set_rng_state: expected the list get_rng_state returned (one GeneratorState), "
                         f"got {state_list!r}")
    _C.set_random_state(states[0].seed, states[0].offset)


def get_cuda_rng_state():
    """The CUDA generators' states: an empty list, as oar has no CUDA device (Paddle on a CPU build)."""
    return []


def set_cuda_rng_state(state_list):
    if list(state_list):
        raise ValueError("set_cuda_rng_state: oar has no CUDA device; only the empty list get_cuda_rng_state "
                         "returns can be restored")
