"""Recurrent layers (paddle.nn.SimpleRNNCell, LSTMCell, GRUCell, RNN, BiRNN,
SimpleRNN, LSTM, GRU), composed of matmul, sigmoid, tanh and stack so that
autograd covers them.

Weights follow Paddle: weight_ih [gates * hidden, input], weight_hh
[gates * hidden, hidden], biases [gates * hidden], all Uniform(-1/sqrt(hidden),
1/sqrt(hidden)); gates are stacked in the order i, f, g, o (LSTM) and r, z, c
(GRU). A multi-layer network also exposes each cell's parameters under the
flat names weight_ih_l{k}[_reverse] etc., so a Paddle state_dict loads."""
import math

from .. import math as M
from ..creation import arange, full, to_tensor
from ..framework import Tensor
from . import functional as F
from . import initializer as I
from .layer import Layer
from .layers import LayerList


def _map(fn, *structs):
    """fn applied leaf by leaf over equally nested tuples/lists of tensors."""
    first = structs[0]
    if isinstance(first, (list, tuple)):
        return type(first)(_map(fn, *parts) for parts in zip(*structs))
    return fn(*structs)


def _flatten(struct):
    if isinstance(struct, (list, tuple)):
        return [leaf for part in struct for leaf in _flatten(part)]
    return [struct]


class RNNCellBase(Layer):
    """Base class of the cells: one step from (input, states) to (output, new states)."""

    def get_initial_states(self, batch_ref, shape=None, dtype=None, init_value=0.0, batch_dim_idx=0):
        """Tensors filled with init_value, shaped like state_shape (or shape) with
        batch_ref.shape[batch_dim_idx] as the leading batch dimension."""
        batch_ref = _flatten(batch_ref)[0]
        batch = batch_ref.shape[batch_dim_idx]
        shapes = self.state_shape if shape is None else shape
        dtype = dtype or batch_ref.dtype

        def fill(s):
            s = list(s)
            return full([batch] + (s[1:] if s and s[0] == -1 else s), init_value, dtype)

        def walk(s):
            if isinstance(s, (list, tuple)) and s and isinstance(s[0], (list, tuple)):
                return type(s)(walk(part) for part in s)
            return fill(s)
        return walk(shapes)

    @property
    def state_shape(self):
        raise NotImplementedError(f"{type(self).__name__} does not define state_shape; pass the states explicitly")

    @property
    def state_dtype(self):
        raise NotImplementedError(f"{type(self).__name__} does not define state_dtype")

    def _create_weights(self, gates, input_size, hidden_size, h_size, weight_ih_attr, weight_hh_attr,
                        bias_ih_attr, bias_hh_attr):
        """Paddle's cell parameters; an attr of False gives a fixed, untrained
        tensor (ones for a weight, zeros for a bias) as Paddle does."""
        if hidden_size <= 0:
            raise ValueError(f"{type(self).__name__}: hidden_size must be greater than 0, got {hidden_size}")
        if input_size <= 0:
            raise ValueError(f"{type(self).__name__}: input_size must be greater than 0, got {input_size}")
        std = 1.0 / math.sqrt(hidden_size)
        specs = (("weight_ih", [gates * hidden_size, input_size], weight_ih_attr, False),
                 ("weight_hh", [gates * hidden_size, h_size], weight_hh_attr, False),
                 ("bias_ih", [gates * hidden_size], bias_ih_attr, True),
                 ("bias_hh", [gates * hidden_size], bias_hh_attr, True))
        for name, shape, attr, is_bias in specs:
            if attr is False:
                p = self.create_parameter(shape, None, is_bias=is_bias,
                                          default_initializer=I.Constant(0.0 if is_bias else 1.0))
                p.stop_gradient = True
            else:
                p = self.create_parameter(shape, attr, is_bias=is_bias, default_initializer=I.Uniform(-std, std))
            setattr(self, name, p)
        self.input_size, self.hidden_size = input_size, hidden_size

    def _gates(self, inputs, pre_h):
        if inputs.shape[-1] != self.input_size:
            raise ValueError(f"{type(self).__name__}: inputs have {inputs.shape[-1]} features in the last axis but "
                             f"input_size is {self.input_size}")
        x = M.add(M.matmul(inputs, self.weight_ih, transpose_y=True), self.bias_ih)
        h = M.add(M.matmul(pre_h, self.weight_hh, transpose_y=True), self.bias_hh)
        return x, h

    def extra_repr(self):
        return f"{self.input_size}, {self.hidden_size}"


