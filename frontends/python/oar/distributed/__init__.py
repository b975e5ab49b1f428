"""oar.distributed (paddle.distributed): collectives over Gloo (cpu) or the
device's own library, process groups, the launcher, data parallel.

See docs/distributed.md.
"""
# --- environment, process groups and collectives (env.py, parallel.py, collective.py) ---

# --- launcher and spawn (launch/, spawn.py) ---
from . import launch  # noqa: F401,E402
from .spawn import spawn  # noqa: F401,E402

# --- data parallel and fleet (data_parallel.py, fleet/) ---
