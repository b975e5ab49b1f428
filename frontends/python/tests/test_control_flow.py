"""oar.control_flow: cond and while_loop with Paddle 3's eager semantics
(values checked against numpy and hand-computed ones), their error
sentences (naming the function, the types and the caller's line), and their
capture inside to_static (programs equal to eager for every branch and trip
count, saved and loaded)."""
import numpy as np
import pytest

import oar
from oar.control_flow import cond, while_loop


def test_cond_takes_the_branch_of_the_predicate():
    x = oar.to_tensor(np.array([1.0, -2.0, 3.0], dtype="float32"))

    def piecewise(x):
        return cond(oar.sum(x) > 0, lambda: x * x, lambda: -x)

    np.testing.assert_allclose(piecewise(x).numpy(), [1.0, 4.0, 9.0])
    np.testing.assert_allclose(piecewise(-x * 3).numpy(), [3.0, -6.0, 9.0])
    # A missing branch gives None, as Paddle's.
    assert cond(oar.to_tensor(False), lambda: x) is None
    # Several values.
    a, b = cond(oar.to_tensor([True]), lambda: (x + 1, x * 2), lambda: (x, x))
    np.testing.assert_allclose(a.numpy(), [2.0, -1.0, 4.0])
    np.testing.assert_allclose(b.numpy(), [2.0, -4.0, 6.0])


def test_while_loop_to_a_tensor_bound_collatz():
    def collatz_steps(n):
        def body(n, steps):
            odd = (n % 2) == 1
            n = cond(odd, lambda: n * 3 + 1, lambda: n // 2)
            return n, steps + 1

        return while_loop(lambda n, steps: n != 1, body,
                          [n, oar.to_tensor(0, dtype="int64")])

    n, steps = collatz_steps(oar.to_tensor(27, dtype="int64"))
    assert int(n.item()) == 1
    assert int(steps.item()) == 111  # the known Collatz stopping time of 27
    n, steps = collatz_steps(oar.to_tensor(6, dtype="int64"))
    assert int(steps.item()) == 8  # 6 3 10 5 16 8 4 2 1


def test_while_loop_newton_sqrt_to_tolerance():
    a = oar.to_tensor(np.array([2.0, 9.0, 0.25], dtype="float64"))

    def body(x, i):
        return (x + a / x) * 0.5, i + 1

    def not_converged(x, i):
        return oar.max(oar.abs(x * x - a)) > 1e-12

    x, i = while_loop(not_converged, body, [oar.ones([3], dtype="float64"),
                                            oar.to_tensor(0)])
    np.testing.assert_allclose(x.numpy(), np.sqrt([2.0, 9.0, 0.25]), rtol=1e-12)
    assert 3 <= int(i.item()) <= 10
    # A condition false at the start: the loop variables come back unchanged.
    out = while_loop(lambda x, i: i < 0, body, [a, oar.to_tensor(0)])
    np.testing.assert_allclose(out[0].numpy(), a.numpy())


def test_while_loop_trains_like_the_unrolled_loop():
    # Gradients flow through an eager while_loop as through the unrolled code.
    w = oar.to_tensor(np.array([0.5, -1.0], dtype="float64"), stop_gradient=False)
    x = oar.to_tensor(np.array([1.0, 2.0], dtype="float64"))
    y, _ = while_loop(lambda y, i: i < 3, lambda y, i: (oar.tanh(y * w), i + 1),
                      [x, oar.to_tensor(0)])
    oar.sum(y).backward()
    want = x.numpy()
    wn = w.numpy()
    ys = [want]
    for _ in range(3):
        ys.append(np.tanh(ys[-1] * wn))
    # d/dw by finite differences of the same function in numpy.
    def f(wv):
        v = x.numpy()
        for _ in range(3):
            v = np.tanh(v * wv)
        return v.sum()
    eps = 1e-6
    fd = [(f(wn + eps * e) - f(wn - eps * e)) / (2 * eps) for e in np.eye(2)]
    np.testing.assert_allclose(y.numpy(), ys[-1], rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), fd, rtol=1e-6)


