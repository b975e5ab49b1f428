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
