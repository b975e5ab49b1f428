// Dense linear algebra (oar.linalg): inv, solve, det, slogdet, cholesky, qr,
// svd, eigh, triangular_solve, lstsq, eig as primitives (LAPACK kernels in
// plugins/cpu/kernels_linalg.cpp), with their meta rules and VJPs; the
// composites (pinv, matrix_power, ...) are written in these ops and
// differentiate through them.
//
// Note [Linalg VJPs]: the rules are the standard matrix-calculus results
// (Giles, "An extended collection of matrix derivative results", 2008;
// the forms follow PyTorch's FunctionsManual.cpp), written in oar ops, so a
// gradient is itself differentiable (second order for inv, solve, det).
// Where the gradient does not exist, the VJP raises an error naming the op
// instead of returning inf or NaN: svd with U or VH used and two singular
// values (nearly) equal, or a zero singular value of a non-square matrix;
// eigh with V used and two eigenvalues (nearly) equal; qr of a wide matrix
// or in mode "complete" with m > n (Q's extra columns are not unique). The
// check reads the values on the host, so it runs in eager mode; a traced
// program carries the formula without it. For eigh and cholesky the input
// is taken as symmetric (only one triangle is read), so the gradient is the
// symmetric one, as Paddle's and PyTorch's.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "oar/autograd.h"
#include "oar/ops.h"
#include "ops/op_util.h"

