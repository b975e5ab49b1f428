// Batched matmul. f32 (and bf16 where oneDNN implements it) run through
// oneDNN's matmul primitive: transposes are expressed as memory-descriptor
// strides and batch broadcast as batch dims of 1, so nothing is copied.
// Primitives are cached by problem (dtype, dims, strides). f16 and bf16
// without a oneDNN kernel convert to f32 and use the f32 primitive; f64 (and
// c64/c128) call OpenBLAS (blas_gemm.cpp) and integer dtypes use a blocked
// loop (integers accumulate with wraparound).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "blas_gemm.h"
#include "cpu_common.h"
#include "onednn_util.h"

namespace oar_cpu {
namespace {

/// The problem after validation: y[batch..., M, N] = op(a) @ op(b).
struct MatmulShape {
  int nd = 0;
  int64_t M = 0, N = 0, K = 0;
  bool ta = false, tb = false;
};

/// oneDNN dims/strides of an operand seen as [batch..., rows, cols] where the
/// stored matrix is transposed when `transposed`.
dnnl::memory::desc operand_md(const OarTensorView& v, bool transposed, dnnl::memory::data_type dt) {
  dnnl::memory::dims dims(v.shape, v.shape + v.ndim);
  dnnl::memory::dims strides(v.strides, v.strides + v.ndim);
  if (transposed) {
    std::swap(dims[v.ndim - 2], dims[v.ndim - 1]);
    std::swap(strides[v.ndim - 2], strides[v.ndim - 1]);
  }
  // A dim of size 1 may carry any stride; give it the span of the dims inside
  // it, as a plain layout would, so oneDNN sees a canonical descriptor.
  for (int d = v.ndim - 1; d >= 0; --d) {
    if (dims[d] != 1) continue;
    int64_t span = 1;
    for (int e = d + 1; e < v.ndim; ++e) span = std::max<int64_t>(span, strides[e] * dims[e]);
    strides[d] = span;
  }
  return dnnl::memory::desc(dims, dt, strides);
}

struct CachedPrimitive {
  std::unique_ptr<dnnl::matmul> primitive;  // null: oneDNN has no kernel for it
};

std::mutex g_cache_mutex;
std::unordered_map<std::string, CachedPrimitive>& primitive_cache() {
  static auto* cache =
      new std::unordered_map<std::string, CachedPrimitive>();  // lives with the process
  return *cache;
}

void append_md_key(std::string* key, const dnnl::memory::desc& md) {
  char buf[48];
  for (auto d : md.dims()) {
    std::snprintf(buf, sizeof buf, "%lld,", static_cast<long long>(d));
    *key += buf;
  }
  const auto& blk = md.data.format_desc.blocking;
  for (int d = 0; d < md.data.ndims; ++d) {
    std::snprintf(buf, sizeof buf, "s%lld,", static_cast<long long>(blk.strides[d]));
    *key += buf;
  }
  *key += '|';
}

/// Cached primitive for the problem, or nullptr when oneDNN has none.
dnnl::matmul* get_primitive(const dnnl::memory::desc& a, const dnnl::memory::desc& b,
                            const dnnl::memory::desc& y, dnnl::memory::data_type dt) {
  std::string key = std::to_string(static_cast<int>(dt)) + ":";
  append_md_key(&key, a);
  append_md_key(&key, b);
  append_md_key(&key, y);
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  auto& cache = primitive_cache();
  auto it = cache.find(key);
  if (it != cache.end()) return it->second.primitive.get();
  CachedPrimitive entry;
  try {
    dnnl::matmul::desc desc(a, b, y);
    dnnl::matmul::primitive_desc pd(desc, onednn_attr(), onednn_engine());
    entry.primitive = std::make_unique<dnnl::matmul>(pd);
  } catch (const dnnl::error&) {
    entry.primitive = nullptr;  // unimplemented on this machine: remembered
  }
  return cache.emplace(std::move(key), std::move(entry)).first->second.primitive.get();
}

/// Runs y = a @ b through oneDNN; false when oneDNN has no kernel.
bool run_onednn(const OarTensorView& a, const OarTensorView& b, const OarTensorView& y,
                const MatmulShape& s, dnnl::memory::data_type dt) {
  const auto a_md = operand_md(a, s.ta, dt);
  const auto b_md = operand_md(b, s.tb, dt);
  const auto y_md = operand_md(y, false, dt);
  dnnl::matmul* prim = get_primitive(a_md, b_md, y_md, dt);
  if (prim == nullptr) return false;
  dnnl::memory a_mem(a_md, onednn_engine(), oar_view_ptr(&a));
  dnnl::memory b_mem(b_md, onednn_engine(), oar_view_ptr(&b));
  dnnl::memory y_mem(y_md, onednn_engine(), oar_view_ptr(&y));
  // Note [Scratchpads]: the calling thread's own scratchpad.
  execute_primitive(*prim, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, y_mem}});
  onednn_stream().wait();
  return true;
}

