"""The compiler plugin from Python (docs/compiler.md): to_static(fn,
backend="CINN") fuses the reductions a user writes as primitives (RMSNorm as
x.pow(2).mean(-1, keepdim=True), rsqrt and two multiplies; softmax,
layer_norm, log_softmax, bias + gelu) into fusion_group kernels, and the
compiled program equals the uncompiled one (values and gradients) at random
shapes, at several sizes of its dynamic dims, for f32, f64, bf16 and f16.

The uncompiled peer is the same function under to_static without a backend
(the environment's choice: this module clears OAR_COMPILER and
FLAGS_use_cinn), and numpy in float64 on the same (rounded) inputs.
The disk cache goes to a temporary directory (OAR_COMPILER_CACHE_DIR)."""
import os
import zlib

import numpy as np
import pytest

for _name in ("OAR_COMPILER", "FLAGS_use_cinn", "FLAGS_prim_all"):
    os.environ.pop(_name, None)

import oar  # noqa: E402
import oar.nn.functional as F  # noqa: E402
from oar.static import InputSpec  # noqa: E402
from compiler_helpers import private_compiler_cache  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def compiler_cache(tmp_path_factory):
    """A private compiler cache for this module, on the cpu device."""
    yield from private_compiler_cache(tmp_path_factory, "compiler_cache")


# ---- the programs, written as a user writes them (primitives) ----
def rms_norm(x, w):
    return x * oar.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def softmax(x):
    e = oar.exp(x - oar.max(x, axis=-1, keepdim=True))
    return e / e.sum(-1, keepdim=True)


def log_softmax(x):
    s = x - oar.max(x, axis=-1, keepdim=True)
    return s - oar.log(oar.exp(s).sum(-1, keepdim=True))


def layer_norm(x, w, b):
    d = x - x.mean(-1, keepdim=True)
    return d * oar.rsqrt((d * d).mean(-1, keepdim=True) + 1e-5) * w + b


def bias_gelu(x, b):
    return F.gelu(x + b)


# numpy references in float64
def np_rms_norm(x, w):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w


def np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_log_softmax(x):
    s = x - x.max(-1, keepdims=True)
    return s - np.log(np.exp(s).sum(-1, keepdims=True))


def np_layer_norm(x, w, b):
    d = x - x.mean(-1, keepdims=True)
    return d / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-5) * w + b


def np_bias_gelu(x, b):
    from math import erf
    v = x + b
    return 0.5 * v * (1.0 + np.vectorize(erf)(v / np.sqrt(2.0)))


# name: (function, numpy reference, input shapes as functions of (rows, cols), whether cols may be dynamic)
CASES = {
    "rms_norm": (rms_norm, np_rms_norm, [lambda r, c: [r, c], lambda r, c: [c]], False),
    "softmax": (softmax, np_softmax, [lambda r, c: [r, c]], True),
    "log_softmax": (log_softmax, np_log_softmax, [lambda r, c: [r, c]], True),
    "layer_norm": (layer_norm, np_layer_norm, [lambda r, c: [r, c], lambda r, c: [c], lambda r, c: [c]], False),
    "bias_gelu": (bias_gelu, np_bias_gelu, [lambda r, c: [r, c], lambda r, c: [c]], False),
}
# Per oar dtype name: (tolerance against the uncompiled program, tolerance against numpy)
# (uncompiled rounds every op to bf16/f16, the compiled kernel once: they may differ by both errors.)
DTYPES = {"float32": (2e-5, 2e-5), "float64": (1e-12, 1e-12), "bfloat16": (8e-2, 4e-2), "float16": (8e-3, 4e-3)}


def make_inputs(case, rows, cols, dtype, rng):
    """(oar tensors in `dtype`, the same values as float64 numpy arrays)."""
    tensors, arrays = [], []
    for shape in CASES[case][2]:
        a = rng.standard_normal(shape(rows, cols)).astype(np.float32)
        t = oar.to_tensor(a)
        if dtype != "float32":
            t = t.astype(dtype)
        tensors.append(t)
        arrays.append(t.astype("float64").numpy())
    return tensors, arrays


