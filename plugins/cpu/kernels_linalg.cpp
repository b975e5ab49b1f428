// Dense linear algebra from LAPACK (LAPACKE over OpenBLAS): inv, solve,
// det, slogdet, cholesky, qr, svd, eigh, triangular_solve, lstsq, in f32 and
// f64, and eig (real or complex input, complex output), batched over the
// leading dims. The op definitions, shapes and VJPs
// are in core/src/ops/linalg_lapack.cpp.
//
// Note [LAPACK kernels]: every kernel takes contiguous (row-major) views and
// runs one LAPACKE call per matrix of the batch, in LAPACK_ROW_MAJOR layout
// (LAPACKE transposes to column-major internally). A matrix LAPACK reports
// as singular, not positive definite or not converged fails the launch with
// a sentence naming the op, the batch index and what LAPACK found, so no NaN
// is returned where the op is undefined. det and slogdet of a singular
// matrix are defined (0, and sign 0 with logabsdet -inf) and do not fail.
#include <complex>
// LAPACKE's complex element types are std::complex, the layout of c64/c128.
#define lapack_complex_float std::complex<float>
#define lapack_complex_double std::complex<double>
#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "blas_gemm.h"
#include "cpu_common.h"

namespace oar_cpu {
namespace {

// Note [LAPACK threads]: LAPACK's own parallelism is OpenBLAS's: the
// blocked factorizations call its multi-threaded BLAS 3 inside. The GEMM
// kernel keeps OpenBLAS on one thread (Note [BLAS threads] in blas_gemm.cpp),
// which left svd and eigh of a 512 x 512 matrix on one core (2 threads:
// 80 ms against torch's 68). A kernel on matrices of order kLapackThreadsMin
// and more therefore lets OpenBLAS use the plugin's current thread count
// for the call and sets it back to one after it; smaller matrices stay on
// one thread (waking OpenBLAS's workers costs more than they save there).
constexpr int64_t kLapackThreadsMin = 128;

class LapackThreads {
 public:
  explicit LapackThreads(const OarKernelContext* ctx) {
    const OarTensorView& x = ctx->inputs[0];
    const int64_t order = x.ndim >= 2 ? std::max(x.shape[x.ndim - 2], x.shape[x.ndim - 1]) : 0;
    if (order >= kLapackThreadsMin && current_threads() > 1) raised_ = true, blas_set_threads(current_threads());
  }
  ~LapackThreads() {
    if (raised_) blas_set_threads(1);
  }
  LapackThreads(const LapackThreads&) = delete;
  LapackThreads& operator=(const LapackThreads&) = delete;

