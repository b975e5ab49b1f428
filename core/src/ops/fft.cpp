// FFT primitives, as Paddle's C++ fft ops: fft_c2c, fft_r2c, fft_c2r, with
// their meta rules and VJPs. Kernels: liboar_fftw.so on cpu (plugins/fftw,
// FFTW, GPL, a separate plugin), the reference DFT on the mock. oar.fft
// (frontends/python/oar/fft.py) builds every numpy/Paddle function on these
// three, with padding/trimming and the hermitian variants in Python.
//
// Note [FFT normalization and adjoints]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// `normalization` names which direction is scaled, as numpy's `norm`:
// "backward" scales the inverse by 1/N, "forward" the forward by 1/N,
// "ortho" both by 1/sqrt(N) (N: the product of the transformed lengths).
// A transform in one direction with normalization s has the scale the
// other direction has with swap(s) (backward <-> forward, ortho stays), and
// its adjoint is exactly that transform. With the complex gradient
// convention (for a real loss L of z = x + iy the gradient is dL/dx + i
// dL/dy: docs/complex_gradients.md), the VJP of a complex-linear map A is
// g -> A^H g, so:
//  - c2c: grad_x = fft_c2c(g, axes, swap(s), !forward).
//  - r2c (onesided, real x): grad_x = Re(A^H g) where A^H zero-pads g to n
//    along the last axis and runs the inverse c2c. Re(W^H zeropad(g)) is a
//    c2r of g whose interior bins are halved: c2r extends its input with
//    conj(g[n - k]), which counts each interior bin twice, while the DC (and
//    for even n the Nyquist) bin is real-only in both. So grad_x =
//    fft_c2r(g * w, axes, swap(s), n), w = 1 at DC/Nyquist, 1/2 elsewhere.
//    (Not onesided: grad_x = Re(fft_c2c(g, axes, swap(s), inverse)).)
//  - c2r (x complex, m = n/2 + 1 bins): y depends on Re x_k and Im x_k of an
//    interior bin through 2 Re(x_k e^{+i...}), and on the real part only of
//    DC/Nyquist. Differentiating gives grad_x = w' * fft_r2c(g, axes,
//    swap(s)), w' = 2 on interior bins, 1 at DC/Nyquist (where r2c of a real
//    g is real, so the imaginary gradient there is 0 as it must be).
// Every rule is written in fft ops and elementwise ops, so second and
// higher orders differentiate them again (tests/python/test_fft.py checks
// both orders by finite differences in f64/c128).
#include <array>
#include <cmath>

#include "oar/autograd.h"
#include "oar/ops.h"
#include "oar/runtime.h"
#include "ops/op_util.h"
#include "runtime/runtime_state.h"

namespace oar {

namespace {

// Normalized axes of `op` for rank `rank`, in the given order; throws on a
// repeated or out-of-range axis, an empty list or a transformed dim of size 0.
std::vector<int64_t> fft_axes(const OpDef& op, const Attrs& attrs, const Shape& shape) {
  const auto rank = static_cast<int64_t>(shape.size());
  std::vector<int64_t> axes = attrs.get_ints("axes");
  OAR_CHECK_ARG(!axes.empty(), op.name + ": axes is empty; at least one axis must be transformed");
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t& axis : axes) {
    axis = meta::normalize_axis(op.name, axis, rank);
    OAR_CHECK_ARG(!seen[static_cast<size_t>(axis)],
                  op.name + ": axis " + std::to_string(axis) + " appears twice in axes");
    seen[static_cast<size_t>(axis)] = true;
  }
  return axes;
}

void check_normalization(const OpDef& op, const Attrs& attrs) {
  const std::string& s = attrs.get_string("normalization");
  OAR_CHECK_ARG(s == "backward" || s == "ortho" || s == "forward",
                op.name + ": normalization is '" + s + "' but must be \"backward\", \"ortho\" or \"forward\"");
}

void check_lengths(const OpDef& op, const Shape& shape, const std::vector<int64_t>& axes, const char* what) {
  for (int64_t axis : axes) {
    OAR_CHECK_ARG(shape[static_cast<size_t>(axis)] > 0,
                  op.name + ": " + what + " has shape " + shape_str(shape) + "; the transformed axis " +
                      std::to_string(axis) + " has no points (an FFT needs at least one)");
  }
}

std::vector<TensorMeta> c2c_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs) {
  OAR_CHECK_ARG(is_complex(in[0].dtype), op.name + ": x must be complex64 or complex128 but is " +
                                              std::string(dtype_name(in[0].dtype)));
  check_normalization(op, attrs);
  check_lengths(op, in[0].shape, fft_axes(op, attrs, in[0].shape), "x");
  return {in[0]};
}