namespace oar {

namespace {

// ---- helpers in ops ----
/// x with its last two dims swapped.
Tensor mT(const Tensor& x) {
  std::vector<int64_t> perm(static_cast<size_t>(x.dim()));
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return transpose(x, perm);
}
/// Entries with col - row <= k (lower) or >= k (upper) of x's last two dims kept, the rest zero.
Tensor tri(const Tensor& x, int64_t k, bool lower) {
  const int64_t r = x.shape()[x.shape().size() - 2], c = x.shape().back();
  Tensor rows = reshape(arange(0, static_cast<double>(r), 1, DType::i64, x.device()), {-1, 1});
  Tensor d = arange(0, static_cast<double>(c), 1, DType::i64, x.device()) - rows;
  Tensor kk = scalar_like(d, static_cast<double>(k));
  return where(lower ? less_equal(d, kk) : greater_equal(d, kk), x, zeros_like(x));
}
Tensor tril(const Tensor& x, int64_t k = 0) { return tri(x, k, true); }
Tensor triu(const Tensor& x, int64_t k = 0) { return tri(x, k, false); }
/// The n x n identity in x's dtype and device.
Tensor eye_like(int64_t n, const Tensor& x) {
  Tensor rows = reshape(arange(0, static_cast<double>(n), 1, DType::i64, x.device()), {-1, 1});
  return cast(equal(rows, arange(0, static_cast<double>(n), 1, DType::i64, x.device())), x.dtype());
}
/// [*, n] -> [*, n, n] with v on the diagonal.
Tensor diag_embed(const Tensor& v) { return unsqueeze(v, {-1}) * eye_like(v.shape().back(), v); }

// ---- meta rules ----
Shape batch_of(const Shape& s) { return Shape(s.begin(), s.end() - 2); }
Shape with_dims(Shape batch, std::initializer_list<int64_t> dims) {
  batch.insert(batch.end(), dims);
  return batch;
}
void require_matrix(const OpDef& op, const TensorMeta& x, const char* name, bool square) {
  const Shape& s = x.shape;
  if (s.size() < 2 || (square && s[s.size() - 1] != s[s.size() - 2])) {
    throw Error(ErrorCode::invalid_argument, op.name + ": " + name + " must be " +
                                                 (square ? "a square matrix or a batch of them [*, n, n]"
                                                         : "a matrix or a batch of them [*, m, n]") +
                                                 " but has shape " + shape_str(s));
  }
}
void require_linalg_dtype(const OpDef& op, std::span<const TensorMeta> in) {
  meta::require_same_dtype(op, in);
  DType d = in[0].dtype;
  if (d != DType::f32 && d != DType::f64) {
    throw Error(ErrorCode::invalid_argument,
                op.name + ": float32 or float64 is required but x is " + std::string(dtype_name(d)));
  }
}
/// x [*, n, n] and a right-hand side y [*, n, k] with the same batch dims.
void require_system(const OpDef& op, std::span<const TensorMeta> in) {
  require_linalg_dtype(op, in);
  require_matrix(op, in[0], "x", true);
  require_matrix(op, in[1], "y", false);
  const Shape &x = in[0].shape, &y = in[1].shape;
  if (batch_of(x) != batch_of(y) || y[y.size() - 2] != x.back()) {
    throw Error(ErrorCode::invalid_argument, op.name + ": x has shape " + shape_str(x) + " so y must be [*, " +
                                                 std::to_string(x.back()) + ", k] with the batch dims " +
                                                 shape_str(batch_of(x)) + " but has shape " + shape_str(y));
  }
}

std::vector<TensorMeta> square_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs&) {
  require_linalg_dtype(op, in);
  require_matrix(op, in[0], "x", true);
  return {in[0]};
}
std::vector<TensorMeta> det_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs&) {
  require_linalg_dtype(op, in);
  require_matrix(op, in[0], "x", true);
  TensorMeta out{in[0].dtype, batch_of(in[0].shape)};
  if (op.num_outputs == 2) return {out, out};
  return {out};
}
std::vector<TensorMeta> system_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs&) {
  require_system(op, in);
  return {in[1]};
}
std::vector<TensorMeta> qr_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs) {
  require_linalg_dtype(op, in);
  require_matrix(op, in[0], "x", false);
  const std::string& mode = attrs.get_string("mode");
  if (mode != "reduced" && mode != "complete" && mode != "r") {
    throw Error(ErrorCode::invalid_argument,
                "qr: mode must be \"reduced\", \"complete\" or \"r\" but is \"" + mode + "\"");
  }
  const Shape& s = in[0].shape;
  const int64_t m = s[s.size() - 2], n = s.back(), mq = mode == "complete" ? m : std::min(m, n);
  Shape b = batch_of(s);
  return {{in[0].dtype, with_dims(b, {m, mq})}, {in[0].dtype, with_dims(b, {mq, n})}};
}
std::vector<TensorMeta> svd_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs) {
  require_linalg_dtype(op, in);
  require_matrix(op, in[0], "x", false);
  const Shape& s = in[0].shape;
  const int64_t m = s[s.size() - 2], n = s.back(), k = std::min(m, n);
  const bool full = attrs.get_bool("full_matrices");
  Shape b = batch_of(s);
  DType d = in[0].dtype;
  return {{d, with_dims(b, {m, full ? m : k})}, {d, with_dims(b, {k})}, {d, with_dims(b, {full ? n : k, n})}};
}
std::vector<TensorMeta> eigh_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs) {
  require_linalg_dtype(op, in);
  require_matrix(op, in[0], "x", true);
  const std::string& uplo = attrs.get_string("UPLO");
  if (uplo != "L" && uplo != "U") {
    throw Error(ErrorCode::invalid_argument, op.name + ": UPLO must be \"L\" or \"U\" but is \"" + uplo + "\"");
  }
  const Shape& s = in[0].shape;
  return {{in[0].dtype, with_dims(batch_of(s), {s.back()})}, in[0]};
}
std::vector<TensorMeta> lstsq_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs&) {
  require_linalg_dtype(op, in);
  require_matrix(op, in[0], "x", false);
  require_matrix(op, in[1], "y", false);
  const Shape &x = in[0].shape, &y = in[1].shape;
  const int64_t m = x[x.size() - 2], n = x.back();
  if (batch_of(x) != batch_of(y) || y[y.size() - 2] != m) {
    throw Error(ErrorCode::invalid_argument, "lstsq: x has shape " + shape_str(x) + " so y must be [*, " +
                                                 std::to_string(m) + ", k] with the batch dims " +
                                                 shape_str(batch_of(x)) + " but has shape " + shape_str(y));
  }
  Shape b = batch_of(x);
  return {{in[0].dtype, with_dims(b, {n, y.back()})}, {DType::i64, b}, {in[0].dtype, with_dims(b, {std::min(m, n)})}};
}

