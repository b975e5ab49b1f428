// Layer ops (composite): dropout, embedding (and its gradient), scaled_dot_product_attention.
#include <array>
#include <cmath>

#include "oar/ops.h"
#include "ops/op_util.h"

namespace oar {

namespace {

std::vector<TensorMeta> dropout_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs) {
  meta::require_float(op, in, 0);
  double p = attrs.get_float("p");
  OAR_CHECK_ARG(p >= 0.0 && p <= 1.0, "dropout: p must be in [0, 1] but is " + std::to_string(p));
  return {in[0]};
}

// dropout has no SPMD rule: on distributed tensors it decomposes, and its
// parts have rules (uniform_like draws the dense mask's slice, Note
// [Sharded random numbers] in creation.cpp; the compare, cast and
// multiplies keep x's sharding), so a sharded dropout equals the dense one.
std::vector<Tensor> dropout_decompose(std::span<const Tensor> in, const Attrs& attrs) {
  const Tensor& x = in[0];
  double p = attrs.get_float("p");
  if (p >= 1.0) return {x * 0.0};
  // The mask takes x's shape when it runs (uniform_like), so a program
  // traced with a dynamic batch holds for every batch size; its numbers are
  // uniform's for that shape, seed and offset.
  std::array<Tensor, 1> shape_of_x{x.detach()};
  Tensor u = apply1(OAR_OP("uniform_like"), shape_of_x,
                    Attrs{{"dtype", static_cast<int64_t>(x.dtype())},
                          {"seed", attrs.get_int("seed")},
                          {"offset", attrs.get_int("offset")},
                          {"low", 0.0},
                          {"high", 1.0}});
  Tensor keep = cast(greater_equal(u, full_like(u, p)), x.dtype());
  return {x * keep * (1.0 / (1.0 - p))};
}

// Note [Vocab-parallel embedding]
// With its table split by rows (weight Shard(0), Megatron's vocab-parallel
// embedding) rank r holds rows [start, start + rows) and looks up only the
// ids that fall there, giving zero rows for the others, so the ranks'
// outputs sum to the dense lookup: the output is Partial(sum). The rule
// asks for the ids whole; the localize passes `start_index` (the row
// offset of this rank's piece, LocalizeArgs::input_offsets) to the local
// op, whose decomposition masks. The gradient, embedding_grad with the same
// start_index, scatters into this rank's rows only the rows of g whose id
// falls there, so no rank holds the whole table or its gradient. A column-
// sharded table (Shard(1)) looks up whole ids into sharded features
// (output Shard(last)), and sharded ids with a whole table give sharded
// outputs (data parallel, gradient Partial(sum)). start_index -1 (the
// default) is the dense op, unchanged.
std::vector<TensorMeta> embedding_meta(const OpDef&, std::span<const TensorMeta> in, const Attrs&) {
  OAR_CHECK_ARG(in[0].dtype == DType::i32 || in[0].dtype == DType::i64,
            "embedding: ids must be int32 or int64 but are " + std::string(dtype_name(in[0].dtype)));
  OAR_CHECK_ARG(in[1].shape.size() == 2, "embedding: weight must be [num_embeddings, dim] but has shape " +
                                         shape_str(in[1].shape));
  Shape out = in[0].shape;
  out.push_back(in[1].shape[1]);
  return {{in[1].dtype, out}};
}

// The start_index attribute (-1 when a caller leaves it out: the dense op).
int64_t start_index_of(const Attrs& attrs) { return attrs.has("start_index") ? attrs.get_int("start_index") : -1; }

// ids relative to rows [start, start + rows): the local row where inside,
// 0 elsewhere, and the mask of the inside ones as a [n, 1] column of `dtype`.
std::pair<Tensor, Tensor> local_rows(const Tensor& flat_ids, int64_t start, int64_t rows, DType dtype) {
  const Device device = flat_ids.device();
  Tensor local = cast(flat_ids, DType::i64) - full({}, static_cast<double>(start), DType::i64, device);
  Tensor inside = logical_and(greater_equal(local, full({}, 0.0, DType::i64, device)),
                              less_than(local, full({}, static_cast<double>(rows), DType::i64, device)));
  return {where(inside, local, full({}, 0.0, DType::i64, device)), reshape(cast(inside, dtype), {-1, 1})};
}

std::vector<Tensor> embedding_decompose(std::span<const Tensor> in, const Attrs& attrs) {
  Shape out = in[0].shape();
  out.push_back(in[1].shape()[1]);
  const int64_t start = start_index_of(attrs);
  if (start < 0) return {reshape(gather(in[1], reshape(in[0], {-1}), 0), out)};
  const int64_t rows = in[1].shape()[0];
  if (rows == 0) return {zeros(out, in[1].dtype(), in[1].device())};
  auto [index, inside] = local_rows(reshape(in[0], {-1}), start, rows, in[1].dtype());
  return {reshape(gather(in[1], index, 0) * inside, out)};
}

Tensor embedding_grad(const Tensor& ids, const Tensor& g, const Tensor& weight, int64_t start_index) {
  std::array<Tensor, 3> in{ids, g, weight.detach()};
  return apply1(OAR_OP("embedding_grad"), in, Attrs{{"start_index", start_index}});
}

std::vector<TensorMeta> embedding_grad_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs&) {
  meta::require_float(op, in, 1);
  Shape expected = in[0].shape;
  if (in[2].shape.size() == 2) expected.push_back(in[2].shape[1]);
  OAR_CHECK_ARG(in[2].shape.size() == 2 && in[1].shape == expected,
                "embedding_grad: g must have shape ids + [dim] = " + shape_str(expected) + " for a weight of shape " +
                    shape_str(in[2].shape) + " but has shape " + shape_str(in[1].shape));
  return {{in[1].dtype, in[2].shape}};
}

