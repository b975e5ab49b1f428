// Reductions: sum, prod, max, min, argmax, argmin (primitives); mean, var
// (composites).
#include <array>
#include <cmath>

#include "oar/autograd.h"
#include "oar/ops.h"
#include "ops/op_util.h"
#include "ops/shape_util.h"
#include "ops/spmd_util.h"

namespace oar {

namespace {

// Shape after reducing normalized `axes` (attribute "axes").
Shape reduced_shape(const Shape& shape, const std::vector<int64_t>& axes, bool keepdim) {
  Shape out;
  for (size_t i = 0; i < shape.size(); ++i) {
    bool reduced = std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) != axes.end();
    if (!reduced) out.push_back(shape[i]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

std::vector<int64_t> checked_axes(const OpDef& op, const TensorMeta& x, const Attrs& attrs) {
  const auto& axes = attrs.get_ints("axes");
  auto rank = static_cast<int64_t>(x.shape.size());
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= rank || (i > 0 && axes[i] <= axes[i - 1])) {
      throw Error(ErrorCode::invalid_argument, op.name + ": axes must be sorted, unique and in [0, " +
                                                   std::to_string(rank) + ") for input shape " + shape_str(x.shape));
    }
  }
  return axes;
}

std::vector<TensorMeta> reduce_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs) {
  const TensorMeta& x = in[0];
  auto axes = checked_axes(op, x, attrs);
  if (op.name == "max" || op.name == "min") {
    for (int64_t a : axes) {
      if (x.shape[static_cast<size_t>(a)] == 0) {
        throw Error(ErrorCode::invalid_argument, op.name + ": cannot reduce over axis " + std::to_string(a) +
                                                     " of size 0 (input shape " + shape_str(x.shape) + ")");
      }
    }
  }
  if (is_complex(x.dtype) && op.name != "sum") {
    throw Error(ErrorCode::invalid_argument, op.name + ": x has dtype " + std::string(dtype_name(x.dtype)) +
                                                 (op.name == "prod" ? "; prod of complex is not supported"
                                                                    : "; complex numbers have no order"));
  }
  DType out = x.dtype;
  if ((op.name == "sum" || op.name == "prod") && !is_floating(x.dtype) && !is_complex(x.dtype)) out = DType::i64;
  return {{out, reduced_shape(x.shape, axes, attrs.get_bool("keepdim"))}};
}

std::vector<TensorMeta> arg_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs) {
  const TensorMeta& x = in[0];
  auto rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = attrs.get_int("axis");
  if (axis < 0 || axis >= std::max<int64_t>(rank, 1)) {
    throw Error(ErrorCode::invalid_argument, op.name + ": axis " + std::to_string(axis) + " is out of range for shape " +
                                                 shape_str(x.shape));
  }
  if (rank > 0 && x.shape[static_cast<size_t>(axis)] == 0) {
    throw Error(ErrorCode::invalid_argument, op.name + ": cannot search axis " + std::to_string(axis) +
                                                 " of size 0 (input shape " + shape_str(x.shape) + ")");
  }
  std::vector<int64_t> axes;
  if (rank > 0) axes.push_back(axis);
  return {{DType::i64, reduced_shape(x.shape, axes, attrs.get_bool("keepdim"))}};
}

std::vector<TensorMeta> mean_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs) {
  if (!(op.name == "mean" && is_complex(in[0].dtype))) meta::require_float(op, in, 0);
  return {{in[0].dtype, reduced_shape(in[0].shape, checked_axes(op, in[0], attrs), attrs.get_bool("keepdim"))}};
}

// Number of elements reduced over `axes`.
int64_t reduced_count(const Shape& shape, const std::vector<int64_t>& axes) {
  int64_t n = 1;
  for (int64_t a : axes) n *= shape[static_cast<size_t>(a)];
  return n;
}

// Over static dims the count is a constant; over a dynamic dim of a trace it
// is computed when the program runs (Note [Shape from an operand]).
std::vector<Tensor> mean_decompose(std::span<const Tensor> in, const Attrs& attrs) {
  const auto& axes = attrs.get_ints("axes");
  Tensor s = sum(in[0], axes, attrs.get_bool("keepdim"));
  if (has_dynamic_dims(in[0], axes)) return {s / oar::reduced_count(in[0], s, s.dtype())};
  return {s / static_cast<double>(reduced_count(in[0].shape(), axes))};
}