def test_errors_name_the_function_the_types_and_the_line():
    x = oar.to_tensor(np.array([1.0, 2.0], dtype="float32"))
    with pytest.raises(TypeError, match=r"cond: pred must be a one-element bool Tensor but is a "
                                        r"float32 tensor of shape \[2\] \(at .*test_control_flow.py:\d+\)"):
        cond(x, lambda: x, lambda: x)
    with pytest.raises(ValueError, match=r"has shape \[2\] \(2 elements\)"):
        cond(x > 0, lambda: x, lambda: x)
    with pytest.raises(TypeError, match="pred must be a one-element bool Tensor but is bool"):
        cond(True, lambda: x, lambda: x)
    with pytest.raises(TypeError, match="true_fn must be callable but is int"):
        cond(oar.to_tensor(True), 3)
    with pytest.raises(TypeError, match=r"body changed loop variable 0 from .*float32 to .*float64.*"
                                        r"test_control_flow.py:\d+"):
        while_loop(lambda v: oar.sum(v) < 10, lambda v: oar.cast(v * 2, "float64"), [x])
    with pytest.raises(ValueError, match="body returned 2 values for 1 loop variables"):
        while_loop(lambda v: oar.sum(v) < 10, lambda v: (v, v), [x])
    with pytest.raises(ValueError, match="loop_vars must not be empty"):
        while_loop(lambda: True, lambda: (), [])


def _f32(values):
    return oar.to_tensor(np.array(values, dtype="float32"))


def test_to_static_captures_cond_and_takes_either_branch_on_each_run():
    def f(x):
        return cond(oar.sum(x) > 0, lambda: x * 2, lambda: -x)

    static_f = oar.jit.to_static(f, input_spec=[oar.static.InputSpec([3], "float32")])
    for values in ([1.0, 2.0, 3.0], [-1.0, -2.0, 0.5], [0.0, 0.0, 0.0]):
        x = _f32(values)
        np.testing.assert_allclose(static_f(x).numpy(), f(x).numpy())
    assert static_f.trace_count == 1
    assert "cond(" in static_f.program and "yield(" in static_f.program


def test_to_static_captures_nested_outputs_and_numbers():
    def f(x):
        # A tuple of a tensor and a dict; the number differs between the branches.
        a, d, n = cond(x.mean() > 0, lambda: (x + 1, {"k": x * 3}, 1), lambda: (x - 1, {"k": x}, 2))
        return a, d["k"], n

    static_f = oar.jit.to_static(f)
    for values in ([1.0, 2.0], [-3.0, 1.0]):
        x = _f32(values)
        a, k, n = static_f(x)
        ea, ek, en = f(x)
        np.testing.assert_allclose(a.numpy(), ea.numpy())
        np.testing.assert_allclose(k.numpy(), ek.numpy())
        assert int(n.numpy()) == en


def test_to_static_captures_while_loop_for_several_trip_counts():
    def f(x, n):
        i = oar.zeros([], "int64")
        _, out = while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s * 2 + 1), [i, x])
        return out

    static_f = oar.jit.to_static(f)
    x = _f32([1.0, -1.0])
    for trips in (0, 1, 4):
        n = oar.to_tensor(trips, dtype="int64")
        expect = np.array([1.0, -1.0])
        for _ in range(trips):
            expect = expect * 2 + 1
        np.testing.assert_allclose(static_f(x, n).numpy(), expect)
    assert static_f.trace_count == 1 and "while(" in static_f.program