def specs_of(case, cols, dtype):
    """Input specs with a dynamic row count (and dynamic cols where the case allows it)."""
    dyn_cols = CASES[case][3]
    specs = []
    for shape in CASES[case][2]:
        s = shape(-1, None if dyn_cols else cols)
        specs.append(InputSpec([None if d == -1 else d for d in s], dtype=dtype))
    return specs


def compiled_and_plain(case, cols, dtype):
    fn = CASES[case][0]
    specs = specs_of(case, cols, dtype)
    return oar.jit.to_static(fn, input_spec=specs, backend="CINN"), oar.jit.to_static(fn, input_spec=specs)


def to_f64(t):
    return t.astype("float64").numpy()


def cache_files(path):
    return sorted(p.name for p in path.iterdir())


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("case", list(CASES))
def test_compiled_equals_uncompiled_at_several_dynamic_sizes(case, dtype, compiler_cache):
    rng = np.random.default_rng(zlib.crc32(f"{case} {dtype}".encode()))
    # cols not a multiple of any vector width, then a long row (the other size bucket)
    for cols in (37, 1030):
        compiled, plain = compiled_and_plain(case, cols, dtype)
        for rows in (1, 7, 130):
            tensors, arrays = make_inputs(case, rows, cols, dtype, rng)
            got, want = compiled(*tensors), plain(*tensors)
            assert got.dtype == want.dtype and got.shape == want.shape == [rows, cols]
            tol, ref_tol = DTYPES[dtype]
            np.testing.assert_allclose(to_f64(got), to_f64(want), rtol=tol, atol=tol,
                                       err_msg=f"{case} {dtype} [{rows}, {cols}]: compiled vs uncompiled")
            np.testing.assert_allclose(to_f64(got), CASES[case][1](*arrays), rtol=ref_tol, atol=ref_tol,
                                       err_msg=f"{case} {dtype} [{rows}, {cols}]: compiled vs numpy")
        assert "fusion_group" in compiled.program, f"{case} {dtype}: nothing fused:\n{compiled.program}"
        assert "fusion_group" not in plain.program
        assert compiled.trace_count == 1  # every size ran the one trace


def test_a_new_batch_size_never_compiles_again(compiler_cache):
    rng = np.random.default_rng(3)
    compiled, _ = compiled_and_plain("softmax", None, "float32")
    tensors, _ = make_inputs("softmax", 4, 300, "float32", rng)
    compiled(*tensors)
    before = cache_files(compiler_cache)
    assert any(name.endswith(".so") for name in before), before
    for rows, cols in ((1, 300), (333, 300), (5, 2000), (64, 3)):
        tensors, arrays = make_inputs("softmax", rows, cols, "float32", rng)
        np.testing.assert_allclose(compiled(*tensors).numpy(), np_softmax(arrays[0]), rtol=2e-5, atol=1e-6)
    assert cache_files(compiler_cache) == before
    assert compiled.trace_count == 1


@pytest.mark.parametrize("case", ["rms_norm", "softmax", "layer_norm", "log_softmax"])
def test_gradients_through_the_compiled_training_program_equal_uncompiled(case):
    rng = np.random.default_rng(11)
    compiled, plain = compiled_and_plain(case, 48, "float32")
    results = []
    for sf in (compiled, plain):
        tensors, _ = make_inputs(case, 9, 48, "float32", np.random.default_rng(5))
        for t in tensors:
            t.stop_gradient = False
        seed = oar.to_tensor(rng.standard_normal([9, 48]).astype(np.float32)) if not results else results[0][0]
        loss = (sf(*tensors) * seed).sum()
        loss.backward()
        results.append((seed, float(loss), [t.grad.numpy() for t in tensors]))
    (_, loss_c, grads_c), (_, loss_p, grads_p) = results
    np.testing.assert_allclose(loss_c, loss_p, rtol=1e-5)
    for i, (gc, gp) in enumerate(zip(grads_c, grads_p)):
        np.testing.assert_allclose(gc, gp, rtol=1e-4, atol=1e-5, err_msg=f"{case}: gradient of input {i}")


