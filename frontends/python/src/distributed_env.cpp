// _C.distributed: which launcher started this process (detect_env). The
// Python default group (oar/distributed/parallel.py) is built from the
// stores and communicators bound in distributed_store.cpp / distributed.cpp.
#include "binding.h"
#include "oar/dist_env.h"

namespace oar_py {

void bind_dist_env(py::module_& dist) {
  dist.def(
      "detect_env",
      [] {
        oar::distributed::DistEnv e = oar::distributed::detect_dist_env();
        py::dict d;
        d["rank"] = e.rank;
        d["world_size"] = e.world_size;
        d["local_rank"] = e.local_rank;
        d["local_world_size"] = e.local_world_size;
        d["master_addr"] = e.master_addr;
        d["master_port"] = e.master_port;
        d["job_id"] = e.job_id;
        d["source"] = e.source;
        return d;
      },
      "This process's rank, world size, store address and launcher family, read from the "
      "environment "
      "(Note [Launcher variables] in core/src/runtime/dist_env.cpp). A malformed variable raises "
      "ValueError.");
  dist.def(
      "first_slurm_host",
      [](const std::string& nodelist) { return oar::distributed::first_slurm_host(nodelist); },
      py::arg("nodelist"), "The first host of a Slurm node list ('node[03-05],gpu1' -> 'node03').");
}

}  // namespace oar_py
