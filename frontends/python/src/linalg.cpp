// oar._C.linalg: the LAPACK ops of oar/ops.h (core/src/ops/linalg_lapack.cpp),
// with the core's argument names; Paddle's signatures are in oar/linalg.py.
#include "binding.h"

namespace oar_py {

void bind_linalg(py::module_& parent) {
  py::module_ m = parent.def_submodule("linalg", "The core's linear algebra ops (LAPACK).");
  m.def("inv", &oar::inv, py::arg("x"));
  m.def("solve", &oar::solve, py::arg("x"), py::arg("y"));
  m.def("det", &oar::det, py::arg("x"));
  m.def("slogdet", &oar::slogdet, py::arg("x"));
  m.def("cholesky", &oar::cholesky, py::arg("x"), py::arg("upper") = false);
  m.def("qr", &oar::qr, py::arg("x"), py::arg("mode") = "reduced");
  m.def("svd", &oar::svd, py::arg("x"), py::arg("full_matrices") = false);
  m.def("eigh", &oar::eigh, py::arg("x"), py::arg("UPLO") = "L");
  m.def("triangular_solve", &oar::triangular_solve, py::arg("x"), py::arg("y"), py::arg("upper") = true,
        py::arg("transpose") = false, py::arg("unitriangular") = false);
  m.def("eig", &oar::eig, py::arg("x"));
  m.def("lstsq", &oar::lstsq, py::arg("x"), py::arg("y"), py::arg("rcond") = -1.0);
  m.def("pinv", &oar::pinv, py::arg("x"), py::arg("rcond") = 1e-15, py::arg("hermitian") = false);
  m.def("matrix_power", &oar::matrix_power, py::arg("x"), py::arg("n"));
}

}  // namespace oar_py
