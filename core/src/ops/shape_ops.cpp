// Ops that take their shape from an operand: full_like, broadcast_to_like,
// sum_to_like, and the shape and element count of a tensor as values.
//
// Note [Shape from an operand]
// A decomposition or VJP rule that writes x.shape() into an attribute
// (full(x.shape()), broadcast_to(g, x.shape()), sum's count in mean) is
// right for the sizes it was traced with and wrong for every other batch
// size, so a traced program holding it must be specialized (Note [Dynamic
// dims] in oar/ir/trace.h). These ops read the shape of their last operand
// when they run instead, as Paddle's full_like/expand_as and shape64 do, so
// the rules written with them stay valid for every size of a dynamic dim:
//  - full_like(x) {value, dtype}: x's shape filled with value;
//  - broadcast_to_like(x, ref): x broadcast to ref's shape;
//  - sum_to_like(g, ref): g summed back to ref's shape (the adjoint);
//  - shape(x): a 1-D i64 tensor of x's dims; numel(x): a 0-D i64 count.
// Only the shape of the reference operand is read, never its values, so
// the C++ functions pass it detached: a reference that requires grad does
// not make the result require grad.
#include <array>

#include "oar/autograd.h"
#include "oar/ir/trace.h"
#include "oar/ops.h"
#include "ops/op_util.h"
#include "ops/shape_util.h"
#include "ops/spmd_util.h"
#include "ops/spmd_util.h"

namespace oar {

namespace {

std::vector<TensorMeta> full_like_meta(const OpDef&, std::span<const TensorMeta> in, const Attrs& attrs) {
  return {{static_cast<DType>(attrs.get_int("dtype")), in[0].shape}};
}

std::vector<TensorMeta> broadcast_to_like_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs&) {
  const Shape& x = in[0].shape;
  const Shape& ref = in[1].shape;
  bool ok = x.size() <= ref.size();
  for (size_t i = 0; ok && i < x.size(); ++i) {
    int64_t d = x[x.size() - 1 - i];
    ok = d == 1 || d == ref[ref.size() - 1 - i];
  }
  OAR_CHECK_ARG(ok, op.name + ": x of shape " + shape_str(x) + " cannot be broadcast to the shape " + shape_str(ref) +
                        " of the reference");
  return {{in[0].dtype, ref}};
}

std::vector<TensorMeta> sum_to_like_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs&) {
  const Shape& g = in[0].shape;
  const Shape& ref = in[1].shape;
  bool ok = ref.size() <= g.size();
  for (size_t i = 0; ok && i < ref.size(); ++i) {
    int64_t d = ref[ref.size() - 1 - i];
    ok = d == 1 || d == g[g.size() - 1 - i];
  }
  OAR_CHECK_ARG(ok, op.name + ": g of shape " + shape_str(g) + " cannot be summed to the shape " + shape_str(ref) +
                        " of the reference, which does not broadcast to it");
  return {{in[0].dtype, ref}};
}

std::vector<TensorMeta> shape_meta(const OpDef&, std::span<const TensorMeta> in, const Attrs&) {
  return {{DType::i64, {static_cast<int64_t>(in[0].shape.size())}}};
}

std::vector<TensorMeta> numel_meta(const OpDef&, std::span<const TensorMeta>, const Attrs&) {
  return {{DType::i64, {}}};
}

// Sums the leading dims g has beyond ref's rank, then (keeping dims) every
// dim where ref has size 1. Summing a dim that is 1 in g too changes
// nothing, so the operations depend only on the ranks and on which dims of
// ref are 1, not on the sizes of dynamic dims: the decomposition holds for
// every batch size.
std::vector<Tensor> sum_to_like_decompose(std::span<const Tensor> in, const Attrs&) {
  const Tensor& g = in[0];
  const Shape& ref = in[1].shape();
  const size_t lead = g.shape().size() - ref.size();
  Tensor s = g;
  if (lead > 0) {
    std::vector<int64_t> axes;
    for (size_t i = 0; i < lead; ++i) axes.push_back(static_cast<int64_t>(i));
    s = sum(s, axes, false);
  }
  std::vector<int64_t> ones;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (ref[i] == 1 && s.shape()[i] != 1) ones.push_back(static_cast<int64_t>(i));
  }
  if (!ones.empty()) s = sum(s, ones, true);
  return {s};
}

// The fallbacks for a device without kernels for these ops (a plugin built
// before they existed): eagerly exact; in a program they read the example
// shape, so the executor compiles such a program per input shapes (Note
// [Decomposing per input shapes] in executor.cpp).
std::vector<Tensor> full_like_decompose(std::span<const Tensor> in, const Attrs& attrs) {
  const std::complex<double> value(attrs.get_float("value"), attrs.find("value_imag") ? attrs.get_float("value_imag") : 0.0);
  return {full(in[0].shape(), value, static_cast<DType>(attrs.get_int("dtype")), in[0].device())};
}
std::vector<Tensor> broadcast_to_like_decompose(std::span<const Tensor> in, const Attrs&) {
  return {broadcast_to(in[0], in[1].shape())};
}
std::vector<Tensor> shape_decompose(std::span<const Tensor> in, const Attrs&) {
  const Shape& s = in[0].shape();
  return {Tensor::from_vector(std::vector<int64_t>(s.begin(), s.end()), {static_cast<int64_t>(s.size())}, in[0].device())};
}
std::vector<Tensor> numel_decompose(std::span<const Tensor> in, const Attrs&) {
  return {full({}, static_cast<double>(shape_numel(in[0].shape())), DType::i64, in[0].device())};
}

