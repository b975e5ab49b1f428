// _C.distributed: which launcher started this process (detect_env), and the
// process-wide default group.
#include "binding.h"

namespace oar_py {

void bind_dist_env(py::module_& dist) { (void)dist; }

}  // namespace oar_py
