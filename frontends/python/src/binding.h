// Shared declarations of the oar._C extension (one file per area).
#pragma once

#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "oar/oar.h"

namespace oar_py {

namespace py = pybind11;

/// Parses an optional "type[:index]" string; none means the default device.
std::optional<oar::Device> optional_device(const std::optional<std::string>& text);
/// "cpu" for cpu:0 (as paddle.get_device), else "type:index".
std::string device_string(const oar::Device& device);

void bind_errors(py::module_& m);
void bind_runtime(py::module_& m);
void bind_tensor(py::module_& m);
void bind_ops(py::module_& m);
void bind_autograd(py::module_& m);
void bind_ir(py::module_& m);
void bind_safetensors(py::module_& m);
void bind_dlpack(py::module_& m);
/// `_C.linalg`: the LAPACK ops (linalg.cpp).
void bind_linalg(py::module_& m);
/// `_C.distributed`: communicators and work handles (distributed.cpp);
/// it calls bind_stores for the stores (distributed_store.cpp).
void bind_distributed(py::module_& m);
void bind_stores(py::module_& dist);
/// `_C.distributed.detect_env` and the C++ process-group API (distributed_env.cpp).
void bind_dist_env(py::module_& dist);
/// `_C.dist`: distributed tensors of semi-auto parallel (dist_tensor.cpp).
void bind_dist_tensor(py::module_& m);
/// `_C.profiler`: the trace recorder (profiler.cpp).
void bind_profiler(py::module_& m);

}  // namespace oar_py
