"""Tensor.numpy() and np.asarray(tensor) share memory on cpu (Note [numpy views]
in frontends/python/src/tensor.cpp), as PyTorch's numpy() does; they copy on
the mock (not host-addressable), for bfloat16 and for np.array(t); and
to_tensor(ndarray) copies, as Paddle's does."""
import gc

import numpy as np
import pytest

import oar


def test_numpy_is_a_view_on_cpu():
    x = oar.to_tensor(np.arange(6, dtype=np.float32).reshape(2, 3), place="cpu")
    a = x.numpy()
    b = np.asarray(x)
    assert np.shares_memory(a, b)
    a[0, 1] = 42.0
    assert x.numpy()[0, 1] == 42.0
    assert float((x * 1).sum()) == pytest.approx(0 + 42 + 2 + 3 + 4 + 5)
    # a reshape shares storage, so its numpy() is the same memory too
    assert np.shares_memory(x.reshape([6]).numpy(), a)


def test_numpy_view_keeps_the_storage_alive():
    x = oar.to_tensor(np.full((1000,), 7.0, dtype=np.float64), place="cpu")
    a = x.numpy()
    del x
    gc.collect()
    for _ in range(20):   # the allocator must not hand the block to another tensor
        oar.zeros([1000], dtype="float64") + 1.0
    assert np.all(a == 7.0)


def test_copies_where_a_view_is_impossible():
    x = oar.to_tensor(np.ones((2, 2), dtype=np.float32), place="cpu")
    assert not np.shares_memory(np.array(x), x.numpy())
    assert not np.shares_memory(np.array(x, dtype=np.float64), x.numpy())
    bf = x.astype("bfloat16")
    assert bf.numpy().dtype == np.float32
    assert not np.shares_memory(bf.numpy(), bf.numpy())


@pytest.mark.skipif("mock" not in oar.get_all_device_type(), reason="no mock device")
def test_mock_copies():
    x = oar.to_tensor(np.ones((3,), dtype=np.float32), place="mock")
    a = x.numpy()
    a[0] = 5.0
    assert x.numpy()[0] == 1.0


def test_to_tensor_copies_the_ndarray():
    a = np.arange(4, dtype=np.float32)
    x = oar.to_tensor(a, place="cpu")
    a[0] = 100.0
    assert x.numpy()[0] == 0.0


def test_from_numpy_shares_memory_both_ways():
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    x = oar.from_numpy(a)
    assert x.shape == [2, 3] and x.dtype == oar.float64 and x.place.is_cpu_place()
    a[1, 2] = -1.0                    # numpy -> tensor
    assert float(x.sum()) == pytest.approx(0 + 1 + 2 + 3 + 4 - 1)
    x.numpy()[0, 0] = 10.0            # tensor -> numpy
    assert a[0, 0] == 10.0
    assert np.shares_memory(x.numpy(), a)


def test_from_numpy_keeps_the_array_alive_and_ops_make_new_tensors():
    x = oar.from_numpy(np.full((256,), 3, dtype=np.int32))
    gc.collect()
    y = x * 2
    assert y.numpy().tolist() == [6] * 256
    assert not np.shares_memory(y.numpy(), x.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8, np.uint8, np.int32, np.int64, np.bool_])
def test_dlpack_round_trip_every_dtype(dtype):
    a = (np.arange(12) % 3).astype(dtype).reshape(3, 4)
    x = oar.utils.dlpack.from_dlpack(a)          # an object with __dlpack__
    np.testing.assert_array_equal(x.numpy(), a)
    assert np.shares_memory(x.numpy(), a)
    b = np.from_dlpack(x)                        # numpy consumes oar's capsule
    assert np.shares_memory(b, a)
    y = oar.utils.dlpack.from_dlpack(oar.utils.dlpack.to_dlpack(x))   # capsule form
    assert np.shares_memory(y.numpy(), a)


def test_dlpack_bad_input_is_an_error():
    with pytest.raises(ValueError, match="not C-contiguous"):
        oar.from_numpy(np.zeros((4, 4), np.float32)[:, ::2])
    ro = np.zeros(3, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        oar.from_numpy(ro)
    with pytest.raises(TypeError, match="dtype"):
        oar.from_numpy(np.zeros(3, np.uint16))  # complex64 is supported since ABI 1.3
    with pytest.raises(TypeError, match="ndarray"):
        oar.from_numpy([1, 2])
    cap = oar.utils.dlpack.to_dlpack(oar.ones([2]))
    oar.utils.dlpack.from_dlpack(cap)
    with pytest.raises(ValueError, match="consumed once"):
        oar.utils.dlpack.from_dlpack(cap)
    big = oar.to_tensor(np.ones((2, 2), dtype=np.float32))
    with pytest.raises(BufferError, match="kDLCPU"):
        big.__dlpack__(dl_device=(2, 0))
    assert not np.shares_memory(np.from_dlpack(big, copy=True), big.numpy())


@pytest.mark.skipif("mock" not in oar.get_all_device_type(), reason="no mock device")
def test_dlpack_refuses_a_mock_tensor():
    x = oar.to_tensor(np.ones((3,), dtype=np.float32), place="mock")
    with pytest.raises(BufferError, match="cannot address"):
        oar.utils.dlpack.to_dlpack(x)
