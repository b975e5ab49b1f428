// The collective host ops (c_all_reduce, c_all_gather, c_reduce_scatter,
// c_all_to_all, c_broadcast, c_send, c_recv), the communicators they run
// on (group_communicator) and global_rank (dist_internal.h).
//
// Note [Host ops]
// A collective is an op like any other for the builders: it has a meta rule
// (from its attributes: `ranks`, the global ranks of the group, and the
// axes), so the Tracer records it as an IR operation whose result types are
// known, and passes, the verifier and the serializer see an ordinary op. It
// has no device kernel: OpDef::host computes it, with the op's inputs and
// attributes, by calling into the Communicator of `ranks`. EagerBuilder
// calls it instead of selecting a kernel (run_host_op, which also checks
// that the outputs are what the meta rule said); the executor and the
// interpreter do the same at the op's place in the program, after the
// work queued before it is done. Collectives are not differentiable (the
// VJP of a reshard is another reshard, recorded one level up by
// dist::reshard), and they have effects that other ranks wait for, so the
// passes treat them like random ops: never merged (CSE), folded or
// removed as dead (has_side_effects in core/ir/src/operation.cpp).
//
// Every host function runs its helper ops (copies, transposes, reshapes)
// eagerly and without autograd, whatever builder is current.
#include <algorithm>
#include <map>
#include <mutex>
#include <numeric>

#include "dist/dist_internal.h"
#include "oar/autograd.h"
#include "oar/builder.h"
#include "oar/dist_env.h"
#include "oar/error.h"
#include "oar/ops.h"
#include "oar/runtime.h"
#include "oar/store.h"

namespace oar::dist {

namespace {

std::string ranks_str(const std::vector<int>& ranks) {
  std::string out = "[";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out + "]";
}

// Where communicators are built (Note [Host ops]): set by the Python
// package, or taken from the C++ default group.
struct CollectiveState {
  std::mutex mutex;
  bool has_env = false;
  std::shared_ptr<Store> store;  // shared with the Python Store object
  Device device;
  int rank = 0;
  int world_size = 1;
  int64_t timeout_ms = -1;
  const Store* cache_store = nullptr;  // the store the cached communicators were built on
  std::map<std::vector<int>, std::shared_ptr<distributed::Communicator>> cache;
};

CollectiveState& state() {
  static CollectiveState s;
  return s;
}

}  // namespace

void set_collective_env(std::shared_ptr<Store> store, Device device, int rank, int world_size,
                        int64_t timeout_ms) {
  CollectiveState& s = state();
  std::lock_guard lock(s.mutex);
  s.cache.clear();
  s.cache_store = nullptr;
  s.has_env = store != nullptr;
  s.store = std::move(store);
  s.device = std::move(device);
  s.rank = rank;
  s.world_size = world_size;
  s.timeout_ms = timeout_ms;
}

int collective_env_rank() {
  CollectiveState& s = state();
  std::lock_guard lock(s.mutex);
  return s.has_env ? s.rank : -1;
}

int collective_env_world_size() {  // (added by H1)
  CollectiveState& s = state();
  std::lock_guard lock(s.mutex);
  return s.has_env ? s.world_size : -1;
}

std::shared_ptr<distributed::Communicator> group_communicator(const std::vector<int>& ranks) {
  CollectiveState& s = state();
  std::lock_guard lock(s.mutex);
  Store* store = nullptr;
  Device device;
  int rank = 0, world = 1;
  int64_t timeout_ms = -1;
  if (s.has_env) {
    store = s.store.get();
    device = s.device;
    rank = s.rank;
    world = s.world_size;
    timeout_ms = s.timeout_ms;
  } else if (distributed::is_initialized()) {
    distributed::Group& g = distributed::default_group();
    store = &distributed::default_store();
    device = g.comm().device();
    rank = g.rank();
    world = g.nranks();
    timeout_ms = g.comm().timeout_ms();
  } else {
    throw Error(ErrorCode::invalid_argument,
                "distributed: a collective among ranks " + ranks_str(ranks) +
                    " needs the default group; call init_parallel_env() first");
  }
  if (s.cache_store !=
      store) {  // a new job (destroy_process_group, init again): old communicators are dead
    s.cache.clear();
    s.cache_store = store;
  }
  if (auto it = s.cache.find(ranks); it != s.cache.end()) return it->second;
  std::vector<int> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    OAR_CHECK_ARG(sorted[i] >= 0 && sorted[i] < world,
                  "distributed: the group " + ranks_str(ranks) + " names rank " +
                      std::to_string(sorted[i]) + ", outside the world of " +
                      std::to_string(world) + " processes");
    OAR_CHECK_ARG(i == 0 || sorted[i] != sorted[i - 1], "distributed: the group " +
                                                            ranks_str(ranks) + " lists rank " +
                                                            std::to_string(sorted[i]) + " twice");
  }
  auto me = std::find(ranks.begin(), ranks.end(), rank);
  OAR_CHECK_ARG(me != ranks.end(), "distributed: rank " + std::to_string(rank) +
                                       " is not in the group " + ranks_str(ranks) +
                                       "; only its members run its collectives");
  std::string key = "oar/dist";
  for (int r : ranks) key += "/" + std::to_string(r);
  distributed::CommOptions opts;
  opts.name = "ranks " + ranks_str(ranks);
  opts.global_ranks = ranks;
  auto comm = std::make_shared<distributed::Communicator>(device, static_cast<int>(ranks.size()),
                                                          static_cast<int>(me - ranks.begin()),
                                                          *store, key, timeout_ms, opts);
  s.cache.emplace(ranks, comm);
  return comm;
}

