// reshard_local (dist_internal.h): this rank's piece of a value placed one
// way from its piece placed another, by the collective host ops of
// collective_ops.cpp emitted through current_builder() (so a trace records
// them as IR operations).
//
// Note [Reshard plan]
// A reshard on one mesh is planned (plan_reshard, pure) as steps over one
// mesh dim each, in five phases:
//   1. Partial mesh dims that change: P -> S(d) is a reduce_scatter along
//      d (padded when uneven) where no other mesh dim shards d; anything
//      else is an all_reduce to Replicate first (P(sum) -> P(max) goes
//      through Replicate, as any other P -> P of another kind).
//   2. Shards that are undone: an all_gather (each piece padded to the
//      chunk size, gathered, the padding trimmed), from the last mesh dim
//      to the first. A tensor dim sharded over several mesh dims is split
//      in mesh-dim order (dist::local_shape), so a mesh dim's piece is a
//      chunk of the earlier mesh dims' chunk: a shard stays only when every
//      earlier mesh dim shards that dim the same way before and after.
//   3. S(i) -> S(j) on one mesh dim is an all_to_all when no other mesh dim
//      shards i or j and both sizes divide evenly; otherwise gather + slice.
//   4. New shards of a now replicated mesh dim: a local slice, from the
//      first mesh dim to the last (so nested chunks come out right).
//   5. New Partial mesh dims from Replicate: coordinate 0 keeps the value,
//      the others hold zeros (sum); for avg/max/min every piece is the value.
// Mesh dims of size 1 change placement without any op. Every rank of the
// mesh runs the same steps (the plan depends only on shapes and
// placements), so the collectives match up across ranks.
//
// Between two meshes (pipeline stages) a simple correct plan: gather to
// Replicate on the source mesh; one source rank cuts each target rank that
// is not in the source mesh its piece (Partial read as Replicate) and
// sends it (pairs in target order, so every rank meets its pairs in one
// global order and no send waits on a later one); target ranks in the
// source mesh cut their own; then phase 5 makes the Partial mesh dims.
#include <algorithm>
#include <array>

#include "dist/dist_internal.h"
#include "oar/builder.h"
#include "oar/error.h"
#include "oar/ops.h"

