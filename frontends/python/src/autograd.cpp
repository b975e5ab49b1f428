// oar._C autograd: grad (paddle.grad), grad-mode scopes (no_grad).
#include <pybind11/stl.h>

#include <memory>

#include "binding.h"

namespace oar_py {

namespace {

// A grad-mode scope entered and left from Python (`with oar.no_grad():`).
// Scopes nest; each restores the mode it found.
class GradModeScope {
 public:
  explicit GradModeScope(bool enabled) : enabled_(enabled) {}
  void enter() { scopes_.push_back(std::make_unique<oar::GradMode>(enabled_)); }
  void exit() {
    if (!scopes_.empty()) scopes_.pop_back();
  }

 private:
  bool enabled_;
  std::vector<std::unique_ptr<oar::GradMode>> scopes_;
};

}  // namespace

void bind_autograd(py::module_& m) {
  m.def("grad", [](const std::vector<oar::Tensor>& outputs, const std::vector<oar::Tensor>& inputs,
                   const std::vector<std::optional<oar::Tensor>>& grad_outputs, bool create_graph,
                   std::optional<bool> retain_graph, bool allow_unused) {
    std::vector<oar::Tensor> gouts;
    for (const auto& g : grad_outputs) gouts.push_back(g.value_or(oar::Tensor()));
    auto grads = oar::grad(outputs, inputs, gouts, create_graph, retain_graph, allow_unused);
    std::vector<std::optional<oar::Tensor>> out;
    for (auto& g : grads) {
      if (g.defined()) out.emplace_back(std::move(g));
      else out.emplace_back(std::nullopt);
    }
    return out;
  }, py::arg("outputs"), py::arg("inputs"), py::arg("grad_outputs") = std::vector<std::optional<oar::Tensor>>{},
     py::arg("create_graph") = false, py::arg("retain_graph") = py::none(), py::arg("allow_unused") = false);
  m.def("is_grad_enabled", &oar::grad_enabled);
  py::class_<GradModeScope>(m, "GradModeScope")
      .def(py::init<bool>(), py::arg("enabled"))
      .def("__enter__", [](GradModeScope& s) { s.enter(); })
      .def("__exit__", [](GradModeScope& s, py::args) { s.exit(); });
  m.def("live_autograd_nodes", &oar::live_autograd_nodes);
  // The Python function is held with the GIL and released with it (the
  // pass may end on a thread where Python is finalizing only at exit).
  m.def("queue_backward_callback", [](py::function fn) {
    auto holder = std::shared_ptr<py::function>(new py::function(std::move(fn)), [](py::function* p) {
      if (Py_IsInitialized()) {
        py::gil_scoped_acquire gil;
        delete p;
      }
    });
    oar::queue_backward_callback([holder] {
      py::gil_scoped_acquire gil;
      (*holder)();
    });
  }, py::arg("fn"), "Runs fn() once when the backward pass running on this thread finishes (call from a hook).");
  m.def("backward_running", &oar::backward_running);
}

}  // namespace oar_py
