"""The job of test_two_machines.sh: data-parallel training of a small linear model.

    two_machines_job.py reference OUT STEPS   one process, the whole batch (the reference)
    two_machines_job.py dp OUT STEPS          under the launcher: oar.DataParallel
    two_machines_job.py allreduce OUT STEPS   under the launcher: gradients averaged by all_reduce
    two_machines_job.py MODE OUT 0 K          trains until killed; after K steps the last rank
                                              prints "MARKER pid=<pid>" and sleeps, to be killed

Each of the world_size ranks takes its contiguous share of every batch of 8
rows; with the mean loss, the averaged gradient equals the whole batch's, so
the parameters must end equal to the reference's (within f32 rounding).
Writes OUT/params.<rank>.npz.
"""
import os
import sys
import time

import numpy as np

import oar
import oar.distributed as dist

BATCH, IN, OUT_FEATURES, LR = 8, 4, 3, 0.1


def data(step):
    rng = np.random.default_rng(1000 + step)
    x = rng.standard_normal((BATCH, IN)).astype(np.float32)
    y = (x @ np.arange(IN * OUT_FEATURES, dtype=np.float32).reshape(IN, OUT_FEATURES) / 10).astype(np.float32)
    return x, y


def make_model():
    oar.set_device("cpu")
    model = oar.nn.Linear(IN, OUT_FEATURES)
    rng = np.random.default_rng(7)
    model.weight.set_value(rng.standard_normal((IN, OUT_FEATURES)).astype(np.float32))
    model.bias.set_value(rng.standard_normal((OUT_FEATURES,)).astype(np.float32))
    return model


def train_step(model, opt, step, rank, world, average_by_hand):
    x, y = data(step)
    share = BATCH // world
    x, y = x[rank * share:(rank + 1) * share], y[rank * share:(rank + 1) * share]
    diff = model(oar.to_tensor(x)) - oar.to_tensor(y)
    loss = (diff * diff).mean()
    loss.backward()
    if average_by_hand:
        for p in model.parameters():
            dist.all_reduce(p.grad, op=dist.ReduceOp.AVG)
    opt.step()
    opt.clear_grad()


def main():
    mode, out = sys.argv[1], sys.argv[2]
    model = make_model()
    rank, world = 0, 1
    if mode != "reference":
        dist.init_parallel_env()
        rank, world = dist.get_rank(), dist.get_world_size()
        print(f"started: global rank {rank} of {world}", flush=True)
    trained = oar.DataParallel(model) if mode == "dp" else model
    opt = oar.optimizer.SGD(learning_rate=LR, parameters=model.parameters())
    steps = int(sys.argv[3])
    marker_step = int(sys.argv[4]) if len(sys.argv) > 4 else -1
    step = 0
    while steps == 0 or step < steps:  # 0: until this process or a peer is killed
        train_step(trained, opt, step, rank, world, mode == "allreduce")
        step += 1
        if step == marker_step and rank == world - 1:
            # The victim: killed during a long "compute step", outside any
            # collective, while rank 0 already waits in the next one.
            print(f"MARKER pid={os.getpid()}", flush=True)
            time.sleep(120)
    np.savez(os.path.join(out, f"params.{rank}.npz"), weight=model.weight.numpy(), bias=model.bias.numpy())
    print(f"done: global rank {rank}", flush=True)
    if mode != "reference":
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
