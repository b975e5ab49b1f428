// oar._C: the pybind11 extension over liboar_core.so. The Paddle-style API
// is the pure-Python package around it (frontends/python/oar).
#include "binding.h"

#include <cctype>

namespace oar_py {

std::optional<oar::Device> optional_device(const std::optional<std::string>& text) {
  if (!text || text->empty()) return std::nullopt;
  return oar::parse_device(*text);
}

std::string device_string(const oar::Device& device) { return device.str(); }

namespace {

bool mentions_dtype_only(const std::string& message) {
  return message.find("dtype") != std::string::npos && message.find("shape") == std::string::npos;
}

}  // namespace

// oar::Error -> the Python exception a Paddle user expects; the core's
// sentence is the message. By code: invalid_argument -> ValueError
// (TypeError when only a dtype is wrong); out_of_memory ->
// ResourceExhaustedError, a MemoryError subclass as in Paddle, so `except
// MemoryError` keeps working and a device that is full (the allocator, or a
// kernel whose scratch_alloc failed: Note [Error codes from plugins]) is
// told apart from a bad argument; unsupported -> UnsupportedError (a
// RuntimeError); others -> RuntimeError.
void bind_errors(py::module_& m) {
  static py::exception<oar::Error> unsupported(m, "UnsupportedError", PyExc_RuntimeError);
  static py::exception<oar::Error> resource_exhausted(m, "ResourceExhaustedError", PyExc_MemoryError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const oar::Error& e) {
      switch (e.code()) {
        case oar::ErrorCode::invalid_argument:
          if (mentions_dtype_only(e.what())) PyErr_SetString(PyExc_TypeError, e.what());
          else PyErr_SetString(PyExc_ValueError, e.what());
          return;
        case oar::ErrorCode::out_of_memory: PyErr_SetString(resource_exhausted.ptr(), e.what()); return;
        case oar::ErrorCode::unsupported: PyErr_SetString(unsupported.ptr(), e.what()); return;
        default: PyErr_SetString(PyExc_RuntimeError, e.what()); return;
      }
    }
  });
}

void bind_runtime(py::module_& m) {
  m.def("get_device", [] { return device_string(oar::default_device()); },
        "The default device as 'type:index'.");
  m.def("set_device", [](const std::string& text) {
    oar::Device d = oar::parse_device(text);
    oar::set_default_device(d);
    return device_string(d);
  }, py::arg("device"));
  m.def("device_types", [] { return oar::Runtime::global().device_types(); });
  m.def("device_count", [](const std::string& type) { return oar::Runtime::global().device_count(type); },
        py::arg("type"));
  m.def("devices", [] {
    std::vector<std::string> out;
    for (const auto& d : oar::Runtime::global().devices()) out.push_back(d.str());
    return out;
  });
  m.def("plugins", [] {
    py::list out;
    for (const auto& p : oar::Runtime::global().plugins()) {
      py::dict d;
      d["path"] = p.path;
      d["name"] = p.name;
      d["abi"] = std::to_string(p.abi_major) + "." + std::to_string(p.abi_minor);
      d["device_types"] = p.device_types;
      d["num_kernels"] = p.num_kernels;
      out.append(d);
    }
    return out;
  });
  m.def("skipped_plugins", [] {
    py::list out;
    for (const auto& s : oar::Runtime::global().skipped()) out.append(py::make_tuple(s.path, s.reason));
    return out;
  });
  m.def("synchronize", [](const std::optional<std::string>& device) {
    oar::Runtime::global().synchronize(optional_device(device).value_or(oar::default_device()));
  }, py::arg("device") = py::none());
  m.def("memory_stats", [](const std::optional<std::string>& device) {
    auto s = oar::Runtime::global().allocator_stats(optional_device(device).value_or(oar::default_device()));
    py::dict d;
    d["allocated"] = s.allocated;
    d["reserved"] = s.reserved;
    d["peak_allocated"] = s.peak_allocated;
    d["num_device_mallocs"] = s.num_device_mallocs;
    return d;
  }, py::arg("device") = py::none());
  m.def("seed", [](uint64_t value) { oar::seed(value); }, py::arg("seed"));
  m.def("random_state", &oar::random_state, "The global generator's (seed, offset).");
  m.def("set_random_state", &oar::set_random_state, py::arg("seed"), py::arg("offset"));
}

}  // namespace oar_py

PYBIND11_MODULE(_C, m) {
  m.doc() = "oar core bindings (use the `oar` package)";
  oar_py::bind_errors(m);
  oar_py::bind_runtime(m);
  oar_py::bind_tensor(m);
  oar_py::bind_autograd(m);
  oar_py::bind_ops(m);
  oar_py::bind_linalg(m);
  oar_py::bind_ir(m);
  oar_py::bind_safetensors(m);
  oar_py::bind_dlpack(m);
  oar_py::bind_distributed(m);
  oar_py::bind_dist_tensor(m);
  oar_py::bind_profiler(m);
}