namespace {

std::vector<int> ranks_of(const OpDef& op, const Attrs& attrs) {
  const std::vector<int64_t>& given = attrs.get_ints("ranks");
  OAR_CHECK_ARG(!given.empty(),
                op.name + ": attribute 'ranks' is empty; it lists the group's global ranks");
  return std::vector<int>(given.begin(), given.end());
}

// `axis` of a tensor of `rank` dims, checked.
int64_t axis_of(const OpDef& op, const Attrs& attrs, const char* name, size_t rank) {
  int64_t axis = attrs.get_int(name);
  OAR_CHECK_ARG(axis >= 0 && axis < static_cast<int64_t>(rank),
                op.name + ": " + name + " is " + std::to_string(axis) + " but the input has " +
                    std::to_string(rank) + " dims");
  return axis;
}

int64_t divided(const OpDef& op, const char* what, int64_t size, int64_t parts) {
  OAR_CHECK_ARG(size % parts == 0, op.name + ": dim " + what + " has size " + std::to_string(size) +
                                       ", not divisible by the group's " + std::to_string(parts) +
                                       " ranks");
  return size / parts;
}

distributed::ReduceOp reduce_op(const OpDef& op, int64_t kind) {
  switch (static_cast<ReduceKind>(kind)) {
    case ReduceKind::sum:
      return distributed::ReduceOp::sum;
    case ReduceKind::avg:
      return distributed::ReduceOp::avg;
    case ReduceKind::max:
      return distributed::ReduceOp::max;
    case ReduceKind::min:
      return distributed::ReduceOp::min;
  }
  throw Error(ErrorCode::invalid_argument, op.name + ": reduce is " + std::to_string(kind) +
                                               "; expected 0 (sum), 1 (avg), 2 (max) or 3 (min)");
}

// ---- meta rules ----

std::vector<TensorMeta> same_meta(const OpDef& op, std::span<const TensorMeta> in,
                                  const Attrs& attrs) {
  ranks_of(op, attrs);
  return {in[0]};
}

std::vector<TensorMeta> all_gather_meta(const OpDef& op, std::span<const TensorMeta> in,
                                        const Attrs& attrs) {
  TensorMeta out = in[0];
  int64_t axis = axis_of(op, attrs, "axis", out.shape.size());
  out.shape[static_cast<size_t>(axis)] *= static_cast<int64_t>(ranks_of(op, attrs).size());
  return {out};
}

std::vector<TensorMeta> reduce_scatter_meta(const OpDef& op, std::span<const TensorMeta> in,
                                            const Attrs& attrs) {
  TensorMeta out = in[0];
  int64_t axis = axis_of(op, attrs, "axis", out.shape.size());
  int64_t& d = out.shape[static_cast<size_t>(axis)];
  d = divided(op, "axis", d, static_cast<int64_t>(ranks_of(op, attrs).size()));
  reduce_op(op, attrs.get_int("reduce"));
  return {out};
}

std::vector<TensorMeta> all_to_all_meta(const OpDef& op, std::span<const TensorMeta> in,
                                        const Attrs& attrs) {
  TensorMeta out = in[0];
  int64_t split = axis_of(op, attrs, "split_axis", out.shape.size());
  int64_t concat = axis_of(op, attrs, "concat_axis", out.shape.size());
  auto n = static_cast<int64_t>(ranks_of(op, attrs).size());
  out.shape[static_cast<size_t>(split)] =
      divided(op, "split_axis", out.shape[static_cast<size_t>(split)], n);
  out.shape[static_cast<size_t>(concat)] *= n;
  return {out};
}

std::vector<TensorMeta> broadcast_meta(const OpDef& op, std::span<const TensorMeta> in,
                                       const Attrs& attrs) {
  int64_t root = attrs.get_int("root");
  auto n = static_cast<int64_t>(ranks_of(op, attrs).size());
  OAR_CHECK_ARG(root >= 0 && root < n, op.name + ": root is " + std::to_string(root) +
                                           " but the group has " + std::to_string(n) + " ranks");
  return {in[0]};
}

std::vector<TensorMeta> recv_meta(const OpDef& op, std::span<const TensorMeta>,
                                  const Attrs& attrs) {
  ranks_of(op, attrs);
  int64_t dtype = attrs.get_int("dtype");
  OAR_CHECK_ARG(dtype >= 0 && dtype <= static_cast<int64_t>(DType::c128),
                op.name + ": dtype " + std::to_string(dtype) + " is not a dtype code");
  return {TensorMeta{static_cast<DType>(dtype), attrs.get_ints("shape")}};
}

// ---- host functions ----

// Host functions run their helper ops eagerly, without autograd.
struct EagerScope {
  NoGrad no_grad;
  BuilderScope builder{EagerBuilder::instance()};
};

// A fresh contiguous copy (collectives write in place).
Tensor fresh_copy(const Tensor& x) {
  static const OpDef& copy = OpRegistry::instance().get("copy");
  std::array<Tensor, 1> in{x};
  return apply1(copy, in);
}

Tensor contiguous(const Tensor& x) { return x.is_contiguous() ? x : x.contiguous(); }

// dims [0, n) with `from` moved to position `to`.
std::vector<int64_t> moved_perm(int64_t n, int64_t from, int64_t to) {
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < n; ++d)
    if (d != from) perm.push_back(d);
  perm.insert(perm.begin() + to, from);
  return perm;
}

