import os

import numpy as np
import pytest

# The tests use small tensors: one thread is faster and keeps the suite quick
# on a machine shared with other jobs (spinning OpenMP threads lose whole
# scheduler ticks there). Set OAR_NUM_THREADS to test another count.
os.environ.setdefault("OAR_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", os.environ["OAR_NUM_THREADS"])

import oar  # noqa: E402

DEVICES = [d for d in ("cpu", "mock") if d in oar.get_all_device_type()]


@pytest.fixture(params=DEVICES)
def device(request):
    """Runs a test on each device type present; restores the default device after."""
    previous = oar._C.get_device()
    oar.set_device(request.param)
    oar.seed(1234)
    yield request.param
    oar._C.set_device(previous)


def assert_close(actual, expected, rtol=1e-5, atol=1e-6):
    a = actual.numpy() if isinstance(actual, oar.Tensor) else np.asarray(actual)
    np.testing.assert_allclose(a, np.asarray(expected), rtol=rtol, atol=atol)
