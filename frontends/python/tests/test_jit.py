"""oar.jit: to_static (functions, Layers, dynamic dims, retracing, parameters
read at call time, the eager fallback for training) and jit.save / jit.load."""
import json
import os
import warnings

import numpy as np
import pytest

import oar
import oar.nn as nn
from oar.static import InputSpec
from conftest import assert_close


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def mlp():
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))


def eager(layer, *inputs):
    """The layer's eager result, whatever to_static did to it."""
    forward = layer.forward
    fn = forward.dygraph_function if isinstance(forward, oar.jit.StaticFunction) else forward
    with oar.no_grad():
        return fn(*inputs).numpy()


# ---- InputSpec ----

def test_input_spec_none_and_minus_one_are_dynamic():
    spec = InputSpec([None, 4], "float32", "x")
    assert spec.shape == (-1, 4) and spec.dtype == oar.float32 and spec.name == "x"
    assert InputSpec([-1, 4]) == InputSpec((None, 4))
    assert InputSpec.from_tensor(oar.zeros([2, 3], "int64")).shape == (2, 3)
    assert spec.accepts(oar.zeros([7, 4])) and not spec.accepts(oar.zeros([7, 5]))
    assert not spec.accepts(oar.zeros([7, 4], "float64"))
    with pytest.raises(ValueError, match="dim -2"):
        InputSpec([-2, 4])
    assert oar.jit.InputSpec is InputSpec


# ---- functions ----

def test_to_static_function_equals_eager(device):
    w = oar.to_tensor(rand(4, 3))
    b = oar.to_tensor(rand(3, seed=1))

    def f(x, y):
        return oar.tanh(oar.matmul(x, w) + b) * y

    x, y = oar.to_tensor(rand(5, 4, seed=2)), oar.to_tensor(rand(5, 3, seed=3))
    sf = oar.jit.to_static(f)
    expected = np.tanh(x.numpy() @ w.numpy() + b.numpy()) * y.numpy()
    assert_close(sf(x, y), expected, rtol=1e-5, atol=1e-6)
    assert_close(sf(x, y), expected, rtol=1e-5, atol=1e-6)
    assert sf.trace_count == 1
    assert sf.dygraph_function is f and sf.rollback() is f
    text = sf.program
    assert "matmul" in text and "tanh" in text and "input %x0: f32[5, 4]" in text


def test_decorator_forms(device):
    def body(x):
        return oar.nn.functional.relu(x) * 2.0

    plain = oar.jit.to_static(body)

    @oar.jit.to_static
    def bare(x):
        return body(x)

    @oar.jit.to_static()
    def called(x):
        return body(x)

    @oar.jit.to_static(input_spec=[InputSpec([None, 3])])
    def with_spec(x):
        return body(x)

    x = oar.to_tensor(np.array([[-1.0, 0.5, 2.0], [3.0, -4.0, 0.0]], np.float32))
    expected = [[0.0, 1.0, 4.0], [6.0, 0.0, 0.0]]
    for fn in (plain, bare, called, with_spec):
        assert isinstance(fn, oar.jit.StaticFunction)
        assert_close(fn(x), expected)
    assert "input %x0: f32[-1, 3]" in with_spec.program


def test_program_is_traced_from_input_spec_before_any_call():
    sf = oar.jit.to_static(lambda x: oar.exp(x), input_spec=[InputSpec([None, 2], name="inp")])
    assert "input %inp: f32[-1, 2]" in sf.program and "exp(%inp)" in sf.program
    with pytest.raises(RuntimeError, match="nothing is traced yet"):
        _ = oar.jit.to_static(lambda x: x).program


def test_tuple_outputs_and_non_tensor_arguments(device):
    @oar.jit.to_static
    def f(x, scale, shift=0.0):
        return x * scale, x + shift

    x = oar.to_tensor(np.array([1.0, 2.0], np.float32))
    a, b = f(x, 3.0, shift=1.0)
    assert isinstance(f(x, 3.0, shift=1.0), tuple)
    assert_close(a, [3.0, 6.0])
    assert_close(b, [2.0, 3.0])
    assert f.trace_count == 1
    a, b = f(x, 0.5)  # other Python values are other traces
    assert_close(a, [0.5, 1.0])
    assert_close(b, [1.0, 2.0])
    assert f.trace_count == 2


