"""The rest of the zoo: MLPs, Python control flow on tensors, containers of
layers, graph networks, mixture of experts, scientific models (PINN, FNO)."""
import numpy as np

import oar as paddle
import oar.nn as nn
import oar.nn.functional as F

from . import floats, ints, register


def features(batch=2, width=8, seed=20, scale=1.0):
    return lambda: (floats(batch, width, seed=seed, scale=scale),)


# ---- MLPs --------------------------------------------------------------------

class MLP(nn.Layer):
    def __init__(self, in_features=8, hidden=(16, 16), out_features=4):
        super().__init__()
        sizes = [in_features, *hidden]
        layers = []
        for a, b in zip(sizes[:-1], sizes[1:]):
            layers += [nn.Linear(a, b), nn.ReLU()]
        layers.append(nn.Linear(sizes[-1], out_features))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


register("mlp", features())(lambda: MLP())


class ResidualBlock(nn.Layer):
    def __init__(self, dim, dropout=0.5):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, dim * 2)
        self.fc2 = nn.Linear(dim * 2, dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return x + self.dropout(self.fc2(F.gelu(self.fc1(self.norm(x)))))


class ResidualMLP(nn.Layer):
    def __init__(self, dim=16, depth=3, num_classes=4):
        super().__init__()
        self.stem = nn.Linear(8, dim)
        self.blocks = nn.Sequential(*[ResidualBlock(dim) for _ in range(depth)])
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)))


@register("residual_mlp_dropout_eval", features(), notes="Dropout(0.5) in eval mode")
def _residual_mlp():
    model = ResidualMLP()
    model.eval()
    return model


class Highway(nn.Layer):
    def __init__(self, size, num_layers=2, f=F.relu):
        super().__init__()
        self.num_layers = num_layers
        self.nonlinear = nn.LayerList([nn.Linear(size, size) for _ in range(num_layers)])
        self.linear = nn.LayerList([nn.Linear(size, size) for _ in range(num_layers)])
        self.gate = nn.LayerList([nn.Linear(size, size) for _ in range(num_layers)])
        self.f = f

    def forward(self, x):
        for layer in range(self.num_layers):
            gate = F.sigmoid(self.gate[layer](x))
            nonlinear = self.f(self.nonlinear[layer](x))
            linear = self.linear[layer](x)
            x = gate * nonlinear + (1 - gate) * linear
        return x


register("highway", features())(lambda: Highway(8))


class AutoEncoder(nn.Layer):
    def __init__(self, dim=16, code=4):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(dim, 8), nn.ReLU(), nn.Linear(8, code))
        self.decoder = nn.Sequential(nn.Linear(code, 8), nn.ReLU(), nn.Linear(8, dim))

    def forward(self, x):
        code = self.encoder(x)
        return self.decoder(code), code


register("mlp_autoencoder", features(width=16))(lambda: AutoEncoder())


# ---- `if self.training` ------------------------------------------------------

