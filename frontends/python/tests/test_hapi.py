"""oar.Model (hapi): fit on a tiny problem with the progress bar, evaluate,
predict, train_batch, save/load, callbacks, summary."""
import numpy as np
import pytest

import oar
import oar.nn as nn


def blobs(n=240, seed=0):
    """Two separable classes in 2-D: label = x0 + x1 > 0."""
    x = np.random.default_rng(seed).standard_normal((n, 2)).astype(np.float32)
    return x, (x[:, 0] + x[:, 1] > 0).astype(np.int64)


def make_model(lr=0.05):
    net = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 2))
    model = oar.Model(net)
    model.prepare(oar.optimizer.Adam(lr, parameters=net.parameters()), nn.CrossEntropyLoss(),
                  oar.metric.Accuracy())
    return model


def test_fit_learns_and_shows_progress_bar(device, capsys):
    oar.seed(1)
    x, y = blobs()
    train = oar.io.TensorDataset([x, y])
    model = make_model()
    model.fit(train, train, batch_size=32, epochs=4, verbose=1, log_freq=4)
    out = capsys.readouterr().out
    assert "Epoch 1/4" in out and "Epoch 4/4" in out
    # 240 / 32 -> 8 steps: the bar at steps 4 and 8, with the loss and the accuracy.
    assert "step 4/8 [" in out and "step 8/8 [==============================]" in out
    assert " - loss: " in out and " - acc: " in out and ("ms/step" in out or "us/step" in out)
    assert "Eval begin..." in out and "Eval samples: 240" in out
    result = model.evaluate(train, batch_size=60, verbose=0)
    assert set(result) == {"loss", "acc"} and isinstance(result["loss"], list)
    assert result["acc"] >= 0.95


def test_verbose_2_and_0(device, capsys):
    x, y = blobs(64)
    model = make_model()
    model.fit(oar.io.TensorDataset([x, y]), batch_size=16, epochs=1, verbose=2, log_freq=2)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("step")]
    assert [line.split(" - ")[0] for line in lines] == ["step 2/4", "step 4/4"]
    model.fit(oar.io.TensorDataset([x, y]), batch_size=16, epochs=1, verbose=0)
    assert capsys.readouterr().out == ""


def test_predict_and_batches(device):
    x, y = blobs(50)
    model = make_model()
    ds = oar.io.TensorDataset([x, y])
    per_batch = model.predict(ds, batch_size=20, verbose=0)
    assert len(per_batch) == 1 and [o.shape for o in per_batch[0]] == [(20, 2), (20, 2), (10, 2)]
    stacked = model.predict(ds, batch_size=20, stack_outputs=True, verbose=0)
    np.testing.assert_allclose(stacked[0], model.network(oar.to_tensor(x)).numpy(), rtol=1e-5, atol=1e-6)
    loader = oar.io.DataLoader(ds, batch_size=25)
    losses, metrics = model.train_batch([oar.to_tensor(x)], [oar.to_tensor(y)])
    assert len(losses) == 1 and np.asarray(losses[0]).size == 1 and 0.0 <= metrics[0] <= 1.0
    assert len(model.eval_batch([oar.to_tensor(x)], [oar.to_tensor(y)])[0]) == 1
    assert len(model.predict(loader, verbose=0)[0]) == 2


def test_save_load_roundtrip(device, tmp_path):
    oar.seed(3)
    x, y = blobs(64)
    model = make_model()
    model.fit(oar.io.TensorDataset([x, y]), batch_size=16, epochs=2, verbose=0)
    model.save(str(tmp_path / "ckpt" / "m"))
    assert (tmp_path / "ckpt" / "m.pdparams").exists() and (tmp_path / "ckpt" / "m.pdopt").exists()
    other = make_model()
    other.load(str(tmp_path / "ckpt" / "m"))
    xt = oar.to_tensor(x)
    np.testing.assert_array_equal(other.network(xt).numpy(), model.network(xt).numpy())
    # The optimizer state came back too: one more identical step on both stays identical.
    for m in (model, other):
        m.train_batch([xt], [oar.to_tensor(y)])
    np.testing.assert_array_equal(other.network(xt).numpy(), model.network(xt).numpy())
    with pytest.raises(ValueError, match="InputSpec"):
        model.save(str(tmp_path / "inference"), training=False)
    # With input specs, training=False exports the inference program.
    spec_model = oar.Model(model.network, inputs=[oar.static.InputSpec([None, 2], "float32", "x")])
    spec_model.save(str(tmp_path / "inference"), training=False)
    assert model.network.training
    loaded = oar.jit.load(str(tmp_path / "inference"))
    model.network.eval()
    np.testing.assert_allclose(loaded(xt).numpy(), model.network(xt).numpy(), rtol=1e-6, atol=1e-6)


def test_lr_scheduler_steps_per_batch_and_callbacks(device):
    x, y = blobs(64)
    net = nn.Linear(2, 2)
    sched = oar.optimizer.lr.StepDecay(0.1, step_size=1, gamma=0.5)
    model = oar.Model(net)
    model.prepare(oar.optimizer.SGD(sched, parameters=net.parameters()), nn.CrossEntropyLoss())
    seen = []

    class Record(oar.callbacks.Callback):
        def on_train_batch_end(self, step, logs=None):
            seen.append((step, round(logs["loss"][0], 6) > 0))

        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1:
                self.model.stop_training = True

    model.fit(oar.io.TensorDataset([x, y]), batch_size=16, epochs=5, verbose=0, callbacks=[Record()])
    # Two epochs of 4 steps (stopped after the second), the scheduler stepped after each batch.
    assert [s for s, _ in seen] == [0, 1, 2, 3] * 2
    assert sched.last_epoch == 8


def test_summary(capsys):
    net = nn.Sequential(nn.Conv2D(1, 4, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 8 * 8, 10))
    info = oar.summary(net, (1, 1, 8, 8))
    out = capsys.readouterr().out
    assert info == {"total_params": 4 * 9 + 4 + 256 * 10 + 10, "trainable_params": 2610}
    assert "[1, 4, 8, 8]" in out and "[1, 10]" in out