const OpDef& def_of(const char* name) { return OpRegistry::instance().get(name); }

std::vector<Tensor> all_reduce_host(std::span<const Tensor> in, const Attrs& given) {
  const OpDef& op = def_of("c_all_reduce");
  Attrs attrs = with_defaults(op, given);
  std::vector<int> ranks = ranks_of(op, attrs);
  distributed::ReduceOp reduce = reduce_op(op, attrs.get_int("reduce"));
  EagerScope eager;
  Tensor out = fresh_copy(in[0]);
  if (ranks.size() > 1 && out.numel() > 0) group_communicator(ranks)->all_reduce(out, reduce);
  return {out};
}

// Pieces stacked on a new leading dim [n, ...] -> concatenated along `axis`.
Tensor concat_stacked(const Tensor& stacked, int64_t axis) {
  const Shape& s = stacked.shape();  // [n, d0, d1, ...]
  Shape out(s.begin() + 1, s.end());
  out[static_cast<size_t>(axis)] *= s[0];
  Tensor moved = axis == 0 ? stacked : transpose(stacked, moved_perm(stacked.dim(), 0, axis));
  return contiguous(reshape(contiguous(moved), out));
}

std::vector<Tensor> all_gather_host(std::span<const Tensor> in, const Attrs& given) {
  const OpDef& op = def_of("c_all_gather");
  Attrs attrs = with_defaults(op, given);
  std::vector<int> ranks = ranks_of(op, attrs);
  int64_t axis = axis_of(op, attrs, "axis", in[0].shape().size());
  EagerScope eager;
  if (ranks.size() == 1) return {fresh_copy(in[0])};
  auto n = static_cast<int64_t>(ranks.size());
  Tensor x = contiguous(in[0]);
  if (x.numel() == 0) {
    Shape out = x.shape();
    out[static_cast<size_t>(axis)] *= n;
    return {zeros(out, x.dtype(), x.device())};
  }
  return {concat_stacked(group_communicator(ranks)->all_gather(x), axis)};
}