// Note [f32 GEMM on AVX2 machines]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// On a CPU without AVX-512, oneDNN 2.6 runs f32 matmul through its AVX2
// sgemm (gemm:jit), which is about twice as slow as it should be when the
// right operand is stored untransposed with rows a multiple of 512 floats
// (2 KiB) apart -- nn.Linear's [in, out] weights of width 512, 1024, 2048
// or 3072: the rows alias in the caches while the kernel packs them. On a
// 2-core Zen 3 (2026-12-07, 1 thread): [64, 784] @ [784, 1024] 2.30 ms
// through oneDNN, 1.29 ms through OpenBLAS's sgemm, 1.22 ms through oneDNN
// with the same weight stored transposed; [256, 1024] @ [1024, 1024] 11.9
// vs 6.2 ms; [128, 1024] @ [1024, 1024] 7.3 vs 3.2 ms; with N = 1000 oneDNN
// is the faster one (1.09 vs 1.25 ms). Past M = 512 rows the packing is
// amortized and oneDNN is as fast or faster (768 x 1024 x 1024: 20.9 vs
// 22.2 ms), and on small problems OpenBLAS's fixed cost loses. So those
// problems -- no AVX-512, b untransposed with a row stride that is a
// multiple of 512, M <= 512, at least 2^20 multiply-adds -- go to OpenBLAS
// (blas_gemm.cpp, the same threading as f64). AVX-512 machines keep oneDNN
// everywhere (not measured there: no such machine today). The choice
// depends on the shape and the machine only, never on timing, so a
// program's results are reproducible run to run. OAR_CPU_SGEMM=onednn or
// =openblas forces one library for every f32 matmul (benchmarks, tests).
bool onednn_has_avx512() {
  static const bool avx512 = [] {
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    return (isa & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core;
  }();
  return avx512;
}

bool f32_on_openblas(const OarTensorView& b, const OarTensorView& y, const MatmulShape& s) {
  if (g_sgemm_backend != SgemmBackend::automatic) return g_sgemm_backend == SgemmBackend::openblas;
  if (onednn_has_avx512() || s.tb || s.M > 512) return false;
  const int64_t row_stride = b.strides[b.ndim - 2];
  const double work = static_cast<double>(oar_view_numel(&y)) * static_cast<double>(s.K);
  return b.strides[b.ndim - 1] == 1 && row_stride >= 512 && row_stride % 512 == 0 && work >= double(1 << 20);
}

/// A contiguous float copy of a f16/bf16 view (same shape).
template <class T>
std::vector<float> to_float(const OarTensorView& v, OarTensorView* fv) {
  const int64_t n = oar_view_numel(&v);
  std::vector<float> buf(static_cast<size_t>(n));
  const T* src = static_cast<const T*>(oar_view_ptr(&v));
  float* dst = buf.data();
#pragma omp parallel for num_threads(current_threads()) schedule(static) if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) dst[i] = Num<T>::load(src[i]);
  *fv = v;
  fv->data = buf.data();
  fv->byte_offset = 0;
  fv->dtype = OAR_DTYPE_F32;
  set_contiguous_strides(fv);
  return buf;
}

/// f16/bf16 through the f32 primitive.
template <class T>
void matmul_via_f32(const OarTensorView& a, const OarTensorView& b, const OarTensorView& y,
                    const MatmulShape& s) {
  OarTensorView fa, fb, fy;
  std::vector<float> a_buf = to_float<T>(a, &fa);
  std::vector<float> b_buf = to_float<T>(b, &fb);
  const int64_t n = oar_view_numel(&y);
  std::vector<float> y_buf(static_cast<size_t>(n));
  fy = y;
  fy.data = y_buf.data();
  fy.byte_offset = 0;
  fy.dtype = OAR_DTYPE_F32;
  set_contiguous_strides(&fy);
  if (!run_onednn(fa, fb, fy, s, dnnl::memory::data_type::f32)) {
    throw std::runtime_error("oneDNN has no f32 matmul for this problem");
  }
  T* out = static_cast<T*>(oar_view_ptr(&y));
  const float* src = y_buf.data();
#pragma omp parallel for num_threads(current_threads()) schedule(static) if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) out[i] = cast_to<T>(src[i]);
}

/// Element offset of batch `bi` (row-major over y's batch dims) in `v`,
/// broadcasting v's batch dims of size 1.
int64_t batch_offset(const OarTensorView& v, const OarTensorView& y, int64_t bi) {
  int64_t off = 0;
  for (int d = y.ndim - 3; d >= 0; --d) {
    const int64_t i = bi % y.shape[d];
    bi /= y.shape[d];
    if (v.shape[d] != 1) off += i * v.strides[d];
  }
  return off;
}

/// Blocked loop for integer dtypes: rows of y accumulate k-slices.
template <class T>
void matmul_loop(const OarTensorView& a, const OarTensorView& b, const OarTensorView& y,
                 const MatmulShape& s) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;
  const T* pa = static_cast<const T*>(oar_view_ptr(&a));
  const T* pb = static_cast<const T*>(oar_view_ptr(&b));
  T* py = static_cast<T*>(oar_view_ptr(&y));
  const int nd = s.nd;
  // Element strides of op(a)[m, k] and op(b)[k, n].
  const int64_t am = s.ta ? a.strides[nd - 1] : a.strides[nd - 2];
  const int64_t ak = s.ta ? a.strides[nd - 2] : a.strides[nd - 1];
  const int64_t bk = s.tb ? b.strides[nd - 1] : b.strides[nd - 2];
  const int64_t bn = s.tb ? b.strides[nd - 2] : b.strides[nd - 1];
  const int64_t batches = oar_view_numel(&y) / (s.M * s.N);
  const int64_t rows = batches * s.M;
  const int64_t N = s.N, K = s.K;
  const bool parallel = rows * N * K >= kParallelMin;
#pragma omp parallel num_threads(current_threads()) if (parallel)
  {
    std::vector<Acc> acc(static_cast<size_t>(N));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t bi = r / s.M, m = r % s.M;
      const T* arow = pa + batch_offset(a, y, bi) + m * am;
      const T* bmat = pb + batch_offset(b, y, bi);
      std::fill(acc.begin(), acc.end(), Acc(0));
      for (int64_t k = 0; k < K; ++k) {
        const Acc av = static_cast<Acc>(arow[k * ak]);
        const T* brow = bmat + k * bk;
        Acc* ac = acc.data();
        if (bn == 1) {
          for (int64_t n = 0; n < N; ++n) ac[n] += av * static_cast<Acc>(brow[n]);
        } else {
          for (int64_t n = 0; n < N; ++n) ac[n] += av * static_cast<Acc>(brow[n * bn]);
        }
      }
      T* yrow = py + r * N;
      for (int64_t n = 0; n < N; ++n) yrow[n] = static_cast<T>(acc[static_cast<size_t>(n)]);
    }
  }
}

