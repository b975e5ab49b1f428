"""to_static(full_graph=True) converts Python control flow on tensors
(oar/jit_dy2static.py): each converted function is checked against the same
function run eagerly, for inputs that take every branch and several trip
counts, with one trace; error cases name the file and line."""
import inspect

import numpy as np
import pytest

import oar
from oar.static import InputSpec


def f32(*values):
    return oar.to_tensor(np.array(values, dtype="float32"))


def i64(value):
    return oar.to_tensor(value, dtype="int64")


def same(static_fn, fn, *args):
    got, want = static_fn(*args), fn(*args)
    np.testing.assert_allclose(np.asarray(got.numpy()), np.asarray(want.numpy()), rtol=1e-6)


def line_of(fn, text):
    """The file line of the first source line of `fn` containing `text`."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


def piecewise(x):
    if x.sum() > 10:
        y = x * 10
    elif x.sum() > 0:
        y = x + 1
    else:
        y = -x
    return y


def test_if_elif_else_on_a_tensor_takes_every_branch_with_one_trace():
    static = oar.jit.to_static(piecewise)
    for x in (f32(5.0, 6.0), f32(1.0, 2.0), f32(-1.0, -2.0)):
        same(static, piecewise, x)
    assert static.trace_count == 1
    assert static.program.count("cond(") == 2


def nested(x):
    y = x
    if x.mean() > 0:
        if x.max() > 5:
            y = x * 100
        else:
            y = x * 2
        y = y + 1
    return y


def test_nested_if():
    static = oar.jit.to_static(nested)
    for x in (f32(1.0, 9.0), f32(1.0, 2.0), f32(-1.0, -2.0)):
        same(static, nested, x)
    assert static.trace_count == 1


def halve_until_small(x):
    while x.sum() > 1:
        x = x / 2
    return x


def test_while_on_a_tensor_runs_to_the_value_bound():
    static = oar.jit.to_static(halve_until_small)
    for x in (f32(0.5, 0.2), f32(3.0, 1.0), f32(100.0, 28.0)):
        same(static, halve_until_small, x)
    assert static.trace_count == 1 and "while(" in static.program


def power_sum(x, n):
    s = oar.zeros_like(x)
    for i in range(n):
        s = s + x ** 2 + i
    return s


def test_for_range_of_a_tensor_becomes_a_loop():
    static = oar.jit.to_static(power_sum)
    x = f32(1.0, 2.0)
    for n in (0, 1, 3):
        np.testing.assert_allclose(static(x, i64(n)).numpy(), power_sum(x, n).numpy())
    assert static.trace_count == 1 and "while(" in static.program


def jumps(x, n):
    s = oar.zeros([], "float32")
    i = 0
    while i < n:
        i = i + 1
        if i % 2 == 0:
            continue  # skips even i
        s = s + x.sum() * i
        if s > 20:
            break
    return s


def jumps_python(x, n):
    s, i = 0.0, 0
    while i < n:
        i += 1
        if i % 2 == 0:
            continue
        s += float(x.sum().numpy()) * i
        if s > 20:
            break
    return s


def test_break_and_continue_in_a_tensor_loop():
    static = oar.jit.to_static(jumps)
    x = f32(1.0, 1.0)
    for n in (0, 1, 4, 10):
        np.testing.assert_allclose(static(x, i64(n)).numpy(), jumps_python(x, n), rtol=1e-6)
    assert static.trace_count == 1


def for_break(x, n):
    s = x
    for i in range(n):
        if s.sum() > 50:
            break
        s = s * 2
    return s


def test_break_in_a_for_range_loop():
    static = oar.jit.to_static(for_break)
    x = f32(1.0, 2.0)
    for n in (0, 2, 10):
        same(static, for_break, x, i64(n))


def scale_until_large(x, ws):
    for w in [ws[0], ws[1], ws[2]]:  # a Python list: the loop is unrolled into the trace
        if x.sum() > 10:
            break
        if w.sum() < 0:
            continue
        x = x * w
    return x


def test_break_and_continue_on_tensors_in_a_loop_over_a_list():
    """break/continue under tensor conditions in a for over a Python list become flags (each
    iteration after a captured break runs under `if not brk`): one trace for every path."""
    static = oar.jit.to_static(scale_until_large)
    cases = [([1.0, 1.0], [[2, 2], [2, 2], [2, 2]]),    # no break: 16
             ([1.0, 1.0], [[4, 4], [4, 4], [4, 4]]),    # break before the third: 32
             ([6.0, 6.0], [[2, 2], [2, 2], [2, 2]]),    # break at once
             ([1.0, 1.0], [[-1, -1], [3, 3], [-2, -2]])]  # continue, scale, continue
    for x, ws in cases:
        xt, wt = f32(*x), oar.to_tensor(np.array(ws, dtype="float32"))
        want = scale_until_large(np.array(x, np.float32), np.array(ws, np.float32))  # numpy: Python's jumps
        np.testing.assert_allclose(static(xt, wt).numpy(), want, rtol=1e-6)
    assert static.trace_count == 1


def python_jumps(x, layers):
    for scale in layers:  # Python values: the jumps stay Python's
        if scale is None:
            break
        if scale == 0:
            continue
        x = x * scale
    return x


def test_python_break_and_continue_in_a_loop_over_a_list_stay_python():
    static = oar.jit.to_static(python_jumps)
    same(static, python_jumps, f32(1.0, 2.0), [2, 0, 3, None, 5])


def early_return(x):
    if x.sum() > 0:
        return x * 3
    y = x - 1
    return y * y


def test_early_return_from_an_if():
    static = oar.jit.to_static(early_return)
    for x in (f32(1.0, 2.0), f32(-1.0, -2.0)):
        same(static, early_return, x)
    assert static.trace_count == 1


def first_large(x, n):
    for i in range(n):
        if x.sum() > 20:
            return x + 1000
        if x.sum() < -20:
            return x - 1000
        x = x * 2
    return x


def test_return_inside_a_loop():
    static = oar.jit.to_static(first_large)
    for values, n in (([1.0, 2.0], 1), ([1.0, 2.0], 5), ([-3.0, -4.0], 5)):
        x = f32(*values)
        np.testing.assert_allclose(static(x, i64(n)).numpy(), first_large(x, n).numpy())
    assert static.trace_count == 1


def logic(x):
    if (x.sum() > 0 and x.max() < 5) or not (x.min() > -1):
        return x + 100
    return x


def test_and_or_not_on_tensors():
    static = oar.jit.to_static(logic)
    for x in (f32(1.0, 2.0), f32(1.0, 9.0), f32(-3.0, -2.0), f32(0.5, -0.6)):
        same(static, logic, x)
    assert static.trace_count == 1
    assert "logical_and" in static.program and "logical_not" in static.program


def test_print_of_a_symbolic_tensor_prints_its_type_when_traced(capsys):
    def shows(x):
        print("x is", x)
        return x + 1

    static = oar.jit.to_static(shows)
    same(static, lambda x: x + 1, f32(1.0, 2.0))
    assert "x is Tensor(shape=[2], dtype=" in capsys.readouterr().out


def scaled(x, mode):
    if mode == "double":  # a Python condition: decided when traced
        return x * 2
    return x


def test_python_conditions_stay_python():
    static = oar.jit.to_static(scaled)
    x = f32(1.0, 2.0)
    np.testing.assert_allclose(static(x, "double").numpy(), [2.0, 4.0])
    assert "cond(" not in static.program
    np.testing.assert_allclose(static(x, "same").numpy(), [1.0, 2.0])
    assert static.trace_count == 2


class Gate(oar.nn.Layer):
    def __init__(self):
        super().__init__()
        self.linear = oar.nn.Linear(2, 2)

    def pick(self, h):
        if h.mean() > 0:
            h = h * 2
        else:
            h = h - 1
        return h

    def forward(self, x):
        return self.pick(self.linear(x))


class Outer(oar.nn.Layer):
    def __init__(self):
        super().__init__()
        self.gate = Gate()

    def forward(self, x):
        h = self.gate(x)
        n = 0
        while h.sum() < 10 and n < 5:
            h = h + 3
            n = n + 1
        return h


def test_methods_and_sublayers_of_a_layer_are_converted():
    oar.seed(0)
    layer = Outer()
    x = f32(1.0, 2.0).reshape([1, 2])
    eager = [layer(x).numpy(), layer(-x * 5).numpy()]
    static = oar.jit.to_static(layer)
    np.testing.assert_allclose(static(x).numpy(), eager[0], rtol=1e-5)
    np.testing.assert_allclose(static(-x * 5).numpy(), eager[1], rtol=1e-5)
    assert layer.forward.trace_count == 1
    assert "cond(" in layer.forward.program and "while(" in layer.forward.program


def test_training_through_a_converted_branch_matches_eager():
    oar.seed(2)
    layer = Gate()
    eager = Gate()
    eager.set_state_dict(layer.state_dict())
    static = oar.jit.to_static(layer)
    for x in (f32(1.0, 2.0).reshape([1, 2]), f32(-4.0, -1.0).reshape([1, 2])):
        for net in (static, eager):
            net.clear_gradients()
            (net(x) ** 2).sum().backward()
        for name, p in layer.named_parameters():
            q = dict(eager.named_parameters())[name]
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_converted_program_saves_and_loads(tmp_path):
    static = oar.jit.to_static(piecewise, input_spec=[InputSpec([2], "float32")])
    path = str(tmp_path / "piecewise")
    oar.jit.save(static, path)
    loaded = oar.jit.load(path)
    for x in (f32(5.0, 6.0), f32(1.0, 2.0), f32(-1.0, -2.0)):
        np.testing.assert_allclose(loaded(x).numpy(), piecewise(x).numpy())


@oar.jit.not_to_static
def unconverted(x):
    if x.sum() > 0:
        return x
    return -x


def calls_unconverted(x):
    return unconverted(x) + 1


def test_not_to_static_functions_are_called_as_written():
    static = oar.jit.to_static(calls_unconverted)
    with pytest.raises(ValueError, match="symbolic tensor of a to_static trace"):
        static(f32(1.0))


def test_full_graph_false_converts_too_and_breaks_only_where_a_trace_fails():
    static = oar.jit.to_static(piecewise, full_graph=False)
    for x in (f32(20.0), f32(1.0), f32(-2.0)):
        same(static, piecewise, x)
    assert static.graph_breaks == [] and static._cache.trace_count == 1
    # calls_unconverted reads a traced tensor's values in a not_to_static helper: one break
    static = oar.jit.to_static(calls_unconverted, full_graph=False)
    same(static, calls_unconverted, f32(1.0))
    assert len(static.graph_breaks) == 1


def mixed_dtypes(x):
    if x.sum() > 0:
        y = x
    else:
        y = oar.cast(x, "int64")
    return y


def carried_dtype(x):
    i = 0
    while x.sum() < 10:
        x = oar.cast(x * 2, "float64")
        i = i + 1
    return x


def asserts(x):
    assert x.sum() > 0, "positive"
    return x


def returns_in_with(x):
    while x.sum() > 1:
        with oar.no_grad():
            return x
    return x


def test_errors_name_the_file_line_and_types():
    with pytest.raises(TypeError, match=rf"test_dy2static.py:{line_of(mixed_dtypes, 'if x.sum')}\): the branches "
                                         r"give different dtypes for variable 'y': f32\[1\] \(then\) and i64\[1\]"):
        oar.jit.to_static(mixed_dtypes)(f32(1.0))
    with pytest.raises(TypeError, match=rf"loop variable 'x' from .*float32 to .*float64.*test_dy2static.py:"
                                        rf"{line_of(carried_dtype, 'while')}"):
        oar.jit.to_static(carried_dtype)(f32(1.0))
    # A converted assert on a tensor is an op: it fails when it runs with a
    # value that fails it, naming the line (f32(1.0) passes it).
    static_asserts = oar.jit.to_static(asserts)
    np.testing.assert_allclose(static_asserts(f32(1.0)).numpy(), [1.0])
    with pytest.raises(AssertionError, match=rf"test_dy2static.py:{line_of(asserts, 'assert x')}: positive"):
        static_asserts(f32(-1.0))
    with pytest.raises(NotImplementedError, match=rf"the while loop with a return .* at .*test_dy2static.py:"
                                                  rf"{line_of(returns_in_with, 'while')} depends on a tensor"):
        oar.jit.to_static(returns_in_with)(f32(1.0))


class _Base(oar.nn.Layer):
    def forward(self, x):
        return x + 1


class _Child(_Base):
    def forward(self, x):
        y = super().forward(x)  # zero-argument super() inside a converted method
        if y.sum() > 0:
            y = y * 2
        return y


def test_super_in_a_converted_method_and_functions_left_as_written():
    from oar.jit_dy2static import convert
    layer = _Child()
    static = oar.jit.to_static(_Child())
    for x in (f32(1.0, 2.0), f32(-5.0, -10.0)):
        np.testing.assert_allclose(static(x).numpy(), layer(x).numpy())

    def generator(x):
        if x:
            yield x

    def uses_global(x):
        global _COUNT
        _COUNT = x
        return x
    # A generator or a function with global/nonlocal/del runs as written.
    assert convert(generator) is generator and convert(uses_global) is uses_global


def clipped(x):
    return x * 2 if x.sum() > 0 else x - 1


def test_conditional_expression_on_a_tensor():
    static = oar.jit.to_static(clipped)
    for x in (f32(1.0, 2.0), f32(-1.0, -2.0)):
        same(static, clipped, x)
    assert static.trace_count == 1 and "cond(" in static.program


def test_a_function_without_source_is_traced_as_written_with_a_warning():
    namespace = {}
    exec("def made(x):\n    return x * 3\n", namespace)
    static = oar.jit.to_static(namespace["made"])
    with pytest.warns(UserWarning, match="source of made is not available"):
        np.testing.assert_allclose(static(f32(1.0)).numpy(), [3.0])


def test_one_trace_serves_every_length_of_a_dynamic_dim():
    spec = [InputSpec([None], "float32")]
    branch, loop = oar.jit.to_static(piecewise, input_spec=spec), oar.jit.to_static(halve_until_small, input_spec=spec)
    for values in ([5.0, 6.0], [1.0, 2.0, 3.0], [-1.0]):
        same(branch, piecewise, f32(*values))
        same(loop, halve_until_small, f32(*values))
    assert branch.trace_count == 1 and loop.trace_count == 1


def test_set_code_level_and_verbosity_print_the_conversion(capsys):
    def branchy(x):
        if x.sum() > 0:
            y = x + 1
        else:
            y = x - 1
        return y

    oar.jit.set_code_level(100, also_to_stdout=True)
    oar.jit.set_verbosity(1, also_to_stdout=True)
    try:
        f = oar.jit.to_static(branchy)
        out = f(oar.to_tensor([1.0, 2.0]))
    finally:
        oar.jit.set_code_level(0)
        oar.jit.set_verbosity(0)
    printed = capsys.readouterr().out
    assert out.numpy().tolist() == [2.0, 3.0]
    assert "branchy" in printed and "converted" in printed
    assert "converted code of" in printed and "def branchy" in printed
    with pytest.raises(TypeError, match="set_code_level"):
        oar.jit.set_code_level("high")


# ---- indexing with tensors of the trace (a loop counter, a computed position) ----

def fill_columns(x, n):
    y = oar.zeros_like(x)
    for i in range(n):  # n a tensor: i is a 0-d tensor of the trace
        y[:, i] = x[:, i] * 2 + x[i, 0]
    return y


def picks(x, i):
    return x[i] + x[:, i] + x[-1 - i] + x[i, -1 - i]


def test_a_traced_index_reads_and_writes_as_an_int_index():
    x = oar.to_tensor(np.arange(12, dtype="float32").reshape(3, 4))
    static = oar.jit.to_static(fill_columns)
    for n in (0, 2, 3):
        np.testing.assert_allclose(static(x, i64(n)).numpy(), fill_columns(x, n).numpy())
    assert static._cache.trace_count == 1
    square = x[:3, :3]
    static = oar.jit.to_static(picks)
    for i in (0, 1, 2, -1):
        np.testing.assert_allclose(static(square, i64(i)).numpy(), picks(square, i).numpy())


def test_a_traced_index_assignment_trains_like_eager():
    x = oar.to_tensor(np.random.RandomState(0).randn(3, 4).astype("float32"))
    xs, xe = x.clone(), x.clone()
    xs.stop_gradient = xe.stop_gradient = False
    (oar.jit.to_static(fill_columns)(xs, i64(3)) ** 2).sum().backward()
    (fill_columns(xe, 3) ** 2).sum().backward()
    np.testing.assert_allclose(xs.grad.numpy(), xe.grad.numpy(), rtol=1e-6)


def writes_at(x, idx):
    y = x * 1
    y[idx] = 0.0
    return y


def test_a_traced_index_array_in_an_assignment_is_an_error():
    static = oar.jit.to_static(writes_at)
    with pytest.raises(IndexError, match="index array of a to_static trace .* may repeat"):
        static(f32(1.0, 2.0), oar.to_tensor([0, 0]))


# ---- autograd inside a trace: detach, oar.grad of the inputs ----

class Detaching(oar.nn.Layer):
    def __init__(self):
        super().__init__()
        self.w = self.create_parameter([3])
        self.w.set_value(oar.to_tensor(np.array([1.0, 2.0, 3.0], "float32")))

    def forward(self, x):
        return (self.w * self.w.detach() * x * x.detach()).sum()


def test_detach_in_a_trace_stops_the_gradient_and_follows_parameter_updates():
    net, eager = oar.jit.to_static(Detaching()), Detaching()
    opts = [oar.optimizer.SGD(0.1, parameters=m.parameters()) for m in (net, eager)]
    for step in range(3):
        for model, opt in zip((net, eager), opts):
            x = f32(1.0, 2.0, 3.0)
            x.stop_gradient = False
            loss = model(x)
            loss.backward()
            model._grads = (x.grad.numpy(), model.w.grad.numpy(), float(loss))
            opt.step()
            opt.clear_grad()
        for a, b in zip(net._grads, eager._grads):
            np.testing.assert_allclose(a, b, rtol=1e-6)
    # the gradient of w is w.detach() * x * x: w, not 2 w (detach stopped it)
    np.testing.assert_allclose(eager.w.numpy(), net.w.numpy(), rtol=1e-6)
    assert "stop_gradient" in net.forward.program


def derivative_loss(x):
    y = (x ** 3).sum()
    (dx,) = oar.grad(y, x, create_graph=True)
    return (dx * dx).sum()


def test_grad_with_create_graph_of_an_input_inside_a_trace():
    static = oar.jit.to_static(derivative_loss)
    for values in ((1.0, 2.0), (-1.0, 0.5)):
        xs, xe = f32(*values), f32(*values)
        xs.stop_gradient = xe.stop_gradient = False
        got, want = static(xs), derivative_loss(xe)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
        got.backward()
        want.backward()
        np.testing.assert_allclose(xs.grad.numpy(), xe.grad.numpy(), rtol=1e-6)  # 36 x^3
    assert static._cache.trace_count == 1
    with pytest.raises(ValueError, match="does not require grad"):  # as eagerly
        static(f32(1.0, 2.0))


def grad_through_a_branch(x):
    if x.sum() > 0:
        y = x * 2
    else:
        y = x * 3
    (g,) = oar.grad(y.sum(), x)
    return g


def test_grad_through_a_traced_branch_is_refused_not_wrong():
    x = f32(1.0, 2.0)
    x.stop_gradient = False
    with pytest.raises(ValueError, match="inside a traced cond or while"):
        oar.jit.to_static(grad_through_a_branch)(x)
    # a function without grad still traces and trains through the branch
    static = oar.jit.to_static(piecewise)
    out = static(x)
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 1.0])


# ---- lists appended in a captured if / loop ----

def appends_in_branches(x):
    outs = [x]
    if x.sum() > 0:
        outs.append(x * 2)
    else:
        outs.append(x * 3)
    return oar.concat(outs)


def appends_in_one_branch(x):
    outs = [x]
    if x.sum() > 0:
        outs.append(x * 2)
    return oar.concat(outs)


def appends_in_a_loop(x, n):
    outs = []
    for i in range(n):
        x = x * 2
        outs.append(x)
    return oar.stack(outs)


def test_lists_appended_in_both_branches_merge():
    static = oar.jit.to_static(appends_in_branches)
    for v in (1.0, -1.0):
        same(static, appends_in_branches, f32(v, v))
    assert static._cache.trace_count == 1
    with pytest.raises(ValueError, match=r"append different numbers of values to lists: \{'outs': 1\} "
                                         r"\(true branch\) and \{\} \(false branch\)"):
        oar.jit.to_static(appends_in_one_branch)(f32(1.0))


def collects_tokens(h, w):
    tokens = [oar.zeros([1, 1], "int64")]
    tok = oar.argmax(h @ w, axis=-1, keepdim=True)
    step = 0
    while tok[0, 0] != 3 and step < 6:  # greedy decoding until an end token
        h = oar.tanh(h @ w[:, :4] + 0.1)
        tok = oar.argmax(h @ w, axis=-1, keepdim=True)
        tokens.append(tok)
        step += 1
    return oar.concat(tokens, axis=1)


def two_appends(x, n):
    a, b = [], []
    for i in range(n):
        x = x * 2
        a.append(x)
        a.append(x + 1)
    return oar.stack(a)


def appends_a_number(x, n):
    sizes = []
    for i in range(n):
        x = x * 2
        sizes.append(3)
    return x


def test_a_list_appended_in_a_tensor_loop_is_a_tensor_array():
    static = oar.jit.to_static(appends_in_a_loop)
    for n in (1, 2, 5):
        np.testing.assert_allclose(static(f32(1.0, -2.0), i64(n)).numpy(),
                                   appends_in_a_loop(f32(1.0, -2.0), n).numpy())
    assert static._cache.trace_count == 1
    assert static(f32(1.0, -2.0), i64(0)).shape == [0, 2]  # no iteration: no tensors
    rng = np.random.RandomState(0)
    h = oar.to_tensor(rng.randn(1, 4).astype("float32"))
    for seed in range(4):
        w = oar.to_tensor(np.random.RandomState(seed).randn(4, 5).astype("float32"))
        np.testing.assert_array_equal(oar.jit.to_static(collects_tokens)(h, w).numpy(),
                                      collects_tokens(h, w).numpy())


def test_a_tensor_array_trains_like_the_eager_list():
    def tanh_chain(x, n):
        outs = [x]
        for i in range(n):
            x = oar.tanh(x * 2 + 1)
            outs.append(x)
        return oar.stack(outs, axis=1)
    static = oar.jit.to_static(tanh_chain)
    for n in (0, 1, 4):
        xs, xe = f32(0.1, -0.3), f32(0.1, -0.3)
        xs.stop_gradient = xe.stop_gradient = False
        got, want = static(xs, i64(n)), tanh_chain(xe, n)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
        (got ** 2).sum().backward()
        (want ** 2).sum().backward()
        np.testing.assert_allclose(xs.grad.numpy(), xe.grad.numpy(), rtol=1e-5)


def test_what_a_tensor_array_does_not_hold_is_refused_by_name():
    with pytest.raises(NotImplementedError, match="appends 2 values per iteration to the list 'a'"):
        oar.jit.to_static(two_appends)(f32(1.0), i64(2))
    with pytest.raises(NotImplementedError, match="appends a int to the list 'sizes'"):
        oar.jit.to_static(appends_a_number)(f32(1.0), i64(2))
    static = oar.jit.to_static(two_appends, full_graph=False)  # the loop runs eagerly
    np.testing.assert_allclose(static(f32(1.0), i64(2)).numpy(), two_appends(f32(1.0), 2).numpy())
    assert len(static.graph_breaks) == 1


def collatz_trail(x):
    """The sequence grows by one value per iteration until it reaches 1 (a tensor-dependent length)."""
    trail = x
    while trail[-1] > 1:
        last = trail[-1:]
        step = oar.where(last % 2 == 0, last // 2, last * 3 + 1)
        trail = oar.concat([trail, step])
    positions = oar.arange(trail.shape[0])  # its length is the loop's: a tensor in the trace
    return trail, positions


def test_a_loop_value_that_grows_is_captured_once():
    """A carried tensor that grows each iteration (Note [Growing loop values]): one trace, the run's own
    length for every input; arange of its length follows it. Collatz from 6: 6 3 10 5 16 8 4 2 1."""
    static = oar.jit.to_static(collatz_trail)
    for start, want in [(6, [6, 3, 10, 5, 16, 8, 4, 2, 1]), (1, [1]), (4, [4, 2, 1])]:
        trail, positions = static(oar.to_tensor(np.array([start], np.int64)))
        assert trail.numpy().tolist() == want
        assert positions.numpy().tolist() == list(range(len(want)))
    assert static.trace_count == 1 and "grows=true" in static.program
