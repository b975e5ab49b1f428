"""Paddle's static-graph scripts on oar (paddle.enable_static, static.data,
program_guard, Executor.run, optimizer.minimize): programs train and give
the numbers of the same model trained eagerly from the same initial values,
feeds and fetches work by name and by variable, bad feeds raise sentences
naming the variable, and dynamic mode is untouched after disable_static."""
import numpy as np
import pytest

import oar as paddle
from oar import static
from conftest import assert_close


@pytest.fixture
def static_mode():
    paddle.enable_static()
    try:
        yield
    finally:
        paddle.disable_static()


def _regression_data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 3)).astype("float32")
    y = (x @ np.array([[1.0], [2.0], [-1.0]], "float32") + 0.5).astype("float32")
    return x, y


def _eager_losses(model, optimizer, batches, loss_fn, steps=1):
    losses = []
    for _ in range(steps):
        for xb, yb in batches:
            loss = loss_fn(model(paddle.to_tensor(xb)), paddle.to_tensor(yb))
            losses.append(loss.numpy().copy())
            loss.backward()
            optimizer.step()
            optimizer.clear_grad()
    return np.array(losses)


def test_linear_regression_trains_and_matches_eager(static_mode):
    x_np, y_np = _regression_data()
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 3], "float32")
        y = static.data("y", [None, 1], "float32")
        linear = paddle.nn.Linear(3, 1)
        loss = paddle.mean((linear(x) - y) ** 2)
        paddle.optimizer.SGD(learning_rate=0.1).minimize(loss)
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    w0, b0 = linear.weight.numpy().copy(), linear.bias.numpy().copy()
    losses = np.array([exe.run(main, feed={"x": x_np, "y": y_np}, fetch_list=[loss])[0] for _ in range(20)])
    w_static = linear.weight.numpy().copy()
    paddle.disable_static()

    # The first loss by hand, from the initial parameters.
    assert_close(losses[0], np.mean((x_np @ w0 + b0 - y_np) ** 2), rtol=1e-5)
    assert losses[-1] < losses[0] / 10
    eager = paddle.nn.Linear(3, 1)
    eager.weight.set_value(w0)
    eager.bias.set_value(b0)
    opt = paddle.optimizer.SGD(learning_rate=0.1, parameters=eager.parameters())
    expected = _eager_losses(eager, opt, [(x_np, y_np)], lambda p, t: paddle.mean((p - t) ** 2), steps=20)
    assert_close(losses, expected, rtol=1e-4, atol=1e-6)
    assert_close(w_static, eager.weight.numpy(), rtol=1e-4, atol=1e-6)


def test_mlp_classifier_with_adam_matches_eager_at_every_batch_size(static_mode):
    rng = np.random.default_rng(1)
    images = rng.standard_normal((20, 4)).astype("float32")
    labels = (images[:, :1] + images[:, 1:2] > 0).astype("int64")
    batches = [(images[:8], labels[:8]), (images[8:16], labels[8:16]), (images[16:], labels[16:])]  # 8, 8, 4
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        img = static.data("img", [-1, 4], "float32")
        label = static.data("label", [-1, 1], "int64")
        model = paddle.nn.Sequential(paddle.nn.Linear(4, 8), paddle.nn.ReLU(), paddle.nn.Linear(8, 2))
        logits = model(img)
        loss = paddle.nn.functional.cross_entropy(logits, label)
        accuracy = paddle.mean(paddle.cast(paddle.equal(paddle.argmax(logits, axis=1, keepdim=True), label),
                                           "float32"))
        paddle.optimizer.Adam(learning_rate=0.05).minimize(loss)
    exe = static.Executor()
    exe.run(startup)
    init = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    losses, accs = [], []
    for _ in range(5):
        for xb, yb in batches:
            lv, av = exe.run(main, feed={"img": xb, "label": yb}, fetch_list=[loss, accuracy])
            losses.append(lv)
            accs.append(av)
    paddle.disable_static()

    eager = paddle.nn.Sequential(paddle.nn.Linear(4, 8), paddle.nn.ReLU(), paddle.nn.Linear(8, 2))
    eager.set_state_dict({k: paddle.to_tensor(v) for k, v in init.items()})
    opt = paddle.optimizer.Adam(learning_rate=0.05, parameters=eager.parameters())
    expected = _eager_losses(eager, opt, batches, paddle.nn.functional.cross_entropy, steps=5)
    assert_close(np.array(losses), expected, rtol=1e-4, atol=1e-5)
    assert losses[-1] < losses[0]
    assert 0.0 <= min(accs) and max(accs) <= 1.0


