// Elementwise ops: unary math, broadcasting binary ops, comparisons,
// logical ops, where, cast, copy.
#include <array>
#include <cmath>

#include "oar/autograd.h"
#include "oar/ops.h"
#include "ops/op_util.h"
#include "ops/spmd_util.h"

namespace oar {

namespace {

using meta::broadcast_shapes;

std::vector<TensorMeta> unary_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs&) {
  meta::require_accepted(op, in, 0);
  if (op.name == "abs" && is_complex(in[0].dtype)) return {{real_dtype_for(in[0].dtype), in[0].shape}};
  return {in[0]};
}

std::vector<TensorMeta> logical_not_meta(const OpDef&, std::span<const TensorMeta> in, const Attrs&) {
  return {{DType::boolean, in[0].shape}};
}

std::vector<TensorMeta> arithmetic_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs&) {
  meta::require_same_dtype(op, in);
  if (in[0].dtype == DType::boolean) {
    throw Error(ErrorCode::invalid_argument, op.name + ": inputs have dtype bool but a numeric dtype is required");
  }
  meta::require_accepted(op, in, 0);
  return {{in[0].dtype, broadcast_shapes(op.name, in[0].shape, in[1].shape)}};
}

std::vector<TensorMeta> compare_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs&) {
  meta::require_same_dtype(op, in);
  if (is_complex(in[0].dtype) && op.name != "equal" && op.name != "not_equal") {
    throw Error(ErrorCode::invalid_argument, op.name + ": the inputs have dtype " + std::string(dtype_name(in[0].dtype)) +
                                                 "; complex numbers have no order (compare their real parts or abs)");
  }
  return {{DType::boolean, broadcast_shapes(op.name, in[0].shape, in[1].shape)}};
}

std::vector<TensorMeta> where_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs&) {
  if (in[0].dtype != DType::boolean) {
    throw Error(ErrorCode::invalid_argument, "where: condition has dtype " + std::string(dtype_name(in[0].dtype)) +
                                                 " but bool is required");
  }
  meta::require_same_dtype(op, in.subspan(1));
  Shape s = broadcast_shapes("where", broadcast_shapes("where", in[0].shape, in[1].shape), in[2].shape);
  return {{in[1].dtype, s}};
}

std::vector<TensorMeta> cast_meta(const OpDef&, std::span<const TensorMeta> in, const Attrs& attrs) {
  return {{static_cast<DType>(attrs.get_int("dtype")), in[0].shape}};
}

// ---- VJP rules (one line each; Note [Builder] in builder.h) ----
using Grads = std::vector<Tensor>;
const Tensor& X(const VjpContext& c, size_t i = 0) { return c.inputs[i]; }
const Tensor& G(const VjpContext& c) { return c.grads[0]; }
const Tensor& Y(const VjpContext& c) { return c.outputs[0]; }
// conj(t) for a complex t, t itself otherwise: the VJPs of holomorphic ops
// multiply by conj(f'(z)) (Note [Complex gradients] in complex.cpp).
Tensor cj(const Tensor& t) { return is_complex(t.dtype()) ? conj(t) : t; }
// Gradient for input i, summed back over broadcast dims, if wanted.
Tensor to_input(const VjpContext& c, size_t i, const Tensor& g) { return c.needs[i] ? sum_to_like(g, X(c, i)) : Tensor(); }

Grads neg_vjp(const VjpContext& c) { return {-G(c)}; }
Grads abs_vjp(const VjpContext& c) {
  if (!is_complex(X(c).dtype())) return {G(c) * sign(X(c))};
  // g z / |z|, 0 at z = 0.
  Tensor r = Y(c), zero = zeros_like(r);
  Tensor scale = where(equal(r, zero), zero, G(c) / where(equal(r, zero), ones_like(r), r));
  return {X(c) * scale};
}
Grads exp_vjp(const VjpContext& c) { return {G(c) * cj(Y(c))}; }
Grads log_vjp(const VjpContext& c) { return {G(c) / cj(X(c))}; }
Grads sqrt_vjp(const VjpContext& c) { return {G(c) / (cj(Y(c)) * 2.0)}; }
Grads rsqrt_vjp(const VjpContext& c) { return {G(c) * (Y(c) * Y(c) * Y(c)) * -0.5}; }
Grads sin_vjp(const VjpContext& c) { return {G(c) * cj(cos(X(c)))}; }
Grads cos_vjp(const VjpContext& c) { return {-(G(c) * cj(sin(X(c))))}; }
Grads tanh_vjp(const VjpContext& c) { return {G(c) * cj(1.0 - Y(c) * Y(c))}; }
Grads erf_vjp(const VjpContext& c) { return {G(c) * exp(-(X(c) * X(c))) * (2.0 / std::sqrt(M_PI))}; }
Grads expm1_vjp(const VjpContext& c) { return {G(c) * (Y(c) + 1.0)}; }
// sign, floor, ceil: the derivative is 0 wherever it exists.
Grads zero_vjp(const VjpContext& c) { return {zeros_like(X(c))}; }

