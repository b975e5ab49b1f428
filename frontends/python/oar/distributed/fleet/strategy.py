"""fleet.DistributedStrategy: Paddle's strategy object, accepted so scripts run.

Data parallel reads fuse_grad_size_in_MB, last_comm_group_size_MB and
find_unused_parameters. The other fields keep what a script sets and are
ignored; a misspelled field is an error, as in Paddle."""


class DistributedStrategy:
    _fields = {
        "fuse_grad_size_in_MB": 32,
        "last_comm_group_size_MB": 1,
        "find_unused_parameters": False,
        "fuse_all_reduce_ops": True,
        "hybrid_configs": None,
        "amp": False,
        "amp_configs": None,
        "recompute": False,
        "recompute_configs": None,
        "sharding": False,
        "sharding_configs": None,
        "pipeline": False,
        "pipeline_configs": None,
        "tensor_parallel": False,
        "tensor_parallel_configs": None,
        "gradient_merge": False,
        "gradient_merge_configs": None,
        "lars": False,
        "lamb": False,
        "dgc": False,
        "nccl_comm_num": 1,
        "sync_nccl_allreduce": True,
        "without_graph_optimization": True,
        "heter_ccl_mode": False,
        "a_sync": False,
        "a_sync_configs": None,
    }

    def __init__(self):
        for name, default in self._fields.items():
            object.__setattr__(self, name, dict(default) if isinstance(default, dict) else default)
        object.__setattr__(self, "hybrid_configs", {"dp_degree": -1, "mp_degree": 1, "pp_degree": 1,
                                                    "sharding_degree": 1})

    def __setattr__(self, name, value):
        if name not in self._fields:
            raise AttributeError(f"DistributedStrategy: no field '{name}' (known: {', '.join(sorted(self._fields))})")
        if name.endswith("_configs") and isinstance(value, dict) and isinstance(getattr(self, name), dict):
            merged = dict(getattr(self, name))
            merged.update(value)
            value = merged
        object.__setattr__(self, name, value)

    def __repr__(self):
        changed = {k: getattr(self, k) for k, v in self._fields.items() if getattr(self, k) != v and v is not None}
        return f"DistributedStrategy({', '.join(f'{k}={v!r}' for k, v in changed.items())})"