class _ConvNet(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = paddle.nn.Conv2D(1, 2, 3, padding=1)
        self.bn = paddle.nn.BatchNorm2D(2)
        self.emb = paddle.nn.Embedding(5, 18)
        self.ln = paddle.nn.LayerNorm(18)
        self.fc = paddle.nn.Linear(18, 3)

    def forward(self, x, lab):
        h = paddle.nn.functional.max_pool2d(paddle.nn.functional.relu(self.bn(self.conv(x))), 2)
        return self.fc(self.ln(paddle.flatten(h, 1) + self.emb(lab)))


def test_conv_batch_norm_model_matches_eager_with_running_statistics(static_mode):
    rng = np.random.default_rng(2)
    images = rng.standard_normal((4, 1, 6, 6)).astype("float32")
    labels = np.array([0, 1, 2, 4])
    sizes = (4, 3, 4)

    def loss_of(net, x, lab):
        return paddle.nn.functional.cross_entropy(net(x, lab), paddle.unsqueeze(lab, 1) % 3)

    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("img", [None, 1, 6, 6], "float32")
        lab = static.data("lab", [None], "int64")
        net = _ConvNet()
        loss = loss_of(net, x, lab)
        paddle.optimizer.Momentum(0.1, momentum=0.9).minimize(loss)
    exe = static.Executor()
    exe.run(startup)
    init = {k: v.numpy().copy() for k, v in net.state_dict().items()}
    losses = [exe.run(main, feed={"img": images[:n], "lab": labels[:n]}, fetch_list=[loss])[0] for n in sizes]
    running_mean = net.bn._mean.numpy().copy()
    paddle.disable_static()

    eager = _ConvNet()
    eager.set_state_dict({k: paddle.to_tensor(v) for k, v in init.items()})
    opt = paddle.optimizer.Momentum(0.1, momentum=0.9, parameters=eager.parameters())
    expected = []
    for n in sizes:
        lv = loss_of(eager, paddle.to_tensor(images[:n]), paddle.to_tensor(labels[:n]))
        expected.append(lv.numpy().copy())
        lv.backward()
        opt.step()
        opt.clear_grad()
    assert_close(np.array(losses), np.array(expected), rtol=1e-4, atol=1e-5)
    assert_close(running_mean, eager.bn._mean.numpy(), rtol=1e-4, atol=1e-6)
    assert not np.allclose(running_mean, init["bn._mean"])  # the program updated the buffer


def test_feed_and_fetch_by_name_and_by_variable(static_mode):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 2], "float32")
        y = x * 2.0 + 1.0
        z = paddle.sum(y, axis=1)
    exe = static.Executor()
    exe.run(startup)
    feed = {"x": np.array([[1.0, 2.0], [3.0, 4.0]], "float32")}
    y_v, z_v, x_v = exe.run(main, feed=feed, fetch_list=[y, z, "x"])
    assert_close(y_v, [[3.0, 5.0], [7.0, 9.0]])
    assert_close(z_v, [8.0, 16.0])
    assert_close(x_v, feed["x"])
    (z_by_name,) = exe.run(main, feed=feed, fetch_list=[z.name])  # computed variables are named too
    assert_close(z_by_name, [8.0, 16.0])
    (z_t,) = exe.run(main, feed=feed, fetch_list=[z], return_numpy=False)
    assert isinstance(z_t, paddle.Tensor)
    assert_close(z_t, [8.0, 16.0])
    # The default main program is used without program_guard.
    assert static.default_main_program() is not main