Grads add_vjp(const VjpContext& c) { return {to_input(c, 0, G(c)), to_input(c, 1, G(c))}; }
Grads sub_vjp(const VjpContext& c) { return {to_input(c, 0, G(c)), c.needs[1] ? to_input(c, 1, -G(c)) : Tensor()}; }
Grads mul_vjp(const VjpContext& c) {
  return {c.needs[0] ? to_input(c, 0, G(c) * cj(X(c, 1))) : Tensor(),
          c.needs[1] ? to_input(c, 1, G(c) * cj(X(c, 0))) : Tensor()};
}
Grads div_vjp(const VjpContext& c) {
  return {c.needs[0] ? to_input(c, 0, G(c) / cj(X(c, 1))) : Tensor(),
          c.needs[1] ? to_input(c, 1, -(G(c) * cj(Y(c) / X(c, 1)))) : Tensor()};
}
Grads pow_vjp(const VjpContext& c) {
  return {c.needs[0] ? to_input(c, 0, G(c) * X(c, 1) * pow(X(c, 0), X(c, 1) - 1.0)) : Tensor(),
          c.needs[1] ? to_input(c, 1, G(c) * Y(c) * log(X(c, 0))) : Tensor()};
}
// Ties split the gradient evenly between the operands. The split is
// piecewise constant, so it is computed on detached values: grad-of-grad must
// not differentiate through the comparisons.
Grads extremum_vjp(const VjpContext& c, bool is_max) {
  Tensor a = X(c, 0).detach(), b = X(c, 1).detach();
  Tensor wins = cast(is_max ? greater_than(a, b) : less_than(a, b), a.dtype());
  Tensor share = wins + cast(equal(a, b), a.dtype()) * 0.5;
  return {c.needs[0] ? to_input(c, 0, G(c) * share) : Tensor(),
          c.needs[1] ? to_input(c, 1, G(c) * (1.0 - share)) : Tensor()};
}
Grads maximum_vjp(const VjpContext& c) { return extremum_vjp(c, true); }
Grads minimum_vjp(const VjpContext& c) { return extremum_vjp(c, false); }
Grads where_vjp(const VjpContext& c) {
  Tensor zero = zeros_like(G(c).detach());
  return {Tensor(), c.needs[1] ? to_input(c, 1, where(X(c), G(c), zero)) : Tensor(),
          c.needs[2] ? to_input(c, 2, where(X(c), zero, G(c))) : Tensor()};
}
// Between real and complex dtypes the VJP is the cast back (Note [Complex
// gradients] in complex.cpp): real -> complex gives Re(g), complex -> real
// gives g + 0i, both what cast does.
Grads cast_vjp(const VjpContext& c) {
  auto differentiable = [](DType d) { return is_floating(d) || is_complex(d); };
  if (!differentiable(X(c).dtype()) || !differentiable(Y(c).dtype())) {
    throw Error(ErrorCode::invalid_argument, "cast: a cast from " + std::string(dtype_name(X(c).dtype())) + " to " +
                                                 std::string(dtype_name(Y(c).dtype())) + " is not differentiable");
  }
  return {cast(G(c), X(c).dtype())};
}
Grads copy_vjp(const VjpContext& c) { return {G(c)}; }

// Note [detach in a trace]
// Eagerly, Tensor.detach() is a new handle without autograd history; a
// traced tensor's gradient comes from program autodiff, which sees values,
// not handles, so detach() of a symbolic tensor records stop_gradient:
// y = x, not differentiable, so no gradient reaches x through it. It runs
// as a copy (its decomposition), once autodiff has seen it.
std::vector<Tensor> stop_gradient_decompose(std::span<const Tensor> in, const Attrs&) {
  return {apply1(OAR_OP("copy"), in)};
}

