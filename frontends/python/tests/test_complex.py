"""complex64 / complex128: dtypes, numpy and DLPack interop, Python complex
scalars, casts, fills, printing and data movement (milestone A1)."""
import numpy as np
import pytest

import oar


def test_complex_dtypes_and_names():
    assert oar.complex64.name == "complex64" and oar.complex128.name == "complex128"
    assert oar.complex64.itemsize == 8 and oar.complex128.itemsize == 16
    assert oar.complex64.is_complex and not oar.complex64.is_floating_point
    assert not oar.float64.is_complex
    assert oar.framework.convert_dtype("complex128") == oar.complex128
    assert oar.framework.convert_dtype("c64") == oar.complex64
    assert oar.framework.convert_dtype(np.complex64) == oar.complex64
    assert oar.framework.convert_dtype(complex) == oar.complex64
    assert oar._C.promote_types(oar.complex64, oar.float64) == oar.complex128
    assert oar._C.promote_types(oar.float32, oar.complex64) == oar.complex64


@pytest.mark.parametrize("np_dtype", [np.complex64, np.complex128])
def test_numpy_round_trip(device, np_dtype):
    a = (np.arange(6).reshape(2, 3) + 1j * (10 - np.arange(6)).reshape(2, 3)).astype(np_dtype)
    t = oar.to_tensor(a)
    assert t.dtype == (oar.complex64 if np_dtype == np.complex64 else oar.complex128)
    assert t.shape == [2, 3]
    back = t.numpy()
    assert back.dtype == np_dtype
    np.testing.assert_array_equal(back, a)
    # Data movement keeps both parts.
    np.testing.assert_array_equal(t.transpose([1, 0]).numpy(), a.T)
    np.testing.assert_array_equal(t[:, 1:].numpy(), a[:, 1:])
    np.testing.assert_array_equal(oar.concat([t, t], axis=0).numpy(), np.concatenate([a, a]))
    np.testing.assert_array_equal(t.reshape([3, 2]).numpy(), a.reshape(3, 2))


def test_python_complex_scalars_and_lists(device):
    z = oar.to_tensor([1 + 2j, -0.5j])
    assert z.dtype == oar.complex64  # the default float is float32
    np.testing.assert_array_equal(z.numpy(), np.array([1 + 2j, -0.5j], np.complex64))
    assert oar.to_tensor(3 - 4j).item() == 3 - 4j
    assert oar.to_tensor([1j], dtype="complex128").dtype == oar.complex128
    previous = oar.get_default_dtype()
    try:
        oar.set_default_dtype("float64")
        assert oar.to_tensor([2j]).dtype == oar.complex128
    finally:
        oar.set_default_dtype(previous)


def test_cast_real_and_complex(device):
    x = oar.to_tensor([1.5, -2.0, 0.0])
    z = x.astype("complex64")
    np.testing.assert_array_equal(z.numpy(), np.array([1.5, -2, 0], np.complex64))
    w = oar.to_tensor(np.array([2.75 + 1j, -1.5 - 4j, 3j, 0], np.complex128))
    # complex -> real takes the real part (Paddle's cast); -> bool: either part nonzero.
    np.testing.assert_array_equal(w.astype("float32").numpy(), np.array([2.75, -1.5, 0, 0], np.float32))
    np.testing.assert_array_equal(w.astype("int64").numpy(), np.array([2, -1, 0, 0]))
    np.testing.assert_array_equal(w.astype("bool").numpy(), np.array([True, True, True, False]))
    np.testing.assert_array_equal(w.astype("complex64").numpy(), w.numpy().astype(np.complex64))


def test_full_zeros_ones_complex(device):
    np.testing.assert_array_equal(oar.full([2], 1.5 - 2j).numpy(), np.full(2, 1.5 - 2j, np.complex64))
    np.testing.assert_array_equal(oar.full([2], 3, dtype="complex128").numpy(), np.full(2, 3, np.complex128))
    np.testing.assert_array_equal(oar.zeros([3], dtype="complex64").numpy(), np.zeros(3, np.complex64))
    np.testing.assert_array_equal(oar.ones([1], dtype=oar.complex128).numpy(), np.ones(1, np.complex128))
    z = oar.full([2, 2], 1j, dtype="complex128")
    np.testing.assert_array_equal(oar.zeros_like(z).numpy(), np.zeros((2, 2), np.complex128))
    np.testing.assert_array_equal(oar.full_like(z, -1 + 0.25j).numpy(), np.full((2, 2), -1 + 0.25j))


def test_printing_shows_both_parts(device):
    z = oar.to_tensor(np.array([1 + 2j, -0.5 - 3j], np.complex64))
    text = repr(z)
    assert "dtype=complex64" in text
    assert text.endswith("[ (1.00000000+2.00000000j), (-0.50000000-3.00000000j)])")  # Paddle 3.3's output
    assert "1+2j, -0.5-3j" in oar._C.Tensor._str(z)


def test_dlpack_exchange_of_complex():
    a = np.array([[1 + 1j, 2 - 2j]], np.complex128)
    t = oar.from_dlpack(a)  # shares memory
    assert t.dtype == oar.complex128
    a[0, 0] = 5 + 6j
    assert t.numpy()[0, 0] == 5 + 6j
    back = np.from_dlpack(oar.to_tensor(np.array([0.5j], np.complex64)))
    assert back.dtype == np.complex64 and back[0] == 0.5j
