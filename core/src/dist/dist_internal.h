// Internal interfaces between the parts of core/src/dist/ (not installed):
// dispatch.cpp and dist_tensor.cpp (the distributed tensor, its eager
// dispatch and autograd) call reshard.cpp (how one placement becomes
// another) which emits the host collective ops of collective_ops.cpp
// through the current builder, so the same code runs eagerly and records
// IR while tracing.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "oar/dist_tensor.h"
#include "oar/distributed.h"
#include "oar/store.h"

namespace oar::dist {

/// This rank's piece of the same global value (of `global_shape`) placed
/// as `to`, from its piece `local` placed as `from`. Works one mesh dim at
/// a time on N-d meshes, handles uneven chunks, and moves data between two
/// meshes by send/recv. Emits the collective host ops (c_all_reduce, ...)
/// through current_builder(). Not recorded for autograd: dist::reshard
/// records the distributed-level node. A rank in neither mesh returns an
/// empty piece.
Tensor reshard_local(const Tensor& local, const Shape& global_shape, const DistAttr& from, const DistAttr& to);

/// One step of a reshard on one mesh, along one mesh dim (Note [Reshard
/// plan] in reshard.cpp).
struct ReshardStep {
  enum class Kind : uint8_t {
    all_reduce,      ///< Partial -> Replicate
    reduce_scatter,  ///< Partial -> Shard(dim)
    all_gather,      ///< Shard(dim) -> Replicate
    all_to_all,      ///< Shard(dim) -> Shard(to_dim)
    slice,           ///< Replicate -> Shard(dim), local
    make_partial,    ///< Replicate -> Partial(reduce), local
  };
  Kind kind = Kind::all_reduce;
  int mesh_dim = 0;
  int64_t dim = -1;     ///< the tensor dim sharded or gathered
  int64_t to_dim = -1;  ///< all_to_all: the tensor dim newly sharded
  ReduceKind reduce = ReduceKind::sum;
  bool operator==(const ReshardStep&) const = default;
  /// "all_gather(mesh_dim=1, dim=0)".
  std::string str() const;
};

/// The steps that turn placements `from` into `to` on a mesh of
/// `mesh_shape` for a tensor of `global` shape (pure; every rank computes
/// the same plan). Throws when the placement counts do not match the mesh.
std::vector<ReshardStep> plan_reshard(const Shape& global, const std::vector<int64_t>& mesh_shape,
                                      const std::vector<Placement>& from, const std::vector<Placement>& to);

/// The communicator among global `ranks` (in this order; the caller must
/// be one of them), created on first use and cached for the process. Only
/// the members create it (the store keys derive from the rank list), so
/// groups of different meshes need no global creation order. Throws
/// naming the ranks when the default group is not initialised.
std::shared_ptr<distributed::Communicator> group_communicator(const std::vector<int>& ranks);

/// This process's global rank (0 when not initialised: one process).
/// Defined in dist_tensor.cpp (H1).
int global_rank();

/// Where `rank`'s piece of a tensor of `global` shape placed as `attr`
/// starts, per tensor dim (0 along dims that are not sharded); with
/// `local`, also stores its shape (dist::local_shape). A dim sharded over
/// several mesh dims is split in mesh-dim order. Defined in dist_tensor.cpp.
std::vector<int64_t> local_begin(const Shape& global, const DistAttr& attr, int rank, Shape* local = nullptr);

/// `rank`'s piece of `full` (the whole value, on every rank) placed as
/// `attr`, with its own storage: its chunk along every sharded dim; along
/// a Partial(sum) mesh dim coordinate 0 keeps the value and the others hold
/// zeros (a piece of Partial(avg/max/min) is the value itself). No
/// communication. Defined in dist_tensor.cpp.
Tensor replicated_piece(const Tensor& full, const DistAttr& attr, int rank);

/// reshard_local, except that a replicated `from` on the same mesh is cut
/// locally by replicated_piece (R -> S, R -> P) and from == to returns
/// `local`. Defined in dispatch.cpp; dist::reshard and the dispatch use it.
Tensor local_as(const Tensor& local, const Shape& global_shape, const DistAttr& from, const DistAttr& to);

/// Throws naming `what` when `mesh` names a process id >= the job's world
/// size. Defined in dist_tensor.cpp.
void check_mesh_exists(const std::string& what, const ProcessMesh& mesh);

/// Where group_communicator builds its communicators in a process whose
/// default group is not the C++ one (oar.distributed.init_parallel_env in
/// Python, a forked test): the job's store (kept alive here), the
/// collective device, this rank, the world size and the collective timeout
/// (-1: OAR_COLLECTIVE_TIMEOUT). Clears the cache of communicators; a null
/// store forgets the setting (the C++ default group is used again).
/// Without it, group_communicator uses the C++ default group. Defined in
/// collective_ops.cpp, as the two below.
void set_collective_env(std::shared_ptr<Store> store, Device device, int rank, int world_size,
                        int64_t timeout_ms = -1);
/// The rank given to set_collective_env, or -1 when it was not called
/// (global_rank uses it first).
int collective_env_rank();
/// The world size given to set_collective_env, or -1 when it was not called.
int collective_env_world_size();

/// Calls `op.host` (Note [Host ops] in collective_ops.cpp) and checks its
/// outputs against `out_meta`, the meta rule's; throws naming the op when
/// they differ. EagerBuilder and the executor run host ops through it.
std::vector<Tensor> run_host_op(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs,
                                std::span<const TensorMeta> out_meta);

}  // namespace oar::dist