// ---- SPMD rules (spmd.h) ----
// Note [Elementwise SPMD rules]
// A broadcasting op can run sharded on any output dim: each input holding
// that dim at the output's size is sharded the same way, an input lacking
// it or broadcasting it (size 1) is replicated (its one element must reach
// every rank). The rule takes the cheapest such way (Note [Choosing among
// placements] in spmd_util.cpp), or replicates everything. A Partial input
// is reduced first unless the op is linear in it:
//  - add, sub: P(k) op P(k) = P(k) (k sum or avg) when every input is P(k);
//  - mul: one P(sum|avg) operand times replicated ones stays Partial;
//  - div: a P(sum|avg) dividend over a replicated divisor stays Partial
//    (float and complex dtypes: integer division truncates);
//  - maximum (minimum): operands P(max) (P(min)) or replicated give P(max).
// Anything else (P + R: a + b would count b once per rank) reduces it: to
// Replicate (all_reduce, as Paddle: the row-parallel matmul + bias of
// Megatron), or by a reduce_scatter to the sharding of an operand that is
// sharded already (P + S(d) -> S(d)).
using spmd_util::Candidate;

enum class PartialAlgebra : uint8_t { none, additive, scaling, dividend, max, min };

bool is_linear_partial(const Placement& p) {
  return p.is_partial() && (p.reduce == ReduceKind::sum || p.reduce == ReduceKind::avg);
}

void add_partial_candidates(const SpmdArgs& args, PartialAlgebra algebra, std::vector<Candidate>& out) {
  const size_t n = args.inputs.size();
  std::span<const Placement> p = args.placements;
  if (algebra == PartialAlgebra::additive) {
    bool all = is_linear_partial(p[0]);
    for (size_t i = 1; i < n; ++i) all = all && p[i] == p[0];
    if (all) out.push_back({std::vector<Placement>(p.begin(), p.end()), {p[0]}});
  } else if (algebra == PartialAlgebra::scaling || algebra == PartialAlgebra::dividend) {
    for (size_t i = 0; i < (algebra == PartialAlgebra::dividend ? 1 : n); ++i) {
      if (!is_linear_partial(p[i])) continue;
      Candidate c{spmd_util::replicated(n), {p[i]}};
      c.inputs[i] = p[i];
      out.push_back(std::move(c));
    }
  } else if (algebra == PartialAlgebra::max || algebra == PartialAlgebra::min) {
    const Placement kind = Placement::Partial(algebra == PartialAlgebra::max ? ReduceKind::max : ReduceKind::min);
    Candidate c{spmd_util::replicated(n), {kind}};
    bool any = false;
    for (size_t i = 0; i < n; ++i) {
      if (p[i] == kind) c.inputs[i] = kind, any = true;
    }
    if (any) out.push_back(std::move(c));
  }
}

SpmdResult broadcast_rule(const SpmdArgs& args, PartialAlgebra algebra) {
  const size_t n = args.inputs.size();
  Shape out = args.inputs[0].shape;
  for (size_t i = 1; i < n; ++i) out = broadcast_shapes(args.op.name, out, args.inputs[i].shape);
  std::vector<Candidate> candidates;
  add_partial_candidates(args, algebra, candidates);
  for (size_t o = 0; o < out.size(); ++o) {
    Candidate c{{}, {Placement::Shard(static_cast<int64_t>(o))}};
    bool any = false, scatters = false, sharded_already = false;
    for (size_t i = 0; i < n; ++i) {
      c.inputs.push_back(spmd_util::input_for_output_shard(args.inputs[i].shape, out, static_cast<int64_t>(o)));
      any = any || c.inputs.back().is_shard();
      scatters = scatters || (args.placements[i].is_partial() && c.inputs.back().is_shard());
      sharded_already = sharded_already || (c.inputs.back().is_shard() && args.placements[i] == c.inputs.back());
    }
    if (any && (!scatters || sharded_already)) candidates.push_back(std::move(c));
  }
  candidates.push_back({spmd_util::replicated(n), {Placement::Replicate()}});
  return spmd_util::cheapest(args, candidates);
}

