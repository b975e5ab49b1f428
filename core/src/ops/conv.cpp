// Convolution and pooling over NCHW (primitives, each with its backward ops):
// conv2d, conv2d_grad_input, conv2d_grad_weight, max_pool2d,
// max_pool2d_grad, avg_pool2d, avg_pool2d_grad.
//
// Note [Conv VJPs]: conv2d is bilinear in (x, w). Write C(x, w) for the
// forward, Gi(g, w) = C(., w)^T g for conv2d_grad_input and
// Gw(x, g) = C(x, .)^T g for conv2d_grad_weight. Then
//   <h, Gi(g, w)> = <C(h, w), g>  and  <h, Gw(x, g)> = <C(x, h), g>,
// so the VJPs of the three ops are each other: the family is closed and
// derivatives of every order come out of recording it. avg_pool2d and its
// grad are linear and adjoint to each other likewise. max_pool2d_grad is
// linear in its gradient input with a mask that depends on x through the
// argmax only (zero derivative almost everywhere); its VJP with respect to
// the gradient input (a gather at the argmax positions) is not provided, so
// grad-of-grad through max_pool2d raises an error naming it.
//
// Note [Batch of the grad ops]: conv2d_grad_input and avg_pool2d_grad
// cannot infer x's shape from the gradient alone (a strided window drops
// up to stride - 1 rows), so an input_shape attribute holds it. Its batch
// is the gradient's by construction, and the VJPs write it as -1: a
// program traced with a dynamic batch then holds for every batch size
// (Note [Dynamic dims] in oar/ir/trace.h) instead of baking the example's.
// The kernels take every size from their output view. A dynamic spatial
// dim still bakes the example's size; the symbolic meta rule rejects it,
// and the backward is made per input shapes.
#include <array>

#include "oar/autograd.h"
#include "oar/ops.h"
#include "ops/op_util.h"