std::vector<Tensor> var_decompose(std::span<const Tensor> in, const Attrs& attrs) {
  const auto& axes = attrs.get_ints("axes");
  Tensor centered = in[0] - mean(in[0], axes, true);
  Tensor s = sum(centered * centered, axes, attrs.get_bool("keepdim"));
  // n - 1 < 0 (an empty reduction) would make 0 / -1 = -0.0; numpy gives nan (0 / 0).
  if (has_dynamic_dims(in[0], axes)) {
    Tensor n = oar::reduced_count(in[0], s, s.dtype());
    return {s / (attrs.get_bool("unbiased") ? maximum(n - 1.0, scalar_like(n, 0.0)) : n)};
  }
  int64_t n = reduced_count(in[0].shape(), axes);
  int64_t denom = attrs.get_bool("unbiased") ? std::max<int64_t>(n - 1, 0) : n;
  return {s / static_cast<double>(denom)};
}

// ---- SPMD rules (spmd.h) ----
// Note [Reduction SPMD rules]
// A dim that is not reduced keeps its sharding (renumbered when keepdim is
// false). Reducing a sharded dim leaves each rank the reduction of its
// slice: sum gives Partial(sum), max Partial(max), min Partial(min) (max
// and min only when no rank's slice is empty: a max over nothing is an
// error); prod has no Partial kind, so its input is gathered first. A
// Partial input passes through where the reduction commutes with the
// pieces' combination (sum of P(sum|avg), max of P(max), min of P(min)),
// and is reduced first otherwise. mean and var have no rule: they
// decompose into sum and a division by the global count (a Partial sum
// over a replicated count stays Partial), so they follow from sum's.
// argmax/argmin: an index found in a slice is not the global index, so a
// sharded searched axis is gathered; other sharded dims pass through.
int64_t kept_dim(int64_t d, const std::vector<int64_t>& axes, bool keepdim) {
  if (keepdim) return d;
  int64_t before = 0;
  for (int64_t a : axes) before += a < d ? 1 : 0;
  return d - before;
}

std::optional<ReduceKind> partial_kind_of(const std::string& op) {
  if (op == "sum") return ReduceKind::sum;
  if (op == "max") return ReduceKind::max;
  if (op == "min") return ReduceKind::min;
  return std::nullopt;
}

SpmdResult reduce_spmd(const SpmdArgs& args) {
  const Placement& p = args.placements[0];
  const auto& axes = args.attrs.get_ints("axes");
  const bool keepdim = args.attrs.get_bool("keepdim");
  const std::optional<ReduceKind> kind = partial_kind_of(args.op.name);
  const Placement R = Placement::Replicate();
  if (p.is_shard()) {
    bool reduced = std::find(axes.begin(), axes.end(), p.dim) != axes.end();
    if (!reduced) return {{p}, {Placement::Shard(kept_dim(p.dim, axes, keepdim))}};
    const int64_t size = args.inputs[0].shape[static_cast<size_t>(p.dim)];
    if (kind && (*kind == ReduceKind::sum || !spmd_util::has_empty_piece(size, args.mesh_dim_size))) {
      return {{p}, {Placement::Partial(*kind)}};
    }
    return {{R}, {R}};
  }
  if (p.is_partial() && kind) {
    bool commutes = *kind == ReduceKind::sum ? (p.reduce == ReduceKind::sum || p.reduce == ReduceKind::avg)
                                             : p.reduce == *kind;
    if (commutes) return {{p}, {p}};
  }
  return {{R}, {R}};
}

SpmdResult arg_reduce_spmd(const SpmdArgs& args) {
  const Placement& p = args.placements[0];
  const int64_t axis = args.attrs.get_int("axis");
  if (p.is_shard() && p.dim != axis) {
    return {{p}, {Placement::Shard(kept_dim(p.dim, {axis}, args.attrs.get_bool("keepdim")))}};
  }
  return {{Placement::Replicate()}, {Placement::Replicate()}};
}

