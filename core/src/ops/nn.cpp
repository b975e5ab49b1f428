// Composite nn ops, each defined by its decomposition into primitives (a
// device may register a fused kernel under the same name): relu, sigmoid,
// silu, gelu, softmax, log_softmax, layer_norm, rms_norm.
#include <array>
#include <cmath>
#include <numeric>

#include "oar/autograd.h"
#include "oar/ops.h"
#include "ops/op_util.h"
#include "ops/shape_util.h"
#include "ops/spmd_util.h"

namespace oar {

namespace {

std::vector<TensorMeta> axis_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs) {
  meta::require_float(op, in, 0);
  int64_t axis = attrs.get_int("axis");
  OAR_CHECK_ARG(axis >= 0 && axis < std::max<int64_t>(static_cast<int64_t>(in[0].shape.size()), 1),
            op.name + ": axis " + std::to_string(axis) + " is out of range for shape " + shape_str(in[0].shape));
  return {in[0]};
}

// Weight (and bias) must have the normalized shape x.shape[begin_axis:].
std::vector<TensorMeta> norm_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs) {
  meta::require_float(op, in, 0);
  meta::require_same_dtype(op, in);
  int64_t begin = attrs.get_int("begin_axis");
  const Shape& x = in[0].shape;
  OAR_CHECK_ARG(begin >= 0 && begin < std::max<int64_t>(static_cast<int64_t>(x.size()), 1),
            op.name + ": begin_axis " + std::to_string(begin) + " is out of range for shape " + shape_str(x));
  Shape normalized(x.begin() + begin, x.end());
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i].shape != normalized) {
      throw Error(ErrorCode::invalid_argument, op.name + ": x has shape " + shape_str(x) + " so input " +
                                                   std::to_string(i) + " must have the normalized shape " +
                                                   shape_str(normalized) + " but has " + shape_str(in[i].shape));
    }
  }
  return {in[0]};
}

std::vector<int64_t> axes_from(int64_t begin, int64_t rank) {
  std::vector<int64_t> axes(static_cast<size_t>(rank - begin));
  std::iota(axes.begin(), axes.end(), begin);
  return axes;
}

// A 0-D zero broadcasts against x (Paddle's relu_decomp), so the
// decomposition holds for every shape of x.
std::vector<Tensor> relu_decompose(std::span<const Tensor> in, const Attrs&) {
  return {maximum(in[0], scalar_like(in[0], 0.0))};
}

std::vector<Tensor> sigmoid_decompose(std::span<const Tensor> in, const Attrs&) {
  return {1.0 / (1.0 + exp(-in[0]))};
}

std::vector<Tensor> silu_decompose(std::span<const Tensor> in, const Attrs&) { return {in[0] * sigmoid(in[0])}; }

std::vector<Tensor> gelu_decompose(std::span<const Tensor> in, const Attrs& attrs) {
  const Tensor& x = in[0];
  if (attrs.get_bool("approximate")) {
    Tensor inner = (x + x * x * x * 0.044715) * std::sqrt(2.0 / M_PI);
    return {x * 0.5 * (1.0 + tanh(inner))};
  }
  return {x * 0.5 * (1.0 + erf(x * M_SQRT1_2))};
}

// softmax, log_softmax, layer_norm and rms_norm compute f16/bf16 inputs in
// f32 and cast the result back (upcast_half), as Paddle's composite rules
// do: the sums and the variance would lose most of their bits in half.
std::vector<Tensor> softmax_decompose(std::span<const Tensor> in, const Attrs& attrs) {
  int64_t axis = attrs.get_int("axis");
  Tensor x = upcast_half(in[0]);
  Tensor shifted = x - max(x, {axis}, true);
  Tensor e = exp(shifted);
  return {cast_back(e / sum(e, {axis}, true), in[0].dtype())};
}

