"""oar.sparse (paddle.sparse): COO/CSR construction and conversions, the ops
on them checked against dense numpy references, gradients through the
values, printing, and the errors for malformed input."""
import numpy as np
import pytest

import oar as paddle
from oar import sparse
from conftest import assert_close

DENSE = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]], "float32")


def _coo():
    return sparse.sparse_coo_tensor([[0, 1, 1], [1, 0, 2]], [1.0, 2.0, 3.0], [2, 3])


def test_coo_and_csr_construction_and_accessors():
    s = _coo()
    assert s.is_sparse() and s.is_sparse_coo() and not s.is_sparse_csr()
    assert s.shape == [2, 3] and s.dtype == paddle.float32 and s.nnz() == 3
    assert s.indices().numpy().tolist() == [[0, 1, 1], [1, 0, 2]]
    assert_close(s.values(), [1.0, 2.0, 3.0])
    assert_close(s.to_dense(), DENSE)
    c = sparse.sparse_csr_tensor([0, 1, 3], [1, 0, 2], [1.0, 2.0, 3.0], [2, 3])
    assert c.is_sparse_csr() and not c.is_sparse_coo()
    assert c.crows().numpy().tolist() == [0, 1, 3] and c.cols().numpy().tolist() == [1, 0, 2]
    assert_close(c.to_dense(), DENSE)
    # The shape defaults to the smallest that holds the indices.
    assert sparse.sparse_coo_tensor([[0, 2], [1, 4]], [1.0, 1.0]).shape == [3, 5]
    d = paddle.to_tensor(DENSE)
    assert not d.is_sparse() and not d.is_sparse_coo() and not d.is_sparse_csr()


def test_dense_to_sparse_and_back():
    d = paddle.to_tensor(DENSE)
    coo = d.to_sparse_coo(2)
    assert coo.indices().numpy().tolist() == [[0, 1, 1], [1, 0, 2]]
    assert_close(coo.values(), [1.0, 2.0, 3.0])
    csr = d.to_sparse_csr()
    assert csr.crows().numpy().tolist() == [0, 1, 3] and csr.cols().numpy().tolist() == [1, 0, 2]
    assert_close(csr.to_sparse_coo(2).to_dense(), DENSE)
    assert_close(coo.to_sparse_csr().to_dense(), DENSE)
    # sparse_dim=1: rows with any non-zero are stored with their dense values.
    rows = paddle.to_tensor(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 0.0]], "float32")).to_sparse_coo(1)
    assert rows.indices().numpy().tolist() == [[1]]
    assert_close(rows.values(), [[1.0, 0.0]])
    assert_close(rows.to_dense(), [[0.0, 0.0], [1.0, 0.0], [0.0, 0.0]])


def test_coalesce_sums_duplicates_and_sorts():
    s = sparse.sparse_coo_tensor([[1, 0, 0], [0, 1, 1]], [3.0, 1.0, 2.0], [2, 2])
    assert s.nnz() == 3
    c = sparse.coalesce(s)
    assert c.indices().numpy().tolist() == [[0, 1], [1, 0]]
    assert_close(c.values(), [3.0, 3.0])
    assert_close(s.to_dense(), [[0.0, 3.0], [3.0, 0.0]])


def test_matmul_sparse_times_dense_and_sparse():
    rng = np.random.default_rng(0)
    y = rng.standard_normal((3, 4)).astype("float32")
    for s in (_coo(), _coo().to_sparse_csr()):
        out = sparse.matmul(s, paddle.to_tensor(y))
        assert isinstance(out, paddle.Tensor)
        assert_close(out, DENSE @ y, rtol=1e-5)
    other = paddle.to_tensor(DENSE.T.copy()).to_sparse_coo(2)
    prod = sparse.matmul(_coo(), other)
    assert prod.is_sparse_coo()
    assert_close(prod.to_dense(), DENSE @ DENSE.T)
    assert_close(sparse.mv(_coo(), paddle.to_tensor([1.0, 2.0, 3.0])), DENSE @ [1.0, 2.0, 3.0])
    mask = paddle.to_tensor(np.array([[1.0, 0.0], [0.0, 1.0]], "float32")).to_sparse_coo(2)
    mm = sparse.masked_matmul(paddle.to_tensor(DENSE), paddle.to_tensor(DENSE.T.copy()), mask)
    assert_close(mm.to_dense(), (DENSE @ DENSE.T) * np.eye(2))
    with pytest.raises(ValueError, match="contracted dims 3 and 2 differ"):
        sparse.matmul(_coo(), paddle.ones([2, 2]))


def test_add_subtract_multiply_divide():
    a = _coo()
    b = sparse.sparse_coo_tensor([[0, 1], [0, 2]], [5.0, 7.0], [2, 3])
    dense_b = np.array([[5.0, 0.0, 0.0], [0.0, 0.0, 7.0]], "float32")
    assert_close(sparse.add(a, b).to_dense(), DENSE + dense_b)
    assert_close(sparse.subtract(a, b).to_dense(), DENSE - dense_b)
    assert_close(sparse.multiply(a, b).to_dense(), DENSE * dense_b)
    assert sparse.multiply(a, b).nnz() == 1  # the common entries only
    assert_close(sparse.multiply(a, 2.0).to_dense(), DENSE * 2)
    assert_close(sparse.divide(a, a).to_dense(), (DENSE != 0).astype("float32"))
    csr = a.to_sparse_csr()
    added = sparse.add(csr, csr)
    assert added.is_sparse_csr()
    assert_close(added.to_dense(), 2 * DENSE)
    assert_close((a + a).to_dense(), 2 * DENSE)
    with pytest.raises(ValueError, match=r"x has shape \[2, 3\] but y has shape \[3, 2\]"):
        sparse.add(a, sparse.sparse_coo_tensor([[0], [0]], [1.0], [3, 2]))
    with pytest.raises(TypeError, match="same format"):
        sparse.add(a, csr)
    with pytest.raises(ValueError, match="same sparsity pattern"):
        sparse.divide(a, b)