def test_backward_ops_in_a_program_fuse_too():
    # oar.grad inside the traced function emits the backward into the program
    # (docs/static.md): the backward's row reductions (RMSNorm's d/dx sums a
    # row) are fused like the forward's.
    def rms_grad(x, w):
        x.stop_gradient = False
        y = rms_norm(x, w)
        return oar.grad((y * y).sum(), x, create_graph=True)[0]

    specs = [InputSpec([None, 64]), InputSpec([64])]
    compiled = oar.jit.to_static(rms_grad, input_spec=specs, backend="CINN")
    plain = oar.jit.to_static(rms_grad, input_spec=specs)
    rng = np.random.default_rng(2)
    for rows in (3, 50):
        x = oar.to_tensor(rng.standard_normal([rows, 64]).astype(np.float32))
        w = oar.to_tensor(rng.standard_normal([64]).astype(np.float32))
        np.testing.assert_allclose(compiled(x, w).numpy(), plain(x, w).numpy(), rtol=1e-4, atol=1e-5)
    assert compiled.program.count("fusion_group(") >= 2, compiled.program


def test_composite_ops_give_the_same_values_under_the_compiler():
    # F.rms_norm, F.softmax and F.layer_norm are composite ops: the compiler
    # decomposes them under FLAGS_prim_all (test_compiler_env.py); here only
    # the values are checked with backend="CINN".
    rng = np.random.default_rng(8)
    x = oar.to_tensor(rng.standard_normal([6, 80]).astype(np.float32))
    w = oar.to_tensor(rng.standard_normal([80]).astype(np.float32))
    b = oar.to_tensor(rng.standard_normal([80]).astype(np.float32))
    for fn, args in ((lambda x, w: F.rms_norm(x, weight=w), (x, w)), (lambda x: F.softmax(x), (x,)),
                     (lambda x, w, b: F.layer_norm(x, 80, w, b), (x, w, b))):
        specs = [InputSpec([None] + list(a.shape[1:])) for a in args]
        got = oar.jit.to_static(fn, input_spec=specs, backend="CINN")(*args)
        np.testing.assert_allclose(got.numpy(), fn(*args).numpy(), rtol=2e-5, atol=2e-6)


def test_a_group_with_a_matmul_boundary_keeps_the_matmul_and_fuses_around_it():
    # matmul is opaque: the bias + gelu after it and the softmax after that fuse.
    def mlp(x, w, b):
        return softmax(F.gelu(oar.matmul(x, w) + b))

    rng = np.random.default_rng(4)
    x = oar.to_tensor(rng.standard_normal([10, 16]).astype(np.float32))
    w = oar.to_tensor(rng.standard_normal([16, 24]).astype(np.float32))
    b = oar.to_tensor(rng.standard_normal([24]).astype(np.float32))
    specs = [InputSpec([None, 16]), InputSpec([16, 24]), InputSpec([24])]
    compiled = oar.jit.to_static(mlp, input_spec=specs, backend="CINN")
    np.testing.assert_allclose(compiled(x, w, b).numpy(), mlp(x, w, b).numpy(), rtol=2e-5, atol=2e-6)
    program = compiled.program
    assert "matmul" in program and "fusion_group" in program, program


@pytest.mark.parametrize("case,shape", [("layer_norm", [8, 32]), ("softmax", [4, 8, 8]), ("rms_norm", [8, 32])])
def test_rows_of_several_dims_fuse(case, shape):
    # A transformer's norms reduce [batch, seq, d] over d and its attention
    # softmax [batch, heads, seq, seq] over the last axis: the rows are
    # several dims (one dynamic), and the group must still lower.
    rng = np.random.default_rng(6)
    cols = shape[-1]
    fn, ref = CASES[case][0], CASES[case][1]
    specs = [InputSpec([None] + shape)] + [InputSpec([cols])] * (len(CASES[case][2]) - 1)
    compiled = oar.jit.to_static(fn, input_spec=specs, backend="CINN")
    for batch in (1, 3):
        arrays = [rng.standard_normal([batch] + shape).astype(np.float32)] + [
            rng.standard_normal([cols]).astype(np.float32) for _ in specs[1:]]
        got = compiled(*[oar.to_tensor(a) for a in arrays])
        np.testing.assert_allclose(got.numpy(), ref(*[a.astype(np.float64) for a in arrays]), rtol=2e-5, atol=2e-5)
    assert "fusion_group" in compiled.program, compiled.program
