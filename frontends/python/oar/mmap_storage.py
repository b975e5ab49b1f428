"""paddle.MmapStorage: a file mapped read-only into memory, sliced into tensors."""
import os

import numpy as np

from .creation import to_tensor
from .framework import convert_dtype, to_numpy_dtype


class MmapStorage:
    """The first `nbytes` bytes of `filename`, mapped read-only."""

    def __init__(self, filename, nbytes):
        path = os.fspath(filename)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"MmapStorage: there is no file '{path}' to map")
        size = os.path.getsize(path)
        if int(nbytes) <= 0 or int(nbytes) > size:
            raise ValueError(f"MmapStorage: expected 0 < nbytes <= {size} (the size of '{path}'), but got {nbytes}")
        self._path, self._nbytes = path, int(nbytes)
        self._map = np.memmap(path, dtype=np.uint8, mode="r", shape=(self._nbytes,))

    def get_slice(self, dtype, start, stop):
        """A 1-D tensor of `stop - start` elements of `dtype` read from byte
        offset `start` (Paddle's reading of the two numbers); a copy of the
        mapped bytes."""
        np_dtype = np.dtype(to_numpy_dtype(convert_dtype(dtype)))
        count = int(stop) - int(start)
        end = int(start) + count * np_dtype.itemsize
        if int(start) < 0 or count < 0 or end > self._nbytes:
            raise ValueError(f"MmapStorage.get_slice: {count} elements of {np_dtype.name} from byte {start} end at "
                             f"byte {end}, past the {self._nbytes} mapped bytes of '{self._path}'")
        return to_tensor(np.frombuffer(self._map, dtype=np_dtype, count=count, offset=int(start)).copy())
