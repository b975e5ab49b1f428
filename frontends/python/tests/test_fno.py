"""The FNO example (examples/python/fno_burgers.py): its Burgers solver
against the exact Cole-Hopf solution (the numpy version of the scheme) and
against that numpy version (the oar.fft version), then a small FNO trained
briefly to a looser bound than the example's 5e-2, saved and reloaded with
its complex64 parameters, and its exported program run by oar.jit.load and
the C++ oar-run with the eager outputs."""
import os
import sys

import numpy as np
import pytest

import oar

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "python"))
import fno_burgers  # noqa: E402

N = 128
X = 2 * np.pi * np.arange(N) / N
# phi = 1 + 0.9 cos(x + 0.3) + 0.05 cos(3 x + 1.1): max |u0| = 0.71 at nu = 0.1.
COLE_HOPF = ([0.9, 0.05], [1, 3], [0.3, 1.1])


# The oar parts need oar.fft (helper D) and the complex ops (helper A).
needs_fft = pytest.mark.skipif(not hasattr(oar, "fft"), reason="oar.fft is not in this build")


@pytest.fixture
def cpu():
    previous = oar._C.get_device()
    oar.set_device("cpu")
    yield
    oar._C.set_device(previous)


def test_numpy_scheme_matches_the_cole_hopf_solution_to_fourth_order():
    u0 = fno_burgers.cole_hopf(X, 0.0, 0.1, *COLE_HOPF)
    exact = fno_burgers.cole_hopf(X, 1.0, 0.1, *COLE_HOPF)
    errors = []
    for dt in (0.04, 0.02):
        u1 = fno_burgers.burgers_solve_numpy(u0, nu=0.1, t_end=1.0, dt=dt)
        errors.append(np.abs(u1 - exact).max() / np.abs(exact).max())
    assert errors[1] < 1e-7, errors
    # RK4: halving dt divides the error by about 2^4 = 16.
    assert 10 < errors[0] / errors[1] < 24, errors


def test_numpy_scheme_conserves_the_mean_and_dissipates_energy():
    u0 = fno_burgers.initial_conditions(4, N, np.random.default_rng(5)) + 0.2
    u1 = fno_burgers.burgers_solve_numpy(u0)
    np.testing.assert_allclose(u1.mean(axis=1), u0.mean(axis=1), rtol=0, atol=1e-12)
    # d/dt of the energy is -nu * integral u_x^2 < 0 for non-constant u.
    assert np.all((u1**2).sum(axis=1) < (u0**2).sum(axis=1))


@needs_fft
def test_oar_fft_solver_matches_the_numpy_scheme_and_cole_hopf(cpu):
    u0 = np.stack([fno_burgers.cole_hopf(X, 0.0, 0.1, *COLE_HOPF),
                   fno_burgers.initial_conditions(1, N, np.random.default_rng(1))[0]])
    got = fno_burgers.burgers_solve(oar.to_tensor(u0), dt=0.02)
    assert got.dtype == oar.float64 and got.shape == [2, N]
    want = fno_burgers.burgers_solve_numpy(u0, dt=0.02)
    np.testing.assert_allclose(got.numpy(), want, rtol=0, atol=1e-12)
    exact = fno_burgers.cole_hopf(X, 1.0, 0.1, *COLE_HOPF)
    assert np.abs(got.numpy()[0] - exact).max() < 1e-7


@needs_fft
def test_small_fno_trains_saves_reloads_and_runs_in_oar_run(cpu, tmp_path):
    # The identity map (u1 = u0) is off by about 0.4; a briefly trained
    # small FNO must reach 0.1 (torch reaches about 0.04 with this setup; the
    # example's default run about 1e-2).
    error, net, data, _ = fno_burgers.train(n_train=100, n_test=40, width=16, modes=8, epochs=8,
                                           batch_size=10, lr=5e-3, quiet=True)
    assert error < 1e-1, f"relative L2 test error {error:.3e}"
    weights = [p for _, p in net.named_parameters() if p.dtype == oar.complex64]
    assert len(weights) == 4 and weights[0].shape == [8, 16, 16]

    path = str(tmp_path / "fno.safetensors")
    oar.save(net.state_dict(), path)
    fresh = fno_burgers.FNO1d(16, 8, seed=99)
    fresh.set_state_dict(oar.load(path))
    x = data["x_test"]
    with oar.no_grad():
        eager = net(x).numpy()
        np.testing.assert_array_equal(fresh(x).numpy(), eager)
        np.testing.assert_array_equal(fresh.spectral[0].weight.numpy(), net.spectral[0].weight.numpy())

    program, loaded, ran = fno_burgers.export_and_run(net, x, str(tmp_path), fno_burgers.find_oar_run())
    np.testing.assert_allclose(loaded, eager, rtol=1e-4, atol=1e-5)
    text = open(program + ".json").read()
    assert '"c64"' in text and "fft_r2c" in text and "fft_c2r" in text
    if ran is None:
        pytest.skip("oar-run is not built (build/bin/oar-run or OAR_RUN_BIN); the C++ check did not run")
    np.testing.assert_allclose(ran, eager, rtol=1e-4, atol=1e-5)