SpmdResult additive_spmd(const SpmdArgs& args) { return broadcast_rule(args, PartialAlgebra::additive); }
SpmdResult mul_spmd(const SpmdArgs& args) { return broadcast_rule(args, PartialAlgebra::scaling); }
// Integer division truncates: (a1 + a2) / b is not a1 / b + a2 / b.
SpmdResult div_spmd(const SpmdArgs& args) {
  const DType d = args.inputs[0].dtype;
  return broadcast_rule(args, is_floating(d) || is_complex(d) ? PartialAlgebra::dividend : PartialAlgebra::none);
}
SpmdResult maximum_spmd(const SpmdArgs& args) { return broadcast_rule(args, PartialAlgebra::max); }
SpmdResult minimum_spmd(const SpmdArgs& args) { return broadcast_rule(args, PartialAlgebra::min); }
SpmdResult plain_broadcast_spmd(const SpmdArgs& args) { return broadcast_rule(args, PartialAlgebra::none); }

// neg and copy are linear: a P(sum|avg) input stays Partial (a gradient
// -g of a partial g need not be reduced). neg turns P(max) into P(min).
SpmdResult linear_unary_spmd(const SpmdArgs& args) {
  const Placement& p = args.placements[0];
  if (is_linear_partial(p)) return {{p}, {p}};
  if (args.op.name == "neg" && p.is_partial()) {
    if (p.reduce == ReduceKind::max) return {{p}, {Placement::Partial(ReduceKind::min)}};
    if (p.reduce == ReduceKind::min) return {{p}, {Placement::Partial(ReduceKind::max)}};
  }
  return spmd::elementwise_unary(args);
}

// cast keeps a sharding; a Partial value stays Partial between float
// dtypes (a sum of casts is the cast of the sum up to rounding, and a cast
// between floats is monotone, so max and min commute with it); to or from
// integers and bool it is reduced first (bool(a + b) is not bool(a) + bool(b)).
SpmdResult cast_spmd(const SpmdArgs& args) {
  const Placement& p = args.placements[0];
  auto to = static_cast<DType>(args.attrs.get_int("dtype"));
  if (p.is_partial() && is_floating(args.inputs[0].dtype) && is_floating(to)) return {{p}, {p}};
  return spmd::elementwise_unary(args);
}

// One row per unary op (Note [One op definition] in op_registry.cpp): name,
// VJP, the dtypes it takes and how frontends promote others (Note [Dtype
// promotion]: float_compute casts an integer input to the default float;
// common keeps it, as oar.abs of an int stays int; none refuses it, as
// paddle.floor does), where conformance draws its inputs, doc.
struct UnaryDef {
  const char* name;
  VjpFn vjp;
  DTypeSet accepts;
  Promotion promotion;
  TestDomain domain;
  const char* doc;
};
constexpr DTypeSet kF = kFloatDTypes, kN = kNumericDTypes;
// With complex: the ops Paddle defines on complex64/complex128.
constexpr DTypeSet kFC = kFloatDTypes | kComplexDTypes, kNC = kNumericDTypes | kComplexDTypes;
constexpr Promotion kToFloat = Promotion::float_compute, kKeep = Promotion::common, kAsIs = Promotion::none;
const UnaryDef kUnary[] = {
    {"neg", neg_vjp, kNC, kKeep, {-3, 3}, "y = -x (integers wrap)"},
    {"abs", abs_vjp, kNC, kKeep, {-3, 3}, "y = |x| (integers wrap: abs(MIN) = MIN); complex -> real modulus"},
    {"exp", exp_vjp, kFC, kToFloat, {-5, 5}, "y = e^x"},
    {"log", log_vjp, kFC, kToFloat, {0.01, 10}, "natural logarithm (complex: the principal branch)"},
    {"sqrt", sqrt_vjp, kFC, kToFloat, {0, 10}, "square root (complex: the principal branch)"},
    {"rsqrt", rsqrt_vjp, kF, kToFloat, {0.01, 10}, "y = 1 / sqrt(x)"},
    {"sin", sin_vjp, kFC, kToFloat, {-3, 3}, "sine"},
    {"cos", cos_vjp, kFC, kToFloat, {-3, 3}, "cosine"},
    {"tanh", tanh_vjp, kFC, kToFloat, {-1.2, 1.2}, "hyperbolic tangent"},
    {"erf", erf_vjp, kF, kToFloat, {-3, 3}, "error function"},
    {"expm1", expm1_vjp, kF, kToFloat, {-5, 5}, "y = e^x - 1, exact near 0"},
    {"sign", zero_vjp, kN, kKeep, {-2, 2, NAN, NAN, true}, "-1, 0 or 1 (NaN stays NaN)"},
    {"floor", zero_vjp, kF, kAsIs, {-3, 3}, "round toward -inf"},
    {"ceil", zero_vjp, kF, kAsIs, {-3, 3}, "round toward +inf"},
};
constexpr TestDomain kIntegral{-2, 2, NAN, NAN, true};
// Binary ops: integer cases draw a in [-20, 20] and b in [-5, 5]
// (frontends/conformance/op_specs_registry.cpp).
struct BinaryDef {
  const char* name;
  VjpFn vjp;
  SpmdFn spmd;
  DTypeSet accepts;
  TestDomain domain;
  const char* doc;
};
const BinaryDef kArithmetic[] = {
    {"add", add_vjp, additive_spmd, kNC, {-3, 3}, "y = a + b (integers wrap)"},
    {"sub", sub_vjp, additive_spmd, kNC, {-3, 3}, "y = a - b"},
    {"mul", mul_vjp, mul_spmd, kNC, {-3, 3}, "y = a * b"},
    {"div", div_vjp, div_spmd, kNC, {-3, 3, 0.5, 3, false, true},
     "y = a / b; integers truncate toward zero and x / 0 = 0 (Python's `/` of ints computes in float)"},
    {"pow", pow_vjp, plain_broadcast_spmd, kF, {0.1, 2.5, -2, 2}, "y = a^b"},
    {"maximum", maximum_vjp, maximum_spmd, kN, {-3, 3}, "elementwise max; NaN wins"},
    {"minimum", minimum_vjp, minimum_spmd, kN, {-3, 3}, "elementwise min; NaN wins"},
};
const std::pair<const char*, const char*> kCompare[] = {
    {"equal", "a == b"},    {"not_equal", "a != b"},        {"less", "a < b"},
    {"less_equal", "a <= b"}, {"greater", "a > b"},         {"greater_equal", "a >= b"},
};
const std::pair<const char*, const char*> kLogical[] = {{"logical_and", "a and b (nonzero is true)"},
                                                        {"logical_or", "a or b (nonzero is true)"}};

}  // namespace