std::vector<TensorMeta> eig_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs&) {
  meta::require_accepted(op, in, 0);
  require_matrix(op, in[0], "x", true);
  DType c = complex_dtype_for(in[0].dtype);
  const Shape& s = in[0].shape;
  return {{c, with_dims(batch_of(s), {s.back()})}, {c, s}};
}

// ---- the host checks of Note [Linalg VJPs] ----
double epsilon(DType d) {
  return d == DType::f64 ? std::numeric_limits<double>::epsilon() : std::numeric_limits<float>::epsilon();
}
/// Throws when two of the (sorted) values of a batch row of `v` [*, k] are
/// closer than a tolerance relative to the row's largest magnitude, or
/// (zero_too) when one is zero: the gradient named `what` does not exist.
void require_distinct(const char* op, const Tensor& v, bool zero_too, const char* what) {
  if (v.is_symbolic() || v.dim() < 1) return;
  const int64_t k = v.shape().back();
  if (k == 0) return;
  std::vector<double> h = cast(v.detach(), DType::f64).contiguous().to_vector<double>();
  const double tol = 64 * epsilon(v.dtype());
  for (size_t b = 0; b * static_cast<size_t>(k) < h.size(); ++b) {
    const double* row = h.data() + b * static_cast<size_t>(k);
    double scale = 0;
    for (int64_t i = 0; i < k; ++i) scale = std::max(scale, std::fabs(row[i]));
    std::vector<double> sorted(row, row + k);
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < k; ++i) {
      if (zero_too && std::fabs(sorted[static_cast<size_t>(i)]) <= tol * scale) {
        throw Error(ErrorCode::invalid_argument, std::string(op) + ": the gradient " + what +
                                                     " is undefined: the matrix (batch " + std::to_string(b) +
                                                     ") has a zero singular value");
      }
      if (i > 0 && sorted[static_cast<size_t>(i)] - sorted[static_cast<size_t>(i - 1)] <= tol * std::max(scale, 1e-300)) {
        throw Error(ErrorCode::invalid_argument,
                    std::string(op) + ": the gradient " + what + " is undefined: the matrix (batch " +
                        std::to_string(b) + ") has a repeated value " + std::to_string(sorted[static_cast<size_t>(i)]) +
                        " (the values must be distinct)");
      }
    }
  }
}

// ---- VJPs (Note [Linalg VJPs]) ----
using Grads = std::vector<Tensor>;