class TrainingSwitch(nn.Layer):
    """Returns the loss when training and the probabilities otherwise."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)

    def forward(self, x, label):
        logits = self.fc(x)
        if self.training:
            return F.cross_entropy(logits, label)
        else:
            return F.softmax(logits, axis=-1)


register("if_self_training", lambda: (floats(2, 8, seed=21), ints(0, 3, 2, seed=21)),
         notes="train mode: the loss branch")(lambda: TrainingSwitch())


@register("if_self_training_eval", lambda: (floats(2, 8, seed=21), ints(0, 3, 2, seed=21)),
          notes="eval mode: the softmax branch")
def _training_switch_eval():
    model = TrainingSwitch()
    model.eval()
    return model


# ---- containers of layers ----------------------------------------------------

class LayerListNet(nn.Layer):
    def __init__(self):
        super().__init__()
        self.linears = nn.LayerList([nn.Linear(8, 8) for _ in range(3)])
        self.norms = nn.LayerList([nn.LayerNorm(8) for _ in range(3)])

    def forward(self, x):
        for i, (linear, norm) in enumerate(zip(self.linears, self.norms)):
            x = norm(linear(x))
            if i < len(self.linears) - 1:
                x = F.relu(x)
        return x + self.linears[-1](x) * 0.5


register("layer_list", features())(lambda: LayerListNet())


class LayerDictNet(nn.Layer):
    def __init__(self):
        super().__init__()
        self.heads = nn.LayerDict({"cls": nn.Linear(8, 3), "reg": nn.Linear(8, 1), "emb": nn.Linear(8, 4)})
        self.trunk = nn.Linear(8, 8)

    def forward(self, x):
        h = F.relu(self.trunk(x))
        outs = []
        for name in ["cls", "reg"]:
            outs.append(self.heads[name](h))
        for name, head in self.heads.items():
            if name == "emb":
                outs.append(F.normalize(head(h), axis=-1))
        return paddle.concat(outs, axis=-1)


register("layer_dict", features())(lambda: LayerDictNet())


class PlainListNet(nn.Layer):
    """Layers kept in a plain Python list (registered by add_sublayer)."""

    def __init__(self):
        super().__init__()
        self.blocks = []
        for i in range(3):
            block = self.add_sublayer(f"block_{i}", nn.Linear(8, 8))
            self.blocks.append(block)
        self.acts = [nn.Tanh(), nn.ReLU(), nn.Sigmoid()]

    def forward(self, x):
        for block, act in zip(self.blocks, self.acts):
            x = act(block(x))
        return x


register("python_list_of_layers", features())(lambda: PlainListNet())


# ---- Python control flow on tensor values ------------------------------------

class EarlyExit(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 8)
        self.fc2 = nn.Linear(8, 8)

    def forward(self, x):
        h = self.fc1(x)
        if h.mean() > 0:
            return F.relu(h)
        h = self.fc2(F.tanh(h))
        return h * 2


register("early_exit_positive", features(seed=22, scale=3.0))(lambda: EarlyExit())
register("early_exit_negative", features(seed=23, scale=3.0),
         notes="the same model; this input takes the other branch")(lambda: EarlyExit())


class PrintsTensor(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        y = self.fc(x)
        print("logits:", y)
        print("mean", y.mean(), "shape", y.shape)
        return y


register("print_tensor", features())(lambda: PrintsTensor())


class NumpyInTheMiddle(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 8)
        self.fc2 = nn.Linear(8, 4)

    def forward(self, x):
        h = self.fc1(x)
        mask = h.numpy() > 0
        h = h * paddle.to_tensor(mask.astype("float32"))
        return self.fc2(h)


register("numpy_in_forward", features(),
         notes="x.numpy() then paddle.to_tensor: cannot be one program; a graph break")(lambda: NumpyInTheMiddle())


class FloatOfTensor(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        h = self.fc(x)
        scale = float(h.abs().max())
        if scale > 1.0:
            h = h / scale
        return h


register("float_of_tensor", features(scale=3.0), notes="float(t) read as a Python number")(
    lambda: FloatOfTensor())


class LoopOverBatch(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        rows = []
        for i in range(x.shape[0]):
            rows.append(self.fc(x[i]) * (i + 1))
        return paddle.stack(rows)


register("for_range_shape", features(batch=3))(lambda: LoopOverBatch())


class TensorBoundedLoop(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x, n):
        h = x
        for i in range(n):
            h = paddle.tanh(self.fc(h)) + x
        return h


register("for_range_tensor", lambda: (floats(2, 8, seed=24), paddle.to_tensor(3, dtype="int64")))(
    lambda: TensorBoundedLoop())


class TensorLoopAppend(nn.Layer):
    """Collects a list in a loop bounded by a tensor (a tensor array)."""

    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(8, 8)

    def forward(self, x, steps):
        h = paddle.zeros([x.shape[0], 8])
        outputs = []
        for _ in range(steps):
            _, h = self.cell(x, h)
            outputs.append(h)
        return paddle.stack(outputs, axis=1)


register("tensor_loop_list_append", lambda: (floats(2, 8, seed=25), paddle.to_tensor(3, dtype="int64")),
         notes="outputs.append in a tensor-bounded for loop")(lambda: TensorLoopAppend())


class AndOr(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        h = self.fc(x)
        if (h.mean() > 0 and h.max() < 10) or h.min() > 5:
            h = h * 2
        elif not (h.sum() < 0):
            h = h + 1
        return h


register("and_or_on_tensors", features())(lambda: AndOr())


class ElifChain(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        h = self.fc(x)
        s = h.sum()
        if s > 4:
            out = h * 3
        elif s > 0:
            out = h + 1
        elif s > -4:
            out = paddle.abs(h)
        else:
            out = -h
        return out


register("elif_chain", features(seed=26))(lambda: ElifChain())


class AssertsOnTensor(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        assert x.shape[-1] == 8, "expects 8 features"
        y = F.softmax(self.fc(x), axis=-1)
        assert paddle.all(y >= 0), "probabilities must be non-negative"
        assert (y.sum(axis=-1) - 1).abs().max() < 1e-4
        return y


register("assert_on_tensor", features())(lambda: AssertsOnTensor())


# ---- helpers, nested functions, dict outputs, keyword arguments -------------

class HelperMethods(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 8)

    def _activation(self, x, kind="gelu"):
        if kind == "gelu":
            return F.gelu(x)
        return F.relu(x)

    def _project(self, x):
        return self.fc2(self._activation(self.fc1(x)))

    def forward(self, x):
        def residual(fn, inp, scale=1.0):
            return inp + scale * fn(inp)

        gain = paddle.sigmoid(x.mean(axis=-1, keepdim=True))
        y = residual(self._project, x, scale=0.5)
        if gain.mean() > 0.5:
            y = residual(lambda t: t * gain, y)
        return y


register("helper_methods_nested_fn", features(seed=27))(lambda: HelperMethods())


class DictOutputs(nn.Layer):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Linear(8, 16)
        self.cls_head = nn.Linear(16, 3)
        self.box_head = nn.Linear(16, 4)

    def forward(self, x):
        feat = F.relu(self.backbone(x))
        return {"logits": self.cls_head(feat), "boxes": F.sigmoid(self.box_head(feat)), "features": feat}


register("dict_outputs", features(), notes="forward returns a dict of tensors")(lambda: DictOutputs())


class OptionalLoss(nn.Layer):
    """Returns (loss, logits), loss None when no labels are given (Hugging Face style)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)

    def forward(self, x, labels=None):
        logits = self.fc(x)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits, labels)
        return loss, logits