def test_dynamic_batch_does_not_retrace_and_a_new_feature_dim_does(device):
    w = oar.to_tensor(rand(4, 2))

    @oar.jit.to_static(input_spec=[InputSpec([None, 4])])
    def f(x):
        return oar.matmul(x, w).sum(axis=1)

    for n in (1, 3, 7):
        x = rand(n, 4, seed=n)
        assert_close(f(oar.to_tensor(x)), (x @ w.numpy()).sum(axis=1), rtol=1e-5, atol=1e-5)
    assert f.trace_count == 1

    @oar.jit.to_static(input_spec=[InputSpec([None, 4])])
    def g(x):
        return (x * x).sum(axis=1)

    g(oar.to_tensor(rand(3, 4)))
    assert g.trace_count == 1
    x5 = rand(2, 5, seed=9)
    assert_close(g(oar.to_tensor(x5)), (x5 * x5).sum(axis=1), rtol=1e-5, atol=1e-5)
    assert g.trace_count == 2 and "input %x0: f32[2, 5]" in g.program
    g(oar.to_tensor(rand(6, 4)))  # back to the declared spec: cached
    assert g.trace_count == 2 and "input %x0: f32[-1, 4]" in g.program


def test_without_input_spec_the_first_call_is_the_spec(device):
    f = oar.jit.to_static(lambda x: x + 1.0)
    f(oar.zeros([2, 3]))
    f(oar.zeros([2, 3]))
    assert f.trace_count == 1 and "f32[2, 3]" in f.program
    assert_close(f(oar.zeros([4, 3])), np.ones((4, 3)))
    assert f.trace_count == 2


def test_a_static_function_called_inside_a_trace_is_inlined(device):
    inner = oar.jit.to_static(nn.Linear(2, 2))

    @oar.jit.to_static
    def outer(x):
        return oar.nn.functional.relu(inner(x)) + 1.0

    x = oar.to_tensor(rand(3, 2))
    with oar.no_grad():
        out = outer(x)
    w, b = inner.weight.numpy(), inner.bias.numpy()
    assert_close(out, np.maximum(x.numpy() @ w + b, 0.0) + 1.0, rtol=1e-5, atol=1e-5)
    assert "linear" in outer.program and "relu" in outer.program
    assert inner.forward.trace_count == 0


def test_errors_in_the_traced_function_surface_and_leave_the_function_usable(device):
    @oar.jit.to_static
    def reads_values(x):
        return x * float(x.numpy().sum())

    with pytest.raises(ValueError, match="symbolic tensor of a to_static trace"):
        reads_values(oar.ones([2]))

    @oar.jit.to_static
    def returns_a_number(x):
        return 3

    with pytest.raises(TypeError, match="returned a int"):
        returns_a_number(oar.ones([2]))


# ---- Layers ----

def test_mlp_static_equals_eager(device):
    net = mlp()
    x = oar.to_tensor(rand(5, 4))
    expected = eager(net, x)
    assert oar.jit.to_static(net) is net
    with oar.no_grad():
        out = net(x)
    assert_close(out, expected, rtol=1e-5, atol=1e-5)
    text = net.forward.program
    assert "param %0.weight: f32[4, 8]" in text and "param %2.bias: f32[3]" in text
    assert "linear" in text or "matmul" in text
    original = net.forward.rollback()
    assert not isinstance(net.forward, oar.jit.StaticFunction) and original == net.forward


