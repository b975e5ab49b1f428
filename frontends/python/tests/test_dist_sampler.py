"""oar.io.DistributedBatchSampler: splitting, padding, shuffling, as Paddle's."""
import numpy as np
import pytest

import oar
from oar.io import DataLoader, DistributedBatchSampler, TensorDataset


class Range:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i


def batches(n, batch_size, num_replicas, rank, **kw):
    return list(DistributedBatchSampler(Range(n), batch_size, num_replicas=num_replicas, rank=rank, **kw))


def test_two_ranks_take_alternate_blocks_and_share_the_tail():
    # 10 indices, 2 per batch: blocks of 2*2; the tail [8, 9] is split one each.
    assert batches(10, 2, 2, 0) == [[0, 1], [4, 5], [8]]
    assert batches(10, 2, 2, 1) == [[2, 3], [6, 7], [9]]
    assert len(DistributedBatchSampler(Range(10), 2, num_replicas=2, rank=0)) == 3


def test_padding_repeats_the_first_indices():
    # 11 indices on 2 ranks: padded to 12 with index 0.
    assert batches(11, 2, 2, 0) == [[0, 1], [4, 5], [8, 9]]
    assert batches(11, 2, 2, 1) == [[2, 3], [6, 7], [10, 0]]
    # 10 indices on 3 ranks of batch 3: padded with 0, 1; blocks of 9, tail [9, 0, 1] one each.
    assert batches(10, 3, 3, 0) == [[0, 1, 2], [9]]
    assert batches(10, 3, 3, 1) == [[3, 4, 5], [0]]
    assert batches(10, 3, 3, 2) == [[6, 7, 8], [1]]


def test_drop_last_and_len():
    assert batches(10, 3, 3, 1, drop_last=True) == [[3, 4, 5]]
    assert len(DistributedBatchSampler(Range(10), 3, num_replicas=3, rank=1, drop_last=True)) == 1
    assert len(DistributedBatchSampler(Range(10), 3, num_replicas=3, rank=1)) == 2
    assert batches(7, 4, 1, 0) == [[0, 1, 2, 3], [4, 5, 6]]  # one replica: a plain batch sampler


def test_shuffle_is_seeded_by_the_epoch_and_equal_on_all_ranks():
    samplers = [DistributedBatchSampler(Range(10), 2, num_replicas=2, rank=r, shuffle=True) for r in (0, 1)]
    perm = list(range(10))
    np.random.RandomState(0).shuffle(perm)  # epoch 0's order, the same on every rank
    first = [list(s) for s in samplers]
    assert first[0] == [perm[0:2], perm[4:6], perm[8:9]]
    assert first[1] == [perm[2:4], perm[6:8], perm[9:10]]
    assert sorted(sum(first[0] + first[1], [])) == list(range(10))
    second = [list(s) for s in samplers]  # the epoch advanced: another order
    perm1 = list(range(10))
    np.random.RandomState(1).shuffle(perm1)
    assert second[0] == [perm1[0:2], perm1[4:6], perm1[8:9]]
    assert second[0] != first[0]
    for s in samplers:
        s.set_epoch(0)
    assert [list(s) for s in samplers] == first


def test_feeds_a_dataloader():
    data = TensorDataset([oar.to_tensor(np.arange(6, dtype=np.float32).reshape(6, 1))])
    loader = DataLoader(data, batch_sampler=DistributedBatchSampler(data, 2, num_replicas=2, rank=1))
    got = [b[0].numpy().ravel().tolist() for b in loader]
    assert got == [[2.0, 3.0], [5.0]]  # its block of the first 4, then its half of the tail [4, 5]


def test_bad_arguments_are_sentences():
    with pytest.raises(ValueError, match="batch_size must be a positive integer, got 0"):
        DistributedBatchSampler(Range(4), 0, num_replicas=2, rank=0)
    with pytest.raises(ValueError, match=r"rank must be in \[0, 2\) for num_replicas=2, got 2"):
        DistributedBatchSampler(Range(4), 1, num_replicas=2, rank=2)
    with pytest.raises(ValueError, match="num_replicas must be a positive integer, got 0"):
        DistributedBatchSampler(Range(4), 1, num_replicas=0, rank=0)


def test_replicas_and_rank_default_to_the_launcher_variables(monkeypatch):
    for k in ("OAR_LAUNCHER", "PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    s = DistributedBatchSampler(Range(10), 2)
    assert (s.nranks, s.local_rank) == (2, 1)
    assert list(s) == [[2, 3], [6, 7], [9]]
