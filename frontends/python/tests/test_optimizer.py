"""Optimizers against hand-computed steps."""
import numpy as np
import pytest

import oar
import oar.nn as nn
from conftest import assert_close

P0 = np.array([1.0, -2.0, 3.0], np.float32)
G = [np.array([0.5, 0.1, -0.3], np.float32), np.array([-0.2, 0.4, 0.1], np.float32)]


def run(opt_factory, steps=2):
    p = nn.Parameter(oar.to_tensor(P0))
    opt = opt_factory([p])
    for g in G[:steps]:
        (p * oar.to_tensor(g)).sum().backward()  # grad = g
        opt.step()
        opt.clear_grad()
    return p.numpy(), opt


def test_sgd(device):
    got, _ = run(lambda ps: oar.optimizer.SGD(learning_rate=0.1, parameters=ps))
    assert_close(got, P0 - 0.1 * G[0] - 0.1 * G[1])


def test_sgd_weight_decay(device):
    got, _ = run(lambda ps: oar.optimizer.SGD(learning_rate=0.1, parameters=ps, weight_decay=0.5), steps=1)
    assert_close(got, P0 - 0.1 * (G[0] + 0.5 * P0))


@pytest.mark.parametrize("nesterov", [False, True])
def test_momentum(device, nesterov):
    got, _ = run(lambda ps: oar.optimizer.Momentum(0.1, momentum=0.9, parameters=ps, use_nesterov=nesterov))
    p, v = P0.copy(), np.zeros(3, np.float32)
    for g in G:
        v = 0.9 * v + g
        p = p - 0.1 * (g + 0.9 * v if nesterov else v)
    assert_close(got, p, rtol=1e-6)


def adam_ref(p, grads, lr, b1=0.9, b2=0.999, eps=1e-8, coeff=0.0):
    m = v = np.zeros_like(p)
    for t, g in enumerate(grads, 1):
        p = p * (1 - lr * coeff)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        lr_t = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        p = p - lr_t * m / (np.sqrt(v) + eps * np.sqrt(1 - b2 ** t))
    return p


def test_adam(device):
    got, _ = run(lambda ps: oar.optimizer.Adam(learning_rate=0.01, parameters=ps))
    assert_close(got, adam_ref(P0, G, 0.01), rtol=1e-6)


def test_adamw(device):
    got, _ = run(lambda ps: oar.optimizer.AdamW(learning_rate=0.01, parameters=ps, weight_decay=0.1))
    assert_close(got, adam_ref(P0, G, 0.01, coeff=0.1), rtol=1e-6)


def test_grad_clip_by_global_norm(device):
    p1 = nn.Parameter(oar.to_tensor([1.0, 1.0]))
    p2 = nn.Parameter(oar.to_tensor([1.0]))
    opt = oar.optimizer.SGD(1.0, parameters=[p1, p2], grad_clip=nn.ClipGradByGlobalNorm(1.0))
    ((p1 * oar.to_tensor([3.0, 0.0])).sum() + (p2 * 4.0).sum()).backward()  # global norm 5
    opt.step()
    assert_close(p1, [1.0 - 0.6, 1.0], rtol=1e-6)
    assert_close(p2, [1.0 - 0.8], rtol=1e-6)
    opt2 = oar.optimizer.SGD(1.0, parameters=[p1], grad_clip=nn.ClipGradByGlobalNorm(10.0))
    p1.clear_grad()
    (p1 * oar.to_tensor([3.0, 0.0])).sum().backward()
    before = p1.numpy()
    opt2.step()
    assert_close(p1, before - np.array([3.0, 0.0]))


def test_lr_scheduler_and_state_dict(device):
    sched = oar.optimizer.lr.StepDecay(0.1, step_size=1, gamma=0.5)
    p = nn.Parameter(oar.to_tensor([1.0]))
    opt = oar.optimizer.Adam(learning_rate=sched, parameters=[p])
    assert opt.get_lr() == 0.1
    sched.step()
    assert opt.get_lr() == 0.05
    (p * 2).sum().backward()
    opt.step()
    sd = opt.state_dict()
    p2 = nn.Parameter(oar.to_tensor([1.0]))
    opt2 = oar.optimizer.Adam(learning_rate=0.05, parameters=[p2])
    opt2.set_state_dict(sd)
    assert_close(opt2._accumulators[("moment1", id(p2))], opt._accumulators[("moment1", id(p))].numpy())
    assert opt2._accumulators[("step", id(p2))] == 1


def test_parameters_keep_identity_and_grad(device):
    lin = nn.Linear(2, 2)
    w = lin.weight
    opt = oar.optimizer.SGD(0.1, parameters=lin.parameters())
    lin(oar.ones([1, 2])).sum().backward()
    opt.step()
    assert lin.weight is w and not w.stop_gradient and w.grad is not None