def test_unary_ops_apply_to_values():
    v = np.array([-1.0, 0.25, 4.0], "float32")
    s = sparse.sparse_coo_tensor([[0, 1, 1], [1, 0, 2]], v, [2, 3])
    for name, ref in (("abs", np.abs), ("sin", np.sin), ("tanh", np.tanh), ("square", np.square),
                      ("neg", np.negative)):
        assert_close(getattr(sparse, name)(s).values(), ref(v), rtol=1e-5)
    pos = sparse.abs(s)
    assert_close(sparse.sqrt(pos).values(), np.sqrt(np.abs(v)), rtol=1e-5)
    assert_close(sparse.pow(s, 3).values(), v ** 3, rtol=1e-5)
    assert_close(sparse.nn.functional.relu(s).to_dense(), np.maximum(s.to_dense().numpy(), 0))
    assert_close(sparse.nn.ReLU()(s.to_sparse_csr()).to_dense(), np.maximum(s.to_dense().numpy(), 0))
    c = sparse.cast(s, "int32", "float64")
    assert c.dtype == paddle.float64 and c.indices().dtype == paddle.int32
    assert_close(c.values(), v.astype("float64"))


def test_transpose_and_sum():
    s = _coo()
    t = sparse.transpose(s, [1, 0])
    assert t.shape == [3, 2]
    assert_close(t.to_dense(), DENSE.T)
    assert_close(sparse.transpose(s.to_sparse_csr(), [1, 0]).to_dense(), DENSE.T)
    total = sparse.sum(s)
    assert_close(total.values(), [6.0])
    col = sparse.sum(s, axis=0)
    assert col.shape == [3]
    assert_close(col.to_dense(), DENSE.sum(axis=0))
    row = sparse.sum(s, axis=1, keepdim=True)
    assert row.shape == [2, 1]
    assert_close(row.to_dense(), DENSE.sum(axis=1, keepdims=True))


def test_gradients_flow_to_the_values():
    values = paddle.to_tensor([1.0, 2.0, 3.0], stop_gradient=False)
    s = sparse.sparse_coo_tensor([[0, 1, 1], [1, 0, 2]], values, [2, 3])
    y = paddle.to_tensor(np.arange(6, dtype="float32").reshape(3, 2))
    out = sparse.matmul(sparse.nn.functional.relu(sparse.add(s, s)), y)
    paddle.sum(out).backward()
    # d/dv_k of sum(relu(2 v) @ y) = 2 * sum(y[col_k, :]) for v_k > 0.
    assert_close(values.grad, [2 * y.numpy()[1].sum(), 2 * y.numpy()[0].sum(), 2 * y.numpy()[2].sum()])
    dense_grad = paddle.to_tensor(DENSE, stop_gradient=False)
    paddle.sum(dense_grad.to_sparse_coo(2).to_dense() * 3.0).backward()
    assert_close(dense_grad.grad, 3.0 * (DENSE != 0))


def test_softmax_over_the_stored_entries_of_each_row():
    values = paddle.to_tensor([1.0, 2.0, 3.0, -50.0], stop_gradient=False)
    s = sparse.sparse_csr_tensor([0, 1, 4], [1, 0, 1, 2], values, [2, 3])
    out = sparse.nn.Softmax()(s)
    assert out.is_sparse_csr()
    row1 = np.exp([2.0, 3.0, -50.0]) / np.exp([2.0, 3.0, -50.0]).sum()
    assert_close(out.values(), np.concatenate([[1.0], row1]), rtol=1e-5, atol=1e-7)
    paddle.sum(out.values() * paddle.to_tensor([0.0, 1.0, 0.0, 0.0])).backward()
    # d softmax_0 / d v_j = p_0 (delta_0j - p_j) within row 1.
    assert_close(values.grad, np.concatenate([[0.0], row1[0] * (np.eye(3)[0] - row1)]), rtol=1e-4, atol=1e-7)
    assert out.grad is None and s.grad is not None
    assert_close(s.grad.values(), values.grad)


def test_printing_follows_paddle():
    text = str(_coo())
    assert text.startswith("Tensor(shape=[2, 3], dtype=float32, place=")
    assert "indices=[[0, 1, 1],\n" in text and "values=[1., 2., 3.])" in text
    csr_text = str(_coo().to_sparse_csr())
    assert "crows=[0, 1, 3]" in csr_text and "cols=[1, 0, 2]" in csr_text


def test_malformed_input_raises_sentences():
    with pytest.raises(ValueError, match="indices hold 2 entries but values has shape \\[3\\]"):
        sparse.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0, 3.0], [2, 2])
    with pytest.raises(ValueError, match="out of range"):
        sparse.sparse_coo_tensor([[0, 5], [1, 0]], [1.0, 2.0], [2, 2])
    with pytest.raises(ValueError, match="crows must be 3 non-decreasing offsets"):
        sparse.sparse_csr_tensor([0, 2, 1], [0, 1], [1.0, 2.0], [2, 2])
    with pytest.raises(ValueError, match="column index is out of range"):
        sparse.sparse_csr_tensor([0, 1, 2], [0, 3], [1.0, 2.0], [2, 2])
    with pytest.raises(TypeError, match="expected a sparse tensor"):
        sparse.abs(paddle.ones([2]))
    with pytest.raises(ValueError, match="sparse_dim must be in"):
        paddle.ones([2, 2]).to_sparse_coo(3)
