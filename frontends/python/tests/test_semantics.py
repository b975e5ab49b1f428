"""Issue 19, items 8-10: integer semantics, out-of-range indices and labels,
edge values (NaN/Inf rows, empty reductions, axes out of range). Every
expected value is numpy's or written out by hand."""
import numpy as np
import pytest

import oar
import oar.nn.functional as F
from conftest import assert_close


# ---- item 8: integers compute in integers ----

def test_to_tensor_refuses_python_ints_the_dtype_cannot_hold(device):
    with pytest.raises(OverflowError, match="to_tensor: Python integer 1099511627776 is out of bounds for int32"):
        oar.to_tensor([2 ** 40], dtype="int32")
    with pytest.raises(OverflowError, match="out of bounds for int64"):
        oar.to_tensor([2 ** 63])
    with pytest.raises(OverflowError, match="out of bounds for int64"):
        oar.to_tensor([1, 2 ** 70])
    with pytest.raises(OverflowError, match="-129 is out of bounds for int8"):
        oar.to_tensor([[1], [-129]], dtype="int8")
    # the limits themselves are fine
    assert oar.to_tensor([2 ** 31 - 1, -2 ** 31], dtype="int32").numpy().tolist() == [2 ** 31 - 1, -2 ** 31]
    assert oar.to_tensor([2 ** 63 - 1]).numpy().tolist() == [2 ** 63 - 1]
    assert oar.to_tensor([255], dtype="uint8").numpy().tolist() == [255]


def test_full_and_arange_are_exact_for_large_int64(device):
    big = 2 ** 53 + 1  # not a double
    assert oar.full([2], big, dtype="int64").numpy().tolist() == [big, big]
    with pytest.raises(OverflowError, match="out of bounds for int32"):
        oar.full([2], 2 ** 40, dtype="int32")
    got = oar.arange(big, big + 6, 2).numpy()
    assert got.dtype == np.int64 and got.tolist() == [big, big + 2, big + 4]
    assert oar.arange(2 ** 62, 2 ** 62 - 7, -3).numpy().tolist() == [2 ** 62, 2 ** 62 - 3, 2 ** 62 - 6]
    assert oar.arange(5, 1).numpy().tolist() == []
    with pytest.raises(OverflowError, match="out of bounds for int32"):
        oar.arange(0, 2 ** 40, 2 ** 39, dtype="int32")


def test_integer_scalars_in_arithmetic_are_exact_and_range_checked(device):
    x = oar.to_tensor([2 ** 53])
    assert (x + 1).numpy().tolist() == [2 ** 53 + 1]  # through a double: 2**53
    assert (1 + x).numpy().tolist() == [2 ** 53 + 1]
    assert (x - (2 ** 53 + 1)).numpy().tolist() == [-1]
    assert (oar.to_tensor([3]) * (2 ** 60 + 1)).numpy().tolist() == [3 * (2 ** 60 + 1)]
    small = oar.to_tensor([1, 2], dtype="int32")
    assert (small + 5).dtype == oar.int32
    with pytest.raises(OverflowError, match="out of bounds for int32"):
        small + 2 ** 40
    with pytest.raises(OverflowError, match="out of bounds for int8"):
        oar.to_tensor([1], dtype="int8") * 300


