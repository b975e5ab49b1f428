// _C.distributed stores: TCP, file and in-process key-value stores. Timeouts
// are seconds (float); blocking calls release the GIL.
#include <cmath>
#include <limits>
#include <memory>

#include "binding.h"
#include "oar/store.h"

namespace oar_py {

namespace {

// Seconds (float) to milliseconds; negative or infinite waits "forever" (clamped by the store).
int64_t to_ms(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0 || seconds * 1000.0 > 9.0e15) {
    return std::numeric_limits<int64_t>::max() / 2;
  }
  return static_cast<int64_t>(std::llround(seconds * 1000.0));
}

// bytes or str (UTF-8) to the store's byte vector.
std::vector<uint8_t> value_bytes(const py::object& value) {
  if (py::isinstance<py::bytes>(value) || py::isinstance<py::str>(value) ||
      py::isinstance<py::bytearray>(value)) {
    std::string s = py::isinstance<py::bytearray>(value) ? std::string(py::bytearray(value))
                                                         : value.cast<std::string>();
    return std::vector<uint8_t>(s.begin(), s.end());
  }
  throw py::type_error("Store.set: value must be bytes or str, not " +
                       std::string(py::str(value.get_type().attr("__name__"))));
}

}  // namespace

void bind_stores(py::module_& dist) {
  py::class_<oar::Store, std::shared_ptr<oar::Store>>(
      dist, "Store", "A key-value store shared by the ranks of a job.")
      .def(
          "set",
          [](oar::Store& s, const std::string& key, const py::object& value) {
            std::vector<uint8_t> v = value_bytes(value);
            py::gil_scoped_release release;
            s.set(key, v);
          },
          py::arg("key"), py::arg("value"), "Stores value (bytes or str) under key.")
      .def(
          "get",
          [](oar::Store& s, const std::string& key, double timeout) {
            std::vector<uint8_t> v;
            {
              py::gil_scoped_release release;
              v = s.get(key, to_ms(timeout));
            }
            return py::bytes(reinterpret_cast<const char*>(v.data()), v.size());
          },
          py::arg("key"), py::arg("timeout") = 900.0,
          "Waits up to timeout seconds for key and returns its value as bytes.")
      .def(
          "add",
          [](oar::Store& s, const std::string& key, int64_t delta) {
            py::gil_scoped_release release;
            return s.add(key, delta);
          },
          py::arg("key"), py::arg("delta"),
          "Adds delta to the counter key (created at 0); returns the sum.")
      .def(
          "wait",
          [](oar::Store& s, const std::string& key, double timeout) {
            py::gil_scoped_release release;
            s.wait(key, to_ms(timeout));
          },
          py::arg("key"), py::arg("timeout") = 900.0,
          "Waits up to timeout seconds for key to exist.")
      .def(
          "check",
          [](oar::Store& s, const std::string& key) {
            py::gil_scoped_release release;
            return s.check(key);
          },
          py::arg("key"), "Whether key exists now (no wait).");

  py::class_<oar::TCPStore, oar::Store, std::shared_ptr<oar::TCPStore>>(
      dist, "TCPStore", "A store over TCP; is_master serves it in this process (port 0 picks one).")
      .def(py::init([](const std::string& host, int port, bool is_master, const std::string& job_id,
                       double timeout) {
             py::gil_scoped_release release;  // a client connects with retries
             return std::make_shared<oar::TCPStore>(host, port, is_master, job_id, to_ms(timeout));
           }),
           py::arg("host"), py::arg("port"), py::arg("is_master"), py::arg("job_id") = "",
           py::arg("timeout") = 900.0)
      .def_property_readonly("host", &oar::TCPStore::host)
      .def_property_readonly("port", &oar::TCPStore::port)
      .def_property_readonly("job_id", &oar::TCPStore::job_id)
      .def_property_readonly("is_master", &oar::TCPStore::serving)
      .def("__repr__", [](const oar::TCPStore& s) {
        return "TCPStore(" + s.host() + ":" + std::to_string(s.port()) + ", job_id='" + s.job_id() +
               "'" + (s.serving() ? ", serving)" : ")");
      });

  py::class_<oar::FileStore, oar::Store, std::shared_ptr<oar::FileStore>>(
      dist, "FileStore", "A store in a directory shared by the processes of one machine.")
      .def(py::init<std::string>(), py::arg("path"));

  py::class_<oar::InProcessStore, oar::Store, std::shared_ptr<oar::InProcessStore>>(
      dist, "InProcessStore", "A store inside this process.")
      .def(py::init<>());
}

}  // namespace oar_py