class SimpleRNNCell(RNNCellBase):
    """h = act(x W_ih^T + b_ih + h_prev W_hh^T + b_hh), act is 'tanh' or 'relu'."""

    def __init__(self, input_size, hidden_size, activation="tanh", weight_ih_attr=None, weight_hh_attr=None,
                 bias_ih_attr=None, bias_hh_attr=None, name=None):
        super().__init__()
        if activation not in ("tanh", "relu"):
            raise ValueError(f"SimpleRNNCell: activation must be 'tanh' or 'relu', got '{activation}'")
        self._create_weights(1, input_size, hidden_size, hidden_size, weight_ih_attr, weight_hh_attr,
                             bias_ih_attr, bias_hh_attr)
        self.activation = activation

    def forward(self, inputs, states=None):
        if states is None:
            states = self.get_initial_states(inputs, self.state_shape)
        x, h = self._gates(inputs, states)
        out = M.add(x, h)
        out = F.tanh(out) if self.activation == "tanh" else F.relu(out)
        return out, out

    @property
    def state_shape(self):
        return (self.hidden_size,)

    def extra_repr(self):
        act = "" if self.activation == "tanh" else f", activation={self.activation}"
        return f"{self.input_size}, {self.hidden_size}{act}"


class LSTMCell(RNNCellBase):
    """gates = x W_ih^T + b_ih + h W_hh^T + b_hh split as i, f, g, o;
    c = sigmoid(f) c_prev + sigmoid(i) tanh(g); h = sigmoid(o) tanh(c),
    then h = h @ weight_ho ([hidden, proj_size]) when proj_size > 0.
    States and the returned new states are (h, c)."""

    def __init__(self, input_size, hidden_size, weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None,
                 bias_hh_attr=None, proj_size=0, name=None):
        super().__init__()
        if proj_size < 0 or (proj_size and proj_size >= hidden_size):
            raise ValueError(f"LSTMCell: proj_size must be 0 or in [1, hidden_size {hidden_size}), got {proj_size}")
        self._create_weights(4, input_size, hidden_size, proj_size or hidden_size, weight_ih_attr, weight_hh_attr,
                             bias_ih_attr, bias_hh_attr)
        self.proj_size = proj_size
        if proj_size:
            std = 1.0 / math.sqrt(hidden_size)
            self.weight_ho = self.create_parameter([hidden_size, proj_size], weight_hh_attr or None,
                                                   default_initializer=I.Uniform(-std, std))

    def forward(self, inputs, states=None):
        if states is None:
            states = self.get_initial_states(inputs, self.state_shape)
        pre_h, pre_c = states
        x, h = self._gates(inputs, pre_h)
        i, f, g, o = M.split(M.add(x, h), 4, axis=-1)
        c = M.add(M.multiply(F.sigmoid(f), pre_c), M.multiply(F.sigmoid(i), F.tanh(g)))
        h = M.multiply(F.sigmoid(o), F.tanh(c))
        if self.proj_size:
            h = M.matmul(h, self.weight_ho)
        return h, (h, c)

    @property
    def state_shape(self):
        return ((self.proj_size or self.hidden_size,), (self.hidden_size,))


