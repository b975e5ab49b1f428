"""Graph breaks: to_static(full_graph=False) splits a function whose trace
fails into compiled pieces around the statements that cannot be traced
(oar/jit_graph_break.py). Every case is checked against the same function
run eagerly (outputs and gradients), and the breaks it reports against the
source lines where they happen."""
import inspect
import logging
import warnings

import numpy as np
import pytest

import oar
from oar import nn


def t(*values):
    return oar.to_tensor(np.array(values, dtype="float32"))


def line_of(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


def close(a, b):
    np.testing.assert_allclose(np.asarray(a.numpy()), np.asarray(b.numpy()), rtol=1e-5, atol=1e-6)


# ---- a numpy call in the middle of a Layer's forward ----

class NumpyInTheMiddle(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 6)
        self.fc2 = nn.Linear(6, 3)

    def forward(self, x):
        h = oar.tanh(self.fc1(x))
        scale = float(np.abs(h.numpy()).max()) + 1.0  # numpy: no graph holds it
        h = h / scale
        if h.sum() > 0:
            h = h * 2
        return self.fc2(h)


def fresh_model(seed=0):
    oar.seed(seed)
    return NumpyInTheMiddle()


def inputs(seed):
    return oar.to_tensor(np.random.RandomState(seed).randn(2, 4).astype("float32"))


def test_numpy_in_the_middle_runs_in_pieces_with_eager_outputs_and_gradients():
    eager, static_model = fresh_model(), fresh_model()
    static = oar.jit.to_static(static_model, full_graph=False)
    for seed in (1, 2, 3):
        x = inputs(seed)
        want = eager(x)
        got = static(x)
        close(got, want)
        want.sum().backward()
        got.sum().backward()
        for (name, p), q in zip(eager.named_parameters(), static_model.parameters()):
            np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
            p.clear_gradient()
            q.clear_gradient()
    breaks = static.forward.graph_breaks
    assert len(breaks) == 1
    b = breaks[0]
    assert b.line == line_of(NumpyInTheMiddle.forward, "scale = float")
    assert b.filename == inspect.getsourcefile(NumpyInTheMiddle)
    assert "scale = float" in b.statement
    assert "symbolic tensor" in b.reason or "numpy" in b.reason


def test_full_graph_true_still_refuses_the_numpy_call():
    static = oar.jit.to_static(fresh_model(), full_graph=True)
    with pytest.raises(Exception, match="symbolic tensor|numpy"):
        static(inputs(1))


def test_the_pieces_around_a_break_are_programs_traced_once():
    static = oar.jit.to_static(fresh_model(), full_graph=False)
    static(inputs(1))
    runner = static.forward._graph_breaks
    kinds = [(p.static, p.start, p.stop) for p in runner.pieces]
    assert kinds == [(True, 0, 1), (False, 1, 2), (True, 2, 5)]
    traces = [p._programs and next(iter(p._programs.values()))[0]._cache.trace_count
              for p in runner.pieces if p.static]
    static(inputs(2))
    static(inputs(3))
    # the second piece reads `scale`, a Python float guarded by value: new values retrace it,
    # the first piece (tensor inputs only) is traced once
    first = runner.pieces[0]
    assert next(iter(first._programs.values()))[0]._cache.trace_count == traces[0] == 1


# ---- guards: Python values re-specialize a piece ----

def scaled(x, factor):
    y = x * 2
    n = int(np.asarray(y.numpy()).size)  # a break
    return y * factor + n


def test_python_arguments_are_guards_and_re_specialize():
    static = oar.jit.to_static(scaled, full_graph=False)
    x = t(1.0, 2.0)
    close(static(x, 3.0), scaled(x, 3.0))
    close(static(x, 5.0), scaled(x, 5.0))  # another factor: not the first trace's constant
    close(static(x, 3.0), scaled(x, 3.0))
    close(static(t(1.0, 2.0, 3.0), 3.0), scaled(t(1.0, 2.0, 3.0), 3.0))  # n changes with the size


# ---- a break inside a loop: the loop runs eagerly, the code around it compiled ----

class LoopOverLayers(nn.Layer):
    def __init__(self):
        super().__init__()
        self.blocks = nn.LayerList([nn.Linear(3, 3) for _ in range(3)])
        self.head = nn.Linear(3, 1)

    def forward(self, x):
        x = x * 0.5
        stats = []
        for block in self.blocks:
            x = oar.nn.functional.relu(block(x)) + x
            stats.append(float(x.numpy().mean()))  # numpy inside the loop
        out = self.head(x)
        return out, stats


def test_a_break_inside_a_loop_runs_that_loop_eagerly():
    oar.seed(0)
    eager = LoopOverLayers()
    oar.seed(0)
    model = LoopOverLayers()
    static = oar.jit.to_static(model, full_graph=False)
    x = oar.to_tensor(np.random.RandomState(0).randn(2, 3).astype("float32"))
    want, want_stats = eager(x)
    got, got_stats = static(x)
    close(got, want)
    np.testing.assert_allclose(got_stats, want_stats, rtol=1e-5)
    want.sum().backward()
    got.sum().backward()
    for p, q in zip(eager.parameters(), model.parameters()):
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-6)
    (b,) = static.forward.graph_breaks
    assert b.line == line_of(LoopOverLayers.forward, "for block in")
    kinds = [p.static for p in static.forward._graph_breaks.pieces]
    assert kinds == [True, False, True]