 private:
  bool raised_ = false;
};

/// A LAPACK kernel: guarded (no exception crosses the ABI), with OpenBLAS's
/// threads as Note [LAPACK threads] says.
template <OarStatus (*Fn)(const OarKernelContext*)>
OarStatus lapack_kernel(const OarKernelContext* ctx) noexcept {
  LapackThreads threads(ctx);
  return guarded<Fn>(ctx);
}

// ---- the LAPACKE entry points, overloaded on the element type ----
lapack_int getrf(int m, int n, float* a, lapack_int* ipiv) { return LAPACKE_sgetrf(LAPACK_ROW_MAJOR, m, n, a, n, ipiv); }
lapack_int getrf(int m, int n, double* a, lapack_int* ipiv) { return LAPACKE_dgetrf(LAPACK_ROW_MAJOR, m, n, a, n, ipiv); }
lapack_int getri(int n, float* a, const lapack_int* ipiv) { return LAPACKE_sgetri(LAPACK_ROW_MAJOR, n, a, n, ipiv); }
lapack_int getri(int n, double* a, const lapack_int* ipiv) { return LAPACKE_dgetri(LAPACK_ROW_MAJOR, n, a, n, ipiv); }
lapack_int gesv(int n, int k, float* a, lapack_int* ipiv, float* b) {
  return LAPACKE_sgesv(LAPACK_ROW_MAJOR, n, k, a, n, ipiv, b, k);
}
lapack_int gesv(int n, int k, double* a, lapack_int* ipiv, double* b) {
  return LAPACKE_dgesv(LAPACK_ROW_MAJOR, n, k, a, n, ipiv, b, k);
}
lapack_int potrf(char uplo, int n, float* a) { return LAPACKE_spotrf(LAPACK_ROW_MAJOR, uplo, n, a, n); }
lapack_int potrf(char uplo, int n, double* a) { return LAPACKE_dpotrf(LAPACK_ROW_MAJOR, uplo, n, a, n); }
lapack_int geqrf(int m, int n, float* a, int lda, float* tau) {
  return LAPACKE_sgeqrf(LAPACK_ROW_MAJOR, m, n, a, lda, tau);
}
lapack_int geqrf(int m, int n, double* a, int lda, double* tau) {
  return LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, m, n, a, lda, tau);
}
lapack_int orgqr(int m, int n, int k, float* a, int lda, const float* tau) {
  return LAPACKE_sorgqr(LAPACK_ROW_MAJOR, m, n, k, a, lda, tau);
}
lapack_int orgqr(int m, int n, int k, double* a, int lda, const double* tau) {
  return LAPACKE_dorgqr(LAPACK_ROW_MAJOR, m, n, k, a, lda, tau);
}
// gesdd and syevd run in LAPACK's own column-major layout on the row-major
// buffers (Note [Column-major svd and eigh] below): no transposes by LAPACKE.
lapack_int gesdd_cm(char job, int m, int n, float* a, int lda, float* s, float* u, int ldu, float* vt, int ldvt) {
  return LAPACKE_sgesdd(LAPACK_COL_MAJOR, job, m, n, a, lda, s, u, ldu, vt, ldvt);
}
lapack_int gesdd_cm(char job, int m, int n, double* a, int lda, double* s, double* u, int ldu, double* vt, int ldvt) {
  return LAPACKE_dgesdd(LAPACK_COL_MAJOR, job, m, n, a, lda, s, u, ldu, vt, ldvt);
}
lapack_int syevd_cm(char job, char uplo, int n, float* a, float* w) {
  return LAPACKE_ssyevd(LAPACK_COL_MAJOR, job, uplo, n, a, n, w);
}
lapack_int syevd_cm(char job, char uplo, int n, double* a, double* w) {
  return LAPACKE_dsyevd(LAPACK_COL_MAJOR, job, uplo, n, a, n, w);
}
lapack_int trtrs(char uplo, char trans, char diag, int n, int k, const float* a, float* b) {
  return LAPACKE_strtrs(LAPACK_ROW_MAJOR, uplo, trans, diag, n, k, a, n, b, k);
}
lapack_int trtrs(char uplo, char trans, char diag, int n, int k, const double* a, double* b) {
  return LAPACKE_dtrtrs(LAPACK_ROW_MAJOR, uplo, trans, diag, n, k, a, n, b, k);
}
lapack_int gelsd(int m, int n, int k, float* a, float* b, int ldb, float* s, float rcond, lapack_int* rank) {
  return LAPACKE_sgelsd(LAPACK_ROW_MAJOR, m, n, k, a, n, b, ldb, s, rcond, rank);
}
lapack_int gelsd(int m, int n, int k, double* a, double* b, int ldb, double* s, double rcond, lapack_int* rank) {
  return LAPACKE_dgelsd(LAPACK_ROW_MAJOR, m, n, k, a, n, b, ldb, s, rcond, rank);
}

lapack_int geev(int n, float* a, float* wr, float* wi, float* vr) {
  return LAPACKE_sgeev(LAPACK_ROW_MAJOR, 'N', 'V', n, a, n, wr, wi, nullptr, 1, vr, n);
}
lapack_int geev(int n, double* a, double* wr, double* wi, double* vr) {
  return LAPACKE_dgeev(LAPACK_ROW_MAJOR, 'N', 'V', n, a, n, wr, wi, nullptr, 1, vr, n);
}
lapack_int geev(int n, c64_t* a, c64_t* w, c64_t* vr) {
  return LAPACKE_cgeev(LAPACK_ROW_MAJOR, 'N', 'V', n, a, n, w, nullptr, 1, vr, n);
}
lapack_int geev(int n, c128_t* a, c128_t* w, c128_t* vr) {
  return LAPACKE_zgeev(LAPACK_ROW_MAJOR, 'N', 'V', n, a, n, w, nullptr, 1, vr, n);
}

template <class T>
T* ptr(const OarTensorView& v) {
  return static_cast<T*>(oar_view_ptr(&v));
}
int64_t rows(const OarTensorView& v) { return v.shape[v.ndim - 2]; }
int64_t cols(const OarTensorView& v) { return v.shape[v.ndim - 1]; }
/// Matrices in a view of rank >= 2 (the product of the leading dims).
int64_t batch_of(const OarTensorView& v) {
  int64_t b = 1;
  for (int d = 0; d < v.ndim - 2; ++d) b *= v.shape[d];
  return b;
}
/// LAPACK's matrix sizes are 32-bit ints.
bool too_big(const OarKernelContext* ctx, int64_t n) {
  if (n <= std::numeric_limits<int>::max() / 2) return false;
  fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "a matrix dim of %lld is beyond LAPACK's 32-bit sizes",
       static_cast<long long>(n));
  return true;
}
OarStatus lapack_failed(const OarKernelContext* ctx, const char* routine, int64_t batch, lapack_int info) {
  return fail(ctx, OAR_ERROR_INTERNAL, "LAPACK %s failed on the matrix (batch %lld) with info %d", routine,
              static_cast<long long>(batch), static_cast<int>(info));
}
OarStatus singular(const OarKernelContext* ctx, int64_t batch, lapack_int info) {
  return fail(ctx, OAR_ERROR_INVALID_ARGUMENT,
              "the matrix (batch %lld) is singular (U[%d, %d] of its LU factorization is zero)",
              static_cast<long long>(batch), static_cast<int>(info) - 1, static_cast<int>(info) - 1);
}

