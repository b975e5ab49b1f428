"""oar.fft against numpy.fft: every function, every norm, odd and even lengths,
cropping and padding (n / s), several axes, on cpu (liboar_fftw.so) and the
mock (reference DFT); gradients by finite differences in f64/c128, first
order and through the VJP rules again (second order); the error on a cpu
without the FFTW plugin."""
import os
import subprocess
import sys

import numpy as np
import pytest

import oar
from conftest import DEVICES

NORMS = ["backward", "ortho", "forward"]
RNG = np.random.default_rng(16)


def _fft_devices():
    out = []
    for d in DEVICES:
        try:
            oar.fft.fft(oar.to_tensor(np.ones(4, np.complex128), place=d))
            out.append(d)
        except oar.UnsupportedError:
            pass  # a cpu without liboar_fftw.so (test_error_without_the_plugin covers it)
    return out


FFT_DEVICES = _fft_devices()


@pytest.fixture(params=FFT_DEVICES)
def dev(request):
    previous = oar._C.get_device()
    oar.set_device(request.param)
    yield request.param
    oar._C.set_device(previous)


def crandn(*shape, dtype=np.complex128):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def randn(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def check(got, want, tol):
    got = got.numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    scale = max(1.0, float(np.abs(want).max()) if want.size else 1.0)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)


TOL = {np.complex128: 1e-10, np.float64: 1e-10, np.complex64: 2e-5, np.float32: 2e-5}


# ---- values against numpy.fft ----

ONE_D = [("fft", True), ("ifft", True), ("rfft", False), ("irfft", True), ("hfft", True), ("ihfft", False)]


@pytest.mark.parametrize("name,complex_input", ONE_D)
@pytest.mark.parametrize("length", [7, 8])
@pytest.mark.parametrize("n", [None, 5, 12])
@pytest.mark.parametrize("axis", [0, -1])
def test_one_dim_against_numpy(dev, name, complex_input, length, n, axis):
    shape = (length, 3) if axis == 0 else (3, length)
    x = crandn(*shape) if complex_input else randn(*shape)
    for norm in NORMS:
        want = getattr(np.fft, name)(x, n=n, axis=axis, norm=norm)
        check(getattr(oar.fft, name)(oar.to_tensor(x), n=n, axis=axis, norm=norm), want, TOL[np.complex128])


N_D = [("fftn", True), ("ifftn", True), ("rfftn", False), ("irfftn", True), ("hfftn", True), ("ihfftn", False)]


@pytest.mark.parametrize("name,complex_input", N_D)
@pytest.mark.parametrize("s,axes", [(None, None), (None, (0, 2)), (None, (2, 0)), ((4, 6), (1, 2)), ((3, 9), None),
                                    ((5,), (-2,))])
def test_n_dim_against_numpy(dev, name, complex_input, s, axes):
    x = crandn(3, 5, 6) if complex_input else randn(3, 5, 6)
    for norm in NORMS:
        want = _numpy_n(name, x, s, axes, norm)
        check(getattr(oar.fft, name)(oar.to_tensor(x), s=s, axes=axes, norm=norm), want, TOL[np.complex128])


def _numpy_n(name, x, s, axes, norm):
    """numpy.fft's n-D function; numpy has only the 1-D hermitian transforms, so hfftn / ihfftn are
    irfftn(conj) / conj(rfftn) with the norm's direction swapped (as numpy's hfft / ihfft)."""
    if axes is None and s is not None:  # the last len(s) axes (numpy 2 wants them spelled out)
        axes = tuple(range(x.ndim - len(s), x.ndim))
    if name not in ("hfftn", "ihfftn"):
        return getattr(np.fft, name)(x, s=s, axes=axes, norm=norm)
    swap = {"backward": "forward", "forward": "backward"}.get(norm, norm)
    if name == "hfftn":
        return np.fft.irfftn(np.conj(x), s=s, axes=axes, norm=swap)
    return np.conj(np.fft.rfftn(x, s=s, axes=axes, norm=swap))


@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2"])
def test_two_dim_against_numpy(dev, name):
    real_in = name in ("rfft2", "ihfft2")
    x = randn(2, 7, 6) if real_in else crandn(2, 7, 6)
    for s, axes in [(None, (-2, -1)), ((5, 8), (-2, -1)), (None, (0, 2))]:
        for norm in NORMS:
            want = _numpy_n(name[:-1] + "n", x, s, axes, norm)
            check(getattr(oar.fft, name)(oar.to_tensor(x), s=s, axes=axes, norm=norm), want, TOL[np.complex128])
    with pytest.raises(ValueError, match="axes must hold 2 integers"):
        getattr(oar.fft, name)(oar.to_tensor(x), axes=(0, 1, 2))