namespace oar {

namespace {

using Ints = std::vector<int64_t>;

std::string ints_str(const Ints& v) { return shape_str(v); }

// Reads an int attribute of two entries with every entry >= lo.
Ints pair_attr(const std::string& op, const Attrs& attrs, const char* name, int64_t lo) {
  const Ints& v = attrs.get_ints(name);
  OAR_CHECK_ARG(v.size() == 2 && v[0] >= lo && v[1] >= lo, op + ": " + name + " must hold two entries >= " +
                                                               std::to_string(lo) + " but is " + ints_str(v));
  return v;
}

void require_nchw(const std::string& op, const char* arg, const TensorMeta& m) {
  OAR_CHECK_ARG(m.shape.size() == 4, op + ": " + arg + " must be 4-D (NCHW) but has shape " + shape_str(m.shape));
}

// Output extent of one spatial dim; throws when the window does not fit.
int64_t out_extent(const std::string& op, int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation,
                   const Shape& x, const std::string& what) {
  int64_t span = dilation * (kernel - 1) + 1;
  if (in + 2 * pad < span) {
    throw Error(ErrorCode::invalid_argument, op + ": x has shape " + shape_str(x) + " but " + what + " spans " +
                                                 std::to_string(span) + " elements, more than the padded extent " +
                                                 std::to_string(in + 2 * pad));
  }
  return (in + 2 * pad - span) / stride + 1;
}

struct ConvGeometry {
  Ints stride, pad, dilation;
  int64_t groups = 1;
};

ConvGeometry conv_geometry(const std::string& op, const Attrs& attrs) {
  ConvGeometry g{pair_attr(op, attrs, "strides", 1), pair_attr(op, attrs, "paddings", 0),
                 pair_attr(op, attrs, "dilations", 1), attrs.get_int("groups")};
  OAR_CHECK_ARG(g.groups >= 1, op + ": groups must be >= 1 but is " + std::to_string(g.groups));
  return g;
}

// Output shape of conv2d for x [N, C, H, W] and w [Cout, C/groups, kh, kw].
Shape conv_output(const std::string& op, const Shape& x, const Shape& w, const ConvGeometry& g) {
  if (x[1] != w[1] * g.groups || w[0] % g.groups != 0) {
    throw Error(ErrorCode::invalid_argument,
                op + ": x has shape " + shape_str(x) + " and weight has shape " + shape_str(w) + " with groups " +
                    std::to_string(g.groups) + "; x's " + std::to_string(x[1]) +
                    " channels must equal weight's in-channels " + std::to_string(w[1]) +
                    " times groups, and weight's out-channels must be divisible by groups");
  }
  return {x[0], w[0], out_extent(op, x[2], w[2], g.stride[0], g.pad[0], g.dilation[0], x, "the kernel"),
          out_extent(op, x[3], w[3], g.stride[1], g.pad[1], g.dilation[1], x, "the kernel")};
}

void require_shape(const std::string& op, const char* arg, const Shape& got, const Shape& want,
                   const std::string& why) {
  if (got != want) {
    throw Error(ErrorCode::invalid_argument, op + ": " + arg + " has shape " + shape_str(got) + " but " + why +
                                                 " requires " + shape_str(want));
  }
}

// conv2d: inputs x, weight.
std::vector<TensorMeta> conv2d_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs) {
  meta::require_float(op, in, 0);
  meta::require_same_dtype(op, in);
  require_nchw(op.name, "x", in[0]);
  require_nchw(op.name, "weight", in[1]);
  return {{in[0].dtype, conv_output(op.name, in[0].shape, in[1].shape, conv_geometry(op.name, attrs))}};
}

// The input_shape attribute of conv2d_grad_input and avg_pool2d_grad, with
// a batch of -1 taken from the gradient (Note [Batch of the grad ops]).
Shape input_shape(const std::string& op, const Attrs& attrs, const Shape& grad) {
  Shape x = attrs.get_ints("input_shape");
  OAR_CHECK_ARG(x.size() == 4, op + ": input_shape must have 4 entries but is " + ints_str(x));
  if (x[0] == -1 && grad.size() == 4) x[0] = grad[0];
  for (int64_t d : x) {
    OAR_CHECK_ARG(d >= 0, op + ": input_shape " + ints_str(attrs.get_ints("input_shape")) +
                              " may hold -1 only as its batch (the gradient's); the other entries must be >= 0");
  }
  return x;
}

// conv2d_grad_input: inputs grad (of conv2d's output), weight; attribute
// input_shape is x's shape.
std::vector<TensorMeta> conv2d_grad_input_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs) {
  meta::require_float(op, in, 0);
  meta::require_same_dtype(op, in);
  require_nchw(op.name, "grad", in[0]);
  require_nchw(op.name, "weight", in[1]);
  const Shape x = input_shape(op.name, attrs, in[0].shape);
  Shape y = conv_output(op.name, x, in[1].shape, conv_geometry(op.name, attrs));
  require_shape(op.name, "grad", in[0].shape, y, "conv2d of x " + shape_str(x) + " and weight " + shape_str(in[1].shape));
  return {{in[0].dtype, x}};
}

// conv2d_grad_weight: inputs x, grad; attribute weight_shape.
std::vector<TensorMeta> conv2d_grad_weight_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs) {
  meta::require_float(op, in, 0);
  meta::require_same_dtype(op, in);
  require_nchw(op.name, "x", in[0]);
  require_nchw(op.name, "grad", in[1]);
  const Ints& w = attrs.get_ints("weight_shape");
  OAR_CHECK_ARG(w.size() == 4, op.name + ": weight_shape must have 4 entries but is " + ints_str(w));
  Shape y = conv_output(op.name, in[0].shape, w, conv_geometry(op.name, attrs));
  require_shape(op.name, "grad", in[1].shape, y, "conv2d of x " + shape_str(in[0].shape) + " and weight " + shape_str(w));
  return {{in[0].dtype, w}};
}

struct PoolGeometry {
  Ints kernel, stride, pad;
};

PoolGeometry pool_geometry(const std::string& op, const Attrs& attrs) {
  PoolGeometry g{pair_attr(op, attrs, "kernel_size", 1), pair_attr(op, attrs, "strides", 1),
                 pair_attr(op, attrs, "paddings", 0)};
  for (int d = 0; d < 2; ++d) {
    OAR_CHECK_ARG(2 * g.pad[d] <= g.kernel[d], op + ": paddings " + ints_str(g.pad) +
                                                   " must be at most half of kernel_size " + ints_str(g.kernel));
  }
  return g;
}