std::vector<Tensor> log_softmax_decompose(std::span<const Tensor> in, const Attrs& attrs) {
  int64_t axis = attrs.get_int("axis");
  Tensor x = upcast_half(in[0]);
  Tensor shifted = x - max(x, {axis}, true);
  return {cast_back(shifted - log(sum(exp(shifted), {axis}, true)), in[0].dtype())};
}

std::vector<Tensor> layer_norm_decompose(std::span<const Tensor> in, const Attrs& attrs) {
  auto axes = axes_from(attrs.get_int("begin_axis"), in[0].dim());
  Tensor x = upcast_half(in[0]);
  Tensor centered = x - mean(x, axes, true);
  Tensor variance = mean(centered * centered, axes, true);
  Tensor y = centered * rsqrt(variance + attrs.get_float("epsilon")) * upcast_half(in[1]) + upcast_half(in[2]);
  return {cast_back(y, in[0].dtype())};
}

std::vector<Tensor> rms_norm_decompose(std::span<const Tensor> in, const Attrs& attrs) {
  auto axes = axes_from(attrs.get_int("begin_axis"), in[0].dim());
  Tensor x = upcast_half(in[0]);
  Tensor ms = mean(x * x, axes, true);
  return {cast_back(x * rsqrt(ms + attrs.get_float("epsilon")) * upcast_half(in[1]), in[0].dtype())};
}

// ---- SPMD rules (spmd.h) ----
// softmax and log_softmax normalize along `axis`: a sharding of another
// dim passes through, a sharded axis or a Partial input is gathered first
// (Paddle's softmax rule). relu, sigmoid, silu and gelu are elementwise
// (spmd::elementwise_unary).
SpmdResult softmax_spmd(const SpmdArgs& args) {
  const Placement& p = args.placements[0];
  if (p.is_shard() && p.dim != args.attrs.get_int("axis")) return {{p}, {p}};
  return {{Placement::Replicate()}, {Placement::Replicate()}};
}

// layer_norm (x, weight, bias) and rms_norm (x, weight) normalize over dims
// begin_axis..: a sharding of a batch dim (before begin_axis; sequence
// parallel shards the sequence dim) passes through with weight and bias
// replicated; a sharded normalized dim or a Partial x is gathered first
// (Paddle's layer_norm rule). rms_norm's VJP differentiates the
// decomposition (no VJP rule), whose ops have rules of their own;
// layer_norm has a rule (layer_norm_vjp).
SpmdResult norm_spmd(const SpmdArgs& args) {
  const Placement& p = args.placements[0];
  std::vector<Placement> inputs(args.inputs.size(), Placement::Replicate());
  if (p.is_shard() && p.dim < args.attrs.get_int("begin_axis")) {
    inputs[0] = p;
    return {inputs, {p}};
  }
  return {inputs, {Placement::Replicate()}};
}

// layer_norm_grad (x, weight, g -> dx, dweight, dbias): x and g sharded
// alike on a batch dim (before begin_axis) give dx sharded so and dweight,
// dbias (sums over the batch dims) Partial(sum); a Partial(sum|avg) g with
// x and weight whole gives all three Partial, each being linear in g;
// otherwise everything is gathered.
SpmdResult layer_norm_grad_spmd(const SpmdArgs& args) {
  using spmd_util::Candidate;
  const Placement R = Placement::Replicate();
  const int64_t begin = args.attrs.get_int("begin_axis");
  std::vector<Candidate> candidates;
  for (const Placement& p : {args.placements[0], args.placements[2]}) {
    if (p.is_shard() && p.dim < begin) candidates.push_back({{p, R, p}, {p, Placement::Partial(), Placement::Partial()}});
  }
  const Placement& g = args.placements[2];
  if (g.is_partial() && (g.reduce == ReduceKind::sum || g.reduce == ReduceKind::avg))
    candidates.push_back({{R, R, g}, {g, g, g}});
  candidates.push_back({{R, R, R}, {R, R, R}});
  return spmd_util::cheapest(args, candidates);
}