class GRUCell(RNNCellBase):
    """x and h gates split as r, z, c: r = sigmoid(x_r + h_r),
    z = sigmoid(x_z + h_z), c = tanh(x_c + r * h_c), h = (h_prev - c) * z + c."""

    def __init__(self, input_size, hidden_size, weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None,
                 bias_hh_attr=None, name=None):
        super().__init__()
        self._create_weights(3, input_size, hidden_size, hidden_size, weight_ih_attr, weight_hh_attr,
                             bias_ih_attr, bias_hh_attr)

    def forward(self, inputs, states=None):
        if states is None:
            states = self.get_initial_states(inputs, self.state_shape)
        x, h = self._gates(inputs, states)
        x_r, x_z, x_c = M.split(x, 3, axis=-1)
        h_r, h_z, h_c = M.split(h, 3, axis=-1)
        r = F.sigmoid(M.add(x_r, h_r))
        z = F.sigmoid(M.add(x_z, h_z))
        c = F.tanh(M.add(x_c, M.multiply(r, h_c)))
        out = M.add(M.multiply(M.subtract(states, c), z), c)
        return out, out

    @property
    def state_shape(self):
        return (self.hidden_size,)


def _step_masks(sequence_length, steps, dtype, batch):
    """[batch, 1] masks, one per step: 1 where step < sequence_length."""
    if not isinstance(sequence_length, Tensor):
        sequence_length = to_tensor(sequence_length)
    if list(sequence_length.shape) != [batch]:
        raise ValueError(f"RNN: sequence_length must have shape [batch] = [{batch}], got "
                         f"{list(sequence_length.shape)}")
    lengths = M.cast(sequence_length, "int64")
    mask = M.less_than(M.unsqueeze(arange(0, steps, dtype="int64"), 0), M.unsqueeze(lengths, 1))
    return [M.unsqueeze(m, -1) for m in M.unbind(M.cast(mask, dtype), 1)]


def _check_inputs(inputs, what):
    if not isinstance(inputs, Tensor):
        raise TypeError(f"{what}: inputs must be a Tensor, got {type(inputs).__name__}")
    if len(inputs.shape) != 3:
        raise ValueError(f"{what}: inputs must be 3-D ([batch, time, size] or [time, batch, size]), "
                         f"got shape {list(inputs.shape)}")


def _run_cell(cell, inputs, initial_states, sequence_length, time_major, is_reverse, **kwargs):
    """Unrolls cell over the time axis. With sequence_length, a step past a
    sequence's length keeps its previous state (its output is still computed)."""
    _check_inputs(inputs, type(cell).__name__)
    time_axis = 0 if time_major else 1
    if initial_states is None:
        initial_states = cell.get_initial_states(inputs, batch_dim_idx=1 - time_axis)
    steps = M.unbind(inputs, time_axis)
    batch = inputs.shape[1 - time_axis]
    masks = None if sequence_length is None else _step_masks(sequence_length, len(steps), inputs.dtype, batch)
    order = range(len(steps) - 1, -1, -1) if is_reverse else range(len(steps))
    states, outputs = initial_states, [None] * len(steps)
    for t in order:
        out, new_states = cell(steps[t], states, **kwargs)
        if masks is not None:
            m = masks[t]
            new_states = _map(lambda old, new: M.add(M.multiply(new, m), M.multiply(old, M.subtract(1.0, m))),
                              states, new_states)
        states, outputs[t] = new_states, out
    return M.stack(outputs, axis=time_axis), states


class RNN(Layer):
    """Runs a cell over every step of a sequence; forward returns
    (outputs [batch, time, out] (time-major: [time, batch, out]), final_states)."""

    def __init__(self, cell, is_reverse=False, time_major=False):
        super().__init__()
        self.cell, self.is_reverse, self.time_major = cell, is_reverse, time_major

    def forward(self, inputs, initial_states=None, sequence_length=None, **kwargs):
        return _run_cell(self.cell, inputs, initial_states, sequence_length, self.time_major, self.is_reverse,
                         **kwargs)


