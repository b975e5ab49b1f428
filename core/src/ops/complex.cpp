// Complex ops: complex(real, imag), real, imag, conj, angle, as_real,
// as_complex (primitives with VJPs) and polar (composite). abs on complex
// and the complex cases of the elementwise ops are in elementwise.cpp; this
// file holds the gradient convention every one of them follows.
#include <array>
#include <cmath>
#include <numbers>

#include "oar/autograd.h"
#include "oar/ops.h"
#include "ops/op_util.h"

namespace oar {

// Note [Complex gradients]
// The loss L is real. For a complex input z = x + iy the gradient oar
// stores is dL/dx + i dL/dy (Paddle's and PyTorch's convention: the
// conjugate Wirtinger derivative times 2). A real input keeps dL/dx. With
// cotangent g of an output w = f(z):
//  - holomorphic f (exp, log, sqrt, sin, cos, tanh, mul, div, matmul):
//    grad_z = g * conj(f'(z)); so mul gives grad_a = g * conj(b), matmul
//    grad_A = g B^H, exp grad = g * conj(exp(z));
//  - conj: grad_z = conj(g);
//  - real(z): grad_z = g + 0i; imag(z): grad_z = 0 + ig (g real);
//  - complex(x, y): grad_x = Re(g), grad_y = Im(g);
//  - |z| (real output): grad_z = g * z / |z| (0 at z = 0, the subgradient
//    PyTorch picks); angle(z) = atan2(y, x): grad_z = g * i z / |z|^2;
//  - a cast real -> complex gives Re(g), complex -> real gives g + 0i;
//  - as_real / as_complex reinterpret (re, im) pairs: their VJPs are each
//    other.
// A gradient-descent step z -= lr * grad then decreases L for real and
// complex parameters alike. docs/complex_gradients.md is the user's page.

namespace {

using Grads = std::vector<Tensor>;

void require_complex(const OpDef& op, std::span<const TensorMeta> in) {
  if (!is_complex(in[0].dtype)) {
    throw Error(ErrorCode::invalid_argument, op.name + ": x has dtype " + std::string(dtype_name(in[0].dtype)) +
                                                 " but a complex dtype (complex64 or complex128) is required");
  }
}

void require_f32_f64(const OpDef& op, std::span<const TensorMeta> in) {
  meta::require_same_dtype(op, in);
  if (in[0].dtype != DType::f32 && in[0].dtype != DType::f64) {
    throw Error(ErrorCode::invalid_argument, op.name + ": the inputs have dtype " +
                                                 std::string(dtype_name(in[0].dtype)) +
                                                 " but float32 or float64 is required");
  }
}

// complex(real, imag) and polar(abs, angle): two real inputs, broadcast.
std::vector<TensorMeta> from_parts_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs&) {
  require_f32_f64(op, in);
  return {{complex_dtype_for(in[0].dtype), meta::broadcast_shapes(op.name, in[0].shape, in[1].shape)}};
}

// real, imag, angle: complex -> its part dtype.
std::vector<TensorMeta> to_part_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs&) {
  require_complex(op, in);
  return {{real_dtype_for(in[0].dtype), in[0].shape}};
}

std::vector<TensorMeta> conj_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs&) {
  require_complex(op, in);
  return {in[0]};
}

std::vector<TensorMeta> as_real_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs&) {
  require_complex(op, in);
  Shape s = in[0].shape;
  s.push_back(2);
  return {{real_dtype_for(in[0].dtype), s}};
}

std::vector<TensorMeta> as_complex_meta(const OpDef&, std::span<const TensorMeta> in, const Attrs&) {
  const TensorMeta& x = in[0];
  if (x.dtype != DType::f32 && x.dtype != DType::f64) {
    throw Error(ErrorCode::invalid_argument, "as_complex: x has dtype " + std::string(dtype_name(x.dtype)) +
                                                 " but float32 or float64 is required");
  }
  if (x.shape.empty() || x.shape.back() != 2) {
    throw Error(ErrorCode::invalid_argument, "as_complex: the last dim of x must be 2 (real, imaginary) but x has shape " +
                                                 shape_str(x.shape));
  }
  return {{complex_dtype_for(x.dtype), Shape(x.shape.begin(), x.shape.end() - 1)}};
}

// Gradient for input i, summed back over broadcast dims, if wanted.
Tensor to_input(const VjpContext& c, size_t i, const Tensor& g) {
  return c.needs[i] ? sum_to_like(g, c.inputs[i]) : Tensor();
}

Grads complex_vjp(const VjpContext& c) {
  const Tensor& g = c.grads[0];
  return {c.needs[0] ? to_input(c, 0, real(g)) : Tensor(), c.needs[1] ? to_input(c, 1, imag(g)) : Tensor()};
}
Grads real_vjp(const VjpContext& c) { return {complex(c.grads[0], zeros_like(c.grads[0]))}; }
Grads imag_vjp(const VjpContext& c) { return {complex(zeros_like(c.grads[0]), c.grads[0])}; }
Grads conj_vjp(const VjpContext& c) { return {conj(c.grads[0])}; }
Grads angle_vjp(const VjpContext& c) {
  // d angle = (x dy - y dx) / |z|^2: grad = g (-y + ix) / |z|^2, 0 at z = 0.
  const Tensor& z = c.inputs[0];
  Tensor re = real(z), im = imag(z);
  Tensor r2 = re * re + im * im;
  Tensor safe = where(equal(r2, zeros_like(r2)), ones_like(r2), r2);
  Tensor scale = c.grads[0] / safe;
  return {complex(-(scale * im), scale * re)};
}
Grads as_real_vjp(const VjpContext& c) { return {as_complex(c.grads[0])}; }
Grads as_complex_vjp(const VjpContext& c) { return {as_real(c.grads[0])}; }

