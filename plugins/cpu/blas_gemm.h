// OpenBLAS GEMM for the cpu plugin's matmul (f64, c64, c128, some f32) and the
// thread setting every OpenBLAS caller of the plugin shares.
#pragma once

#include <cstdint>

#include "cpu_common.h"

namespace oar_cpu {

/// Sets the number of threads OpenBLAS itself uses (openblas_set_num_threads),
/// calling into OpenBLAS only when the value changes. The GEMM kernel runs
/// OpenBLAS on one thread and splits the work over g_num_threads OpenMP
/// threads itself (Note [BLAS threads] in blas_gemm.cpp); a LAPACK caller
/// that wants OpenBLAS's threads sets g_num_threads before its call.
void blas_set_threads(int n);

/// The problem of one matmul call: y[batch..., M, N] = op(a) @ op(b), where
/// op transposes (without conjugating) the last two dims when ta / tb.
/// All three views have rank nd >= 2; a's and b's batch dims equal y's or
/// are 1 (broadcast); y is contiguous; a and b may have any strides.
struct GemmProblem {
  int nd = 0;
  int64_t M = 0, N = 0, K = 0;
  bool ta = false, tb = false;
};

/// Which library computes f32 matmul (OAR_CPU_SGEMM, read at plugin init):
/// automatic follows Note [f32 GEMM on AVX2 machines] (kernels_matmul.cpp).
enum class SgemmBackend { automatic, onednn, openblas };
extern SgemmBackend g_sgemm_backend;

/// One sentence naming the f32 matmul library choice in effect (logged at
/// info level when the plugin loads).
const char* sgemm_policy();

/// True for the dtypes the matmul kernel always hands blas_matmul (f64, c64,
/// c128); f32 goes there only by Note [f32 GEMM on AVX2 machines].
bool blas_matmul_dtype(int32_t dtype);

/// y = op(a) @ op(b) through cblas_{s,d,c,z}gemm; K > 0 and y non-empty.
/// Returns OAR_OK or fails ctx with a sentence (dims beyond BLAS's int).
OarStatus blas_matmul(const OarKernelContext* ctx, const OarTensorView& a, const OarTensorView& b,
                      const OarTensorView& y, const GemmProblem& p);

}  // namespace oar_cpu
