/// \file ops.h
/// The eager op API (names follow PaddlePaddle). Every function goes through
/// the current Builder (builder.h). Axes may be negative; binary ops
/// broadcast like numpy and promote dtypes (promote_types); a Python-style
/// scalar operand takes the tensor's dtype.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "oar/tensor.h"

namespace oar {

// ---- elementwise unary ----
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor erf(const Tensor& x);
/// e^x - 1, accurate for x near 0.
Tensor expm1(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor logical_not(const Tensor& x);

// ---- elementwise binary (broadcasting) ----
Tensor add(const Tensor& a, const Tensor& b);
Tensor subtract(const Tensor& a, const Tensor& b);
Tensor multiply(const Tensor& a, const Tensor& b);
Tensor divide(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, double exponent);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor equal(const Tensor& a, const Tensor& b);
Tensor not_equal(const Tensor& a, const Tensor& b);
Tensor less_than(const Tensor& a, const Tensor& b);
Tensor less_equal(const Tensor& a, const Tensor& b);
Tensor greater_than(const Tensor& a, const Tensor& b);
Tensor greater_equal(const Tensor& a, const Tensor& b);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
/// cond ? x : y, broadcasting all three.
Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y);
/// A tensor of x's dtype (or `dtype`) and device holding `value`, shape [].
Tensor scalar_like(const Tensor& x, double value);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);

// ---- dtype ----
Tensor cast(const Tensor& x, DType dtype);

// ---- complex (core/src/ops/complex.cpp; gradients: Note [Complex gradients]) ----
/// real + i imag: f32 parts give c64, f64 give c128 (broadcast).
Tensor complex(const Tensor& real_part, const Tensor& imag_part);
/// abs * (cos(angle) + i sin(angle)).
Tensor polar(const Tensor& abs_value, const Tensor& angle_value);
/// The real part (c64 -> f32); a real x is returned as is.
Tensor real(const Tensor& x);
/// The imaginary part; zeros for a real x.
Tensor imag(const Tensor& x);
/// x - iy; a real x is returned as is.
Tensor conj(const Tensor& x);
/// atan2(imag, real); for a real x: pi where x < 0, else 0.
Tensor angle(const Tensor& x);
/// A complex [...] as its real [..., 2] (real, imaginary) pairs.
Tensor as_real(const Tensor& x);
/// Real [..., 2] pairs as complex [...].
Tensor as_complex(const Tensor& x);

// ---- reductions (empty axes = all axes) ----
Tensor sum(const Tensor& x, std::vector<int64_t> axes = {}, bool keepdim = false);
Tensor prod(const Tensor& x, std::vector<int64_t> axes = {}, bool keepdim = false);
Tensor max(const Tensor& x, std::vector<int64_t> axes = {}, bool keepdim = false);
Tensor min(const Tensor& x, std::vector<int64_t> axes = {}, bool keepdim = false);
/// Index of the first maximum along `axis`; no axis: over the flattened tensor.
Tensor argmax(const Tensor& x, std::optional<int64_t> axis = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int64_t> axis = std::nullopt, bool keepdim = false);
Tensor mean(const Tensor& x, std::vector<int64_t> axes = {}, bool keepdim = false);
/// Variance; unbiased divides by N - 1 (Paddle's default).
Tensor var(const Tensor& x, std::vector<int64_t> axes = {}, bool unbiased = true,
           bool keepdim = false);

// ---- linear algebra ----
/// Batched matmul with numpy semantics for 1-D operands and broadcast batch dims.
Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a = false, bool transpose_b = false);

// ---- linear algebra from LAPACK (oar.linalg; core/src/ops/linalg_lapack.cpp) ----
// Matrices are the last two dims; leading dims are a batch. f32 and f64.
// A matrix where the op is undefined (singular, not positive definite) is an
// error naming the op and its batch index (Note [LAPACK kernels]).
/// x^-1 (paddle.linalg.inv, paddle.inverse).
Tensor inv(const Tensor& x);
/// x^-1 y for x [*, n, n], y [*, n, k]; batch dims broadcast.
Tensor solve(const Tensor& x, const Tensor& y);
/// The determinant [*] (0 for a singular matrix).
Tensor det(const Tensor& x);
/// (sign, log|det|) [*] each; (0, -inf) for a singular matrix.
std::pair<Tensor, Tensor> slogdet(const Tensor& x);
/// L with x = L L^T, or U with x = U^T U when `upper`; x symmetric positive definite.
Tensor cholesky(const Tensor& x, bool upper = false);
/// (Q, R) with x = Q R; mode "reduced", "complete" or "r" (as reduced).
std::pair<Tensor, Tensor> qr(const Tensor& x, const std::string& mode = "reduced");
/// (U, S, VH) with x = U diag(S) VH, S descending.
std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& x, bool full_matrices = false);
/// (w, V) of a symmetric x: w ascending, V's columns the eigenvectors; `uplo` "L" or "U" is the triangle read.
std::pair<Tensor, Tensor> eigh(const Tensor& x, const std::string& uplo = "L");
/// op(x)^-1 y for a triangular x [*, n, n] (paddle.linalg.triangular_solve); batch dims broadcast.
Tensor triangular_solve(const Tensor& x, const Tensor& y, bool upper = true, bool transpose = false,
                        bool unitriangular = false);
