"""A tiny GPT for the strategy tests (issue 14): 2 pre-LN blocks, 4 heads,
width 128, vocab 256, learned position embedding, GELU MLP, causal attention
written in plain ops (matmul, softmax, an additive mask) so every op runs
through its SPMD rule; `sdpa=True` uses scaled_dot_product_attention instead.

The model is built from nn.Linear / nn.LayerNorm / nn.Embedding, so a
strategy places it with dist.shard_layer and a shard_fn over those sublayers'
names (blocks.0.attn.q_proj, blocks.1.mlp.fc2, ...). Activations pass through
`model.place(name, x)` at the points a sequence-parallel strategy reshards
(Megatron SP): "embed" (the block input), "attn_in" / "mlp_in" (after each
layer_norm, before the column-parallel matmuls), "attn_out" / "mlp_out"
(after the row-parallel matmuls, before the residual add and dropout) and
"head_in" (before the final layer_norm). `model.placements` maps a name to
(mesh, placements); names not in it are left alone, so a dense model and
every other strategy ignore the hooks.

Weights come from numpy with a seed (not the framework's generator), so every
rank and the single process start from the same values whatever ran before.
"""
import math

import numpy as np

import oar
import oar.nn as nn
import oar.nn.functional as F

_ops = oar._C.ops


class GPTConfig:
    def __init__(self, vocab=256, width=128, layers=2, heads=4, seq=16, dropout=0.0, sdpa=False):
        if width % heads:
            raise ValueError(f"GPTConfig: width {width} is not divisible by heads {heads}")
        self.vocab, self.width, self.layers, self.heads = vocab, width, layers, heads
        self.seq, self.dropout, self.sdpa = seq, dropout, sdpa