def test_captured_cond_inside_a_while_and_save_load(tmp_path):
    def collatz(n):
        steps = oar.zeros([], "int64")

        def body(n, steps):
            n = cond(n % 2 == 0, lambda: n // 2, lambda: 3 * n + 1)
            return n, steps + 1
        return while_loop(lambda n, s: n > 1, body, [n, steps])[1]

    spec = [oar.static.InputSpec([], "int64")]
    static_f = oar.jit.to_static(collatz, input_spec=spec)
    for start, steps in ((1, 0), (6, 8), (27, 111)):
        assert int(static_f(oar.to_tensor(start, dtype="int64")).numpy()) == steps
    path = str(tmp_path / "collatz")
    oar.jit.save(static_f, path)
    loaded = oar.jit.load(path)
    assert int(loaded(oar.to_tensor(27, dtype="int64")).numpy()) == 111
    assert int(loaded(oar.to_tensor(6, dtype="int64")).numpy()) == 8


def test_captured_control_flow_errors_name_the_line_and_both_types():
    x = _f32([1.0, 2.0])
    dtypes = oar.jit.to_static(lambda x: cond(x.sum() > 0, lambda: x, lambda: oar.cast(x, "int64")))
    with pytest.raises(TypeError, match=r"cond \(at .*test_control_flow.py:\d+\): the branches give different "
                                         r"dtypes for value 0: f32\[2\] \(then\) and i64\[2\] \(else\)"):
        dtypes(x)
    shapes = oar.jit.to_static(lambda x: cond(x.sum() > 0, lambda: x, lambda: oar.concat([x, x])))
    with pytest.raises(ValueError, match=r"test_control_flow.py:\d+\): the branches give different shapes for "
                                         r"value 0: f32\[2\] \(true branch\) and f32\[4\] \(false branch\)"):
        shapes(x)
    structure = oar.jit.to_static(lambda x: cond(x.sum() > 0, lambda: x, lambda: None))
    with pytest.raises(TypeError, match=r"true_fn returns Tensor but false_fn returns None.*test_control_flow.py"):
        structure(x)
    loop = oar.jit.to_static(lambda x: while_loop(lambda v: v.sum() < 10, lambda v: oar.cast(v, "float64"), [x]))
    with pytest.raises(TypeError, match=r"body changed loop variable 0 from .*float32 to .*float64.*"
                                        r"test_control_flow.py:\d+"):
        loop(x)
    # A carried value that grows is captured (Note [Growing loop values]): [1, 2] doubles to 4 values (sum 12).
    grow = oar.jit.to_static(lambda x: while_loop(lambda v: v.sum() < 10, lambda v: oar.concat([v, v]), [x]))
    (grown,) = grow(x)
    assert grown.numpy().tolist() == [1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0, 2.0]
    rank = oar.jit.to_static(lambda x: while_loop(lambda v: v.sum() < 10, lambda v: oar.stack([v, v]), [x]))
    with pytest.raises(TypeError, match=r"test_control_flow.py:\d+\): the body changes loop variable 0 from "
                                        r"f32\[2\] to f32\[2, 2\]; a loop-carried value keeps its dtype and rank"):
        rank(x)
    not_bool = oar.jit.to_static(lambda x: cond(x.sum(), lambda: x, lambda: x))
    with pytest.raises(ValueError, match=r"predicate must be a one-element bool tensor but is f32\[\]"):
        not_bool(x)


def test_gradients_through_a_captured_cond_equal_the_taken_branch():
    f = oar.jit.to_static(lambda x: cond(x.sum() > 0, lambda: (x * x).sum(), lambda: (-x).sum()))
    for values, grad in (([1.0, 2.0], [2.0, 4.0]), ([-1.0, -3.0], [-1.0, -1.0])):
        x = _f32(values)
        x.stop_gradient = False
        f(x).backward()
        np.testing.assert_allclose(x.grad.numpy(), grad)  # d sum(x*x) = 2x; d sum(-x) = -1


def test_gradients_through_a_captured_while_replay_its_iterations():
    # v doubles until its sum reaches 10, then y = sum(v * w): dy/dx = 2^n w, dy/dw = 2^n x
    # for n iterations (Note [VJP of while] in core/ir/src/autodiff.cpp).
    f = oar.jit.to_static(lambda x, w: (while_loop(lambda v: v.sum() < 10, lambda v: v * 2, [x])[0] * w).sum())
    for values, n in (([1.0, 2.0], 2), ([3.0, 4.0], 1), ([6.0, 5.0], 0), ([0.25, 0.5], 4)):
        x, w = _f32(values), _f32([0.5, -1.5])
        x.stop_gradient = False
        w.stop_gradient = False
        y = f(x, w)
        np.testing.assert_allclose(y.numpy(), 2 ** n * (values[0] * 0.5 - values[1] * 1.5), rtol=1e-6)
        y.backward()
        np.testing.assert_allclose(x.grad.numpy(), [2 ** n * 0.5, -(2 ** n) * 1.5], rtol=1e-6)
        np.testing.assert_allclose(w.grad.numpy(), [2 ** n * values[0], 2 ** n * values[1]], rtol=1e-6)
    assert f.trace_count == 1


def test_gradients_through_a_while_nested_in_a_while_equal_finite_differences():
    # The outer loop runs n times (a data-dependent count); each time the inner loop applies
    # v <- sin(v * w) + v until its counter reaches k. The VJP replays the inner loop from the
    # outer one's saved iterations (Note [VJP of while] in core/ir/src/autodiff.cpp).
    def f(x, w, n, k):
        def outer_body(i, v):
            _, v = while_loop(lambda j, u: j < k, lambda j, u: (j + 1, oar.sin(u * w) + u),
                              [oar.zeros([], "int64"), v])
            return i + 1, v * 0.5
        _, v = while_loop(lambda i, v: i < n, outer_body, [oar.zeros([], "int64"), x])
        return (v * v).sum()

    def numpy_f(x, w, n, k):
        v = x.copy()
        for _ in range(n):
            for _ in range(k):
                v = np.sin(v * w) + v
            v = v * 0.5
        return float((v * v).sum())

    static_f = oar.jit.to_static(f)
    rng = np.random.default_rng(7)
    x0, w0 = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)
    for n, k in ((2, 3), (3, 1), (0, 2)):
        x, w = oar.to_tensor(x0, stop_gradient=False), oar.to_tensor(w0, stop_gradient=False)
        nt, kt = oar.to_tensor(n, dtype="int64"), oar.to_tensor(k, dtype="int64")
        y = static_f(x, w, nt, kt)
        np.testing.assert_allclose(y.numpy(), numpy_f(x0, w0, n, k), rtol=1e-12)
        y.backward()
        for param, grad in ((x0, x.grad), (w0, w.grad)):
            fd = np.zeros(3)
            for i in range(3):
                hi, lo = param.copy(), param.copy()
                hi[i] += 1e-6
                lo[i] -= 1e-6
                args = (hi, w0) if param is x0 else (x0, hi)
                largs = (lo, w0) if param is x0 else (x0, lo)
                fd[i] = (numpy_f(*args, n, k) - numpy_f(*largs, n, k)) / 2e-6
            np.testing.assert_allclose(grad.numpy(), fd, rtol=1e-6, atol=1e-9)
    assert static_f.trace_count == 1