/// Least squares min ||x s - y|| (LAPACK gelsd): (solution [*, n, k], rank [*] int64, singular values);
/// rcond < 0 means machine precision. Not differentiable.
std::tuple<Tensor, Tensor, Tensor> lstsq(const Tensor& x, const Tensor& y, double rcond = -1.0);
/// (w, V) of a general x (real or complex): complex eigenvalues and unit eigenvectors (columns), c64 for
/// f32/c64 input, c128 for f64/c128 (LAPACK geev). Not differentiable.
std::pair<Tensor, Tensor> eig(const Tensor& x);
/// The pseudo-inverse by SVD (or eigh when `hermitian`); singular values <= rcond * the largest count as zero.
Tensor pinv(const Tensor& x, double rcond = 1e-15, bool hermitian = false);
/// x^n by repeated squaring; n < 0 uses inv(x), n = 0 gives the identity.
Tensor matrix_power(const Tensor& x, int64_t n);
// ---- end of linear algebra from LAPACK ----
// ---- FFT (core/src/ops/fft.cpp; Note [FFT normalization and adjoints]) ----
// Kernels: cpu from the plugin liboar_fftw.so (FFTW), mock from its
// reference DFT. `normalization` is "backward" (the inverse is scaled by
// 1/N), "ortho" (both by 1/sqrt(N)) or "forward" (the forward by 1/N), N the
// product of the transformed lengths. Axes may be negative.
/// Complex-to-complex DFT over `axes`: sign -1 when `forward`, +1 otherwise.
/// A real x is first cast to its complex dtype (f64 -> c128, else c64).
Tensor fft_c2c(const Tensor& x, const std::vector<int64_t>& axes, const std::string& normalization = "backward",
               bool forward = true);
/// Forward DFT of real x (f32 -> c64, f64 -> c128; other reals compute in
/// f32) over `axes`; `onesided` keeps the n/2 + 1 bins of the last axis of
/// `axes` (numpy.fft.rfftn), otherwise all n.
Tensor fft_r2c(const Tensor& x, const std::vector<int64_t>& axes, const std::string& normalization = "backward",
               bool onesided = true);
/// Inverse of a onesided fft_r2c (numpy.fft.irfftn): x holds n/2 + 1 bins of
/// the last axis of `axes`, the output n = `last_dim_size` points (0: 2 *
/// (bins - 1)); the imaginary parts of the DC and Nyquist bins are ignored.
Tensor fft_c2r(const Tensor& x, const std::vector<int64_t>& axes, const std::string& normalization = "backward",
               int64_t last_dim_size = 0);

// ---- manipulation ----
/// -1 infers one dim; 0 copies the input's dim (Paddle).
Tensor reshape(const Tensor& x, const std::vector<int64_t>& shape);
Tensor transpose(const Tensor& x, const std::vector<int64_t>& perm);
Tensor broadcast_to(const Tensor& x, const Shape& shape);
/// Slices `axes` from `starts` to `ends` (exclusive) by `steps` (default 1),
/// clamped like Python slices; negative indices count from the end.
Tensor slice(const Tensor& x, const std::vector<int64_t>& axes, const std::vector<int64_t>& starts,
             const std::vector<int64_t>& ends, const std::vector<int64_t>& steps = {});