OarStatus matmul_kernel(const OarKernelContext* ctx) {
  if (ctx->num_inputs != 2 || ctx->num_outputs != 1) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "expected 2 inputs and 1 output");
  }
  const OarTensorView& a = ctx->inputs[0];
  const OarTensorView& b = ctx->inputs[1];
  const OarTensorView& y = ctx->outputs[0];
  Attrs attrs(ctx);
  MatmulShape s;
  s.ta = attrs.get_bool("transpose_a", false);
  s.tb = attrs.get_bool("transpose_b", false);
  if (!attrs.ok()) return attrs.status();
  s.nd = y.ndim;
  const int nd = s.nd;
  if (nd < 2 || a.ndim != nd || b.ndim != nd || a.dtype != y.dtype || b.dtype != y.dtype) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT,
                "ranks (%d, %d) -> %d and dtypes (%s, %s) -> %s do not fit", a.ndim, b.ndim, y.ndim,
                dtype_name(a.dtype), dtype_name(b.dtype), dtype_name(y.dtype));
  }
  s.M = y.shape[nd - 2];
  s.N = y.shape[nd - 1];
  s.K = s.ta ? a.shape[nd - 2] : a.shape[nd - 1];
  const int64_t a_m = s.ta ? a.shape[nd - 1] : a.shape[nd - 2];
  const int64_t b_k = s.tb ? b.shape[nd - 1] : b.shape[nd - 2];
  const int64_t b_n = s.tb ? b.shape[nd - 2] : b.shape[nd - 1];
  bool fits = a_m == s.M && b_k == s.K && b_n == s.N;
  for (int d = 0; fits && d < nd - 2; ++d) {
    fits = (a.shape[d] == 1 || a.shape[d] == y.shape[d]) &&
           (b.shape[d] == 1 || b.shape[d] == y.shape[d]);
  }
  if (!fits) {
    return fail(
        ctx, OAR_ERROR_INVALID_ARGUMENT,
        "operands do not fit the output: op(a) is [%lld, %lld], op(b) is [%lld, %lld], y is "
        "[%lld, %lld] (or batch dims differ)",
        static_cast<long long>(a_m), static_cast<long long>(s.K), static_cast<long long>(b_k),
        static_cast<long long>(b_n), static_cast<long long>(s.M), static_cast<long long>(s.N));
  }
  const int64_t n_out = oar_view_numel(&y);
  if (n_out == 0) return OAR_OK;
  if (s.K == 0) {  // empty contraction: zeros
    std::memset(oar_view_ptr(&y), 0, static_cast<size_t>(n_out) * oar_dtype_size(y.dtype));
    return OAR_OK;
  }
  switch (y.dtype) {
    case OAR_DTYPE_F32:
      if (f32_on_openblas(b, y, s)) return blas_matmul(ctx, a, b, y, GemmProblem{s.nd, s.M, s.N, s.K, s.ta, s.tb});
      if (!run_onednn(a, b, y, s, dnnl::memory::data_type::f32)) {
        matmul_loop<float>(a, b, y, s);
      }
      return OAR_OK;
    case OAR_DTYPE_BF16:
      if (!run_onednn(a, b, y, s, dnnl::memory::data_type::bf16))
        matmul_via_f32<bf16_t>(a, b, y, s);
      return OAR_OK;
    case OAR_DTYPE_F16:
      matmul_via_f32<f16_t>(a, b, y, s);
      return OAR_OK;
    case OAR_DTYPE_F64:
      return blas_matmul(ctx, a, b, y, GemmProblem{s.nd, s.M, s.N, s.K, s.ta, s.tb});
    case OAR_DTYPE_I8:
      matmul_loop<int8_t>(a, b, y, s);
      return OAR_OK;
    case OAR_DTYPE_U8:
      matmul_loop<uint8_t>(a, b, y, s);
      return OAR_OK;
    case OAR_DTYPE_I32:
      matmul_loop<int32_t>(a, b, y, s);
      return OAR_OK;
    case OAR_DTYPE_I64:
      matmul_loop<int64_t>(a, b, y, s);
      return OAR_OK;
    default:
      if (blas_matmul_dtype(y.dtype)) {  // c64, c128
        return blas_matmul(ctx, a, b, y, GemmProblem{s.nd, s.M, s.N, s.K, s.ta, s.tb});
      }
      return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "dtype %s is not supported",
                  dtype_name(y.dtype));
  }
}

}  // namespace

