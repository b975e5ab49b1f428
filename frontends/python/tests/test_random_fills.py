"""Tensor's random in-place fills (oar/random_more.py): shape, dtype, the
in-place contract and the sample statistics against the distributions' moments."""
import numpy as np
import pytest

import oar

N = 40000


def _filled(method, *args, dtype="float32", shape=(N,), **kwargs):
    x = oar.zeros(list(shape), dtype=dtype)
    out = getattr(x, method)(*args, **kwargs)
    assert out is x and x.shape == list(shape) and x.dtype.name == dtype
    return x.numpy()


def test_normal_uniform_moments(device):
    v = _filled("normal_", 3.0, 2.0)
    assert abs(v.mean() - 3.0) < 0.05 and abs(v.std() - 2.0) < 0.05
    v = _filled("uniform_", -2.0, 4.0, dtype="float64")
    assert v.min() >= -2.0 and v.max() < 4.0 and abs(v.mean() - 1.0) < 0.05
    v = _filled("uniform_")  # Paddle 3.3's defaults: [0, 1)
    assert v.min() >= 0.0 and v.max() < 1.0


def test_exponential_cauchy_log_normal(device):
    v = _filled("exponential_", 2.0)
    assert v.min() >= 0 and abs(v.mean() - 0.5) < 0.02
    v = _filled("cauchy_", 1.0, 2.0)
    assert abs(np.median(v) - 1.0) < 0.1  # the median of Cauchy(loc, scale) is loc
    assert abs(np.percentile(v, 75) - 3.0) < 0.15  # and its upper quartile loc + scale
    v = np.log(_filled("log_normal_"))  # defaults mean=1, std=2
    assert abs(v.mean() - 1.0) < 0.05 and abs(v.std() - 2.0) < 0.05


def test_geometric_is_paddles_continuous_form(device):
    v = _filled("geometric_", 0.3)
    # log(u) / log(1 - p) is exponential with mean -1 / log(1 - p)
    assert v.min() >= 0 and abs(v.mean() + 1.0 / np.log(0.7)) < 0.08


def test_bernoulli(device):
    v = _filled("bernoulli_", 0.25)
    assert set(np.unique(v)) <= {0.0, 1.0} and abs(v.mean() - 0.25) < 0.02
    x = oar.zeros([4, 3])
    x.bernoulli_(oar.to_tensor([[0.0], [1.0], [0.0], [1.0]]))
    np.testing.assert_array_equal(x.numpy(), np.repeat([[0.0], [1.0], [0.0], [1.0]], 3, axis=1))
    x.bernoulli_(oar.to_tensor([[-0.5], [1.5], [-2.0], [3.0]]))  # Paddle: p outside [0, 1] is no error
    np.testing.assert_array_equal(x.numpy(), np.repeat([[0.0], [1.0], [0.0], [1.0]], 3, axis=1))


def test_random_integers(device):
    v = _filled("random_", -3, 5, dtype="int64")
    assert v.min() == -3 and v.max() == 4
    v = _filled("random_", 5, dtype="int32")  # random_(n): [0, n - 1]
    assert v.min() == 0 and v.max() == 4 and v.dtype == np.int32
    v = _filled("random_")  # float32: integers up to 2**24
    assert np.all(v == np.floor(v)) and v.min() >= 0 and v.max() <= 2**24 and v.max() > 2**23
    v = _filled("random_", dtype="int64")
    assert v.min() >= 0 and v.max() > 2**62 and 0.4 < (v % 2).mean() < 0.6


def test_seed_repeats():
    oar.seed(7)
    a = oar.zeros([5]).exponential_().numpy()
    oar.seed(7)
    b = oar.zeros([5]).exponential_().numpy()
    np.testing.assert_array_equal(a, b)


def test_bad_arguments_raise_sentences():
    with pytest.raises(TypeError, match="normal_: expected a floating-point tensor"):
        oar.zeros([3], dtype="int32").normal_()
    with pytest.raises(ValueError, match="geometric_: expected probabilities"):
        oar.zeros([3]).geometric_(0.0)
    with pytest.raises(ValueError, match="random_: expected 'from' to be less than 'to'"):
        oar.zeros([3]).random_(5, 2)
    with pytest.raises(ValueError, match="exponential_: expected a rate"):
        oar.zeros([3]).exponential_(-1.0)


def test_fills_write_through_views():
    x = oar.zeros([4, 3])
    row = x[1]
    x.bernoulli_(1.0)
    np.testing.assert_array_equal(row.numpy(), [1.0, 1.0, 1.0])
    x.random_(7, 8)
    np.testing.assert_array_equal(row.numpy(), [7.0, 7.0, 7.0])
    x[2].cauchy_()  # a write through the view reaches its base
    assert not np.all(x.numpy()[2] == 7.0) and np.all(x.numpy()[[0, 1, 3]] == 7.0)


def test_half_precision_fills_stay_finite():
    for dtype in ("float16", "bfloat16"):
        x = oar.zeros([20000], dtype=dtype)
        # (not cauchy_ or log_normal_: their tails pass float16's 65504 now and then, as in Paddle)
        for fill in ("exponential_", "bernoulli_", "random_"):
            getattr(x, fill)()
            assert x.dtype.name == dtype and np.all(np.isfinite(x.astype("float32").numpy())), (dtype, fill)
        x.geometric_(0.5)
        assert np.all(np.isfinite(x.astype("float32").numpy()))


def test_random_range_must_fit_the_dtype():
    with pytest.raises(ValueError, match=r"random_: the range \[0, 999\] does not fit the tensor's dtype int8"):
        oar.zeros([3], dtype="int8").random_(0, 1000)
    with pytest.raises(ValueError, match="dtype uint8"):
        oar.zeros([3], dtype="uint8").random_(-1, 5)