def test_fetch_a_parameter_by_name(static_mode):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 3], "float32")
        out = static.nn.fc(x, size=2, activation="relu")
    exe = static.Executor()
    exe.run(startup)
    params = main.all_parameters()
    assert len(params) == 2
    weight = next(p for p in params if len(p.shape) == 2)
    bias = next(p for p in params if len(p.shape) == 1)
    x_np = np.arange(6, dtype="float32").reshape(2, 3) - 2.0
    out_v, w_v = exe.run(main, feed={"x": x_np}, fetch_list=[out, weight.name])
    assert_close(w_v, weight.numpy())
    assert_close(out_v, np.maximum(x_np @ weight.numpy() + bias.numpy(), 0.0), rtol=1e-5)
    assert main.global_block().var(weight.name) is weight
    assert_close(np.array(static.global_scope().find_var(weight.name).get_tensor()), weight.numpy())
    (again,) = exe.run(static.CompiledProgram(main), feed={"x": x_np}, fetch_list=[out])
    assert_close(again, out_v)


def test_accuracy_in_a_program(static_mode):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        logits = static.data("logits", [None, 3], "float32")
        label = static.data("label", [None, 1], "int64")
        acc = static.accuracy(logits, label)
    exe = static.Executor()
    scores = np.array([[0.1, 0.8, 0.1], [0.9, 0.0, 0.1], [0.2, 0.3, 0.5], [0.6, 0.3, 0.1]], "float32")
    (value,) = exe.run(main, feed={"logits": scores, "label": np.array([[1], [0], [0], [0]])}, fetch_list=[acc])
    assert_close(value, 0.75)


def test_bad_feeds_and_fetches_name_the_variable(static_mode):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 3], "float32")
        y = static.data("y", [None, 1], "float32")
        loss = paddle.mean((paddle.nn.Linear(3, 1)(x) - y) ** 2)
    exe = static.Executor()
    exe.run(startup)
    good = {"x": np.ones((4, 3), "float32"), "y": np.ones((4, 1), "float32")}
    with pytest.raises(ValueError, match=r"static.data\('y'.*feed has no 'y'"):
        exe.run(main, feed={"x": good["x"]}, fetch_list=[loss])
    with pytest.raises(ValueError, match=r"feed 'x' has shape \[4, 2\] but static.data\('x'\) declares \[-1, 3\]"):
        exe.run(main, feed=dict(good, x=np.ones((4, 2), "float32")), fetch_list=[loss])
    with pytest.raises(ValueError, match=r"feed 'x' has dtype float64 but static.data\('x'\) declares float32"):
        exe.run(main, feed=dict(good, x=np.ones((4, 3))), fetch_list=[loss])
    with pytest.raises(ValueError, match="fetch_list\\[0\\] names 'nope'"):
        exe.run(main, feed=good, fetch_list=["nope"])
    with pytest.raises(ValueError, match="already has a variable named 'x'"):
        with static.program_guard(main, startup):
            static.data("x", [3], "float32")
    # A variable has no value while the program is built.
    with pytest.raises(RuntimeError, match="no value while the program is built"):
        with static.program_guard(main, startup):
            (x + 1.0).numpy()
    (v,) = exe.run(main, feed=good, fetch_list=[loss])
    assert np.isfinite(v)


def test_a_tensor_computed_outside_the_program_is_refused():
    w = paddle.ones([3])
    w.stop_gradient = False
    derived = w * 2.0  # eager, with autograd history: the program could only keep its value
    paddle.enable_static()
    try:
        with static.program_guard(static.Program(), static.Program()):
            x = static.data("x", [None, 3], "float32")
            with pytest.raises(RuntimeError, match="computed by .* outside the static program"):
                x + derived
    finally:
        paddle.disable_static()


