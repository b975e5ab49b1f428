"""Errors become Python exceptions carrying the core's sentence; nothing aborts."""
import os
import subprocess
import sys

import pytest

import oar


def test_shape_errors_are_value_errors(device):
    with pytest.raises(ValueError, match=r"add: shapes \[2, 3\] and \[4\] cannot be broadcast"):
        oar.ones([2, 3]) + oar.ones([4])
    with pytest.raises(ValueError, match=r"matmul: x has shape \[2, 3\] but y has shape \[4, 5\]"):
        oar.matmul(oar.ones([2, 3]), oar.ones([4, 5]))
    with pytest.raises(ValueError, match="reshape"):
        oar.reshape(oar.ones([6]), [4, -1])
    with pytest.raises(ValueError, match="split"):
        oar.split(oar.ones([5]), 2)


def test_dtype_errors_are_type_errors(device):
    with pytest.raises(TypeError, match="where: condition has dtype float32"):
        oar._C.ops.where(oar.ones([2]), oar.ones([2]), oar.ones([2]))
    with pytest.raises(TypeError):
        oar.to_tensor(["a", "b"])
    with pytest.raises(TypeError):
        oar.ones([2], dtype="complex32")  # complex64 and complex128 exist since ABI 1.3


def test_device_errors(device):
    other = "mock:1" if device == "cpu" else "cpu"
    with pytest.raises(ValueError, match="move them to one device"):
        oar.ones([2]) + oar.ones([2]).to(other)
    with pytest.raises(ValueError, match="is not present"):
        oar.set_device("mock:9")


def test_out_of_memory_is_memory_error_and_device_keeps_working(device):
    with pytest.raises(MemoryError, match="cannot allocate"):
        oar.zeros([1 << 42])
    assert oar.ones([3]).sum().item() == 3.0


def test_errors_do_not_abort_the_interpreter():
    code = ("import oar\n"
            "for f in [lambda: oar.ones([2]) @ oar.ones([3]), lambda: oar.set_device('nope'),\n"
            "          lambda: oar.ones([2]).backward()]:\n"
            "    try:\n        f()\n    except Exception as e:\n        print(type(e).__name__)\n"
            "print('alive')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-1] == "alive"
