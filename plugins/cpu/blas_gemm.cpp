// OpenBLAS GEMM behind the cpu plugin's matmul kernel for f64, c64 and c128,
// and for the f32 problems Note [f32 GEMM on AVX2 machines] (kernels_matmul.cpp)
// sends here; other f32 and bf16 matmuls run on oneDNN.
//
// Note [BLAS threads]: Debian's default libopenblas is the pthread build,
// whose worker threads spin for a while after each call; with OpenMP's own
// spinning threads beside them the two pools fight for the cores (an
// oversubscribed 2-core machine halves both). So the GEMM kernel keeps
// OpenBLAS on one thread (blas_set_threads(1)) and parallelizes itself: an
// OpenMP loop over g_num_threads pieces of the problem, each piece one
// single-threaded cblas_?gemm call on a block of the batch or of M (or N
// when M is small). That is the same split OpenBLAS makes inside one call
// and behaves the same with the OpenMP build of OpenBLAS (which runs
// sequentially inside a parallel region anyway). Small problems (under
// kGemmParallelMin multiply-adds) run on the calling thread.
//
// Operands are handed to BLAS as they are stored when one of their two
// matrix strides is 1 and the other a valid leading dimension (transposes
// and row or column slices included); any other layout (both strides > 1,
// a zero stride from expand) is first copied into a contiguous buffer.
#include "blas_gemm.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <complex>
#include <cstring>
#include <vector>