// ---- VJP rules ----
// g (reduced over `axes`) broadcast back to the input's shape.
// The shape comes from the input `x` when the program runs (Note [Shape
// from an operand]), so the rule holds for every size of a dynamic dim.
Tensor expand_back(const Tensor& g, const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  Tensor kept = g;
  if (!keepdim) kept = reshape(g, reshape_spec(g.shape(), reduced_shape(x.shape(), axes, true)));
  return broadcast_to_like(kept, x);
}
std::vector<Tensor> sum_vjp(const VjpContext& c) {
  return {expand_back(c.grads[0], c.inputs[0], c.attrs.get_ints("axes"), c.attrs.get_bool("keepdim"))};
}
// d prod / dx_i is the product of the other elements: prod / x_i where x_i
// is not 0. With one zero in a reduced group, the zero's gradient is the
// product of the group's non-zero elements and every other gradient is 0;
// with two or more zeros all are 0. The zero masks are piecewise constant
// (detached); the values stay differentiable for higher orders.
std::vector<Tensor> prod_vjp(const VjpContext& c) {
  const auto& axes = c.attrs.get_ints("axes");
  bool keepdim = c.attrs.get_bool("keepdim");
  const Tensor& x = c.inputs[0];
  Tensor is_zero = equal(x.detach(), zeros_like(x.detach()));
  Tensor zero_count = sum(cast(is_zero, x.dtype()), axes, true);
  Tensor safe_x = where(is_zero, ones_like(x.detach()), x);
  Tensor others = expand_back(c.outputs[0], x, axes, keepdim) / safe_x;  // 0 when the group has a zero
  Tensor single_zero = broadcast_to_like(equal(zero_count, ones_like(zero_count)), x);
  Tensor nonzero_prod = broadcast_to_like(prod(safe_x, axes, true), x);
  Tensor at_zero = where(single_zero, nonzero_prod, zeros_like(x.detach()));
  return {expand_back(c.grads[0], x, axes, keepdim) * where(is_zero, at_zero, others)};
}
// The gradient goes to the extreme elements, split evenly among ties (a
// piecewise-constant mask, computed on detached values like extremum_vjp in
// elementwise.cpp).
std::vector<Tensor> extremum_vjp(const VjpContext& c) {
  const auto& axes = c.attrs.get_ints("axes");
  bool keepdim = c.attrs.get_bool("keepdim");
  Tensor x = c.inputs[0].detach();
  Tensor hit = cast(equal(x, expand_back(c.outputs[0].detach(), x, axes, keepdim)), x.dtype());
  Tensor count = sum(hit, axes, true);
  return {expand_back(c.grads[0], x, axes, keepdim) * hit / count};
}

Tensor reduce(const OpDef& op, const Tensor& x, std::vector<int64_t> axes, bool keepdim) {
  axes = meta::normalize_axes(op.name, std::move(axes), x.dim());
  std::array<Tensor, 1> in{x};
  return apply1(op, in, Attrs{{"axes", std::move(axes)}, {"keepdim", keepdim}});
}

Tensor arg_reduce(const OpDef& op, const Tensor& x, std::optional<int64_t> axis, bool keepdim) {
  if (!axis) {
    Tensor flat = reshape(x, {-1});
    std::array<Tensor, 1> in{flat};
    Tensor r = apply1(op, in, Attrs{{"axis", int64_t{0}}, {"keepdim", false}});
    return keepdim ? reshape(r, Shape(static_cast<size_t>(x.dim()), 1)) : r;
  }
  int64_t a = meta::normalize_axis(op.name, *axis, x.dim());
  std::array<Tensor, 1> in{x};
  return apply1(op, in, Attrs{{"axis", a}, {"keepdim", keepdim}});
}

}  // namespace