Shape pool_output(const std::string& op, const Shape& x, const PoolGeometry& g) {
  return {x[0], x[1], out_extent(op, x[2], g.kernel[0], g.stride[0], g.pad[0], 1, x, "the window"),
          out_extent(op, x[3], g.kernel[1], g.stride[1], g.pad[1], 1, x, "the window")};
}

// max_pool2d, avg_pool2d: input x.
std::vector<TensorMeta> pool_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs) {
  meta::require_float(op, in, 0);
  require_nchw(op.name, "x", in[0]);
  return {{in[0].dtype, pool_output(op.name, in[0].shape, pool_geometry(op.name, attrs))}};
}

// max_pool2d_grad: inputs x, grad.
std::vector<TensorMeta> max_pool_grad_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs) {
  meta::require_float(op, in, 0);
  meta::require_same_dtype(op, in);
  require_nchw(op.name, "x", in[0]);
  Shape y = pool_output(op.name, in[0].shape, pool_geometry(op.name, attrs));
  require_shape(op.name, "grad", in[1].shape, y, "pooling x " + shape_str(in[0].shape));
  return {in[0]};
}

// avg_pool2d_grad: input grad; attribute input_shape.
std::vector<TensorMeta> avg_pool_grad_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs) {
  meta::require_float(op, in, 0);
  const Shape x = input_shape(op.name, attrs, in[0].shape);
  Shape y = pool_output(op.name, x, pool_geometry(op.name, attrs));
  require_shape(op.name, "grad", in[0].shape, y, "pooling x " + shape_str(x));
  return {{in[0].dtype, x}};
}

// ---- the grad ops as functions (used by the VJP rules) ----
Attrs with(const Attrs& attrs, const char* name, AttrValue value) {
  Attrs out;
  for (const auto& [k, v] : attrs.items()) {
    if (k != "input_shape" && k != "weight_shape") out.set(k, v);
  }
  if (name) out.set(name, std::move(value));
  return out;
}

Tensor conv2d_op(const Tensor& x, const Tensor& w, const Attrs& attrs) {
  std::array<Tensor, 2> in{x, w};
  return apply1(OAR_OP("conv2d"), in, with(attrs, nullptr, {}));
}
// x's shape as the input_shape attribute, its batch -1: the gradient's.
Ints batch_free(const Shape& x) {
  Ints s(x);
  if (!s.empty()) s[0] = -1;
  return s;
}
Tensor conv2d_grad_input_op(const Tensor& g, const Tensor& w, const Shape& x_shape, const Attrs& attrs) {
  std::array<Tensor, 2> in{g, w};
  return apply1(OAR_OP("conv2d_grad_input"), in, with(attrs, "input_shape", batch_free(x_shape)));
}
Tensor conv2d_grad_weight_op(const Tensor& x, const Tensor& g, const Shape& w_shape, const Attrs& attrs) {
  std::array<Tensor, 2> in{x, g};
  return apply1(OAR_OP("conv2d_grad_weight"), in, with(attrs, "weight_shape", Ints(w_shape)));
}

// ---- VJP rules (Note [Conv VJPs]) ----
using Grads = std::vector<Tensor>;
Grads conv2d_vjp(const VjpContext& c) {
  const Tensor &x = c.inputs[0], &w = c.inputs[1], &g = c.grads[0];
  return {c.needs[0] ? conv2d_grad_input_op(g, w, x.shape(), c.attrs) : Tensor(),
          c.needs[1] ? conv2d_grad_weight_op(x, g, w.shape(), c.attrs) : Tensor()};
}
// Inputs (g, w) -> dx; h is the gradient of dx.
Grads conv2d_grad_input_vjp(const VjpContext& c) {
  const Tensor &g = c.inputs[0], &w = c.inputs[1], &h = c.grads[0];
  return {c.needs[0] ? conv2d_op(h, w, c.attrs) : Tensor(),
          c.needs[1] ? conv2d_grad_weight_op(h, g, w.shape(), c.attrs) : Tensor()};
}
// Inputs (x, g) -> dw; h is the gradient of dw.
Grads conv2d_grad_weight_vjp(const VjpContext& c) {
  const Tensor &x = c.inputs[0], &g = c.inputs[1], &h = c.grads[0];
  return {c.needs[0] ? conv2d_grad_input_op(g, h, x.shape(), c.attrs) : Tensor(),
          c.needs[1] ? conv2d_op(x, h, c.attrs) : Tensor()};
}