def test_static_nn_names_are_the_control_flow_functions():
    import oar.control_flow as cf
    assert oar.static.nn.cond is cf.cond
    assert oar.static.nn.while_loop is cf.while_loop
    x = oar.to_tensor([2.0])
    out = oar.static.nn.cond(x.sum() > 1.0, lambda: x * 10, lambda: x)
    np.testing.assert_allclose(out.numpy(), [20.0])


def test_print_and_assert_on_traced_tensors_run_with_each_calls_values(capfd):
    # Note [Print and assert ops]: print prints each run's values (inside the
    # loop, every iteration) as eager print does; assert fails the run.
    def f(x):
        i = x * 0
        while i.sum() < x.sum():
            print("i =", i)
            i = i + 1
        assert i.sum() < 4, "too many steps"
        return i

    g = oar.jit.to_static(f)
    for n in (2.0, 3.0):
        x = _f32([n])
        capfd.readouterr()
        out = g(x)
        printed = capfd.readouterr().out
        eager = [f"i = {oar.to_tensor(np.array([float(k)], np.float32))}\n" for k in range(int(n))]
        assert printed == "".join(eager)
        np.testing.assert_allclose(out.numpy(), [n])
    with pytest.raises(AssertionError, match=r"test_control_flow.py:\d+\): too many steps|too many steps"):
        g(_f32([5.0]))
    assert g.trace_count == 1
