"""__getitem__ / __setitem__ against numpy."""
import numpy as np
import pytest

import oar
from conftest import assert_close

A = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
KEYS = [
    0, -1, (1, 2), (1, 2, 3), slice(1, 3), (slice(None), 1), (Ellipsis, 2), (None, 1), (1, None, slice(0, 2)),
    (slice(None, None, 2), slice(1, None)), (slice(None), slice(None, None, -1)), [2, 0], (slice(None), [3, 1]),
    (Ellipsis, None), ([0, 2], [1, 3]), (slice(0, 0),),
]


@pytest.mark.parametrize("key", KEYS, ids=[repr(k) for k in KEYS])
def test_getitem(device, key):
    x = oar.to_tensor(A)
    assert_close(x[key], A[key])


def test_getitem_tensor_and_mask(device):
    x = oar.to_tensor(A)
    assert_close(x[oar.to_tensor([2, 0])], A[[2, 0]])
    assert_close(x[x > 30], A[A > 30])
    with pytest.raises(IndexError):
        x[3]
    with pytest.raises(IndexError):
        x[0, 0, 0, 0]


SET_KEYS = [0, (1, 2), (slice(None), 1), (Ellipsis, slice(1, 3)), [2, 0], (slice(None, None, 2), 0, slice(None, None, -2))]


@pytest.mark.parametrize("key", SET_KEYS, ids=[repr(k) for k in SET_KEYS])
def test_setitem(device, key):
    x = oar.to_tensor(A)
    want = A.copy()
    want[key] = -1.0
    x[key] = -1.0
    assert_close(x, want)
    value = np.full(A[key].shape, 7.0, np.float32) + np.arange(A[key].size, dtype=np.float32).reshape(A[key].shape)
    want[key] = value
    x[key] = oar.to_tensor(value)
    assert_close(x, want)


def test_setitem_mask_and_broadcast(device):
    x = oar.to_tensor(A)
    want = A.copy()
    want[want > 40] = 0
    x[x > 40] = 0
    assert_close(x, want)
    want[:, 0] = np.arange(5)
    x[:, 0] = oar.to_tensor(np.arange(5, dtype=np.float32))
    assert_close(x, want)
    b = oar.to_tensor([True, False, True])
    b[1] = True
    assert b.numpy().tolist() == [True, True, True]


def test_setitem_autograd(device):
    w = oar.to_tensor([1.0, 2.0, 3.0], stop_gradient=False)
    v = oar.to_tensor(10.0, stop_gradient=False)
    y = w * 2
    y[1] = v * 3
    y.sum().backward()
    assert_close(w.grad, [2.0, 0.0, 2.0])
    assert_close(v.grad, 3.0)
    with pytest.raises(RuntimeError, match="inplace"):
        w[0] = 5.0
    with oar.no_grad():
        w[0] = 5.0
    assert_close(w, [5.0, 2.0, 3.0])
    assert not w.stop_gradient


# ---- nonzero: an op with a data-dependent size (Note [nonzero]) ----

@pytest.mark.parametrize("a", [
    np.array([[0, 1, 2], [3, 0, 0]], np.float32),
    np.zeros((2, 3), np.float32),
    np.array([True, False, True]),
    np.array([0, 7, 0, 1], np.int64),
])
def test_nonzero_matches_numpy(a):
    got = oar.nonzero(oar.to_tensor(a))
    assert got.dtype == oar.int64
    np.testing.assert_array_equal(got.numpy(), np.argwhere(a))
    parts = oar.nonzero(oar.to_tensor(a), as_tuple=True)
    assert len(parts) == a.ndim
    for p, q in zip(parts, np.nonzero(a)):
        np.testing.assert_array_equal(p.numpy(), q)


def test_nonzero_of_a_scalar():
    assert oar.nonzero(oar.to_tensor(np.float32(5.0))).shape == [1, 0]
    assert oar.nonzero(oar.to_tensor(np.float32(0.0))).shape == [0, 0]
    (only,) = oar.nonzero(oar.to_tensor(np.float32(5.0)), as_tuple=True)
    assert only.numpy().tolist() == [0]


def test_nonzero_under_to_static_counts_each_run():
    """One trace serves inputs with 3, 0 and 4 positive entries: the count is the run's."""
    def f(x, w):
        idx = oar.nonzero(x > 0)[:, 0]
        return (oar.index_select(x, idx) * w).sum()

    g = oar.jit.to_static(f, full_graph=True)
    w = oar.to_tensor(np.float32(2.0))
    for v, want in [([1., -1, 2, 3], 12.0), ([-1., -1, -1, -1], 0.0), ([5., 6, 7, 8], 52.0)]:
        x = oar.to_tensor(np.array(v, np.float32))
        assert float(f(x, w)) == want
        assert float(g(x, w)) == want
    assert g.trace_count == 1
