"""Training programs through the compiler (issue 15 item 5): the static
training program of a transformer block (oar.nn.TransformerEncoderLayer +
cross entropy, AdamW) and the PINN's grad-of-grad program (the Laplacian by
oar.grad inside the traced loss, Adam) compile under
to_static(..., backend="CINN") and train with the same losses as the
uncompiled static program and as eager mode, step by step."""
import math
import os
import sys

import numpy as np
import pytest

for _name in ("OAR_COMPILER", "FLAGS_use_cinn", "FLAGS_prim_all"):
    os.environ.pop(_name, None)

import oar  # noqa: E402
import oar.nn as nn  # noqa: E402
import oar.nn.functional as F  # noqa: E402
from oar.static import InputSpec  # noqa: E402
from compiler_helpers import private_compiler_cache  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "python"))
import pinn_poisson  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def compiler_cache(tmp_path_factory):
    """A private compiler cache for this module, on the cpu device."""
    yield from private_compiler_cache(tmp_path_factory, "compiler_cache_train")


class BlockLoss(nn.Layer):
    """One post-norm transformer block (no dropout), then cross entropy of
    its outputs read as logits over d_model classes."""

    def __init__(self, d_model=32, heads=4, ffn=64):
        super().__init__()
        self.block = nn.TransformerEncoderLayer(d_model, heads, ffn, dropout=0.0, activation="gelu")
        self.d_model = d_model

    def forward(self, x, labels):
        logits = self.block(x)
        return F.cross_entropy(oar.reshape(logits, [-1, self.d_model]), oar.reshape(labels, [-1]))


class PinnLoss(nn.Layer):
    """The PINN's loss: mean((Δu + f)^2) inside + 100 mean(u^2) on the boundary, Δu by grad-of-grad."""

    def __init__(self):
        super().__init__()
        self.net = pinn_poisson.MLP(width=16, depth=2)

    def forward(self, inner, boundary):
        inner.stop_gradient = False
        u = self.net(inner)
        f = 2 * math.pi ** 2 * oar.sin(math.pi * inner[:, 0:1]) * oar.sin(math.pi * inner[:, 1:2])
        r = pinn_poisson.laplacian(u, inner) + f
        return (r * r).mean() + 100.0 * (self.net(boundary) ** 2).mean()


def train(make, mode, optimizer, batches, specs):
    """Losses of len(batches) steps of a fresh model (seeded alike) in `mode`."""
    oar.seed(2026)
    model = make()
    if mode == "compiled":
        model = oar.jit.to_static(model, input_spec=specs, backend="CINN")
    elif mode == "static":
        model = oar.jit.to_static(model, input_spec=specs)
    opt = optimizer(model.parameters())
    losses = []
    for batch in batches:
        loss = model(*batch)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))
    return losses, model


def check_same_losses(make, optimizer, batches, specs, rtol):
    results = {mode: train(make, mode, optimizer, batches, specs) for mode in ("compiled", "static", "eager")}
    compiled, static, eager = (results[m][0] for m in ("compiled", "static", "eager"))
    assert all(math.isfinite(v) for v in compiled), compiled
    np.testing.assert_allclose(compiled, static, rtol=rtol, err_msg="compiled vs uncompiled static losses")
    np.testing.assert_allclose(compiled, eager, rtol=rtol, err_msg="compiled vs eager losses")
    assert compiled[-1] < compiled[0], f"no progress: {compiled}"
    program = results["compiled"][1].forward.program
    assert "fusion_group" in program, program
    assert "fusion_group" not in results["static"][1].forward.program
    return results


def test_transformer_block_trains_with_adamw_compiled_as_uncompiled():
    rng = np.random.default_rng(0)
    # two batch sizes (MultiHeadAttention's reshape specializes the trace to each)
    a, b = [(oar.to_tensor(rng.standard_normal([n, 8, 32]).astype(np.float32)),
             oar.to_tensor(rng.integers(0, 32, [n, 8]).astype(np.int64))) for n in (4, 3)]
    batches = [a, b, a, b, a]
    specs = [InputSpec([None, 8, 32]), InputSpec([None, 8], dtype="int64")]
    results = check_same_losses(BlockLoss, lambda p: oar.optimizer.AdamW(learning_rate=3e-3, parameters=p),
                                batches, specs, rtol=1e-4)
    # With a dynamic batch the loss group (second layer_norm + cross entropy)
    # has inputs whose dynamic dims only cross_entropy related ([s0, 8, 32]
    # and a label count [s2]): lowering refuses it and it runs unfused; the
    # other groups stay fused.
    assert results["compiled"][1].forward.program.count("fusion_group(") >= 5


def test_transformer_block_loss_fuses_into_one_kernel_and_trains_at_fixed_sizes():
    # At fixed sizes the second layer_norm and the cross entropy of its
    # reshape ([4, 8] rows, then [32]) lower into one kernel: no reduction of
    # the loss is left outside a group. Lowering once refused the pair ("other
    # rows"), so they ran unfused and the compiled step was slower than the
    # static one; fused, an FMA in one of the kernel's loops and not the next
    # made max's VJP NaN from the second step on (ToolchainConfig:
    # -ffp-contract=off).
    rng = np.random.default_rng(3)
    batch = (oar.to_tensor(rng.standard_normal([4, 8, 32]).astype(np.float32)),
             oar.to_tensor(rng.integers(0, 32, [4, 8]).astype(np.int64)))
    specs = [InputSpec([4, 8, 32]), InputSpec([4, 8], dtype="int64")]
    results = check_same_losses(BlockLoss, lambda p: oar.optimizer.AdamW(learning_rate=3e-3, parameters=p),
                                [batch] * 5, specs, rtol=1e-4)
    program = results["compiled"][1].forward.program
    loose = [line for line in program.splitlines()
             if any(f"= {op}(" in line for op in ("max", "sum", "log", "exp"))]
    assert not loose, "\n".join(loose)


def test_pinn_grad_of_grad_program_trains_compiled_as_uncompiled():
    rng = np.random.default_rng(1)
    boundary = pinn_poisson.boundary_points(32)
    a, b = [(oar.to_tensor(rng.random([n, 2]).astype(np.float32)), boundary) for n in (64, 48)]
    batches = [a, a, b, a]
    specs = [InputSpec([None, 2]), InputSpec([None, 2])]
    check_same_losses(PinnLoss, lambda p: oar.optimizer.Adam(learning_rate=1e-2, parameters=p), batches, specs,
                      rtol=1e-4)
