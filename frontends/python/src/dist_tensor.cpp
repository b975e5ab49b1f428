// _C.dist: the distributed tensor of semi-auto parallel (oar/dist_tensor.h).
// Meshes cross as (shape, process_ids, dim_names) and placements as
// (kind, dim, reduce) tuples; oar.distributed.auto_parallel wraps them in
// Paddle's classes (ProcessMesh, Shard, Replicate, Partial).
#include "oar/dist_tensor.h"

#include <tuple>

#include "binding.h"

// From core/src/dist/dist_internal.h (not on this target's include path).
namespace oar::dist {
void set_collective_env(std::shared_ptr<Store> store, Device device, int rank, int world_size,
                        int64_t timeout_ms);
int global_rank();
}  // namespace oar::dist

namespace oar_py {

namespace {

using MeshTuple = std::tuple<std::vector<int64_t>, std::vector<int>, std::vector<std::string>>;
// kind: 0 replicate, 1 shard, 2 partial; reduce: 0 sum, 1 avg, 2 max, 3 min (oar::ReduceKind).
using PlacementTuple = std::tuple<int, int64_t, int>;

oar::ProcessMesh mesh_of(const MeshTuple& m) {
  return oar::ProcessMesh(std::get<0>(m), std::get<1>(m), std::get<2>(m));
}

MeshTuple mesh_tuple(const oar::ProcessMesh& m) {
  return {m.shape(), m.process_ids(), m.dim_names()};
}

std::vector<oar::Placement> placements_of(const std::vector<PlacementTuple>& ps) {
  std::vector<oar::Placement> out;
  for (const auto& [kind, dim, reduce] : ps) {
    if (kind < 0 || kind > 2)
      throw py::value_error("placement kind " + std::to_string(kind) + " is not 0, 1 or 2");
    if (reduce < 0 || reduce > 3)
      throw py::value_error("placement reduce " + std::to_string(reduce) + " is not 0..3");
    oar::Placement p;
    p.kind = static_cast<oar::Placement::Kind>(kind);
    p.dim = kind == 1 ? dim : -1;
    p.reduce = static_cast<oar::ReduceKind>(reduce);
    out.push_back(p);
  }
  return out;
}

std::vector<PlacementTuple> placement_tuples(const std::vector<oar::Placement>& ps) {
  std::vector<PlacementTuple> out;
  for (const auto& p : ps)
    out.emplace_back(static_cast<int>(p.kind), p.dim, static_cast<int>(p.reduce));
  return out;
}

}  // namespace

void bind_dist_tensor(py::module_& parent) {
  py::module_ m =
      parent.def_submodule("dist", "Semi-auto parallel: distributed tensors (oar/dist_tensor.h).");
  m.def(
      "check_mesh", [](const MeshTuple& mesh) { return mesh_tuple(mesh_of(mesh)); },
      py::arg("mesh"), "Validates a mesh; returns it with default dim names filled in.");
  m.def("mesh_str", [](const MeshTuple& mesh) { return mesh_of(mesh).str(); });
  m.def("coordinate",
        [](const MeshTuple& mesh, int rank) { return mesh_of(mesh).coordinate(rank); });
  m.def("group_along", [](const MeshTuple& mesh, int rank, int dim) {
    return mesh_of(mesh).group_along(rank, dim);
  });
  m.def(
      "get_mesh_with_dim",
      [](const MeshTuple& mesh, const std::string& name, int64_t index) {
        return mesh_tuple(mesh_of(mesh).get_mesh_with_dim(name, index));
      },
      py::arg("mesh"), py::arg("dim_name"), py::arg("index") = -1);
  m.def("shard_begin", &oar::dist::shard_begin);
  m.def("shard_length", &oar::dist::shard_length);
  m.def("local_shape", [](const std::vector<int64_t>& global, const MeshTuple& mesh,
                          const std::vector<PlacementTuple>& ps, int rank) {
    return oar::dist::local_shape(global, oar::DistAttr{mesh_of(mesh), placements_of(ps)}, rank);
  });
  m.def("check_placements", [](const std::string& what, const MeshTuple& mesh,
                               const std::vector<PlacementTuple>& ps, int64_t rank) {
    oar::dist::check_placements(what, mesh_of(mesh), placements_of(ps), rank);
  });
  m.def("placement_str", [](const PlacementTuple& p) { return placements_of({p})[0].str(); });

  m.def(
      "_set_collective_env",
      [](std::shared_ptr<oar::Store> store, const std::string& device, int rank, int world,
         double timeout_s) {
        oar::dist::set_collective_env(std::move(store), oar::parse_device(device), rank, world,
                                      timeout_s < 0 ? -1 : static_cast<int64_t>(timeout_s * 1000));
      },
      py::arg("store"), py::arg("device"), py::arg("rank"), py::arg("world_size"),
      py::arg("timeout_s") = -1.0,
      "Where the collectives of reshard build their communicators (the Python default group's "
      "store and device).");
  m.def("_global_rank", &oar::dist::global_rank);
  // Note [Collective counts] in core/src/dist/collective_ops.cpp (the integrator's benchmark).
  m.def("collective_stats", [] {
    py::dict out;
    for (const auto& [name, c] : oar::dist::collective_stats()) out[py::str(name)] = py::make_tuple(c.calls, c.bytes);
    return out;
  }, "Per host collective op: (calls, input bytes) this process ran since the start or the last reset.");
  m.def("reset_collective_stats", &oar::dist::reset_collective_stats);
  m.def(
      "_set_grad_placements",
      [](oar::Tensor& t, const std::vector<PlacementTuple>& ps) {
        auto& meta = t.impl().autograd;
        if (!meta) meta = std::make_shared<oar::AutogradMeta>();
        std::vector<oar::Placement> placements = placements_of(ps);
        if (!placements.empty()) {
          const oar::DistAttr& a = oar::dist::dist_attr(t);
          oar::dist::check_placements("_set_grad_placements", a.mesh, placements, t.dim());
        }
        meta->grad_placements = std::move(placements);
      },
      py::arg("tensor"), py::arg("placements"),
      "Places a distributed leaf's gradient so when it arrives (an empty list: like the leaf).");
  m.def("is_dist", &oar::dist::is_dist, py::arg("tensor"));
  m.def(
      "dist_attr",
      [](const oar::Tensor& t) {
        const oar::DistAttr& a = oar::dist::dist_attr(t);
        return std::make_tuple(mesh_tuple(a.mesh), placement_tuples(a.placements));
      },
      py::arg("tensor"), "(mesh, placements) of a distributed tensor.");
  m.def("local_value", &oar::dist::local_value, py::arg("tensor"));
  m.def(
      "make_dist",
      [](const oar::Tensor& local, const MeshTuple& mesh, const std::vector<PlacementTuple>& ps,
         const std::optional<std::vector<int64_t>>& global_shape) {
        return oar::dist::make_dist(local, oar::DistAttr{mesh_of(mesh), placements_of(ps)},
                                    global_shape);
      },
      py::arg("local"), py::arg("mesh"), py::arg("placements"),
      py::arg("global_shape") = py::none(),
      "A distributed tensor from this rank's piece, without communication and without autograd.");
  m.def(
      "shard_tensor",
      [](const oar::Tensor& data, const MeshTuple& mesh, const std::vector<PlacementTuple>& ps) {
        return oar::dist::shard_tensor(data, mesh_of(mesh), placements_of(ps));
      },
      py::arg("data"), py::arg("mesh"), py::arg("placements"));
  m.def(
      "dtensor_from_local",
      [](const oar::Tensor& local, const MeshTuple& mesh, const std::vector<PlacementTuple>& ps,
         const std::optional<std::vector<int64_t>>& global_shape) {
        return oar::dist::dtensor_from_local(local, mesh_of(mesh), placements_of(ps), global_shape);
      },
      py::arg("local"), py::arg("mesh"), py::arg("placements"),
      py::arg("global_shape") = py::none());
  m.def(
      "reshard",
      [](const oar::Tensor& t, const MeshTuple& mesh, const std::vector<PlacementTuple>& ps) {
        py::gil_scoped_release release;
        return oar::dist::reshard(t, mesh_of(mesh), placements_of(ps));
      },
      py::arg("tensor"), py::arg("mesh"), py::arg("placements"));
  m.def(
      "unshard",
      [](const oar::Tensor& t) {
        py::gil_scoped_release release;
        return oar::dist::unshard(t);
      },
      py::arg("tensor"));
}

}  // namespace oar_py