// ---- VJP rules, used when a device ran a fused kernel (first order). They
// are written in primitives, so higher orders differentiate them again. ----
using Grads = std::vector<Tensor>;
Grads relu_vjp(const VjpContext& c) {
  Tensor x = c.inputs[0].detach();  // the mask is piecewise constant: no grad-of-grad through it
  return {c.grads[0] * cast(greater_than(x, scalar_like(x, 0.0)), x.dtype())};
}
Grads sigmoid_vjp(const VjpContext& c) { return {c.grads[0] * c.outputs[0] * (1.0 - c.outputs[0])}; }
Grads silu_vjp(const VjpContext& c) {
  Tensor s = sigmoid(c.inputs[0]);
  return {c.grads[0] * s * (1.0 + c.inputs[0] * (1.0 - s))};
}
// gelu: d/dx x Phi(x) = Phi(x) + x phi(x), phi(x) = e^(-x^2/2) / sqrt(2 pi); the tanh
// formula y = x/2 (1 + t), t = tanh(u), u = sqrt(2/pi) (x + 0.044715 x^3), gives
// (1 + t)/2 + x/2 (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2). With the rule a
// training step runs the fused gelu kernel instead of the decomposition
// (and its rules); in ops, so higher orders differentiate it again.
Grads gelu_vjp(const VjpContext& c) {
  const Tensor &x = c.inputs[0], &g = c.grads[0];
  if (c.attrs.get_bool("approximate")) {
    const double k = std::sqrt(2.0 / M_PI);
    Tensor t = tanh((x + x * x * x * 0.044715) * k);
    Tensor du = (1.0 + x * x * (3.0 * 0.044715)) * k;
    return {g * ((1.0 + t) * 0.5 + x * 0.5 * (1.0 - t * t) * du)};
  }
  Tensor cdf = (1.0 + erf(x * M_SQRT1_2)) * 0.5;
  Tensor pdf = exp(x * x * -0.5) * (0.5 * M_2_SQRTPI * M_SQRT1_2);  // 1 / sqrt(2 pi)
  return {g * (cdf + x * pdf)};
}
Grads softmax_vjp(const VjpContext& c) {
  int64_t axis = c.attrs.get_int("axis");
  const Tensor &y = c.outputs[0], &g = c.grads[0];
  return {y * (g - sum(g * y, {axis}, true))};
}
Grads log_softmax_vjp(const VjpContext& c) {
  int64_t axis = c.attrs.get_int("axis");
  const Tensor &y = c.outputs[0], &g = c.grads[0];
  return {g - exp(y) * sum(g, {axis}, true)};
}

// layer_norm: with xhat = (x - mean) * rstd over the normalized dims,
//   dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)),  gw = g * weight,
//   dweight = sum(g * xhat), dbias = sum(g) over the batch dims.
// mean and rstd are recomputed from x (the fused kernel keeps neither).
// layer_norm_grad (inputs x, weight, g; outputs dx, dweight, dbias) is that
// formula as a composite op: a device kernel (cpu: kernels_fused.cpp) does
// it in two passes; grad-of-grad differentiates the decomposition. With the
// rule a training step runs the fused forward kernel instead of the
// nine-op decomposition and its nine backward rules.
std::vector<Tensor> layer_norm_grad_decompose(std::span<const Tensor> in, const Attrs& attrs) {
  const int64_t begin = attrs.get_int("begin_axis");
  const auto axes = axes_from(begin, in[0].dim());
  std::vector<int64_t> batch(static_cast<size_t>(begin));
  std::iota(batch.begin(), batch.end(), int64_t{0});
  Tensor x = upcast_half(in[0]);
  Tensor g = upcast_half(in[2]);
  Tensor centered = x - mean(x, axes, true);
  Tensor rstd = rsqrt(mean(centered * centered, axes, true) + attrs.get_float("epsilon"));
  Tensor xhat = centered * rstd;
  Tensor gw = g * upcast_half(in[1]);
  Tensor dx = rstd * (gw - mean(gw, axes, true) - xhat * mean(gw * xhat, axes, true));
  auto over_batch = [&](const Tensor& t) { return batch.empty() ? t : sum(t, batch, false); };
  return {cast_back(dx, in[0].dtype()), cast_back(over_batch(g * xhat), in[1].dtype()),
          cast_back(over_batch(g), in[1].dtype())};
}

