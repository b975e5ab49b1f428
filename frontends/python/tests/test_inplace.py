"""Real in-place writes (Note [In-place writes] in core/src/tensor/inplace.cpp):
views see writes through their base and the base through them, x[idx] = v
matches numpy, every `*_` method writes the tensor's own memory, and the
version counter turns a write into a tensor saved for backward into an
error naming the op instead of a wrong gradient."""
import numpy as np
import pytest

import oar
from conftest import assert_close


def grid(*shape, dtype=np.float32):
    return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)


# ---- views see writes ----

VIEWS = {
    "slice": (lambda t: t[1:, ::2], lambda a: a[1:, ::2]),
    "transpose": (lambda t: t.T, lambda a: a.T),
    "reshape": (lambda t: t.reshape([12]), lambda a: a.reshape(12)),
    "flatten": (lambda t: t.flatten(), lambda a: a.reshape(-1)),
    "detach": (lambda t: t.detach(), lambda a: a),
    "squeeze": (lambda t: t[1:2].squeeze(0), lambda a: a[1]),
    "unsqueeze": (lambda t: t.unsqueeze(0), lambda a: a[None]),
    "int index": (lambda t: t[2], lambda a: a[2]),
    "diagonal": (lambda t: t.diagonal(), lambda a: np.einsum("ii->i", a[:, :3])),  # a writable numpy view
}


@pytest.mark.parametrize("name", list(VIEWS))
def test_a_write_into_a_view_reaches_its_base(device, name):
    take, ref = VIEWS[name]
    a = grid(3, 4)
    x = oar.to_tensor(a)
    v = take(x)
    before = x.inplace_version
    v.add_(100)
    ref(a)[...] += 100  # numpy's views are written the same way
    assert_close(x, a)
    assert_close(v, ref(a))
    assert x.inplace_version == before + 1


@pytest.mark.parametrize("name", list(VIEWS))
def test_a_write_into_the_base_reaches_its_views(device, name):
    take, ref = VIEWS[name]
    a = grid(3, 4)
    x = oar.to_tensor(a)
    v = take(x)
    x.scale_(2.0)
    x[0, 0] = -5
    a *= 2
    a[0, 0] = -5
    assert_close(v, ref(a))


def test_views_of_views_and_overlapping_copies(device):
    a = grid(4, 6)
    x = oar.to_tensor(a)
    x.T[1::2, :2].fill_(-1)
    a.T[1::2, :2] = -1
    assert_close(x, a)
    x[1:] = x[:-1]  # source and destination overlap: read before written
    a[1:] = a[:-1].copy()
    assert_close(x, a)
    x.T[2:4] = oar.full([2, 4], 7.0)  # a transposed destination
    a.T[2:4] = 7
    assert_close(x, a)


def test_a_write_into_an_expanded_tensor_goes_to_its_own_copy(device):
    x = oar.to_tensor(grid(1, 3))
    e = x.expand([4, 3])  # Paddle's expand copies: writing it leaves x alone
    e[1] = -1
    want = np.broadcast_to(grid(1, 3), (4, 3)).copy()
    want[1] = -1
    assert_close(e, want)
    assert_close(x, grid(1, 3))
    e2 = x.expand([2, 3])
    e2.add_(oar.ones([2, 3]))
    assert_close(e2, grid(1, 3) + np.ones((2, 3)))
    assert_close(x, grid(1, 3))


# ---- x[idx] = v against numpy ----

A = grid(3, 4, 5)
SET_CASES = [
    (1, np.float32(-1)),
    (-1, grid(5)),                                   # broadcast over dim 1
    ((slice(None), 2), grid(3, 1) * 10),             # [3, 5] <- [3, 1]
    ((Ellipsis, 0), grid(4)),                        # [3, 4] <- [4]
    ((None, 1, slice(1, 3)), grid(1, 2, 1)),         # a new axis
    ((slice(None, None, 2), slice(1, None, 2)), -7),
    ((slice(None), slice(None, None, -1)), grid(4, 1)),  # a negative step
    ([2, 0], grid(2, 4, 5) + 0.5),                   # an integer array
    ((slice(None), [3, 1], 0), -3),
    (([0, 2], [1, 3]), grid(2, 5)),                  # two integer arrays
    (([1, 1], [2, 2]), grid(2, 5)),                  # a repeated position: the last write wins
    ((0, [True, False, True, False]), 9),            # a bool array in one dim
]


@pytest.mark.parametrize("case", range(len(SET_CASES)), ids=[repr(k) for k, _ in SET_CASES])
def test_setitem_matches_numpy(device, case):
    key, value = SET_CASES[case]
    want = A.copy()
    want[key] = value
    x = oar.to_tensor(A)
    keep = x[0:2]  # a view taken before sees the write
    x[key] = oar.to_tensor(np.asarray(value, np.float32)) if isinstance(value, np.ndarray) else value
    assert_close(x, want)
    assert_close(keep, want[0:2])