// x with dim `axis` (n * c) split in n blocks moved to a new leading dim: [n, ..., c, ...].
Tensor blocks_first(const Tensor& x, int64_t axis, int64_t n) {
  Shape split;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d == axis) {
      split.push_back(n);
      split.push_back(x.shape()[static_cast<size_t>(d)] / n);
    } else {
      split.push_back(x.shape()[static_cast<size_t>(d)]);
    }
  }
  Tensor r = reshape(contiguous(x), split);
  return contiguous(axis == 0 ? r : transpose(r, moved_perm(r.dim(), axis, 0)));
}

std::vector<Tensor> reduce_scatter_host(std::span<const Tensor> in, const Attrs& given) {
  const OpDef& op = def_of("c_reduce_scatter");
  Attrs attrs = with_defaults(op, given);
  std::vector<int> ranks = ranks_of(op, attrs);
  int64_t axis = axis_of(op, attrs, "axis", in[0].shape().size());
  distributed::ReduceOp reduce = reduce_op(op, attrs.get_int("reduce"));
  EagerScope eager;
  if (ranks.size() == 1) return {fresh_copy(in[0])};
  auto n = static_cast<int64_t>(ranks.size());
  Shape out_shape = in[0].shape();
  out_shape[static_cast<size_t>(axis)] =
      divided(op, "axis", out_shape[static_cast<size_t>(axis)], n);
  if (in[0].numel() == 0) return {zeros(out_shape, in[0].dtype(), in[0].device())};
  Tensor blocks = blocks_first(in[0], axis, n);  // [n, ..., c, ...]
  Shape flat = {blocks.numel()};
  Tensor piece = group_communicator(ranks)->reduce_scatter(reshape(blocks, flat), reduce);
  return {contiguous(reshape(piece, out_shape))};
}

std::vector<Tensor> all_to_all_host(std::span<const Tensor> in, const Attrs& given) {
  const OpDef& op = def_of("c_all_to_all");
  Attrs attrs = with_defaults(op, given);
  std::vector<int> ranks = ranks_of(op, attrs);
  int64_t split = axis_of(op, attrs, "split_axis", in[0].shape().size());
  int64_t concat = axis_of(op, attrs, "concat_axis", in[0].shape().size());
  EagerScope eager;
  if (ranks.size() == 1) return {fresh_copy(in[0])};
  auto n = static_cast<int64_t>(ranks.size());
  Shape piece = in[0].shape();
  piece[static_cast<size_t>(split)] =
      divided(op, "split_axis", piece[static_cast<size_t>(split)], n);
  Shape stacked_shape = piece;
  stacked_shape.insert(stacked_shape.begin(), n);
  if (in[0].numel() == 0) {
    Shape out = piece;
    out[static_cast<size_t>(concat)] *= n;
    return {zeros(out, in[0].dtype(), in[0].device())};
  }
  Tensor send = blocks_first(in[0], split, n);  // block r goes to rank r
  Tensor recv = Tensor::empty(stacked_shape, send.dtype(), send.device());
  group_communicator(ranks)->all_to_all(recv, send);  // block r came from rank r
  return {concat_stacked(recv, concat)};
}