class BiRNN(Layer):
    """A forward and a reversed cell over the same sequence; outputs are
    concatenated on the last axis, final states are (states_fw, states_bw)."""

    def __init__(self, cell_fw, cell_bw, time_major=False):
        super().__init__()
        if cell_fw.input_size != cell_bw.input_size:
            raise ValueError(f"BiRNN: the forward cell's input size {cell_fw.input_size} differs from the "
                             f"backward cell's {cell_bw.input_size}")
        self.cell_fw, self.cell_bw, self.time_major = cell_fw, cell_bw, time_major

    def forward(self, inputs, initial_states=None, sequence_length=None, **kwargs):
        if initial_states is None:
            initial_states = (None, None)
        elif not isinstance(initial_states, (list, tuple)) or len(initial_states) != 2:
            raise ValueError("BiRNN: initial_states must be a pair (states_fw, states_bw)")
        out_fw, st_fw = _run_cell(self.cell_fw, inputs, initial_states[0], sequence_length, self.time_major, False,
                                  **kwargs)
        out_bw, st_bw = _run_cell(self.cell_bw, inputs, initial_states[1], sequence_length, self.time_major, True,
                                  **kwargs)
        return M.concat([out_fw, out_bw], -1), (st_fw, st_bw)


_CELLS = {"LSTM": LSTMCell, "GRU": GRUCell, "RNN_TANH": SimpleRNNCell, "RNN_RELU": SimpleRNNCell}