// Dispatches `body.template operator()<T>()` on f32/f64.
template <class Body>
OarStatus by_dtype(const OarKernelContext* ctx, int32_t dtype, Body&& body) {
  if (dtype == OAR_DTYPE_F32) return body(float{});
  if (dtype == OAR_DTYPE_F64) return body(double{});
  return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "dtype %s is not supported (float32, float64)", dtype_name(dtype));
}

OarStatus inv_kernel(const OarKernelContext* ctx) {
  const OarTensorView &x = ctx->inputs[0], &y = ctx->outputs[0];
  const int64_t n = cols(x), batch = batch_of(x);
  if (too_big(ctx, n)) return OAR_ERROR_INVALID_ARGUMENT;
  return by_dtype(ctx, x.dtype, [&](auto zero) -> OarStatus {
    using T = decltype(zero);
    std::memcpy(ptr<T>(y), ptr<T>(x), static_cast<size_t>(batch * n * n) * sizeof(T));
    std::vector<lapack_int> ipiv(static_cast<size_t>(n));
    for (int64_t b = 0; b < batch && n > 0; ++b) {
      T* a = ptr<T>(y) + b * n * n;
      lapack_int info = getrf(int(n), int(n), a, ipiv.data());
      if (info > 0) return singular(ctx, b, info);
      if (info < 0 || (info = getri(int(n), a, ipiv.data())) != 0) return lapack_failed(ctx, "getri", b, info);
    }
    return OAR_OK;
  });
}

OarStatus solve_kernel(const OarKernelContext* ctx) {
  const OarTensorView &x = ctx->inputs[0], &rhs = ctx->inputs[1], &out = ctx->outputs[0];
  const int64_t n = cols(x), k = cols(rhs), batch = batch_of(x);
  if (too_big(ctx, n) || too_big(ctx, k)) return OAR_ERROR_INVALID_ARGUMENT;
  return by_dtype(ctx, x.dtype, [&](auto zero) -> OarStatus {
    using T = decltype(zero);
    std::vector<T> a(static_cast<size_t>(n * n));
    std::vector<lapack_int> ipiv(static_cast<size_t>(n));
    std::memcpy(ptr<T>(out), ptr<T>(rhs), static_cast<size_t>(batch * n * k) * sizeof(T));
    for (int64_t b = 0; b < batch && n > 0 && k > 0; ++b) {
      std::memcpy(a.data(), ptr<T>(x) + b * n * n, a.size() * sizeof(T));
      lapack_int info = gesv(int(n), int(k), a.data(), ipiv.data(), ptr<T>(out) + b * n * k);
      if (info > 0) return singular(ctx, b, info);
      if (info < 0) return lapack_failed(ctx, "gesv", b, info);
    }
    return OAR_OK;
  });
}