// Y = X^-1: dX = -Y^T g Y^T.
Grads inv_vjp(const VjpContext& c) {
  Tensor yt = mT(c.outputs[0]);
  return {-matmul(yt, matmul(c.grads[0], yt))};
}
// Z = X^-1 Y: dY = X^-T g, dX = -dY Z^T.
Grads solve_vjp(const VjpContext& c) {
  Tensor gy = solve(mT(c.inputs[0]), c.grads[0]);
  Tensor gx = c.needs[0] ? -matmul(gy, mT(c.outputs[0])) : Tensor();
  return {gx, c.needs[1] ? gy : Tensor()};
}
// d = det X: dX = g d X^-T.
Grads det_vjp(const VjpContext& c) {
  Tensor scale = unsqueeze(unsqueeze(c.grads[0] * c.outputs[0], {-1}), {-1});
  return {scale * mT(inv(c.inputs[0]))};
}
// logabsdet: dX = g X^-T; the sign is piecewise constant.
Grads slogdet_vjp(const VjpContext& c) {
  if (!c.grads[1].defined()) return {Tensor()};
  return {unsqueeze(unsqueeze(c.grads[1], {-1}), {-1}) * mT(inv(c.inputs[0]))};
}
// A = L L^T: dA = L^-T Phi(L^T gL) L^-1, symmetrized, Phi = lower half with the diagonal halved.
Grads cholesky_vjp(const VjpContext& c) {
  const bool upper = c.attrs.get_bool("upper");
  Tensor l = upper ? mT(c.outputs[0]) : c.outputs[0];
  Tensor gl = upper ? mT(c.grads[0]) : c.grads[0];
  Tensor p = tril(matmul(mT(l), gl));
  p = 0.5 * (p + mT(tril(p, -1)));
  // L^-T p, then (that) L^-1 = (L^-T that^T)^T.
  Tensor left = triangular_solve(l, p, /*upper=*/false, /*transpose=*/true);
  return {mT(triangular_solve(l, mT(left), false, true))};
}
// A = QR (m >= n, reduced): dA = [gQ + Q copyltu(M)] R^-T, M = R gR^T - gQ^T Q.
Grads qr_vjp(const VjpContext& c) {
  const Tensor &q = c.outputs[0], &r = c.outputs[1], &gq = c.grads[0], &gr = c.grads[1];
  const Shape& s = c.inputs[0].shape();
  const int64_t m = s[s.size() - 2], n = s.back();
  if (m < n || (c.attrs.get_string("mode") == "complete" && m > n)) {
    throw Error(ErrorCode::unsupported, "qr: the gradient is defined for m >= n in mode \"reduced\" or \"r\" (and "
                                        "m == n in \"complete\") but x has shape " + shape_str(s) + " in mode \"" +
                                        c.attrs.get_string("mode") + "\"");
  }
  Tensor mm;
  if (gr.defined()) mm = matmul(gr, mT(r));
  if (gq.defined()) mm = mm.defined() ? mm - matmul(mT(q), gq) : -matmul(mT(q), gq);
  if (!mm.defined()) return {Tensor()};
  Tensor up = triu(mm);
  Tensor sym = up + mT(up) - diag_embed(diagonal(up, 0, -2, -1));  // X + X^T with the diagonal once
  Tensor b = matmul(q, sym);
  if (gq.defined()) b = b + gq;
  // b R^-T: solve R Y^T = b^T.
  return {mT(triangular_solve(r, mT(b), /*upper=*/true))};
}
// A = U diag(S) VH (Note [Linalg VJPs]); full_matrices narrows U and VH to k.
Grads svd_vjp(const VjpContext& c) {
  const Shape& s = c.inputs[0].shape();
  const int64_t m = s[s.size() - 2], n = s.back(), k = std::min(m, n);
  Tensor u = c.outputs[0], sv = c.outputs[1], vh = c.outputs[2];
  Tensor gu = c.grads[0], gs = c.grads[1], gvh = c.grads[2];
  const int64_t nd = u.dim();
  if (u.shape().back() != k) {
    u = slice(u, {nd - 1}, {0}, {k});
    if (gu.defined()) gu = slice(gu, {nd - 1}, {0}, {k});
  }
  if (vh.shape()[static_cast<size_t>(nd - 2)] != k) {
    vh = slice(vh, {nd - 2}, {0}, {k});
    if (gvh.defined()) gvh = slice(gvh, {nd - 2}, {0}, {k});
  }
  if (!gu.defined() && !gvh.defined()) {
    if (!gs.defined()) return {Tensor()};
    return {matmul(u, unsqueeze(gs, {-1}) * vh)};
  }
  require_distinct("svd", sv, m != n, "through U or VH");
  Tensor v = mT(vh), gv = gvh.defined() ? mT(gvh) : Tensor();
  Tensor s2 = sv * sv;
  Tensor e = unsqueeze(s2, {-2}) - unsqueeze(s2, {-1});  // e[i, j] = s_j^2 - s_i^2
  e = e + eye_like(k, e);                                   // 1 on the diagonal (its numerator is 0)
  Tensor ga;
  if (gu.defined()) {
    Tensor uhgu = matmul(mT(u), gu);
    ga = (uhgu - mT(uhgu)) * unsqueeze(sv, {-2});
  }
  if (gv.defined()) {
    Tensor vhgv = matmul(vh, gv);
    Tensor term = unsqueeze(sv, {-1}) * (vhgv - mT(vhgv));
    ga = ga.defined() ? ga + term : term;
  }
  ga = ga / e;
  if (gs.defined()) ga = ga + diag_embed(gs);
  if (m > k && gu.defined()) {
    Tensor gu_sinv = gu / unsqueeze(sv, {-2});
    ga = matmul(u, ga) + gu_sinv - matmul(u, matmul(mT(u), gu_sinv));
    return {matmul(ga, vh)};
  }
  if (n > k && gv.defined()) {
    Tensor sinv_gvh = mT(gv) / unsqueeze(sv, {-1});
    ga = matmul(ga, vh) + sinv_gvh - matmul(matmul(sinv_gvh, v), vh);
    return {matmul(u, ga)};
  }
  return {matmul(u, matmul(ga, vh))};
}
// A = V diag(w) V^T: dA = V (diag(gw) + skew(V^T gV) / 2 / E) V^T, E[i, j] = w_j - w_i.
Grads eigh_vjp(const VjpContext& c) {
  const Tensor &w = c.outputs[0], &v = c.outputs[1], &gw = c.grads[0], &gv = c.grads[1];
  Tensor ga;
  if (gv.defined()) {
    require_distinct("eigh", w, false, "through the eigenvectors");
    const int64_t n = w.shape().back();
    Tensor vhgv = matmul(mT(v), gv);
    Tensor e = unsqueeze(w, {-2}) - unsqueeze(w, {-1});
    e = e + eye_like(n, e);
    ga = 0.5 * (vhgv - mT(vhgv)) / e;
  }
  if (gw.defined()) ga = ga.defined() ? ga + diag_embed(gw) : diag_embed(gw);
  if (!ga.defined()) return {Tensor()};
  return {matmul(v, matmul(ga, mT(v)))};
}
// Z = op(X)^-1 Y: dY = op(X)^-T g; d op(X) = -dY Z^T, kept on X's triangle.
Grads triangular_solve_vjp(const VjpContext& c) {
  const bool upper = c.attrs.get_bool("upper"), transpose = c.attrs.get_bool("transpose");
  const bool unit = c.attrs.get_bool("unitriangular");
  Tensor gy = triangular_solve(c.inputs[0], c.grads[0], upper, !transpose, unit);
  Tensor gx;
  if (c.needs[0]) {
    Tensor full = transpose ? -matmul(c.outputs[0], mT(gy)) : -matmul(gy, mT(c.outputs[0]));
    gx = upper ? triu(full, unit ? 1 : 0) : tril(full, unit ? -1 : 0);
  }
  return {gx, c.needs[1] ? gy : Tensor()};
}