/// The diagonal of the matrices spanned by axis1 and axis2, `offset` above
/// (> 0) or below (< 0) the main one, as a last dim (numpy.diagonal,
/// paddle.diagonal). A view of x in eager mode.
Tensor diagonal(const Tensor& x, int64_t offset = 0, int64_t axis1 = 0, int64_t axis2 = 1);
Tensor concat(const std::vector<Tensor>& xs, int64_t axis = 0);
/// Constant padding; `pads` holds (before, after) for each dim in order.
Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, double value = 0.0);
/// Selects entries of a 1-D integer `index` along `axis` (paddle.gather).
Tensor gather(const Tensor& x, const Tensor& index, int64_t axis = 0);
/// x with updates added at `index` along `axis` (the adjoint of gather).
Tensor scatter_add(const Tensor& x, const Tensor& index, const Tensor& updates, int64_t axis = 0);
Tensor squeeze(const Tensor& x, std::vector<int64_t> axes = {});
Tensor unsqueeze(const Tensor& x, std::vector<int64_t> axes);
Tensor flatten(const Tensor& x, int64_t start_axis = 0, int64_t stop_axis = -1);

// ---- creation (device: the default device when omitted) ----
Tensor full(const Shape& shape, double value, DType dtype = DType::f32,
            std::optional<Device> device = std::nullopt);
Tensor zeros(const Shape& shape, DType dtype = DType::f32, std::optional<Device> device = std::nullopt);
Tensor ones(const Shape& shape, DType dtype = DType::f32, std::optional<Device> device = std::nullopt);
/// A complex fill: value.imag() goes to the attribute `value_imag` (a real
/// dtype takes the real part, as cast does).
Tensor full(const Shape& shape, std::complex<double> value, DType dtype, std::optional<Device> device = std::nullopt);
/// x's shape filled with `value` (x's dtype, or `dtype`). The shape is read
/// when the op runs, so a traced program keeps x's dynamic dims (Note
/// [Shape from an operand] in core/src/ops/shape_ops.cpp); x's values and
/// gradient are not used.
Tensor full_like(const Tensor& x, double value);
Tensor full_like(const Tensor& x, double value, DType dtype);
Tensor full_like(const Tensor& x, std::complex<double> value, DType dtype);
Tensor zeros_like(const Tensor& x);
Tensor ones_like(const Tensor& x);
/// x broadcast to the shape of `ref` (read when the op runs, like
/// paddle.expand_as).
Tensor broadcast_to_like(const Tensor& x, const Tensor& ref);
/// g summed over the dims broadcasting added to reach g's shape from ref's:
/// the gradient of broadcast_to_like, with ref's shape read when it runs.
Tensor sum_to_like(const Tensor& g, const Tensor& ref);
/// The dims of x as a 1-D i64 tensor, computed when the op runs (paddle.shape).
Tensor shape_of(const Tensor& x);
/// The number of elements of x as a 0-D i64 tensor, computed when it runs.
Tensor numel_of(const Tensor& x);
/// [start, end) by step; dtype i64 by default like paddle.arange with ints.
Tensor arange(double start, double end, double step = 1.0, DType dtype = DType::i64,
              std::optional<Device> device = std::nullopt);

// ---- random (counter-based Philox: depends only on seed, offset, shape) ----
/// Sets the global generator's seed and resets its offset (paddle.seed).
void seed(uint64_t seed);
/// The global generator's (seed, offset): the next draw uses this offset (paddle.get_rng_state).
std::pair<uint64_t, uint64_t> random_state();
/// Restores a state random_state() returned (paddle.set_rng_state).
void set_random_state(uint64_t seed, uint64_t offset);
/// Uniform in [low, high). Explicit seed/offset bypass the global generator.
Tensor uniform(const Shape& shape, double low = 0.0, double high = 1.0, DType dtype = DType::f32,
               std::optional<Device> device = std::nullopt, std::optional<uint64_t> seed = std::nullopt,
               uint64_t offset = 0);
Tensor normal(const Shape& shape, double mean = 0.0, double std = 1.0, DType dtype = DType::f32,
              std::optional<Device> device = std::nullopt, std::optional<uint64_t> seed = std::nullopt,
              uint64_t offset = 0);

// ---- composite ops (decomposed unless the device has a fused kernel) ----
Tensor relu(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor silu(const Tensor& x);
/// approximate = true uses the tanh formula.
Tensor gelu(const Tensor& x, bool approximate = false);
Tensor softmax(const Tensor& x, int64_t axis = -1);
Tensor log_softmax(const Tensor& x, int64_t axis = -1);
/// Normalizes over the dims from `begin_axis` on; weight/bias optional.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double epsilon = 1e-5,
                  int64_t begin_axis = -1);
