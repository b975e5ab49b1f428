"""Training through tensor-dependent loops in to_static (Note [VJP of while]
in core/ir/src/autodiff.cpp): the converted `while` is differentiated by
replaying its iterations in reverse, so gradients and SGD steps equal eager
mode's for any trip count, with one trace."""
import numpy as np

import oar
from oar import nn


class DecayUntilSmall(nn.Layer):
    """Applies a linear map until the activations are small: a trip count
    that depends on the weights and the input, as a solver to a tolerance."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.out = nn.Linear(3, 1)

    def forward(self, x):
        h = x
        steps = oar.zeros([], dtype="int64")
        while h.abs().max() > 0.5 and steps < 6:
            h = oar.tanh(self.fc(h)) * 0.7
            steps = steps + 1
        return self.out(h).sum(), steps


def _model(seed):
    oar.seed(seed)
    return DecayUntilSmall()


def _train(model, xs, static):
    fn = oar.jit.to_static(model.forward) if static else model.forward
    opt = oar.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
    losses, trips = [], []
    for x in xs:
        loss, steps = fn(oar.to_tensor(x))
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss.numpy()))
        trips.append(int(steps.numpy()))
    return losses, trips, fn


def test_sgd_through_a_converted_while_equals_eager():
    rng = np.random.default_rng(0)
    xs = [rng.normal(scale=s, size=(2, 3)).astype("float32") for s in (3.0, 0.1, 1.0, 2.0)]
    eager, static = _model(1), _model(1)
    want_losses, want_trips, _ = _train(eager, xs, static=False)
    got_losses, got_trips, fn = _train(static, xs, static=True)
    assert got_trips == want_trips
    assert len(set(want_trips)) > 1  # the inputs take different trip counts (0 for the small one)
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-5, atol=1e-6)
    for (name, p), q in zip(static.named_parameters(), eager.parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
    assert fn.trace_count == 1
    assert "while(" in fn.program


def test_gradient_of_a_loop_carried_sum_equals_eager():
    def accumulate(x, w):
        total = oar.zeros_like(x)
        i = oar.zeros([], dtype="int64")
        while i < 4:
            total = total + oar.sin(x * w) * (i.astype("float32") + 1.0)
            x = x * 0.9
            i = i + 1
        return total.sum()

    static = oar.jit.to_static(accumulate)
    grads = []
    for f in (accumulate, static):
        x = oar.to_tensor(np.array([0.3, -1.2, 2.0], dtype="float32"), stop_gradient=False)
        w = oar.to_tensor(np.array([1.5, 0.5, -0.25], dtype="float32"), stop_gradient=False)
        f(x, w).backward()
        grads.append((x.grad.numpy(), w.grad.numpy()))
    np.testing.assert_allclose(grads[1][0], grads[0][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grads[1][1], grads[0][1], rtol=1e-5, atol=1e-6)