// det (one output) and slogdet (sign, logabsdet) from the LU factorization.
OarStatus det_kernel(const OarKernelContext* ctx) {
  const OarTensorView& x = ctx->inputs[0];
  const int64_t n = cols(x), batch = batch_of(x);
  const bool log_form = ctx->num_outputs == 2;
  if (too_big(ctx, n)) return OAR_ERROR_INVALID_ARGUMENT;
  return by_dtype(ctx, x.dtype, [&](auto zero) -> OarStatus {
    using T = decltype(zero);
    std::vector<T> a(static_cast<size_t>(n * n));
    std::vector<lapack_int> ipiv(static_cast<size_t>(n));
    for (int64_t b = 0; b < batch; ++b) {
      std::memcpy(a.data(), ptr<T>(x) + b * n * n, a.size() * sizeof(T));
      lapack_int info = n == 0 ? 0 : getrf(int(n), int(n), a.data(), ipiv.data());
      if (info < 0) return lapack_failed(ctx, "getrf", b, info);
      double sign = 1, logabs = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double u = static_cast<double>(a[static_cast<size_t>(i * n + i)]);
        if (ipiv[static_cast<size_t>(i)] != i + 1) sign = -sign;
        if (u < 0) sign = -sign;
        logabs += std::log(std::fabs(u));  // -inf for a zero pivot
      }
      if (info > 0) sign = 0, logabs = -std::numeric_limits<double>::infinity();
      if (log_form) {
        ptr<T>(ctx->outputs[0])[b] = static_cast<T>(sign);
        ptr<T>(ctx->outputs[1])[b] = static_cast<T>(logabs);
      } else {
        // The product itself, not exp(logabs): exact for small integer matrices.
        double det = info > 0 ? 0.0 : sign;
        for (int64_t i = 0; info == 0 && i < n; ++i) det *= std::fabs(static_cast<double>(a[size_t(i * n + i)]));
        ptr<T>(ctx->outputs[0])[b] = static_cast<T>(det);
      }
    }
    return OAR_OK;
  });
}

OarStatus cholesky_kernel(const OarKernelContext* ctx) {
  const OarTensorView &x = ctx->inputs[0], &y = ctx->outputs[0];
  Attrs attrs(ctx);
  const bool upper = attrs.get_bool("upper", false);
  if (!attrs.ok()) return attrs.status();
  const int64_t n = cols(x), batch = batch_of(x);
  if (too_big(ctx, n)) return OAR_ERROR_INVALID_ARGUMENT;
  return by_dtype(ctx, x.dtype, [&](auto zero) -> OarStatus {
    using T = decltype(zero);
    std::memcpy(ptr<T>(y), ptr<T>(x), static_cast<size_t>(batch * n * n) * sizeof(T));
    for (int64_t b = 0; b < batch && n > 0; ++b) {
      T* a = ptr<T>(y) + b * n * n;
      lapack_int info = potrf(upper ? 'U' : 'L', int(n), a);
      if (info > 0) {
        return fail(ctx, OAR_ERROR_INVALID_ARGUMENT,
                    "the matrix (batch %lld) is not positive definite (the leading minor of order %d is not "
                    "positive)",
                    static_cast<long long>(b), static_cast<int>(info));
      }
      if (info < 0) return lapack_failed(ctx, "potrf", b, info);
      for (int64_t i = 0; i < n; ++i)  // zero the triangle LAPACK leaves as it was
        for (int64_t j = 0; j < n; ++j)
          if (upper ? j < i : j > i) a[i * n + j] = T(0);
    }
    return OAR_OK;
  });
}