class SmallConvNet(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(1, 4, 3, padding=1)
        self.pool = nn.MaxPool2D(2)
        self.fc = nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        h = self.pool(nn.functional.relu(self.conv(x)))
        return self.fc(oar.reshape(h, [0, -1]))  # 0 copies the (dynamic) batch dim


def test_conv_model_static_equals_eager_with_dynamic_batch(device):
    oar.seed(7)
    net = oar.jit.to_static(SmallConvNet(), input_spec=[InputSpec([None, 1, 8, 8])])
    for n in (1, 3):
        x = oar.to_tensor(rand(n, 1, 8, 8, seed=n))
        with oar.no_grad():
            out = net(x)
        assert out.shape == [n, 3]
        assert_close(out, eager(net, x), rtol=1e-4, atol=1e-5)
    assert net.forward.trace_count == 1
    assert "conv2d" in net.forward.program and "input %x0: f32[-1, 1, 8, 8]" in net.forward.program


def test_sequential_conv_model_with_flatten_static_equals_eager(device):
    oar.seed(8)
    net = nn.Sequential(nn.Conv2D(1, 2, 3), nn.ReLU(), nn.AvgPool2D(2), nn.Flatten(), nn.Linear(2 * 3 * 3, 4))
    oar.jit.to_static(net)
    for n in (2, 5):
        x = oar.to_tensor(rand(n, 1, 8, 8, seed=n))
        with oar.no_grad():
            assert_close(net(x), eager(net, x), rtol=1e-4, atol=1e-5)


def test_decorated_forward_method(device):
    class Scale(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)

        @oar.jit.to_static(input_spec=[InputSpec([None, 2])])
        def forward(self, x):
            return self.fc(x) * 2.0

    a, b = Scale(), Scale()
    x = oar.to_tensor(rand(3, 2))
    with oar.no_grad():
        ya, yb = a(x), b(x)
    w, bias = a.fc.weight.numpy(), a.fc.bias.numpy()
    assert_close(ya, (x.numpy() @ w + bias) * 2.0, rtol=1e-5, atol=1e-5)
    assert_close(yb, (x.numpy() @ b.fc.weight.numpy() + b.fc.bias.numpy()) * 2.0, rtol=1e-5, atol=1e-5)
    assert a.forward is a.forward and a.forward is not b.forward  # one StaticFunction per instance
    assert "param %fc.weight: f32[2, 2]" in a.forward.program


def test_static_calls_see_parameters_after_an_optimizer_step(device):
    net = mlp()
    static_forward = oar.jit.to_static(net.forward)  # net(x) stays eager
    x = oar.to_tensor(rand(6, 4))
    with oar.no_grad():
        before = static_forward(x).numpy()
    opt = oar.optimizer.SGD(learning_rate=0.5, parameters=net.parameters())
    loss = (net(x) ** 2).mean()
    loss.backward()
    opt.step()
    opt.clear_grad()
    with oar.no_grad():
        after = static_forward(x).numpy()
        expected = net(x).numpy()
    assert not np.allclose(after, before)
    assert_close(after, expected, rtol=1e-5, atol=1e-5)
    assert static_forward.trace_count == 1

    fresh = mlp()
    net.set_state_dict(fresh.state_dict())
    with oar.no_grad():
        assert_close(static_forward(x), eager(fresh, x), rtol=1e-5, atol=1e-5)


def test_training_through_to_static_runs_the_program_and_its_backward(device):
    net = oar.jit.to_static(nn.Linear(3, 2))
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no eager fallback, no warning
        y = net(oar.to_tensor(x))
    assert net.forward.trace_count == 1
    assert not y.stop_gradient
    expected = x @ net.weight.numpy() + net.bias.numpy()
    assert_close(y, expected, rtol=1e-5, atol=1e-5)
    (y.sum()).backward()
    # d sum(x W + b) / dW[i, j] = sum_n x[n, i]; / db[j] = batch size.
    assert_close(net.weight.grad, [[5.0, 5.0], [7.0, 7.0], [9.0, 9.0]])
    assert_close(net.bias.grad, [2.0, 2.0])

    # an SGD step, then the program runs with the new values
    w_before = net.weight.numpy()
    oar.optimizer.SGD(learning_rate=0.1, parameters=net.parameters()).step()
    assert_close(net.weight, w_before - 0.1 * np.array([[5.0, 5.0], [7.0, 7.0], [9.0, 9.0]]), rtol=1e-5, atol=1e-6)
    with oar.no_grad():
        y3 = net(oar.to_tensor(x))
    assert net.forward.trace_count == 1
    assert_close(y3, x @ net.weight.numpy() + net.bias.numpy(), rtol=1e-5, atol=1e-5)


def test_inputs_requiring_grad_get_gradients_from_the_program(device):
    f = oar.jit.to_static(lambda x: (x * x).sum())
    x = oar.to_tensor(np.array([1.0, 2.0], np.float32), stop_gradient=False)
    y = f(x)
    y.backward()
    assert_close(x.grad, [2.0, 4.0])
    with oar.no_grad():
        assert_close(f(x), 5.0)
    assert f.trace_count == 1
    # Higher derivatives through a static program are refused, not wrong.
    y = f(x)
    with pytest.raises(Exception, match="gradients of gradients"):
        oar.grad(y, x, create_graph=True)


def test_static_training_loop_matches_eager(device):
    def make():
        oar.seed(3)
        return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    static_net, eager_net = oar.jit.to_static(make()), make()
    x = oar.to_tensor(np.linspace(-1, 1, 24, dtype=np.float32).reshape(6, 4))
    t = oar.to_tensor(np.linspace(0, 1, 12, dtype=np.float32).reshape(6, 2))
    opts = [oar.optimizer.Adam(0.05, parameters=n.parameters()) for n in (static_net, eager_net)]
    for _ in range(5):
        losses = []
        for net, opt in zip((static_net, eager_net), opts):
            loss = nn.functional.mse_loss(net(x), t)
            loss.backward()
            opt.step()
            opt.clear_grad()
            losses.append(float(loss))
        np.testing.assert_allclose(losses[0], losses[1], rtol=1e-5)
    for a, b in zip(static_net.parameters(), eager_net.parameters()):
        assert_close(a, b.numpy(), rtol=1e-4, atol=1e-5)
    assert static_net.forward.trace_count == 1


def test_dropout_is_traced_in_the_layer_mode(device):
    net = oar.jit.to_static(nn.Sequential(nn.Dropout(0.5)))
    x = oar.ones([64])
    with oar.no_grad():
        y = net(x).numpy()
    # train mode: every element is dropped (0) or scaled by 1 / (1 - p) = 2
    assert set(np.unique(y).tolist()) == {0.0, 2.0}
    assert "dropout" in net.forward.program
    net.eval()
    with oar.no_grad():
        assert_close(net(x), np.ones(64))
    assert net.forward.trace_count == 2


def test_random_ops_in_a_program_draw_what_eager_draws_after_a_seed(device):
    # Note [Random ops in programs]: tracing draws nothing, and a run takes as many offsets
    # from the generator as the eager calls would, so seeded runs are eager's numbers.
    def noisy(x):
        return nn.functional.dropout(x, 0.5) + oar.rand([16]) + oar.randn([16])
    x = oar.ones([16])
    oar.seed(11)
    want = [noisy(x).numpy() for _ in range(3)] + [oar.rand([16]).numpy()]
    static = oar.jit.to_static(noisy)
    oar.seed(11)
    got = [static(x).numpy() for _ in range(3)] + [oar.rand([16]).numpy()]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    assert static.trace_count == 1
    assert not np.allclose(got[0], got[1])  # each run draws anew


def test_batch_norm_running_statistics_update_like_eager(device):
    static_net = nn.Sequential(nn.Conv2D(2, 3, 1), nn.BatchNorm2D(3))
    eager_net = nn.Sequential(nn.Conv2D(2, 3, 1), nn.BatchNorm2D(3))
    eager_net.set_state_dict(static_net.state_dict())
    oar.jit.to_static(static_net)
    x = oar.to_tensor(rand(4, 2, 3, 3))
    with oar.no_grad():
        for _ in range(2):
            assert_close(static_net(x), eager_net(x), rtol=1e-4, atol=1e-5)
    text = static_net.forward.program
    assert "update %1._mean <- " in text and "update %1._variance <- " in text
    assert static_net.forward.trace_count == 1
    for name, value in eager_net.state_dict().items():
        assert_close(static_net.state_dict()[name], value.numpy(), rtol=1e-5, atol=1e-6)
    assert not np.allclose(static_net[1]._mean.numpy(), 0.0)
    static_net.eval()
    eager_net.eval()
    with oar.no_grad():
        assert_close(static_net(x), eager_net(x), rtol=1e-4, atol=1e-5)


class Counter(nn.Layer):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", oar.zeros([1]))

    def forward(self, x):
        self.count = self.count + 1.0  # reassigned by attribute, not in place
        return x * self.count


def test_buffers_reassigned_by_attribute_become_updates(device):
    layer = oar.jit.to_static(Counter())
    x = oar.to_tensor(np.array([1.0, 2.0], np.float32))
    with oar.no_grad():
        outs = [layer(x).numpy() for _ in range(3)]
    assert_close(np.stack(outs), [[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]])
    assert_close(layer.count, [3.0])
    assert not oar._C.ir.is_symbolic(layer.count)
    assert "update %count <- " in layer.forward.program and layer.forward.trace_count == 1


# ---- save / load ----

def test_save_load_round_trip_equals_eager(device, tmp_path):
    net = mlp()
    net.eval()
    path = str(tmp_path / "model")
    oar.jit.save(net, path, input_spec=[InputSpec([None, 4], name="x")])
    with open(path + ".json") as f:
        assert json.load(f)["format"] == "oar.program"
    assert os.path.getsize(path + ".safetensors") > 4 * (4 * 8 + 8 + 8 * 3 + 3)

    loaded = oar.jit.load(path)
    assert isinstance(loaded, oar.jit.TranslatedLayer) and isinstance(loaded, nn.Layer)
    assert loaded.input_names == ["x"] and loaded.output_names == ["output_0"]
    assert loaded.input_spec[0].shape == (-1, 4)
    assert sorted(loaded.state_dict()) == sorted(net.state_dict())
    assert "input %x: f32[-1, 4]" in loaded.program
    for n in (1, 5):
        x = oar.to_tensor(rand(n, 4, seed=n))
        assert_close(loaded(x), eager(net, x), rtol=1e-5, atol=1e-5)

    # re-saving the loaded layer and loading again keeps the values
    oar.jit.save(loaded, str(tmp_path / "again"))
    x = oar.to_tensor(rand(2, 4, seed=3))
    assert_close(oar.jit.load(str(tmp_path / "again"))(x), eager(net, x), rtol=1e-5, atol=1e-5)


def test_a_loaded_layer_called_from_4_threads_gives_each_its_own_answer(device, tmp_path):
    # Issue 19 item 5: the executor releases the GIL and once shared its run
    # state between threads (a segfault). Calls are serialized now; batch
    # sizes differ per thread so each call may re-plan the executor.
    import threading

    net = mlp()
    net.eval()
    path = str(tmp_path / "model")
    oar.jit.save(net, path, input_spec=[InputSpec([None, 4], name="x")])
    loaded = oar.jit.load(path)
    inputs = [oar.to_tensor(rand(n, 4, seed=n)) for n in (1, 3, 5, 7)]
    expected = [eager(net, x) for x in inputs]
    failures = []

    def work(t):
        try:
            for i in range(60):
                k = (t + i) % len(inputs)
                got = loaded(inputs[k]).numpy()
                if got.shape != expected[k].shape or not np.allclose(got, expected[k], rtol=1e-5, atol=1e-5):
                    failures.append(f"thread {t} call {i}: batch {inputs[k].shape[0]} gave a wrong answer")
        except Exception as e:  # noqa: BLE001 - reported below
            failures.append(f"thread {t}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert failures == []


def test_save_a_to_static_layer_uses_its_spec_and_save_a_function(device, tmp_path):
    net = oar.jit.to_static(mlp(), input_spec=[InputSpec([None, 4])])
    oar.jit.save(net, str(tmp_path / "net"))
    x = oar.to_tensor(rand(3, 4))
    assert_close(oar.jit.load(str(tmp_path / "net"))(x), eager(net, x), rtol=1e-5, atol=1e-5)

    @oar.jit.to_static
    def two_outputs(a, b):
        return a + b, a * b

    a, b = oar.to_tensor(np.array([1.0, 2.0], np.float32)), oar.to_tensor(np.array([3.0, 4.0], np.float32))
    two_outputs(a, b)  # the call's shapes become the spec
    oar.jit.save(two_outputs, str(tmp_path / "fn"))
    s, p = oar.jit.load(str(tmp_path / "fn"))(a, b)
    assert_close(s, [4.0, 6.0])
    assert_close(p, [3.0, 8.0])


def test_save_without_any_spec_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="input_spec"):
        oar.jit.save(mlp(), str(tmp_path / "m"))


def test_load_errors_name_the_file(tmp_path):
    missing = str(tmp_path / "nothing_here")
    with pytest.raises(Exception, match="nothing_here"):
        oar.jit.load(missing)

    net = mlp()
    path = str(tmp_path / "cut")
    oar.jit.save(net, path, input_spec=[InputSpec([None, 4])])
    data = open(path + ".safetensors", "rb").read()
    with open(path + ".safetensors", "wb") as f:
        f.write(data[: len(data) // 2])
    with pytest.raises(Exception, match="cut.safetensors"):
        oar.jit.load(path)

    with open(path + ".safetensors", "wb") as f:
        f.write(data)
    with open(path + ".json", "w") as f:
        f.write("{not json")
    with pytest.raises(Exception, match="cut.json"):
        oar.jit.load(path)


def test_translated_layer_checks_its_inputs(tmp_path):
    path = str(tmp_path / "m")
    oar.jit.save(mlp(), path, input_spec=[InputSpec([None, 4], name="x")])
    loaded = oar.jit.load(path)
    with pytest.raises(ValueError, match="takes 1 inputs"):
        loaded(oar.ones([2, 4]), oar.ones([2, 4]))
    with pytest.raises(ValueError, match="'x'"):
        loaded(oar.ones([2, 5]))


@pytest.mark.skipif(not os.environ.get("OAR_RUN_BIN"),
                    reason="OAR_RUN_BIN (the C++ oar-run) is set by scripts/run_python_tests.sh after the C++ build")
def test_python_export_runs_in_oar_run(tmp_path):
    import subprocess
    net = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))
    net.eval()
    path = str(tmp_path / "mlp")
    oar.jit.save(net, path, input_spec=[oar.static.InputSpec([None, 3], "float32", "x")])
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    oar.save({"x": oar.to_tensor(x)}, str(tmp_path / "in.safetensors"))
    run = subprocess.run([os.environ["OAR_RUN_BIN"], path, "--device", "cpu", "--inputs", str(tmp_path / "in.safetensors"),
                          "--output", str(tmp_path / "out.safetensors")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    out = oar.load(str(tmp_path / "out.safetensors"))
    with oar.no_grad():
        want = net(oar.to_tensor(x)).numpy()
    np.testing.assert_allclose(out["output_0"].numpy(), want, rtol=1e-6, atol=1e-6)


class _SignGate(nn.Layer):
    """forward branches on a tensor: converted to a cond by to_static."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 2)

    def forward(self, x):
        h = self.linear(x)
        if h.sum() > 0:
            h = h * 2
        else:
            h = -h
        return h


def test_tensor_branch_of_a_layer_is_captured_saved_and_loaded(tmp_path):
    import subprocess
    oar.seed(1)
    net = _SignGate()
    net.eval()
    xs = [np.full((1, 3), v, dtype=np.float32) for v in (-50.0, 50.0)]
    with oar.no_grad():
        want = [net(oar.to_tensor(x)).numpy() for x in xs]
        sums = [float(net.linear(oar.to_tensor(x)).sum().numpy()) for x in xs]
    assert (sums[0] > 0) != (sums[1] > 0)  # the two inputs take different branches
    path = str(tmp_path / "gate")
    oar.jit.save(net, path, input_spec=[InputSpec([1, 3], "float32", "x")])
    loaded = oar.jit.load(path)
    assert "cond(" in loaded.program
    for x, w in zip(xs, want):
        np.testing.assert_allclose(loaded(oar.to_tensor(x)).numpy(), w, rtol=1e-6)
    if os.environ.get("OAR_RUN_BIN"):
        for k, (x, w) in enumerate(zip(xs, want)):
            oar.save({"x": oar.to_tensor(x)}, str(tmp_path / f"in{k}.safetensors"))
            run = subprocess.run([os.environ["OAR_RUN_BIN"], path, "--device", "cpu", "--inputs",
                                  str(tmp_path / f"in{k}.safetensors"), "--output", str(tmp_path / f"out{k}.safetensors")],
                                 capture_output=True, text=True)
            assert run.returncode == 0, run.stderr
            np.testing.assert_allclose(oar.load(str(tmp_path / f"out{k}.safetensors"))["output_0"].numpy(), w, rtol=1e-6)


def test_training_with_a_dynamic_batch_traces_once_for_every_batch_size(device):
    # The loss averages over the batch and the backward broadcasts back to
    # it: both take the batch size when the program runs (numel,
    # broadcast_to_like), so batch 1, 64 and 1000 share one trace.
    oar.seed(0)
    static_net = nn.Sequential(nn.Linear(784, 16), nn.ReLU(), nn.Linear(16, 10))
    eager_net = nn.Sequential(nn.Linear(784, 16), nn.ReLU(), nn.Linear(16, 10))
    eager_net.set_state_dict(static_net.state_dict())
    forward = oar.jit.to_static(static_net, input_spec=[InputSpec([None, 784])])
    for batch in (1, 64, 1000):
        x = rand(batch, 784, seed=batch)
        labels = oar.to_tensor(np.arange(batch, dtype=np.int64) % 10)
        loss = nn.functional.cross_entropy(forward(oar.to_tensor(x)), labels)
        loss.backward()
        want = nn.functional.cross_entropy(eager_net(oar.to_tensor(x)), labels)
        want.backward()
        assert_close(loss, want.numpy(), rtol=1e-5, atol=1e-6)
        for p, q in zip(static_net.parameters(), eager_net.parameters()):
            assert_close(p.grad, q.grad.numpy(), rtol=1e-4, atol=1e-6)
            p.clear_gradient()
            q.clear_gradient()
        assert static_net.forward.trace_count == 1
    assert "input %x0: f32[-1, 784]" in static_net.forward.program


def test_shape_and_numel_are_computed_when_the_program_runs(device):
    @oar.jit.to_static(input_spec=[InputSpec([None, 3])])
    def f(x):
        return x * oar.cast(oar.numel(x), "float32"), oar.shape(x)

    for batch in (2, 5):
        x = rand(batch, 3)
        y, s = f(oar.to_tensor(x))
        assert_close(y, x * batch * 3, rtol=1e-6, atol=1e-6)
        assert s.numpy().tolist() == [batch, 3]
    assert f.trace_count == 1
    assert oar.numel(oar.to_tensor(rand(4, 2))).numpy().tolist() == 8
    assert oar.shape(oar.to_tensor(rand(4, 2))).numpy().tolist() == [4, 2]


def test_negative_slice_of_a_dynamic_dim_is_right_at_every_size():
    # x[:-1] along the dynamic batch: the end depends on the size, so the
    # trace must not keep the example's (it re-traces per size instead).
    spec = [oar.static.InputSpec([-1, 3], "float32")]
    f = oar.jit.to_static(lambda x: x[:-1] * 2.0 + x[-1], input_spec=spec)
    for n in (5, 2, 7):
        x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
        got = f(oar.to_tensor(x)).numpy()
        np.testing.assert_allclose(got, x[:-1] * 2.0 + x[-1])


def test_slicing_features_keeps_the_batch_dynamic():
    spec = [oar.static.InputSpec([-1, 4], "float32")]
    f = oar.jit.to_static(lambda x: x[:, 1:3] + x[:, -1:], input_spec=spec)
    for n in (1, 6, 3):
        x = np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)
        np.testing.assert_allclose(f(oar.to_tensor(x)).numpy(), x[:, 1:3] + x[:, -1:], rtol=1e-6)
    assert f.trace_count == 1