register("optional_none_output", features(), notes="returns (None, logits)")(lambda: OptionalLoss())


class ScaledLinear(nn.Layer):
    def __init__(self, in_features, out_features, use_bias=True):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, bias_attr=None if use_bias else False)

    def forward(self, x, scale=1.0, residual=None, activation=None):
        y = self.linear(x) * scale
        if residual is not None:
            y = y + residual
        if activation == "relu":
            y = F.relu(y)
        return y


class KeywordArgs(nn.Layer):
    def __init__(self):
        super().__init__()
        self.a = ScaledLinear(8, 8)
        self.b = ScaledLinear(8, 8, use_bias=False)

    def forward(self, x, mask=None, *, temperature=2.0):
        h = self.a(x, scale=0.5, activation="relu")
        h = self.b(h, residual=x, scale=1.0 / temperature)
        if mask is not None:
            h = h * mask
        return h


register("keyword_args", lambda: (floats(2, 8, seed=28), (floats(2, 8, seed=29) > 0).astype("float32")))(
    lambda: KeywordArgs())


class ReshapeByShapeTensor(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        batch = paddle.shape(x)[0]
        h = self.fc(x.reshape([batch, -1, 4]))
        return paddle.reshape(h, [batch, -1])


register("reshape_by_shape_tensor", features(), notes="paddle.shape(x)[0] in a reshape's shape list")(
    lambda: ReshapeByShapeTensor())


class MaskedSetitem(nn.Layer):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(8, 8)
        self.k = nn.Linear(8, 8)

    def forward(self, x, pad_mask):
        scores = paddle.matmul(self.q(x), self.k(x), transpose_y=True)
        scores[~pad_mask] = -1e9
        return F.softmax(scores, axis=-1)


def _setitem_inputs():
    mask = np.ones((2, 4, 4), dtype=bool)
    mask[1, :, 3] = False
    return floats(2, 4, 8, seed=30), paddle.to_tensor(mask)


register("masked_setitem", _setitem_inputs, notes="scores[~mask] = -1e9")(lambda: MaskedSetitem())


class RunningNormalizer(nn.Layer):
    """Keeps a running mean in a buffer that forward reassigns (train mode)."""

    def __init__(self, dim=8, momentum=0.9):
        super().__init__()
        self.momentum = momentum
        self.register_buffer("running_mean", paddle.zeros([dim]))
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        if self.training:
            self.running_mean = self.momentum * self.running_mean + (1 - self.momentum) * x.mean(axis=0)
        return self.fc(x - self.running_mean), self.running_mean


register("buffer_reassigned", features(seed=31))(lambda: RunningNormalizer())


class LabelSmoothing(nn.Layer):
    def __init__(self, num_classes=5, epsilon=0.1):
        super().__init__()
        self.fc = nn.Linear(8, num_classes)
        self.num_classes = num_classes
        self.epsilon = epsilon

    def forward(self, x, label):
        logits = self.fc(x)
        one_hot = F.one_hot(label, num_classes=self.num_classes)
        smooth = F.label_smooth(one_hot, epsilon=self.epsilon)
        loss = F.cross_entropy(logits, smooth, soft_label=True)
        return loss


register("label_smoothing_loss", lambda: (floats(2, 8, seed=32), ints(0, 5, 2, seed=32)))(
    lambda: LabelSmoothing())


# ---- graph networks (gather / scatter / index_add / put_along_axis) ----------

class GCNConv(nn.Layer):
    """Sum aggregation of neighbours' messages with symmetric degree normalization."""

    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.linear = nn.Linear(in_dim, out_dim)

    def forward(self, x, edge_index):
        src, dst = edge_index[0], edge_index[1]
        num_nodes = x.shape[0]
        ones = paddle.ones([edge_index.shape[1], 1], dtype=x.dtype)
        degree = paddle.index_add(paddle.ones([num_nodes, 1], dtype=x.dtype), dst, 0, ones)
        norm = paddle.rsqrt(paddle.gather(degree, src)) * paddle.rsqrt(paddle.gather(degree, dst))
        h = self.linear(x)
        messages = paddle.gather(h, src) * norm
        out = paddle.index_add(h / degree, dst, 0, messages)
        return out


class GraphSAGEMax(nn.Layer):
    """Max aggregation by put_along_axis(reduce='amax'), then scatter of the updated rows."""

    def __init__(self, dim):
        super().__init__()
        self.neigh = nn.Linear(dim, dim)
        self.self_fc = nn.Linear(dim, dim)

    def forward(self, x, edge_index):
        src, dst = edge_index[0], edge_index[1]
        messages = F.relu(self.neigh(paddle.gather(x, src)))
        index = dst.unsqueeze(-1).expand([dst.shape[0], x.shape[1]])
        pooled = paddle.put_along_axis(paddle.zeros_like(x), index, messages, axis=0, reduce="amax")
        return self.self_fc(x) + pooled


class GraphNet(nn.Layer):
    def __init__(self, in_dim=8, hidden=16, num_classes=3):
        super().__init__()
        self.conv1 = GCNConv(in_dim, hidden)
        self.conv2 = GraphSAGEMax(hidden)
        self.readout = nn.Linear(hidden, num_classes)

    def forward(self, x, edge_index, root_ids):
        h = F.relu(self.conv1(x, edge_index))
        h = self.conv2(h, edge_index)
        # overwrite the roots' rows with their own transform (paddle.scatter, overwrite=True)
        h = paddle.scatter(h, root_ids, paddle.gather(h, root_ids) * 2.0)
        graph = paddle.mean(h, axis=0, keepdim=True)
        return self.readout(h), self.readout(graph)


def _graph_inputs():
    rs = np.random.RandomState(33)
    edges = np.stack([rs.randint(0, 6, 12), rs.randint(0, 6, 12)]).astype("int64")
    return floats(6, 8, seed=33), paddle.to_tensor(edges), paddle.to_tensor(np.array([0, 3], dtype="int64"))


register("graph_net", _graph_inputs, notes="index_add, gather, put_along_axis(amax), scatter")(lambda: GraphNet())


# ---- mixture of experts with top-k routing -----------------------------------

class Expert(nn.Layer):
    def __init__(self, d_model, d_hidden):
        super().__init__()
        self.fc1 = nn.Linear(d_model, d_hidden)
        self.fc2 = nn.Linear(d_hidden, d_model)

    def forward(self, x):
        return self.fc2(F.silu(self.fc1(x)))


class MoELayer(nn.Layer):
    def __init__(self, d_model=8, d_hidden=16, num_experts=4, top_k=2):
        super().__init__()
        self.num_experts = num_experts
        self.top_k = top_k
        self.gate = nn.Linear(d_model, num_experts, bias_attr=False)
        self.experts = nn.LayerList([Expert(d_model, d_hidden) for _ in range(num_experts)])

    def forward(self, x):
        batch, seq, d_model = x.shape
        tokens = x.reshape([-1, d_model])
        logits = self.gate(tokens)
        probs = F.softmax(logits, axis=-1)
        topk_probs, topk_idx = paddle.topk(probs, k=self.top_k, axis=-1)
        topk_probs = topk_probs / topk_probs.sum(axis=-1, keepdim=True)
        # one-hot dispatch: [tokens, top_k, experts] -> a combine weight per token and expert
        dispatch = F.one_hot(topk_idx, num_classes=self.num_experts)
        combine = (dispatch * topk_probs.unsqueeze(-1)).sum(axis=1)
        out = paddle.zeros_like(tokens)
        for e, expert in enumerate(self.experts):
            out = out + combine[:, e:e + 1] * expert(tokens)
        # load-balancing auxiliary loss (Switch Transformer)
        density = dispatch.sum(axis=1).mean(axis=0)
        aux_loss = (density * probs.mean(axis=0)).sum() * self.num_experts
        return out.reshape([batch, seq, d_model]), aux_loss


register("moe_topk", lambda: (floats(2, 4, 8, seed=34),))(lambda: MoELayer())


class SparseMoE(MoELayer):
    """The same experts, each run only on the tokens routed to it (nonzero + index_select + index_add)."""

    def forward(self, x):
        batch, seq, d_model = x.shape
        tokens = x.reshape([-1, d_model])
        probs = F.softmax(self.gate(tokens), axis=-1)
        topk_probs, topk_idx = paddle.topk(probs, k=self.top_k, axis=-1)
        out = paddle.zeros_like(tokens)
        for e, expert in enumerate(self.experts):
            routed = (topk_idx == e).astype("float32")
            weight = (routed * topk_probs).sum(axis=-1)
            token_ids = paddle.nonzero(weight > 0).flatten()
            if token_ids.shape[0] == 0:
                continue
            y = expert(paddle.index_select(tokens, token_ids))
            out = paddle.index_add(out, token_ids, 0, y * paddle.gather(weight, token_ids).unsqueeze(-1))
        return out.reshape([batch, seq, d_model])


register("moe_sparse_dispatch", lambda: (floats(2, 4, 8, seed=34),),
         notes="nonzero gives a data-dependent shape")(lambda: SparseMoE())


# ---- PINN (an MLP with tanh, its Laplacian by paddle.grad) -------------------

class PINN(nn.Layer):
    def __init__(self, width=16, depth=3):
        super().__init__()
        layers = [nn.Linear(2, width), nn.Tanh()]
        for _ in range(depth - 1):
            layers += [nn.Linear(width, width), nn.Tanh()]
        layers.append(nn.Linear(width, 1))
        self.net = nn.Sequential(*layers)

    def forward(self, xy):
        u = self.net(xy)
        grads = paddle.grad(u, xy, grad_outputs=paddle.ones_like(u), create_graph=True)[0]
        u_x, u_y = grads[:, 0:1], grads[:, 1:2]
        u_xx = paddle.grad(u_x, xy, grad_outputs=paddle.ones_like(u_x), create_graph=True)[0][:, 0:1]
        u_yy = paddle.grad(u_y, xy, grad_outputs=paddle.ones_like(u_y), create_graph=True)[0][:, 1:2]
        f = -2.0 * np.pi ** 2 * paddle.sin(np.pi * xy[:, 0:1]) * paddle.sin(np.pi * xy[:, 1:2])
        residual = u_xx + u_yy - f
        return u, paddle.mean(residual ** 2)


def _collocation_points():
    xy = paddle.to_tensor(np.random.RandomState(35).uniform(0, 1, (8, 2)).astype("float32"))
    xy.stop_gradient = False
    return (xy,)


register("pinn_poisson", _collocation_points, notes="paddle.grad twice (create_graph) inside forward")(
    lambda: PINN())


# ---- FNO (paddle.fft, complex weights) ---------------------------------------

class SpectralConv1d(nn.Layer):
    def __init__(self, in_channels, out_channels, modes):
        super().__init__()
        self.modes = modes
        scale = 1.0 / (in_channels * out_channels)
        rs = np.random.RandomState(36)
        w = scale * (rs.rand(in_channels, out_channels, modes) + 1j * rs.rand(in_channels, out_channels, modes))
        self.weights = self.create_parameter([in_channels, out_channels, modes], dtype="complex64",
                                             default_initializer=nn.initializer.Assign(w.astype("complex64")))

    def forward(self, x):  # x: [batch, channels, n]
        x_ft = paddle.fft.rfft(x)
        out_low = paddle.einsum("bix,iox->box", x_ft[:, :, :self.modes], self.weights)
        out_high = paddle.zeros_like(x_ft[:, :, self.modes:])
        out_ft = paddle.concat([out_low, out_high], axis=-1)
        return paddle.fft.irfft(out_ft, n=x.shape[-1])


class FNO1d(nn.Layer):
    def __init__(self, modes=4, width=8):
        super().__init__()
        self.fc0 = nn.Linear(2, width)
        self.convs = nn.LayerList([SpectralConv1d(width, width, modes) for _ in range(2)])
        self.ws = nn.LayerList([nn.Conv1D(width, width, 1) for _ in range(2)])
        self.fc1 = nn.Linear(width, 16)
        self.fc2 = nn.Linear(16, 1)

    def forward(self, x):  # x: [batch, n, 2]
        x = self.fc0(x)
        x = x.transpose([0, 2, 1])
        for i, (conv, w) in enumerate(zip(self.convs, self.ws)):
            x = conv(x) + w(x)
            if i < len(self.convs) - 1:
                x = F.gelu(x)
        x = x.transpose([0, 2, 1])
        return self.fc2(F.gelu(self.fc1(x))).squeeze(-1)


register("fno1d", lambda: (floats(2, 16, 2, seed=37),), notes="rfft, einsum with complex64 weights, irfft")(
    lambda: FNO1d())


# ---- loops that stop on a tensor value ---------------------------------------

class IterativeRefinement(nn.Layer):
    """Applies a contraction until the update is small (a while on a tensor, trained through)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        h = x
        delta = paddle.tanh(self.fc(h)) * 0.5
        while delta.abs().max() > 0.05:
            h = h + delta
            delta = delta * 0.5
        return h


register("while_tensor_refine", features(seed=38))(lambda: IterativeRefinement())


class BreakOnTensor(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        h = x
        for i in range(10):
            h = paddle.tanh(self.fc(h)) * 0.5
            if h.abs().max() < 0.3:
                break
        return h


register("for_break_on_tensor", features(seed=39))(lambda: BreakOnTensor())


# ---- @paddle.jit.to_static on forward in the class body ----------------------

class DecoratedForward(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    @paddle.jit.to_static(input_spec=[paddle.static.InputSpec([None, 8], "float32", "x")])
    def forward(self, x):
        h = F.relu(self.fc1(x))
        if h.mean() > 0.1:
            h = h * 0.5
        return self.fc2(h)


register("to_static_decorated_forward", features(seed=46),
         notes="forward decorated in the class body, so every mode (eager too) runs the decorator's to_static")(
    lambda: DecoratedForward())


# ---- a no_grad teacher (self-distillation) -----------------------------------

class SelfDistillation(nn.Layer):
    def __init__(self, temperature=2.0):
        super().__init__()
        self.student = MLP(8, (16,), 4)
        self.teacher = MLP(8, (16,), 4)
        for p in self.teacher.parameters():
            p.stop_gradient = True
        self.temperature = temperature

    def forward(self, x):
        s = self.student(x)
        with paddle.no_grad():
            t = self.teacher(x)
        loss = F.kl_div(F.log_softmax(s / self.temperature, axis=-1), F.softmax(t / self.temperature, axis=-1),
                        reduction="batchmean")
        return s, loss


register("no_grad_teacher", features(seed=47), notes="with paddle.no_grad() around the teacher")(
    lambda: SelfDistillation())


# ---- SimCLR NT-Xent loss (boolean-mask indexing) -----------------------------

class SimCLR(nn.Layer):
    def __init__(self, temperature=0.5):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8))
        self.projector = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4))
        self.temperature = temperature

    def nt_xent(self, z1, z2):
        batch_size = z1.shape[0]
        z = F.normalize(paddle.concat([z1, z2], axis=0), axis=1)
        sim = paddle.matmul(z, z, transpose_y=True) / self.temperature
        labels = paddle.concat([paddle.arange(batch_size) + batch_size, paddle.arange(batch_size)])
        mask = paddle.eye(2 * batch_size, dtype="bool")
        sim = sim[~mask].reshape([2 * batch_size, -1])
        labels = paddle.where(labels > paddle.arange(2 * batch_size), labels - 1, labels)
        return F.cross_entropy(sim, labels)

    def forward(self, x1, x2):
        z1 = self.projector(self.encoder(x1))
        z2 = self.projector(self.encoder(x2))
        return self.nt_xent(z1, z2)


register("simclr_ntxent", lambda: (floats(4, 8, seed=48), floats(4, 8, seed=49)),
         notes="sim[~eye_mask] (boolean-mask getitem)")(lambda: SimCLR())