// The rows of g summed into zeros shaped like the weight at their ids
// (only the ids in the weight's rows when start_index >= 0).
std::vector<Tensor> embedding_grad_decompose(std::span<const Tensor> in, const Attrs& attrs) {
  const Tensor& weight = in[2];
  Tensor ids = reshape(in[0], {-1});
  Tensor rows_of_g = reshape(in[1], {-1, weight.shape()[1]});
  const int64_t start = start_index_of(attrs);
  if (start >= 0) {
    if (weight.shape()[0] == 0) return {full_like(weight, 0.0, in[1].dtype())};
    auto [index, inside] = local_rows(ids, start, weight.shape()[0], in[1].dtype());
    ids = index;
    rows_of_g = rows_of_g * inside;
  }
  return {scatter_add(full_like(weight, 0.0, in[1].dtype()), ids, rows_of_g, 0)};
}

using Grads = std::vector<Tensor>;
Grads embedding_vjp(const VjpContext& c) {
  if (!c.needs[1]) return {Tensor(), Tensor()};
  return {Tensor(), embedding_grad(c.inputs[0], c.grads[0], c.inputs[1], start_index_of(c.attrs))};
}
// embedding_grad is linear in g: its adjoint is the lookup.
Grads embedding_grad_vjp(const VjpContext& c) {
  if (!c.needs[1]) return {Tensor(), Tensor(), Tensor()};
  std::array<Tensor, 2> in{c.inputs[0], c.grads[0]};
  // The incoming gradient, shaped like the weight, is the table looked up.
  return {Tensor(), apply1(OAR_OP("embedding"), in, Attrs{{"start_index", start_index_of(c.attrs)}}), Tensor()};
}

// ---- SPMD rules (spmd.h): Note [Vocab-parallel embedding] ----
// A sharded table decides (it is the large operand, and the lookup and
// its gradient then stay placed like it): Shard(0) needs the ids whole and
// gives Partial(sum), Shard(1) gives Shard(last). A whole table follows
// the ids (Shard(d) -> Shard(d)); a Partial table with whole ids gives the
// same Partial (the lookup selects rows: it commutes with sum, max, min).
SpmdResult embedding_spmd(const SpmdArgs& a) {
  const Placement R = Placement::Replicate();
  const Placement& ids = a.placements[0];
  const Placement& weight = a.placements[1];
  if (weight.is_shard(0)) return {{R, weight}, {Placement::Partial(ReduceKind::sum)}};
  if (weight.is_shard(1)) return {{R, weight}, {Placement::Shard(static_cast<int64_t>(a.inputs[0].shape.size()))}};
  if (weight.is_partial()) return {{R, weight}, {weight}};
  if (ids.is_shard()) return {{ids, R}, {ids}};
  return {{R, R}, {R}};
}

