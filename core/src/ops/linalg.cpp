// matmul (primitive) and linear (composite).
#include <array>

#include "oar/autograd.h"
#include "oar/ops.h"
#include "ops/op_util.h"
#include "ops/spmd_util.h"

namespace oar {

namespace {

// Inputs of rank >= 2; batch dims broadcast; the kernel sees both padded to
// the output's rank (docs/kernels.md).
std::vector<TensorMeta> matmul_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs) {
  meta::require_same_dtype(op, in);
  const Shape& a = in[0].shape;
  const Shape& b = in[1].shape;
  if (a.size() < 2 || b.size() < 2) {
    throw Error(ErrorCode::invalid_argument, "matmul: the primitive needs inputs of rank >= 2 but got " + shape_str(a) +
                                                 " and " + shape_str(b));
  }
  bool ta = attrs.get_bool("transpose_a"), tb = attrs.get_bool("transpose_b");
  int64_t m = a[a.size() - (ta ? 1 : 2)], ka = a[a.size() - (ta ? 2 : 1)];
  int64_t kb = b[b.size() - (tb ? 1 : 2)], n = b[b.size() - (tb ? 2 : 1)];
  if (ka != kb) {
    throw Error(ErrorCode::invalid_argument, "matmul: x has shape " + shape_str(a) + " but y has shape " + shape_str(b) +
                                                 (ta || tb ? " (after transposes)" : "") + "; the contracted dims " +
                                                 std::to_string(ka) + " and " + std::to_string(kb) + " differ");
  }
  Shape batch = meta::broadcast_shapes("matmul", Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
  batch.push_back(m);
  batch.push_back(n);
  return {{in[0].dtype, batch}};
}

// C = op(A) op(B): dA = g op(B)^T (or op(B) g^T when A is transposed),
// dB = op(A)^T g (or g^T op(A)); broadcast batch dims are summed back.
std::vector<Tensor> matmul_vjp(const VjpContext& c) {
  // Complex: the real rule with the other operand conjugated, dA = g B^H
  // (Note [Complex gradients] in complex.cpp).
  const Tensor& g = c.grads[0];
  const bool cplx = is_complex(c.inputs[0].dtype());
  const Tensor a = cplx ? conj(c.inputs[0]) : c.inputs[0], b = cplx ? conj(c.inputs[1]) : c.inputs[1];
  bool ta = c.attrs.get_bool("transpose_a"), tb = c.attrs.get_bool("transpose_b");
  Tensor da, db;
  if (c.needs[0]) da = sum_to_like(ta ? matmul(b, g, tb, true) : matmul(g, b, false, !tb), c.inputs[0]);
  if (c.needs[1]) db = sum_to_like(tb ? matmul(g, a, true, ta) : matmul(a, g, !ta, false), c.inputs[1]);
  return {da, db};
}

// Note [matmul SPMD rule]
// Along one mesh dim, y = op(a) op(b) runs sharded in one of these ways:
//  - a batch dim: a and b sharded on it where they hold it at the output's
//    size, replicated where they lack or broadcast it; y sharded on it;
//  - m: a sharded on its m dim, b replicated: y Shard(rank - 2);
//  - n: a replicated, b sharded on its n dim: y Shard(rank - 1);
//  - k: both sharded on the contracted dim: each rank multiplies its slices
//    and y is Partial(sum) (when only one side holds k sharded, slicing the
//    replicated other side is free, so this is what a replicated other side
//    gets; a differently sharded other side is resharded if that is cheaper
//    than gathering the k-sharded one);
//  - a Partial(sum|avg) operand times a replicated one: y Partial (linear);
//  - everything replicated.
// The rule takes the one needing the cheapest reshards (Note [Choosing among
// placements] in spmd_util.cpp). transpose_a/transpose_b only move which
// dims of a and b are m, k and n.
SpmdResult matmul_spmd(const SpmdArgs& args) {
  using spmd_util::Candidate;
  const Shape& a = args.inputs[0].shape;
  const Shape& b = args.inputs[1].shape;
  const auto ra = static_cast<int64_t>(a.size()), rb = static_cast<int64_t>(b.size());
  const bool ta = args.attrs.get_bool("transpose_a"), tb = args.attrs.get_bool("transpose_b");
  const int64_t a_m = ta ? ra - 1 : ra - 2, a_k = ta ? ra - 2 : ra - 1;
  const int64_t b_k = tb ? rb - 1 : rb - 2, b_n = tb ? rb - 2 : rb - 1;
  const Shape a_batch(a.begin(), a.end() - 2), b_batch(b.begin(), b.end() - 2);
  const Shape batch = meta::broadcast_shapes("matmul", a_batch, b_batch);
  const auto rank = static_cast<int64_t>(batch.size()) + 2;
  const Placement R = Placement::Replicate();

  std::vector<Candidate> candidates;
  for (size_t i = 0; i < 2; ++i) {
    const Placement& p = args.placements[i];
    if (p.is_partial() && (p.reduce == ReduceKind::sum || p.reduce == ReduceKind::avg)) {
      Candidate c{{R, R}, {p}};
      c.inputs[i] = p;
      candidates.push_back(std::move(c));
    }
  }
  for (size_t o = 0; o < batch.size(); ++o) {
    Placement pa = spmd_util::input_for_output_shard(a_batch, batch, static_cast<int64_t>(o));
    Placement pb = spmd_util::input_for_output_shard(b_batch, batch, static_cast<int64_t>(o));
    if (pa.is_shard() || pb.is_shard()) candidates.push_back({{pa, pb}, {Placement::Shard(static_cast<int64_t>(o))}});
  }
  candidates.push_back({{Placement::Shard(a_m), R}, {Placement::Shard(rank - 2)}});
  candidates.push_back({{R, Placement::Shard(b_n)}, {Placement::Shard(rank - 1)}});
  candidates.push_back({{Placement::Shard(a_k), Placement::Shard(b_k)}, {Placement::Partial()}});
  candidates.push_back({{R, R}, {R}});
  return spmd_util::cheapest(args, candidates);
}

std::vector<TensorMeta> linear_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs&) {
  meta::require_same_dtype(op, in);
  const Shape& x = in[0].shape;
  const Shape& w = in[1].shape;
  if (x.empty() || w.size() != 2 || x.back() != w[0]) {
    throw Error(ErrorCode::invalid_argument, "linear: x has shape " + shape_str(x) + " and weight has shape " +
                                                 shape_str(w) + "; weight must be [in_features, out_features] with "
                                                 "in_features equal to x's last dim");
  }
  if (in[2].shape.size() > 1 || (in[2].shape.size() == 1 && in[2].shape[0] != w[1])) {
    throw Error(ErrorCode::invalid_argument, "linear: bias has shape " + shape_str(in[2].shape) + " but [" +
                                                 std::to_string(w[1]) + "] is required");
  }
  Shape out = x;
  out.back() = w[1];
  return {{in[0].dtype, out}};
}

// linear has no SPMD rule: its decomposition's matmul and add have theirs
// (a column-sharded weight gives a column-sharded y, a row-sharded one a
// Partial y; the bias add follows Note [Elementwise SPMD rules]).
std::vector<Tensor> linear_decompose(std::span<const Tensor> in, const Attrs&) {
  return {matmul(in[0], in[1]) + in[2]};
}

// linear's VJP: matmul's rule for x w, and the bias's gradient summed to its
// shape. With it, a training step runs the fused linear kernel (matmul with
// the bias added in its epilogue) instead of matmul + add, and on
// distributed tensors one op instead of two through the dispatch.
std::vector<Tensor> linear_vjp(const VjpContext& c) {
  const Tensor& g = c.grads[0];
  if (!g.defined()) return std::vector<Tensor>(3);
  const Tensor &x = c.inputs[0], &w = c.inputs[1], &b = c.inputs[2];
  const bool cplx = is_complex(x.dtype());
  const Tensor xc = cplx ? conj(x) : x, wc = cplx ? conj(w) : w;
  Tensor dx, dw, db;
  if (c.needs[0]) dx = matmul(g, wc, false, true);
  if (c.needs[1]) {
    if (x.dim() == 1) {
      std::array<Tensor, 2> col_row{unsqueeze(xc, {1}), unsqueeze(g, {0})};
      dw = matmul(col_row[0], col_row[1]);
    } else {
      dw = sum_to_like(matmul(xc, g, true, false), w);
    }
  }
  if (c.needs[2]) db = sum_to_like(g, b);
  return {dx, dw, db};
}

// Note [linear SPMD rule]: linear(x, w, b) = x w + b runs sharded as
// matmul does (Note [matmul SPMD rule]) with the bias placed to match:
//  - a batch dim of x (or its m dim): w and b replicated, y sharded alike;
//  - w's n dim (column parallel): x replicated, b sharded on its one dim
//    (a scalar bias stays replicated), y Shard(last);
//  - the contracted k dim (row parallel): x and w sharded on it, b made
//    Partial (one rank keeps it, the others add zeros: R -> P is local), y
//    Partial(sum), so sum over ranks of (x_k w_k + b_r) = x w + b;
//  - everything replicated.
SpmdResult linear_spmd(const SpmdArgs& args) {
  using spmd_util::Candidate;
  const Shape& x = args.inputs[0].shape;
  const auto rx = static_cast<int64_t>(x.size());
  const bool vector_bias = args.inputs[2].shape.size() == 1;
  const Placement R = Placement::Replicate();
  std::vector<Candidate> candidates;
  for (int64_t d = 0; d + 1 < rx; ++d) candidates.push_back({{Placement::Shard(d), R, R}, {Placement::Shard(d)}});
  candidates.push_back({{R, Placement::Shard(1), vector_bias ? Placement::Shard(0) : R}, {Placement::Shard(rx - 1)}});
  candidates.push_back({{Placement::Shard(rx - 1), Placement::Shard(0), Placement::Partial()}, {Placement::Partial()}});
  candidates.push_back({{R, R, R}, {R}});
  return spmd_util::cheapest(args, candidates);
}

}  // namespace