OAR_REGISTER_OPS(elementwise) {
  for (const auto& u : kUnary) {
    add_op({.name = u.name, .meta = unary_meta, .vjp = u.vjp,
            .dtypes = {.accepts = u.accepts, .promotion = u.promotion},
            .spmd = std::string_view(u.name) == "neg" ? linear_unary_spmd : spmd::elementwise_unary,
            .domain = u.domain, .doc = u.doc});
  }
  add_op({.name = "logical_not", .meta = logical_not_meta, .differentiable = false, .spmd = spmd::elementwise_unary,
          .domain = TestDomain{-1, 1, NAN, NAN, true, false, true, kAllDTypes}, .doc = "y = (x == 0), bool"});
  for (const auto& b : kArithmetic) {
    add_op({.name = b.name, .num_inputs = 2, .layout = InputLayout::broadcast, .meta = arithmetic_meta, .vjp = b.vjp,
            .dtypes = {.accepts = b.accepts, .promotion = std::string_view(b.name) == "div" ? Promotion::float_compute
                                                                                         : Promotion::common},
            .spmd = b.spmd, .domain = b.domain, .doc = b.doc});
  }
  for (const auto& [name, doc] : kCompare) {
    add_op({.name = name, .num_inputs = 2, .layout = InputLayout::broadcast, .meta = compare_meta,
            .differentiable = false, .dtypes = {.promotion = Promotion::common}, .spmd = plain_broadcast_spmd,
            .domain = kIntegral,
            .doc = std::string(doc) + ", bool"});
  }
  for (const auto& [name, doc] : kLogical) {
    add_op({.name = name, .num_inputs = 2, .layout = InputLayout::broadcast, .meta = compare_meta,
            .differentiable = false, .dtypes = {.promotion = Promotion::common}, .spmd = plain_broadcast_spmd,
            .domain = TestDomain{-1, 1, NAN, NAN, true, false, true, kAllDTypes}, .doc = std::string(doc) + ", bool"});
  }
  add_op({.name = "where", .num_inputs = 3, .layout = InputLayout::broadcast, .meta = where_meta, .vjp = where_vjp,
          .spmd = plain_broadcast_spmd, .doc = "cond bool, x, y broadcast; out = cond ? x : y"});
  add_op({.name = "cast", .meta = cast_meta, .vjp = cast_vjp,
          .attrs = {attr("dtype", AttrKind::int_, "the target DType")}, .spmd = cast_spmd,
          .doc = "float->int truncates toward zero; ->bool is x != 0"});
  add_op({.name = "copy", .meta = meta::same_as_input, .vjp = copy_vjp, .spmd = linear_unary_spmd,
          .domain = TestDomain{-50, 50, NAN, NAN, false, false, true, kAllDTypes},
          .doc = "y = x (makes views contiguous)"});
  add_op({.name = "stop_gradient", .kind = OpKind::composite, .meta = meta::same_as_input,
          .decompose = stop_gradient_decompose, .differentiable = false, .dtypes = {.accepts = kAllDTypes},
          .spmd = linear_unary_spmd, .doc = "y = x with no gradient to x: Tensor.detach() in a trace"});
}