@pytest.mark.parametrize("np_dtype,oar_out", [(np.float32, "complex64"), (np.float64, "complex128"),
                                              (np.complex64, "complex64"), (np.int64, "complex64")])
def test_dtypes_and_promotion(dev, np_dtype, oar_out):
    x = (RNG.standard_normal((4, 9)) * 4).astype(np_dtype) if np_dtype != np.complex64 else crandn(4, 9, dtype=np_dtype)
    y = oar.fft.fft(oar.to_tensor(x))
    assert y.dtype.name == oar_out
    tol = 1e-10 if np_dtype == np.float64 else 2e-5
    check(y, np.fft.fft(x).astype(y.numpy().dtype), tol)
    if not np.iscomplexobj(x):
        r = oar.fft.rfft(oar.to_tensor(x))
        assert r.dtype.name == oar_out
        check(oar.fft.irfft(r, n=9), x.astype(np.float64 if np_dtype == np.float64 else np.float32), tol)


def test_rfft_of_complex_input_is_an_error(dev):
    with pytest.raises(TypeError, match="rfft: x must be real"):
        oar.fft.rfft(oar.to_tensor(crandn(4)))


def test_bad_arguments_raise_value_errors(dev):
    x = oar.to_tensor(crandn(4, 4))
    with pytest.raises(ValueError, match="norm is 'sideways'"):
        oar.fft.fft(x, norm="sideways")
    with pytest.raises(ValueError, match="n = 0 must be positive"):
        oar.fft.fft(x, n=0)
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        oar.fft.fft(x, axis=2)
    with pytest.raises(ValueError, match="repeated axis"):
        oar.fft.fftn(x, axes=(0, 0))


# ---- frequencies and shifts ----

@pytest.mark.parametrize("n", [1, 6, 7])
@pytest.mark.parametrize("d", [1.0, 0.25])
def test_fftfreq_and_rfftfreq(n, d):
    f = oar.fft.fftfreq(n, d)
    assert f.dtype.name == "float32"
    np.testing.assert_allclose(f.numpy(), np.fft.fftfreq(n, d), rtol=1e-6)
    np.testing.assert_allclose(oar.fft.rfftfreq(n, d, dtype="float64").numpy(), np.fft.rfftfreq(n, d), rtol=1e-15)
    # By hand: n = 6, d = 1 gives [0, 1, 2, -3, -2, -1] / 6.
    if n == 6 and d == 1.0:
        np.testing.assert_allclose(f.numpy(), np.array([0, 1, 2, -3, -2, -1]) / 6, rtol=1e-6)


@pytest.mark.parametrize("axes", [None, 0, (1,), (0, 1)])
def test_fftshift_and_ifftshift(dev, axes):
    x = np.arange(5 * 6, dtype=np.float64).reshape(5, 6)
    np.testing.assert_array_equal(oar.fft.fftshift(oar.to_tensor(x), axes).numpy(), np.fft.fftshift(x, axes))
    np.testing.assert_array_equal(oar.fft.ifftshift(oar.to_tensor(x), axes).numpy(), np.fft.ifftshift(x, axes))
    # By hand: the 5 bins [0, 1, 2, -2, -1] shift to [-2, -1, 0, 1, 2].
    f = oar.fft.fftfreq(5, 0.2, dtype="float64")
    np.testing.assert_allclose(oar.fft.fftshift(f).numpy(), [-2, -1, 0, 1, 2])


# ---- gradients by finite differences (f64 / c128) ----

def _real_pairing(v, y):
    """Re(sum(conj(v) * y)): the real loss whose gradient with respect to y is v (the convention)."""
    return float(np.real(np.sum(np.conj(v) * y)))


def _fd_gradient(loss, x, h=1e-3):
    """dL/dRe(x) + i dL/dIm(x) by central differences (exact up to rounding for a linear loss)."""
    g = np.zeros(x.shape, dtype=x.dtype)
    flat, gflat = x.reshape(-1), g.reshape(-1)
    for j in range(flat.size):
        steps = [1.0, 1j] if np.iscomplexobj(x) else [1.0]
        for step in steps:
            e = np.zeros_like(flat)
            e[j] = step * h
            d = (loss((flat + e).reshape(x.shape)) - loss((flat - e).reshape(x.shape))) / (2 * h)
            gflat[j] += d * (1 if step == 1.0 else 1j)
    return g