std::vector<TensorMeta> r2c_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs) {
  DType d = in[0].dtype;
  OAR_CHECK_ARG(d == DType::f32 || d == DType::f64,
                op.name + ": x must be float32 or float64 but is " + std::string(dtype_name(d)));
  check_normalization(op, attrs);
  std::vector<int64_t> axes = fft_axes(op, attrs, in[0].shape);
  check_lengths(op, in[0].shape, axes, "x");
  Shape out = in[0].shape;
  if (attrs.get_bool("onesided")) out[static_cast<size_t>(axes.back())] = out[static_cast<size_t>(axes.back())] / 2 + 1;
  return {{complex_dtype_for(d), out}};
}

std::vector<TensorMeta> c2r_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs) {
  OAR_CHECK_ARG(is_complex(in[0].dtype), op.name + ": x must be complex64 or complex128 but is " +
                                              std::string(dtype_name(in[0].dtype)));
  check_normalization(op, attrs);
  std::vector<int64_t> axes = fft_axes(op, attrs, in[0].shape);
  const auto last = static_cast<size_t>(axes.back());
  int64_t m = in[0].shape[last], n = attrs.get_int("last_dim_size");
  if (n == 0) n = 2 * (m - 1);
  OAR_CHECK_ARG(n > 0 && n / 2 + 1 == m,
                op.name + ": x has shape " + shape_str(in[0].shape) + " and last_dim_size is " + std::to_string(n) +
                    "; the last transformed axis (" + std::to_string(last) + ") must hold last_dim_size / 2 + 1 = " +
                    std::to_string(std::max<int64_t>(n, 0) / 2 + 1) + " bins but holds " + std::to_string(m));
  Shape out = in[0].shape;
  out[last] = n;
  check_lengths(op, out, axes, "the output");
  return {{real_dtype_for(in[0].dtype), out}};
}

std::string swapped(const std::string& norm) {
  return norm == "backward" ? "forward" : norm == "forward" ? "backward" : norm;
}

// A tensor of shape [1, ..., m (at `axis`), ..., 1]: `edge` at bin 0 and (for
// even n) bin n / 2, `interior` elsewhere (Note [FFT normalization and adjoints]).
Tensor bin_weights(int64_t n, int64_t axis, int64_t rank, double edge, double interior, DType dtype,
                   const Device& device) {
  const int64_t m = n / 2 + 1, nyquist = n % 2 == 0 && n > 1 ? 1 : 0, inner = m - 1 - nyquist;
  std::vector<Tensor> parts{full({1}, edge, dtype, device)};
  if (inner > 0) parts.push_back(full({inner}, interior, dtype, device));
  if (nyquist) parts.push_back(full({1}, edge, dtype, device));
  std::vector<int64_t> shape(static_cast<size_t>(rank), 1);
  shape[static_cast<size_t>(axis)] = m;
  return reshape(parts.size() == 1 ? parts[0] : concat(parts, 0), shape);
}

using Grads = std::vector<Tensor>;

Grads c2c_vjp(const VjpContext& c) {
  return {fft_c2c(c.grads[0], c.attrs.get_ints("axes"), swapped(c.attrs.get_string("normalization")),
                  !c.attrs.get_bool("forward"))};
}

Grads r2c_vjp(const VjpContext& c) {
  const Tensor& x = c.inputs[0];
  std::vector<int64_t> axes = c.attrs.get_ints("axes");
  const std::string norm = swapped(c.attrs.get_string("normalization"));
  if (!c.attrs.get_bool("onesided")) return {cast(fft_c2c(c.grads[0], axes, norm, false), x.dtype())};
  const int64_t last = axes.back(), n = x.shape()[static_cast<size_t>(last)];
  Tensor w = bin_weights(n, last, x.dim(), 1.0, 0.5, x.dtype(), x.device());
  return {fft_c2r(c.grads[0] * w, axes, norm, n)};
}

Grads c2r_vjp(const VjpContext& c) {
  const Tensor& y = c.outputs[0];
  std::vector<int64_t> axes = c.attrs.get_ints("axes");
  const int64_t last = axes.back(), n = y.shape()[static_cast<size_t>(last)];
  Tensor w = bin_weights(n, last, y.dim(), 1.0, 2.0, y.dtype(), y.device());
  return {fft_r2c(c.grads[0], axes, swapped(c.attrs.get_string("normalization")), true) * w};
}