Tensor one(const OpDef& op, std::initializer_list<Tensor> inputs, Attrs attrs = {}) {
  std::vector<Tensor> in(inputs);
  return apply1(op, in, attrs);
}
std::vector<Tensor> many(const OpDef& op, std::initializer_list<Tensor> inputs, Attrs attrs = {}) {
  std::vector<Tensor> in(inputs);
  return current_builder().apply(op, in, attrs, nullptr);
}
/// x and y with their batch dims broadcast to a common shape (numpy's rule for stacks of matrices).
std::pair<Tensor, Tensor> broadcast_batch(const char* op, const Tensor& x, const Tensor& y) {
  OAR_CHECK_ARG(x.dim() >= 2 && y.dim() >= 2, std::string(op) + ": x and y must have rank >= 2 but have shapes " +
                                                  shape_str(x.shape()) + " and " + shape_str(y.shape()));
  Shape b = meta::broadcast_shapes(op, batch_of(x.shape()), batch_of(y.shape()));
  auto to = [&](const Tensor& t) {
    Shape s = with_dims(b, {t.shape()[t.shape().size() - 2], t.shape().back()});
    return s == t.shape() ? t : broadcast_to(t, s);
  };
  return {to(x), to(y)};
}

}  // namespace

OAR_REGISTER_OPS(linalg_lapack) {
  const DTypeRule floats{.accepts = kF32F64DTypes};
  add_op({.name = "inv", .meta = square_meta, .vjp = inv_vjp, .dtypes = floats,
          .doc = "x [*, n, n] -> x^-1; a singular matrix is an error naming its batch index"});
  add_op({.name = "solve", .num_inputs = 2, .meta = system_meta, .vjp = solve_vjp, .dtypes = floats,
          .doc = "x [*, n, n], y [*, n, k] (same batch dims) -> x^-1 y (LU); singular x is an error"});
  add_op({.name = "det", .meta = det_meta, .vjp = det_vjp, .dtypes = floats,
          .doc = "x [*, n, n] -> det x [*] (LU; 0 for a singular matrix)"});
  add_op({.name = "slogdet", .num_outputs = 2, .meta = det_meta, .vjp = slogdet_vjp, .dtypes = floats,
          .doc = "x [*, n, n] -> sign [*], log|det x| [*]; (0, -inf) for a singular matrix"});
  add_op({.name = "cholesky", .meta = square_meta, .vjp = cholesky_vjp,
          .attrs = {attr("upper", false, "return U with x = U^T U instead of L with x = L L^T")}, .dtypes = floats,
          .doc = "symmetric positive definite x [*, n, n] (one triangle read) -> its Cholesky factor"});
  add_op({.name = "qr", .num_outputs = 2, .meta = qr_meta, .vjp = qr_vjp,
          .attrs = {attr("mode", std::string("reduced"),
                         "\"reduced\" (Q [m, k], R [k, n], k = min(m, n)), \"complete\" (Q [m, m], R [m, n]) or "
                         "\"r\" (as reduced; the Python API returns R only)")},
          .dtypes = floats, .doc = "x [*, m, n] -> Q, R with x = Q R, Q orthonormal columns, R upper triangular"});
  add_op({.name = "svd", .num_outputs = 3, .meta = svd_meta, .vjp = svd_vjp,
          .attrs = {attr("full_matrices", false, "U [m, m] and VH [n, n] instead of [m, k] and [k, n]")},
          .dtypes = floats, .doc = "x [*, m, n] -> U, S [*, k] (descending), VH with x = U diag(S) VH (gesdd)"});
  add_op({.name = "eigh", .num_outputs = 2, .meta = eigh_meta, .vjp = eigh_vjp,
          .attrs = {attr("UPLO", std::string("L"), "the triangle of x that is read: \"L\" or \"U\"")},
          .dtypes = floats, .doc = "symmetric x [*, n, n] -> eigenvalues w [*, n] (ascending), eigenvectors V (columns)"});
  add_op({.name = "triangular_solve", .num_inputs = 2, .meta = system_meta, .vjp = triangular_solve_vjp,
          .attrs = {attr("upper", true, "x is upper (else lower) triangular; the other triangle is not read"),
                    attr("transpose", false, "solve x^T out = y"),
                    attr("unitriangular", false, "x's diagonal is taken as ones (not read)")},
          .dtypes = floats, .doc = "triangular x [*, n, n], y [*, n, k] -> x^-1 y; a zero diagonal is an error"});
  add_op({.name = "lstsq", .num_inputs = 2, .num_outputs = 3, .meta = lstsq_meta, .differentiable = false,
          .attrs = {attr("rcond", -1.0, "singular values below rcond * the largest count as zero; < 0: machine eps")},
          .dtypes = floats,
          .doc = "x [*, m, n], y [*, m, k] -> least-squares solution [*, n, k], rank [*] (int64), singular values "
                 "(gelsd); not differentiable (use pinv)"});
  add_op({.name = "eig", .num_outputs = 2, .meta = eig_meta, .differentiable = false,
          .dtypes = {.accepts = kF32F64DTypes | kComplexDTypes},
          .doc = "general x [*, n, n] (real or complex) -> complex eigenvalues w [*, n], unit eigenvectors V "
                 "(columns), as LAPACK geev orders them; not differentiable"});
}