// Q [m, mq] and R [mq, n] with mq = min(m, n) ("reduced") or m ("complete").
OarStatus qr_kernel(const OarKernelContext* ctx) {
  const OarTensorView &x = ctx->inputs[0], &q = ctx->outputs[0], &r = ctx->outputs[1];
  const int64_t m = rows(x), n = cols(x), mq = cols(q), k = std::min(m, n), batch = batch_of(x);
  if (too_big(ctx, m) || too_big(ctx, n)) return OAR_ERROR_INVALID_ARGUMENT;
  return by_dtype(ctx, x.dtype, [&](auto zero) -> OarStatus {
    using T = decltype(zero);
    const int64_t w = std::max(n, mq);  // the work matrix [m, w] holds A, then Q
    std::vector<T> a(static_cast<size_t>(m * w)), tau(static_cast<size_t>(std::max<int64_t>(k, 1)));
    for (int64_t b = 0; b < batch; ++b) {
      const T* src = ptr<T>(x) + b * m * n;
      std::fill(a.begin(), a.end(), T(0));
      for (int64_t i = 0; i < m; ++i) std::copy(src + i * n, src + (i + 1) * n, a.begin() + i * w);
      if (k > 0) {
        lapack_int info = geqrf(int(m), int(n), a.data(), int(w), tau.data());
        if (info != 0) return lapack_failed(ctx, "geqrf", b, info);
      }
      T* rb = ptr<T>(r) + b * mq * n;
      for (int64_t i = 0; i < mq; ++i)
        for (int64_t j = 0; j < n; ++j) rb[i * n + j] = j >= i ? a[size_t(i * w + j)] : T(0);
      if (mq > 0) {
        lapack_int info = orgqr(int(m), int(mq), int(k), a.data(), int(w), tau.data());
        if (info != 0) return lapack_failed(ctx, "orgqr", b, info);
      }
      T* qb = ptr<T>(q) + b * m * mq;
      for (int64_t i = 0; i < m; ++i) std::copy(a.begin() + i * w, a.begin() + i * w + mq, qb + i * mq);
    }
    return OAR_OK;
  });
}

// U [m, ku], S [k], VH [kv, n]: ku = kv = min(m, n) (reduced) or m, n (full).
OarStatus svd_kernel(const OarKernelContext* ctx) {
  const OarTensorView &x = ctx->inputs[0], &u = ctx->outputs[0], &s = ctx->outputs[1], &vh = ctx->outputs[2];
  const int64_t m = rows(x), n = cols(x), k = std::min(m, n), ku = cols(u), kv = rows(vh), batch = batch_of(x);
  if (too_big(ctx, m) || too_big(ctx, n)) return OAR_ERROR_INVALID_ARGUMENT;
  const char job = ku == k && kv == k ? 'S' : 'A';
  return by_dtype(ctx, x.dtype, [&](auto zero) -> OarStatus {
    using T = decltype(zero);
    std::vector<T> a(static_cast<size_t>(m * n));
    for (int64_t b = 0; b < batch; ++b) {
      T *ub = ptr<T>(u) + b * m * ku, *sb = ptr<T>(s) + b * k, *vb = ptr<T>(vh) + b * kv * n;
      if (k == 0) {  // an empty matrix: U and VH are identities (full) or empty
        std::fill(ub, ub + m * ku, T(0));
        std::fill(vb, vb + kv * n, T(0));
        for (int64_t i = 0; i < std::min(m, ku); ++i) ub[i * ku + i] = T(1);
        for (int64_t i = 0; i < std::min(n, kv); ++i) vb[i * n + i] = T(1);
        continue;
      }
      std::memcpy(a.data(), ptr<T>(x) + b * m * n, a.size() * sizeof(T));
      // Note [Column-major svd and eigh]: the row-major m x n buffer is the
      // column-major n x m matrix A^T. Its SVD A^T = U' S V'^T gives A's as
      // U = V', Vh = U'^T, and in row-major order Vh's buffer is U' (n x k,
      // leading dim n) and U's buffer is V'^T (k x m, leading dim ku): LAPACK
      // writes both outputs in place. (LAPACKE's row-major interface
      // transposes the input and both outputs, ~5% of a 512 x 512 SVD.)
      lapack_int info = gesdd_cm(job, int(n), int(m), a.data(), int(n), sb, vb, int(n), ub, int(ku));
      if (info > 0) {
        return fail(ctx, OAR_ERROR_INTERNAL, "the SVD of the matrix (batch %lld) did not converge (LAPACK gesdd info %d)",
                    static_cast<long long>(b), static_cast<int>(info));
      }
      if (info < 0) return lapack_failed(ctx, "gesdd", b, info);
    }
    return OAR_OK;
  });
}

