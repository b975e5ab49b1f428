"""ProcessMesh (Paddle's paddle.distributed.ProcessMesh): an N-d array of
global ranks with a name per dim. The core checks it (oar::ProcessMesh,
core/src/dist/dist_tensor.cpp); this class holds the numpy array."""
import numpy as np

from ... import _C

__all__ = ["ProcessMesh"]


class ProcessMesh:
    """ProcessMesh(mesh, dim_names=None): `mesh` is a nested list or an
    ndarray of ranks (or an int: a one-process mesh)."""

    def __init__(self, mesh=None, dim_names=None, shape=None, process_ids=None):
        if mesh is None:
            if shape is None or process_ids is None:
                raise ValueError("ProcessMesh: give mesh, or shape and process_ids")
            mesh = np.asarray(process_ids).reshape(shape)
        if isinstance(mesh, ProcessMesh):
            dim_names = dim_names or mesh.dim_names
            mesh = mesh.mesh
        arr = np.array(mesh)
        if arr.ndim == 0:
            arr = arr.reshape(1)
        if arr.dtype.kind not in "iu":
            raise TypeError(f"ProcessMesh: the mesh must hold integer ranks, got dtype {arr.dtype}")
        names = list(dim_names) if dim_names is not None else [f"d{i}" for i in range(arr.ndim)]
        shape, ids, names = _C.dist.check_mesh(([int(s) for s in arr.shape], [int(i) for i in arr.reshape(-1)],
                                                [str(n) for n in names]))
        self._mesh = arr.astype(np.int64)
        self._shape = list(shape)
        self._process_ids = list(ids)
        self._dim_names = list(names)

    # ---- Paddle's accessors ----
    @property
    def mesh(self):
        return self._mesh

    @property
    def shape(self):
        return list(self._shape)

    @property
    def process_ids(self):
        return list(self._process_ids)

    @property
    def dim_names(self):
        return list(self._dim_names)

    @property
    def ndim(self):
        return len(self._shape)

    @property
    def size(self):
        return len(self._process_ids)

    def get_dim_size(self, dim):
        if isinstance(dim, str):
            dim = self._dim_names.index(dim)
        return self._shape[dim]

    def get_rank_by_dim_and_process_id(self, dim, process_id):
        if isinstance(dim, str):
            dim = self._dim_names.index(dim)
        return int(_C.dist.coordinate(self._core(), int(process_id))[dim])

    def get_mesh_with_dim(self, dim_name, index=None):
        """The mesh with `dim_name` moved first; with `index`, the sub-mesh at it."""
        if dim_name not in self._dim_names:
            raise ValueError(f"ProcessMesh.get_mesh_with_dim: no dim named {dim_name!r}; the mesh's dims are "
                             f"{self._dim_names}")
        axis = self._dim_names.index(dim_name)
        order = [axis] + [i for i in range(self.ndim) if i != axis]
        names = [self._dim_names[i] for i in order]
        arr = self._mesh.transpose(order)
        if index is None:
            return ProcessMesh(arr, names)
        if self.ndim > 1:
            return ProcessMesh(arr[index], names[1:])
        return ProcessMesh([arr[index]], names)

    def __getitem__(self, index):
        if isinstance(index, str):
            return self.get_mesh_with_dim(index)
        if isinstance(index, tuple):
            names = [self._dim_names[i] for i, item in enumerate(index) if isinstance(item, slice)]
            names += self._dim_names[len(index):]
            sub = self._mesh[index]
            return ProcessMesh(sub, names) if sub.ndim else ProcessMesh([int(sub)])
        if isinstance(index, slice):
            return ProcessMesh(self._mesh[index], self._dim_names)
        sub = self._mesh[index]
        return ProcessMesh(sub, self._dim_names[1:]) if sub.ndim else ProcessMesh([int(sub)])

    def contains(self, rank):
        return int(rank) in self._process_ids

    def __contains__(self, rank):
        return self.contains(rank)

    def _core(self):
        return (self._shape, self._process_ids, self._dim_names)

    @classmethod
    def _from_core(cls, core):
        shape, ids, names = core
        return cls(np.asarray(ids, dtype=np.int64).reshape(shape), names)

    def __eq__(self, other):
        # Paddle: the shape and the process ids, not the dim names.
        return isinstance(other, ProcessMesh) and self._shape == other._shape and \
            self._process_ids == other._process_ids

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash((tuple(self._shape), tuple(self._process_ids)))

    def __str__(self):
        return f"shape {self._shape}, process_ids {self._process_ids}, dim_names {self._dim_names}"

    def __repr__(self):
        return f"ProcessMesh(shape={self._shape}, process_ids={self._process_ids}, dim_names={self._dim_names})"
