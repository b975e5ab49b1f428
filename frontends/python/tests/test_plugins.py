"""Plugins seen from Python: a plugin whose needed library is missing is
skipped naming that library (oar.environment()['skipped']), one that
crashes in init is skipped with its signal and the interpreter lives, and a
kernel-only plugin's declared override runs for eager ops on cpu. Each case
builds its plugins from tests/plugins/*.c with the C compiler into tmp_path
and runs a fresh interpreter with OAR_PLUGIN_PATH pointing at them."""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
PLUGIN_SRC = REPO / "tests" / "plugins"
API_INCLUDE = REPO / "plugin_api" / "include"
CC = shutil.which("cc") or shutil.which("gcc")

pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler to build the test plugins")


def build(out, source, *flags):
    subprocess.run([CC, "-std=c99", "-shared", "-fPIC", "-I", str(API_INCLUDE), "-o", str(out),
                    str(PLUGIN_SRC / source), *flags], check=True)
    return out


def run_python(code, plugin_path, **extra_env):
    env = dict(os.environ, OAR_PLUGIN_PATH=str(plugin_path), OAR_PLUGIN_PROBE_CACHE="", **extra_env)
    env.pop("OAR_DEVICE", None)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


SKIPPED = "import json, oar; print(json.dumps(oar.environment()['skipped']))"


def test_missing_library_is_named(tmp_path):
    build(tmp_path / "liboar_test_dep.so", "test_dep.c")
    plugin = build(tmp_path / "liboar_needs_lib.so", "minimal_plugin.c", '-DDEVICE_TYPE="needslib"',
                   "-DMODE_NEEDS_LIB", "-L", str(tmp_path), "-loar_test_dep")
    (tmp_path / "liboar_test_dep.so").unlink()  # linked against, now absent
    out = run_python(SKIPPED, plugin)
    assert out.returncode == 0, out.stderr
    reason = ("it needs the shared library 'liboar_test_dep.so', which was not found "
              "(install it, or add its directory to LD_LIBRARY_PATH)")
    assert json.loads(out.stdout) == [[str(plugin), reason]]
    assert f"oar warning: skipping plugin '{plugin}': {reason}" in out.stderr


def test_crashing_plugin_is_skipped_and_python_lives(tmp_path):
    crash = build(tmp_path / "liboar_crash.so", "minimal_plugin.c", '-DDEVICE_TYPE="crashdev"', "-DMODE_SEGV")
    good = build(tmp_path / "liboar_good.so", "minimal_plugin.c", '-DDEVICE_TYPE="gooddev"')
    out = run_python(SKIPPED + "; print(sorted(oar.get_all_device_type()))", f"{crash}:{good}")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert json.loads(lines[0]) == [
        [str(crash), "its probe process was killed by signal 11 (SIGSEGV) during oar_plugin_init"]]
    assert "'gooddev'" in lines[1] and "'cpu'" in lines[1]


def test_declared_override_runs_for_eager_ops(tmp_path):
    plugin = build(tmp_path / "liboar_k666.so", "kernel_only_plugin.c", "-DKERNEL_PRIORITY=10")
    code = ("import oar; oar.set_device('cpu'); x = oar.to_tensor([1.0, 2.0]); y = oar.to_tensor([3.0, 5.0]);"
            "print(float(oar.nn.functional.mse_loss(x, y)), (x + y).numpy().tolist())")
    out = run_python(code, plugin, OAR_LOG_LEVEL="info")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["666.0", "[666.0,", "666.0]"]
    assert f"oar info: plugin '{plugin}' overrides kernel 'add' of device type 'cpu' with priority 10" in out.stderr

    # A 1.0 descriptor for cpu is refused: cpu's own kernels and decomposition run.
    v10 = build(tmp_path / "liboar_k666_v10.so", "kernel_only_plugin.c", "-DMODE_V10_DESCRIPTOR")
    out = run_python(code, v10)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["6.5", "[4.0,", "7.0]"]  # mean((1-3)^2, (2-5)^2) = (4 + 9) / 2
    assert "without a priority" in out.stderr
