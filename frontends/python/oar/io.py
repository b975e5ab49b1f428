"""oar.io (paddle.io): Dataset, TensorDataset, samplers (DistributedBatchSampler too), DataLoader."""
import math
import numbers

import numpy as np

from . import _C
from .creation import randperm, to_tensor
from .framework import Tensor
from .math import stack

_ops = _C.ops


class Dataset:
    """Map-style dataset: __getitem__(index) and __len__."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__}.__getitem__ is not implemented")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__}.__len__ is not implemented")


class IterableDataset(Dataset):
    def __iter__(self):
        raise NotImplementedError


class TensorDataset(Dataset):
    """Samples are the i-th rows of each tensor (all with the same first dim)."""

    def __init__(self, tensors):
        tensors = [t if isinstance(t, Tensor) else to_tensor(t) for t in tensors]
        n = {t.shape[0] for t in tensors}
        if len(n) != 1:
            raise ValueError(f"TensorDataset: tensors have different first dims {sorted(n)}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]

    def _batch(self, indices):
        """A whole batch with one gather per tensor (DataLoader's fast path)."""
        idx = to_tensor(np.asarray(indices, dtype=np.int64), place=self.tensors[0]._device)
        return [_ops.gather(t, idx, 0) for t in self.tensors]


class Subset(Dataset):
    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, list(indices)

    def __getitem__(self, index):
        return self.dataset[self.indices[index]]

    def __len__(self):
        return len(self.indices)


class ComposeDataset(Dataset):
    def __init__(self, datasets):
        self.datasets = list(datasets)

    def __getitem__(self, index):
        out = []
        for d in self.datasets:
            item = d[index]
            out.extend(item if isinstance(item, (tuple, list)) else [item])
        return tuple(out)

    def __len__(self):
        return len(self.datasets[0])


def random_split(dataset, lengths, generator=None):
    n = len(dataset)
    if all(isinstance(v, float) for v in lengths) and abs(sum(lengths) - 1.0) < 1e-6:
        sizes = [int(math.floor(n * f)) for f in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        lengths = sizes
    if sum(lengths) != n:
        raise ValueError(f"random_split: lengths {list(lengths)} do not add up to the dataset size {n}")
    perm = randperm(n).numpy().tolist()
    out, start = [], 0
    for size in lengths:
        out.append(Subset(dataset, perm[start:start + size]))
        start += size
    return out


class Sampler:
    def __init__(self, data_source=None):
        self.data_source = data_source


class SequenceSampler(Sampler):
    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A permutation from oar's generator (oar.seed makes the order reproducible)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        super().__init__(data_source)
        self.replacement = replacement
        self.num_samples = num_samples

    def __iter__(self):
        n = len(self.data_source)
        if self.replacement:
            k = self.num_samples or n
            u = _ops.uniform([k], 0.0, float(n), _C.dtype.float64).numpy()
            return iter(np.minimum(np.floor(u).astype(np.int64), n - 1).tolist())
        perm = randperm(n).numpy().tolist()
        return iter(perm[: self.num_samples] if self.num_samples else perm)

    def __len__(self):
        return self.num_samples or len(self.data_source)


class BatchSampler(Sampler):
    def __init__(self, dataset=None, sampler=None, shuffle=False, batch_size=1, drop_last=False):
        if sampler is None:
            sampler = RandomSampler(dataset) if shuffle else SequenceSampler(dataset)
        if not isinstance(batch_size, numbers.Integral) or batch_size <= 0:
            raise ValueError(f"BatchSampler: batch_size must be a positive integer, got {batch_size!r}")
        self.sampler, self.batch_size, self.drop_last = sampler, int(batch_size), drop_last

    def __iter__(self):
        batch = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size


def _default_replicas():
    """(world size, rank) of the default group, or of the launcher's environment before init_parallel_env."""
    from . import distributed
    env = distributed.ParallelEnv()
    return env.world_size, env.rank


class DistributedBatchSampler(BatchSampler):
    """paddle.io.DistributedBatchSampler: each of `num_replicas` ranks gets its own
    batches of the dataset's indices. The indices are padded (repeating the first
    ones) to a multiple of num_replicas; with shuffle, they are permuted by a
    numpy RandomState seeded with the epoch (the same on every rank; the epoch
    advances after each pass, or set_epoch sets it), then dealt out: rank r takes
    the r-th batch_size block of every num_replicas * batch_size, and an equal
    share of the remainder. num_replicas and rank default to the default
    group's (oar.distributed.ParallelEnv)."""

    def __init__(self, dataset, batch_size, num_replicas=None, rank=None, shuffle=False, drop_last=False):
        if not isinstance(batch_size, numbers.Integral) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"DistributedBatchSampler: batch_size must be a positive integer, got {batch_size!r}")
        if not isinstance(shuffle, bool) or not isinstance(drop_last, bool):
            raise ValueError(f"DistributedBatchSampler: shuffle and drop_last must be bools, got "
                             f"{shuffle!r} and {drop_last!r}")
        if num_replicas is None or rank is None:
            world_size, world_rank = _default_replicas()
            num_replicas = world_size if num_replicas is None else num_replicas
            rank = world_rank if rank is None else rank
        if not isinstance(num_replicas, numbers.Integral) or num_replicas <= 0:
            raise ValueError(f"DistributedBatchSampler: num_replicas must be a positive integer, got {num_replicas!r}")
        if not isinstance(rank, numbers.Integral) or not 0 <= rank < num_replicas:
            raise ValueError(f"DistributedBatchSampler: rank must be in [0, {num_replicas}) for num_replicas="
                             f"{num_replicas}, got {rank!r}")
        self.dataset = dataset
        self.sampler = None
        self.batch_size, self.shuffle, self.drop_last = int(batch_size), shuffle, drop_last
        self.nranks, self.local_rank = int(num_replicas), int(rank)
        self.epoch = 0
        self.num_samples = int(math.ceil(len(dataset) / self.nranks))
        self.total_size = self.num_samples * self.nranks

    def _local_indices(self):
        indices = list(range(len(self.dataset)))
        indices += indices[: self.total_size - len(indices)]
        if self.shuffle:
            np.random.RandomState(self.epoch).shuffle(indices)
            self.epoch += 1
        if self.nranks == 1:
            return indices
        stride = self.batch_size * self.nranks
        tail = self.total_size % stride  # a multiple of nranks, as total_size and stride are
        local = []
        for start in range(self.local_rank * self.batch_size, self.total_size - tail, stride):
            local.extend(indices[start:start + self.batch_size])
        share = tail // self.nranks
        rest = indices[self.total_size - tail:]
        local.extend(rest[self.local_rank * share:(self.local_rank + 1) * share])
        return local

    def __iter__(self):
        batch = []
        for i in self._local_indices():
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = self.num_samples
        return n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size

    def set_epoch(self, epoch):
        """Seeds the next shuffle with `epoch` (call it with the same value on every rank)."""
        self.epoch = epoch


def default_collate_fn(batch):
    """Stacks samples field by field: tensors with oar.stack, arrays and numbers into new tensors."""
    sample = batch[0]
    if isinstance(sample, Tensor):
        return stack(batch, 0)
    if isinstance(sample, np.ndarray):
        return to_tensor(np.stack(batch))
    if isinstance(sample, (bool, np.bool_)):
        return to_tensor(np.asarray(batch, dtype=np.bool_))
    if isinstance(sample, numbers.Integral):
        return to_tensor(np.asarray(batch, dtype=np.int64))
    if isinstance(sample, numbers.Real):
        return to_tensor(np.asarray(batch, dtype=np.float32))
    if isinstance(sample, (str, bytes)):
        return list(batch)
    if isinstance(sample, dict):
        return {k: default_collate_fn([b[k] for b in batch]) for k in sample}
    if isinstance(sample, (tuple, list)):
        return [default_collate_fn(list(field)) for field in zip(*batch)]
    raise TypeError(f"default_collate_fn: cannot batch samples of type {type(sample).__name__}")


class DataLoader:
    """Batches a dataset: batch_size, shuffle, drop_last, collate_fn or a batch_sampler.
    Loading runs in the calling thread; num_workers > 0 only splits an
    IterableDataset among emulated workers (get_worker_info)."""

    def __init__(self, dataset, feed_list=None, places=None, return_list=True, batch_sampler=None, batch_size=1,
                 shuffle=False, drop_last=False, collate_fn=None, num_workers=0, use_buffer_reader=True,
                 prefetch_factor=2, use_shared_memory=True, timeout=0, worker_init_fn=None,
                 persistent_workers=False):
        self.dataset = dataset
        self.collate_fn = collate_fn
        self.return_list = return_list
        self.feed_list = list(feed_list) if feed_list else []
        self.num_workers = int(num_workers)  # an IterableDataset is split by get_worker_info (io_more.py)
        self.worker_init_fn = worker_init_fn
        if isinstance(dataset, IterableDataset):
            self.batch_sampler = None
            self.batch_size, self.drop_last = batch_size, drop_last
        elif batch_sampler is not None:
            self.batch_sampler = batch_sampler
        elif batch_size is None:
            self.batch_sampler = None
        else:
            self.batch_sampler = BatchSampler(dataset, shuffle=shuffle, batch_size=batch_size, drop_last=drop_last)

    def __call__(self):
        """Paddle's `for data in loader():` form: the same iterator as iter(loader)."""
        return self.__iter__()

    def __len__(self):
        if self.batch_sampler is None:
            raise TypeError("DataLoader over an IterableDataset has no len()")
        return len(self.batch_sampler)

    def __iter__(self):
        if self.feed_list and not self.return_list:  # static mode: one {feed name: batch} per device, as Paddle's
            names = [getattr(v, "name", None) or str(v) for v in self.feed_list]
            for batch in self._iter_batches():
                yield [dict(zip(names, batch))]
            return
        yield from self._iter_batches()

    def _iter_batches(self):
        if isinstance(self.dataset, IterableDataset):
            yield from self._iter_iterable()
            return
        if self.batch_sampler is None:
            for i in range(len(self.dataset)):
                yield self.dataset[i]
            return
        fast = isinstance(self.dataset, TensorDataset) and self.collate_fn is None
        for indices in self.batch_sampler:
            if fast:
                yield self.dataset._batch(indices)
            else:
                yield (self.collate_fn or default_collate_fn)([self.dataset[i] for i in indices])

    def _iter_iterable(self):
        if self.num_workers > 0:
            yield from iterate_workers(self.dataset, self.num_workers, self._batches, self.worker_init_fn)
        else:
            yield from self._batches(iter(self.dataset))

    def _batches(self, samples):
        batch = []
        collate = self.collate_fn or default_collate_fn
        for sample in samples:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield collate(batch)
                batch = []
        if batch and not self.drop_last:
            yield collate(batch)


from .io_more import (ChainDataset, ConcatDataset, SubsetRandomSampler, WeightedRandomSampler,  # noqa: E402,F401
                      get_worker_info, iterate_workers)
