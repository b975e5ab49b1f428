// oar._C.save_safetensors / load_safetensors: oar.save and oar.load use the
// core's one safetensors reader and writer (core/ir/src/safetensors.cpp), so
// Python and C++ accept and refuse the same files with the same sentences.
#include <cstring>

#include "binding.h"
#include "oar/ir/safetensors.h"

namespace oar_py {

void bind_safetensors(py::module_& m) {
  m.def(
      "save_safetensors",
      [](const std::string& path, const std::map<std::string, oar::Tensor>& tensors,
         const std::map<std::string, std::string>& metadata) {
        py::gil_scoped_release release;
        oar::ir::save_safetensors(path, tensors, metadata);
      },
      py::arg("path"), py::arg("tensors"), py::arg("metadata"),
      "Writes a safetensors file durably (temporary file, fsync, rename, fsync of the directory).");
  m.def(
      "load_safetensors",
      [](const std::string& path, const std::optional<std::string>& device) {
        oar::Device d = optional_device(device).value_or(oar::default_device());
        std::map<std::string, std::string> metadata;
        std::map<std::string, oar::Tensor> tensors;
        try {
          py::gil_scoped_release release;
          tensors = oar::ir::load_safetensors(path, d, &metadata);
        } catch (const oar::Error& e) {
          // A bad file is a bad value whatever the fault (never TypeError).
          if (e.code() != oar::ErrorCode::invalid_argument) throw;
          // Names inside the sentence come from the file: decode leniently.
          py::object message = py::reinterpret_steal<py::object>(
              PyUnicode_DecodeUTF8(e.what(), static_cast<Py_ssize_t>(std::strlen(e.what())), "backslashreplace"));
          PyErr_SetObject(PyExc_ValueError, message.ptr());
          throw py::error_already_set();
        }
        return py::make_tuple(tensors, metadata);
      },
      py::arg("path"), py::arg("device") = py::none(),
      "(tensors, metadata) of a safetensors file; a hostile file raises ValueError naming it and the fault.");
}

}  // namespace oar_py