namespace oar::dist {

std::string ReshardStep::str() const {
  const char* names[] = {"all_reduce", "reduce_scatter", "all_gather",
                         "all_to_all", "slice",          "make_partial"};
  std::string out =
      std::string(names[static_cast<int>(kind)]) + "(mesh_dim=" + std::to_string(mesh_dim);
  if (dim >= 0) out += ", dim=" + std::to_string(dim);
  if (kind == Kind::all_to_all) out += ", to_dim=" + std::to_string(to_dim);
  if (kind == Kind::all_reduce || kind == Kind::reduce_scatter || kind == Kind::make_partial)
    out += ", reduce=" + Placement::Partial(reduce).str();
  return out + ")";
}

namespace {

using Placements = std::vector<Placement>;

// Whether mesh dims other than `m` shard tensor dim `d` in `ps`.
bool sharded_elsewhere(const Placements& ps, size_t m, int64_t d) {
  for (size_t k = 0; k < ps.size(); ++k)
    if (k != m && ps[k].is_shard(d)) return true;
  return false;
}

// Phase 2's rule: a shard S(d) on mesh dim m survives when `to` has it too
// and every earlier mesh dim shards d alike before and after (and survives).
std::vector<bool> kept_shards(const Placements& from, const Placements& to) {
  std::vector<bool> kept(from.size(), false);
  for (size_t m = 0; m < from.size(); ++m) {
    if (!from[m].is_shard() || !(to[m] == from[m])) continue;
    int64_t d = from[m].dim;
    bool ok = true;
    for (size_t k = 0; k < m && ok; ++k) {
      bool before = from[k].is_shard(d), after = to[k].is_shard(d);
      ok = before == after && (!before || kept[k]);
    }
    kept[m] = ok;
  }
  return kept;
}

}  // namespace

std::vector<ReshardStep> plan_reshard(const Shape& global, const std::vector<int64_t>& mesh_shape,
                                      const std::vector<Placement>& from,
                                      const std::vector<Placement>& to) {
  OAR_CHECK_ARG(from.size() == mesh_shape.size() && to.size() == mesh_shape.size(),
                "reshard: the mesh has " + std::to_string(mesh_shape.size()) +
                    " dims but the placements give " + std::to_string(from.size()) + " and " +
                    std::to_string(to.size()));
  using Kind = ReshardStep::Kind;
  std::vector<ReshardStep> steps;
  Placements cur = from;
  const size_t n = mesh_shape.size();
  // Size-1 mesh dims: nothing to move.
  for (size_t m = 0; m < n; ++m)
    if (mesh_shape[m] == 1) cur[m] = to[m];
  // 1. Partial mesh dims that change.
  for (size_t m = 0; m < n; ++m) {
    if (!cur[m].is_partial() || cur[m] == to[m]) continue;
    const int mm = static_cast<int>(m);
    if (to[m].is_shard() && !sharded_elsewhere(cur, m, to[m].dim) &&
        !sharded_elsewhere(to, m, to[m].dim)) {
      steps.push_back({Kind::reduce_scatter, mm, to[m].dim, -1, cur[m].reduce});
      cur[m] = to[m];
    } else {
      steps.push_back({Kind::all_reduce, mm, -1, -1, cur[m].reduce});
      cur[m] = Placement::Replicate();
    }
  }
  // 3's candidates, decided before 2 so their shards are not gathered.
  std::vector<bool> to_all(n, false);
  for (size_t m = 0; m < n; ++m) {
    if (!cur[m].is_shard() || !to[m].is_shard() || cur[m] == to[m]) continue;
    int64_t i = cur[m].dim, j = to[m].dim;
    bool alone = !sharded_elsewhere(cur, m, i) && !sharded_elsewhere(cur, m, j) &&
                 !sharded_elsewhere(to, m, i) && !sharded_elsewhere(to, m, j);
    int64_t parts = mesh_shape[m];
    to_all[m] = alone && global[static_cast<size_t>(i)] % parts == 0 &&
                global[static_cast<size_t>(j)] % parts == 0;
  }
  // 2. Shards undone, last mesh dim first.
  std::vector<bool> kept = kept_shards(cur, to);
  for (size_t m = n; m-- > 0;) {
    if (!cur[m].is_shard() || kept[m] || to_all[m]) continue;
    steps.push_back({Kind::all_gather, static_cast<int>(m), cur[m].dim});
    cur[m] = Placement::Replicate();
  }
  // 3. S(i) -> S(j).
  for (size_t m = 0; m < n; ++m) {
    if (!to_all[m]) continue;
    steps.push_back({Kind::all_to_all, static_cast<int>(m), cur[m].dim, to[m].dim});
    cur[m] = to[m];
  }
  // 4. New shards, first mesh dim first.
  for (size_t m = 0; m < n; ++m) {
    if (cur[m].is_replicate() && to[m].is_shard()) {
      steps.push_back({Kind::slice, static_cast<int>(m), to[m].dim});
      cur[m] = to[m];
    }
  }
  // 5. New Partial mesh dims.
  for (size_t m = 0; m < n; ++m) {
    if (cur[m].is_replicate() && to[m].is_partial()) {
      steps.push_back({Kind::make_partial, static_cast<int>(m), -1, -1, to[m].reduce});
      cur[m] = to[m];
    }
  }
  if (!(cur == to)) {
    throw Error(ErrorCode::internal, "reshard: the plan from " + DistAttr{{}, from}.str() +
                                         " ends at " + DistAttr{{}, cur}.str() + ", not at " +
                                         DistAttr{{}, to}.str());
  }
  return steps;
}

namespace {

const OpDef& def_of(const char* name) { return OpRegistry::instance().get(name); }

std::vector<int64_t> ints_of(const std::vector<int>& v) { return {v.begin(), v.end()}; }

Tensor collective(const char* name, const Tensor& x, Attrs attrs) {
  std::array<Tensor, 1> in{x};
  return apply1(def_of(name), in, attrs);
}

// x padded with zeros at the end of dim d to `size`.
Tensor pad_dim(const Tensor& x, int64_t d, int64_t size) {
  int64_t have = x.shape()[static_cast<size_t>(d)];
  if (have == size) return x;
  std::vector<int64_t> pads(2 * x.shape().size(), 0);
  pads[static_cast<size_t>(2 * d + 1)] = size - have;
  return pad(x, pads);
}

// The first `size` entries of dim d.
Tensor trim_dim(const Tensor& x, int64_t d, int64_t size) {
  if (x.shape()[static_cast<size_t>(d)] == size) return x;
  return slice(x, {d}, {0}, {size});
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Runs one step on this rank's piece `x`, placed as `cur` (updated).
Tensor run_step(const ReshardStep& step, const Tensor& x, const Shape& global,
                const ProcessMesh& mesh, Placements& cur, int rank) {
  using Kind = ReshardStep::Kind;
  const auto m = static_cast<size_t>(step.mesh_dim);
  const int64_t parts = mesh.shape()[m];
  const int64_t coord = mesh.coordinate(rank)[m];
  std::vector<int64_t> group = ints_of(mesh.group_along(rank, step.mesh_dim));
  // Pads, slices and the plan read these sizes: a trace with them dynamic is
  // fixed to the example's (Note [Dynamic dims] in oar/ir/trace.h).
  if (step.dim >= 0) current_builder().note_size_read(x, step.dim);
  if (step.to_dim >= 0) current_builder().note_size_read(x, step.to_dim);
  Placements next = cur;
  Tensor out;
  switch (step.kind) {
    case Kind::all_reduce:
      out = collective("c_all_reduce", x,
                       {{"ranks", group}, {"reduce", static_cast<int64_t>(step.reduce)}});
      next[m] = Placement::Replicate();
      break;
    case Kind::reduce_scatter: {
      const int64_t full = x.shape()[static_cast<size_t>(step.dim)];
      Tensor padded = pad_dim(x, step.dim, ceil_div(full, parts) * parts);
      out = collective(
          "c_reduce_scatter", padded,
          {{"ranks", group}, {"axis", step.dim}, {"reduce", static_cast<int64_t>(step.reduce)}});
      out = trim_dim(out, step.dim, shard_length(full, parts, coord));
      next[m] = Placement::Shard(step.dim);
      break;
    }
    case Kind::all_gather: {
      next[m] = Placement::Replicate();
      // The size of dim d once gathered: the chunk of the earlier mesh dims.
      const int64_t whole = local_shape(global, {mesh, next}, rank)[static_cast<size_t>(step.dim)];
      Tensor padded = pad_dim(x, step.dim, ceil_div(whole, parts));
      out = trim_dim(collective("c_all_gather", padded, {{"ranks", group}, {"axis", step.dim}}),
                     step.dim, whole);
      break;
    }
    case Kind::all_to_all:
      out = collective("c_all_to_all", x,
                       {{"ranks", group}, {"split_axis", step.to_dim}, {"concat_axis", step.dim}});
      next[m] = Placement::Shard(step.to_dim);
      break;
    case Kind::slice: {
      const int64_t have = x.shape()[static_cast<size_t>(step.dim)];
      const int64_t begin = shard_begin(have, parts, coord);
      out = slice(x, {step.dim}, {begin}, {begin + shard_length(have, parts, coord)});
      next[m] = Placement::Shard(step.dim);
      break;
    }
    case Kind::make_partial:
      out = step.reduce == ReduceKind::sum && coord != 0 ? zeros_like(x) : x;
      next[m] = Placement::Partial(step.reduce);
      break;
  }
  cur = std::move(next);
  return out;
}

// A fresh copy when `x` is an eager view of another tensor's storage (a
// distributed tensor's piece may be updated in place).
Tensor owned(const Tensor& x) {
  if (!x.is_view()) return x;
  std::array<Tensor, 1> in{x};
  return apply1(def_of("copy"), in);
}

Tensor reshard_same_mesh(const Tensor& local, const Shape& global, const ProcessMesh& mesh,
                         const Placements& from, const Placements& to, int rank) {
  Tensor x = local;
  Placements cur = from;
  for (const ReshardStep& step : plan_reshard(global, mesh.shape(), from, to)) {
    x = run_step(step, x, global, mesh, cur, rank);
  }
  return owned(x);
}

Placements replicated(const ProcessMesh& mesh) {
  return Placements(static_cast<size_t>(mesh.ndim()));
}

// Note [Reshard plan], between meshes.
// `rank`'s piece of the whole value `full` placed as `attr` (its shards;
// no Partial in `attr`), cut locally.
Tensor cut_piece(const Tensor& full, const DistAttr& attr, int rank) {
  Shape local;
  std::vector<int64_t> begin = local_begin(full.shape(), attr, rank, &local);
  std::vector<int64_t> axes, starts, ends;
  for (size_t d = 0; d < local.size(); ++d) {
    if (local[d] == full.shape()[d]) continue;
    current_builder().note_size_read(full, static_cast<int64_t>(d));
    axes.push_back(static_cast<int64_t>(d));
    starts.push_back(begin[d]);
    ends.push_back(begin[d] + local[d]);
  }
  return owned(axes.empty() ? full : slice(full, axes, starts, ends));
}

Tensor reshard_across_meshes(const Tensor& local, const Shape& global, const DistAttr& from,
                             const DistAttr& to, int rank) {
  const bool in_from = from.mesh.contains(rank), in_to = to.mesh.contains(rank);
  Tensor full;
  if (in_from)
    full =
        reshard_same_mesh(local, global, from.mesh, from.placements, replicated(from.mesh), rank);
  // What moves is each target's piece with its Partial mesh dims read as
  // Replicate; the target then makes those Partial locally.
  DistAttr sharded = to;
  for (Placement& p : sharded.placements)
    if (p.is_partial()) p = Placement::Replicate();
  Tensor piece;
  const std::vector<int>& sources = from.mesh.process_ids();
  const std::vector<int>& targets = to.mesh.process_ids();
  for (size_t i = 0; i < targets.size(); ++i) {
    const int target = targets[i];
    if (from.mesh.contains(target)) continue;  // it holds the value already
    const int source = sources[i % sources.size()];
    std::vector<int64_t> pair = {std::min(source, target), std::max(source, target)};
    if (rank == source) {
      Tensor sent = cut_piece(full, sharded, target);
      for (int64_t d = 0; d < full.dim(); ++d)
        current_builder().note_size_read(full, d);  // the receiver's shape
      collective("c_send", sent, {{"ranks", pair}, {"peer", int64_t{target}}});
    } else if (rank == target) {
      Shape shape = local_shape(global, sharded, rank);
      Attrs attrs{{"ranks", pair},
                  {"peer", int64_t{source}},
                  {"shape", std::vector<int64_t>(shape.begin(), shape.end())},
                  {"dtype", static_cast<int64_t>(local.dtype())}};
      piece = current_builder().apply(def_of("c_recv"), {}, attrs, &local.device()).at(0);
    }
  }
  if (!in_to) return zeros(local_shape(global, to, rank), local.dtype(), local.device());
  if (in_from) piece = cut_piece(full, sharded, rank);
  return reshard_same_mesh(piece, global, to.mesh, sharded.placements, to.placements, rank);
}

}  // namespace

Tensor reshard_local(const Tensor& local, const Shape& global_shape, const DistAttr& from,
                     const DistAttr& to) {
  const int rank = global_rank();
  const std::string what = "reshard from " + from.str() + " to " + to.str() +
                           " of a tensor of shape " + shape_str(global_shape);
  check_placements(what, from.mesh, from.placements, static_cast<int64_t>(global_shape.size()));
  check_placements(what, to.mesh, to.placements, static_cast<int64_t>(global_shape.size()));
  if (from.mesh.contains(rank)) {
    Shape expect = local_shape(global_shape, from, rank);
    OAR_CHECK_ARG(local.shape() == expect,
                  what + ": rank " + std::to_string(rank) + " holds a piece of shape " +
                      shape_str(local.shape()) + " but its piece is " + shape_str(expect));
  }
  if (from == to) return local;
  if (!(from.mesh == to.mesh)) return reshard_across_meshes(local, global_shape, from, to, rank);
  if (!from.mesh.contains(rank))
    return zeros(local_shape(global_shape, to, rank), local.dtype(), local.device());
  return reshard_same_mesh(local, global_shape, from.mesh, from.placements, to.placements, rank);
}

}  // namespace oar::dist
