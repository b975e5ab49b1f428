// `_C.profiler`: the core's trace recorder (Note [Trace recorder] in
// core/src/runtime/profiler.cpp) for oar.profiler.
#include "oar/profiler.h"

#include "binding.h"

namespace oar_py {

void bind_profiler(py::module_& parent) {
  namespace prof = oar::profiler;
  py::module_ m =
      parent.def_submodule("profiler", "The core's trace recorder (oar.profiler uses it).");
  m.def("start", &prof::start, py::arg("record_shapes") = false,
        "Starts recording scopes (record_shapes: eager ops keep their input shapes and dtypes).");
  m.def("stop", &prof::stop, "Stops recording; scopes open now are recorded when they end.");
  m.def("recording", &prof::recording);
  m.def("now_ns", &prof::now_ns, "The steady clock of the events, in nanoseconds.");
  m.def("thread_id", &prof::thread_id,
        "This thread's id in the events (1, 2, ... in order of first use).");
  m.def(
      "collect",
      [] {
        std::vector<prof::Event> events;
        {
          py::gil_scoped_release release;
          events = prof::collect();
        }
        py::list out;
        for (const prof::Event& e : events) {
          out.append(py::make_tuple(e.name, e.category, e.device, e.stream, e.thread, e.start_ns,
                                    e.end_ns, e.bytes, e.input_shapes, e.input_dtypes));
        }
        return out;
      },
      "Moves out the recorded events: (name, category, device, stream, thread, start_ns, end_ns, "
      "bytes, input_shapes, input_dtypes).");
  py::class_<prof::RecordEvent>(m, "RecordEvent", "A scope of the trace: begin() ... end().")
      .def(py::init<>())
      .def(
          "begin",
          [](prof::RecordEvent& r, const std::string& name, const std::string& category) {
            r.begin(name, category);
          },
          py::arg("name"), py::arg("category") = "UserDefined")
      .def("end", &prof::RecordEvent::end)
      .def_property_readonly("active", &prof::RecordEvent::active);
}

}  // namespace oar_py
