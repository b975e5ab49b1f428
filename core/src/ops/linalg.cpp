// matmul (primitive) and linear (composite).
#include <array>

#include "oar/autograd.h"
#include "oar/ops.h"
#include "ops/op_util.h"

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

std::vector<Tensor> linear_decompose(std::span<const Tensor> in, const Attrs&) {
  return {matmul(in[0], in[1]) + in[2]};
}

}  // namespace

OAR_REGISTER_OPS(linalg) {
  add_op({.name = "matmul", .num_inputs = 2, .layout = InputLayout::broadcast, .meta = matmul_meta, .vjp = matmul_vjp,
          .attrs = {attr("transpose_a", false, "use a's last two dims swapped"),
                    attr("transpose_b", false, "use b's last two dims swapped")},
          .doc = "a, b, y have one ndim >= 2; batch dims broadcast; y[..., m, n] = sum_k a[..., m, k] b[..., k, n]"});
  add_op({.name = "linear", .kind = OpKind::composite, .num_inputs = 3, .meta = linear_meta,
          .decompose = linear_decompose, .doc = "y = x w + b"});
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