using Grads = std::vector<Tensor>;
Grads broadcast_to_like_vjp(const VjpContext& c) { return {sum_to_like(c.grads[0], c.inputs[0]), Tensor()}; }
Grads sum_to_like_vjp(const VjpContext& c) { return {broadcast_to_like(c.grads[0], c.inputs[0]), Tensor()}; }
// full_like, shape and numel read only their operand's shape: no gradient.
// (A VJP rule, so program autodiff does not decompose them first.)
Grads no_grad_vjp(const VjpContext& c) { return Grads(c.inputs.size()); }

// ---- SPMD rules (spmd.h); Note [SPMD rules of data-movement ops] in manipulation.cpp ----
using spmd_util::Candidate;

// broadcast_to_like(x, ref) takes its shape from ref's LOCAL piece when it
// runs, so the output is placed along the dims ref is sharded on (a
// replicated or partial ref is whole): sharded along an output dim k, x
// holds its matching dim sharded (or, lacking or broadcasting it, whole)
// and ref Shard(k); unsharded, x's Partial passes. ref's values are never
// read, so a Partial ref counts as whole.
SpmdResult broadcast_to_like_spmd(const SpmdArgs& a) {
  const Shape& x = a.inputs[0].shape;
  const Shape& out = a.inputs[1].shape;
  const Placement& ref = a.placements[1];
  const Placement whole_ref = ref.is_shard() ? Placement::Replicate() : ref;
  std::vector<Candidate> candidates;
  for (size_t k = 0; k < out.size(); ++k) {
    const auto dim = static_cast<int64_t>(k);
    candidates.push_back({{spmd_util::input_for_output_shard(x, out, dim), Placement::Shard(dim)}, {Placement::Shard(dim)}});
  }
  if (a.placements[0].is_partial()) candidates.push_back({{a.placements[0], whole_ref}, {a.placements[0]}});
  candidates.push_back({{Placement::Replicate(), whole_ref}, {Placement::Replicate()}});
  return spmd_util::cheapest(a, candidates);
}

// sum_to_like(x, ref): x summed over its broadcast dims to ref's shape.
// Along one mesh dim: a sharded dim of x that ref keeps (at x's size) stays
// sharded, with ref sharded alike (only its shape is read, so slicing it is
// free); a sharded dim that is summed gives Partial(sum) with ref whole (a
// bias's gradient from batch-sharded activations); a Partial(sum|avg) x
// passes (the sum is linear); otherwise x is gathered. A Partial ref counts
// as whole.
SpmdResult sum_to_like_spmd(const SpmdArgs& a) {
  const Shape& x = a.inputs[0].shape;
  const Shape& ref = a.inputs[1].shape;
  const Placement& p = a.placements[0];
  const Placement whole_ref = a.placements[1].is_shard() ? Placement::Replicate() : a.placements[1];
  const auto off = static_cast<int64_t>(x.size()) - static_cast<int64_t>(ref.size());
  std::vector<Candidate> candidates;
  for (int64_t d = 0; d < static_cast<int64_t>(x.size()); ++d) {
    const int64_t k = d - off;
    const bool kept = k >= 0 && ref[static_cast<size_t>(k)] == x[static_cast<size_t>(d)];
    if (x[static_cast<size_t>(d)] == 1) continue;
    if (kept) {
      candidates.push_back({{Placement::Shard(d), Placement::Shard(k)}, {Placement::Shard(k)}});
    } else {
      candidates.push_back({{Placement::Shard(d), whole_ref}, {Placement::Partial()}});
    }
  }
  if (p.is_partial() && (p.reduce == ReduceKind::sum || p.reduce == ReduceKind::avg))
    candidates.push_back({{p, whole_ref}, {p}});
  candidates.push_back({{Placement::Replicate(), whole_ref}, {Placement::Replicate()}});
  return spmd_util::cheapest(a, candidates);
}

}  // namespace

