/// \file dist_tensor.h
/// Semi-automatic parallelism (Paddle 3's auto_parallel): a ProcessMesh of
/// ranks, distributed tensors placed on it (Shard / Replicate / Partial per
/// mesh dimension, spmd.h), reshard between placements, and the eager
/// dispatch that runs an op's SPMD rule, reshards its inputs, runs the
/// local kernel and labels the outputs (Note [Distributed dispatch] in
/// core/src/dist/dispatch.cpp).
///
/// A distributed tensor is an ordinary Tensor whose TensorImpl has `dist`
/// set: shape() and dtype() are the GLOBAL ones, there is no storage, and
/// dist::local_value() is this rank's piece (an ordinary tensor). Every
/// rank of the mesh holds one; a rank outside the mesh holds one with an
/// empty local piece (shape 0 along every dim it does not have).
///
/// Shard chunks follow torch.chunk / Paddle: along a dim of size n split
/// over m ranks, rank i holds [i*c, min(n, (i+1)*c)) with c = ceil(n/m)
/// (so the last ranks may hold fewer, or none).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oar/op.h"
#include "oar/spmd.h"
#include "oar/tensor.h"

namespace oar {

/// An N-d array of global ranks (Paddle's ProcessMesh).
class ProcessMesh {
 public:
  ProcessMesh() = default;
  /// `process_ids` in row-major order; their count must be the product of
  /// `shape`; `dim_names` defaults to "d0", "d1", ... Throws oar::Error
  /// (invalid_argument) naming what is wrong.
  ProcessMesh(std::vector<int64_t> shape, std::vector<int> process_ids, std::vector<std::string> dim_names = {});
  /// A 1-d mesh over `process_ids`.
  static ProcessMesh from_ids(std::vector<int> process_ids, std::string dim_name = "d0");

  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int>& process_ids() const { return process_ids_; }
  const std::vector<std::string>& dim_names() const { return dim_names_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  int64_t size() const { return static_cast<int64_t>(process_ids_.size()); }
  /// The mesh dim called `name`; throws naming the mesh's dims.
  int dim_of(std::string_view name) const;
  bool contains(int rank) const;
  /// `rank`'s coordinate (one index per mesh dim); throws when not in the mesh.
  std::vector<int64_t> coordinate(int rank) const;
  /// The ranks that differ from `rank` only along `mesh_dim`, in mesh order
  /// (the group a collective along that mesh dim runs over).
  std::vector<int> group_along(int rank, int mesh_dim) const;
  /// Paddle's get_mesh_with_dim: the mesh with `dim_name` moved first; with
  /// `index` >= 0, the sub-mesh at that index along it (one dim fewer).
  ProcessMesh get_mesh_with_dim(std::string_view dim_name, int64_t index = -1) const;
  bool operator==(const ProcessMesh& other) const;
  /// "ProcessMesh(shape=[2, 2], process_ids=[0, 1, 2, 3], dim_names=[dp, mp])".
  std::string str() const;

 private:
  std::vector<int64_t> shape_;
  std::vector<int> process_ids_;
  std::vector<std::string> dim_names_;
};

/// Where a distributed tensor lives and how: one placement per mesh dim.
struct DistAttr {
  ProcessMesh mesh;
  std::vector<Placement> placements;
  bool operator==(const DistAttr&) const = default;
  /// "mesh=ProcessMesh(...), placements=[Shard(0), Replicate()]".
  std::string str() const;
};

/// What TensorImpl::dist holds.
struct DistInfo {
  DistAttr attr;
  Tensor local;  ///< this rank's piece (ordinary, or symbolic while tracing)
};

namespace dist {

/// Rank `index`'s chunk of a dim of `size` split in `parts` (see the file comment).
int64_t shard_begin(int64_t size, int64_t parts, int64_t index);
int64_t shard_length(int64_t size, int64_t parts, int64_t index);
/// `rank`'s local shape of a tensor of `global` shape placed as `attr`
/// (a dim sharded over several mesh dims is split in mesh-dim order).
Shape local_shape(const Shape& global, const DistAttr& attr, int rank);
/// Throws oar::Error naming `what` (an op or API and the tensor) when
/// `placements` do not fit `mesh` (one per mesh dim) or a tensor of `rank_`
/// dims (Shard(d) with d outside [0, rank_)).
void check_placements(const std::string& what, const ProcessMesh& mesh, const std::vector<Placement>& placements,
                      int64_t tensor_rank);

bool is_dist(const Tensor& t);
/// Throws naming `t` when it is not distributed.
const DistAttr& dist_attr(const Tensor& t);
/// This rank's piece.
Tensor local_value(const Tensor& t);
/// A distributed tensor from this rank's piece, without communication.
/// `global_shape` defaults to the local shape with every sharded dim
/// multiplied by its mesh dim size (exact when shards are even).
Tensor make_dist(Tensor local, DistAttr attr, std::optional<Shape> global_shape = std::nullopt);

/// Paddle's shard_tensor: every rank passes the same full tensor and keeps
/// its piece (Shard: its chunk; Partial: rank coordinate 0 along that mesh
/// dim keeps the value, the others hold zeros). Keeps requires_grad; the
/// result is a leaf when `data` is.
Tensor shard_tensor(const Tensor& data, const ProcessMesh& mesh, std::vector<Placement> placements);
/// Paddle's dtensor_from_local.
Tensor dtensor_from_local(const Tensor& local, const ProcessMesh& mesh, std::vector<Placement> placements,
                          std::optional<Shape> global_shape = std::nullopt);
/// Paddle's reshard: the same global value placed as `placements` on
/// `mesh` (collectives among the mesh's ranks; another mesh: send/recv).
/// Differentiable.
Tensor reshard(const Tensor& t, const ProcessMesh& mesh, std::vector<Placement> placements);
/// Paddle's unshard_dtensor: the whole value, as an ordinary tensor, on
/// every rank of the mesh.
Tensor unshard(const Tensor& t);

/// Distributed tensors on one mesh with the same placements, some of them
/// Partial(sum): each placed with those Partial dims made Replicate(), by
/// ONE all_reduce per Partial mesh dim of all their pieces flattened
/// together (Note [Bucketed gradient reduction] in
/// core/src/autograd/engine.cpp). Not recorded for autograd.
std::vector<Tensor> reduce_partials(std::span<const Tensor> tensors);

/// Runs `op` on inputs of which at least one is distributed (Note
/// [Distributed dispatch]). Both builders call it first.
std::vector<Tensor> dispatch(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs,
                             const Device* device);
/// Whether any input is distributed.
bool any_dist(std::span<const Tensor> inputs);

/// Host ops run by this process (Note [Collective counts] in
/// core/src/dist/collective_ops.cpp): calls and input bytes.
struct CollectiveCount {
  int64_t calls = 0;
  int64_t bytes = 0;
};
/// Per host op name (c_all_reduce, ...), since the start or the last reset.
std::map<std::string, CollectiveCount> collective_stats();
void reset_collective_stats();

}  // namespace dist
}  // namespace oar
