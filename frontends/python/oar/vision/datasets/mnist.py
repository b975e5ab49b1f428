"""MNIST and FashionMNIST from local idx files (oar never downloads)."""
import gzip
import os

import numpy as np

from ...framework import get_default_dtype
from ...io import Dataset


def _local_file(dataset, cache_dir, path, filename, download):
    """path, or Paddle's cache location when it already holds the file."""
    if path is not None:
        if not os.path.exists(path):
            raise RuntimeError(f"{dataset}: file '{path}' does not exist")
        return path
    cached = os.path.join(os.path.expanduser("~"), ".cache", "paddle", "dataset", cache_dir, filename)
    if os.path.exists(cached):
        return cached
    raise RuntimeError(f"{dataset}: '{filename}' is not available locally (looked in {os.path.dirname(cached)}) "
                       f"and oar does not download data sets (no network access); download it yourself and pass "
                       f"its path" + ("" if download else " (download=False)"))


def _read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    shape = tuple(int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


class MNIST(Dataset):
    """Item i: (28x28 image, int64 label of shape [1]). The image is a PIL
    image with backend 'pil', else a float32 array (before transform)."""
    NAME, CACHE_DIR = "MNIST", "mnist"  # CACHE_DIR: under ~/.cache/paddle/dataset, as Paddle
    _FILES = {"train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
              "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")}

    def __init__(self, image_path=None, label_path=None, mode="train", transform=None, download=True, backend=None):
        if mode.lower() not in ("train", "test"):
            raise ValueError(f"{self.NAME}: mode must be 'train' or 'test', got '{mode}'")
        from .. import get_image_backend
        backend = backend or get_image_backend()
        if backend not in ("pil", "cv2"):
            raise ValueError(f"{self.NAME}: backend must be 'pil' or 'cv2', got '{backend}'")
        self.mode, self.backend, self.transform = mode.lower(), backend, transform
        image_file, label_file = self._FILES[self.mode]
        self.image_path = _local_file(self.NAME, self.CACHE_DIR, image_path, image_file, download)
        self.label_path = _local_file(self.NAME, self.CACHE_DIR, label_path, label_file, download)
        self.images = _read_idx(self.image_path).reshape(-1, 28 * 28).astype("float32")
        self.labels = _read_idx(self.label_path).astype("int64").reshape(-1, 1)
        if len(self.images) != len(self.labels):
            raise RuntimeError(f"{self.NAME}: {len(self.images)} images but {len(self.labels)} labels")
        self.dtype = get_default_dtype()

    def __getitem__(self, idx):
        image, label = self.images[idx].reshape(28, 28), self.labels[idx]
        if self.backend == "pil":
            from PIL import Image
            image = Image.fromarray(image.astype("uint8"), mode="L")
        if self.transform is not None:
            image = self.transform(image)
        if self.backend == "pil" or not isinstance(image, np.ndarray):
            return image, label
        return image.astype(self.dtype), label

    def __len__(self):
        return len(self.labels)


class FashionMNIST(MNIST):
    NAME, CACHE_DIR = "FashionMNIST", "fashion-mnist"