GRAD_CASES = [  # name, complex input, input shape, function
    ("fft", True, (6,), lambda x, norm: oar.fft.fft(x, norm=norm)),
    ("ifft-n", True, (6,), lambda x, norm: oar.fft.ifft(x, n=7, norm=norm)),
    ("rfft", False, (6,), lambda x, norm: oar.fft.rfft(x, norm=norm)),
    ("rfft-odd", False, (6,), lambda x, norm: oar.fft.rfft(x, n=5, norm=norm)),
    ("irfft-even", True, (6,), lambda x, norm: oar.fft.irfft(x, norm=norm)),
    ("irfft-odd", True, (5,), lambda x, norm: oar.fft.irfft(x, n=9, norm=norm)),
    ("hfft", True, (3,), lambda x, norm: oar.fft.hfft(x, n=5, norm=norm)),
    ("ihfft", False, (6,), lambda x, norm: oar.fft.ihfft(x, norm=norm)),
    ("fftn", True, (3, 4), lambda x, norm: oar.fft.fftn(x, norm=norm)),
    ("rfft2", False, (3, 4), lambda x, norm: oar.fft.rfft2(x, norm=norm)),
    ("irfft2", True, (3, 4), lambda x, norm: oar.fft.irfft2(x, s=(3, 6), norm=norm)),
    ("irfftn-odd", True, (3, 3), lambda x, norm: oar.fft.irfftn(x, s=(3, 5), axes=(1, 0), norm=norm)),
]
IDS = [c[0] for c in GRAD_CASES]
# Second order differentiates the VJP rules; those of r2c / c2r slice complex
# cotangents, whose own VJP needs scatter_add on complex (helper A's kernels,
# not merged yet), so the c2c transforms are checked here.
SECOND_ORDER = [c for c in GRAD_CASES if c[0] in ("fft", "fftn")] + [
    ("ifft", True, (5,), lambda x, norm: oar.fft.ifft(x, norm=norm)),
    ("ifft2", True, (3, 4), lambda x, norm: oar.fft.ifft2(x, norm=norm))]


def _grad_input(complex_input, shape):
    return crandn(*shape) if complex_input else randn(*shape)


@pytest.mark.parametrize("name,complex_input,shape,f", GRAD_CASES, ids=IDS)
@pytest.mark.parametrize("norm", NORMS)
def test_first_order_gradient(dev, name, complex_input, shape, f, norm):
    x_np = _grad_input(complex_input, shape)
    x = oar.to_tensor(x_np, stop_gradient=False)
    y = f(x, norm)
    y_np = y.numpy()
    v_np = crandn(*y_np.shape) if np.iscomplexobj(y_np) else randn(*y_np.shape)
    (gx,) = oar.grad(y, x, grad_outputs=oar.to_tensor(v_np))
    want = _fd_gradient(lambda xn: _real_pairing(v_np, f(oar.to_tensor(xn), norm).numpy()), x_np)
    assert gx.numpy().dtype == x_np.dtype
    np.testing.assert_allclose(gx.numpy(), want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name,complex_input,shape,f", SECOND_ORDER, ids=[c[0] for c in SECOND_ORDER])
def test_second_order_gradient(dev, name, complex_input, shape, f):
    """Differentiates the VJP rule itself: g(v) = vjp(v) is linear in the cotangent v, so
    d Re<u, g(v)> / dv by autodiff must match finite differences of g computed to first order."""
    norm = "ortho"
    x_np = _grad_input(complex_input, shape)
    x = oar.to_tensor(x_np, stop_gradient=False)
    y_np = f(oar.to_tensor(x_np), norm).numpy()
    v_np = crandn(*y_np.shape) if np.iscomplexobj(y_np) else randn(*y_np.shape)
    u_np = crandn(*x_np.shape) if complex_input else randn(*x_np.shape)
    v = oar.to_tensor(v_np, stop_gradient=False)
    (gx,) = oar.grad(f(x, norm), x, grad_outputs=v, create_graph=True)
    (gv,) = oar.grad(gx, v, grad_outputs=oar.to_tensor(u_np))

    def first_order(vn):
        xx = oar.to_tensor(x_np, stop_gradient=False)
        (g,) = oar.grad(f(xx, norm), xx, grad_outputs=oar.to_tensor(vn))
        return _real_pairing(u_np, g.numpy())

    np.testing.assert_allclose(gv.numpy(), _fd_gradient(first_order, v_np), rtol=1e-6, atol=1e-7)


# ---- planning from threads, and the cpu without the plugin ----

def test_transforms_from_two_threads_at_once():
    """Python threads calling into FFTW planning at once (the C++ test test_fft has four native threads)."""
    import threading
    if "cpu" not in FFT_DEVICES:
        pytest.skip("no liboar_fftw.so")
    errors = []

    def work(seed):
        rng = np.random.default_rng(seed)
        try:
            for n in range(30 + seed, 60 + seed, 3):
                x = rng.standard_normal((2, n)) + 1j * rng.standard_normal((2, n))
                got = oar.fft.fft(oar.to_tensor(x, place="cpu")).numpy()
                np.testing.assert_allclose(got, np.fft.fft(x), rtol=1e-10, atol=1e-10 * n)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(s,)) for s in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_error_without_the_plugin():
    """OAR_FFTW_DISABLE=1 makes liboar_fftw.so register nothing, as a build without FFTW: the cpu error
    names the plugin that provides the kernels; the mock keeps its reference DFT."""
    code = ("import numpy as np, oar\n"
            "x = oar.to_tensor(np.ones(4, np.complex64), place='mock')\n"
            "print('mock', oar.fft.fft(x).numpy()[0].real)\n"
            "try:\n"
            "    oar.fft.fft(oar.to_tensor(np.ones(4, np.complex64), place='cpu'))\n"
            "except oar.UnsupportedError as e:\n"
            "    print('error', e)\n")
    env = dict(os.environ, OAR_FFTW_DISABLE="1", OAR_PLUGIN_PROBE_CACHE="")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "mock 4.0" in out.stdout
    assert ("error fft_c2c: device type 'cpu' has no kernel for it: the cpu's FFT kernels come from the plugin "
            "liboar_fftw.so") in out.stdout


