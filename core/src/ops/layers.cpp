// Layer ops (composite): dropout, embedding, scaled_dot_product_attention.
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

std::vector<TensorMeta> embedding_meta(const OpDef&, std::span<const TensorMeta> in, const Attrs&) {
  OAR_CHECK_ARG(in[0].dtype == DType::i32 || in[0].dtype == DType::i64,
            "embedding: ids must be int32 or int64 but are " + std::string(dtype_name(in[0].dtype)));
  OAR_CHECK_ARG(in[1].shape.size() == 2, "embedding: weight must be [num_embeddings, dim] but has shape " +
                                         shape_str(in[1].shape));
  Shape out = in[0].shape;
  out.push_back(in[1].shape[1]);
  return {{in[1].dtype, out}};
}

std::vector<Tensor> embedding_decompose(std::span<const Tensor> in, const Attrs&) {
  Shape out = in[0].shape();
  out.push_back(in[1].shape()[1]);
  return {reshape(gather(in[1], reshape(in[0], {-1}), 0), out)};
}

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
  add_op({.name = "embedding", .kind = OpKind::composite, .num_inputs = 2, .meta = embedding_meta,
          .decompose = embedding_decompose, .doc = "rows of weight picked by the ids"});
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
