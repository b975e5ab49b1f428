"""Complex ops in Python (paddle.complex, real, imag, conj, angle, as_real,
as_complex, polar, abs, arithmetic, math, sum/mean, matmul) against numpy,
complex scalars, save/load, and gradients by finite differences in
complex128 (docs/complex_gradients.md)."""
import numpy as np
import pytest

import oar

Z = np.array([[0.5 - 1.25j, -2 + 0.75j, 1.5 + 2j], [-0.25 - 0.5j, 3 + 0.1j, -1 + 1j]])


def test_parts_and_constructors(device):
    z = oar.to_tensor(Z)
    assert z.dtype == oar.complex128
    np.testing.assert_array_equal(oar.real(z).numpy(), Z.real)
    np.testing.assert_array_equal(z.imag().numpy(), Z.imag)
    np.testing.assert_array_equal(z.conj().numpy(), np.conj(Z))
    np.testing.assert_allclose(oar.abs(z).numpy(), np.abs(Z), rtol=1e-14)
    assert oar.abs(z).dtype == oar.float64
    np.testing.assert_allclose(oar.angle(z).numpy(), np.angle(Z), rtol=1e-14)
    np.testing.assert_array_equal(oar.as_real(z).numpy(), np.stack([Z.real, Z.imag], -1))
    np.testing.assert_array_equal(oar.as_complex(oar.as_real(z)).numpy(), Z)
    c = oar.complex(oar.to_tensor([1.0, 2.0]), oar.to_tensor([[3.0], [-4.0]]))
    assert c.dtype == oar.complex64 and c.shape == [2, 2]
    np.testing.assert_array_equal(c.numpy(), np.array([[1 + 3j, 2 + 3j], [1 - 4j, 2 - 4j]], np.complex64))
    p = oar.polar(oar.to_tensor([2.0, 1.0], dtype="float64"), oar.to_tensor([np.pi / 2, np.pi], dtype="float64"))
    np.testing.assert_allclose(p.numpy(), [2j, -1], atol=1e-15)
    assert z.is_complex() and oar.is_complex(z) and not oar.is_complex(oar.ones([1]))
    x = oar.to_tensor([-1.5, 2.0])
    np.testing.assert_array_equal(oar.real(x).numpy(), [-1.5, 2.0])
    np.testing.assert_array_equal(oar.imag(x).numpy(), [0, 0])
    np.testing.assert_allclose(oar.angle(x).numpy(), [np.pi, 0])


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_arithmetic_and_math_match_numpy(device, dtype):
    a = Z.astype(dtype)
    b = np.array([1 + 1j, -0.5 + 2j, 0.25 - 3j], dtype)
    ta, tb = oar.to_tensor(a), oar.to_tensor(b)
    rtol = 1e-5 if dtype == "complex64" else 1e-13
    for got, want in [(ta + tb, a + b), (ta - tb, a - b), (ta * tb, a * b), (ta / tb, a / b), (-ta, -a),
                      (oar.exp(ta), np.exp(a)), (oar.log(ta), np.log(a)), (oar.sqrt(ta), np.sqrt(a)),
                      (oar.sin(ta), np.sin(a)), (oar.cos(ta), np.cos(a)), (oar.tanh(ta), np.tanh(a)),
                      (oar.sum(ta, axis=1), a.sum(1)), (oar.mean(ta), a.mean()), (ta.sum(), a.sum())]:
        assert got.dtype == ta.dtype
        np.testing.assert_allclose(got.numpy(), want, rtol=rtol, atol=rtol)
    np.testing.assert_array_equal((ta == ta).numpy(), np.ones((2, 3), bool))
    np.testing.assert_array_equal((tb != oar.conj(tb)).numpy(), [True, True, True])


def test_promotion_with_real_tensors_and_python_scalars(device):
    z64 = oar.to_tensor(np.array([1 + 2j, -1j], np.complex64))
    assert (z64 * oar.to_tensor([2.0, 3.0])).dtype == oar.complex64
    assert (z64 * oar.to_tensor([2.0, 3.0], dtype="float64")).dtype == oar.complex128
    assert (z64 + 1.5).dtype == oar.complex64
    np.testing.assert_allclose((z64 * 2).numpy(), [2 + 4j, -2j])
    x = oar.to_tensor([1.0, 2.0])
    y = x * 1j
    assert y.dtype == oar.complex64
    np.testing.assert_allclose(y.numpy(), [1j, 2j])
    np.testing.assert_allclose((x + (2 - 1j)).numpy(), [3 - 1j, 4 - 1j])
    np.testing.assert_allclose(((1 + 1j) * x).numpy(), [1 + 1j, 2 + 2j])
    np.testing.assert_allclose((oar.to_tensor([1, 2]) * 1j).numpy(), [1j, 2j])  # int tensor + complex scalar


def test_matmul_on_the_mock_reference():
    previous = oar._C.get_device()
    try:
        oar.set_device("mock")
        a = Z.astype(np.complex64)
        b = np.array([[1, 1j], [2 - 1j, 0.5 + 0.5j], [-1, -2j]], np.complex64)
        np.testing.assert_allclose(oar.matmul(oar.to_tensor(a), oar.to_tensor(b)).numpy(), a @ b, rtol=1e-5)
    finally:
        oar._C.set_device(previous)


