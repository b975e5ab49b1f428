"""Where this process stands in its job: the launcher's variables (read by
the core, Note [Launcher variables] in core/src/runtime/dist_env.cpp), the
collective device and the collective timeout."""
import logging
import os

from .. import _C

logger = logging.getLogger("oar.distributed")

_DEFAULT_TIMEOUT_S = 1800.0


def detect_env():
    """dict(rank, world_size, local_rank, local_world_size, master_addr,
    master_port, job_id, source): what the launcher variables say. source is
    "oar.distributed.launch", "torchrun", "paddle", "openmpi", "slurm" or
    "none". A malformed variable raises ValueError naming it."""
    return dict(_C.distributed.detect_env())


def collective_device():
    """The device collectives run on: $OAR_DIST_DEVICE, else oar's current
    device (oar.get_device(), e.g. "cpu" or "mock:0"), whose index becomes
    the one the launcher chose for this rank ($OAR_LOCAL_DEVICE or
    $FLAGS_selected_gpus, as Paddle's --gpus) for a device other than cpu."""
    explicit = os.environ.get("OAR_DIST_DEVICE", "").strip()
    if explicit:
        return explicit
    from .. import framework
    current = framework.get_device()
    kind = current.split(":")[0]
    chosen = _launcher_device_id()
    if kind != "cpu" and chosen is not None:
        return f"{kind}:{chosen}"
    return current


def collective_timeout():
    """$OAR_COLLECTIVE_TIMEOUT in seconds (a float), default 1800."""
    text = os.environ.get("OAR_COLLECTIVE_TIMEOUT", "").strip()
    if not text:
        return _DEFAULT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"OAR_COLLECTIVE_TIMEOUT='{text}' is not a number of seconds") from None
    if not value > 0:
        raise ValueError(f"OAR_COLLECTIVE_TIMEOUT='{text}' must be a positive number of seconds")
    return value


def _launcher_device_id():
    """$OAR_LOCAL_DEVICE, else the first of $FLAGS_selected_gpus; None when neither is set."""
    for name in ("OAR_LOCAL_DEVICE", "FLAGS_selected_gpus"):
        text = os.environ.get(name, "").strip()
        if text:
            first = text.split(",")[0].strip()
            try:
                return int(first)
            except ValueError:
                raise ValueError(f"{name}='{text}' is not a device index (or a comma-separated list of them)") from None
    return None


def local_device_id(env):
    """The device index the launcher chose for this process (see
    collective_device), else the local rank."""
    chosen = _launcher_device_id()
    return env["local_rank"] if chosen is None else chosen


def backend_of_device(device):
    """The collective library behind a device type: "gloo" for cpu, else the
    device type's name ("mock", ...)."""
    kind = str(device).split(":")[0]
    return "gloo" if kind == "cpu" else kind
