"""What a to_static trace computes from values it does not have yet: ops
that took index positions from numpy (Note [Index tensors of a trace] in
oar/manip_extra.py), shapes and small constants folded while tracing
(Note [Folding while tracing] in core/ir/src/trace.cpp), and the outputs,
decorators and dtypes a traced function may have. Each case is checked
against the same function run eagerly."""
import numpy as np
import pytest

import oar
from oar import nn
from oar.static import InputSpec


def t(values, dtype="float32"):
    return oar.to_tensor(np.array(values, dtype=dtype))


def check_same(fn, *args):
    static = oar.jit.to_static(fn)
    got, want = static(*args), fn(*args)
    got = got if isinstance(got, (list, tuple)) else [got]
    want = want if isinstance(want, (list, tuple)) else [want]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    return static


X = [[3.0, 1, 4, 1, 5], [9, 2, 6, 5, 3], [5, 8, 9, 7, 9]]  # ties: 1 and 1, 9 and 9
IDX = [[0, 4], [2, -1], [1, 1]]


def selections(x):
    v, i = oar.topk(x, 3)
    smallest, j = oar.topk(x, 2, axis=0, largest=False)
    return v, i, smallest, j, oar.sort(x, axis=0, descending=True), oar.argsort(x, axis=-1)


def along_axis(x, i):
    taken = oar.take_along_axis(x, i, 1)
    added = oar.put_along_axis(x, i, 1.0, 1, reduce="add")
    rows = oar.index_add(x, i[:, 0] % 3, 0, oar.ones([3, 5]))
    return taken, added, rows


def test_topk_sort_and_argsort_of_traced_values_match_eager_ties_included():
    check_same(selections, t(X))


def test_along_axis_ops_with_a_traced_index_match_eager():
    check_same(along_axis, t(X), t(IDX, "int64"))


def test_a_traced_index_out_of_range_fails_when_the_program_runs():
    static = oar.jit.to_static(along_axis)
    static(t(X), t(IDX, "int64"))
    with pytest.raises(ValueError, match="take_along_axis: index 7 at flat position 1 .* out of range"):
        static(t(X), t([[0, 7], [1, 1], [2, 2]], "int64"))


def assigns(x, i):
    return oar.put_along_axis(x, i, 7.0, 1)


def test_an_assignment_at_traced_indices_refuses_a_repeated_position():
    static = check_same(assigns, oar.zeros([2, 3]), t([[0, 2], [1, 0]], "int64"))
    with pytest.raises(ValueError, match="put_along_axis: an index tensor of a to_static trace repeats a position"):
        static(oar.zeros([2, 3]), t([[0, 0], [1, 0]], "int64"))


def test_a_traced_topk_passes_its_gradient_to_the_values_it_took():
    def top2_sum(x):
        return oar.topk(x, 2)[0].sum()
    xs, xe = t(X), t(X)
    xs.stop_gradient = xe.stop_gradient = False
    oar.jit.to_static(top2_sum)(xs).backward()
    top2_sum(xe).backward()
    np.testing.assert_array_equal(xs.grad.numpy(), xe.grad.numpy())


# ---- shapes and small constants are values while tracing ----

class ByShape(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        batch = oar.shape(x)[0]
        h = self.fc(x.reshape([batch, -1, 4]))
        return oar.reshape(h, [batch, -1])


def test_the_shape_of_a_traced_tensor_indexes_into_a_shape_list():
    oar.seed(0)
    model = ByShape()
    x = oar.to_tensor(np.random.RandomState(0).randn(2, 8).astype("float32"))
    want = model(x)
    got = oar.jit.to_static(model)(x)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_a_dynamic_dim_stays_symbolic():
    def rows(x):
        return oar.shape(x)
    static = oar.jit.to_static(rows, input_spec=[InputSpec([None, 3], "float32")])
    np.testing.assert_array_equal(static(oar.ones([2, 3])).numpy(), [2, 3])
    np.testing.assert_array_equal(static(oar.ones([5, 3])).numpy(), [5, 3])  # not the first call's 2


def test_grid_sample_and_affine_grid_trace():
    def warp(x, theta):
        grid = nn.functional.affine_grid(theta, [1, 1, 4, 4], align_corners=False)
        return nn.functional.grid_sample(x, grid, align_corners=False)
    x = t(np.arange(16.0).reshape(1, 1, 4, 4))
    theta = t([[[0.8, 0.1, 0.05], [-0.1, 0.9, 0.0]]])
    static = oar.jit.to_static(warp)
    np.testing.assert_allclose(static(x, theta).numpy(), warp(x, theta).numpy(), rtol=1e-5, atol=1e-6)


# ---- what a traced function may return, how it may be decorated ----

class Heads(nn.Layer):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 6)
        self.cls = nn.Linear(6, 3)
        self.box = nn.Linear(6, 2)

    def forward(self, x, labels=None):
        h = oar.tanh(self.body(x))
        out = {"logits": self.cls(h), "boxes": self.box(h)}
        loss = None if labels is None else ((out["logits"] - labels) ** 2).mean()
        return out, loss, 3