std::vector<TensorMeta> layer_norm_grad_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs) {
  std::array<TensorMeta, 2> x_and_weight{in[0], in[1]};
  norm_meta(op, x_and_weight, attrs);
  OAR_CHECK_ARG(in[2].shape == in[0].shape && in[2].dtype == in[0].dtype,
                op.name + ": the gradient has shape " + shape_str(in[2].shape) + " and dtype " +
                    std::string(dtype_name(in[2].dtype)) + " but x has " + shape_str(in[0].shape) + " and " +
                    std::string(dtype_name(in[0].dtype)));
  return {in[0], in[1], in[1]};
}

Grads layer_norm_vjp(const VjpContext& c) {
  if (!c.grads[0].defined()) return Grads(3);
  std::array<Tensor, 3> in{c.inputs[0], c.inputs[1], c.grads[0]};
  return current_builder().apply(OAR_OP("layer_norm_grad"), in, c.attrs, nullptr);
}

Tensor composite(const OpDef& op, std::span<const Tensor> in, Attrs attrs = {}) { return apply1(op, in, attrs); }

Tensor with_axis(const OpDef& op, const Tensor& x, int64_t axis) {
  std::array<Tensor, 1> in{x};
  return composite(op, in, Attrs{{"axis", meta::normalize_axis(op.name, axis, x.dim())}});
}

}  // namespace

OAR_REGISTER_OPS(nn) {
  auto composite_def = [](const char* name, int inputs, MetaFn m, DecomposeFn d, VjpFn vjp,
                          std::vector<AttrSpec> attrs, const char* doc) {
    // Every nn composite but relu requires a float input (its meta rule says so).
    DTypeSet accepts = m == meta::same_as_input ? kAllDTypes : kFloatDTypes;
    return OpDef{.name = name, .kind = OpKind::composite, .num_inputs = inputs, .meta = m, .decompose = d,
                 .vjp = vjp, .attrs = std::move(attrs), .dtypes = {.accepts = accepts}, .doc = doc};
  };
  auto add_composite = [&](const char* name, int inputs, MetaFn m, DecomposeFn d, VjpFn vjp,
                           std::vector<AttrSpec> attrs, const char* doc, SpmdFn spmd) {
    OpDef def = composite_def(name, inputs, m, d, vjp, std::move(attrs), doc);
    def.spmd = spmd;
    add_op(std::move(def));
  };
  // Elementwise unary composites: conformance cases from their domain, f32/f64 (Note [One op definition]).
  auto elementwise = [&](const char* name, MetaFn m, DecomposeFn d, VjpFn vjp, TestDomain domain, const char* doc) {
    OpDef def = composite_def(name, 1, m, d, vjp, {}, doc);
    if (m == meta::same_as_float_input) def.dtypes.promotion = Promotion::float_compute;
    def.spmd = spmd::elementwise_unary;
    def.domain = domain;
    add_op(std::move(def));
  };
  elementwise("relu", meta::same_as_input, relu_decompose, relu_vjp,
              {-3, 3, NAN, NAN, false, false, true, kF32F64DTypes, 10}, "max(x, 0)");
  elementwise("sigmoid", meta::same_as_float_input, sigmoid_decompose, sigmoid_vjp,
              {-8, 8, NAN, NAN, false, false, true, kF32F64DTypes, 10}, "1 / (1 + e^-x)");
  elementwise("silu", meta::same_as_float_input, silu_decompose, silu_vjp,
              {-8, 8, NAN, NAN, false, false, true, kF32F64DTypes, 10}, "x * sigmoid(x)");
  add_composite("gelu", 1, meta::same_as_float_input, gelu_decompose, gelu_vjp,
                {attr("approximate", false, "the tanh formula instead of erf")}, "x * Phi(x)", spmd::elementwise_unary);
  const AttrSpec axis = attr("axis", AttrKind::int_, "the normalized axis, in [0, rank)");
  add_composite("softmax", 1, axis_meta, softmax_decompose, softmax_vjp, {axis}, "e^x / sum(e^x) along axis",
                softmax_spmd);
  add_composite("log_softmax", 1, axis_meta, log_softmax_decompose, log_softmax_vjp, {axis}, "log(softmax(x))",
                softmax_spmd);
  add_composite("layer_norm", 3, norm_meta, layer_norm_decompose, layer_norm_vjp,
                {attr("epsilon", 1e-5, "added to the variance"),
                 attr("begin_axis", AttrKind::int_, "first normalized dim")},
                "(x - mean) / sqrt(var + eps) * weight + bias over dims begin_axis..", norm_spmd);
  OpDef layer_norm_grad = composite_def(
      "layer_norm_grad", 3, layer_norm_grad_meta, layer_norm_grad_decompose, nullptr,
      {attr("epsilon", 1e-5, "added to the variance"), attr("begin_axis", AttrKind::int_, "first normalized dim")},
      "layer_norm's gradients (dx, dweight, dbias) from x, weight and the output's gradient");
  layer_norm_grad.num_outputs = 3;
  layer_norm_grad.spmd = layer_norm_grad_spmd;
  add_op(std::move(layer_norm_grad));
  add_composite("rms_norm", 2, norm_meta, rms_norm_decompose, nullptr,
                {attr("epsilon", 1e-6, "added to the mean square"),
                 attr("begin_axis", AttrKind::int_, "first normalized dim")},
                "x / sqrt(mean(x^2) + eps) * weight over dims begin_axis..", norm_spmd);
}