Grads max_pool2d_vjp(const VjpContext& c) {
  std::array<Tensor, 2> in{c.inputs[0], c.grads[0]};
  return {apply1(OAR_OP("max_pool2d_grad"), in, c.attrs)};
}
Grads max_pool2d_grad_vjp(const VjpContext& c) {
  OAR_CHECK_ARG(!c.needs[1], "max_pool2d_grad: the gradient with respect to its grad input (a second derivative "
                             "of max_pool2d) is not implemented");
  return {Tensor(), Tensor()};  // piecewise constant in x
}
Grads avg_pool2d_vjp(const VjpContext& c) {
  std::array<Tensor, 1> in{c.grads[0]};
  return {apply1(OAR_OP("avg_pool2d_grad"), in, with(c.attrs, "input_shape", batch_free(c.inputs[0].shape())))};
}
Grads avg_pool2d_grad_vjp(const VjpContext& c) {
  std::array<Tensor, 1> in{c.grads[0]};
  return {apply1(OAR_OP("avg_pool2d"), in, with(c.attrs, nullptr, {}))};
}

// 1 or 2 entries -> 2 entries (Paddle accepts an int or a pair).
Ints expand_pair(const std::string& op, const char* name, const Ints& v) {
  OAR_CHECK_ARG(v.size() == 1 || v.size() == 2,
                op + ": " + name + " must have 1 or 2 entries but is " + ints_str(v));
  return v.size() == 1 ? Ints{v[0], v[0]} : v;
}

Tensor pool(const char* name, const Tensor& x, const Ints& kernel_size, const Ints& stride, const Ints& padding,
            Attrs extra) {
  Ints k = expand_pair(name, "kernel_size", kernel_size);
  extra.set("kernel_size", k);
  extra.set("strides", stride.empty() ? k : expand_pair(name, "stride", stride));
  extra.set("paddings", expand_pair(name, "padding", padding));
  std::array<Tensor, 1> in{x};
  return apply1(OpRegistry::instance().get(name), in, extra);
}

}  // namespace