OAR_REGISTER_OPS(shape_ops) {
  // Composite: the cpu and mock plugins run them natively; a device
  // without kernels for them runs the decomposition.
  add_op({.name = "full_like", .kind = OpKind::composite, .meta = full_like_meta, .decompose = full_like_decompose,
          .vjp = no_grad_vjp, .differentiable = false,
          .attrs = {attr("value", AttrKind::float_, "every element's value"),
                    attr("dtype", AttrKind::int_, "the result's DType"),
                    attr("value_imag", 0.0, "complex dtypes: the imaginary part of the value")},
          .dtypes = {.accepts = kAllDTypes | kComplexDTypes}, .spmd = spmd_util::fill_like,
          .doc = "x's shape, every element = value (cast to the dtype); x's values are not read"});
  add_op({.name = "broadcast_to_like", .kind = OpKind::composite, .num_inputs = 2,
          .layout = InputLayout::broadcast, .meta = broadcast_to_like_meta,
          .decompose = broadcast_to_like_decompose, .vjp = broadcast_to_like_vjp, .spmd = broadcast_to_like_spmd,
          .doc = "x broadcast to the shape of the second input (whose values are not read)"});
  add_op({.name = "sum_to_like", .kind = OpKind::composite, .num_inputs = 2, .meta = sum_to_like_meta,
          .decompose = sum_to_like_decompose, .vjp = sum_to_like_vjp, .spmd = sum_to_like_spmd,
          .doc = "x summed over its broadcast dims down to the shape of the second input"});
  add_op({.name = "shape", .kind = OpKind::composite, .meta = shape_meta, .decompose = shape_decompose,
          .vjp = no_grad_vjp, .differentiable = false, .doc = "1-D i64: x's dims, computed when it runs"});
  add_op({.name = "numel", .kind = OpKind::composite, .meta = numel_meta, .decompose = numel_decompose,
          .vjp = no_grad_vjp, .differentiable = false, .doc = "0-D i64: x's element count, computed when it runs"});
}

Tensor full_like(const Tensor& x, double value, DType dtype) {
  std::array<Tensor, 1> in{x.detach()};
  return apply1(OAR_OP("full_like"), in, Attrs{{"value", value}, {"dtype", static_cast<int64_t>(dtype)}});
}
Tensor full_like(const Tensor& x, std::complex<double> value, DType dtype) {
  std::array<Tensor, 1> in{x.detach()};
  Attrs attrs{{"value", value.real()}, {"dtype", static_cast<int64_t>(dtype)}};
  if (value.imag() != 0 && is_complex(dtype)) attrs.set("value_imag", value.imag());
  return apply1(OAR_OP("full_like"), in, attrs);
}
Tensor full_like(const Tensor& x, double value) { return full_like(x, value, x.dtype()); }
Tensor zeros_like(const Tensor& x) { return full_like(x, 0.0); }
Tensor ones_like(const Tensor& x) { return full_like(x, 1.0); }

Tensor broadcast_to_like(const Tensor& x, const Tensor& ref) {
  // Eagerly, equal shapes need no op; in a trace equal example shapes may
  // still be different dims (a batch of 1 against a static 1).
  if (!x.is_symbolic() && !ref.is_symbolic() && x.shape() == ref.shape()) return x;
  std::array<Tensor, 2> in{x, ref.detach()};
  return apply1(OAR_OP("broadcast_to_like"), in);
}

Tensor sum_to_like(const Tensor& g, const Tensor& ref) {
  if (!g.is_symbolic() && !ref.is_symbolic() && g.shape() == ref.shape()) return g;
  std::array<Tensor, 2> in{g, ref.detach()};
  return apply1(OAR_OP("sum_to_like"), in);
}

Tensor shape_of(const Tensor& x) {
  std::array<Tensor, 1> in{x.detach()};
  return apply1(OAR_OP("shape"), in);
}

Tensor numel_of(const Tensor& x) {
  std::array<Tensor, 1> in{x.detach()};
  return apply1(OAR_OP("numel"), in);
}

// ---- shape_util.h ----

bool has_dynamic_dims(const Tensor& x, const std::vector<int64_t>& axes) {
  if (!x.defined() || !x.impl().symbol) return false;
  const ir::SymShape& shape = x.impl().symbol->shape;
  if (axes.empty()) {
    for (int64_t d : shape) {
      if (d < 0) return true;
    }
    return false;
  }
  for (int64_t a : axes) {
    if (a >= 0 && static_cast<size_t>(a) < shape.size() && shape[static_cast<size_t>(a)] < 0) return true;
  }
  return false;
}

std::vector<int64_t> reshape_spec(const Shape& from, const Shape& to) {
  if (shape_numel(from) == 0) return to;
  std::vector<int64_t> spec = to;
  bool inferred = false;
  for (size_t i = 0; i < to.size(); ++i) {
    if (i < from.size() && from[i] == to[i] && to[i] != 0) {
      spec[i] = 0;
    } else if (!inferred && to[i] > 1) {
      spec[i] = -1;
      inferred = true;
    }
  }
  return spec;
}

Tensor upcast_half(const Tensor& x) {
  return x.dtype() == DType::f16 || x.dtype() == DType::bf16 ? cast(x, DType::f32) : x;
}

Tensor cast_back(const Tensor& y, DType dtype) { return y.dtype() == dtype ? y : cast(y, dtype); }

Tensor reduced_count(const Tensor& x, const Tensor& reduced, DType dtype) {
  const DType wide = dtype == DType::f64 ? DType::f64 : DType::f32;
  Tensor n = cast(numel_of(x), wide) / cast(numel_of(reduced), wide);
  return cast_back(n, dtype);
}

}  // namespace oar