namespace {
Tensor unary(const OpDef& op, const Tensor& x) {
  std::array<Tensor, 1> in{x};
  return apply1(op, in);
}

// Promotes both operands, then applies a two-input op.
Tensor binary(const OpDef& op, const Tensor& a, const Tensor& b) {
  DType d = promote_types(a.dtype(), b.dtype());
  std::array<Tensor, 2> in{cast(a, d), cast(b, d)};
  return apply1(op, in);
}
}  // namespace

Tensor neg(const Tensor& x) { return unary(OAR_OP("neg"), x); }
Tensor abs(const Tensor& x) { return unary(OAR_OP("abs"), x); }
Tensor exp(const Tensor& x) { return unary(OAR_OP("exp"), x); }
Tensor log(const Tensor& x) { return unary(OAR_OP("log"), x); }
Tensor sqrt(const Tensor& x) { return unary(OAR_OP("sqrt"), x); }
Tensor rsqrt(const Tensor& x) { return unary(OAR_OP("rsqrt"), x); }
Tensor sin(const Tensor& x) { return unary(OAR_OP("sin"), x); }
Tensor cos(const Tensor& x) { return unary(OAR_OP("cos"), x); }
Tensor tanh(const Tensor& x) { return unary(OAR_OP("tanh"), x); }
Tensor erf(const Tensor& x) { return unary(OAR_OP("erf"), x); }
Tensor expm1(const Tensor& x) { return unary(OAR_OP("expm1"), x); }
Tensor sign(const Tensor& x) { return unary(OAR_OP("sign"), x); }
Tensor floor(const Tensor& x) { return unary(OAR_OP("floor"), x); }
Tensor ceil(const Tensor& x) { return unary(OAR_OP("ceil"), x); }
Tensor logical_not(const Tensor& x) { return unary(OAR_OP("logical_not"), x); }

Tensor add(const Tensor& a, const Tensor& b) { return binary(OAR_OP("add"), a, b); }
Tensor subtract(const Tensor& a, const Tensor& b) { return binary(OAR_OP("sub"), a, b); }
Tensor multiply(const Tensor& a, const Tensor& b) { return binary(OAR_OP("mul"), a, b); }
Tensor divide(const Tensor& a, const Tensor& b) { return binary(OAR_OP("div"), a, b); }
Tensor pow(const Tensor& a, const Tensor& b) { return binary(OAR_OP("pow"), a, b); }
// Note [pow fast paths]: a scalar exponent of 1, 2, 3, -1, 0.5 or -0.5
// becomes a copy, multiplies, a division, sqrt or rsqrt, and any other
// integer exponent n with |n| <= kMaxMultiplyExponent repeated squaring
// (x^n in at most 2 log2 |n| multiplies; a negative n is 1 / x^|n|). Those
// are exact or within a few ulp of std::pow, and a per-element std::pow is
// 10-20x slower than a multiply. As in torch (and numpy for 0.5), sqrt and
// rsqrt decide the signed zero and -inf: pow(-0, -0.5) = -inf and
// pow(-inf, +-0.5) = nan, where C's pow gives +inf, +inf and 0. Integer
// tensors with a non-negative integer exponent (any size) take the
// multiplies too, exact and wrapping as numpy's power, and x^0 is ones; the
// pow op itself is float-only. The VJP and the traced program follow from
// those ops, so this function is the one place for the rule. Other float
// exponents (0 included: pow(x, 0) is 1 even for NaN, its gradient 0) take
// the general op. Python's x ** e, x.pow(e), oar.pow and paddle.pow reach
// this through pow_scalar (frontends/python/oar/math.py).
namespace {
constexpr double kMaxMultiplyExponent = 32;

// x^n for an integer n >= 1 by repeated squaring.
Tensor pow_by_squaring(const Tensor& x, int64_t n) {
  if (n == 1) return x;
  if (n == 2) return x * x;
  if (n == 3) return x * x * x;
  Tensor half = pow_by_squaring(x, n / 2);
  Tensor even = half * half;
  return n % 2 == 1 ? even * x : even;
}
}  // namespace