def test_floor_divide_and_remainder_compute_in_integers(device):
    a = np.array([7, -7, 7, -7, 0, 2 ** 62 + 1], np.int64)
    b = np.array([2, 2, -2, -2, 3, 3], np.int64)
    x, y = oar.to_tensor(a), oar.to_tensor(b)
    q = oar.floor_divide(x, y).numpy()
    assert q.dtype == np.int64 and q.tolist() == (a // b).tolist()
    assert oar.remainder(x, y).numpy().tolist() == (a % b).tolist()
    # a Python int operand keeps the tensor's dtype
    assert oar.floor_divide(x, 2).numpy().tolist() == (a // 2).tolist()
    i32 = oar.to_tensor([9, -9], dtype="int32")
    assert oar.floor_divide(i32, 4).dtype == oar.int32
    assert oar.floor_divide(i32, 4).numpy().tolist() == [2, -3]


def test_integer_division_by_zero_gives_zero_as_documented(device):
    # docs/kernels.md: integer division by zero writes 0 (numpy gives 0 too,
    # with a warning); x % 0 is 0 like numpy.
    x = oar.to_tensor([5, -5, 0])
    zero = oar.to_tensor([0, 0, 0])
    assert oar.floor_divide(x, zero).numpy().tolist() == [0, 0, 0]
    assert oar.remainder(x, zero).numpy().tolist() == [0, 0, 0]
    assert oar._C.ops.divide(x, zero).numpy().tolist() == [0, 0, 0]


# ---- item 9: indices and labels out of range raise at the op ----

def test_index_ops_name_the_bad_value_and_its_position(device):
    x = oar.to_tensor(np.arange(6, dtype=np.float32).reshape(3, 2))
    with pytest.raises(ValueError, match=r"gather: index 3 at position \[1\] of index tensor \[2\] is out of range"):
        oar.gather(x, oar.to_tensor([0, 3]))
    with pytest.raises(ValueError, match=r"gather: index -2 at position \[0\]"):
        oar.index_select(x, oar.to_tensor([-2]), axis=1)
    with pytest.raises(ValueError, match=r"take_along_axis: index 5 at position \[1, 0\]"):
        oar.take_along_axis(x, oar.to_tensor([[0], [5]]), 0)
    with pytest.raises(ValueError, match=r"scatter_add: index 4 at position \[0\]"):
        oar.scatter_add(x, oar.to_tensor([4]), oar.ones([1, 2]))
    w = oar.ones([4, 3])
    with pytest.raises(ValueError, match=r"embedding: id 9 at position \[0, 1\] of id tensor \[1, 2\]"):
        F.embedding(oar.to_tensor([[1, 9]]), w)
    with pytest.raises(ValueError, match=r"one_hot: class 3 at position \[2\] of class tensor \[3\] is out of "
                                         r"range; expected 0 <= class < 3"):
        F.one_hot(oar.to_tensor([0, 2, 3]), 3)
    assert F.one_hot(oar.to_tensor([0, 2]), 3).numpy().tolist() == [[1, 0, 0], [0, 0, 1]]


def test_cross_entropy_labels_outside_the_classes_raise_but_ignore_index_is_skipped(device):
    logits = oar.zeros([3, 4])
    with pytest.raises(ValueError, match=r"cross_entropy: label 4 at position \[2\] of label tensor \[3\] is out "
                                         r"of range; expected 0 <= label < 4 .* or label == ignore_index -100"):
        F.cross_entropy(logits, oar.to_tensor([0, 1, 4]))
    with pytest.raises(ValueError, match=r"cross_entropy: label -1 at position \[0, 0\]"):
        F.cross_entropy(logits, oar.to_tensor([[-1], [0], [1]]))
    # ignore_index rows drop out of the mean; every valid row is log(4)
    assert_close(F.cross_entropy(logits, oar.to_tensor([-100, 1, 2])), np.log(4.0), rtol=1e-6)
    assert_close(F.cross_entropy(logits, oar.to_tensor([7, 7, 2]), ignore_index=7), np.log(4.0), rtol=1e-6)


# ---- item 10: edge values ----

def _np_softmax(x):
    with np.errstate(invalid="ignore"):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_of_rows_with_nan_and_inf_matches_numpy(device, dtype):
    inf, nan = np.inf, np.nan
    rows = np.array([[1.0, 2.0, 3.0, 4.0],
                     [nan, 1.0, 2.0, 3.0],
                     [inf, 1.0, 2.0, 3.0],
                     [-inf, 1.0, 2.0, 3.0],
                     [-inf, -inf, -inf, -inf],
                     [inf, inf, 1.0, 0.0],
                     [-inf, 0.0, -inf, -inf]], dtype=dtype)
    # the oneDNN path handles large row counts; repeat to reach it too
    x = np.tile(rows, (40, 1))
    want = _np_softmax(x)
    got = F.softmax(oar.to_tensor(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    with np.errstate(invalid="ignore", divide="ignore"):
        want_log = np.log(want)
    got_log = F.log_softmax(oar.to_tensor(x)).numpy()
    np.testing.assert_allclose(got_log, want_log, rtol=1e-5, atol=1e-6)


def test_mean_var_std_of_empty_tensors_are_nan_as_in_numpy(device):
    e = oar.zeros([0])
    for name in ("mean", "var", "std"):
        got = getattr(oar, name)(e).numpy()
        assert np.isnan(got), f"{name} of an empty tensor is {got}, numpy gives nan"
    assert np.isnan(oar.var(oar.ones([1])).numpy())  # unbiased over one element: 0 / 0
    assert oar.var(oar.ones([1]), unbiased=False).numpy() == 0.0
    assert oar.var(oar.zeros([3, 0]), axis=1).numpy().shape == (3,)
    assert np.isnan(oar.var(oar.zeros([3, 0]), axis=1).numpy()).all()


def test_squeeze_of_an_axis_out_of_range_is_an_error(device):
    x = oar.ones([2, 1])
    with pytest.raises(ValueError, match=r"squeeze: axis 9 is out of range for a tensor of rank 2 \(expected -2..1\)"):
        oar.squeeze(x, 9)
    with pytest.raises(ValueError, match="squeeze: axis -3"):
        oar.squeeze(x, [-3])
    assert oar.squeeze(x, 1).shape == [2]
    assert oar.squeeze(x, 0).shape == [2, 1]  # a named axis of size 2 stays, as in Paddle
    assert oar.squeeze(x, -1).shape == [2]


def test_to_static_programs_check_labels_and_classes_when_they_run(device):
    # Traced programs keep the check (the op check_index), so a bad label is an
    # error, not a plausible loss; good values give the eager answer.
    @oar.jit.to_static
    def loss(logits, label):
        return F.cross_entropy(logits, label, reduction="none")

    @oar.jit.to_static
    def encode(x):
        return F.one_hot(x, 4) * 2.0

    logits = oar.to_tensor(np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]], np.float32))
    good = oar.to_tensor(np.array([2, 0], np.int64))
    assert_close(loss(logits, good), F.cross_entropy(logits, good, reduction="none"))
    with pytest.raises(ValueError, match=r"cross_entropy: label 3 at flat position 1 .* expected 0 <= label < 3"):
        loss(logits, oar.to_tensor(np.array([0, 3], np.int64))).numpy()
    assert_close(encode(oar.to_tensor(np.array([1, 3], np.int64))), [[0, 2, 0, 0], [0, 0, 0, 2]])
    with pytest.raises(ValueError, match=r"one_hot: class 7 at flat position 0 .* expected 0 <= class < 4"):
        encode(oar.to_tensor(np.array([7, 1], np.int64))).numpy()
