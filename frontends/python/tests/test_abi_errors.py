"""The code a plugin gives set_error reaches Python (Note [Error codes from
plugins] in core/src/runtime/host_api.cpp): out of memory, also from a
kernel's scratch_alloc, raises oar.ResourceExhaustedError (a MemoryError),
an invalid argument raises ValueError. The kernels are those of
tests/plugins/scratch_plugin.c on its 4 MiB device "scratchdev", built with
the C compiler into tmp_path and loaded in a fresh interpreter."""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import oar

REPO = pathlib.Path(__file__).resolve().parents[3]
CC = shutil.which("cc") or shutil.which("gcc")


def test_out_of_memory_is_resource_exhausted_and_a_memory_error(device):
    assert issubclass(oar.ResourceExhaustedError, MemoryError)
    with pytest.raises(oar.ResourceExhaustedError, match="cannot allocate"):
        oar.zeros([1 << 42])


@pytest.mark.skipif(CC is None, reason="no C compiler to build the test plugin")
def test_kernel_error_codes_reach_python(tmp_path):
    plugin = tmp_path / "liboar_test_scratch.so"
    subprocess.run([CC, "-std=c99", "-shared", "-fPIC", "-I", str(REPO / "plugin_api" / "include"), "-o",
                    str(plugin), str(REPO / "tests" / "plugins" / "scratch_plugin.c")], check=True)
    code = """
import numpy as np
import oar
oar.set_device("scratchdev")
def kind(f):
    try:
        f()
    except Exception as e:
        return type(e).__name__ + ("/MemoryError" if isinstance(e, MemoryError) else "") + ": " + str(e)
    return "ok"
a = oar.to_tensor(np.ones(300000, np.float32))  # 1.2 MB; the add kernel also wants 2.4 MB of scratch
print(kind(lambda: a + a))
print(kind(lambda: a - a))
x = oar.to_tensor(np.ones(3, np.float32))
print(kind(lambda: x * x))
print(kind(lambda: x / x))
print((x + x).numpy().tolist())
"""
    env = dict(os.environ, OAR_PLUGIN_PATH=str(plugin), OAR_PLUGIN_PROBE_CACHE="")
    env.pop("OAR_DEVICE", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    # add returns OAR_ERROR_OUT_OF_MEMORY; sub returns OAR_ERROR_INTERNAL after the host's scratch error.
    oom = ": kernel scratch memory: scratchdev:0: cannot allocate 2400256 bytes"
    assert lines[0].startswith("ResourceExhaustedError/MemoryError: add" + oom), lines[0]
    assert lines[1].startswith("ResourceExhaustedError/MemoryError: sub" + oom), lines[1]
    # mul: set_error(INVALID_ARGUMENT) and returns OAR_ERROR_DEVICE; div: OAR_ERROR_OUT_OF_MEMORY alone.
    assert lines[2] == "ValueError: scratchdev mul: refuses its inputs on purpose"
    assert lines[3] == "ResourceExhaustedError/MemoryError: div: the scratchdev kernel failed with status 2"
    assert lines[4] == "[2.0, 2.0, 2.0]"