/// Transposes the row-major n x n matrix `a` in place (blocks of 32 x 32).
template <class T>
void transpose_square(T* a, int64_t n) {
  constexpr int64_t kBlock = 32;
  for (int64_t i0 = 0; i0 < n; i0 += kBlock)
    for (int64_t j0 = i0; j0 < n; j0 += kBlock)
      for (int64_t i = i0; i < std::min(i0 + kBlock, n); ++i)
        for (int64_t j = std::max(j0, i + 1); j < std::min(j0 + kBlock, n); ++j) std::swap(a[i * n + j], a[j * n + i]);
}

// w [n] ascending and V [n, n] (eigenvectors as columns), from the triangle UPLO.
OarStatus eigh_kernel(const OarKernelContext* ctx) {
  const OarTensorView &x = ctx->inputs[0], &w = ctx->outputs[0], &v = ctx->outputs[1];
  Attrs attrs(ctx);
  const char uplo = attrs.get_string("UPLO", "L")[0] == 'U' ? 'U' : 'L';
  if (!attrs.ok()) return attrs.status();
  const int64_t n = cols(x), batch = batch_of(x);
  if (too_big(ctx, n)) return OAR_ERROR_INVALID_ARGUMENT;
  return by_dtype(ctx, x.dtype, [&](auto zero) -> OarStatus {
    using T = decltype(zero);
    std::memcpy(ptr<T>(v), ptr<T>(x), static_cast<size_t>(batch * n * n) * sizeof(T));
    for (int64_t b = 0; b < batch && n > 0; ++b) {
      // Note [Column-major svd and eigh]: the row-major buffer read column-
      // major is the same symmetric matrix with its triangles swapped; the
      // eigenvectors come back as its rows, so one in-place transpose
      // makes them V's columns.
      T* vb = ptr<T>(v) + b * n * n;
      lapack_int info = syevd_cm('V', uplo == 'L' ? 'U' : 'L', int(n), vb, ptr<T>(w) + b * n);
      if (info == 0) transpose_square(vb, n);
      if (info > 0) {
        return fail(ctx, OAR_ERROR_INTERNAL,
                    "the eigenvalues of the matrix (batch %lld) did not converge (LAPACK syevd info %d)",
                    static_cast<long long>(b), static_cast<int>(info));
      }
      if (info < 0) return lapack_failed(ctx, "syevd", b, info);
    }
    return OAR_OK;
  });
}

// out = op(x)^-1 y for triangular x [n, n], y [n, k].
OarStatus triangular_solve_kernel(const OarKernelContext* ctx) {
  const OarTensorView &x = ctx->inputs[0], &y = ctx->inputs[1], &out = ctx->outputs[0];
  Attrs attrs(ctx);
  const bool upper = attrs.get_bool("upper", true), transpose = attrs.get_bool("transpose", false);
  const bool unit = attrs.get_bool("unitriangular", false);
  if (!attrs.ok()) return attrs.status();
  const int64_t n = cols(x), k = cols(y), batch = batch_of(x);
  if (too_big(ctx, n) || too_big(ctx, k)) return OAR_ERROR_INVALID_ARGUMENT;
  return by_dtype(ctx, x.dtype, [&](auto zero) -> OarStatus {
    using T = decltype(zero);
    std::memcpy(ptr<T>(out), ptr<T>(y), static_cast<size_t>(batch * n * k) * sizeof(T));
    for (int64_t b = 0; b < batch && n > 0 && k > 0; ++b) {
      lapack_int info = trtrs(upper ? 'U' : 'L', transpose ? 'T' : 'N', unit ? 'U' : 'N', int(n), int(k),
                              ptr<T>(x) + b * n * n, ptr<T>(out) + b * n * k);
      if (info > 0) {
        return fail(ctx, OAR_ERROR_INVALID_ARGUMENT,
                    "the triangular matrix (batch %lld) is singular (its diagonal element [%d, %d] is zero)",
                    static_cast<long long>(b), static_cast<int>(info) - 1, static_cast<int>(info) - 1);
      }
      if (info < 0) return lapack_failed(ctx, "trtrs", b, info);
    }
    return OAR_OK;
  });
}