OAR_REGISTER_OPS(reduce) {
  const AttrSpec axes = attr("axes", AttrKind::ints, "the reduced axes: sorted, unique, in [0, rank)");
  const AttrSpec keepdim = attr("keepdim", false, "keep each reduced axis as a dim of 1");
  const std::vector<AttrSpec> reduce{axes, keepdim};
  const DTypeSet sum_dtypes =
      kFloatDTypes | dtype_bit(DType::i32) | dtype_bit(DType::i64) | dtype_bit(DType::boolean) | kComplexDTypes;
  add_op({.name = "sum", .meta = reduce_meta, .vjp = sum_vjp, .attrs = reduce, .spmd = reduce_spmd,
          .domain = TestDomain{-2, 2, NAN, NAN, false, false, true, sum_dtypes, 10},
          .doc = "sum over `axes`; int and bool inputs write i64; an empty reduction gives 0"});
  add_op({.name = "prod", .meta = reduce_meta, .vjp = prod_vjp, .attrs = reduce, .spmd = reduce_spmd,
          .domain = TestDomain{0.5, 1.5, NAN, NAN, false, false, true, 0, 10},
          .doc = "product over `axes`; int and bool inputs write i64; an empty reduction gives 1"});
  add_op({.name = "max", .meta = reduce_meta, .vjp = extremum_vjp, .attrs = reduce, .spmd = reduce_spmd,
          .domain = TestDomain{-2, 2, NAN, NAN, false, false, false, 0, 10},
          .doc = "max over `axes` (NaN wins); an empty axis is refused by the meta rule"});
  add_op({.name = "min", .meta = reduce_meta, .vjp = extremum_vjp, .attrs = reduce, .spmd = reduce_spmd,
          .domain = TestDomain{-2, 2, NAN, NAN, false, false, false, 0, 10},
          .doc = "min over `axes` (NaN wins); an empty axis is refused by the meta rule"});
  for (const char* name : {"argmax", "argmin"}) {
    add_op({.name = name, .meta = arg_meta, .differentiable = false,
            .attrs = {attr("axis", AttrKind::int_, "the searched axis, in [0, rank)"), keepdim},
            .spmd = arg_reduce_spmd,
            .doc = "i64 index of the first extreme value along `axis`; NaN counts as the extreme"});
  }
  add_op({.name = "mean", .kind = OpKind::composite, .meta = mean_meta, .decompose = mean_decompose, .attrs = reduce,
          .dtypes = {.accepts = kFloatDTypes | kComplexDTypes},
          .domain = TestDomain{-2, 2, NAN, NAN, false, false, false, kF32F64DTypes | kComplexDTypes, 10},
          .doc = "sum / count over `axes` (float and complex dtypes)"});
  add_op({.name = "var", .kind = OpKind::composite, .meta = mean_meta, .decompose = var_decompose,
          .attrs = {axes, keepdim, attr("unbiased", true, "divide by count - 1 (Bessel's correction)")},
          .dtypes = {.accepts = kFloatDTypes},
          .doc = "variance over `axes` (float dtypes)"});
}

Tensor sum(const Tensor& x, std::vector<int64_t> axes, bool keepdim) { return reduce(OAR_OP("sum"), x, axes, keepdim); }
Tensor prod(const Tensor& x, std::vector<int64_t> axes, bool keepdim) { return reduce(OAR_OP("prod"), x, axes, keepdim); }
Tensor max(const Tensor& x, std::vector<int64_t> axes, bool keepdim) { return reduce(OAR_OP("max"), x, axes, keepdim); }
Tensor min(const Tensor& x, std::vector<int64_t> axes, bool keepdim) { return reduce(OAR_OP("min"), x, axes, keepdim); }
Tensor argmax(const Tensor& x, std::optional<int64_t> axis, bool keepdim) {
  return arg_reduce(OAR_OP("argmax"), x, axis, keepdim);
}
Tensor argmin(const Tensor& x, std::optional<int64_t> axis, bool keepdim) {
  return arg_reduce(OAR_OP("argmin"), x, axis, keepdim);
}
Tensor mean(const Tensor& x, std::vector<int64_t> axes, bool keepdim) { return reduce(OAR_OP("mean"), x, axes, keepdim); }

Tensor var(const Tensor& x, std::vector<int64_t> axes, bool unbiased, bool keepdim) {
  axes = meta::normalize_axes("var", std::move(axes), x.dim());
  std::array<Tensor, 1> in{x};
  return apply1(OAR_OP("var"), in, Attrs{{"axes", std::move(axes)}, {"keepdim", keepdim}, {"unbiased", unbiased}});
}

}  // namespace oar
