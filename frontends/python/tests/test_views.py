"""Eager strided views (Note [Views] in core/src/tensor/view.cpp): transpose,
slicing with steps, expand/broadcast_to and diagonal share their input's
memory; every op family gives on them what numpy gives; gradients flow
through them; in-place methods write through them to their base; numpy()
and DLPack see their strides."""
import numpy as np
import pytest

import oar
from conftest import assert_close


def grid(*shape, dtype=np.float32):
    return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)


def test_view_ops_share_memory_with_their_own_strides(device):
    a = grid(4, 6)
    x = oar.to_tensor(a)
    t = x.T
    assert t._view_op == "transpose" and t.strides == [1, 6] and not t.is_contiguous()
    assert_close(t, a.T)
    s = x[1::2, 1::2]
    assert s._view_op == "slice" and s.strides == [12, 2] and s._byte_offset == 7 * 4
    assert_close(s, a[1::2, 1::2])
    e = oar.to_tensor(grid(3, 1)).expand([2, 3, 4])
    assert e.strides == [0, 1, 0]
    assert_close(e, np.broadcast_to(grid(3, 1), (2, 3, 4)))
    for offset in (0, 1, 3, -1, -3, 7):
        assert_close(x.diagonal(offset), np.diagonal(a, offset))
    c = grid(2, 3, 4)
    assert_close(oar.diagonal(oar.to_tensor(c), 1, 2, 0), np.diagonal(c, 1, 2, 0))
    assert_close(oar.diagonal(oar.to_tensor(c), -1, 1, 2), np.diagonal(c, -1, 1, 2))
    # views of views, and a reshape that has to copy
    assert_close(x.T[1::2].diagonal(), a.T[1::2].diagonal())
    assert_close(x[::2, 1:].T.reshape([-1]), a[::2, 1:].T.reshape(-1))
    assert_close(x.expand([2, 4, 6])[1, ::3].T, np.broadcast_to(a, (2, 4, 6))[1, ::3].T)


def test_every_op_family_on_views_matches_numpy(device):
    a = grid(4, 6) / 10
    x = oar.to_tensor(a)
    row = oar.to_tensor(grid(1, 4))
    t, s, b = x.T, x[1::2, ::2], row.expand([6, 4])
    at, as_, ab = a.T, a[1::2, ::2], np.broadcast_to(grid(1, 4), (6, 4))
    assert_close(oar.exp(t), np.exp(at))                        # unary
    assert_close(t + b, at + ab)                                # binary, stride 0
    assert_close(oar.maximum(s, s * 0 + 0.5), np.maximum(as_, 0.5))
    assert_close(t.sum(axis=0), at.sum(axis=0))                 # reductions
    assert_close(t.max(axis=1), at.max(axis=1))
    assert_close(b.mean(), ab.mean())
    assert_close(oar.matmul(t, x), at @ a, rtol=1e-5)           # matmul, both layouts
    assert_close(oar.matmul(s, s.T), as_ @ as_.T, rtol=1e-5)
    sm = np.exp(at) / np.exp(at).sum(axis=0, keepdims=True)
    assert_close(oar.nn.functional.softmax(t, axis=0), sm)      # softmax
    img = grid(1, 2, 7, 7) / 50
    w = grid(3, 2, 2, 2) / 100
    crop = oar.to_tensor(img)[:, :, 1::2, ::2]                  # conv input [1, 2, 3, 4]
    got = oar.nn.functional.conv2d(crop, oar.to_tensor(w))
    ref = np.zeros((1, 3, 2, 3), np.float32)
    ci = img[:, :, 1::2, ::2]
    for o in range(3):
        for i in range(2):
            for j in range(3):
                ref[0, o, i, j] = (ci[0, :, i:i + 2, j:j + 2] * w[o]).sum()
    assert_close(got, ref, rtol=1e-4, atol=1e-5)
    assert_close(oar.concat([t, b], axis=0), np.concatenate([at, ab], 0))  # concat
    idx = oar.to_tensor(np.array([9, 3, 9, 0, 9, 2], np.int64))[1::2]     # gather, a strided index
    assert_close(oar.gather(t, idx, axis=0), at[[3, 0, 2]])
    assert_close(oar.index_select(t, idx, axis=1), at[:, [3, 0, 2]])
    assert_close(t[[1, 4]], at[[1, 4]])
    assert_close(t.astype("float64"), at.astype(np.float64))  # cast
    np.testing.assert_array_equal(b.astype("int32").numpy(), ab.astype(np.int32))