# ---- an early return under a Python condition before the break ----

def early(x, fast):
    if fast:
        return x + 1
    y = x * 3
    z = oar.to_tensor(np.sort(y.numpy()))
    return z - y


def test_an_early_return_before_a_break():
    static = oar.jit.to_static(early, full_graph=False)
    x = t(3.0, 1.0, 2.0)
    close(static(x, False), early(x, False))
    close(static(x, True), early(x, True))
    close(static(x, False), early(x, False))
    assert len(static.graph_breaks) == 1


# ---- lists built across pieces ----

def collects(x):
    outs = [x]
    outs.append(x * 2)
    total = float(np.sum(outs[-1].numpy()))  # break
    outs.append(outs[0] + total)
    return oar.concat(outs)


def test_a_list_grows_across_pieces():
    static = oar.jit.to_static(collects, full_graph=False)
    for values in ((1.0, 2.0), (4.0, -1.0)):
        close(static(t(*values)), collects(t(*values)))


# ---- no source, lambda: eager with a warning ----

def test_a_lambda_runs_eagerly_with_a_warning():
    fn = lambda x: oar.to_tensor(x.numpy() * 2)  # noqa: E731
    static = oar.jit.to_static(fn, full_graph=False)
    with pytest.warns(UserWarning, match="runs eagerly: it is a lambda"):
        close(static(t(1.0, 2.0)), t(2.0, 4.0))
    close(static(t(3.0)), t(6.0))  # and stays eager


def test_a_function_without_source_runs_eagerly_with_a_warning():
    namespace = {"oar": oar, "np": np}
    exec("def made(x):\n    return oar.to_tensor(x.numpy() + 1)\n", namespace)
    static = oar.jit.to_static(namespace["made"], full_graph=False)
    with pytest.warns(UserWarning, match="made runs eagerly: its source is not available"):
        close(static(t(1.0)), t(2.0))


def test_without_source_full_graph_says_so():
    namespace = {"oar": oar, "np": np}
    exec("def made(x):\n    return oar.to_tensor(x.numpy() + 1)\n", namespace)
    static = oar.jit.to_static(namespace["made"], full_graph=True)
    with pytest.warns(UserWarning, match="source of made is not available"):
        with pytest.raises(ValueError, match="symbolic tensor"):
            static(t(1.0))


# ---- a real error is eager mode's error ----

def wrong_shapes(x):
    y = x * 2
    s = float(y.numpy().sum())
    return y + oar.ones([5]) * s  # shape error, eagerly too


