"""oar.distributed.launch (paddle.distributed.launch): start the ranks of a job.

    python -m oar.distributed.launch [options] script.py [script args]

also installed as the command oar-launch. See main.py and docs/distributed.md.
"""
from .main import launch, main  # noqa: F401