def test_setitem_with_a_mask_tensor_and_int_tensor_index(device):
    want = A.copy()
    x = oar.to_tensor(A)
    view = x.T
    x[x > 40] = 0
    want[want > 40] = 0
    x[oar.to_tensor([2])] = oar.to_tensor(np.ones((1, 4, 5), np.float32))
    want[[2]] = 1
    assert_close(x, want)
    assert_close(view, want.T)
    with pytest.raises(ValueError, match="does not broadcast"):
        x[0] = oar.ones([3])


def test_setitem_into_a_view_writes_the_base(device):
    a = grid(4, 5)
    x = oar.to_tensor(a)
    v = x[1:3]
    v[:, [0, 4]] = -1
    v[v > 12] = 0
    a[1:3, [0, 4]] = -1
    sub = a[1:3]
    sub[sub > 12] = 0
    assert_close(x, a)


# ---- the `*_` methods write the same memory ----

METHODS = {
    "add_": (lambda t: t.add_(oar.ones([2, 3])), lambda a: a + 1),
    "subtract_": (lambda t: t.subtract_(oar.ones([3])), lambda a: a - 1),
    "multiply_": (lambda t: t.multiply_(oar.full([2, 3], 2.0)), lambda a: a * 2),
    "divide_": (lambda t: t.divide_(oar.full([2, 3], 4.0)), lambda a: a / 4),
    "scale_": (lambda t: t.scale_(3.0, 1.0), lambda a: a * 3 + 1),
    "clip_": (lambda t: t.clip_(1.0, 4.0), lambda a: np.clip(a, 1, 4)),
    "exp_": (lambda t: t.exp_(), np.exp),
    "sqrt_": (lambda t: t.sqrt_(), np.sqrt),
    "tanh_": (lambda t: t.tanh_(), np.tanh),
    "square_": (lambda t: t.square_(), np.square),
    "pow_": (lambda t: t.pow_(2.0), lambda a: a ** 2),
    "floor_": (lambda t: t.scale_(0.5).floor_(), lambda a: np.floor(a * 0.5)),
    "masked_fill_": (lambda t: t.masked_fill_(oar.to_tensor([[True, False, True]] * 2), -1.0),
                     lambda a: np.where([[True, False, True]] * 2, -1, a)),
    "zero_": (lambda t: t.zero_(), np.zeros_like),
    "fill_": (lambda t: t.fill_(2.5), lambda a: np.full_like(a, 2.5)),
    "copy_": (lambda t: t.copy_(oar.to_tensor(np.float32([7, 8, 9]))), lambda a: np.broadcast_to([7, 8, 9], a.shape)),
    "index_put_": (lambda t: t.index_put_((oar.to_tensor([0, 1]), oar.to_tensor([2, 0])), oar.to_tensor(-1.0)),
                   lambda a: np.where([[0, 0, 1], [1, 0, 0]], -1, a)),
}


@pytest.mark.parametrize("name", list(METHODS))
def test_inplace_method_writes_the_tensor_memory(device, name):
    run, ref = METHODS[name]
    a = grid(2, 3) + 1
    x = oar.to_tensor(a)
    row = x[1]        # views taken before the write
    col = x.T[0]
    out = run(x)
    assert out is x
    want = np.asarray(ref(a), np.float32)
    assert_close(x, want, rtol=1e-6)
    assert_close(row, want[1], rtol=1e-6)
    assert_close(col, want[:, 0], rtol=1e-6)


def test_random_fills_write_in_place(device):
    x = oar.zeros([200, 50])
    part = x[:100]
    x.uniform_(min=-2.0, max=3.0)
    v = x.numpy()
    assert v.min() >= -2.0 and v.max() < 3.0 and abs(v.mean() - 0.5) < 0.1
    np.testing.assert_array_equal(part.numpy(), v[:100])
    x.normal_(mean=1.0, std=2.0)
    v = x.numpy()
    assert abs(v.mean() - 1.0) < 0.1 and abs(v.std() - 2.0) < 0.1
    np.testing.assert_array_equal(part.numpy(), v[:100])
    x.exponential_(lam=4.0)
    v = x.numpy()
    assert v.min() >= 0 and abs(v.mean() - 0.25) < 0.02


def test_index_put_accumulates(device):
    x = oar.zeros([3])
    x.index_put_((oar.to_tensor([0, 2, 0]),), oar.to_tensor([1.0, 2.0, 3.0]), accumulate=True)
    assert_close(x, [4.0, 0.0, 2.0])
    y = oar.index_put(x, (oar.to_tensor([1]),), oar.to_tensor(5.0))
    assert_close(y, [4.0, 5.0, 2.0])
    assert_close(x, [4.0, 0.0, 2.0])


# ---- autograd: the version counter and gradients through in-place writes ----

