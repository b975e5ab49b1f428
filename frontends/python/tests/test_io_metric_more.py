import math

import numpy as np
import pytest

import oar
from oar.io import (ChainDataset, ConcatDataset, DataLoader, IterableDataset, SubsetRandomSampler,
                    WeightedRandomSampler, get_worker_info)


class Range(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        start, end = self.start, self.end
        if info is not None:
            per = int(math.ceil((end - start) / info.num_workers))
            start = self.start + info.id * per
            end = min(start + per, self.end)
        for i in range(start, end):
            yield np.array([i])


class Items(oar.io.Dataset):
    def __init__(self, values):
        self.values = values

    def __getitem__(self, i):
        return self.values[i]

    def __len__(self):
        return len(self.values)


def test_chain_and_concat():
    assert [int(x[0]) for x in ChainDataset([Range(0, 2), Range(5, 7)])] == [0, 1, 5, 6]
    cat = ConcatDataset([Items([1, 2, 3]), Items([4, 5])])
    assert len(cat) == 5 and [cat[i] for i in range(5)] == [1, 2, 3, 4, 5] and cat[-1] == 5
    with pytest.raises(IndexError, match="ConcatDataset"):
        cat[5]
    with pytest.raises(TypeError, match="ChainDataset"):
        ChainDataset([Items([1])])


def test_workers_split_an_iterable_dataset_and_take_turns():
    assert get_worker_info() is None
    loader = DataLoader(Range(2, 9), num_workers=2, batch_size=1, drop_last=True)
    # worker 0 reads 2..5, worker 1 reads 6..8; batches alternate between them
    assert [int(b.numpy()[0, 0]) for b in loader] == [2, 6, 3, 7, 4, 8, 5]
    assert [int(b.numpy()[0, 0]) for b in DataLoader(Range(2, 5), batch_size=1)] == [2, 3, 4]


class Plain(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        return iter([np.array([i]) for i in range(self.start, self.end)])


def test_worker_init_fn_edits_its_own_copy():
    dataset = Plain(0, 4)
    dataset_ids = []

    def init(worker_id):
        info = get_worker_info()
        dataset_ids.append(id(info.dataset))
        info.dataset.start = 2 * worker_id  # each worker's copy, not the original
        info.dataset.end = info.dataset.start + 1

    out = [int(b.numpy()[0, 0]) for b in DataLoader(dataset, num_workers=2, batch_size=1, worker_init_fn=init)]
    assert out == [0, 2] and dataset.end == 4 and len(set(dataset_ids)) == 2


def test_samplers():
    oar.seed(3)
    assert sorted(SubsetRandomSampler([1, 3, 5, 7])) == [1, 3, 5, 7]
    np.random.seed(0)
    drawn = list(WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], num_samples=50))
    assert len(drawn) == 50 and set(drawn) <= {1, 3} and drawn.count(3) > drawn.count(1)
    assert sorted(WeightedRandomSampler([1, 1, 1], 3, replacement=False)) == [0, 1, 2]
    with pytest.raises(ValueError, match="WeightedRandomSampler"):
        WeightedRandomSampler([1.0, 0.0], 2, replacement=False)


def test_auc_by_hand():
    m = oar.metric.Auc(num_thresholds=10)
    scores = np.array([0.9, 0.8, 0.35, 0.1])
    preds = np.stack([1 - scores, scores], axis=1)
    m.update(preds, np.array([1, 0, 1, 0]))
    # pairs (pos, neg) ranked right: (0.9, 0.8), (0.9, 0.1), (0.35, 0.1); wrong: (0.35, 0.8) -> 3/4
    assert m.accumulate() == pytest.approx(0.75)
    assert m.name() == "auc"
    m.reset()
    assert m.accumulate() == 0.0
    with pytest.raises(ValueError, match="Auc.update"):
        m.update(np.ones([3, 2]), np.ones([2]))


def test_auc_matches_paddle():
    paddle = pytest.importorskip("paddle")
    rng = np.random.default_rng(0)
    p = rng.random((64, 1))
    preds, labels = np.concatenate([1 - p, p], axis=1), rng.integers(0, 2, (64, 1))
    ref, got = paddle.metric.Auc(), oar.metric.Auc()
    ref.update(preds, labels)
    got.update(preds, labels)
    assert got.accumulate() == pytest.approx(ref.accumulate())