Tensor inv(const Tensor& x) { return one(OAR_OP("inv"), {x}); }
Tensor solve(const Tensor& x, const Tensor& y) {
  auto [a, b] = broadcast_batch("solve", x, y);
  return one(OAR_OP("solve"), {a, b});
}
Tensor det(const Tensor& x) { return one(OAR_OP("det"), {x}); }
std::pair<Tensor, Tensor> slogdet(const Tensor& x) {
  auto out = many(OAR_OP("slogdet"), {x});
  return {out[0], out[1]};
}
Tensor cholesky(const Tensor& x, bool upper) { return one(OAR_OP("cholesky"), {x}, Attrs{{"upper", upper}}); }
std::pair<Tensor, Tensor> qr(const Tensor& x, const std::string& mode) {
  auto out = many(OAR_OP("qr"), {x}, Attrs{{"mode", mode}});
  return {out[0], out[1]};
}
std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& x, bool full_matrices) {
  auto out = many(OAR_OP("svd"), {x}, Attrs{{"full_matrices", full_matrices}});
  return {out[0], out[1], out[2]};
}
std::pair<Tensor, Tensor> eigh(const Tensor& x, const std::string& uplo) {
  auto out = many(OAR_OP("eigh"), {x}, Attrs{{"UPLO", uplo}});
  return {out[0], out[1]};
}
Tensor triangular_solve(const Tensor& x, const Tensor& y, bool upper, bool transpose, bool unitriangular) {
  auto [a, b] = broadcast_batch("triangular_solve", x, y);
  return one(OAR_OP("triangular_solve"), {a, b},
             Attrs{{"upper", upper}, {"transpose", transpose}, {"unitriangular", unitriangular}});
}
std::tuple<Tensor, Tensor, Tensor> lstsq(const Tensor& x, const Tensor& y, double rcond) {
  auto [a, b] = broadcast_batch("lstsq", x, y);
  auto out = many(OAR_OP("lstsq"), {a, b}, Attrs{{"rcond", rcond}});
  return {out[0], out[1], out[2]};
}