class RNNBase(LayerList):
    """Stacked (optionally bidirectional) RNN. States are [num_layers *
    num_directions, batch, hidden] (an (h, c) pair for LSTM); outputs at steps
    past sequence_length are zero, as in Paddle's fused kernel."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, direction="forward", time_major=False,
                 dropout=0.0, weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None, bias_hh_attr=None,
                 proj_size=0):
        super().__init__()
        name = type(self).__name__
        if direction not in ("forward", "bidirect", "bidirectional"):
            raise ValueError(f"{name}: direction must be 'forward', 'bidirect' or 'bidirectional', "
                             f"got '{direction}'")
        if int(num_layers) < 1:
            raise ValueError(f"{name}: num_layers must be at least 1, got {num_layers}")
        if not 0.0 <= float(dropout) < 1.0:
            raise ValueError(f"{name}: dropout must be in [0, 1), got {dropout}")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.dropout, self.time_major = int(num_layers), dropout, time_major
        self.num_directions = 1 if direction == "forward" else 2
        self.state_components = 2 if mode == "LSTM" else 1
        self.proj_size = proj_size
        kwargs = dict(weight_ih_attr=weight_ih_attr, weight_hh_attr=weight_hh_attr, bias_ih_attr=bias_ih_attr,
                      bias_hh_attr=bias_hh_attr)
        if mode == "LSTM":
            kwargs["proj_size"] = proj_size
        elif mode.startswith("RNN_"):
            kwargs["activation"] = mode[4:].lower()
        cell_cls = _CELLS[mode]
        layer_out = (proj_size or hidden_size) * self.num_directions
        for layer in range(self.num_layers):
            size = input_size if layer == 0 else layer_out
            if self.num_directions == 1:
                self.append(RNN(cell_cls(size, hidden_size, **kwargs), False, time_major))
            else:
                self.append(BiRNN(cell_cls(size, hidden_size, **kwargs), cell_cls(size, hidden_size, **kwargs),
                                  time_major))
        for layer, rnn in enumerate(self):
            cells = [rnn.cell] if self.num_directions == 1 else [rnn.cell_fw, rnn.cell_bw]
            for cell, suffix in zip(cells, ("", "_reverse")):
                for pname, p in cell._parameters.items():
                    setattr(self, f"{pname}_l{layer}{suffix}", p)

    def flatten_parameters(self):
        """Kept for Paddle compatibility: the parameters are separate tensors, nothing to do."""

    def _zero_states(self, inputs):
        batch = inputs.shape[1 if self.time_major else 0]
        lead = [self.num_layers * self.num_directions, batch]
        sizes = [self.proj_size or self.hidden_size, self.hidden_size][:self.state_components]
        return tuple(full(lead + [s], 0.0, inputs.dtype) for s in sizes)

    def _split_states(self, initial_states, batch):
        name = type(self).__name__
        if self.state_components == 1:
            if isinstance(initial_states, (list, tuple)):
                initial_states = initial_states[0] if len(initial_states) == 1 else M.stack(list(initial_states))
            components = (initial_states,)
        else:
            if not isinstance(initial_states, (list, tuple)) or len(initial_states) != 2:
                raise ValueError(f"{name}: initial_states must be a pair (h, c)")
            components = tuple(initial_states)
        expected = [self.num_layers * self.num_directions, batch]
        sizes = [self.proj_size or self.hidden_size, self.hidden_size]
        for t, size in zip(components, sizes):
            if list(t.shape) != expected + [size]:
                raise ValueError(f"{name}: each initial state must be [num_layers * num_directions, batch, size] = "
                                 f"{expected + [size]}, got shape {list(t.shape)}")
        per_cell = list(zip(*[M.unbind(t, 0) for t in components]))
        per_cell = [c if self.state_components == 2 else c[0] for c in per_cell]
        if self.num_directions == 2:
            return [(per_cell[2 * i], per_cell[2 * i + 1]) for i in range(self.num_layers)]
        return per_cell

    def forward(self, inputs, initial_states=None, sequence_length=None):
        _check_inputs(inputs, type(self).__name__)
        batch = inputs.shape[1 if self.time_major else 0]
        states = self._split_states(self._zero_states(inputs) if initial_states is None else initial_states, batch)
        mask = None
        if sequence_length is not None:
            steps = inputs.shape[0 if self.time_major else 1]
            mask = M.stack(_step_masks(sequence_length, steps, inputs.dtype, batch), axis=0 if self.time_major else 1)
        finals = []
        for i, rnn in enumerate(self):
            if i > 0 and self.dropout:
                inputs = F.dropout(inputs, self.dropout, training=self.training)
            inputs, final = rnn(inputs, states[i], sequence_length)
            if mask is not None:
                inputs = M.multiply(inputs, mask)
            finals.extend(final if self.num_directions == 2 else [final])
        if self.state_components == 1:
            return inputs, M.stack(finals)
        return inputs, tuple(M.stack([f[k] for f in finals]) for k in range(2))

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.time_major:
            s += f", time_major={self.time_major}"
        if self.dropout:
            s += f", dropout={self.dropout}"
        return s


class SimpleRNN(RNNBase):
    def __init__(self, input_size, hidden_size, num_layers=1, direction="forward", time_major=False, dropout=0.0,
                 activation="tanh", weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None, bias_hh_attr=None,
                 name=None):
        if activation not in ("tanh", "relu"):
            raise ValueError(f"SimpleRNN: activation must be 'tanh' or 'relu', got '{activation}'")
        super().__init__("RNN_" + activation.upper(), input_size, hidden_size, num_layers, direction, time_major,
                         dropout, weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr)
        self.activation = activation


class LSTM(RNNBase):
    def __init__(self, input_size, hidden_size, num_layers=1, direction="forward", time_major=False, dropout=0.0,
                 weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None, bias_hh_attr=None, proj_size=0,
                 name=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, direction, time_major, dropout,
                         weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr, proj_size)


class GRU(RNNBase):
    def __init__(self, input_size, hidden_size, num_layers=1, direction="forward", time_major=False, dropout=0.0,
                 weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None, bias_hh_attr=None, name=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, direction, time_major, dropout,
                         weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr)


__all__ = ["RNNCellBase", "SimpleRNNCell", "LSTMCell", "GRUCell", "RNN", "BiRNN", "SimpleRNN", "LSTM", "GRU"]
