"""nn.SimpleRNNCell/LSTMCell/GRUCell, nn.RNN/BiRNN and nn.SimpleRNN/LSTM/GRU:
against a numpy reference written here, finite differences, and PaddlePaddle
given the same weights (when a paddle install is present)."""
import numpy as np
import pytest

import oar
import oar.nn as nn
from conftest import assert_close
from paddle_ref import run_paddle
from test_autograd import check_grad, numeric_grad

rng = np.random.default_rng(7)
GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def np_cell(mode, x, state, w):
    """One step; w has weight_ih, weight_hh, bias_ih, bias_hh (and weight_ho)."""
    h_prev = state[0] if mode == "LSTM" else state
    xg = x @ w["weight_ih"].T + w["bias_ih"]
    hg = h_prev @ w["weight_hh"].T + w["bias_hh"]
    if mode == "RNN_TANH":
        h = np.tanh(xg + hg)
        return h, h
    if mode == "RNN_RELU":
        h = np.maximum(xg + hg, 0)
        return h, h
    if mode == "GRU":
        (xr, xz, xc), (hr, hz, hc) = np.split(xg, 3, -1), np.split(hg, 3, -1)
        r, z = sigmoid(xr + hr), sigmoid(xz + hz)
        c = np.tanh(xc + r * hc)
        h = z * h_prev + (1 - z) * c
        return h, h
    i, f, g, o = np.split(xg + hg, 4, -1)
    c = sigmoid(f) * state[1] + sigmoid(i) * np.tanh(g)
    h = sigmoid(o) * np.tanh(c)
    if "weight_ho" in w:
        h = h @ w["weight_ho"]
    return h, (h, c)


def np_unroll(mode, x, state, w, lengths, reverse):
    """x [B, T, I]; a step at or past a sequence's length keeps the old state."""
    steps = range(x.shape[1] - 1, -1, -1) if reverse else range(x.shape[1])
    outs = [None] * x.shape[1]
    for t in steps:
        out, new = np_cell(mode, x[:, t], state, w)
        keep = (t < lengths)[:, None].astype(x.dtype)
        if mode == "LSTM":
            state = tuple(keep * n + (1 - keep) * s for n, s in zip(new, state))
        else:
            state = keep * new + (1 - keep) * state
        outs[t] = out
    return np.stack(outs, 1), state


def np_network(mode, x, weights, num_layers, directions, h0, lengths):
    """Stacked network with zeroed outputs past each length (as Paddle's fused kernel)."""
    finals = []
    lengths = np.full(x.shape[0], x.shape[1]) if lengths is None else lengths
    mask = (np.arange(x.shape[1])[None, :] < lengths[:, None])[:, :, None]
    for layer in range(num_layers):
        outs = []
        for d, sfx in enumerate(["", "_reverse"][:directions]):
            k = layer * directions + d
            w = {n: weights[f"{n}_l{layer}{sfx}"] for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh",
                                                             "weight_ho") if f"{n}_l{layer}{sfx}" in weights}
            state = (h0[0][k], h0[1][k]) if mode == "LSTM" else h0[k]
            out, state = np_unroll(mode, x, state, w, lengths, d == 1)
            outs.append(out)
            finals.append(state)
        x = np.concatenate(outs, -1) * mask
    if mode == "LSTM":
        return x, (np.stack([f[0] for f in finals]), np.stack([f[1] for f in finals]))
    return x, np.stack(finals)


def weights_of(layer):
    return {k: v.numpy().astype(np.float64) for k, v in layer.state_dict().items()}


CELLS = [("RNN_TANH", lambda: nn.SimpleRNNCell(3, 4)), ("RNN_RELU", lambda: nn.SimpleRNNCell(3, 4, "relu")),
         ("GRU", lambda: nn.GRUCell(3, 4)), ("LSTM", lambda: nn.LSTMCell(3, 4)),
         ("LSTM", lambda: nn.LSTMCell(3, 4, proj_size=2))]