Tensor relu(const Tensor& x) {
  std::array<Tensor, 1> in{x};
  return composite(OAR_OP("relu"), in);
}
Tensor sigmoid(const Tensor& x) {
  std::array<Tensor, 1> in{x};
  return composite(OAR_OP("sigmoid"), in);
}
Tensor silu(const Tensor& x) {
  std::array<Tensor, 1> in{x};
  return composite(OAR_OP("silu"), in);
}
Tensor gelu(const Tensor& x, bool approximate) {
  std::array<Tensor, 1> in{x};
  return composite(OAR_OP("gelu"), in, Attrs{{"approximate", approximate}});
}
Tensor softmax(const Tensor& x, int64_t axis) { return with_axis(OAR_OP("softmax"), x, axis); }
Tensor log_softmax(const Tensor& x, int64_t axis) { return with_axis(OAR_OP("log_softmax"), x, axis); }

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double epsilon, int64_t begin_axis) {
  int64_t begin = meta::normalize_axis("layer_norm", begin_axis, x.dim());
  Shape normalized(x.shape().begin() + begin, x.shape().end());
  std::array<Tensor, 3> in{x, weight.defined() ? weight : ones(normalized, x.dtype(), x.device()),
                           bias.defined() ? bias : zeros(normalized, x.dtype(), x.device())};
  return composite(OAR_OP("layer_norm"), in, Attrs{{"epsilon", epsilon}, {"begin_axis", begin}});
}

Tensor rms_norm(const Tensor& x, const Tensor& weight, double epsilon) {
  int64_t begin = meta::normalize_axis("rms_norm", -1, x.dim());
  Shape normalized(x.shape().begin() + begin, x.shape().end());
  std::array<Tensor, 2> in{x, weight.defined() ? weight : ones(normalized, x.dtype(), x.device())};
  return composite(OAR_OP("rms_norm"), in, Attrs{{"epsilon", epsilon}, {"begin_axis", begin}});
}

}  // namespace oar
