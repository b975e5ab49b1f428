"""print(tensor) in Paddle's format (the strings are Paddle 3.3's output for the same tensors)."""
import numpy as np
import pytest

import oar

H = "Tensor(shape={}, dtype={}, place=Place(cpu), stop_gradient={},\n       "

CASES = [
    (lambda: oar.to_tensor(1.5), H.format([], "float32", True) + "1.50000000"),
    (lambda: oar.to_tensor(3), H.format([], "int64", True) + "3"),
    (lambda: oar.to_tensor(True), H.format([], "bool", True) + "True"),
    (lambda: oar.to_tensor([1.0, 2.0]), H.format([2], "float32", True) + "[1., 2.]"),
    (lambda: oar.to_tensor([1, 2]), H.format([2], "int64", True) + "[1, 2]"),
    (lambda: oar.to_tensor([True, False]), H.format([2], "bool", True) + "[True , False]"),
    (lambda: oar.to_tensor([[1.0, 2.5], [3.0, 4.0]]),
     H.format([2, 2], "float32", True) + "[[1.        , 2.50000000],\n        [3.        , 4.        ]]"),
    (lambda: oar.to_tensor([0.1, 100000.0]), H.format([2], "float32", True) + "[0.10000000, 100000.   ]"),
    (lambda: oar.to_tensor([-1, 200, 3]), H.format([3], "int64", True) + "[-1 , 200,  3 ]"),
    (lambda: oar.to_tensor([float("nan"), float("inf"), 1.0]), H.format([3], "float32", True) + "[nan , inf., 1.  ]"),
    (lambda: oar.arange(2000).astype("float32"),
     H.format([2000], "float32", True) + "[0.   , 1.   , 2.   , ..., 1997., 1998., 1999.]"),
    (lambda: oar.zeros([2, 0]), H.format([2, 0], "float32", True) + "[[],\n        []]"),
    (lambda: oar.arange(24).astype("float64").reshape([2, 3, 4]),
     H.format([2, 3, 4], "float64", True) + "[[[0. , 1. , 2. , 3. ],\n         [4. , 5. , 6. , 7. ],\n"
     "         [8. , 9. , 10., 11.]],\n\n        [[12., 13., 14., 15.],\n         [16., 17., 18., 19.],\n"
     "         [20., 21., 22., 23.]]]"),
    (lambda: oar.to_tensor([1 + 2j, 3 - 1j]),
     H.format([2], "complex64", True) + "[(1.00000000+2.00000000j), (3.00000000-1.00000000j)]"),
    (lambda: oar.to_tensor([1.0, 2.0], stop_gradient=False), H.format([2], "float32", False) + "[1., 2.]"),
]


@pytest.mark.parametrize("make,expected", CASES, ids=[str(i) for i in range(len(CASES))])
def test_str_and_repr_as_paddle(make, expected):
    t = make()
    assert str(t) == expected + ")"
    assert repr(t) == expected + ")"


def test_long_rows_wrap_at_the_line_width():
    s = str(oar.arange(30))
    assert s.endswith("[0 , 1 , 2 , 3 , 4 , 5 , 6 , 7 , 8 , 9 , 10, 11, 12, 13, 14, 15, 16, 17,\n"
                      "        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29])")


def test_set_printoptions():
    t = oar.to_tensor([1.123456, 2.0])
    try:
        oar.set_printoptions(precision=3)
        assert str(t).endswith("[1.123, 2.   ])")
        oar.set_printoptions(sci_mode=True)
        assert str(t).endswith("[1.123e+00, 2.000e+00])")
        oar.set_printoptions(sci_mode=False, threshold=4, edgeitems=1)
        assert str(oar.arange(10)).endswith("[0, ..., 9])")
    finally:
        oar.set_printoptions(precision=8, threshold=1000, edgeitems=3, sci_mode=False, linewidth=80)
    with pytest.raises(TypeError, match="set_printoptions: precision must be an int"):
        oar.set_printoptions(precision=2.5)


def test_matches_paddle_when_installed():
    paddle = pytest.importorskip("paddle")
    r = np.random.RandomState(3)
    for a in (r.randn(4, 5).astype(np.float32), r.randint(-50, 50, (3, 7)), r.randn(40, 40), r.rand(3) > 0.5):
        assert str(oar.to_tensor(a)) == str(paddle.to_tensor(a))
