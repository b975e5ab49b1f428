"""The SPMD rules of the math ops on 2 cpu ranks (dist_harness): matmul
(every transpose case, batch dims, broadcast batch), the broadcasting
binary ops, where, the reductions, argmax, softmax/log_softmax, the
activations, cast, the fill-likes, layer_norm, rms_norm and dropout. For
every op below and every placement of its inputs on a mesh of 2
(Replicate, Shard on each dim, Partial(sum) for float inputs), the
distributed result and the gradients of loss = sum(y * w) equal the dense
ones; the dense results equal numpy. Partial(max) and Partial(min) inputs
(pieces that differ per rank, dtensor_from_local) check the rules that
keep them. Rules: Note [Elementwise SPMD rules] in core/src/ops/
elementwise.cpp, Note [matmul SPMD rule] in linalg.cpp, Note [Reduction
SPMD rules] in reduce.cpp, Note [Sharded random numbers] in creation.cpp.

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


def arr(shape, seed, low=None, high=None):
    rng = np.random.default_rng(seed)
    if low is not None:
        return rng.uniform(low, high, shape).astype(np.float32)
    return rng.standard_normal(shape).astype(np.float32)


def np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def np_layer_norm(x, w, b, begin, eps=1e-5):
    axes = tuple(range(begin, x.ndim))
    c = x - x.mean(axis=axes, keepdims=True)
    return c / np.sqrt((c * c).mean(axis=axes, keepdims=True) + eps) * w + b


def np_rms_norm(x, w, eps=1e-6):
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * w


def np_gelu(x):
    from math import erf
    return (x * 0.5 * (1 + np.vectorize(erf)(x / np.sqrt(2)))).astype(np.float32)


A46, B46, B68, A64, B86 = arr([4, 6], 1), arr([4, 6], 2), arr([6, 8], 3), arr([6, 4], 4), arr([8, 6], 5)
A246, B268, B168, A56, B6 = arr([2, 4, 6], 6), arr([2, 6, 8], 7), arr([1, 6, 8], 8), arr([5, 6], 9), arr([6], 10)
C41, R16, POS46 = arr([4, 1], 11), arr([1, 6], 12), arr([4, 6], 13, 0.5, 2.0)
X238, W8, BIAS8, X328 = arr([2, 3, 8], 14), arr([8], 15), arr([8], 16), arr([3, 2, 8], 17)
COND = arr([4, 6], 18) > 0

# name: (inputs, the op on oar tensors, the op on numpy arrays). A bool
# input is a condition (never Partial, no gradient); `NO_GRAD` ops have no
# gradient (bool or integer results).
CASES = {
    "matmul": ([A46, B68], lambda a, b: oar.matmul(a, b), lambda a, b: a @ b),
    "matmul_ta": ([A64, B68], lambda a, b: oar.matmul(a, b, transpose_x=True), lambda a, b: a.T @ b),
    "matmul_tb": ([A46, B86], lambda a, b: oar.matmul(a, b, transpose_y=True), lambda a, b: a @ b.T),
    "matmul_ta_tb": ([A64, B86], lambda a, b: oar.matmul(a, b, True, True), lambda a, b: a.T @ b.T),
    "matmul_batch": ([A246, B268], lambda a, b: oar.matmul(a, b), lambda a, b: a @ b),
    "matmul_broadcast_batch": ([A246, B168], lambda a, b: oar.matmul(a, b), lambda a, b: a @ b),
    "matmul_rank2_rhs": ([A246, B68], lambda a, b: oar.matmul(a, b), lambda a, b: a @ b),
    "matmul_uneven_rows": ([A56, B68], lambda a, b: oar.matmul(a, b), lambda a, b: a @ b),
    "add": ([A46, B46], oar.add, np.add),
    "subtract": ([A46, B46], oar.subtract, np.subtract),
    "multiply": ([A46, B46], oar.multiply, np.multiply),
    "divide": ([A46, POS46], oar.divide, np.divide),
    "pow": ([POS46, B46], oar.pow, np.power),
    "maximum": ([A46, B46], oar.maximum, np.maximum),
    "minimum": ([A46, B46], oar.minimum, np.minimum),
    "add_bias_row": ([A56, B6], oar.add, np.add),
    "multiply_outer": ([C41, R16], oar.multiply, np.multiply),
    "subtract_column": ([A46, C41], oar.subtract, np.subtract),
    "multiply_scalar": ([A46], lambda a: a * 3.0, lambda a: a * 3.0),
    "add_scalar": ([A46], lambda a: a + 1.5, lambda a: a + 1.5),
    "neg": ([A46], lambda a: -a, np.negative),
    "greater_than": ([A46, B46], oar.greater_than, np.greater),
    "equal_broadcast": ([A56, B6], oar.equal, np.equal),
    "where": ([COND, A46, B6], oar.where, np.where),
    "sum_rows": ([A46], lambda x: oar.sum(x, axis=0), lambda x: x.sum(0)),
    "sum_cols_keepdim": ([A46], lambda x: oar.sum(x, axis=1, keepdim=True), lambda x: x.sum(1, keepdims=True)),
    "sum_all": ([A56], lambda x: oar.sum(x), lambda x: x.sum()),
    "mean_rows": ([A56], lambda x: oar.mean(x, axis=0), lambda x: x.mean(0)),
    "max_rows": ([A46], lambda x: oar.max(x, axis=0), lambda x: x.max(0)),
    "min_cols": ([A46], lambda x: oar.min(x, axis=1), lambda x: x.min(1)),
    "prod_rows": ([POS46], lambda x: oar.prod(x, axis=0), lambda x: x.prod(0)),
    "argmax_cols": ([A46], lambda x: oar.argmax(x, axis=1), lambda x: x.argmax(1)),
    "argmin_rows": ([A56], lambda x: oar.argmin(x, axis=0), lambda x: x.argmin(0)),
    "softmax": ([A46], lambda x: F.softmax(x, axis=1), lambda x: np_softmax(x, 1)),
    "softmax_axis0": ([A56], lambda x: F.softmax(x, axis=0), lambda x: np_softmax(x, 0)),
    "log_softmax": ([A46], lambda x: F.log_softmax(x, axis=-1), lambda x: np.log(np_softmax(x, -1))),
    "relu": ([A46], F.relu, lambda x: np.maximum(x, 0)),
    "gelu": ([A46], F.gelu, np_gelu),
    "silu": ([A46], F.silu, lambda x: x / (1 + np.exp(-x))),
    "exp": ([A46], oar.exp, np.exp),
    "cast_f64": ([A46], lambda x: oar.cast(x, "float64"), lambda x: x.astype(np.float64)),
    "cast_i32": ([POS46 * 2], lambda x: oar.cast(x, "int32"), lambda x: x.astype(np.int32)),
    "zeros_like": ([A46], oar.zeros_like, np.zeros_like),
    "full_like": ([A56], lambda x: oar.full_like(x, 2.5), lambda x: np.full_like(x, 2.5)),
    "layer_norm": ([X238, W8, BIAS8], lambda x, w, b: F.layer_norm(x, [8], w, b),
                   lambda x, w, b: np_layer_norm(x, w, b, 2)),
    "layer_norm_2d": ([X328, arr([2, 8], 19), arr([2, 8], 20)], lambda x, w, b: F.layer_norm(x, [2, 8], w, b),
                      lambda x, w, b: np_layer_norm(x, w, b, 1)),
    "rms_norm": ([X238, W8], lambda x, w: F.rms_norm(x, [8], w), lambda x, w: np_rms_norm(x, w)),
    # Without gradients the fused ops run their own rule and kernel (with
    # gradients wanted they differentiate their decomposition).
    "layer_norm_no_grad": ([X238, W8, BIAS8], lambda x, w, b: F.layer_norm(x, [8], w, b),
                           lambda x, w, b: np_layer_norm(x, w, b, 2)),
    "rms_norm_no_grad": ([X238, W8], lambda x, w: F.rms_norm(x, [8], w), lambda x, w: np_rms_norm(x, w)),
    "gelu_no_grad": ([A46], F.gelu, np_gelu),
    "var_cols": ([A46], lambda x: oar.var(x, axis=1), lambda x: x.var(1, ddof=1)),
    "linear": ([A46, B68, arr([8], 21)], F.linear, lambda x, w, b: x @ w + b),
    "logical_and": ([COND, arr([4, 6], 22) > 0], oar.logical_and, np.logical_and),
}
NO_GRAD = {"greater_than", "equal_broadcast", "argmax_cols", "argmin_rows", "cast_i32", "zeros_like", "full_like",
           "layer_norm_no_grad", "rms_norm_no_grad", "gelu_no_grad", "logical_and"}
# Gradients exact only up to f32 sums in another order.
LOOSE = {"prod_rows", "layer_norm", "layer_norm_2d", "rms_norm", "pow", "layer_norm_no_grad", "rms_norm_no_grad",
         "var_cols"}


def choices(a):
    return placement_codes(a, partial=a.dtype != np.bool_)


def combinations(name):
    return list(itertools.product(*[choices(a) for a in CASES[name][0]]))


def weights_for(ys):
    return [arr(y.shape, 100 + i).astype(np.float64 if y.dtype == oar.float64 else np.float32)
            for i, y in enumerate(ys)]


def run_case(name, fn, tensors):
    """The outputs and the gradients of sum(y * w) (numpy)."""
    outs, grads, _ = outputs_and_grads(fn, tensors, None if name in NO_GRAD else weights_for)
    return outs, grads


def dropout_body(mesh):
    """dropout(x) of x [6, 8] placed each way equals the dense dropout drawn
    with the same seed (the mask is the dense mask's slice), and so does its
    gradient; training=False is the identity."""
    x_np = arr([6, 8], 30)
    out = {}
    oar.seed(1234)
    dense = oar.to_tensor(x_np, stop_gradient=False)
    y = F.dropout(dense, p=0.5)
    oar.sum(y * 2.0).backward()
    out["dense"] = (y.numpy(), dense.grad.numpy())
    for code in ["R", "S0", "S1", "P"]:
        try:
            oar.seed(1234)
            x = dist.shard_tensor(x_np, mesh, [placement(code)], stop_gradient=False)
            y = F.dropout(x, p=0.5)
            oar.sum(y * 2.0).backward()
            out[code] = (dist.unshard_dtensor(y).numpy(), dist.unshard_dtensor(x.grad).numpy(),
                         str(y.placements))
        except Exception:  # noqa: BLE001 - reported per placement by the test
            out[code] = traceback.format_exc()
    return out


# Partial(max) / Partial(min) inputs: rank r holds piece r; the value is their max (min).
PARTIAL_EXTREMUM = {
    "max_of_pmax": ("max", lambda x: oar.max(x, axis=0), lambda v: v.max(0)),
    "maximum_pmax_replicated": ("max", lambda x: oar.maximum(x, oar.to_tensor(B46)), lambda v: np.maximum(v, B46)),
    "min_of_pmin": ("min", lambda x: oar.min(x, axis=1), lambda v: v.min(1)),
    "neg_pmax": ("max", lambda x: -x, lambda v: -v),
    "relu_pmax": ("max", F.relu, lambda v: np.maximum(v, 0)),
    "sum_pmax": ("max", lambda x: oar.sum(x, axis=0), lambda v: v.sum(0)),
}
PIECES = [arr([4, 6], 40), arr([4, 6], 41)]


def partial_extremum_body(rank, mesh):
    out = {}
    for name, (kind, fn, _) in PARTIAL_EXTREMUM.items():
        try:
            reduce_type = dist.ReduceType.kRedMax if kind == "max" else dist.ReduceType.kRedMin
            x = dist.dtensor_from_local(oar.to_tensor(PIECES[rank]), mesh, [dist.Partial(reduce_type)])
            y = fn(x)
            out[name] = dist.unshard_dtensor(y).numpy() if y.is_dist() else y.numpy()
        except Exception:  # noqa: BLE001
            out[name] = traceback.format_exc()
    return out


def all_cases_body(rank, world):
    mesh = dist.ProcessMesh([0, 1], dim_names=["x"])
    out = {}
    for name, (inputs, fn, _) in CASES.items():
        def leaf(a):
            return a.dtype == np.bool_ or name in NO_GRAD
        dense = [oar.to_tensor(a, stop_gradient=leaf(a)) for a in inputs]
        out[(name, "dense")] = run_case(name, fn, dense)
        for combo in combinations(name):
            try:
                ts = [dist.shard_tensor(a, mesh, [placement(c)], stop_gradient=leaf(a)) for a, c in zip(inputs, combo)]
                out[(name, combo)] = run_case(name, fn, ts)
            except Exception:  # noqa: BLE001 - reported per combination by the test
                out[(name, combo)] = traceback.format_exc()
    out["dropout"] = dropout_body(mesh)
    out["partial_extremum"] = partial_extremum_body(rank, mesh)
    return out


# On a 2x2 mesh (4 ranks) the dispatcher asks each rule once per mesh dim;
# these check that the per-dim answers compose (data x tensor parallel, a
# dim split over both mesh dims, Partial along one mesh dim only).
MESH2D_PLACEMENTS = [("R", "R"), ("S0", "R"), ("R", "S1"), ("S0", "S1"), ("S1", "S0"), ("S0", "S0"), ("P", "R"),
                     ("S0", "P")]
MESH2D_CASES = {
    "matmul": ([A46, B68], lambda a, b: oar.matmul(a, b), lambda a, b: a @ b),
    "matmul_uneven_rows": ([A56, B68], lambda a, b: oar.matmul(a, b), lambda a, b: a @ b),
    "add": ([A46, B46], oar.add, np.add),
    "multiply_bias_row": ([A56, B6], oar.multiply, np.multiply),
    "sum_rows": ([A46], lambda x: oar.sum(x, axis=0), lambda x: x.sum(0)),
    "max_cols": ([A46], lambda x: oar.max(x, axis=1), lambda x: x.max(1)),
    "softmax": ([A46], lambda x: F.softmax(x, axis=1), lambda x: np_softmax(x, 1)),
    "layer_norm": ([X238, W8, BIAS8], lambda x, w, b: F.layer_norm(x, [8], w, b),
                   lambda x, w, b: np_layer_norm(x, w, b, 2)),
}


def mesh2d_combinations(name):
    inputs = MESH2D_CASES[name][0]
    per_input = [[p for p in MESH2D_PLACEMENTS if all(c == "R" or c == "P" or int(c[1:]) < a.ndim for c in p)]
                 for a in inputs]
    if len(inputs) == 3:  # layer_norm: weight and bias replicated or sharded along the second mesh dim
        per_input = [per_input[0], [("R", "R"), ("R", "S0")], [("R", "R")]]
    return list(itertools.product(*per_input))


def mesh2d_body(rank, world):
    mesh = dist.ProcessMesh([[0, 1], [2, 3]], dim_names=["dp", "mp"])
    out = {}
    for name, (inputs, fn, _) in MESH2D_CASES.items():
        out[(name, "dense")] = run_case(name, fn, [oar.to_tensor(a, stop_gradient=False) for a in inputs])
        for combo in mesh2d_combinations(name):
            try:
                ts = [dist.shard_tensor(a, mesh, [placement(c) for c in cs], stop_gradient=False)
                      for a, cs in zip(inputs, combo)]
                out[(name, combo)] = run_case(name, fn, ts)
            except Exception:  # noqa: BLE001
                out[(name, combo)] = traceback.format_exc()
    oar.seed(99)
    x_np = arr([6, 8], 31)
    out["dropout_dense"] = F.dropout(oar.to_tensor(x_np), p=0.3).numpy()
    for combo in [("S0", "S1"), ("S1", "S0"), ("S0", "S0"), ("P", "S1")]:
        try:
            oar.seed(99)
            x = dist.shard_tensor(x_np, mesh, [placement(c) for c in combo])
            out[("dropout", combo)] = dist.unshard_dtensor(F.dropout(x, p=0.3)).numpy()
        except Exception:  # noqa: BLE001
            out[("dropout", combo)] = traceback.format_exc()
    return out


@pytest.fixture(scope="module")
def results_2d():
    return run_ranks(mesh2d_body, world=4, timeout=240)


@pytest.mark.parametrize("name", list(MESH2D_CASES))
def test_2x2_mesh_sharded_equals_dense(results_2d, name):
    inputs, _, reference = MESH2D_CASES[name]
    tol = 1e-4 if name == "layer_norm" else 1e-5
    failures = []
    for rank, r in enumerate(results_2d):
        dense_y, dense_g = r[(name, "dense")]
        assert all(close(y, np.asarray(e), 1e-5) for y, e in zip(dense_y, as_list(reference(*inputs)))), name
        for combo in mesh2d_combinations(name):
            got = r[(name, combo)]
            if isinstance(got, str):
                failures.append(f"rank {rank} {combo}: raised\n{got}")
                continue
            ys, gs = got
            if not all(close(y, d, tol) for y, d in zip(ys, dense_y)):
                failures.append(f"rank {rank} {combo}: result differs")
            for i, (g, d) in enumerate(zip(gs, dense_g)):
                if not close(g, d, tol):
                    failures.append(f"rank {rank} {combo}: gradient of input {i} differs")
    assert not failures, f"{name}: {len(failures)} failures\n" + "\n".join(failures[:12])


def test_2x2_mesh_dropout_draws_the_dense_mask(results_2d):
    for rank, r in enumerate(results_2d):
        for combo in [("S0", "S1"), ("S1", "S0"), ("S0", "S0"), ("P", "S1")]:
            got = r[("dropout", combo)]
            assert not isinstance(got, str), f"rank {rank} {combo}: raised\n{got}"
            np.testing.assert_array_equal(got, r["dropout_dense"], err_msg=f"rank {rank} {combo}")


@pytest.fixture(scope="module")
def results():
    return run_ranks(all_cases_body, world=2, timeout=240)


def close(a, b, tol=1e-5):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "biu":
        return np.array_equal(a, b)
    return np.allclose(a, b, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", list(CASES))
def test_sharded_equals_dense(results, name):
    inputs, _, reference = CASES[name]
    tol = 1e-4 if name in LOOSE else 1e-5
    failures = []
    for rank, r in enumerate(results):
        dense_y, dense_g = r[(name, "dense")]
        expected = as_list(reference(*inputs))
        assert all(close(y, np.asarray(e), 1e-5) for y, e in zip(dense_y, expected)), name
        for combo in combinations(name):
            got = r[(name, combo)]
            if isinstance(got, str):
                failures.append(f"rank {rank} {combo}: raised\n{got}")
                continue
            ys, gs = got
            if not all(close(y, d, tol) for y, d in zip(ys, dense_y)):
                failures.append(f"rank {rank} {combo}: result differs")
            for i, (g, d) in enumerate(zip(gs, dense_g)):
                if (g is None) != (d is None) or (g is not None and not close(g, d, tol)):
                    failures.append(f"rank {rank} {combo}: gradient of input {i} differs")
    assert not failures, f"{name}: {len(failures)} failures\n" + "\n".join(failures[:12])


def test_sharded_dropout_draws_the_dense_mask(results):
    for rank, r in enumerate(results):
        d = r["dropout"]
        y_dense, g_dense = d["dense"]
        kept = y_dense != 0
        assert 0.3 < kept.mean() < 0.7  # p = 0.5 really drops
        np.testing.assert_allclose(y_dense[kept], arr([6, 8], 30)[kept] * 2.0, rtol=1e-6)
        for code in ["R", "S0", "S1", "P"]:
            got = d[code]
            assert not isinstance(got, str), f"rank {rank} {code}: raised\n{got}"
            y, g, _ = got
            np.testing.assert_array_equal(y, y_dense, err_msg=f"rank {rank} {code}")
            np.testing.assert_array_equal(g, g_dense, err_msg=f"rank {rank} {code}")


@pytest.mark.parametrize("name", list(PARTIAL_EXTREMUM))
def test_partial_max_and_min_inputs(results, name):
    kind, _, reference = PARTIAL_EXTREMUM[name]
    value = np.maximum(*PIECES) if kind == "max" else np.minimum(*PIECES)
    for rank, r in enumerate(results):
        got = r["partial_extremum"][name]
        assert not isinstance(got, str), f"rank {rank}: raised\n{got}"
        np.testing.assert_allclose(got, reference(value), rtol=1e-5, atol=1e-6, err_msg=f"rank {rank}")


def test_every_combination_ran(results):
    count = sum(len(combinations(n)) for n in CASES)
    assert count > 400
    assert all(len(r) == count + len(CASES) + 2 for r in results)