def _fft_process(env_extra, shape=(300, 256)):
    """rfft2 of a `shape` f32 array in a fresh process; (its largest error against numpy, its stderr)."""
    code = ("import numpy as np, oar\n"
            f"x = np.random.default_rng(0).standard_normal({shape!r}).astype(np.float32)\n"
            "y = oar.fft.rfft2(oar.to_tensor(x)).numpy()\n"
            "print('err', float(np.abs(y - np.fft.rfft2(x)).max() / np.abs(np.fft.rfft2(x)).max()))\n")
    env = dict(os.environ, OAR_LOG_LEVEL="info", OAR_PLUGIN_PROBE_CACHE="", **env_extra)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return float(out.stdout.split("err")[1]), out.stderr


def test_fftw_wisdom_is_measured_once_and_kept(tmp_path):
    """Note [FFTW planning and wisdom]: a large problem is measured once; the wisdom file makes a later
    process plan it at once; a small problem is never measured; OAR_FFTW_PLANNER=estimate measures none."""
    env = {"OAR_FFTW_WISDOM": str(tmp_path), "OAR_FFTW_PLANNER": "auto"}
    err, log = _fft_process(env)
    assert err < 1e-6
    assert "measuring FFTW plans for a r2c transform of [300, 256] x 1" in log
    wisdom = tmp_path / "fftw-wisdom-f32"
    assert wisdom.read_text().startswith("(fftw-3.3")
    assert not list(tmp_path.glob("*.tmp.*"))  # written through a temporary name, renamed
    err, log = _fft_process(env)
    assert err < 1e-6 and "measuring" not in log
    err, log = _fft_process(env, shape=(64, 64))  # 4096 points: below the measuring threshold
    assert err < 1e-6 and "measuring" not in log
    err, log = _fft_process({"OAR_FFTW_WISDOM": str(tmp_path / "other"), "OAR_FFTW_PLANNER": "estimate"})
    assert err < 1e-6 and "measuring" not in log and not (tmp_path / "other").exists()


def test_fftw_bad_wisdom_and_options(tmp_path):
    # An unreadable wisdom file is ignored (and replaced by a valid one), never trusted.
    (tmp_path / "fftw-wisdom-f32").write_text("(fftw-3.3.10 fftwf_wisdom #x0 garbage")
    err, log = _fft_process({"OAR_FFTW_WISDOM": str(tmp_path), "OAR_FFTW_PLANNER": "auto"})
    assert err < 1e-6
    assert f"ignoring the unreadable FFTW wisdom file '{tmp_path}/fftw-wisdom-f32'" in log
    assert (tmp_path / "fftw-wisdom-f32").read_text().startswith("(fftw-3.3")
    # A wisdom directory that cannot be made: the plan is kept for the process, the result is right.
    (tmp_path / "file").write_text("")
    err, log = _fft_process({"OAR_FFTW_WISDOM": str(tmp_path / "file" / "sub"), "OAR_FFTW_PLANNER": "auto"})
    assert err < 1e-6 and "could not write FFTW wisdom" in log
    # A planner name that does not exist stops the plugin with a sentence naming the option.
    code = "import oar, numpy as np\noar.fft.fft(oar.to_tensor(np.ones(4, np.complex64)))\n"
    for name, value in (("OAR_FFTW_PLANNER", "fastest"), ("OAR_FFTW_TIMELIMIT", "-1")):
        env = dict(os.environ, OAR_PLUGIN_PROBE_CACHE="", **{name: value})
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode != 0
        assert f"oar-fftw: {name} is '{value}' but must be" in out.stderr
