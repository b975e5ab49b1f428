"""Cifar10 and Cifar100 from a local python-version archive (oar never downloads)."""
import pickle
import tarfile

import numpy as np

from ...framework import get_default_dtype
from ...io import Dataset
from .mnist import _local_file


class Cifar10(Dataset):
    """Item i: (32x32x3 image, int64 label). The image is a PIL image with
    backend 'pil', else a float array (before transform). data_file is the
    cifar-10-python.tar.gz archive."""
    NAME, ARCHIVE, FLAGS = "Cifar10", "cifar-10-python.tar.gz", {"train": "data_batch", "test": "test_batch"}

    def __init__(self, data_file=None, mode="train", transform=None, download=True, backend=None):
        if mode.lower() not in ("train", "test"):
            raise ValueError(f"{self.NAME}: mode must be 'train' or 'test', got '{mode}'")
        from .. import get_image_backend
        backend = backend or get_image_backend()
        if backend not in ("pil", "cv2"):
            raise ValueError(f"{self.NAME}: backend must be 'pil' or 'cv2', got '{backend}'")
        self.mode, self.backend, self.transform = mode.lower(), backend, transform
        self.data_file = _local_file(self.NAME, "cifar", data_file, self.ARCHIVE, download)
        self.flag = self.FLAGS[self.mode]
        self.data = []
        with tarfile.open(self.data_file, mode="r") as f:
            for name in sorted(m.name for m in f if self.flag in m.name):
                batch = pickle.load(f.extractfile(name), encoding="bytes")
                labels = batch.get(b"labels", batch.get(b"fine_labels"))
                if labels is None:
                    raise RuntimeError(f"{self.NAME}: batch '{name}' in {self.data_file} has no labels")
                self.data.extend(zip(batch[b"data"], labels))
        self.dtype = get_default_dtype()

    def __getitem__(self, idx):
        image, label = self.data[idx]
        image = np.reshape(image, [3, 32, 32]).transpose([1, 2, 0])
        if self.backend == "pil":
            from PIL import Image
            image = Image.fromarray(image.astype("uint8"))
        if self.transform is not None:
            image = self.transform(image)
        label = np.array(label).astype("int64")
        if self.backend == "pil" or not isinstance(image, np.ndarray):
            return image, label
        return image.astype(self.dtype), label

    def __len__(self):
        return len(self.data)


class Cifar100(Cifar10):
    """As Cifar10, over cifar-100-python.tar.gz with the fine labels."""
    NAME, ARCHIVE, FLAGS = "Cifar100", "cifar-100-python.tar.gz", {"train": "train", "test": "test"}