OAR_REGISTER_OPS(conv) {
  const std::vector<AttrSpec> conv{attr("strides", AttrKind::ints, "(h, w) steps of the window, >= 1"),
                                    attr("paddings", AttrKind::ints, "(h, w) zeros added on each side, >= 0"),
                                    attr("dilations", Ints{1, 1}, "(h, w) spacing of the kernel's taps, >= 1"),
                                    attr("groups", int64_t{1}, "channels split into this many groups")};
  auto plus = [](std::vector<AttrSpec> specs, const char* extra) {
    specs.push_back(attr(extra, AttrKind::ints,
                         extra == std::string("input_shape") ? "the shape of the result (NCHW); a batch of -1 is the grad's"
                                                             : "the shape of the result (OIHW)"));
    return specs;
  };
  add_op({.name = "conv2d", .num_inputs = 2, .meta = conv2d_meta, .vjp = conv2d_vjp, .attrs = conv,
          .dtypes = {.accepts = kFloatDTypes},
          .doc = "x [N, C, H, W], weight [Cout, C/groups, kh, kw] -> y [N, Cout, Ho, Wo], float dtypes. y[n, o, i, j] = "
                 "sum over c in o's group, p, q of x[n, c, i*sh - ph + p*dh, j*sw - pw + q*dw] * weight[o, c mod "
                 "(C/groups), p, q], out-of-range x reads 0; Ho = (H + 2ph - dh(kh-1) - 1) / sh + 1"});
  add_op({.name = "conv2d_grad_input", .num_inputs = 2, .meta = conv2d_grad_input_meta, .vjp = conv2d_grad_input_vjp,
          .attrs = plus(conv, "input_shape"),
          .dtypes = {.accepts = kFloatDTypes},
          .doc = "grad [N, Cout, Ho, Wo], weight -> dx [N, C, H, W]: the adjoint of conv2d in x, dx = sum of grad * "
                 "weight over every (o, p, q) whose window reads dx's element"});
  add_op({.name = "conv2d_grad_weight", .num_inputs = 2, .meta = conv2d_grad_weight_meta,
          .vjp = conv2d_grad_weight_vjp, .attrs = plus(conv, "weight_shape"),
          .dtypes = {.accepts = kFloatDTypes},
          .doc = "x, grad [N, Cout, Ho, Wo] -> dw [Cout, C/groups, kh, kw]: the adjoint of conv2d in weight, dw[o, c, "
                 "p, q] = sum over n, i, j of grad[n, o, i, j] * x[n, c', i*sh - ph + p*dh, j*sw - pw + q*dw]"});
  const std::vector<AttrSpec> max_pool{attr("kernel_size", AttrKind::ints, "(h, w) window"),
                                        attr("strides", AttrKind::ints, "(h, w) steps of the window"),
                                        attr("paddings", AttrKind::ints, "(h, w) padding, 2 * padding <= kernel")};
  std::vector<AttrSpec> avg_pool = max_pool;
  avg_pool.push_back(attr("exclusive", true, "divide by the elements inside x (else by kh * kw)"));
  add_op({.name = "max_pool2d", .meta = pool_meta, .vjp = max_pool2d_vjp, .attrs = max_pool,
          .dtypes = {.accepts = kFloatDTypes},
          .doc = "x [N, C, H, W] -> y [N, C, Ho, Wo]: max over the window's elements inside x (padding never wins); "
                 "Ho = (H + 2ph - kh) / sh + 1"});
  add_op({.name = "max_pool2d_grad", .num_inputs = 2, .meta = max_pool_grad_meta, .vjp = max_pool2d_grad_vjp,
          .attrs = max_pool,
          .dtypes = {.accepts = kFloatDTypes},
          .doc = "x, grad [N, C, Ho, Wo] -> dx (x's shape): each window's grad added at the window's first maximum "
                 "(row-major scan)"});
  add_op({.name = "avg_pool2d", .meta = pool_meta, .vjp = avg_pool2d_vjp, .attrs = avg_pool,
          .dtypes = {.accepts = kFloatDTypes},
          .doc = "window sum divided by the number of elements inside x (exclusive) or by kh * kw"});
  add_op({.name = "avg_pool2d_grad", .meta = avg_pool_grad_meta, .vjp = avg_pool2d_grad_vjp,
          .attrs = plus(avg_pool, "input_shape"),
          .dtypes = {.accepts = kFloatDTypes},
          .doc = "grad [N, C, Ho, Wo] -> dx: each window's grad divided by its divisor and added to every element of "
                 "the window inside x"});
}

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const std::vector<int64_t>& stride,
              const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups) {
  DType d = promote_types(x.dtype(), weight.dtype());
  Attrs attrs{{"strides", expand_pair("conv2d", "stride", stride)},
              {"paddings", expand_pair("conv2d", "padding", padding)},
              {"dilations", expand_pair("conv2d", "dilation", dilation)},
              {"groups", groups}};
  Tensor y = conv2d_op(cast(x, d), cast(weight, d), attrs);
  if (!bias.defined()) return y;
  OAR_CHECK_ARG(bias.dim() == 1 && bias.shape()[0] == weight.shape()[0],
                "conv2d: bias has shape " + shape_str(bias.shape()) + " but weight has shape " +
                    shape_str(weight.shape()) + "; bias must be [" + std::to_string(weight.shape()[0]) + "]");
  return y + reshape(cast(bias, d), {1, bias.shape()[0], 1, 1});
}

Tensor max_pool2d(const Tensor& x, const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                  const std::vector<int64_t>& padding) {
  return pool("max_pool2d", x, kernel_size, stride, padding, {});
}

Tensor avg_pool2d(const Tensor& x, const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                  const std::vector<int64_t>& padding, bool exclusive) {
  return pool("avg_pool2d", x, kernel_size, stride, padding, Attrs{{"exclusive", exclusive}});
}

}  // namespace oar
