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


def _nonzero_rows(mask):
    return oar.to_tensor(np.array(mask, dtype=bool))


def test_index_add_of_a_nonzero_count_under_to_static():
    """index_add along axis 0 and 1 with nonzero's rows: one trace for counts 2, 0 and 4, values and
    gradients equal to numpy's (the traced path is the op scatter_add, nothing read at the count)."""
    x0 = np.arange(12, dtype=np.float32).reshape(4, 3)

    def f(x, m):
        rows = oar.nonzero(m).flatten()
        a = oar.index_add(oar.zeros_like(x), rows, 0, oar.index_select(x, rows) * 2.0)
        cols = oar.nonzero(m[:3]).flatten()
        b = oar.index_add(x, cols, 1, oar.index_select(x, cols, axis=1))
        return a, b

    g = oar.jit.to_static(f, full_graph=True)
    for mask in ([1, 0, 1, 0], [0, 0, 0, 0], [1, 1, 1, 1]):
        x = oar.to_tensor(x0)
        x.stop_gradient = False
        a, b = g(x, _nonzero_rows(mask))
        m = np.array(mask, bool)
        want_a = np.where(m[:, None], 2 * x0, 0)
        want_b = x0 * np.where(m[:3], 2, 1)[None, :]
        np.testing.assert_array_equal(a.numpy(), want_a)
        np.testing.assert_array_equal(b.numpy(), want_b)
        (a.sum() + b.sum()).backward()
        want_grad = np.where(m[:, None], 2.0, 0.0) + np.where(m[:3], 2.0, 1.0)[None, :]
        np.testing.assert_array_equal(x.grad.numpy(), want_grad)
    assert g.trace_count == 1


def test_comparing_a_nonzero_count_is_captured_not_assumed():
    """`if ids.shape[0] == 0: continue` in a Python loop: the count is a tensor in converted code, the
    if a cond, the continue a flag; an input giving no rows takes the branch the trace did not."""
    def f(x, ms):
        out = oar.zeros_like(x)
        for m in [ms[0], ms[1]]:
            ids = oar.nonzero(m).flatten()
            if ids.shape[0] == 0:
                out = out - 1.0
                continue
            out = oar.index_add(out, ids, 0, oar.index_select(x, ids))
        return out

    g = oar.jit.to_static(f, full_graph=True)
    x0 = np.arange(8, dtype=np.float32).reshape(4, 2)
    for masks in ([[1, 0, 0, 1], [0, 1, 0, 0]], [[0, 0, 0, 0], [1, 1, 1, 1]], [[0, 0, 0, 0], [0, 0, 0, 0]]):
        x, ms = oar.to_tensor(x0), oar.to_tensor(np.array(masks, dtype=bool))
        want = np.zeros_like(x0)
        for m in np.array(masks, bool):
            want = want - 1.0 if not m.any() else want + np.where(m[:, None], x0, 0)
        np.testing.assert_array_equal(g(x, ms).numpy(), want)
        np.testing.assert_array_equal(f(x, ms).numpy(), want)
    assert g.trace_count == 1


def test_a_nonzero_count_is_no_python_int_in_a_trace():
    """len() and .size of a tensor whose first dim is nonzero's count refuse to give the count the
    trace assumed (the largest), which the runs would not have."""
    def by_len(m):
        return oar.full([len(oar.nonzero(m))], 1.0)

    def by_size(m):
        return oar.full([oar.nonzero(m).size], 1.0)

    for f in (by_len, by_size):
        with pytest.raises(TypeError, match="nonzero's count"):
            oar.jit.to_static(f, full_graph=True)(_nonzero_rows([1, 0, 1]))
    assert len(oar.nonzero(_nonzero_rows([1, 0, 1]))) == 2  # eagerly an int
    assert oar.nonzero(_nonzero_rows([1, 0, 1])).size == 2


def test_boolean_masks_under_to_static_count_each_run():
    """x[mask] (full and leading-dims masks) and masked_select of a traced mask are nonzero + gather:
    one trace for every count, values and gradients as numpy's."""
    def f(x, y):
        rows = x[x.sum(-1) > 0]  # [count, 3]
        return (x[y > 0] ** 2).sum() + oar.masked_select(x, y < 0).sum() * 3.0 + rows.sum() * 5.0

    def reference(x, y):
        rows = x[x.sum(-1) > 0]
        value = (x[y > 0] ** 2).sum() + x[y < 0].sum() * 3.0 + rows.sum() * 5.0
        grad = np.where(y > 0, 2 * x, 0) + np.where(y < 0, 3.0, 0) + np.where(x.sum(-1, keepdims=True) > 0, 5.0, 0)
        return value, grad

    g = oar.jit.to_static(f, full_graph=True)
    x0 = np.array([[1., -2, 3], [-4, 5, -6]], np.float32)
    for x_np, y_np in [(x0, np.array([[1., 1, -1], [1, -1, 1]], np.float32)),
                       (-x0, np.zeros((2, 3), np.float32)),
                       (x0 * 0 - 1, -np.ones((2, 3), np.float32))]:
        x = oar.to_tensor(x_np)
        x.stop_gradient = False
        out = g(x, oar.to_tensor(y_np))
        out.backward()
        want, want_grad = reference(x_np, y_np)
        np.testing.assert_allclose(float(out), want, rtol=1e-6)
        np.testing.assert_allclose(x.grad.numpy(), want_grad, rtol=1e-6)
    assert g.trace_count == 1
    with pytest.raises(IndexError, match="does not match the leading dims"):
        oar.jit.to_static(lambda x: x[x[:, :2] > 0], full_graph=True)(oar.to_tensor(x0))