// embedding_grad(ids, g, weight) comes out placed like a sharded weight:
// Shard(0) scatters whole ids and g into this rank's rows, Shard(1) takes
// g sharded on its features (so does a replicated weight with such a g).
// With a whole weight (read for its shape only, so a Partial one counts as
// whole) ids sharded on d and g sharded alike give partial sums of the
// gradient, as does a Partial(sum) g with whole ids.
SpmdResult embedding_grad_spmd(const SpmdArgs& a) {
  const Placement R = Placement::Replicate();
  const Placement P = Placement::Partial(ReduceKind::sum);
  const Placement& ids = a.placements[0];
  const Placement& g = a.placements[1];
  const Placement& weight = a.placements[2];
  const auto last = static_cast<int64_t>(a.inputs[0].shape.size());
  if (weight.is_shard(0)) return {{R, R, weight}, {weight}};
  if (weight.is_shard(1)) return {{R, Placement::Shard(last), weight}, {weight}};
  if (ids.is_shard()) return {{ids, ids, weight}, {P}};
  if (g.is_shard() && g.dim < last) return {{g, g, weight}, {P}};  // ids sliced like g
  if (g.is_shard(last) && weight.is_replicate()) return {{R, g, Placement::Shard(1)}, {Placement::Shard(1)}};
  if (g == P) return {{R, P, weight}, {P}};
  return {{R, R, weight}, {R}};
}

// A row-sharded weight (input `weight`) looks up from its row offset.
Attrs localize_row_offset(const LocalizeArgs& a, size_t weight) {
  Attrs out = a.attrs;
  const int64_t local_rows = a.local_inputs[weight].shape[0];
  if (!a.global_inputs.empty() && a.global_inputs[weight].shape[0] == local_rows) return out;  // the whole table
  OAR_CHECK_ARG(!a.input_offsets.empty(), a.op.name + ": a row-sharded weight needs the row offset of this rank's "
                                          "piece (LocalizeArgs::input_offsets), which the caller did not give");
  const int64_t base = std::max<int64_t>(start_index_of(a.attrs), 0);
  out.set("start_index", base + a.input_offsets[weight][0]);
  return out;
}
Attrs embedding_localize(const LocalizeArgs& a) { return localize_row_offset(a, 1); }
Attrs embedding_grad_localize(const LocalizeArgs& a) { return localize_row_offset(a, 2); }

std::vector<TensorMeta> attention_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs&) {
  meta::require_float(op, in, 0);
  meta::require_same_dtype(op, in);
  const Shape &q = in[0].shape, &k = in[1].shape, &v = in[2].shape;
  bool ok = q.size() == 4 && k.size() == 4 && v.size() == 4 && q[0] == k[0] && k[0] == v[0] && q[2] == k[2] &&
            k[2] == v[2] && q[3] == k[3] && k[1] == v[1];
  OAR_CHECK_ARG(ok, "scaled_dot_product_attention: query " + shape_str(q) + ", key " + shape_str(k) + " and value " +
                    shape_str(v) + " must be [batch, seq, heads, head_dim] with matching batch, heads, key/value "
                    "length and query/key head_dim");
  Shape out = q;
  out[3] = v[3];
  return {{in[0].dtype, out}};
}