// Least squares by LAPACK gelsd: solution [n, k], rank [] (i64), singular values [min(m, n)].
OarStatus lstsq_kernel(const OarKernelContext* ctx) {
  const OarTensorView &x = ctx->inputs[0], &y = ctx->inputs[1];
  const OarTensorView &sol = ctx->outputs[0], &rank = ctx->outputs[1], &sv = ctx->outputs[2];
  Attrs attrs(ctx);
  const double rcond = attrs.get_float("rcond", -1.0);
  if (!attrs.ok()) return attrs.status();
  const int64_t m = rows(x), n = cols(x), k = cols(y), mn = std::min(m, n), batch = batch_of(x);
  const int64_t ldb = std::max(m, n);
  if (too_big(ctx, m) || too_big(ctx, n) || too_big(ctx, k)) return OAR_ERROR_INVALID_ARGUMENT;
  return by_dtype(ctx, x.dtype, [&](auto zero) -> OarStatus {
    using T = decltype(zero);
    std::vector<T> a(static_cast<size_t>(m * n)), rhs(static_cast<size_t>(ldb * k));
    for (int64_t b = 0; b < batch; ++b) {
      std::memcpy(a.data(), ptr<T>(x) + b * m * n, a.size() * sizeof(T));
      std::fill(rhs.begin(), rhs.end(), T(0));
      std::memcpy(rhs.data(), ptr<T>(y) + b * m * k, static_cast<size_t>(m * k) * sizeof(T));
      lapack_int r = 0;
      if (mn > 0 && k > 0) {
        lapack_int info = gelsd(int(m), int(n), int(k), a.data(), rhs.data(), int(k), ptr<T>(sv) + b * mn,
                                static_cast<T>(rcond), &r);
        if (info > 0) {
          return fail(ctx, OAR_ERROR_INTERNAL,
                      "the SVD of the matrix (batch %lld) did not converge (LAPACK gelsd info %d)",
                      static_cast<long long>(b), static_cast<int>(info));
        }
        if (info < 0) return lapack_failed(ctx, "gelsd", b, info);
      } else {
        std::fill(ptr<T>(sv) + b * mn, ptr<T>(sv) + (b + 1) * mn, T(0));
      }
      std::memcpy(ptr<T>(sol) + b * n * k, rhs.data(), static_cast<size_t>(n * k) * sizeof(T));
      ptr<int64_t>(rank)[b] = r;
    }
    return OAR_OK;
  });
}

OarStatus eig_failed(const OarKernelContext* ctx, int64_t b, lapack_int info) {
  if (info < 0) return lapack_failed(ctx, "geev", b, info);
  return fail(ctx, OAR_ERROR_INTERNAL,
              "the eigenvalues of the matrix (batch %lld) did not converge (LAPACK geev info %d)",
              static_cast<long long>(b), static_cast<int>(info));
}