def test_errors_name_the_op(device):
    z = oar.to_tensor(Z)
    with pytest.raises(TypeError, match="complex numbers have no order"):  # a dtype error
        z < z
    with pytest.raises(ValueError, match="as_complex: the last dim of x must be 2"):
        oar.as_complex(oar.ones([3]))


def test_save_and_load_complex(tmp_path):
    z = oar.to_tensor(Z.astype(np.complex64))
    path = str(tmp_path / "z.pdparams")
    oar.save({"z": z, "w": oar.to_tensor(Z)}, path)
    back = oar.load(path)
    assert back["z"].dtype == oar.complex64 and back["w"].dtype == oar.complex128
    np.testing.assert_array_equal(back["z"].numpy(), Z.astype(np.complex64))
    np.testing.assert_array_equal(back["w"].numpy(), Z)


def _numeric_grad(loss, z, h=1e-6):
    g = np.zeros_like(z)
    for k in np.ndindex(z.shape):
        parts = []
        for step in (h, 1j * h):
            zp, zm = z.copy(), z.copy()
            zp[k] += step
            zm[k] -= step
            parts.append((loss(zp) - loss(zm)) / (2 * h))
        g[k] = parts[0] + 1j * parts[1]
    return g


def _loss(y):
    """A real loss of a complex or real output: sum(w1 * real(y) + w2 * imag(y)), fixed weights."""
    n = int(np.prod(y.shape))
    w1 = oar.to_tensor(np.linspace(0.3, 0.8, n).reshape(y.shape), dtype="float64")
    out = oar.sum(oar.real(y) * w1)
    if y.is_complex():
        w2 = oar.to_tensor(np.linspace(-0.7, 0.3, n).reshape(y.shape), dtype="float64")
        out = out + oar.sum(oar.imag(y) * w2)
    return out


CASES = {
    "exp": oar.exp, "log": oar.log, "sqrt": oar.sqrt, "tanh": oar.tanh,
    "abs": oar.abs, "angle": oar.angle, "conj": oar.conj, "real": oar.real, "imag": oar.imag,
    "z*z/conj(z)": lambda z: z * z / oar.conj(z),
    "scalar": lambda z: (2 - 1j) * z + 1j,
    "sum": lambda z: oar.sum(z * z, axis=0),
    "as_real": lambda z: oar.as_real(z) * 2,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_by_finite_differences(device, name):
    f = CASES[name]

    def loss_np(v):
        with oar.no_grad():
            return float(_loss(f(oar.to_tensor(v))).numpy())

    z = oar.to_tensor(Z, stop_gradient=False)
    _loss(f(z)).backward()
    assert z.grad.dtype == oar.complex128
    np.testing.assert_allclose(z.grad.numpy(), _numeric_grad(loss_np, Z), rtol=1e-6, atol=1e-7)


def test_gradient_of_abs_squared_is_2z_and_sgd_descends(device):
    z = oar.to_tensor(Z, stop_gradient=False)
    oar.sum(oar.abs(z) ** 2).backward()
    np.testing.assert_allclose(z.grad.numpy(), 2 * Z, rtol=1e-12)
    p = oar.to_tensor(np.array([1 + 1j, -2j, 3], np.complex64), stop_gradient=False)
    target = oar.to_tensor(np.array([0.5j, 1, -1 + 1j], np.complex64))
    opt = oar.optimizer.SGD(learning_rate=0.25, parameters=[p])
    for _ in range(40):
        loss = oar.sum(oar.abs(p - target) ** 2)
        loss.backward()
        opt.step()
        opt.clear_grad()
    np.testing.assert_allclose(p.numpy(), target.numpy(), atol=1e-5)


def test_adam_treats_a_complex_parameter_as_its_real_and_imaginary_parts(device):
    """Adam on z (complex64) takes the same steps as Adam on as_real(z) (float32 pairs)."""
    start = np.array([1 + 1j, -2j, 3 - 0.5j], np.complex64)
    target = np.array([0.5j, 1, -1 + 1j], np.complex64)
    w = oar.to_tensor([1.0, 2.0, 0.5])
    z = oar.to_tensor(start, stop_gradient=False)
    q = oar.to_tensor(np.stack([start.real, start.imag], -1), stop_gradient=False)
    tz = oar.to_tensor(target)
    tq = oar.to_tensor(np.stack([target.real, target.imag], -1))
    opt_z = oar.optimizer.Adam(learning_rate=0.1, parameters=[z])
    opt_q = oar.optimizer.Adam(learning_rate=0.1, parameters=[q])
    for _ in range(5):
        oar.sum(oar.abs(z - tz) ** 2 * w).backward()
        opt_z.step()
        opt_z.clear_grad()
        oar.sum(oar.sum((q - tq) ** 2, axis=-1) * w).backward()
        opt_q.step()
        opt_q.clear_grad()
    np.testing.assert_allclose(oar.as_real(z).numpy(), q.numpy(), rtol=1e-5, atol=1e-6)