def test_dicts_none_and_numbers_in_the_output(tmp_path):
    oar.seed(1)
    model = Heads()
    x = oar.to_tensor(np.random.RandomState(1).randn(2, 4).astype("float32"))
    (want, no_loss, three) = model(x)
    static = oar.jit.to_static(model)
    got, loss, n = static(x)
    assert loss is None and no_loss is None and n == three == 3
    assert list(got) == ["boxes", "logits"]  # sorted keys (paddle.utils.flatten's order)
    for k in want:
        np.testing.assert_allclose(got[k].numpy(), want[k].numpy(), rtol=1e-6)
    oar.jit.save(static, str(tmp_path / "heads"), input_spec=[InputSpec([2, 4], "float32")])
    loaded = oar.jit.load(str(tmp_path / "heads"))
    boxes, logits = loaded(x)  # the saved program returns the tensors in that order
    np.testing.assert_allclose(boxes.numpy(), want["boxes"].numpy(), rtol=1e-6)
    np.testing.assert_allclose(logits.numpy(), want["logits"].numpy(), rtol=1e-6)


class Generator(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    @oar.no_grad()
    def forward(self, x):
        for _ in range(2):
            if x.sum() > 0:  # converted though forward is decorated
                x = self.fc(x)
            else:
                x = -x
        return x


def test_a_forward_under_a_decorator_is_converted():
    oar.seed(2)
    model = Generator()
    static = oar.jit.to_static(Generator())
    static.set_state_dict(model.state_dict())
    for values in ([1.0, 2.0, 3.0], [-1.0, -2.0, 0.5]):
        np.testing.assert_allclose(static(t([values])).numpy(), model(t([values])).numpy(), rtol=1e-6)
    assert static.forward.trace_count == 1


class Spectral(nn.Layer):
    def __init__(self):
        super().__init__()
        w = np.random.RandomState(3).randn(4).astype("float32")
        self.w = self.create_parameter([4], dtype="complex64")
        self.w.set_value(oar.to_tensor((w + 1j * w[::-1]).astype("complex64")))

    def forward(self, x):
        return oar.real(oar.fft.ifft(oar.fft.fft(x) * self.w)).sum()


def test_complex_parameters_get_gradients_through_a_program():
    eager, static_model = Spectral(), Spectral()
    static = oar.jit.to_static(static_model)
    x = t([1.0, -2.0, 0.5, 3.0])
    eager(x).backward()
    static(x).backward()
    assert static_model.w.grad is not None
    np.testing.assert_allclose(static_model.w.grad.numpy(), eager.w.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_jit_save_of_a_forward_taking_derivatives_of_its_input(tmp_path):
    class Residual(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(1, 1)

        def forward(self, x):
            u = oar.tanh(self.fc(x))
            (du,) = oar.grad(u.sum(), x, create_graph=True)
            return du
    oar.seed(4)
    model = Residual()
    x = t([[0.5], [-1.0]])
    x.stop_gradient = False
    want = model(x)
    oar.jit.save(oar.jit.to_static(model), str(tmp_path / "res"), input_spec=[InputSpec([2, 1], "float32")])
    got = oar.jit.load(str(tmp_path / "res"))(t([[0.5], [-1.0]]))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_a_negative_index_in_a_list_index_counts_from_the_end():
    x = t(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(x[:, [-1]].numpy(), [[2.0], [5.0]])
    np.testing.assert_array_equal(x[[-1, 0]].numpy(), [[3.0, 4, 5], [0, 1, 2]])
    with pytest.raises(IndexError, match="index -4 is out of bounds for axis 1 with size 3"):
        x[:, [-4]]


def reductions(x, i, rows):
    biggest = oar.put_along_axis(x, i, oar.full([3, 2], 4.5), 1, reduce="amax")
    smallest = oar.put_along_axis(x, i, oar.full([3, 2], 2.0), 1, reduce="amin", include_self=False)
    product = oar.put_along_axis(x, i, oar.full([3, 2], 2.0), 1, reduce="mul")
    replaced = oar.scatter(x, rows, oar.ones([2, 5]) * 7.0)
    summed = oar.scatter(x, rows, oar.ones([2, 5]), overwrite=False)
    return biggest, smallest, product, replaced, summed


def test_max_min_product_and_scatter_at_traced_indices_match_eager_repeats_included():
    check_same(reductions, t(X), t([[0, 0], [2, -1], [1, 1]], "int64"), t([2, 0], "int64"))


def test_a_small_eye_is_a_mask_known_while_tracing():
    def off_diagonal(x):
        mask = oar.eye(3, dtype="bool")
        return x[~mask].reshape([3, -1])
    check_same(off_diagonal, t(np.arange(9.0).reshape(3, 3)))


def test_ctc_loss_of_traced_labels_and_lengths_matches_eager():
    def loss(logits, labels, in_len, lab_len):
        return nn.functional.ctc_loss(logits, labels, in_len, lab_len, blank=0, reduction="mean")
    rng = np.random.RandomState(5)
    logits = rng.randn(6, 2, 4).astype("float32")
    labels = t([[1, 2, 2], [3, 1, 0]], "int64")
    in_len, lab_len = t([6, 5], "int64"), t([3, 2], "int64")
    xs, xe = oar.to_tensor(logits), oar.to_tensor(logits)
    xs.stop_gradient = xe.stop_gradient = False
    static = oar.jit.to_static(loss)
    got, want = static(xs, labels, in_len, lab_len), loss(xe, labels, in_len, lab_len)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5)
    got.backward()
    want.backward()
    np.testing.assert_allclose(xs.grad.numpy(), xe.grad.numpy(), rtol=1e-4, atol=1e-6)
    # other labels and lengths, the same trace
    labels2, lab_len2 = t([[2, 2, 1], [1, 0, 0]], "int64"), t([2, 1], "int64")
    np.testing.assert_allclose(static(xe, labels2, in_len, lab_len2).numpy(),
                               loss(xe, labels2, in_len, lab_len2).numpy(), rtol=1e-5)
    assert static.trace_count == 1
