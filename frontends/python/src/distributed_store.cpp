// _C.distributed stores: TCP, file and in-process key-value stores.
#include "binding.h"

namespace oar_py {

void bind_stores(py::module_& dist) { (void)dist; }

}  // namespace oar_py
