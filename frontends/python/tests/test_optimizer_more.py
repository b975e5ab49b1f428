import math

import numpy as np
import pytest

import oar


def _run(opt_cls, grads, w0=1.0, **kw):
    """Values of a scalar-like parameter after steps with the given gradients."""
    w = oar.create_parameter([1], "float32", default_initializer=oar.nn.initializer.Constant(w0))
    opt = opt_cls(parameters=[w], **kw)
    values = []
    for g in grads:
        (w * g).sum().backward()
        opt.step()
        opt.clear_grad()
        values.append(float(w.numpy()[0]))
    return values


def test_adagrad_two_steps():
    eps = 1e-6
    w1 = 1 - 0.1 * 2 / (math.sqrt(4) + eps)
    w2 = w1 - 0.1 * 1 / (math.sqrt(5) + eps)
    assert np.allclose(_run(oar.optimizer.Adagrad, [2.0, 1.0], learning_rate=0.1), [w1, w2])


def test_rmsprop_and_adadelta_two_steps():
    rho, eps = 0.95, 1e-6
    ms1 = (1 - rho) * 4
    ms2 = rho * ms1 + (1 - rho) * 1
    w1 = 1 - 0.1 * 2 / math.sqrt(ms1 + eps)
    w2 = w1 - 0.1 * 1 / math.sqrt(ms2 + eps)
    assert np.allclose(_run(oar.optimizer.RMSProp, [2.0, 1.0], learning_rate=0.1), [w1, w2], rtol=1e-5)
    eg = (1 - rho) * 4
    u1 = math.sqrt(eps / (eg + eps)) * 2
    eu = (1 - rho) * u1 * u1
    eg2 = rho * eg + (1 - rho) * 1
    u2 = math.sqrt((eu + eps) / (eg2 + eps)) * 1
    assert np.allclose(_run(oar.optimizer.Adadelta, [2.0, 1.0], learning_rate=0.5),
                       [1 - 0.5 * u1, 1 - 0.5 * (u1 + u2)], rtol=1e-5)


def test_asgd_and_rprop_two_steps():
    # ASGD with batch_num=2: d = g1, then g1 + g2 averaged over 2
    assert np.allclose(_run(oar.optimizer.ASGD, [2.0, 1.0], learning_rate=0.1, batch_num=2),
                       [1 - 0.2, 1 - 0.2 - 0.1 * 3 / 2])
    # Rprop: the step grows by 1.2 while the sign holds, shrinks by 0.5 (and skips) when it flips
    assert np.allclose(_run(oar.optimizer.Rprop, [2.0, 3.0, -1.0], learning_rate=0.1),
                       [0.9, 0.9 - 0.12, 0.9 - 0.12])
    with pytest.raises(ValueError, match="Rprop"):
        oar.optimizer.Rprop(parameters=[], etas=(1.5, 1.2))
    with pytest.raises(ValueError, match="ASGD"):
        oar.optimizer.ASGD(parameters=[], batch_num=0)


def test_nadam_radam_first_step():
    # RAdam's first step (rho_t <= 5) is SGD on the bias-corrected moment: w -= lr * g
    assert np.allclose(_run(oar.optimizer.RAdam, [2.0], learning_rate=0.1), [0.8])
    b1, b2, md = 0.9, 0.999, 0.004
    mu1, mu2 = b1 * (1 - 0.5 * 0.96 ** md), b1 * (1 - 0.5 * 0.96 ** (2 * md))
    m, v = 0.2, 0.001 * 4
    m_hat = mu2 * m / (1 - mu1 * mu2) + (1 - mu1) * 2 / (1 - mu1)
    expected = 1 - 0.1 * m_hat / (math.sqrt(v / (1 - b2)) + 1e-8)
    assert np.allclose(_run(oar.optimizer.NAdam, [2.0], learning_rate=0.1), [expected], rtol=1e-5)


def test_matches_paddle_over_several_steps():
    paddle = pytest.importorskip("paddle")
    w0 = np.array([[0.5, -1.0, 2.0], [0.3, 0.0, -0.7]], "float32")
    target = np.array([[1.0, 1.0, -1.0], [0.0, 2.0, 0.5]], "float32")
    cases = {"Adagrad": dict(learning_rate=0.1, weight_decay=0.1), "Adadelta": dict(learning_rate=0.5),
             "RMSProp": dict(learning_rate=0.1, momentum=0.5, centered=True), "NAdam": dict(learning_rate=0.1),
             "RAdam": dict(learning_rate=0.1), "ASGD": dict(learning_rate=0.01, batch_num=2),
             "Rprop": dict(learning_rate=0.1)}
    for name, kw in cases.items():
        results = []
        for fw in (paddle, oar):
            w = fw.create_parameter([2, 3], "float32", default_initializer=fw.nn.initializer.Assign(w0))
            opt = getattr(fw.optimizer, name)(parameters=[w], **kw)
            for _ in range(8):
                ((w - fw.to_tensor(target)) ** 3).sum().backward()
                opt.step()
                opt.clear_grad()
            results.append(w.numpy())
        np.testing.assert_allclose(results[1], results[0], rtol=1e-4, atol=1e-5, err_msg=name)


def _rates(scheduler, n=8):
    out = []
    for _ in range(n):
        out.append(scheduler())
        scheduler.step()
    return out


def test_schedulers_closed_form():
    L = oar.optimizer.lr
    assert np.allclose(_rates(L.LinearLR(0.6, 3, start_factor=0.5), 5), [0.3, 0.4, 0.5, 0.6, 0.6])
    cos = [0.5 * (1 + math.cos(math.pi * t / 3)) / 2 for t in range(3)]
    assert np.allclose(_rates(L.CosineAnnealingWarmRestarts(0.5, 3), 6), cos + cos)
    assert np.allclose(_rates(L.CyclicLR(0.1, 1.0, 2), 5), [0.1, 0.55, 1.0, 0.55, 0.1])
    assert np.allclose(_rates(L.CyclicLR(0.1, 1.0, 1, mode="triangular2"), 5), [0.1, 1.0, 0.1, 0.55, 0.1])
    one = _rates(L.OneCycleLR(1.0, 10, phase_pct=0.3, anneal_strategy="linear"), 10)
    assert np.allclose(one[:3], [0.04, 0.52, 1.0]) and np.isclose(one[-1], 1e-4)
    with pytest.raises(ValueError, match="OneCycleLR"):
        L.OneCycleLR(1.0, 10, anneal_strategy="step")


def test_minimize_uses_existing_gradients_and_state_dict_keys():
    lin = oar.nn.Linear(2, 1)
    opt = oar.optimizer.Adam(0.1, parameters=lin.parameters())
    assert "@step" not in opt.state_dict()
    before = lin.weight.numpy().copy()
    loss = lin(oar.ones([3, 2])).mean()
    assert opt.backward(loss) == []  # no gradients yet: nothing to update
    loss.backward()
    _, params_grads = opt.minimize(loss)
    assert len(params_grads) == 2 and not np.allclose(lin.weight.numpy(), before)
    state = opt.state_dict()
    fresh = oar.optimizer.Adam(0.1, parameters=lin.parameters())
    fresh.set_state_dict(state)
    assert fresh._accumulators[("step", id(lin.weight))] == 1
