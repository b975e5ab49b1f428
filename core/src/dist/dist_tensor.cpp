// The distributed tensor (oar/dist_tensor.h): ProcessMesh, the shard math,
// making distributed tensors from full or local values, and reshard with
// its autograd node. The transitions themselves are reshard_local's
// (reshard.cpp); the eager dispatch of ops is dispatch.cpp's.
#include <algorithm>
#include <array>
#include <numeric>
#include <set>

#include "dist/dist_internal.h"
#include "runtime/runtime_state.h"
#include "oar/autograd.h"
#include "oar/builder.h"
#include "oar/dist_env.h"
#include "oar/ops.h"

namespace oar {

namespace {

std::string ints_str(const std::vector<int>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string names_str(const std::vector<std::string>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s + "]";
}

std::string placements_str(const std::vector<Placement>& ps) {
  std::string s = "[";
  for (size_t i = 0; i < ps.size(); ++i) s += (i ? ", " : "") + ps[i].str();
  return s + "]";
}

}  // namespace

// ---- ProcessMesh ----

ProcessMesh::ProcessMesh(std::vector<int64_t> shape, std::vector<int> process_ids,
                         std::vector<std::string> dim_names)
    : shape_(std::move(shape)),
      process_ids_(std::move(process_ids)),
      dim_names_(std::move(dim_names)) {
  int64_t count = 1;
  for (int64_t s : shape_) {
    OAR_CHECK_ARG(s > 0,
                  "ProcessMesh: shape " + shape_str(shape_) + " has a dim that is not positive");
    count *= s;
  }
  OAR_CHECK_ARG(count == static_cast<int64_t>(process_ids_.size()),
                "ProcessMesh: shape " + shape_str(shape_) + " holds " + std::to_string(count) +
                    " processes but " + std::to_string(process_ids_.size()) +
                    " process ids were given (" + ints_str(process_ids_) + ")");
  std::set<int> seen;
  for (int id : process_ids_) {
    OAR_CHECK_ARG(id >= 0, "ProcessMesh: process id " + std::to_string(id) + " is negative");
    OAR_CHECK_ARG(seen.insert(id).second, "ProcessMesh: process id " + std::to_string(id) +
                                              " appears twice in " + ints_str(process_ids_));
  }
  if (dim_names_.empty()) {
    for (size_t i = 0; i < shape_.size(); ++i) dim_names_.push_back("d" + std::to_string(i));
  }
  OAR_CHECK_ARG(dim_names_.size() == shape_.size(),
                "ProcessMesh: shape " + shape_str(shape_) + " has " +
                    std::to_string(shape_.size()) + " dims but " +
                    std::to_string(dim_names_.size()) + " dim_names were given " +
                    names_str(dim_names_));
  std::set<std::string> names(dim_names_.begin(), dim_names_.end());
  OAR_CHECK_ARG(names.size() == dim_names_.size(),
                "ProcessMesh: dim_names " + names_str(dim_names_) + " repeat a name");
}

ProcessMesh ProcessMesh::from_ids(std::vector<int> process_ids, std::string dim_name) {
  auto n = static_cast<int64_t>(process_ids.size());
  return ProcessMesh({n}, std::move(process_ids), {std::move(dim_name)});
}

int ProcessMesh::dim_of(std::string_view name) const {
  for (size_t i = 0; i < dim_names_.size(); ++i) {
    if (dim_names_[i] == name) return static_cast<int>(i);
  }
  throw Error(ErrorCode::invalid_argument, "ProcessMesh: no dim named '" + std::string(name) +
                                               "'; the mesh's dims are " + names_str(dim_names_));
}

bool ProcessMesh::contains(int rank) const {
  return std::find(process_ids_.begin(), process_ids_.end(), rank) != process_ids_.end();
}

std::vector<int64_t> ProcessMesh::coordinate(int rank) const {
  auto it = std::find(process_ids_.begin(), process_ids_.end(), rank);
  OAR_CHECK_ARG(it != process_ids_.end(),
                "ProcessMesh: rank " + std::to_string(rank) + " is not in " + str());
  auto flat = static_cast<int64_t>(it - process_ids_.begin());
  std::vector<int64_t> coord(shape_.size());
  for (size_t d = shape_.size(); d-- > 0;) {
    coord[d] = flat % shape_[d];
    flat /= shape_[d];
  }
  return coord;
}

namespace {
int64_t flat_index(const Shape& shape, const std::vector<int64_t>& coord) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + coord[d];
  return flat;
}
}  // namespace

std::vector<int> ProcessMesh::group_along(int rank, int mesh_dim) const {
  OAR_CHECK_ARG(
      mesh_dim >= 0 && mesh_dim < ndim(),
      "ProcessMesh: mesh dim " + std::to_string(mesh_dim) + " is out of range for " + str());
  std::vector<int64_t> coord = coordinate(rank);
  std::vector<int> group;
  for (int64_t i = 0; i < shape_[static_cast<size_t>(mesh_dim)]; ++i) {
    coord[static_cast<size_t>(mesh_dim)] = i;
    group.push_back(process_ids_[static_cast<size_t>(flat_index(shape_, coord))]);
  }
  return group;
}

ProcessMesh ProcessMesh::get_mesh_with_dim(std::string_view dim_name, int64_t index) const {
  int axis = dim_of(dim_name);
  std::vector<size_t> order{static_cast<size_t>(axis)};
  for (size_t d = 0; d < shape_.size(); ++d) {
    if (d != static_cast<size_t>(axis)) order.push_back(d);
  }
  Shape shape;
  std::vector<std::string> names;
  for (size_t d : order) {
    shape.push_back(shape_[d]);
    names.push_back(dim_names_[d]);
  }
  // The transposed mesh, element by element.
  std::vector<int> ids(process_ids_.size());
  std::vector<int64_t> coord(shape.size()), src(shape.size());
  for (int64_t flat = 0; flat < size(); ++flat) {
    int64_t rest = flat;
    for (size_t d = shape.size(); d-- > 0;) {
      coord[d] = rest % shape[d];
      rest /= shape[d];
    }
    for (size_t d = 0; d < order.size(); ++d) src[order[d]] = coord[d];
    ids[static_cast<size_t>(flat)] = process_ids_[static_cast<size_t>(flat_index(shape_, src))];
  }
  if (index < 0) return ProcessMesh(shape, ids, names);
  OAR_CHECK_ARG(index < shape[0], "ProcessMesh.get_mesh_with_dim: index " + std::to_string(index) +
                                      " is out of range for dim '" + std::string(dim_name) +
                                      "' of size " + std::to_string(shape[0]) + " in " + str());
  int64_t inner = size() / shape[0];
  std::vector<int> sub(ids.begin() + index * inner, ids.begin() + (index + 1) * inner);
  if (shape.size() == 1)
    return ProcessMesh({1}, sub, names);  // Paddle keeps a 1-d mesh of one process
  return ProcessMesh(Shape(shape.begin() + 1, shape.end()), sub,
                     std::vector<std::string>(names.begin() + 1, names.end()));
}

bool ProcessMesh::operator==(const ProcessMesh& other) const {
  // Paddle compares the shape and the process ids, not the dim names.
  return shape_ == other.shape_ && process_ids_ == other.process_ids_;
}

std::string ProcessMesh::str() const {
  return "ProcessMesh(shape=" + shape_str(shape_) + ", process_ids=" + ints_str(process_ids_) +
         ", dim_names=" + names_str(dim_names_) + ")";
}

std::string DistAttr::str() const {
  return "mesh=" + mesh.str() + ", placements=" + placements_str(placements);
}

namespace dist {

// ---- shard math ----

int64_t shard_begin(int64_t size, int64_t parts, int64_t index) {
  int64_t chunk = parts > 0 ? (size + parts - 1) / parts : size;
  return std::min(size, index * chunk);
}

int64_t shard_length(int64_t size, int64_t parts, int64_t index) {
  int64_t chunk = parts > 0 ? (size + parts - 1) / parts : size;
  return std::max<int64_t>(0,
                           std::min(size, (index + 1) * chunk) - shard_begin(size, parts, index));
}

std::vector<int64_t> local_begin(const Shape& global, const DistAttr& attr, int rank,
                                 Shape* local) {
  Shape shape = global;
  std::vector<int64_t> begin(global.size(), 0);
  if (!attr.mesh.contains(rank)) {
    std::fill(shape.begin(), shape.end(), 0);
  } else {
    std::vector<int64_t> coord = attr.mesh.coordinate(rank);
    for (size_t m = 0; m < attr.placements.size(); ++m) {
      const Placement& p = attr.placements[m];
      if (!p.is_shard()) continue;
      auto d = static_cast<size_t>(p.dim);
      int64_t parts = attr.mesh.shape()[m];
      begin[d] += shard_begin(shape[d], parts, coord[m]);
      shape[d] = shard_length(shape[d], parts, coord[m]);
    }
  }
  if (local) *local = std::move(shape);
  return begin;
}

Shape local_shape(const Shape& global, const DistAttr& attr, int rank) {
  Shape local;
  local_begin(global, attr, rank, &local);
  return local;
}

void check_placements(const std::string& what, const ProcessMesh& mesh,
                      const std::vector<Placement>& placements, int64_t tensor_rank) {
  if (static_cast<int>(placements.size()) != mesh.ndim()) {
    throw Error(ErrorCode::invalid_argument, what + ": placements " + placements_str(placements) +
                                                 " give " + std::to_string(placements.size()) +
                                                 " placements but the mesh " + mesh.str() +
                                                 " has " + std::to_string(mesh.ndim()) +
                                                 " dims; give one placement per mesh dim");
  }
  for (const Placement& p : placements) {
    if (p.is_shard() && (p.dim < 0 || p.dim >= tensor_rank)) {
      throw Error(ErrorCode::invalid_argument, what + ": placements " + placements_str(placements) +
                                                   " shard dim " + std::to_string(p.dim) +
                                                   " but the tensor has " +
                                                   std::to_string(tensor_rank) + " dims");
    }
  }
}

void check_mesh_exists(const std::string& what, const ProcessMesh& mesh) {
  int world = collective_env_world_size();
  if (world < 0) world = distributed::get_world_size();
  for (int id : mesh.process_ids()) {
    if (id >= world) {
      throw Error(ErrorCode::invalid_argument,
                  what + ": the mesh " + mesh.str() + " names process " + std::to_string(id) +
                      " but the job has " + std::to_string(world) + " process" +
                      (world == 1 ? "" : "es") +
                      " (call init_parallel_env under a launcher with enough ranks)");
    }
  }
}

int global_rank() {
  int r = collective_env_rank();  // set by the Python package (dist_internal.h)
  return r >= 0 ? r : distributed::get_rank();
}

// ---- the distributed tensor ----

bool is_dist(const Tensor& t) { return t.defined() && t.impl().dist != nullptr; }

const DistAttr& dist_attr(const Tensor& t) {
  OAR_CHECK_ARG(is_dist(t), "dist_attr: the tensor of shape " +
                                (t.defined() ? shape_str(t.shape()) : "?") +
                                " is not a distributed tensor (make one with shard_tensor)");
  return t.impl().dist->attr;
}

Tensor local_value(const Tensor& t) {
  dist_attr(t);
  return t.impl().dist->local;
}

Tensor make_dist(Tensor local, DistAttr attr, std::optional<Shape> global_shape) {
  OAR_CHECK_ARG(local.defined(), "make_dist: the local piece is undefined");
  OAR_CHECK_ARG(!is_dist(local), "make_dist: the local piece is itself distributed");
  check_placements("make_dist", attr.mesh, attr.placements, local.dim());
  Shape global = global_shape.value_or(local.shape());
  if (!global_shape) {
    for (size_t m = 0; m < attr.placements.size(); ++m) {
      if (attr.placements[m].is_shard())
        global[static_cast<size_t>(attr.placements[m].dim)] *= attr.mesh.shape()[m];
    }
  }
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = global;
  impl->strides = contiguous_strides(global);
  impl->dtype = local.dtype();
  impl->device = local.device();
  impl->dist = std::make_shared<DistInfo>(DistInfo{std::move(attr), local.detach()});
  return Tensor(std::move(impl));
}

namespace {

// A copy with its own storage (the local piece of a parameter is updated in place).
Tensor owned_copy(const Tensor& t) {
  static const OpDef& copy = OpRegistry::instance().get("copy");
  std::array<Tensor, 1> in{t};
  return current_builder().apply(copy, in, Attrs{}, nullptr).at(0);
}

}  // namespace

Tensor replicated_piece(const Tensor& full, const DistAttr& attr, int rank) {
  Shape local;
  std::vector<int64_t> begin = local_begin(full.shape(), attr, rank, &local);
  if (!attr.mesh.contains(rank)) return zeros(local, full.dtype(), full.device());
  std::vector<int64_t> axes, starts, ends;
  for (size_t d = 0; d < local.size(); ++d) {
    if (local[d] == full.shape()[d]) continue;
    axes.push_back(static_cast<int64_t>(d));
    starts.push_back(begin[d]);
    ends.push_back(begin[d] + local[d]);
  }
  Tensor piece = axes.empty() ? full : slice(full, axes, starts, ends);
  std::vector<int64_t> coord = attr.mesh.coordinate(rank);
  for (size_t m = 0; m < attr.placements.size(); ++m) {
    const Placement& p = attr.placements[m];
    if (p.is_partial() && p.reduce == ReduceKind::sum && coord[m] != 0)
      return zeros(local, full.dtype(), full.device());
  }
  return owned_copy(piece);
}

namespace {

// A new leaf sharing `t`'s distributed info, requiring grad like `like`.
void keep_leaf_grad(Tensor& out, const Tensor& like) {
  if (like.requires_grad()) out.set_requires_grad(true);
}

}  // namespace

Tensor shard_tensor(const Tensor& data, const ProcessMesh& mesh,
                    std::vector<Placement> placements) {
  OAR_CHECK_ARG(data.defined(), "shard_tensor: the data is undefined");
  std::string what = "shard_tensor of a tensor of shape " + shape_str(data.shape());
  check_placements(what, mesh, placements, data.dim());
  check_mesh_exists(what, mesh);
  DistAttr attr{mesh, std::move(placements)};
  if (is_dist(data)) {
    OAR_CHECK_ARG(dist_attr(data).mesh == mesh, what + ": the tensor is already distributed on " +
                                                    dist_attr(data).mesh.str() + ", not on " +
                                                    mesh.str() + "; use reshard to move it");
    return reshard(data, mesh, attr.placements);
  }
  Tensor local;
  {
    NoGrad no_grad;
    local = replicated_piece(data.detach(), attr, global_rank());
  }
  Tensor out = make_dist(local, attr, data.shape());
  if (data.is_leaf()) {
    keep_leaf_grad(out, data);
    return out;
  }
  std::array<Tensor, 1> in{data};
  std::array<Tensor, 1> outs{out};
  record_custom("shard_tensor", in, outs, [](const VjpContext& ctx) -> std::vector<Tensor> {
    const Tensor& g = ctx.grads[0];
    if (!g.defined()) return {Tensor()};
    return {unshard(g)};
  });
  return outs[0];
}

Tensor dtensor_from_local(const Tensor& local, const ProcessMesh& mesh,
                          std::vector<Placement> placements, std::optional<Shape> global_shape) {
  OAR_CHECK_ARG(local.defined(), "dtensor_from_local: the local tensor is undefined");
  OAR_CHECK_ARG(!is_dist(local), "dtensor_from_local: the tensor is already distributed");
  std::string what = "dtensor_from_local of a local tensor of shape " + shape_str(local.shape());
  check_placements(what, mesh, placements, local.dim());
  check_mesh_exists(what, mesh);
  DistAttr attr{mesh, std::move(placements)};
  if (global_shape) {
    Shape expect = local_shape(*global_shape, attr, global_rank());
    OAR_CHECK_ARG(!mesh.contains(global_rank()) || expect == local.shape(),
                  what + ": rank " + std::to_string(global_rank()) +
                      " should hold a piece of shape " + shape_str(expect) +
                      " of the global shape " + shape_str(*global_shape) + " placed as " +
                      attr.str());
  }
  Tensor out = make_dist(local, attr, global_shape);
  if (local.is_leaf()) {
    keep_leaf_grad(out, local);
    return out;
  }
  std::array<Tensor, 1> in{local};
  std::array<Tensor, 1> outs{out};
  DistAttr saved = attr;
  record_custom("dtensor_from_local", in, outs,
                [saved](const VjpContext& ctx) -> std::vector<Tensor> {
                  const Tensor& g = ctx.grads[0];
                  if (!g.defined()) return {Tensor()};
                  return {local_value(reshard(g, saved.mesh, saved.placements))};
                });
  return outs[0];
}

std::vector<Tensor> reduce_partials(std::span<const Tensor> tensors) {
  if (tensors.empty()) return {};
  const DistAttr& attr = dist_attr(tensors[0]);
  std::vector<Placement> to = attr.placements;
  for (auto& p : to) {
    if (p == Placement::Partial(ReduceKind::sum)) p = Placement::Replicate();
  }
  for (const Tensor& t : tensors) {
    OAR_CHECK_ARG(dist_attr(t) == attr, "reduce_partials: a tensor placed as " + dist_attr(t).str() +
                                            " among tensors placed as " + attr.str());
  }
  const int rank = global_rank();
  std::vector<Tensor> out;
  if (!attr.mesh.contains(rank) || to == attr.placements) {
    for (const Tensor& t : tensors) out.push_back(reshard(t, attr.mesh, to));
    return out;
  }
  NoGrad no_grad;
  std::vector<Tensor> flat;
  std::vector<int64_t> sizes;
  for (const Tensor& t : tensors) {
    Tensor local = local_value(t);
    sizes.push_back(local.numel());
    flat.push_back(reshape(local, {local.numel()}));
  }
  Tensor all = flat.size() == 1 ? flat[0] : concat(flat, 0);
  for (int m = 0; m < attr.mesh.ndim(); ++m) {
    if (!(attr.placements[static_cast<size_t>(m)] == Placement::Partial(ReduceKind::sum))) continue;
    std::vector<int> group = attr.mesh.group_along(rank, m);
    std::array<Tensor, 1> in{all};
    all = apply1(OpRegistry::instance().get("c_all_reduce"), in,
                 {{"ranks", std::vector<int64_t>(group.begin(), group.end())}, {"reduce", int64_t{0}}});
  }
  int64_t at = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    Tensor piece = tensors.size() == 1 ? all : slice(all, {0}, {at}, {at + sizes[i]});
    at += sizes[i];
    out.push_back(make_dist(reshape(piece, local_value(tensors[i]).shape()), {attr.mesh, to}, tensors[i].shape()));
  }
  return out;
}

Tensor reshard(const Tensor& t, const ProcessMesh& mesh, std::vector<Placement> placements) {
  DistAttr from = dist_attr(t);
  std::string what =
      "reshard of a tensor of shape " + shape_str(t.shape()) + " placed as " + from.str();
  check_placements(what, mesh, placements, t.dim());
  check_mesh_exists(what, mesh);
  DistAttr to{mesh, std::move(placements)};
  if (from == to) return t;
  if (log_enabled(OAR_LOG_DEBUG)) log_message(OAR_LOG_DEBUG, "dist: " + what + " to " + to.str());
  Tensor local;
  {
    NoGrad no_grad;
    local = local_as(local_value(t), t.shape(), from, to);
  }
  Tensor out = make_dist(local, to, t.shape());
  std::array<Tensor, 1> in{t};
  std::array<Tensor, 1> outs{out};
  // Note [Distributed dispatch]: the VJP of a reshard is the reshard of the
  // gradient back to the input's placements, except along a mesh dim where
  // the input was Partial: every piece's gradient is the whole gradient, so
  // the gradient stays as it is placed there (a P -> R reshard's gradient
  // stays Replicate() instead of being cut back to a Partial()).
  record_custom("reshard", in, outs, [from](const VjpContext& ctx) -> std::vector<Tensor> {
    const Tensor& g = ctx.grads[0];
    if (!g.defined()) return {Tensor()};
    std::vector<Placement> back = from.placements;
    if (is_dist(g) && dist_attr(g).mesh == from.mesh) {
      for (size_t m = 0; m < back.size(); ++m) {
        if (back[m].is_partial()) back[m] = dist_attr(g).placements[m];
      }
    }
    return {reshard(g, from.mesh, back)};
  });
  return outs[0];
}

Tensor unshard(const Tensor& t) {
  const DistAttr& attr = dist_attr(t);
  Tensor full =
      reshard(t, attr.mesh, std::vector<Placement>(attr.placements.size(), Placement::Replicate()));
  Tensor local = local_value(full);
  if (!full.requires_grad() || !grad_enabled()) return local;
  std::array<Tensor, 1> in{full};
  std::array<Tensor, 1> outs{local.detach()};
  DistAttr replicated = dist_attr(full);
  record_custom("unshard_dtensor", in, outs,
                [replicated](const VjpContext& ctx) -> std::vector<Tensor> {
                  const Tensor& g = ctx.grads[0];
                  if (!g.defined()) return {Tensor()};
                  return {make_dist(g, replicated, g.shape())};
                });
  return outs[0];
}

}  // namespace dist
}  // namespace oar