def test_enable_disable_round_trip_leaves_eager_unaffected():
    ops_add, tensor_add, exp = paddle._C.ops.add, paddle.Tensor.__add__, paddle.exp
    assert paddle.in_dynamic_mode()
    paddle.enable_static()
    try:
        assert not paddle.in_dynamic_mode()
        assert paddle._C.ops.add is not ops_add
        program = static.Program()
        with static.program_guard(program, static.Program()):
            x = static.data("x", [2], "float32")
            y = paddle.exp(x) + x  # paddle.exp calls the C++ op that static mode rebinds
        (y_v,) = static.Executor().run(program, feed={"x": np.array([0.0, 1.0], "float32")}, fetch_list=[y])
        assert_close(y_v, np.exp([0.0, 1.0]) + [0.0, 1.0], rtol=1e-6)
        assert "exp(%x)" in str(program)
    finally:
        paddle.disable_static()
    assert paddle.in_dynamic_mode()
    assert paddle._C.ops.add is ops_add and paddle.Tensor.__add__ is tensor_add and paddle.exp is exp
    t = paddle.to_tensor([1.0, 2.0])
    assert_close(paddle.exp(t) + t, np.exp([1.0, 2.0]) + [1.0, 2.0])
    assert t.numpy().tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="enable_static"):
        static.data("x", [2], "float32")


def test_print_program_clone_for_test_and_startup_reinitializes(static_mode):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 3], "float32")
        linear = paddle.nn.Linear(3, 2)
        h = paddle.nn.functional.dropout(linear(x), p=0.5)
        loss = paddle.mean(h * h)
        test_program = main.clone(for_test=True)
        paddle.optimizer.SGD(learning_rate=0.5).minimize(loss)
    text = str(main)
    assert "input %x: f32[-1, 3]" in text and "matmul" in text
    exe = static.Executor()
    exe.run(startup)
    w0 = linear.weight.numpy().copy()
    x_np = np.ones((4, 3), "float32")
    (h_test,) = exe.run(test_program, feed={"x": x_np}, fetch_list=[h])
    assert_close(h_test, x_np @ w0 + linear.bias.numpy(), rtol=1e-5)  # no dropout, no training
    assert_close(linear.weight.numpy(), w0)
    exe.run(main, feed={"x": x_np}, fetch_list=[loss])
    assert not np.allclose(linear.weight.numpy(), w0)
    exe.run(startup)  # the startup program sets the initial values again
    assert_close(linear.weight.numpy(), w0)


def test_startup_keeps_the_values_initializers_gave(static_mode):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 3], "float32")
        norm = paddle.nn.LayerNorm(3)  # weight: ones, bias: zeros
        out = norm(x)
    exe = static.Executor()
    exe.run(startup)
    assert_close(norm.weight.numpy(), np.ones(3))
    x_np = np.array([[1.0, 2.0, 3.0]], "float32")
    (y,) = exe.run(main, feed={"x": x_np}, fetch_list=[out])
    assert_close(y, (x_np - 2.0) / np.sqrt(2.0 / 3.0 + 1e-5), rtol=1e-5)
    assert "layer_norm" in str(main) and "full" not in str(main)


def test_save_and_load_parameters_and_inference_model(static_mode, tmp_path):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 3], "float32")
        linear = paddle.nn.Linear(3, 2)
        out = paddle.tanh(linear(x))
    exe = static.Executor()
    exe.run(startup)
    x_np = np.linspace(-1, 1, 12, dtype="float32").reshape(4, 3)
    (expected,) = exe.run(main, feed={"x": x_np}, fetch_list=[out])
    assert_close(expected, np.tanh(x_np @ linear.weight.numpy() + linear.bias.numpy()), rtol=1e-5)

    static.save(main, str(tmp_path / "model"))
    w0 = linear.weight.numpy().copy()
    linear.weight.set_value(np.zeros_like(w0))
    static.load(main, str(tmp_path / "model"))
    assert_close(linear.weight.numpy(), w0)

    static.save_inference_model(str(tmp_path / "infer"), [x], [out], exe, program=main)
    program, feed_names, fetch_targets = static.load_inference_model(str(tmp_path / "infer"), exe)
    assert feed_names == ["x"]
    (got,) = exe.run(program, feed={"x": x_np}, fetch_list=fetch_targets)
    assert_close(got, expected, rtol=1e-5)
    paddle.disable_static()
    loaded = paddle.jit.load(str(tmp_path / "infer"))  # the format of oar.jit.save
    assert_close(loaded(paddle.to_tensor(x_np)), expected, rtol=1e-5)