def test_a_genuine_error_is_the_error_eager_mode_raises():
    with pytest.raises(Exception) as eager_error:
        wrong_shapes(t(1.0, 2.0, 3.0))
    static = oar.jit.to_static(wrong_shapes, full_graph=False)
    with pytest.raises(type(eager_error.value)) as static_error:
        static(t(1.0, 2.0, 3.0))
    assert str(static_error.value).splitlines()[0] == str(eager_error.value).splitlines()[0]


# ---- a function that traces whole has no break ----

def branchy(x):
    if x.sum() > 0:
        return x * 2
    return -x


def test_a_function_that_converts_has_no_breaks():
    static = oar.jit.to_static(branchy, full_graph=False)
    close(static(t(1.0)), t(2.0))
    close(static(t(-1.0)), t(1.0))
    assert static.graph_breaks == []
    assert static._cache.trace_count == 1


# ---- the log ----

def logged(x):
    y = x + 1
    y = oar.to_tensor(y.numpy() ** 2)
    return y


def test_set_verbosity_logs_each_break(capsys, caplog):
    oar.jit.set_verbosity(1, also_to_stdout=True)
    try:
        with caplog.at_level(logging.DEBUG, logger="oar.jit.dy2static"):
            static = oar.jit.to_static(logged, full_graph=False)
            close(static(t(2.0)), t(9.0))
    finally:
        oar.jit.set_verbosity(0)
    where = f"{inspect.getsourcefile(logged)}:{line_of(logged, 'y.numpy() ** 2')}"
    assert any("graph break" in r.getMessage() and where in r.getMessage() for r in caplog.records)
    assert where in capsys.readouterr().out


# ---- a program whose backward program autodiff refuses ----

def wide_qr(x):
    y = x * 2
    q, r = oar.linalg.qr(y)  # no gradient for m < n: the backward is refused
    return q.sum() + r.sum() + y.sum()


def test_a_refused_backward_breaks_before_the_program_runs():
    x = oar.to_tensor(np.arange(6.0).reshape(2, 3) / 7 + 0.1)
    x.stop_gradient = False
    want = wide_qr(x)
    with pytest.raises(Exception, match="qr: the gradient is defined for m >= n") as eager:
        want.backward()
    strict = oar.jit.to_static(wide_qr, full_graph=True)
    out = strict(x)  # the forward runs; its backward is the program's refusal
    close(out, want)
    with pytest.raises(Exception, match="to_static: .*qr: the gradient is defined for m >= n"):
        out.backward()
    static = oar.jit.to_static(wide_qr, full_graph=False)
    got = static(x)
    close(got, want)
    assert [b.statement for b in static.graph_breaks] == ["q, r = oar.linalg.qr(y)"]
    assert "qr: the gradient" in static.graph_breaks[0].reason
    with pytest.raises(Exception) as broke:  # the eager piece fails as eager mode does, not as a program
        got.backward()
    assert str(broke.value) == str(eager.value)
    with oar.no_grad():  # without gradients the whole program runs
        s = oar.jit.to_static(wide_qr, full_graph=False)
        close(s(x), want)
        assert s.graph_breaks == []


def nested_loops(x):
    total = x * 0
    i = oar.zeros([], "int64")
    while i < 2:
        y = x
        while y.sum() < 10:  # a while in a while: differentiated from the inner loop's replay
            y = y * 2
        total = total + y * x
        i = i + 1
    return total


def test_nested_loops_train_in_both_modes():
    for full in (True, False):
        x, xe = t(1.0, 2.0), t(1.0, 2.0)
        x.stop_gradient = xe.stop_gradient = False
        static = oar.jit.to_static(nested_loops, full_graph=full)
        got, want = static(x), nested_loops(xe)
        close(got, want)
        got.sum().backward()
        want.sum().backward()
        # by hand: y = 4x (sum 12 >= 10 after two doublings), total = 2 * 4x * x, d/dx = 16x
        np.testing.assert_allclose(x.grad.numpy(), [16.0, 32.0])
        np.testing.assert_allclose(xe.grad.numpy(), [16.0, 32.0])
        assert static.graph_breaks == []
