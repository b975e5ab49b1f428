"""Data-parallel training of the digits CNN (digits_cnn.py's network and
data) on several processes, as a Paddle user writes it:

    python -m oar.distributed.launch --nproc_per_node 2 digits_dp.py

Each rank reads its share of every epoch through DistributedBatchSampler,
oar.DataParallel averages the gradients (Gloo all-reduce on the cpu,
started from backward hooks bucket by bucket), and every rank steps its own
Adam. Exits 0 when, after training, the ranks' parameters are bit-identical
(checked with an all_gather) and rank 0's test accuracy is at least 0.95.
Usage: digits_dp.py [--epochs N] [--batch-size B]
"""
import argparse
import sys
import time

import numpy as np

import oar
import oar.distributed as dist
import oar.nn as nn
from digits_cnn import DigitsCNN, load_digits, split


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=16, help="per rank")
    args = parser.parse_args()

    dist.init_parallel_env()
    rank, world = dist.get_rank(), dist.get_world_size()
    oar.seed(2026)  # the same initial weights everywhere (DataParallel also broadcasts rank 0's)
    images, labels = load_digits()
    (x_train, y_train), (x_test, y_test) = split(images, labels)
    train_set = oar.io.TensorDataset([x_train, y_train])
    sampler = oar.io.DistributedBatchSampler(train_set, batch_size=args.batch_size, shuffle=True)
    loader = oar.io.DataLoader(train_set, batch_sampler=sampler)

    net = DigitsCNN()
    model = oar.DataParallel(net)
    opt = oar.optimizer.Adam(learning_rate=3e-3, parameters=model.parameters())
    loss_fn = nn.CrossEntropyLoss()
    if rank == 0:
        print(f"digits_dp: {world} ranks, {len(sampler)} batches of {args.batch_size} per rank and epoch")
    start = time.perf_counter()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        total = 0.0
        for x, y in loader():
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            total += float(loss)
        if rank == 0:
            print(f"epoch {epoch + 1}/{args.epochs}: rank 0 mean loss {total / len(sampler):.4f}", flush=True)
    seconds = time.perf_counter() - start

    # Every rank must hold the same parameters: gather them and compare bits.
    flat = oar.concat([p.reshape([-1]) for p in net.parameters()])
    gathered = []
    dist.all_gather(gathered, flat)
    same = all(np.array_equal(g.numpy(), gathered[0].numpy()) for g in gathered)

    ok = same
    if rank == 0:
        net.eval()
        with oar.no_grad():
            logits = net(oar.to_tensor(x_test))
        accuracy = float((logits.numpy().argmax(-1) == y_test).mean())
        print(f"digits_dp: trained in {seconds:.1f} s on {world} ranks; test accuracy {accuracy:.4f}; "
              f"parameters identical on every rank: {same}")
        ok = same and accuracy >= 0.95
        if not ok:
            print("digits_dp: FAILED (need identical parameters and test accuracy >= 0.95)")
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
