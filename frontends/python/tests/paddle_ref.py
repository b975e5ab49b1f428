"""Runs a script under PaddlePaddle (a separate venv, not a dependency of oar)
and returns the arrays it saved, or skips the test when Paddle is missing.

The script gets `paddle`, `np` and `save(**arrays)`. Point OAR_PADDLE_PYTHON at
a python with paddle installed; the default is /work/paddle-venv/bin/python."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

PADDLE_PYTHON = os.environ.get("OAR_PADDLE_PYTHON", "/work/paddle-venv/bin/python")

_PRELUDE = """
import sys
import numpy as np
import paddle
paddle.set_device("cpu")
_out = {}
def save(**arrays):
    for k, v in arrays.items():
        _out[k] = v.numpy() if hasattr(v, "numpy") else np.asarray(v)
"""


def run_paddle(script, tmp_dir):
    """Arrays saved by script under paddle, as a dict of numpy arrays."""
    if not os.path.exists(PADDLE_PYTHON):
        pytest.skip(f"PaddlePaddle reference python {PADDLE_PYTHON} is not installed")
    out = os.path.join(str(tmp_dir), "paddle_ref.npz")
    code = _PRELUDE + textwrap.dedent(script) + f"\nnp.savez({out!r}, **_out)\n"
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", GLOG_minloglevel="2")
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([PADDLE_PYTHON, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode != 0:
        if "No module named 'paddle'" in proc.stderr:
            pytest.skip("paddle is not importable from " + PADDLE_PYTHON)
        sys.stderr.write(proc.stderr[-4000:])
        raise RuntimeError(f"the paddle reference script failed with exit code {proc.returncode}")
    with np.load(out) as data:
        return {k: data[k] for k in data.files}
