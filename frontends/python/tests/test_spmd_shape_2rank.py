"""The SPMD rules of the shape and indexing ops, the vocab-parallel
embedding and cross entropy, and attention, on 2 cpu ranks (dist_harness):
for every op below and every placement of its inputs on a mesh of 2
(Replicate, Shard on each dim, Partial for float inputs), the distributed
result and the gradients of loss = sum(y * w) equal the dense ones; the
dense results equal numpy. Rules: Note [SPMD rules of data-movement ops]
in core/src/ops/manipulation.cpp, Note [Vocab-parallel embedding] in
layers.cpp, Note [Vocab-parallel cross entropy] in loss.cpp.

One pair of rank processes runs every case (a module fixture) and records
each combination's result or error, so a failure names every placement
combination that broke."""
import itertools
import traceback

import numpy as np
import pytest

import oar
import oar.distributed as dist
import oar.nn.functional as F
from dist_harness import as_list, outputs_and_grads, placement, placement_codes, run_ranks


def arr(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def ids(shape, high, seed):
    return np.random.default_rng(seed).integers(0, high, shape).astype(np.int64)


def np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def np_attention(q, k, v, causal=False):
    q, k, v = (t.transpose(0, 2, 1, 3) for t in (q, k, v))
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    if causal:
        sq, sk = s.shape[-2:]
        s = np.where(np.arange(sk)[None, :] <= np.arange(sq)[:, None] + (sk - sq), s, -1e30)
    return (np_softmax(s, -1) @ v).transpose(0, 2, 1, 3)


def np_cross_entropy(x, label):
    lsm = x - x.max(-1, keepdims=True)
    lsm = lsm - np.log(np.exp(lsm).sum(-1, keepdims=True))
    return -lsm[np.arange(len(label)), label]


X46, X5_6, X234, X416 = arr([4, 6], 1), arr([5, 6], 2), arr([2, 3, 4], 3), arr([4, 1, 6], 4)
A26, B36, A42, B43, X54 = arr([2, 6], 5), arr([3, 6], 6), arr([4, 2], 7), arr([4, 3], 8), arr([5, 4], 9)
IDS, TABLE, TABLE7 = ids([2, 3], 8, 10), arr([8, 4], 11), arr([7, 4], 12)
LOGITS, LABEL, LOGITS_UNEVEN = arr([4, 6], 13), ids([4], 6, 14), arr([4, 5], 15)
Q, K, V = arr([2, 3, 4, 2], 16), arr([2, 3, 4, 2], 17), arr([2, 3, 4, 2], 18)
INDEX = np.array([4, 0, 2], dtype=np.int64)

# name: (inputs, the op on oar tensors, the op on numpy arrays). An int64
# input is an index (never Partial, no gradient).
CASES = {
    "reshape_merge": ([X46], lambda x: oar.reshape(x, [24]), lambda x: x.reshape(24)),
    "reshape_split": ([X46], lambda x: oar.reshape(x, [2, 2, 6]), lambda x: x.reshape(2, 2, 6)),
    "reshape_regroup": ([X46], lambda x: oar.reshape(x, [6, 4]), lambda x: x.reshape(6, 4)),
    "reshape_uneven_rows": ([X5_6], lambda x: oar.reshape(x, [5, 2, 3]), lambda x: x.reshape(5, 2, 3)),
    "flatten": ([X234], lambda x: oar.flatten(x, 1, 2), lambda x: x.reshape(2, 12)),
    "flatten_all": ([X234], lambda x: oar.flatten(x), lambda x: x.reshape(24)),
    "squeeze": ([X416], lambda x: oar.squeeze(x, 1), lambda x: x[:, 0]),
    "unsqueeze": ([X46], lambda x: oar.unsqueeze(x, 1), lambda x: x[:, None]),
    "transpose": ([X234], lambda x: oar.transpose(x, [2, 0, 1]), lambda x: x.transpose(2, 0, 1)),
    "expand": ([arr([3, 1], 19)], lambda x: oar.expand(x, [2, 3, 4]),
               lambda x: np.broadcast_to(x, [2, 3, 4])),
    "broadcast_to": ([arr([3, 4], 20)], lambda x: oar.broadcast_to(x, [2, 3, 4]),
                     lambda x: np.broadcast_to(x, [2, 3, 4])),
    "concat_axis0": ([A26, B36], lambda a, b: oar.concat([a, b], 0), lambda a, b: np.concatenate([a, b], 0)),
    "concat_axis1": ([A42, B43], lambda a, b: oar.concat([a, b], 1), lambda a, b: np.concatenate([a, b], 1)),
    "stack": ([A26, arr([2, 6], 21)], lambda a, b: oar.stack([a, b], 1), lambda a, b: np.stack([a, b], 1)),
    "split": ([X46], lambda x: oar.split(x, [2, 4], axis=1), lambda x: [x[:, :2], x[:, 2:]]),
    "chunk_rows": ([X46], lambda x: oar.chunk(x, 2, axis=0), lambda x: [x[:2], x[2:]]),
    "slice": ([X46], lambda x: oar.slice(x, [1], [1], [4]), lambda x: x[:, 1:4]),
    "strided_slice": ([X46], lambda x: oar.strided_slice(x, [0], [0], [4], [2]), lambda x: x[0:4:2]),
    "pad": ([X46], lambda x: F.pad(x, [0, 0, 1, 2]), lambda x: np.pad(x, [(0, 0), (1, 2)])),
    "gather_rows": ([X54, INDEX], lambda x, i: oar.gather(x, i, axis=0), lambda x, i: x[i]),
    "index_select_cols": ([X54, np.array([3, 0, 2], dtype=np.int64)], lambda x, i: oar.index_select(x, i, axis=1),
                          lambda x, i: x[:, i]),
    "embedding": ([IDS, TABLE], lambda i, w: F.embedding(i, w), lambda i, w: w[i]),
    "embedding_uneven_vocab": ([IDS % 7, TABLE7], lambda i, w: F.embedding(i, w), lambda i, w: w[i]),
    "cross_entropy": ([LOGITS, LABEL], lambda x, y: F.cross_entropy(x, y),
                      lambda x, y: np_cross_entropy(x, y).mean()),
    "cross_entropy_uneven_classes": ([LOGITS_UNEVEN, LABEL % 5], lambda x, y: F.cross_entropy(x, y, reduction="sum"),
                                     lambda x, y: np_cross_entropy(x, y).sum()),
    "softmax_with_cross_entropy": ([LOGITS, LABEL[:, None]], lambda x, y: F.softmax_with_cross_entropy(x, y),
                                   lambda x, y: np_cross_entropy(x, y[:, 0])[:, None]),
    "attention": ([Q, K, V], lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
                  lambda q, k, v: np_attention(q, k, v)),
    "attention_causal": ([Q, K, V], lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                         lambda q, k, v: np_attention(q, k, v, causal=True)),
    "diagonal": ([X46], lambda x: oar.diagonal(x, 1), lambda x: np.diagonal(x, 1)),
    "tile": ([arr([2, 3], 22)], lambda x: oar.tile(x, [2, 1]), lambda x: np.tile(x, [2, 1])),
    "unbind": ([arr([2, 3], 23)], lambda x: oar.unbind(x, 1), lambda x: [x[:, i] for i in range(3)]),
    "one_hot_weighted": ([IDS, arr([2, 3, 8], 24)], lambda i, x: oar.multiply(F.one_hot(i, 8), x),
                         lambda i, x: np.eye(8, dtype=np.float32)[i] * x),
    "take_along_axis": ([LOGITS, LABEL[:, None]], lambda x, i: oar.take_along_axis(x, i, 1),
                        lambda x, i: np.take_along_axis(x, i, 1)),
    "nll_loss": ([LOGITS, LABEL], lambda x, y: F.nll_loss(x, y), lambda x, y: -x[np.arange(4), y].mean()),
}
# Attention's three inputs take one placement together (6^3 combinations
# would be slow); a few mixed ones besides.
SHARED_PLACEMENT = {"attention", "attention_causal"}
MIXED = {"attention": [("S0", "S0", "R"), ("S2", "R", "S2"), ("R", "S1", "S1"), ("P", "R", "R")]}


# The outputs' placements the rules give (equality with the dense result
# alone would hold for a rule that replicates everything too).
SR, S0, S1, S2, PS = "[Replicate()]", "[Shard(dim=0)]", "[Shard(dim=1)]", "[Shard(dim=2)]", "[Partial(reduce_type=SUM)]"
PLACED = {
    ("reshape_merge", ("S0",)): [S0], ("reshape_merge", ("S1",)): [SR], ("reshape_merge", ("P",)): [PS],
    ("reshape_split", ("S0",)): [S0], ("reshape_split", ("S1",)): [S2],
    ("reshape_uneven_rows", ("S0",)): [S0], ("reshape_uneven_rows", ("S1",)): [S1],
    ("flatten", ("S1",)): [SR], ("flatten", ("S0",)): [S0], ("squeeze", ("S2",)): [S1],
    ("unsqueeze", ("S1",)): [S2], ("transpose", ("S0",)): [S1], ("transpose", ("S2",)): [S0],
    ("expand", ("S0",)): [S1], ("expand", ("S1",)): [SR], ("broadcast_to", ("S1",)): [S2],
    ("concat_axis0", ("S1", "S1")): [S1], ("concat_axis0", ("S0", "S0")): [SR], ("concat_axis0", ("P", "R")): [PS],
    ("concat_axis1", ("S0", "R")): [S0], ("split", ("S0",)): [S0, S0], ("split", ("S1",)): [SR, SR],
    ("slice", ("S0",)): [S0], ("slice", ("S1",)): [SR], ("strided_slice", ("S1",)): [S1], ("pad", ("S0",)): [S0],
    ("gather_rows", ("S1", "R")): [S1], ("gather_rows", ("R", "S0")): [S0], ("gather_rows", ("P", "R")): [PS],
    ("embedding", ("R", "S0")): [PS], ("embedding", ("R", "S1")): [S2], ("embedding", ("S0", "R")): [S0],
    ("embedding", ("S1", "S0")): [PS], ("embedding_uneven_vocab", ("R", "S0")): [PS],
    ("cross_entropy", ("S0", "S0")): [PS], ("cross_entropy", ("S1", "R")): [PS],
    ("attention", ("S0", "S0", "S0")): [S0], ("attention", ("S2", "S2", "S2")): [S2],
    ("attention_causal", ("S2", "S2", "S2")): [S2], ("softmax_with_cross_entropy", ("S1", "S0")): [S0],
}


def choices(a):
    return placement_codes(a, partial=a.dtype != np.int64)


def combinations(name):
    inputs = CASES[name][0]
    if name in SHARED_PLACEMENT:
        return [(c,) * len(inputs) for c in choices(inputs[0])] + MIXED.get(name, [])
    return list(itertools.product(*[choices(a) for a in inputs]))


def weights_for(ys):
    return [arr(y.shape, 100 + i) for i, y in enumerate(ys)]


def run_case(fn, tensors):
    """The outputs, the gradients of sum(y * w) (numpy) and the outputs' placements."""
    return outputs_and_grads(fn, tensors, weights_for)


def all_cases_body(rank, world):
    mesh = dist.ProcessMesh([0, 1], dim_names=["x"])
    out = {}
    for name, (inputs, fn, _) in CASES.items():
        dense = [oar.to_tensor(a, stop_gradient=a.dtype == np.int64) for a in inputs]
        out[(name, "dense")] = run_case(fn, dense)
        for combo in combinations(name):
            try:
                ts = [dist.shard_tensor(a, mesh, [placement(c)], stop_gradient=a.dtype == np.int64)
                      for a, c in zip(inputs, combo)]
                out[(name, combo)] = run_case(fn, ts)
            except Exception:  # noqa: BLE001 - reported per combination by the test
                out[(name, combo)] = traceback.format_exc()
    return out


@pytest.fixture(scope="module")
def results():
    return run_ranks(all_cases_body, world=2, timeout=240)


def close(a, b):
    return a.shape == b.shape and np.allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", list(CASES))
def test_sharded_equals_dense(results, name):
    inputs, _, reference = CASES[name]
    failures = []
    for rank, r in enumerate(results):
        dense_y, dense_g, _ = r[(name, "dense")]
        expected = as_list(reference(*inputs))
        assert all(close(y, np.asarray(e, dtype=np.float32)) for y, e in zip(dense_y, expected)), name
        for combo in combinations(name):
            got = r[(name, combo)]
            if isinstance(got, str):
                failures.append(f"rank {rank} {combo}: raised\n{got}")
                continue
            ys, gs, placed = got
            if (name, combo) in PLACED and placed != PLACED[(name, combo)]:
                failures.append(f"rank {rank} {combo}: outputs placed {placed}, expected {PLACED[(name, combo)]}")
            if not all(close(y, d) for y, d in zip(ys, dense_y)):
                failures.append(f"rank {rank} {combo}: result differs")
            for i, (g, d) in enumerate(zip(gs, dense_g)):
                if (g is None) != (d is None) or (g is not None and not close(g, d)):
                    failures.append(f"rank {rank} {combo}: gradient of input {i} differs")
    assert not failures, f"{name}: {len(failures)} failures\n" + "\n".join(failures[:12])


def test_every_combination_ran(results):
    count = sum(len(combinations(n)) for n in CASES)
    assert count > 150
    assert all(len(r) == count + len(CASES) for r in results)


# ---- a 2x2 mesh: data parallel x vocab parallel (4 ranks) ----

VOCAB, WIDTH = 10, 4
TOKENS, TARGETS, TABLE_2D = ids([4, 3], VOCAB, 30), ids([4, 3], VOCAB, 31), arr([VOCAB, WIDTH], 32)


def tied_lm_loss(tokens, targets, table):
    """A tied-embedding language model's loss: embed, project on the table, cross entropy."""
    h = F.embedding(tokens, table)
    logits = oar.matmul(h, table, transpose_y=True)
    return F.cross_entropy(oar.reshape(logits, [-1, VOCAB]), oar.reshape(targets, [-1]))


def mesh_2x2_body(rank, world):
    mesh = dist.ProcessMesh([[0, 1], [2, 3]], dim_names=["dp", "mp"])
    table = dist.shard_tensor(TABLE_2D, mesh, [dist.Replicate(), dist.Shard(0)], stop_gradient=False)
    tokens = dist.shard_tensor(TOKENS, mesh, [dist.Shard(0), dist.Replicate()])
    targets = dist.shard_tensor(TARGETS, mesh, [dist.Shard(0), dist.Replicate()])
    h = F.embedding(tokens, table)
    loss = tied_lm_loss(tokens, targets, table)
    loss.backward()
    dense = oar.to_tensor(TABLE_2D, stop_gradient=False)
    dense_loss = tied_lm_loss(oar.to_tensor(TOKENS), oar.to_tensor(TARGETS), dense)
    dense_loss.backward()
    return {"h_placements": repr(h.placements), "loss": dist.unshard_dtensor(loss).numpy(),
            "dense_loss": dense_loss.numpy(), "grad": dist.unshard_dtensor(table.grad).numpy(),
            "grad_placements": repr(table.grad.placements), "dense_grad": dense.grad.numpy()}


def test_vocab_parallel_embedding_and_loss_on_a_2x2_mesh():
    for r in run_ranks(mesh_2x2_body, world=4, timeout=120):
        # Batch sharded over dp, the table's rows over mp: partial sums of the lookup over mp.
        assert r["h_placements"] == "[Shard(dim=0), Partial(reduce_type=SUM)]"
        np.testing.assert_allclose(r["loss"], r["dense_loss"], rtol=1e-5)
        np.testing.assert_allclose(r["grad"], r["dense_grad"], rtol=1e-5, atol=1e-6)
        assert r["grad_placements"] == "[Replicate(), Shard(dim=0)]"


# ---- bad input: an out-of-range id in one rank's piece ----

def bad_id_body(rank, world):
    mesh = dist.ProcessMesh([0, 1], dim_names=["x"])
    bad = np.array([[1, 2], [3, 9]], dtype=np.int64)  # 9 >= 8 rows, in rank 1's row of ids
    ids_ = dist.shard_tensor(bad, mesh, [dist.Shard(0)])
    F.embedding(ids_, dist.shard_tensor(TABLE, mesh, [dist.Replicate()]))


def test_an_id_out_of_range_in_one_piece_errors_on_every_rank():
    errors = run_ranks(bad_id_body, world=2, expect_error=True, timeout=60)
    assert "embedding: id 9 at position [0, 1]" in errors[1] and "out of range" in errors[1], errors[1]
    assert "embedding: another rank's piece of the id tensor [2, 2]" in errors[0] and "[Shard(0)]" in errors[0], errors[0]