def test_gradients_through_views(device):
    a = grid(3, 4, dtype=np.float64) / 10
    w = grid(4, 3, dtype=np.float64)

    x = oar.to_tensor(a, stop_gradient=False)
    (x.T * oar.to_tensor(w)).sum().backward()
    assert_close(x.grad, w.T)                                  # transpose: a transpose

    x = oar.to_tensor(a, stop_gradient=False)
    x[::2, 1::2].sum().backward()
    want = np.zeros((3, 4))
    want[::2, 1::2] = 1
    assert_close(x.grad, want)                                 # strided slice: scatter into zeros

    v = oar.to_tensor(grid(1, 4, dtype=np.float64), stop_gradient=False)
    (v.expand([2, 3, 4]) ** 2).sum().backward()
    assert_close(v.grad, 2 * 6 * grid(1, 4))                   # expand: sum_to

    for offset in (0, 1, -2):
        x = oar.to_tensor(a, stop_gradient=False)
        (x.diagonal(offset) ** 2).sum().backward()
        want = np.zeros((3, 4))
        i = np.arange(len(np.diagonal(a, offset)))
        r, c = (i, i + offset) if offset >= 0 else (i - offset, i)
        want[r, c] = 2 * a[r, c]
        assert_close(x.grad, want)                             # diagonal: a diag-embed

    # a view of a view feeding a reshape that copies: finite differences
    x = oar.to_tensor(a, stop_gradient=False)
    f = lambda t: (t[:, 1::2].T.reshape([-1]) * oar.to_tensor(np.arange(6.0))).sum()  # noqa: E731
    (g,) = oar.grad([f(x)], [x])
    eps = 1e-6
    numeric = np.zeros_like(a)
    for k in range(a.size):
        d = np.zeros(a.size)
        d[k] = eps
        numeric.flat[k] = (float(f(oar.to_tensor(a + d.reshape(a.shape)))) -
                           float(f(oar.to_tensor(a - d.reshape(a.shape))))) / (2 * eps)
    assert_close(g, numeric, rtol=1e-6, atol=1e-6)


def test_inplace_methods_write_through_views_to_their_base(device):
    # (test_inplace.py has the full set; this one pins the view kinds of this file)
    a = grid(2, 3)
    x = oar.to_tensor(a)
    v = x.T
    v.add_(oar.ones([3, 2]))                                   # through a transpose
    s = x[:, ::2]
    s[0, 0] = 5.0                                              # through a strided slice
    a += 1
    a[0, 0] = 5.0
    assert_close(x, a)
    e = x[0:1].expand([4, 3])
    e.set_value(np.zeros((4, 3), np.float32))                  # expand copies (Paddle): e gets its own memory
    assert_close(e, np.zeros((4, 3)))
    assert_close(x, a)                                         # and x keeps its values
    v.unsqueeze_(0)                                            # shape-only: the handle is reshaped
    assert v.shape == [1, 3, 2] and v._view_op and v._shares_storage(x)
    c = x.T.clone()
    c.add_(oar.ones([3, 2]))                                   # a copy is no view
    assert_close(c, a.T + 1)
    assert_close(x, a)


def test_numpy_and_dlpack_of_strided_views_on_cpu():
    a = grid(4, 6)
    x = oar.to_tensor(a, place="cpu")
    base = x.numpy()
    t = x.T.numpy()                                            # Note [numpy views]: strides kept
    assert np.shares_memory(t, base) and t.strides == (4, 24)
    np.testing.assert_array_equal(t, a.T)
    s = x[1::2, 1::2].numpy()
    assert np.shares_memory(s, base)
    np.testing.assert_array_equal(s, a[1::2, 1::2])
    e = oar.to_tensor(grid(1, 6), place="cpu").expand([3, 6]).numpy()
    assert not e.flags.writeable                               # a broadcast array is read-only
    np.testing.assert_array_equal(e, np.broadcast_to(grid(1, 6), (3, 6)))
    d = np.from_dlpack(x.diagonal(1))                          # DLPack carries the strides
    assert np.shares_memory(d, base)
    np.testing.assert_array_equal(d, np.diagonal(a, 1))


def test_numpy_of_views_on_the_mock_copies_the_right_elements():
    if "mock" not in oar.get_all_device_type():
        pytest.skip("no mock device")
    a = grid(4, 6)
    x = oar.to_tensor(a, place="mock")
    np.testing.assert_array_equal(x.T[::2].numpy(), a.T[::2])
    np.testing.assert_array_equal(x.diagonal(-1).numpy(), np.diagonal(a, -1))
    np.testing.assert_array_equal(x[1:, 2].expand([2, 3]).numpy(), np.broadcast_to(a[1:, 2], (2, 3)))


def test_dlpack_round_trip_of_strided_memory_keeps_sharing():
    a = grid(4, 6)
    x = oar.to_tensor(a, place="cpu")
    y = oar.utils.dlpack.from_dlpack(oar.utils.dlpack.to_dlpack(x.T[::2]))   # oar -> oar, strides [2, 6]
    assert y.strides == [2, 6] and np.shares_memory(y.numpy(), x.numpy())
    np.testing.assert_array_equal(y.numpy(), a.T[::2])
    b = np.arange(24.0).reshape(4, 6)
    z = oar.utils.dlpack.from_dlpack(b[1:, ::2])                             # numpy -> oar, strided
    np.testing.assert_array_equal(z.numpy(), b[1:, ::2])
    np.testing.assert_array_equal((z * 2).numpy(), 2 * b[1:, ::2])
    with pytest.raises((ValueError, BufferError)):                          # oar's or numpy's refusal
        oar.utils.dlpack.from_dlpack(b[::-1])