@pytest.mark.parametrize("mode,make", CELLS)
def test_cell_matches_numpy(device, mode, make):
    cell = make()
    w = weights_of(cell)
    assert list(w) == ["weight_ih", "weight_hh", "bias_ih", "bias_hh"] + (["weight_ho"] if "weight_ho" in w else [])
    assert w["weight_ih"].shape == (GATES[mode] * 4, 3)
    bound = 1 / np.sqrt(4)
    assert all(np.abs(v).max() <= bound for v in w.values())  # Uniform(-1/sqrt(hidden), 1/sqrt(hidden))
    x = rng.standard_normal((2, 3)).astype(np.float32)
    h_size = 2 if "weight_ho" in w else 4
    if mode == "LSTM":
        state = (rng.standard_normal((2, h_size)), rng.standard_normal((2, 4)))
        out, (h, c) = cell(oar.to_tensor(x), tuple(oar.to_tensor(s.astype(np.float32)) for s in state))
        ref_out, (ref_h, ref_c) = np_cell(mode, x, state, w)
        assert_close(c, ref_c, rtol=1e-5, atol=1e-5)
        assert list(cell(oar.to_tensor(x))[1][0].shape) == [2, h_size]  # zero states by default
    else:
        state = rng.standard_normal((2, 4))
        out, h = cell(oar.to_tensor(x), oar.to_tensor(state.astype(np.float32)))
        ref_out, ref_h = np_cell(mode, x, state, w)
    assert_close(out, ref_out, rtol=1e-5, atol=1e-5)
    assert_close(h, ref_h, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("time_major", [False, True])
def test_rnn_and_birnn_wrappers(device, time_major):
    cell, cell_bw = nn.GRUCell(3, 4), nn.GRUCell(3, 4)
    x = rng.standard_normal((2, 5, 3)).astype(np.float32)
    xt = oar.to_tensor(x.transpose(1, 0, 2) if time_major else x)
    lengths = np.array([5, 3])
    out, h = nn.RNN(cell, is_reverse=True, time_major=time_major)(xt, sequence_length=oar.to_tensor(lengths))
    ref_out, ref_h = np_unroll("GRU", x, np.zeros((2, 4)), weights_of(cell), lengths, True)
    assert_close(out, ref_out.transpose(1, 0, 2) if time_major else ref_out, rtol=1e-5, atol=1e-5)
    assert_close(h, ref_h, rtol=1e-5, atol=1e-5)
    out, (h_fw, h_bw) = nn.BiRNN(cell, cell_bw, time_major)(xt)
    fw = np_unroll("GRU", x, np.zeros((2, 4)), weights_of(cell), np.array([5, 5]), False)
    bw = np_unroll("GRU", x, np.zeros((2, 4)), weights_of(cell_bw), np.array([5, 5]), True)
    ref = np.concatenate([fw[0], bw[0]], -1)
    assert_close(out, ref.transpose(1, 0, 2) if time_major else ref, rtol=1e-5, atol=1e-5)
    assert_close(h_fw, fw[1], rtol=1e-5, atol=1e-5)
    assert_close(h_bw, bw[1], rtol=1e-5, atol=1e-5)


NETWORKS = [("RNN_TANH", dict(num_layers=2)), ("RNN_RELU", dict(direction="bidirect")),
            ("GRU", dict(num_layers=2, direction="bidirectional")), ("LSTM", dict(num_layers=2, direction="bidirect")),
            ("LSTM", dict(num_layers=2, proj_size=3))]


def make_network(mode, kwargs, input_size=3, hidden=5):
    if mode.startswith("RNN_"):
        return nn.SimpleRNN(input_size, hidden, activation=mode[4:].lower(), **kwargs)
    return getattr(nn, mode)(input_size, hidden, **kwargs)


@pytest.mark.parametrize("mode,kwargs", NETWORKS)
@pytest.mark.parametrize("with_lengths", [False, True])
def test_network_matches_numpy(device, mode, kwargs, with_lengths):
    net = make_network(mode, kwargs)
    layers, dirs = kwargs.get("num_layers", 1), 1 if kwargs.get("direction", "forward") == "forward" else 2
    w = weights_of(net)
    names = [f"{n}_l{k}{s}" for k in range(layers) for s in ["", "_reverse"][:dirs]
             for n in ["weight_ih", "weight_hh", "bias_ih", "bias_hh"] + ["weight_ho"] * ("proj_size" in kwargs)]
    # Paddle's state_dict: the flat names, then each cell's parameters again under the layer path.
    assert [k for k in w if "." not in k] == names and len(w) == 2 * len(names)
    h_size = kwargs.get("proj_size", 5)
    x = rng.standard_normal((3, 4, 3)).astype(np.float32)
    lengths = np.array([4, 1, 2]) if with_lengths else None
    h0 = rng.standard_normal((layers * dirs, 3, h_size)).astype(np.float32)
    if mode == "LSTM":
        c0 = rng.standard_normal((layers * dirs, 3, 5)).astype(np.float32)
        out, (h, c) = net(oar.to_tensor(x), (oar.to_tensor(h0), oar.to_tensor(c0)),
                          None if lengths is None else oar.to_tensor(lengths))
        ref_out, (ref_h, ref_c) = np_network(mode, x, w, layers, dirs, (h0, c0), lengths)
        assert_close(c, ref_c, rtol=1e-4, atol=1e-5)
    else:
        out, h = net(oar.to_tensor(x), oar.to_tensor(h0), None if lengths is None else oar.to_tensor(lengths))
        ref_out, ref_h = np_network(mode, x, w, layers, dirs, h0, lengths)
    assert list(out.shape) == [3, 4, h_size * dirs]
    assert_close(out, ref_out, rtol=1e-4, atol=1e-5)
    assert_close(h, ref_h, rtol=1e-4, atol=1e-5)


def test_default_states_time_major_and_dropout(device):
    net = nn.LSTM(3, 4, num_layers=2, direction="bidirect", time_major=True, dropout=0.5)
    x = oar.randn([6, 2, 3])  # [time, batch, size]
    out, (h, c) = net(x)
    assert list(out.shape) == [6, 2, 8] and list(h.shape) == [4, 2, 4] and list(c.shape) == [4, 2, 4]
    net.eval()
    a, b = net(x)[0], net(x)[0]
    assert_close(a, b.numpy())  # no dropout in eval
    assert repr(net).startswith("LSTM(3, 4, num_layers=2, time_major=True, dropout=0.5")


def test_time_major_lengths_match_batch_major(device):
    batch_major = nn.LSTM(3, 4, direction="bidirect")
    time_major = nn.LSTM(3, 4, direction="bidirect", time_major=True)
    time_major.set_state_dict(batch_major.state_dict())
    x = rng.standard_normal((2, 5, 3)).astype(np.float32)
    lengths = oar.to_tensor([2, 5])
    out_b, (h_b, c_b) = batch_major(oar.to_tensor(x), sequence_length=lengths)
    out_t, (h_t, c_t) = time_major(oar.to_tensor(x.transpose(1, 0, 2)), sequence_length=lengths)
    assert_close(out_t, out_b.numpy().transpose(1, 0, 2), rtol=1e-5, atol=1e-6)
    assert_close(h_t, h_b.numpy(), rtol=1e-5, atol=1e-6)
    assert_close(c_t, c_b.numpy(), rtol=1e-5, atol=1e-6)
    assert (out_b.numpy()[0, 2:] == 0).all()  # past the length


def test_gradients_vs_finite_differences(device):
    x = rng.standard_normal((2, 3, 2))
    for make in [lambda: nn.GRU(2, 3, direction="bidirect"), lambda: nn.LSTM(2, 3),
                 lambda: nn.SimpleRNN(2, 3, num_layers=2)]:
        net = make().to(dtype="float64")

        def loss(inputs):
            out, _ = net(inputs, sequence_length=oar.to_tensor([3, 2]))
            return (out * out).sum()
        check_grad(loss, x)
        xt = oar.to_tensor(x)
        loss(xt).backward()
        for name in ("weight_ih_l0", "weight_hh_l0", "bias_hh_l0"):
            p = net.state_dict()[name]
            base = p.numpy().copy()

            def at(v, p=p):
                p.set_value(v)
                return loss(xt).item()
            assert_close(p.grad, numeric_grad(at, base), rtol=1e-4, atol=1e-6)
            p.set_value(base)


def test_training_step_reduces_loss(device):
    oar.seed(3)
    net = nn.LSTM(2, 8)
    head = nn.Linear(8, 1)
    opt = oar.optimizer.Adam(0.05, parameters=net.parameters() + head.parameters())
    x = oar.to_tensor(rng.standard_normal((4, 5, 2)).astype(np.float32))
    y = oar.to_tensor(x.numpy().sum(axis=(1, 2))[:, None])
    losses = []
    for _ in range(20):
        out, _ = net(x)
        loss = ((head(out[:, -1]) - y) ** 2).mean()
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="direction"):
        nn.GRU(2, 3, direction="sideways")
    with pytest.raises(ValueError, match="hidden_size"):
        nn.LSTMCell(2, 0)
    with pytest.raises(ValueError, match="proj_size"):
        nn.LSTM(2, 3, proj_size=3)
    with pytest.raises(ValueError, match="activation"):
        nn.SimpleRNN(2, 3, activation="gelu")
    with pytest.raises(ValueError, match="3-D"):
        nn.GRU(2, 3)(oar.ones([2, 2]))
    with pytest.raises(ValueError, match=r"\[2, 1, 3\], got shape \[1, 1, 3\]"):
        nn.GRU(2, 3, direction="bidirect")(oar.ones([1, 4, 2]), oar.zeros([1, 1, 3]))
    with pytest.raises(ValueError, match=r"sequence_length must have shape \[batch\] = \[1\]"):
        nn.GRU(2, 3)(oar.ones([1, 4, 2]), sequence_length=oar.to_tensor([4, 4]))
    with pytest.raises(ValueError, match="input_size is 2"):
        nn.LSTM(2, 3)(oar.ones([1, 4, 5]))
    with pytest.raises(ValueError, match="pair"):
        nn.LSTM(2, 3)(oar.ones([1, 4, 2]), oar.zeros([1, 1, 3]))