const char* sgemm_policy() {
  switch (g_sgemm_backend) {
    case SgemmBackend::onednn: return "f32 matmul on oneDNN (OAR_CPU_SGEMM=onednn)";
    case SgemmBackend::openblas: return "f32 matmul on OpenBLAS (OAR_CPU_SGEMM=openblas)";
    default: break;
  }
  return onednn_has_avx512()
             ? "f32 matmul on oneDNN (AVX-512)"
             : "f32 matmul on oneDNN, on OpenBLAS where the right operand's rows are a multiple of 512 floats "
               "apart and M <= 512 (no AVX-512: Note [f32 GEMM on AVX2 machines])";
}

void register_matmul_kernels(op::KernelTable& r) {
  // f32/f64 hand oneDNN (or OpenBLAS) the operands' strides; f16/bf16 widen
  // through a contiguous buffer and integers are not covered by the strided.*
  // conformance cases, so those get contiguous views.
  for (int32_t dt : kNumericDtypes) {
    const uint32_t flags = dt == OAR_DTYPE_F32 || dt == OAR_DTYPE_F64 ? uint32_t{OAR_KERNEL_STRIDED} : 0u;
    r.add("matmul", {dt, dt}, {dt}, &guarded<&matmul_kernel>, flags);
  }
#if OAR_ABI_VERSION_MINOR >= 3
  // Complex: OpenBLAS cgemm/zgemm (plain transposes, no conjugation), any strides.
  for (int32_t dt : {int32_t{OAR_DTYPE_C64}, int32_t{OAR_DTYPE_C128}}) {
    r.add("matmul", {dt, dt}, {dt}, &guarded<&matmul_kernel>, OAR_KERNEL_STRIDED);
  }
#endif
}

}  // namespace oar_cpu
