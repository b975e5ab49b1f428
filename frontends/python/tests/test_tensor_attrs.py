import numpy as np
import pytest

import oar
from conftest import assert_close


def test_strides_offset_and_sizes():
    x = oar.to_tensor([[1, 2, 3], [4, 5, 6]])
    assert x.stride() == [3, 1] and x.stride(-1) == 1 and x.get_strides() == [3, 1]
    assert x[1].offset == 24 and x.itemsize == 8 and x.layout == "NCHW" and x.device == "cpu"
    assert x.data_ptr() == x.numpy().__array_interface__["data"][0]
    with pytest.raises(IndexError, match="Tensor.stride"):
        x.stride(2)


def test_new_constructors_and_repeat():
    x = oar.ones([2, 2], dtype="int32")
    y = x.new_full([2, 3], 5)
    assert y.dtype == oar.int32 and y.numpy().tolist() == [[5, 5, 5]] * 2
    assert x.new_ones(3, 1).shape == [3, 1] and x.new_zeros((2,)).numpy().tolist() == [0, 0]
    assert x.new_empty(4).shape == [4]
    a = oar.to_tensor([[1, 2], [3, 4]])
    assert_close(a.repeat(2), np.tile(a.numpy(), [1, 2]))
    assert_close(a.repeat([2, 1, 3]), np.tile(a.numpy(), [2, 1, 3]))
    parts = a.split_with_sizes([1, 1], dim=1)
    assert [p.numpy().tolist() for p in parts] == [[[1], [3]], [[2], [4]]]


def test_fill_diagonal():
    x = oar.ones([4, 3]) * 2
    x.fill_diagonal_(1.0)
    assert x.numpy().tolist() == [[1, 2, 2], [2, 1, 2], [2, 2, 1], [2, 2, 2]]
    tall = oar.ones([7, 3]) * 2
    tall.fill_diagonal_(1.0, wrap=True)
    assert np.argwhere(tall.numpy() == 1).tolist() == [[0, 0], [1, 1], [2, 2], [4, 0], [5, 1], [6, 2]]
    below = oar.zeros([7, 3])
    below.fill_diagonal_(1.0, offset=-1, wrap=True)  # Paddle's: each restart keeps the block's first cols - 1 rows
    assert np.argwhere(below.numpy() == 1).tolist() == [[1, 0], [2, 1], [5, 0], [6, 1]]
    z = oar.zeros([2, 3, 3])
    y = oar.to_tensor([[1.0, 2.0], [3.0, 4.0]], stop_gradient=False)
    out = z.fill_diagonal_tensor(y, offset=1, dim1=1, dim2=2)
    assert out.numpy()[1].tolist() == [[0, 3, 0], [0, 0, 4], [0, 0, 0]]
    out.sum().backward()
    assert_close(y.grad, np.ones([2, 2]))
    with pytest.raises(ValueError, match="fill_diagonal_tensor"):
        z.fill_diagonal_tensor(oar.ones([3]))


def test_resize_set_and_mT():
    x = oar.to_tensor([1.0, 2.0, 3.0])
    x.resize_([2, 2], fill_zero=True)
    assert x.numpy().tolist() == [[1, 2], [3, 0]]
    src = oar.to_tensor([11.0, 22.0, 33.0, 44.0, 55.0, 66.0])
    x = oar.to_tensor([1.0])
    x.set_(src, shape=[3], stride=[2])
    assert x.numpy().tolist() == [11, 33, 55]
    x.set_(src, shape=[2], offset=8)
    assert x.numpy().tolist() == [33, 44]
    x.set_(src)
    assert x._is_shared_buffer_with(src)
    with pytest.raises(ValueError, match="Tensor.set_"):
        x.set_(src, shape=[4], stride=[2])
    m = oar.randn([2, 3, 4])
    assert m.mT.shape == [2, 4, 3]


def test_grad_requires_grad_name_item_apply():
    x = oar.to_tensor(1.0, stop_gradient=False)
    (x * x).backward()
    assert x.grad.item() == 2.0
    x.grad = oar.to_tensor(3.0)
    assert x.grad.item() == 3.0
    x.grad = None
    assert x.grad is None
    assert x.requires_grad
    x.requires_grad = False
    assert x.stop_gradient
    x.name = "w"
    assert x.name == "w" and oar.ones([1]).name.startswith("generated_tensor_")
    assert oar.to_tensor([[1.5, 2.5, 3.5]]).item(0, 2) == 3.5
    assert oar.to_tensor([[1.5, 2.5, 3.5]]).item(1) == 2.5
    y = oar.to_tensor([1.0, 2.0])
    y.apply_(lambda t: 3 * t + 2)
    assert y.numpy().tolist() == [5, 8]
    with pytest.raises(RuntimeError, match="Tensor.apply"):
        oar.to_tensor([1.0], stop_gradient=False).apply(lambda t: t)