// Eigenvalues w [n] and unit eigenvectors V [n, n] (columns) of a general
// matrix, complex. A real input's complex pairs come from LAPACK as the real
// and imaginary parts in two adjacent columns (v_j = re + i im, v_j+1 = conj).
OarStatus eig_kernel(const OarKernelContext* ctx) {
  const OarTensorView &x = ctx->inputs[0], &w = ctx->outputs[0], &v = ctx->outputs[1];
  const int64_t n = cols(x), batch = batch_of(x);
  if (too_big(ctx, n)) return OAR_ERROR_INVALID_ARGUMENT;
  auto real_input = [&](auto zero) -> OarStatus {
    using T = decltype(zero);
    using C = std::complex<T>;
    std::vector<T> a(static_cast<size_t>(n * n)), wr(static_cast<size_t>(n)), wi(static_cast<size_t>(n)),
        vr(static_cast<size_t>(n * n));
    for (int64_t b = 0; b < batch && n > 0; ++b) {
      std::memcpy(a.data(), ptr<T>(x) + b * n * n, a.size() * sizeof(T));
      if (lapack_int info = geev(int(n), a.data(), wr.data(), wi.data(), vr.data())) return eig_failed(ctx, b, info);
      C *wb = ptr<C>(w) + b * n, *vb = ptr<C>(v) + b * n * n;
      for (int64_t j = 0; j < n; ++j) wb[j] = C(wr[size_t(j)], wi[size_t(j)]);
      for (int64_t j = 0; j < n; ++j) {
        if (wi[size_t(j)] == T(0) || j + 1 == n) {
          for (int64_t i = 0; i < n; ++i) vb[i * n + j] = C(vr[size_t(i * n + j)], T(0));
          continue;
        }
        for (int64_t i = 0; i < n; ++i) {
          const T re = vr[size_t(i * n + j)], im = vr[size_t(i * n + j + 1)];
          vb[i * n + j] = C(re, im);
          vb[i * n + j + 1] = C(re, -im);
        }
        ++j;
      }
    }
    return OAR_OK;
  };
  auto complex_input = [&](auto zero) -> OarStatus {
    using C = decltype(zero);
    std::vector<C> a(static_cast<size_t>(n * n));
    for (int64_t b = 0; b < batch && n > 0; ++b) {
      std::memcpy(a.data(), ptr<C>(x) + b * n * n, a.size() * sizeof(C));
      if (lapack_int info = geev(int(n), a.data(), ptr<C>(w) + b * n, ptr<C>(v) + b * n * n))
        return eig_failed(ctx, b, info);
    }
    return OAR_OK;
  };
  switch (x.dtype) {
    case OAR_DTYPE_F32: return real_input(float{});
    case OAR_DTYPE_F64: return real_input(double{});
    case OAR_DTYPE_C64: return complex_input(c64_t{});
    case OAR_DTYPE_C128: return complex_input(c128_t{});
    default:
      return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "dtype %s is not supported", dtype_name(x.dtype));
  }
}

}  // namespace

void register_linalg_kernels(op::KernelTable& r) {
  for (int32_t dt : {OAR_DTYPE_F32, OAR_DTYPE_F64}) {
    r.add("inv", {dt}, {dt}, &lapack_kernel<&inv_kernel>);
    r.add("solve", {dt, dt}, {dt}, &lapack_kernel<&solve_kernel>);
    r.add("det", {dt}, {dt}, &lapack_kernel<&det_kernel>);
    r.add("slogdet", {dt}, {dt, dt}, &lapack_kernel<&det_kernel>);
    r.add("cholesky", {dt}, {dt}, &lapack_kernel<&cholesky_kernel>);
    r.add("qr", {dt}, {dt, dt}, &lapack_kernel<&qr_kernel>);
    r.add("svd", {dt}, {dt, dt, dt}, &lapack_kernel<&svd_kernel>);
    r.add("eigh", {dt}, {dt, dt}, &lapack_kernel<&eigh_kernel>);
    r.add("triangular_solve", {dt, dt}, {dt}, &lapack_kernel<&triangular_solve_kernel>);
    r.add("lstsq", {dt, dt}, {dt, OAR_DTYPE_I64, dt}, &lapack_kernel<&lstsq_kernel>);
  }
  r.add("eig", {OAR_DTYPE_F32}, {OAR_DTYPE_C64, OAR_DTYPE_C64}, &lapack_kernel<&eig_kernel>);
  r.add("eig", {OAR_DTYPE_F64}, {OAR_DTYPE_C128, OAR_DTYPE_C128}, &lapack_kernel<&eig_kernel>);
  for (int32_t dt : kComplexDtypes) r.add("eig", {dt}, {dt, dt}, &lapack_kernel<&eig_kernel>);
}

}  // namespace oar_cpu