std::vector<Tensor> polar_decompose(std::span<const Tensor> in, const Attrs&) {
  return {complex(in[0] * cos(in[1]), in[0] * sin(in[1]))};
}

// Complex inputs are drawn in the domain for both parts.
constexpr TestDomain kComplexDomain{-3, 3, NAN, NAN, false, false, true, kComplexDTypes};
constexpr TestDomain kPartsDomain{-3, 3, NAN, NAN, false, false, true, kF32F64DTypes};

}  // namespace

OAR_REGISTER_OPS(complex) {
  add_op({.name = "complex", .num_inputs = 2, .layout = InputLayout::broadcast, .meta = from_parts_meta,
          .vjp = complex_vjp, .dtypes = {.accepts = kF32F64DTypes, .promotion = Promotion::common},
          .domain = kPartsDomain, .doc = "z = real + i imag (f32 -> c64, f64 -> c128), broadcast"});
  add_op({.name = "real", .meta = to_part_meta, .vjp = real_vjp, .dtypes = {.accepts = kComplexDTypes},
          .spmd = spmd::elementwise_unary, .domain = kComplexDomain, .doc = "the real part (c64 -> f32, c128 -> f64)"});
  add_op({.name = "imag", .meta = to_part_meta, .vjp = imag_vjp, .dtypes = {.accepts = kComplexDTypes},
          .spmd = spmd::elementwise_unary, .domain = kComplexDomain, .doc = "the imaginary part"});
  add_op({.name = "conj", .meta = conj_meta, .vjp = conj_vjp, .dtypes = {.accepts = kComplexDTypes},
          .spmd = spmd::elementwise_unary, .domain = kComplexDomain, .doc = "complex conjugate x - iy"});
  add_op({.name = "angle", .meta = to_part_meta, .vjp = angle_vjp, .dtypes = {.accepts = kComplexDTypes},
          .spmd = spmd::elementwise_unary, .domain = kComplexDomain,
          .doc = "the argument atan2(imag, real), in [-pi, pi]"});
  add_op({.name = "as_real", .meta = as_real_meta, .vjp = as_real_vjp, .dtypes = {.accepts = kComplexDTypes},
          .doc = "[..., 2] real: the (real, imaginary) pairs"});
  add_op({.name = "as_complex", .meta = as_complex_meta, .vjp = as_complex_vjp,
          .dtypes = {.accepts = kF32F64DTypes}, .doc = "[..., 2] real pairs -> complex [...]"});
  add_op({.name = "polar", .kind = OpKind::composite, .num_inputs = 2, .layout = InputLayout::broadcast,
          .meta = from_parts_meta, .decompose = polar_decompose,
          .dtypes = {.accepts = kF32F64DTypes, .promotion = Promotion::common}, .domain = kPartsDomain,
          .doc = "abs * (cos(angle) + i sin(angle)), broadcast"});
}

namespace {
Tensor unary(const OpDef& op, const Tensor& x) {
  std::array<Tensor, 1> in{x};
  return apply1(op, in);
}
// The two real parts, promoted to one of f32 and f64.
Tensor binary(const OpDef& op, const Tensor& a, const Tensor& b) {
  for (const Tensor* t : {&a, &b}) {
    if (is_complex(t->dtype())) {
      throw Error(ErrorCode::invalid_argument, op.name + ": input " + std::to_string(t == &a ? 0 : 1) +
                                                   " has dtype " + std::string(dtype_name(t->dtype())) +
                                                   " but the parts must be real (float32 or float64)");
    }
  }
  DType d = promote_types(a.dtype(), b.dtype());
  if (!is_floating(d)) d = DType::f32;  // integer parts compute in f32 (as Paddle's complex of ints)
  if (d == DType::f16 || d == DType::bf16) d = DType::f32;
  std::array<Tensor, 2> in{cast(a, d), cast(b, d)};
  return apply1(op, in);
}
}  // namespace

Tensor complex(const Tensor& real_part, const Tensor& imag_part) {
  return binary(OAR_OP("complex"), real_part, imag_part);
}
Tensor polar(const Tensor& abs_value, const Tensor& angle_value) {
  return binary(OAR_OP("polar"), abs_value, angle_value);
}
Tensor real(const Tensor& x) { return is_complex(x.dtype()) ? unary(OAR_OP("real"), x) : x; }
Tensor imag(const Tensor& x) { return is_complex(x.dtype()) ? unary(OAR_OP("imag"), x) : zeros_like(x); }
Tensor conj(const Tensor& x) { return is_complex(x.dtype()) ? unary(OAR_OP("conj"), x) : x; }
Tensor angle(const Tensor& x) {
  if (is_complex(x.dtype())) return unary(OAR_OP("angle"), x);
  // A real x: pi where x < 0, else 0 (NaN stays NaN), as Paddle's angle.
  Tensor zero = zeros_like(x);
  Tensor pi = full_like(x, std::numbers::pi);
  return where(less_than(x, zero), pi, where(equal(x, x), zero, x));
}
Tensor as_real(const Tensor& x) { return unary(OAR_OP("as_real"), x); }
Tensor as_complex(const Tensor& x) { return unary(OAR_OP("as_complex"), x); }

}  // namespace oar