std::vector<Tensor> broadcast_host(std::span<const Tensor> in, const Attrs& given) {
  const OpDef& op = def_of("c_broadcast");
  Attrs attrs = with_defaults(op, given);
  std::vector<int> ranks = ranks_of(op, attrs);
  EagerScope eager;
  Tensor out = fresh_copy(in[0]);
  if (ranks.size() > 1 && out.numel() > 0)
    group_communicator(ranks)->broadcast(out, static_cast<int>(attrs.get_int("root")));
  return {out};
}

// The pair group of a send or recv (both sides name it the same way: sorted)
// and the peer's rank in it.
std::pair<std::vector<int>, int> pair_group(const OpDef& op, const Attrs& attrs) {
  auto peer = static_cast<int>(attrs.get_int("peer"));
  int self = global_rank();
  OAR_CHECK_ARG(peer != self, op.name + ": peer " + std::to_string(peer) + " is this rank itself");
  std::vector<int> pair = {std::min(self, peer), std::max(self, peer)};
  return {pair, pair[0] == peer ? 0 : 1};
}

std::vector<Tensor> send_host(std::span<const Tensor> in, const Attrs& given) {
  const OpDef& op = def_of("c_send");
  Attrs attrs = with_defaults(op, given);
  auto [pair, peer] = pair_group(op, attrs);
  EagerScope eager;
  Tensor x = contiguous(in[0]);
  if (x.numel() > 0) group_communicator(pair)->send(x, peer);
  auto token =
      std::make_shared<TensorImpl>(in[0].impl());  // x's data, a handle of its own (no autograd)
  token->autograd = nullptr;
  return {Tensor(std::move(token))};
}

std::vector<Tensor> recv_host(std::span<const Tensor>, const Attrs& given) {
  const OpDef& op = def_of("c_recv");
  Attrs attrs = with_defaults(op, given);
  auto [pair, peer] = pair_group(op, attrs);
  EagerScope eager;
  std::vector<TensorMeta> meta = recv_meta(op, {}, attrs);
  auto comm = group_communicator(pair);
  Tensor out = Tensor::empty(meta[0].shape, meta[0].dtype, comm->device());
  if (out.numel() > 0) comm->recv(out, peer);
  return {out};
}

}  // namespace

namespace {
// Note [Collective counts]: how many host ops of each kind this process
// ran and the bytes of their inputs (c_recv: of its output), eager and
// executor alike (both come through run_host_op). The semi-auto-parallel
// benchmark compares what the rules inserted with the analytic minimum.
std::mutex g_stats_mutex;
std::map<std::string, CollectiveCount> g_stats;
}  // namespace

std::map<std::string, CollectiveCount> collective_stats() {
  std::lock_guard lock(g_stats_mutex);
  return g_stats;
}

void reset_collective_stats() {
  std::lock_guard lock(g_stats_mutex);
  g_stats.clear();
}

