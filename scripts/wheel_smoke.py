"""The installed wheel works on a machine with nothing but Python: oar
imports, the cpu plugin loads (its oneDNN comes from the wheel), and a matmul
and a conv2d on the cpu device equal numpy. Run by
scripts/check_fresh_machine.sh in a root without libdnnl; usable anywhere:
    python scripts/wheel_smoke.py
"""
import os
import sys

import numpy as np

import oar
import oar.nn.functional as F

env = oar.environment()
for p in env["plugins"]:
    print(f"plugin {p['name']}: {p['path']} (ABI {p['abi']}, devices {p['device_types']}, {p['num_kernels']} kernels)")
for path, reason in env["skipped"]:
    print(f"skipped {path}: {reason}")
print("devices:", env["devices"], "default:", env["default_device"])
if env["skipped"]:
    sys.exit("wheel_smoke: plugins were skipped (see above)")
# The plugin probe helper (Note [Plugin probe]) ships beside liboar_core.so.
probe = os.path.join(os.path.dirname(oar.__file__), "lib", "oar-plugin-probe")
if not os.access(probe, os.X_OK):
    sys.exit(f"wheel_smoke: {probe} is missing or not executable")
types = [t for p in env["plugins"] for t in p["device_types"]]
if "cpu" not in types:
    sys.exit("wheel_smoke: the cpu plugin did not load: " + "; ".join(f"{p}: {r}" for p, r in env["skipped"]))
oar.set_device("cpu")

rng = np.random.default_rng(0)
a = rng.standard_normal((64, 48)).astype(np.float32)
b = rng.standard_normal((48, 32)).astype(np.float32)
c = oar.matmul(oar.to_tensor(a), oar.to_tensor(b)).numpy()
np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
print("matmul [64, 48] x [48, 32] on cpu: equals numpy")

x = rng.standard_normal((2, 3, 9, 9)).astype(np.float32)
w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
y = F.conv2d(oar.to_tensor(x), oar.to_tensor(w), padding=1).numpy()
xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
ref = np.zeros((2, 4, 9, 9), np.float32)
for i in range(9):
    for j in range(9):
        ref[:, :, i, j] = np.einsum("nchw,ochw->no", xp[:, :, i:i + 3, j:j + 3], w)
np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
print("conv2d [2, 3, 9, 9] * [4, 3, 3, 3], padding 1, on cpu: equals numpy")
print("wheel_smoke: ok")