class Attention(nn.Layer):
    def __init__(self, cfg, owner):
        super().__init__()
        d = cfg.width
        self.cfg = cfg
        self.q_proj = nn.Linear(d, d)
        self.k_proj = nn.Linear(d, d)
        self.v_proj = nn.Linear(d, d)
        self.proj = nn.Linear(d, d)
        object.__setattr__(self, "_owner", owner)  # the GPT, for place(); not a sublayer

    def _heads(self, x):  # [b, s, d] -> [b, s, h, hd]
        b, s = x.shape[0], x.shape[1]
        return _ops.reshape(x, [b, s, self.cfg.heads, self.cfg.width // self.cfg.heads])

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self._heads(self.q_proj(x)), self._heads(self.k_proj(x)), self._heads(self.v_proj(x))
        if self.cfg.sdpa:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # [b, s, h, hd]
        else:
            q, k, v = (_ops.transpose(t, [0, 2, 1, 3]) for t in (q, k, v))  # [b, h, s, hd]
            scores = _ops.matmul(q, k, False, True)
            scores = _ops.multiply_scalar(scores, 1.0 / math.sqrt(d // self.cfg.heads))
            scores = _ops.add(scores, self._owner.causal_bias(s))
            weights = _ops.softmax(scores, -1)
            out = _ops.transpose(_ops.matmul(weights, v, False, False), [0, 2, 1, 3])  # [b, s, h, hd]
        return self.proj(_ops.reshape(out, [b, s, d]))


class MLP(nn.Layer):
    def __init__(self, cfg):
        super().__init__()
        self.fc1 = nn.Linear(cfg.width, 4 * cfg.width)
        self.fc2 = nn.Linear(4 * cfg.width, cfg.width)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class Block(nn.Layer):
    def __init__(self, cfg, owner):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.width)
        self.attn = Attention(cfg, owner)
        self.ln2 = nn.LayerNorm(cfg.width)
        self.mlp = MLP(cfg)
        self.drop = nn.Dropout(cfg.dropout)
        object.__setattr__(self, "_owner", owner)

    def forward(self, x):
        place = self._owner.place
        h = place("attn_out", self.attn(place("attn_in", self.ln1(x))))
        x = _ops.add(x, self.drop(h))
        h = place("mlp_out", self.mlp(place("mlp_in", self.ln2(x))))
        return _ops.add(x, self.drop(h))


class TinyGPT(nn.Layer):
    def __init__(self, cfg=None, seed=0):
        super().__init__()
        cfg = cfg or GPTConfig()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab, cfg.width)
        self.wpe = nn.Embedding(cfg.seq, cfg.width)
        self.blocks = nn.LayerList([Block(cfg, self) for _ in range(cfg.layers)])
        self.ln_f = nn.LayerNorm(cfg.width)
        self.head = nn.Linear(cfg.width, cfg.vocab)
        self.drop = nn.Dropout(cfg.dropout)
        object.__setattr__(self, "placements", {})
        object.__setattr__(self, "_bias_cache", {})
        self._init_weights(seed)

    def _init_weights(self, seed):
        """GPT-2's scheme from numpy: N(0, 0.02) weights, zero biases, unit LN gains."""
        rng = np.random.RandomState(seed)
        for name, p in self.named_parameters():
            if name.endswith("ln1.weight") or name.endswith("ln2.weight") or name == "ln_f.weight":
                value = np.ones(p.shape, np.float32)
            elif name.endswith("bias"):
                value = np.zeros(p.shape, np.float32)
            else:
                value = (0.02 * rng.standard_normal(p.shape)).astype(np.float32)
            p.set_value(value)

    def place(self, name, x):
        where = self.placements.get(name)
        if where is None:
            return x
        import oar.distributed as dist
        return dist.reshard(x, where[0], where[1])

    def causal_bias(self, s):
        """[s, s]: 0 on and below the diagonal, -1e9 above (a dense constant)."""
        if s not in self._bias_cache:
            mask = np.triu(np.full((s, s), -1e9, np.float32), 1)
            self._bias_cache[s] = oar.to_tensor(mask)
        return self._bias_cache[s]

    def forward(self, tokens):
        s = tokens.shape[1]
        pos = oar.to_tensor(np.arange(s, dtype=np.int64))
        x = _ops.add(self.wte(tokens), self.wpe(pos))
        x = self.place("embed", self.drop(x))
        for block in self.blocks:
            x = block(x)
        x = self.place("head_in", x)
        return self.head(self.ln_f(x))


def loss_fn(logits, labels):
    """Mean next-token cross entropy over [b, s, vocab] logits and [b, s] labels."""
    return F.cross_entropy(logits, labels)


def batches(steps, batch=4, cfg=None, seed=1):
    """`steps` (tokens, labels) int64 numpy pairs of [batch, seq] from a
    fixed bigram chain over 32 of the vocab's tokens: the next token is
    succ[token] with probability 0.9, else a random one of the 32. A model
    learns the 32 first (loss ln 256 -> ln 32), then the chain."""
    cfg = cfg or GPTConfig()
    table = np.random.RandomState(1234)
    tokens = table.choice(cfg.vocab, 32, replace=False)
    succ = dict(zip(tokens, table.permutation(tokens)))
    rng = np.random.RandomState(seed)
    out = []
    for _ in range(steps):
        seq = np.empty((batch, cfg.seq + 1), np.int64)
        seq[:, 0] = rng.choice(tokens, batch)
        for t in range(1, cfg.seq + 1):
            jump = rng.rand(batch) < 0.1
            seq[:, t] = np.where(jump, rng.choice(tokens, batch), [succ[v] for v in seq[:, t - 1]])
        out.append((seq[:, :-1].copy(), seq[:, 1:].copy()))
    return out


def loss_value(loss):
    """A Python float of a dense or distributed scalar loss (or of the
    numpy value a DistModel returns)."""
    if isinstance(loss, np.ndarray):
        return float(loss)
    if loss.is_dist():
        import oar.distributed as dist
        loss = dist.unshard_dtensor(loss)
    return float(loss.numpy())


def make_optimizer(model, lr=3e-3):
    return oar.optimizer.AdamW(learning_rate=lr, parameters=model.parameters(), weight_decay=0.01)


def train(model, optimizer, data, place_batch=None, seed=2):
    """Runs one AdamW step per (tokens, labels) numpy pair; place_batch(t)
    turns each dense batch tensor into what the strategy feeds (e.g. a
    Shard(0) distributed tensor). Returns the loss curve (floats)."""
    oar.seed(seed)  # dropout draws from the global generator: the same stream on every rank
    model.train()
    curve = []
    for tokens, labels in data:
        x, y = oar.to_tensor(tokens), oar.to_tensor(labels)
        if place_batch is not None:
            x, y = place_batch(x), place_batch(y)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
        curve.append(loss_value(loss))
    return curve


def single_process_curve(steps=5, cfg=None, batch=4, lr=3e-3):
    cfg = cfg or GPTConfig()
    model = TinyGPT(cfg)
    return train(model, make_optimizer(model, lr), batches(steps, batch, cfg))


# ------------------------------------------------------------- strategies
STRATEGIES = ("dp", "tp", "sp", "stage1", "stage2", "stage3", "dp_tp")
COLUMN = ("q_proj", "k_proj", "v_proj", "fc1")  # Megatron: weight Shard(1), bias Shard(0)
ROW = ("proj", "fc2")  # weight Shard(0) (the matmul's output is Partial), bias Replicate


def world_of(strategy):
    return 4 if strategy == "dp_tp" else 2


def tp_shard_fn(mp_axis):
    """shard_layer's shard_fn for Megatron tensor parallel along mesh dim
    `mp_axis`: placements only, the SPMD rules insert the communication."""
    import oar.distributed as dist

    def placed(mesh, dim):
        pl = [dist.Replicate() for _ in range(mesh.ndim)]
        pl[mp_axis] = dist.Shard(dim)
        return pl

    def shard_fn(name, layer, mesh):
        leaf = name.rsplit(".", 1)[-1]
        if leaf in COLUMN:
            layer.weight = dist.shard_tensor(layer.weight, mesh, placed(mesh, 1))
            layer.bias = dist.shard_tensor(layer.bias, mesh, placed(mesh, 0))
        elif leaf in ROW:
            layer.weight = dist.shard_tensor(layer.weight, mesh, placed(mesh, 0))
    return shard_fn


def setup_strategy(model, strategy, lr=3e-3, sharding=None):
    """Places `model` for `strategy` (one of STRATEGIES) on this rank's mesh,
    with the optimizer sharded along "dp" by `sharding` ("stage1".."stage3")
    if given; returns (optimizer, place_batch) for train()."""
    import oar.distributed as dist
    if strategy == "dp_tp":
        mesh = dist.ProcessMesh([[0, 1], [2, 3]], dim_names=["dp", "mp"])
    else:
        mesh = dist.ProcessMesh([0, 1], dim_names=["mp" if strategy in ("tp", "sp") else "dp"])
    if strategy in ("tp", "sp"):
        dist.shard_layer(model, mesh, tp_shard_fn(0))
    elif strategy == "dp_tp":
        dist.shard_layer(model, mesh, tp_shard_fn(1))
    else:
        dist.shard_layer(model, mesh)
    if strategy == "sp":
        # Megatron sequence parallel: the residual stream (and layer_norm,
        # dropout on it) is Shard(1) along the sequence; gathered before the
        # column-parallel matmuls, reduce-scattered after the row-parallel ones.
        seq, rep = [dist.Shard(1)], [dist.Replicate()]
        model.placements.update({"embed": (mesh, seq), "attn_in": (mesh, rep), "attn_out": (mesh, seq),
                                 "mlp_in": (mesh, rep), "mlp_out": (mesh, seq), "head_in": (mesh, rep)})
    opt = make_optimizer(model, lr)
    if sharding or strategy.startswith("stage"):
        stage = {"stage1": dist.ShardingStage1, "stage2": dist.ShardingStage2,
                 "stage3": dist.ShardingStage3}[sharding or strategy]
        opt = dist.shard_optimizer(opt, stage("dp", mesh), layers=model)
    if strategy in ("tp", "sp"):
        batch_placements = [dist.Replicate()]
    elif strategy == "dp_tp":
        batch_placements = [dist.Shard(0), dist.Replicate()]
    else:
        batch_placements = [dist.Shard(0)]
    return opt, lambda t: dist.shard_tensor(t, mesh, batch_placements)


def strategy_curve(strategy, steps=5, cfg=None, batch=4, lr=3e-3, sharding=None, static=False):
    """This rank's loss curve of `strategy` (run on every rank of its mesh),
    eager or through dist.to_static (one program per rank)."""
    cfg = cfg or GPTConfig()
    model = TinyGPT(cfg)
    opt, place_batch = setup_strategy(model, strategy, lr, sharding)
    if static:
        return train_static(model, opt, batches(steps, batch, cfg), place_batch)
    return train(model, opt, batches(steps, batch, cfg), place_batch)


def train_static(model, optimizer, data, place_batch, seed=2):
    """train() through dist.to_static: the DistModel runs forward, backward
    and the optimizer step per call and returns the loss."""
    import oar.distributed as dist
    oar.seed(seed)
    dist_model = dist.to_static(model, None, loss_fn, optimizer)
    dist_model.train()
    return [loss_value(dist_model(place_batch(oar.to_tensor(t)), place_batch(oar.to_tensor(y)))) for t, y in data]


if __name__ == "__main__":
    print(single_process_curve(20))