Tensor pow(const Tensor& a, double exponent) {
  const bool integer_exponent = exponent == std::nearbyint(exponent) && std::fabs(exponent) <= kMaxMultiplyExponent;
  if (is_floating(a.dtype())) {
    if (exponent == 1) return a * 1.0;
    if (exponent == 0.5) return sqrt(a);
    if (exponent == -0.5) return rsqrt(a);
    if (exponent == -1) return 1.0 / a;
    if (integer_exponent && exponent > 0) return pow_by_squaring(a, static_cast<int64_t>(exponent));
    if (integer_exponent && exponent < 0) return 1.0 / pow_by_squaring(a, static_cast<int64_t>(-exponent));
  } else if (a.dtype() != DType::boolean && !is_complex(a.dtype()) && exponent >= 0 && exponent < 0x1p62 &&
             exponent == std::nearbyint(exponent)) {
    if (exponent == 0) return ones_like(a);
    return exponent == 1 ? a * 1.0 : pow_by_squaring(a, static_cast<int64_t>(exponent));
  }
  return pow(a, scalar_like(a, exponent));
}
Tensor maximum(const Tensor& a, const Tensor& b) { return binary(OAR_OP("maximum"), a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary(OAR_OP("minimum"), a, b); }
Tensor equal(const Tensor& a, const Tensor& b) { return binary(OAR_OP("equal"), a, b); }
Tensor not_equal(const Tensor& a, const Tensor& b) { return binary(OAR_OP("not_equal"), a, b); }
Tensor less_than(const Tensor& a, const Tensor& b) { return binary(OAR_OP("less"), a, b); }
Tensor less_equal(const Tensor& a, const Tensor& b) { return binary(OAR_OP("less_equal"), a, b); }
Tensor greater_than(const Tensor& a, const Tensor& b) { return binary(OAR_OP("greater"), a, b); }
Tensor greater_equal(const Tensor& a, const Tensor& b) { return binary(OAR_OP("greater_equal"), a, b); }
Tensor logical_and(const Tensor& a, const Tensor& b) { return binary(OAR_OP("logical_and"), a, b); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return binary(OAR_OP("logical_or"), a, b); }

Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y) {
  DType d = promote_types(x.dtype(), y.dtype());
  std::array<Tensor, 3> in{cond, cast(x, d), cast(y, d)};
  return apply1(OAR_OP("where"), in);
}

Tensor scalar_like(const Tensor& x, double value) { return full({}, value, x.dtype(), x.device()); }

Tensor cast(const Tensor& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  std::array<Tensor, 1> in{x};
  return apply1(OAR_OP("cast"), in, Attrs{{"dtype", static_cast<int64_t>(dtype)}});
}

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return subtract(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return multiply(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return divide(a, b); }
Tensor operator-(const Tensor& a) { return neg(a); }
Tensor operator+(const Tensor& a, double b) { return add(a, scalar_like(a, b)); }
Tensor operator-(const Tensor& a, double b) { return subtract(a, scalar_like(a, b)); }
Tensor operator*(const Tensor& a, double b) { return multiply(a, scalar_like(a, b)); }
Tensor operator/(const Tensor& a, double b) { return divide(a, scalar_like(a, b)); }
Tensor operator+(double a, const Tensor& b) { return add(scalar_like(b, a), b); }
Tensor operator-(double a, const Tensor& b) { return subtract(scalar_like(b, a), b); }
Tensor operator*(double a, const Tensor& b) { return multiply(scalar_like(b, a), b); }
Tensor operator/(double a, const Tensor& b) { return divide(scalar_like(b, a), b); }

}  // namespace oar