// scaled_dot_product_attention has no SPMD rule: in dist mode the
// dispatcher runs this decomposition, whose parts carry the placements
// through (transpose moves the shard, matmul and softmax keep a sharded
// batch or head dim), and a sharded sequence or head_dim goes the way
// matmul's and softmax's rules take it (contractions give Partial sums,
// softmax gathers a sharded key axis), so every placement gives the dense
// result and its gradient (no fused kernel exists whose local run a rule
// would buy).
std::vector<Tensor> attention_decompose(std::span<const Tensor> in, const Attrs& attrs) {
  const std::vector<int64_t> heads_first{0, 2, 1, 3};
  Tensor q = transpose(in[0], heads_first), k = transpose(in[1], heads_first), v = transpose(in[2], heads_first);
  auto head_dim = static_cast<double>(in[0].shape()[3]);
  Tensor scores = matmul(q, k, false, true) * (1.0 / std::sqrt(head_dim));
  if (attrs.get_bool("is_causal")) {
    int64_t sq = in[0].shape()[1], sk = in[1].shape()[1];
    Tensor row = reshape(arange(0, static_cast<double>(sq), 1, DType::i64, q.device()), {sq, 1});
    Tensor col = reshape(arange(0, static_cast<double>(sk), 1, DType::i64, q.device()), {1, sk});
    Tensor allowed = less_equal(col, row + static_cast<double>(sk - sq));
    scores = where(allowed, scores, full({}, -1e30, scores.dtype(), scores.device()));
  }
  return {transpose(matmul(softmax(scores, -1), v), heads_first)};
}

}  // namespace

OAR_REGISTER_OPS(layers) {
  add_op({.name = "dropout", .kind = OpKind::composite, .meta = dropout_meta, .decompose = dropout_decompose, .random = true,
          .attrs = {attr("p", 0.5, "probability of zeroing an element"), attr("seed", AttrKind::int_, "Philox key"),
                    attr("offset", AttrKind::int_, "Philox counter offset")},
          .dtypes = {.accepts = kFloatDTypes},
          .doc = "zero each element with probability p, scale the rest by 1 / (1 - p)"});
  const AttrSpec start_index = attr("start_index", int64_t{-1},
                                    "-1: every id is a row; >= 0: weight holds rows [start_index, start_index + "
                                    "rows) of a larger table and other ids give zeros (vocab-parallel)");
  add_op({.name = "embedding", .kind = OpKind::composite, .num_inputs = 2, .meta = embedding_meta,
          .decompose = embedding_decompose, .vjp = embedding_vjp, .attrs = {start_index}, .spmd = embedding_spmd,
          .localize = embedding_localize, .doc = "rows of weight picked by the ids"});
  add_op({.name = "embedding_grad", .kind = OpKind::composite, .num_inputs = 3, .meta = embedding_grad_meta,
          .decompose = embedding_grad_decompose, .vjp = embedding_grad_vjp, .attrs = {start_index},
          .spmd = embedding_grad_spmd, .localize = embedding_grad_localize,
          .doc = "the gradient of embedding's weight: g's rows summed at their ids (weight: shape only)"});
  add_op({.name = "scaled_dot_product_attention", .kind = OpKind::composite, .num_inputs = 3,
          .meta = attention_meta, .decompose = attention_decompose,
          .attrs = {attr("is_causal", false, "mask out keys after each query")},
          .dtypes = {.accepts = kFloatDTypes},
          .doc = "softmax(q k^T / sqrt(d)) v over [batch, seq, heads, dim]"});
}

Tensor dropout(const Tensor& x, double p, bool training) {
  if (!training || p == 0.0) return x;
  auto [seed, offset] = next_random_state();  // the mask's stream of the global generator
  std::array<Tensor, 1> in{x};
  return apply1(OAR_OP("dropout"), in,
                Attrs{{"p", p}, {"seed", static_cast<int64_t>(seed)}, {"offset", static_cast<int64_t>(offset)}});
}

Tensor embedding(const Tensor& ids, const Tensor& weight) {
  Tensor checked = ids;
  if (weight.dim() == 2) {  // else the meta rule names the shape
    checked = check_index_values({.op = "embedding", .what = "id", .size = weight.shape()[0],
                                  .size_is = "the number of rows of weight " + shape_str(weight.shape())},
                                 ids);
  }
  std::array<Tensor, 2> in{checked, weight};
  return apply1(OAR_OP("embedding"), in);
}

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value, bool is_causal) {
  DType d = promote_types(promote_types(query.dtype(), key.dtype()), value.dtype());
  std::array<Tensor, 3> in{cast(query, d), cast(key, d), cast(value, d)};
  return apply1(OAR_OP("scaled_dot_product_attention"), in, Attrs{{"is_causal", is_causal}});
}

}  // namespace oar
