"""More of paddle.io: ChainDataset, ConcatDataset, SubsetRandomSampler,
WeightedRandomSampler, and get_worker_info for an IterableDataset split
across DataLoader workers."""
import bisect
import copy

import numpy as np

from . import creation
from .framework import Tensor
from .io import Dataset, IterableDataset, Sampler


class ChainDataset(IterableDataset):
    """The samples of several IterableDatasets, one after the other."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError(f"ChainDataset: every dataset must be an IterableDataset, got {type(d).__name__}")

    def __iter__(self):
        for d in self.datasets:
            yield from d


class ConcatDataset(Dataset):
    """Map-style datasets joined end to end: index i of the whole is an index
    of the dataset it falls in."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset: an IterableDataset has no index; use ChainDataset for it")
        self.cumulative_sizes = list(np.cumsum([len(d) for d in self.datasets]))

    def __len__(self):
        return int(self.cumulative_sizes[-1]) if self.cumulative_sizes else 0

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError(f"ConcatDataset: index {idx} is out of range for a dataset of {len(self)} samples")
            idx += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        if which == len(self.datasets):
            raise IndexError(f"ConcatDataset: index {idx} is out of range for a dataset of {len(self)} samples")
        start = 0 if which == 0 else int(self.cumulative_sizes[which - 1])
        return self.datasets[which][idx - start]


class SubsetRandomSampler(Sampler):
    """The given indices in a random order (oar's generator: oar.seed)."""

    def __init__(self, indices):
        if len(indices) == 0:
            raise ValueError("SubsetRandomSampler: indices must not be empty")
        self.indices = indices

    def __iter__(self):
        for i in creation.randperm(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """num_samples indices drawn with probability proportional to weights."""

    def __init__(self, weights, num_samples, replacement=True):
        if not isinstance(num_samples, int) or num_samples <= 0:
            raise ValueError(f"WeightedRandomSampler: num_samples must be a positive int, got {num_samples!r}")
        weights = weights.numpy() if isinstance(weights, Tensor) else np.asarray(weights, dtype=np.float64)
        if weights.ndim != 1 or np.any(weights < 0) or weights.sum() <= 0:
            raise ValueError("WeightedRandomSampler: weights must be a 1-D sequence of non-negative numbers "
                             "with a positive sum")
        if not replacement and num_samples > np.count_nonzero(weights):
            raise ValueError(f"WeightedRandomSampler: cannot draw {num_samples} samples without replacement "
                             f"from {np.count_nonzero(weights)} non-zero weights")
        self.weights, self.num_samples, self.replacement = weights, num_samples, replacement

    def __iter__(self):
        p = self.weights / self.weights.sum()
        return iter(np.random.choice(len(p), self.num_samples, replace=self.replacement, p=p).tolist())

    def __len__(self):
        return self.num_samples


class WorkerInfo:
    """id, num_workers, dataset and seed of the DataLoader worker running now."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def __setattr__(self, key, value):
        raise RuntimeError(f"WorkerInfo: cannot assign attribute '{key}'")


_current_worker = None


def get_worker_info():
    """Inside a DataLoader worker (num_workers > 0), its WorkerInfo; else None."""
    return _current_worker


def _worker_copy(dataset):
    try:
        return copy.deepcopy(dataset)
    except Exception:  # noqa: BLE001 - an object deepcopy cannot handle: share what it holds
        return copy.copy(dataset)


def iterate_workers(dataset, num_workers, make_batches, worker_init_fn=None):
    """Batches of an IterableDataset read by num_workers workers, taken from
    the workers in turn (as Paddle's loader yields them). The workers run in
    this thread, each on its own copy of the dataset (as a worker process
    would); get_worker_info() describes the worker while it runs, and
    worker_init_fn(id) runs first in each."""
    global _current_worker
    streams = []
    for wid in range(num_workers):
        info = WorkerInfo(id=wid, num_workers=num_workers, dataset=_worker_copy(dataset), seed=wid)
        previous, _current_worker = _current_worker, info
        try:
            if worker_init_fn is not None:
                worker_init_fn(wid)
            streams.append((info, make_batches(iter(info.dataset))))
        finally:
            _current_worker = previous
    while streams:
        alive = []
        for info, stream in streams:
            previous, _current_worker = _current_worker, info
            try:
                batch = next(stream)
            except StopIteration:
                continue
            finally:
                _current_worker = previous
            alive.append((info, stream))
            yield batch
        streams = alive