std::vector<Tensor> run_host_op(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs,
                                std::span<const TensorMeta> out_meta) {
  std::vector<Tensor> outputs = op.host(inputs, attrs);
  if (op.name.rfind("c_", 0) == 0) {  // collectives; print and assert are host ops too
    int64_t bytes = 0;
    if (inputs.empty()) {
      for (const TensorMeta& m : out_meta) bytes += shape_numel(m.shape) * static_cast<int64_t>(dtype_size(m.dtype));
    } else {
      for (const Tensor& t : inputs) bytes += shape_numel(t.shape()) * static_cast<int64_t>(dtype_size(t.dtype()));
    }
    std::lock_guard lock(g_stats_mutex);
    CollectiveCount& c = g_stats[op.name];
    c.calls += 1;
    c.bytes += bytes;
  }
  if (outputs.size() != out_meta.size()) {
    throw Error(ErrorCode::internal,
                op.name + ": the host function gave " + std::to_string(outputs.size()) +
                    " outputs but the meta rule describes " + std::to_string(out_meta.size()));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& t = outputs[i];
    // The values decide the first dim of a data_dependent_shape op, at most
    // what its meta rule says (Note [nonzero] in index_values.cpp).
    bool shape_ok = t.defined() && t.shape().size() == out_meta[i].shape.size();
    for (size_t d = 0; shape_ok && d < t.shape().size(); ++d) {
      shape_ok = t.shape()[d] == out_meta[i].shape[d] ||
                 (d == 0 && op.data_dependent_shape && t.shape()[d] <= out_meta[i].shape[d]);
    }
    if (!t.defined() || t.dtype() != out_meta[i].dtype || !shape_ok) {
      throw Error(ErrorCode::internal,
                  op.name + ": the host function gave output " + std::to_string(i) + " as " +
                      (t.defined() ? std::string(dtype_name(t.dtype())) + " " + shape_str(t.shape())
                                   : "undefined") +
                      " but the meta rule says " + std::string(dtype_name(out_meta[i].dtype)) +
                      " " + shape_str(out_meta[i].shape));
    }
  }
  return outputs;
}

OAR_REGISTER_OPS(collectives) {
  auto& registry = OpRegistry::instance();
  const AttrSpec ranks =
      attr("ranks", AttrKind::ints, "the global ranks of the group, in group order");
  const AttrSpec reduce = attr("reduce", int64_t{0}, "ReduceKind: 0 sum, 1 avg, 2 max, 3 min");
  auto collective = [&](OpDef def) {
    def.differentiable = false;
    registry.add(std::move(def));
  };
  collective({.name = "c_all_reduce",
              .meta = same_meta,
              .attrs = {ranks, reduce},
              .host = all_reduce_host,
              .doc = "every rank gets the reduction of the group's tensors"});
  collective(
      {.name = "c_all_gather",
       .meta = all_gather_meta,
       .attrs = {ranks, attr("axis", AttrKind::int_, "the dim the pieces are concatenated along")},
       .host = all_gather_host,
       .doc = "the group's equal pieces concatenated along axis, in group order"});
  collective(
      {.name = "c_reduce_scatter",
       .meta = reduce_scatter_meta,
       .attrs = {ranks, attr("axis", AttrKind::int_, "the dim split into one block per rank"),
                 reduce},
       .host = reduce_scatter_host,
       .doc = "the reduction of the group's tensors; rank i keeps block i along axis"});
  collective(
      {.name = "c_all_to_all",
       .meta = all_to_all_meta,
       .attrs = {ranks, attr("split_axis", AttrKind::int_, "the dim split into one block per rank"),
                 attr("concat_axis", AttrKind::int_,
                      "the dim the received blocks are concatenated along")},
       .host = all_to_all_host,
       .doc = "block j along split_axis goes to rank j; received blocks concatenate along "
              "concat_axis"});
  collective({.name = "c_broadcast",
              .meta = broadcast_meta,
              .attrs = {ranks, attr("root", AttrKind::int_, "the sending rank's index in ranks")},
              .host = broadcast_host,
              .doc = "every rank gets the root's tensor"});
  collective({.name = "c_send",
              .meta = same_meta,
              .attrs = {ranks, attr("peer", AttrKind::int_, "the receiving global rank")},
              .host = send_host,
              .doc = "sends x to peer; the output is x (a token that orders later ops)"});
  collective({.name = "c_recv",
              .num_inputs = 0,
              .meta = recv_meta,
              .attrs = {ranks, attr("peer", AttrKind::int_, "the sending global rank"),
                        attr("shape", AttrKind::ints, "the received tensor's shape"),
                        attr("dtype", AttrKind::int_, "the received tensor's dtype code")},
              .host = recv_host,
              .doc = "receives a tensor of shape and dtype from peer"});
}

}  // namespace oar::dist