def test_writing_a_tensor_saved_for_backward_raises_naming_the_op(device):
    x = oar.to_tensor([0.5, 1.0, 2.0], stop_gradient=False)
    y = x.exp()
    assert y.inplace_version == 0
    y.add_(oar.to_tensor(1.0))
    assert y.inplace_version == 1
    with pytest.raises(ValueError, match=r"modified by an inplace operation: output 0 of 'exp' .* "
                                         r"saved at version 0 and is now at version 1"):
        y.sum().backward()


def test_writing_through_a_detached_handle_is_caught_too(device):
    x = oar.to_tensor([0.5, 1.0, 2.0], stop_gradient=False)
    h = x * 1.0
    y = h * h  # saves h
    h.detach()[0] = 10.0
    with pytest.raises(ValueError, match=r"modified by an inplace operation: input [01] of '\w+'"):
        y.sum().backward()


def test_a_write_that_no_saved_tensor_needs_keeps_the_backward(device):
    x = oar.to_tensor([0.5, 1.0, 2.0], stop_gradient=False)
    y = x * 3.0
    z = y + 1.0  # add does not read y's values
    y.add_(oar.to_tensor(1.0))
    z.sum().backward()
    assert_close(x.grad, [3.0, 3.0, 3.0])


def finite_difference(f, a, eps=1e-6):
    g = np.zeros_like(a)
    for k in range(a.size):
        d = np.zeros(a.size)
        d[k] = eps
        d = d.reshape(a.shape)
        g.flat[k] = (f(a + d) - f(a - d)) / (2 * eps)
    return g


def inplace_program(t, w):
    y = t * w            # non-leaf
    y.pow_(2.0)          # y = (t w)^2, reads its own old value
    y[0] = y[0] * 3.0    # setitem with a differentiable value
    y.clip_(0.0, 5.0)
    y[:, 1:].exp_()      # a write through a view of the non-leaf
    return y


def test_gradients_through_inplace_writes_on_non_leaves_match_finite_differences(device):
    a = grid(2, 3, dtype=np.float64) / 4 + 0.1
    w = np.array([0.5, -1.0, 1.5])

    def f(v):
        out = inplace_program(oar.to_tensor(v), oar.to_tensor(w))
        return float((out * oar.to_tensor(grid(2, 3, dtype=np.float64) + 1)).sum())

    x = oar.to_tensor(a, stop_gradient=False)
    out = inplace_program(x, oar.to_tensor(w))
    (out * oar.to_tensor(grid(2, 3, dtype=np.float64) + 1)).sum().backward()
    assert_close(x.grad, finite_difference(f, a), rtol=1e-5, atol=1e-6)


def test_a_write_through_a_view_rebases_its_base(device):
    x = oar.to_tensor([1.0, 2.0, 3.0], stop_gradient=False)
    y = x * 2.0
    v = y[1:]
    v.multiply_(oar.to_tensor(3.0))
    assert_close(y, [2.0, 12.0, 18.0])  # the values are right
    v[0] = v[0] + v[1]                  # a second write through the same view
    assert_close(y, [2.0, 30.0, 18.0])
    (y * oar.to_tensor([1.0, 10.0, 100.0])).sum().backward()  # y's history was rebased onto both writes
    assert_close(x.grad, [2.0, 60.0, 660.0])  # y1 = 6 x1 + 6 x2, y2 = 6 x2


def test_a_view_taken_before_a_write_refuses_its_stale_history(device):
    x = oar.to_tensor([1.0, 2.0, 3.0], stop_gradient=False)
    y = x * 2.0
    v = y[1:]
    y.add_(oar.to_tensor(1.0))
    assert_close(v, [5.0, 7.0])  # the values are right
    with pytest.raises(ValueError, match=r"input 0 was made by '\w+', and its memory has since been written"):
        v * 1.0  # but v's recorded history is the one before the write


def test_leaves_that_require_grad_refuse_inplace_writes_outside_no_grad(device):
    w = oar.to_tensor([1.0, 2.0, 3.0], stop_gradient=False)
    for write in (lambda: w.add_(oar.ones([3])), lambda: w.zero_(), lambda: w.__setitem__(0, 1.0),
                  lambda: w[1:].fill_(0.0), lambda: w.T.scale_(2.0)):
        with pytest.raises(RuntimeError, match="inplace strategy|view .* of a leaf"):
            write()
    assert_close(w, [1.0, 2.0, 3.0])
    with oar.no_grad():
        w[1:].scale_(10.0)  # an optimizer-style update
    assert_close(w, [1.0, 20.0, 30.0])
    assert not w.stop_gradient and w.is_leaf
    (w * w).sum().backward()
    assert_close(w.grad, [2.0, 40.0, 60.0])


def test_a_rebased_base_is_freed_without_a_backward(device):
    import gc
    gc.collect()
    before = oar._C.live_autograd_nodes()
    for _ in range(3):
        x = oar.to_tensor([1.0, 2.0, 3.0], stop_gradient=False)
        y = x * 2.0
        y[1:].multiply_(oar.to_tensor(3.0))
        del x, y
    gc.collect()
    assert oar._C.live_autograd_nodes() == before
