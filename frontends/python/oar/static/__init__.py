"""oar.static (paddle.static): InputSpec, and Paddle's static-graph API over
oar's IR: Program, program_guard, data, Executor, optimizer.minimize
(Note [Static programs] in recorder.py), saving and loading programs."""
from types import SimpleNamespace

from .. import control_flow as _control_flow
from .input_spec import InputSpec
from .program import (Program, program_guard, data, default_main_program, default_startup_program, enable_static,
                      disable_static, in_dynamic_mode, in_static_mode)
from .executor import (Executor, CompiledProgram, global_scope, save, load, save_inference_model,
                       load_inference_model)
from .layers import fc, accuracy
from ..framework import Tensor as Variable  # static variables are oar Tensors


def cpu_places(device_count=None):
    from ..framework import CPUPlace
    return [CPUPlace()] * (device_count or 1)


# ``oar.static.nn``: Paddle's home of the control-flow functions and fc.
nn = SimpleNamespace(cond=_control_flow.cond, while_loop=_control_flow.while_loop, fc=fc)

__all__ = ["InputSpec", "nn", "Program", "program_guard", "data", "default_main_program", "default_startup_program",
           "Executor", "CompiledProgram", "global_scope", "save", "load", "save_inference_model",
           "load_inference_model", "Variable", "cpu_places", "accuracy"]
