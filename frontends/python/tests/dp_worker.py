"""One rank of test_data_parallel.py's multi-process cases.

    python dp_worker.py SCENARIO DEVICE OUT.npz

The rank and the store address come from the torchrun variables the test
sets. Writes the final parameters (and whatever the scenario records) to
OUT.npz; the test compares them with a single process on the whole batch.
"""
import json
import sys

import numpy as np

import oar
import oar.distributed as dist
from oar.distributed import fleet

BATCH = 8  # the whole batch; each of the 2 ranks takes half


class MLP(oar.nn.Layer):
    """6-16-16-3 with tanh; with_extra adds a branch `extra` that forward uses
    only when asked to (created last, so the others start the same)."""

    def __init__(self, with_extra=False):
        super().__init__()
        self.fc1 = oar.nn.Linear(6, 16)
        self.fc2 = oar.nn.Linear(16, 16)
        self.fc3 = oar.nn.Linear(16, 3)
        if with_extra:
            self.extra = oar.nn.Linear(16, 3)

    def forward(self, x, use_extra=False):
        h = oar.tanh(self.fc2(oar.tanh(self.fc1(x))))
        out = self.fc3(h)
        return out + self.extra(h) if use_extra else out


def make_model(seed, with_extra=False):
    oar.seed(seed)
    return MLP(with_extra)


def batch(step):
    rng = np.random.RandomState(1000 + step)
    x = rng.standard_normal((BATCH, 6)).astype(np.float32)
    y = rng.standard_normal((BATCH, 3)).astype(np.float32)
    return x, y


def loss_of(model, x, y, **kw):
    d = model(oar.to_tensor(x), **kw) - oar.to_tensor(y)
    return oar.mean(d * d)


def make_optimizer(name, params):
    if name == "adam":
        return oar.optimizer.Adam(learning_rate=0.01, parameters=params)
    return oar.optimizer.SGD(learning_rate=0.1, parameters=params)


def params_of(model):
    return {name: p.numpy() for name, p in model.state_dict().items()}


def grads_of(model):
    return {name: (p.grad.numpy() if p.grad is not None else np.full(p.shape, np.nan, np.float32))
            for name, p in model.named_parameters()}


def train(rank, optimizer_name, steps=20):
    model = dist.DataParallel(make_model(100 + rank), comm_buffer_size=0.002, last_comm_buffer_size=0.001)
    opt = make_optimizer(optimizer_name, model.parameters())
    lo, hi = rank * BATCH // 2, (rank + 1) * BATCH // 2
    for step in range(steps):
        x, y = batch(step)
        loss_of(model, x[lo:hi], y[lo:hi]).backward()
        opt.step()
        opt.clear_grad()
    return model, {"events": model.event_log, "buckets": len(model._buckets),
                   "keys": list(model.state_dict().keys())}


def no_sync(rank):
    """Micro-batch 0 under no_sync, micro-batch 1 synchronized; the grads after each."""
    model = dist.DataParallel(make_model(100 + rank), comm_buffer_size=0.002, last_comm_buffer_size=0.001)
    lo, hi = rank * BATCH // 2, (rank + 1) * BATCH // 2
    x0, y0 = batch(0)
    x1, y1 = batch(1)
    model.event_log = []
    with model.no_sync():
        loss_of(model, x0[lo:hi], y0[lo:hi]).backward()
    local = grads_of(model._layers)
    events_in_no_sync = list(model.event_log)
    loss_of(model, x1[lo:hi], y1[lo:hi]).backward()
    return model, {"events_in_no_sync": events_in_no_sync, "events": model.event_log,
                   "arrays": {**{"local/" + k: v for k, v in local.items()},
                              **{"synced/" + k: v for k, v in grads_of(model._layers).items()}}}


def unused(rank):
    """find_unused_parameters: rank 0 uses `extra`, rank 1 does not; 5 SGD steps."""
    model = dist.DataParallel(make_model(100 + rank, with_extra=True), find_unused_parameters=True,
                              comm_buffer_size=0.002, last_comm_buffer_size=0.001)
    opt = make_optimizer("sgd", model.parameters())
    lo, hi = rank * BATCH // 2, (rank + 1) * BATCH // 2
    for step in range(5):
        x, y = batch(step)
        loss_of(model, x[lo:hi], y[lo:hi], use_extra=(rank == 0)).backward()
        opt.step()
        opt.clear_grad()
    # Nobody uses `extra` now: its .grad stays as clear_grad left it (zeros).
    x, y = batch(5)
    loss_of(model, x[lo:hi], y[lo:hi]).backward()
    return model, {"arrays": {"extra_grad_after_unused_pass": model._layers.extra.weight.grad.numpy()}}


def unused_without_flag(rank):
    model = dist.DataParallel(make_model(100 + rank, with_extra=True))
    x, y = batch(0)
    try:
        loss_of(model, x[:4], y[:4]).backward()
    except RuntimeError as e:
        return model, {"error": str(e)}
    return model, {"error": ""}


def with_fleet(rank):
    strategy = fleet.DistributedStrategy()
    strategy.fuse_grad_size_in_MB = 0.002
    strategy.last_comm_group_size_MB = 0.001
    fleet.init(is_collective=True, strategy=strategy)
    info = {"worker_index": fleet.worker_index(), "worker_num": fleet.worker_num(),
            "is_first_worker": fleet.is_first_worker()}
    fleet.barrier_worker()
    model = fleet.distributed_model(make_model(100 + rank))
    opt = fleet.distributed_optimizer(make_optimizer("sgd", model.parameters()))
    info["wrapped"] = type(model).__name__
    info["buckets"] = len(model._buckets)
    lo, hi = rank * BATCH // 2, (rank + 1) * BATCH // 2
    for step in range(3):
        x, y = batch(step)
        loss_of(model, x[lo:hi], y[lo:hi]).backward()
        opt.step()
        opt.clear_grad()
    return model, info


def main():
    scenario, device, out = sys.argv[1], sys.argv[2], sys.argv[3]
    oar.set_device(device)
    if scenario != "fleet":
        dist.init_parallel_env()
    rank = dist.get_rank()
    if scenario.startswith("train_"):
        model, info = train(rank, scenario[len("train_"):])
    else:
        model, info = {"no_sync": no_sync, "unused": unused, "unused_without_flag": unused_without_flag,
                       "fleet": with_fleet}[scenario](rank)
    arrays = info.pop("arrays", {})
    np.savez(out, info=json.dumps(info), **{"param/" + k: v for k, v in params_of(model).items()}, **arrays)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