// The cpu device's FFT kernels come from a separate plugin: say so when it
// is not loaded, rather than the generic "no kernel" sentence.
void require_fft_kernels(const OpDef& op, const Tensor& x) {
  if (x.is_symbolic() || &current_builder() != &EagerBuilder::instance()) return;
  const DeviceBackend* backend = Runtime::global().state().find(x.device().type);
  if (!backend || backend->has_kernel(op.id)) return;
  // "has no kernel" as in every missing-kernel error (conformance counts it
  // as missing, not failed), then which plugin provides it.
  std::string head = op.name + ": device type '" + x.device().type + "' has no kernel for it";
  if (x.device().type == "cpu") {
    throw Error(ErrorCode::unsupported,
                head + ": the cpu's FFT kernels come from the plugin liboar_fftw.so (plugins/fftw, built when "
                       "FFTW3 is installed, e.g. Debian libfftw3-dev), which is not loaded");
  }
  throw Error(ErrorCode::unsupported,
              head + " (the mock has the reference DFT; the cpu gets FFT kernels from liboar_fftw.so)");
}

std::vector<int64_t> normalized(const char* op, std::vector<int64_t> axes, int64_t rank) {
  for (int64_t& a : axes) a = meta::normalize_axis(op, a, rank);
  return axes;
}

Tensor run(const OpDef& op, const Tensor& x, Attrs attrs) {
  require_fft_kernels(op, x);
  std::array<Tensor, 1> in{x};
  return apply1(op, in, attrs);
}

}  // namespace

OAR_REGISTER_OPS(fft) {
  const AttrSpec axes = attr("axes", AttrKind::ints, "the transformed dims, distinct; r2c/c2r halve the last one");
  const AttrSpec norm = attr("normalization", std::string("backward"),
                             "which direction is scaled: \"backward\" (the inverse, by 1/N), \"ortho\" "
                             "(both, by 1/sqrt(N)) or \"forward\"");
  add_op({.name = "fft_c2c", .meta = c2c_meta, .vjp = c2c_vjp,
          .attrs = {axes, norm, attr("forward", true, "sign -1 (true) or +1 (the inverse)")},
          .dtypes = {.accepts = kComplexDTypes},
          .doc = "y[k] = scale * sum_j x[j] e^(-+2 pi i j.k / n) over axes (complex -> complex)"});
  add_op({.name = "fft_r2c", .meta = r2c_meta, .vjp = r2c_vjp,
          .attrs = {axes, norm, attr("onesided", true, "keep n/2 + 1 bins of the last axis")},
          .dtypes = {.accepts = kF32F64DTypes},
          .doc = "forward DFT of real x over axes (f32 -> c64, f64 -> c128)"});
  add_op({.name = "fft_c2r", .meta = c2r_meta, .vjp = c2r_vjp,
          .attrs = {axes, norm, attr("last_dim_size", int64_t{0}, "n of the last axis (0: 2 * (bins - 1))")},
          .dtypes = {.accepts = kComplexDTypes},
          .doc = "inverse of a onesided r2c: inverse c2c over axes but the last, then Hermitian c2r (numpy irfftn)"});
}

Tensor fft_c2c(const Tensor& x, const std::vector<int64_t>& axes, const std::string& normalization, bool forward) {
  Tensor z = is_complex(x.dtype()) ? x : cast(x, complex_dtype_for(x.dtype()));
  return run(OAR_OP("fft_c2c"), z,
             Attrs{{"axes", normalized("fft_c2c", axes, x.dim())}, {"normalization", normalization}, {"forward", forward}});
}

Tensor fft_r2c(const Tensor& x, const std::vector<int64_t>& axes, const std::string& normalization, bool onesided) {
  OAR_CHECK_ARG(!is_complex(x.dtype()), "fft_r2c: x must be real but is " + std::string(dtype_name(x.dtype())));
  Tensor r = x.dtype() == DType::f64 || x.dtype() == DType::f32 ? x : cast(x, DType::f32);
  return run(OAR_OP("fft_r2c"), r,
             Attrs{{"axes", normalized("fft_r2c", axes, x.dim())}, {"normalization", normalization}, {"onesided", onesided}});
}

Tensor fft_c2r(const Tensor& x, const std::vector<int64_t>& axes, const std::string& normalization,
               int64_t last_dim_size) {
  Tensor z = is_complex(x.dtype()) ? x : cast(x, complex_dtype_for(x.dtype()));
  return run(OAR_OP("fft_c2r"), z,
             Attrs{{"axes", normalized("fft_c2r", axes, x.dim())}, {"normalization", normalization},
                   {"last_dim_size", last_dim_size}});
}

}  // namespace oar
