// _C.distributed: communicators over a device's collectives, work handles.
#include "binding.h"

namespace oar_py {

void bind_distributed(py::module_& m) {
  py::module_ dist = m.def_submodule("distributed", "collective communication (oar.distributed's engine)");
  bind_stores(dist);
  bind_dist_env(dist);
}

}  // namespace oar_py
