"""paddle.distributed.Strategy: the configuration dist.to_static reads.

Strategy(config=None) takes an optional dict of sections ({"pipeline":
{"enable": True, ...}, ...}); each section is an attribute with Paddle's
field names and defaults. Unknown sections or fields are an error naming
them (a misspelt option silently ignored would train something else)."""
import copy

__all__ = ["Strategy"]


class _Config:
    """One section: attributes with defaults; setting an unknown one is an error."""

    _section = ""
    _defaults = {}

    def __init__(self, config=None):
        for key, value in self._defaults.items():
            object.__setattr__(self, key, copy.deepcopy(value))
        for key, value in (config or {}).items():
            setattr(self, key, value)

    def __setattr__(self, key, value):
        if key not in self._defaults:
            raise AttributeError(f"dist.Strategy: the '{self._section}' section has no option '{key}'; its options "
                                 f"are {', '.join(sorted(self._defaults))}")
        object.__setattr__(self, key, value)

    def to_dict(self):
        return {key: getattr(self, key) for key in self._defaults}

    def __repr__(self):
        return f"{self._section}: {self.to_dict()}"


class PipelineConfig(_Config):
    """strategy.pipeline: enable, schedule_mode ("FThenB" or "1F1B"),
    micro_batch_size, accumulate_steps (micro-batches per step), pp_degree."""
    _section = "pipeline"
    _defaults = {"enable": False, "schedule_mode": "1F1B", "pp_degree": 1, "micro_batch_size": 1,
                 "accumulate_steps": 1}


class ShardingConfig(_Config):
    """strategy.sharding: enable, stage (1-3), degree."""
    _section = "sharding"
    _defaults = {"enable": False, "stage": 1, "degree": 8}


class GradientMergeConfig(_Config):
    _section = "gradient_merge"
    _defaults = {"enable": False, "k_steps": 1, "avg": True}


class AmpConfig(_Config):
    _section = "amp"
    _defaults = {"enable": False, "dtype": "float16", "level": "O1"}


class RecomputeConfig(_Config):
    _section = "recompute"
    _defaults = {"enable": False}


_SECTIONS = {"pipeline": PipelineConfig, "sharding": ShardingConfig, "gradient_merge": GradientMergeConfig,
             "amp": AmpConfig, "recompute": RecomputeConfig}


class Strategy:
    """Configs for dist.to_static: .pipeline, .sharding, .gradient_merge,
    .amp, .recompute (Paddle's sections and defaults); .print_program (an
    oar addition: print the dense and per-rank programs when they are
    built, as OAR_LOG_LEVEL=info does)."""

    def __init__(self, config=None):
        if config is not None and not isinstance(config, dict):
            raise ValueError(f"dist.Strategy: expected a dict of sections, got {type(config).__name__}")
        config = copy.deepcopy(config or {})
        self.print_program = bool(config.pop("print_program", False))
        for name in config:
            if name not in _SECTIONS:
                raise ValueError(f"dist.Strategy: unknown section '{name}'; the sections are "
                                 f"{', '.join(sorted(_SECTIONS))}, print_program")
        for name, cls in _SECTIONS.items():
            setattr(self, "_" + name, cls(config.get(name)))

    pipeline = property(lambda self: self._pipeline)
    sharding = property(lambda self: self._sharding)
    gradient_merge = property(lambda self: self._gradient_merge)
    amp = property(lambda self: self._amp)
    recompute = property(lambda self: self._recompute)

    def __repr__(self):
        sections = ", ".join(repr(getattr(self, "_" + n)) for n in _SECTIONS)
        return f"Strategy({sections}, print_program={self.print_program})"