std::pair<Tensor, Tensor> eig(const Tensor& x) {
  auto out = many(OAR_OP("eig"), {x});
  return {out[0], out[1]};
}

// ---- composites: differentiable through the primitives above ----
Tensor pinv(const Tensor& x, double rcond, bool hermitian) {
  if (hermitian) {
    auto [w, v] = eigh(x);
    Tensor aw = abs(w);
    Tensor cutoff = max(aw, {-1}, true) * rcond;
    Tensor keep = greater_than(aw, cutoff);
    Tensor winv = where(keep, 1.0 / where(keep, w, ones_like(w)), zeros_like(w));
    return matmul(v * unsqueeze(winv, {-2}), mT(v));
  }
  auto [u, s, vh] = svd(x, false);
  Tensor cutoff = max(s, {-1}, true) * rcond;
  Tensor keep = greater_than(s, cutoff);
  Tensor sinv = where(keep, 1.0 / where(keep, s, ones_like(s)), zeros_like(s));
  return matmul(mT(vh) * unsqueeze(sinv, {-2}), mT(u));
}

Tensor matrix_power(const Tensor& x, int64_t n) {
  OAR_CHECK_ARG(x.dim() >= 2 && x.shape().back() == x.shape()[x.shape().size() - 2],
                "matrix_power: x must be a square matrix or a batch of them [*, n, n] but has shape " +
                    shape_str(x.shape()));
  if (n == 0) return zeros_like(x) + eye_like(x.shape().back(), x);
  Tensor base = n < 0 ? inv(x) : x;
  uint64_t e = static_cast<uint64_t>(n < 0 ? -n : n);
  Tensor result;
  while (e > 0) {  // binary powering: log2(n) squarings
    if (e & 1) result = result.defined() ? matmul(result, base) : base;
    e >>= 1;
    if (e > 0) base = matmul(base, base);
  }
  return result;
}

}  // namespace oar
