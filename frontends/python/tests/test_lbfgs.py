"""oar.optimizer.LBFGS against hand-checked minima (a quadratic, Rosenbrock),
its stopping rules and its evaluation budget."""
import numpy as np
import pytest

import oar
import oar.nn as nn

# f(x) = 0.5 x^T A x - b^T x with A = [[3, 1], [1, 2]] (positive definite) and
# b = [1, 1]: the minimum solves A x = b, x* = A^-1 b = [[2, -1], [-1, 3]] / 5 @ [1, 1]
# = [1/5, 2/5], where f(x*) = -0.5 b.x* = -3/10.
A = np.array([[3.0, 1.0], [1.0, 2.0]])
B = np.array([1.0, 1.0])
X_STAR = np.array([0.2, 0.4])


def param(values):
    return nn.Parameter(oar.to_tensor(np.asarray(values, np.float64)))


def quadratic(x):
    a, b = oar.to_tensor(A), oar.to_tensor(B)
    return 0.5 * (x * oar.matmul(a, x)).sum() - (b * x).sum()


def rosenbrock(x):
    return (1.0 - x[0]) ** 2 + 100.0 * (x[1] - x[0] ** 2) ** 2


def make_closure(opt, fn, x, counter=None):
    def closure():
        if counter is not None:
            counter.append(1)
        opt.clear_grad()
        loss = fn(x)
        loss.backward()
        return loss
    return closure


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_quadratic_reaches_the_hand_computed_minimum(device, line_search_fn):
    x = param([-1.0, 2.0])
    opt = oar.optimizer.LBFGS(max_iter=20, line_search_fn=line_search_fn, parameters=[x],
                              tolerance_grad=1e-12, tolerance_change=1e-20)
    calls = []
    loss = opt.step(make_closure(opt, quadratic, x, calls))
    # The first closure call is at the start point: f(-1, 2) = 0.5 * 7 - 1 = 2.5.
    assert abs(float(loss) - 2.5) < 1e-12
    np.testing.assert_allclose(x.numpy(), X_STAR, atol=1e-8)
    assert abs(float(quadratic(x)) + 0.3) < 1e-12
    # Two dimensions: a handful of iterations, not tens.
    assert opt.state_dict()["state"]["n_iter"] <= 10
    assert len(calls) <= 20


def test_weight_decay_moves_the_minimum(device):
    # With L2 decay c, f + c/2 |x|^2 has its minimum at (A + c I)^-1 b; for c = 1:
    # [[4, 1], [1, 3]]^-1 [1, 1] = [[3, -1], [-1, 4]] / 11 @ [1, 1] = [2/11, 3/11].
    x = param([-1.0, 2.0])
    opt = oar.optimizer.LBFGS(max_iter=30, line_search_fn="strong_wolfe", parameters=[x], weight_decay=1.0,
                              tolerance_grad=1e-12, tolerance_change=1e-14)
    opt.step(make_closure(opt, quadratic, x))
    np.testing.assert_allclose(x.numpy(), [2.0 / 11.0, 3.0 / 11.0], atol=1e-8)


def test_rosenbrock_from_minus_1_5_2_reaches_1_1_with_strong_wolfe(device):
    x = param([-1.5, 2.0])
    opt = oar.optimizer.LBFGS(max_iter=200, max_eval=400, history_size=10, line_search_fn="strong_wolfe",
                              parameters=[x], tolerance_grad=1e-10, tolerance_change=1e-14)
    opt.step(make_closure(opt, rosenbrock, x))
    np.testing.assert_allclose(x.numpy(), [1.0, 1.0], atol=1e-6)
    assert float(rosenbrock(x)) < 1e-12
    assert opt.state_dict()["state"]["n_iter"] < 100


def test_tolerance_grad_stops_at_once_at_a_minimum(device):
    x = param(X_STAR)
    opt = oar.optimizer.LBFGS(parameters=[x], tolerance_grad=1e-9)
    calls = []
    opt.step(make_closure(opt, quadratic, x, calls))
    assert len(calls) == 1 and opt.state_dict()["state"]["n_iter"] == 0
    np.testing.assert_array_equal(x.numpy(), X_STAR)


def test_a_loose_tolerance_grad_stops_early(device):
    x_loose, x_tight = param([-1.5, 2.0]), param([-1.5, 2.0])
    loose = oar.optimizer.LBFGS(max_iter=200, max_eval=400, line_search_fn="strong_wolfe", parameters=[x_loose],
                                tolerance_grad=1e-1)
    tight = oar.optimizer.LBFGS(max_iter=200, max_eval=400, line_search_fn="strong_wolfe", parameters=[x_tight],
                                tolerance_grad=1e-10, tolerance_change=1e-14)
    loose.step(make_closure(loose, rosenbrock, x_loose))
    tight.step(make_closure(tight, rosenbrock, x_tight))
    assert loose.state_dict()["state"]["n_iter"] < tight.state_dict()["state"]["n_iter"]
    # It stopped where the largest gradient entry fell below 0.1.
    g = np.abs(loose.state_dict()["state"]["prev_flat_grad"].numpy()).max()
    x0, x1 = x_loose.numpy()
    grad = np.array([-2 * (1 - x0) - 400 * x0 * (x1 - x0 ** 2), 200 * (x1 - x0 ** 2)])
    assert np.abs(grad).max() <= 1e-1 < g