/// x / sqrt(mean(x^2 over the last dim) + eps) * weight (weight optional).
Tensor rms_norm(const Tensor& x, const Tensor& weight, double epsilon = 1e-6);
/// x @ weight + bias, weight [in, out] (paddle.nn.functional.linear).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

// ---- losses and layers (composite ops) ----
/// Softmax cross entropy of `logits` (paddle.nn.functional.cross_entropy):
/// hard labels are int32/int64 of logits' shape without `axis` (or with it
/// as 1); soft labels (soft_label) are probabilities of logits' shape.
/// reduction: "mean" (over labels != ignore_index), "sum" or "none" (shape
/// of logits without `axis`).
Tensor cross_entropy(const Tensor& logits, const Tensor& label, bool soft_label = false, int64_t axis = -1,
                     const std::string& reduction = "mean", int64_t ignore_index = -100);
/// Mean squared error; reduction "mean", "sum" or "none".
Tensor mse_loss(const Tensor& input, const Tensor& label, const std::string& reduction = "mean");
/// Zeroes elements with probability p and scales the rest by 1/(1-p) in
/// training (Paddle's upscale_in_train); the mask comes from the global
/// Philox generator, so oar::seed makes it reproducible.
Tensor dropout(const Tensor& x, double p = 0.5, bool training = true);
/// Rows of `weight` [num, dim] selected by integer `ids`: ids.shape + [dim].
Tensor embedding(const Tensor& ids, const Tensor& weight);
/// `index` (int32/int64) unchanged, after checking every value lies in
/// [0, size) or equals `ignore_index`: eagerly on the host, and in a traced
/// program by the op check_index when it runs. The error names `op`, the
/// value and its position: "one_hot: class 7 at position [1] of class tensor
/// [3] is out of range; expected 0 <= class < 4 (num_classes)".
Tensor check_index(const Tensor& index, int64_t size, const std::string& op, const std::string& what = "index",
                   const std::string& size_is = "", std::optional<int64_t> ignore_index = std::nullopt);
/// Writes a print op's line (Note [Print and assert ops] in debug_ops.cpp):
/// `format` with one "{}" per tensor, braces doubled, as str.format.
using PrintHook = std::function<void(const std::string& format, std::span<const Tensor> tensors)>;
/// Replaces the print hook (thread-safe); an empty hook restores the
/// default, which writes a plain form to stdout.
void set_print_hook(PrintHook hook);
/// The op print: `format` (one "{}" per tensor) printed with the tensors'
/// values when it runs (eagerly now; in a program, at every run); returns
/// the tensors unchanged.
std::vector<Tensor> print_tensors(std::span<const Tensor> tensors, const std::string& format);
/// The op assert: fails with "assert: <message>" and the values of `data`
/// when the one-element bool `cond` is false; returns cond.
Tensor assert_true(const Tensor& cond, std::span<const Tensor> data, const std::string& message);
/// The positions of x's nonzero elements, row-major: int64 [count, rank]
/// (Note [nonzero] in core/src/ops/index_values.cpp).
Tensor nonzero(const Tensor& x);
/// [0, 1, .., n-1] int64 for n = x.shape()[axis]: an arange whose length is
/// a dim of x (in a trace, x's symbol for that dim).
Tensor positions(const Tensor& x, int64_t axis);
/// Attention over [batch, seq, heads, head_dim] (Paddle's layout):
/// softmax(q k^T / sqrt(head_dim), with a causal mask if asked) v.
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    bool is_causal = false);

// ---- convolution and pooling (NCHW; paddle.nn.functional names) ----
/// 2-D convolution of x [N, C, H, W] with weight [Cout, C / groups, kh, kw];
/// bias [Cout] optional. stride, padding (symmetric, per side) and dilation
/// hold 1 entry (both dims) or 2 (h, w).
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              const std::vector<int64_t>& stride = {1}, const std::vector<int64_t>& padding = {0},
              const std::vector<int64_t>& dilation = {1}, int64_t groups = 1);
/// Max over kernel_size windows of x [N, C, H, W]; stride defaults to
/// kernel_size; padded elements never win.
Tensor max_pool2d(const Tensor& x, const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride = {},
                  const std::vector<int64_t>& padding = {0});
/// Mean over windows; exclusive (Paddle's default) divides by the number of
/// elements inside x, otherwise by the window size.
Tensor avg_pool2d(const Tensor& x, const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride = {},
                  const std::vector<int64_t>& padding = {0}, bool exclusive = true);

}  // namespace oar
