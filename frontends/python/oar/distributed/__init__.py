"""oar.distributed (paddle.distributed): collectives over Gloo (cpu) or the
device's own library, process groups, the launcher, data parallel.

See docs/distributed.md.
"""
# --- environment, process groups and collectives (env.py, parallel.py, collective.py) ---

# --- launcher and spawn (launch/, spawn.py) ---

# --- data parallel and fleet (data_parallel.py, fleet/) ---
from .data_parallel import DataParallel  # noqa: E402,F401 - also oar.DataParallel
from . import fleet  # noqa: E402,F401