PADDLE_SCRIPT = """
paddle.seed(11)
x = paddle.to_tensor(np.random.default_rng(0).standard_normal((2, 5, 3)).astype("float32"))
lengths = paddle.to_tensor([5, 3])
nets = {
    "lstm": paddle.nn.LSTM(3, 4, num_layers=2, direction="bidirect"),
    "gru": paddle.nn.GRU(3, 4, num_layers=2),
    "rnn": paddle.nn.SimpleRNN(3, 4, direction="bidirectional", activation="relu"),
    "proj": paddle.nn.LSTM(3, 4, proj_size=2),
}
for name, net in nets.items():
    for k, v in net.named_parameters():
        save(**{f"{name}.{k}": v})
    out, states = net(x) if name == "proj" else net(x, sequence_length=lengths)
    states = states if isinstance(states, tuple) else (states,)
    save(**{f"{name}.out": out}, **{f"{name}.state{i}": s for i, s in enumerate(states)})
cell = paddle.nn.GRUCell(3, 4)
for k, v in cell.state_dict().items():
    save(**{f"cell.{k}": v})
save(**{"cell.out": cell(x[:, 0])[0]})
"""


def test_same_outputs_as_paddle(tmp_path):
    ref = run_paddle(PADDLE_SCRIPT, tmp_path)
    x = oar.to_tensor(np.random.default_rng(0).standard_normal((2, 5, 3)).astype(np.float32))
    nets = {"lstm": nn.LSTM(3, 4, num_layers=2, direction="bidirect"), "gru": nn.GRU(3, 4, num_layers=2),
            "rnn": nn.SimpleRNN(3, 4, direction="bidirectional", activation="relu"), "proj": nn.LSTM(3, 4, proj_size=2)}
    for name, net in nets.items():
        state = {k[len(name) + 1:]: oar.to_tensor(v) for k, v in ref.items()
                 if k.startswith(name + ".") and not k[len(name) + 1:].startswith(("out", "state"))}
        if name == "proj":  # Paddle 3.3 has no flat name for weight_ho
            state["weight_ho_l0"] = state.pop("0.cell.weight_ho")
        missing, _ = net.set_state_dict(state)
        assert missing == []
        out, states = net(x) if name == "proj" else net(x, sequence_length=oar.to_tensor([5, 3]))
        states = states if isinstance(states, tuple) else (states,)
        assert_close(out, ref[f"{name}.out"], rtol=1e-5, atol=1e-5)
        for i, s in enumerate(states):
            assert_close(s, ref[f"{name}.state{i}"], rtol=1e-5, atol=1e-5)
    cell = nn.GRUCell(3, 4)
    cell.set_state_dict({k[5:]: oar.to_tensor(v) for k, v in ref.items() if k.startswith("cell.") and k != "cell.out"})
    assert_close(cell(x[:, 0])[0], ref["cell.out"], rtol=1e-5, atol=1e-5)
