"""paddle.get_flags / set_flags, disable_signal_handler and LazyGuard.

oar keeps Paddle's global FLAGS_ as a table of known names with Paddle 3.3's
defaults, so scripts that read or set them run; the values are stored (and
read back) but oar's runtime does not change behaviour on them."""

# Paddle 3.3's defaults of the flags scripts commonly touch.
_FLAGS = {
    "FLAGS_eager_delete_tensor_gb": 0.0,
    "FLAGS_check_nan_inf": False,
    "FLAGS_check_nan_inf_level": 0,
    "FLAGS_use_mkldnn": False,
    "FLAGS_benchmark": False,
    "FLAGS_fraction_of_gpu_memory_to_use": 0.92,
    "FLAGS_allocator_strategy": "auto_growth",
    "FLAGS_use_stride_kernel": True,
    "FLAGS_enable_pir_api": True,
    "FLAGS_call_stack_level": 1,
    "FLAGS_max_inplace_grad_add": 0,
    "FLAGS_set_to_1d": False,
    "FLAGS_enable_api_kernel_fallback": True,
    "FLAGS_print_ir": False,
    "FLAGS_enable_auto_parallel_align_mode": False,
    "FLAGS_initial_cpu_memory_in_mb": 500,
    "FLAGS_paddle_num_threads": 1,
    "FLAGS_inner_op_parallelism": 0,
    "FLAGS_sort_sum_gradient": False,
    "FLAGS_tensor_operants_mode": "eager",
    "FLAGS_free_idle_chunk": False,
    "FLAGS_free_when_no_cache_hit": False,
    "FLAGS_log_memory_stats": False,
    "FLAGS_use_system_allocator": False,
    "FLAGS_eager_communication_connection": False,
    "FLAGS_enable_opt_get_features": False,
    "FLAGS_new_executor_sequential_run": False,
    "FLAGS_jit_engine_type": "Predictor",
    "FLAGS_enable_async_trace": False,
    "FLAGS_use_autotune": False,
    "FLAGS_save_static_runtime_data": False,
    "FLAGS_host_trace_level": 1,
    "FLAGS_cudnn_deterministic": False,
    "FLAGS_embedding_deterministic": 0,
    "FLAGS_cudnn_exhaustive_search": False,
    "FLAGS_conv_workspace_size_limit": 512,
}


def get_flags(flags):
    """The values of the named flags (a name or a list of names) as a dict."""
    names = [flags] if isinstance(flags, str) else flags
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        raise TypeError(f"get_flags: expected a flag name or a list of flag names, but got {flags!r}")
    for n in names:
        if n not in _FLAGS:
            raise ValueError(f"get_flags: flag {n} is not a flag oar knows, so it cannot get its value")
    return {n: _FLAGS[n] for n in names}


def set_flags(flags):
    """Sets flags from a dict {name: value}; each value takes its flag's type."""
    if not isinstance(flags, dict):
        raise TypeError(f"set_flags: expected a dict of flag names and values, but got {type(flags).__name__}")
    for n, v in flags.items():
        if n not in _FLAGS:
            raise ValueError(f"set_flags: flag {n} is not a flag oar knows, so it cannot set its value")
        kind = type(_FLAGS[n])
        try:
            value = kind(v) if kind is not bool or isinstance(v, (bool, int)) else {"true": True, "false": False}[
                str(v).lower()]
        except (TypeError, ValueError, KeyError):
            raise TypeError(f"set_flags: flag {n} holds a {kind.__name__}, but got {v!r}") from None
        _FLAGS[n] = value


def disable_signal_handler():
    """Paddle removes its own signal handlers here; oar installs none, so there is nothing to remove."""


class LazyGuard:
    """Paddle defers parameter initialisation inside this context. oar builds
    parameters normally (they are initialised at once), so layers made inside
    it are ready; Parameter.initialize() then has nothing left to do."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