OAR_REGISTER_OPS(linalg) {
  add_op({.name = "matmul", .num_inputs = 2, .layout = InputLayout::broadcast, .meta = matmul_meta, .vjp = matmul_vjp,
          .attrs = {attr("transpose_a", false, "use a's last two dims swapped"),
                    attr("transpose_b", false, "use b's last two dims swapped")},
          .dtypes = {.accepts = kAllDTypes | kComplexDTypes}, .spmd = matmul_spmd,
          .doc = "a, b, y have one ndim >= 2; batch dims broadcast; y[..., m, n] = sum_k a[..., m, k] b[..., k, n]"});
  add_op({.name = "linear", .kind = OpKind::composite, .num_inputs = 3, .meta = linear_meta,
          .decompose = linear_decompose, .vjp = linear_vjp, .spmd = linear_spmd, .doc = "y = x w + b"});
}

Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b) {
  DType d = promote_types(a.dtype(), b.dtype());
  Tensor x = cast(a, d), y = cast(b, d);
  bool vec_a = x.dim() == 1, vec_b = y.dim() == 1;
  OAR_CHECK_ARG(x.dim() >= 1 && y.dim() >= 1, "matmul: inputs must have rank >= 1 but got " + shape_str(a.shape()) +
                                              " and " + shape_str(b.shape()));
  if (vec_a) x = reshape(x, {1, x.shape()[0]}), transpose_a = false;
  if (vec_b) y = reshape(y, {y.shape()[0], 1}), transpose_b = false;
  std::array<Tensor, 2> in{x, y};
  Tensor out = apply1(OAR_OP("matmul"), in, Attrs{{"transpose_a", transpose_a}, {"transpose_b", transpose_b}});
  if (vec_a || vec_b) {
    Shape s = out.shape();
    if (vec_b) s.pop_back();
    if (vec_a) s.erase(s.end() - (vec_b ? 1 : 2));
    out = reshape(out, s);
  }
  return out;
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (!bias.defined()) return matmul(x, weight);
  DType d = promote_types(x.dtype(), weight.dtype());
  std::array<Tensor, 3> in{cast(x, d), cast(weight, d), cast(bias, d)};
  return apply1(OAR_OP("linear"), in);
}

}  // namespace oar