namespace oar_cpu {

namespace {

std::atomic<int> g_blas_threads{0};  // 0: not set by the plugin yet

/// Multiply-adds below which the GEMM kernel stays on the calling thread.
constexpr int64_t kGemmParallelMin = int64_t{1} << 18;

/// An operand as BLAS sees one matrix of it, plus how to find batch bi.
struct Operand {
  const char* base = nullptr;  // element [0, ..., 0]
  int64_t batch_strides[OAR_MAX_NDIM] = {};  // elements; 0 on broadcast dims
  int64_t rs = 0, cs = 0;  // element strides of op(x)[r, c]
  CBLAS_TRANSPOSE trans = CblasNoTrans;
  int64_t ld = 0;
};

/// Row-major BLAS description of an R x C matrix with element strides
/// (rs, cs); false when neither stride is usable (copy first).
bool blas_layout(int64_t R, int64_t C, int64_t rs, int64_t cs, CBLAS_TRANSPOSE* trans,
                 int64_t* ld) {
  if ((cs == 1 || C == 1) && (R == 1 || rs >= std::max<int64_t>(1, C))) {
    *trans = CblasNoTrans;
    *ld = R == 1 ? std::max<int64_t>(1, C) : rs;
    return true;
  }
  if ((rs == 1 || R == 1) && (C == 1 || cs >= std::max<int64_t>(1, R))) {
    *trans = CblasTrans;  // the stored matrix is op(x)^T, C x R, row-major
    *ld = C == 1 ? std::max<int64_t>(1, R) : cs;
    return true;
  }
  return false;
}

/// Describes op(v) ([R, C] after the optional transpose); copies v into
/// `buf` (contiguous, op applied) when BLAS cannot read it in place.
Operand make_operand(const OarTensorView& v, bool transposed, int64_t R, int64_t C, int64_t esize,
                     std::vector<char>* buf) {
  const int nd = v.ndim;
  Operand o;
  o.base = static_cast<const char*>(oar_view_ptr(&v));
  o.rs = transposed ? v.strides[nd - 1] : v.strides[nd - 2];
  o.cs = transposed ? v.strides[nd - 2] : v.strides[nd - 1];
  for (int d = 0; d < nd - 2; ++d) o.batch_strides[d] = v.shape[d] == 1 ? 0 : v.strides[d];
  if (blas_layout(R, C, o.rs, o.cs, &o.trans, &o.ld)) return o;
  // Copy every matrix of v (its own batch count) into [R, C] row-major.
  int64_t batches = 1;
  for (int d = 0; d < nd - 2; ++d) batches *= v.shape[d];
  buf->resize(static_cast<size_t>(batches * R * C * esize));
  char* dst = buf->data();
  for (int64_t bi = 0; bi < batches; ++bi) {
    int64_t off = 0, rest = bi;
    for (int d = nd - 3; d >= 0; --d) {
      off += (rest % v.shape[d]) * v.strides[d];
      rest /= v.shape[d];
    }
    for (int64_t r = 0; r < R; ++r) {
      for (int64_t c = 0; c < C; ++c, dst += esize) {
        std::memcpy(dst, o.base + (off + r * o.rs + c * o.cs) * esize, static_cast<size_t>(esize));
      }
    }
  }
  o.base = buf->data();
  int64_t stride = R * C;
  for (int d = nd - 3; d >= 0; --d) {
    o.batch_strides[d] = v.shape[d] == 1 ? 0 : stride;
    stride *= v.shape[d];
  }
  o.rs = C;
  o.cs = 1;
  o.trans = CblasNoTrans;
  o.ld = std::max<int64_t>(1, C);
  return o;
}

/// Element offset of y's batch bi (row-major over y's batch dims) in o.
int64_t batch_offset(const Operand& o, const OarTensorView& y, int64_t bi) {
  int64_t off = 0;
  for (int d = y.ndim - 3; d >= 0; --d) {
    off += (bi % y.shape[d]) * o.batch_strides[d];
    bi /= y.shape[d];
  }
  return off;
}

/// One single-threaded GEMM of rows [m0, m1) and columns [n0, n1) of y.
void gemm_block(int32_t dtype, const Operand& a, const Operand& b, char* y, int64_t esize,
                int64_t a_off, int64_t b_off, int64_t y_off, int64_t m0, int64_t m1, int64_t n0,
                int64_t n1, int64_t N, int64_t K) {
  const char* pa = a.base + (a_off + m0 * a.rs) * esize;
  const char* pb = b.base + (b_off + n0 * b.cs) * esize;
  char* py = y + (y_off + m0 * N + n0) * esize;
  const auto M = static_cast<int>(m1 - m0), Nb = static_cast<int>(n1 - n0);
  const auto Kb = static_cast<int>(K);
  const auto lda = static_cast<int>(a.ld), ldb = static_cast<int>(b.ld);
  const auto ldc = static_cast<int>(std::max<int64_t>(1, N));
  switch (dtype) {
    case OAR_DTYPE_F32:
      cblas_sgemm(CblasRowMajor, a.trans, b.trans, M, Nb, Kb, 1.0f,
                  reinterpret_cast<const float*>(pa), lda, reinterpret_cast<const float*>(pb),
                  ldb, 0.0f, reinterpret_cast<float*>(py), ldc);
      break;
    case OAR_DTYPE_F64:
      cblas_dgemm(CblasRowMajor, a.trans, b.trans, M, Nb, Kb, 1.0,
                  reinterpret_cast<const double*>(pa), lda, reinterpret_cast<const double*>(pb),
                  ldb, 0.0, reinterpret_cast<double*>(py), ldc);
      break;
#if OAR_ABI_VERSION_MINOR >= 3
    case OAR_DTYPE_C64: {
      const std::complex<float> one(1.0f, 0.0f), zero(0.0f, 0.0f);
      cblas_cgemm(CblasRowMajor, a.trans, b.trans, M, Nb, Kb, &one, pa, lda, pb, ldb, &zero, py,
                  ldc);
      break;
    }
    case OAR_DTYPE_C128: {
      const std::complex<double> one(1.0, 0.0), zero(0.0, 0.0);
      cblas_zgemm(CblasRowMajor, a.trans, b.trans, M, Nb, Kb, &one, pa, lda, pb, ldb, &zero, py,
                  ldc);
      break;
    }
#endif
    default:
      break;
  }
}

}  // namespace

SgemmBackend g_sgemm_backend = SgemmBackend::automatic;

void blas_set_threads(int n) {
  if (g_blas_threads.exchange(n) != n) openblas_set_num_threads(n);
}

bool blas_matmul_dtype(int32_t dtype) {
#if OAR_ABI_VERSION_MINOR >= 3
  if (dtype == OAR_DTYPE_C64 || dtype == OAR_DTYPE_C128) return true;
#endif
  return dtype == OAR_DTYPE_F64;
}

OarStatus blas_matmul(const OarKernelContext* ctx, const OarTensorView& a, const OarTensorView& b,
                      const OarTensorView& y, const GemmProblem& p) {
  const int64_t esize = oar_dtype_size(y.dtype);
  std::vector<char> a_buf, b_buf;
  const Operand oa = make_operand(a, p.ta, p.M, p.K, esize, &a_buf);
  const Operand ob = make_operand(b, p.tb, p.K, p.N, esize, &b_buf);
  for (int64_t v : {p.M, p.N, p.K, oa.ld, ob.ld}) {
    if (v > INT_MAX) {
      return fail(ctx, OAR_ERROR_INVALID_ARGUMENT,
                  "a matrix dim or leading dimension of %lld exceeds BLAS's 32-bit int",
                  static_cast<long long>(v));
    }
  }
  blas_set_threads(1);  // Note [BLAS threads]
  const int64_t batches = oar_view_numel(&y) / (p.M * p.N);
  char* py = static_cast<char*>(oar_view_ptr(&y));
  const double work = static_cast<double>(batches) * p.M * p.N * p.K;
  const int threads = work < static_cast<double>(kGemmParallelMin) ? 1 : current_threads();
  // Pieces: whole batches when there are enough of them, else each batch
  // split along M (or along N when N is the longer side).
  const int64_t per_batch = batches >= threads ? 1 : (threads + batches - 1) / batches;
  const bool split_n = p.N > p.M;
  const int64_t extent = split_n ? p.N : p.M;
  const int64_t parts = std::min<int64_t>(per_batch, extent);
  const int64_t pieces = batches * parts;
  auto run_piece = [&](int64_t piece) {
    const int64_t bi = piece / parts, part = piece % parts;
    const int64_t lo = extent * part / parts, hi = extent * (part + 1) / parts;
    const int64_t m0 = split_n ? 0 : lo, m1 = split_n ? p.M : hi;
    const int64_t n0 = split_n ? lo : 0, n1 = split_n ? hi : p.N;
    gemm_block(y.dtype, oa, ob, py, esize, batch_offset(oa, y, bi), batch_offset(ob, y, bi),
               bi * p.M * p.N, m0, m1, n0, n1, p.N, p.K);
  };
  if (threads <= 1 || pieces <= 1) {
    for (int64_t piece = 0; piece < pieces; ++piece) run_piece(piece);
  } else {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t piece = 0; piece < pieces; ++piece) run_piece(piece);
  }
  return OAR_OK;
}

}  // namespace oar_cpu