def test_a_loose_tolerance_change_stops_after_one_iteration(device):
    # At x0 = (-1, 2): g = A x0 - b = (-2, 2), so the first step is x0 - t g with
    # t = min(1, 1 / |g|_1) = 1/4: x1 = (-0.5, 1.5), f(x1) = 0.875 (f(x0) = 2.5). The loss
    # changed by 1.625 and x by 0.5, both below tolerance_change = 2 (while g.d = -8 is a descent
    # direction beyond it), so the run stops there: 2 closure calls, 1 iteration.
    x = param([-1.0, 2.0])
    opt = oar.optimizer.LBFGS(max_iter=50, parameters=[x], tolerance_change=2.0)
    calls = []
    opt.step(make_closure(opt, quadratic, x, calls))
    assert len(calls) == 2 and opt.state_dict()["state"]["n_iter"] == 1
    np.testing.assert_allclose(x.numpy(), [-0.5, 1.5], atol=1e-15)
    assert abs(float(quadratic(x)) - 0.875) < 1e-15


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
@pytest.mark.parametrize("max_eval", [1, 2, 5, 9])
def test_closure_calls_stay_within_max_eval(device, line_search_fn, max_eval):
    x = param([-1.5, 2.0])
    opt = oar.optimizer.LBFGS(learning_rate=0.1 if line_search_fn is None else 1.0, max_iter=100,
                              max_eval=max_eval, line_search_fn=line_search_fn, parameters=[x],
                              tolerance_grad=1e-14, tolerance_change=1e-14)
    calls = []
    opt.step(make_closure(opt, rosenbrock, x, calls))
    assert 1 <= len(calls) <= max_eval
    if line_search_fn is None:
        assert len(calls) == max_eval  # far from converged: the budget is what stops it


def test_state_dict_round_trip_continues_the_same_run(device):
    def fresh(values):
        x = param(values)
        return x, oar.optimizer.LBFGS(max_iter=4, max_eval=20, history_size=5, line_search_fn="strong_wolfe", parameters=[x])

    x_a, opt_a = fresh([-1.5, 2.0])
    opt_a.step(make_closure(opt_a, rosenbrock, x_a))
    state = opt_a.state_dict()
    assert state["state"]["n_iter"] == 4 and len(state["state"]["old_sk"]) > 0
    x_b, opt_b = fresh(x_a.numpy())
    opt_b.set_state_dict(state)
    x_c, opt_c = fresh(x_a.numpy())  # the same point without the history
    for opt, x in ((opt_a, x_a), (opt_b, x_b), (opt_c, x_c)):
        opt.step(make_closure(opt, rosenbrock, x))
    np.testing.assert_array_equal(x_b.numpy(), x_a.numpy())
    assert np.abs(x_c.numpy() - x_a.numpy()).max() > 1e-6  # the history matters
    assert opt_b.state_dict()["state"]["n_iter"] == 8


def test_several_parameters_of_a_layer_fit_a_least_squares_problem(device):
    # y = 2 x - 1 exactly: one Linear layer reaches w = 2, b = -1.
    oar.seed(7)
    layer = nn.Linear(1, 1)
    xs = oar.to_tensor(np.linspace(-1, 1, 16, dtype=np.float32).reshape(-1, 1))
    ys = 2.0 * xs - 1.0
    opt = oar.optimizer.LBFGS(max_iter=30, line_search_fn="strong_wolfe", parameters=layer.parameters())
    opt.step(make_closure(opt, lambda _: ((layer(xs) - ys) ** 2).mean(), None))
    np.testing.assert_allclose(layer.weight.numpy().ravel(), [2.0], atol=1e-4)
    np.testing.assert_allclose(layer.bias.numpy().ravel(), [-1.0], atol=1e-4)


def test_errors_name_the_problem(device):
    x = param([0.0, 0.0])
    with pytest.raises(ValueError, match="line_search_fn"):
        oar.optimizer.LBFGS(parameters=[x], line_search_fn="backtracking")
    opt = oar.optimizer.LBFGS(parameters=[x])
    with pytest.raises(ValueError, match="closure"):
        opt.step()
    with pytest.raises(TypeError, match="must return the loss"):
        opt.step(lambda: 1.0)


def test_pinn_adam_then_lbfgs_beats_adam_alone_for_the_same_evaluations():
    # examples/python/pinn_poisson.py --lbfgs at CI size: 300 Adam steps then at most 100 L-BFGS
    # iterations (at most 125 closure calls) against 425 Adam steps, each a forward + backward of
    # the same loss. (The example compares at equal wall time: 3.95e-4 against 2.02e-3.)
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "python"))
    import pinn_poisson
    previous = oar._C.get_device()
    oar.set_device("cpu")
    try:
        error_lbfgs, _ = pinn_poisson.train(steps=300, points=256, quiet=True, lbfgs_iters=100)
        error_adam, _ = pinn_poisson.train(steps=425, points=256, quiet=True)
    finally:
        oar._C.set_device(previous)
    assert error_lbfgs < 0.2 * error_adam and error_lbfgs < 1e-2, (error_lbfgs, error_adam)
