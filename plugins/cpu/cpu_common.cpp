// Shared helpers of the CPU plugin: errors of the device table and the
// strided iterator (Note [Strided iteration] in cpu_common.h).
#include "cpu_common.h"
#include "cpu_vec_math.h"

#include <emmintrin.h>  // _mm_stream_si128, _mm_sfence (SSE2: every x86-64)
#include <fcntl.h>
#include <omp.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <string>

namespace oar_cpu {

const OarHostApi* g_host = nullptr;
std::atomic<int> g_num_threads{1};  // written by refresh_num_threads on any calling thread
int g_configured_threads = 1;
bool g_adaptive_threads = true;
int64_t g_stream_min_bytes = int64_t{32} << 20;  // set at init (Note [Streaming stores for big outputs])
thread_local bool t_stream_output = false;

void stream_out(void* out, const void* buf, int64_t bytes) {
  char* o = static_cast<char*>(out);
  const char* b = static_cast<const char*>(buf);
  int64_t i = 0;
  if ((reinterpret_cast<uintptr_t>(o) & 15) == 0) {
    for (; i + 16 <= bytes; i += 16) {
      _mm_stream_si128(reinterpret_cast<__m128i*>(o + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    }
  }
  if (i < bytes) std::memcpy(o + i, b + i, static_cast<size_t>(bytes - i));
}

void stream_fence() { _mm_sfence(); }

OarStatus fail_plain(OarStatus code, const char* fmt, ...) {
  char body[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(body, sizeof body, fmt, args);
  va_end(args);
  return op::fail(code, std::string("cpu plugin: ") + body);
}

namespace {

constexpr int64_t kSampleNs = 20'000'000;  // Note [Threads on a busy machine]

int64_t monotonic_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

// The calling thread's run-queue wait in ns (the second field of
// /proc/thread-self/schedstat), or -1 where the kernel does not provide it.
int64_t run_queue_wait_ns() {
  thread_local int fd = -2;
  if (fd == -2) fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char text[128];
  const ssize_t n = pread(fd, text, sizeof text - 1, 0);
  if (n <= 0) return -1;
  text[n] = '\0';
  unsigned long long on_cpu = 0, waited = 0;
  return std::sscanf(text, "%llu %llu", &on_cpu, &waited) == 2 ? static_cast<int64_t>(waited) : -1;
}

}  // namespace

void refresh_num_threads() {
  if (!g_adaptive_threads || g_configured_threads <= 1) return;
  thread_local int64_t last_ns = 0;
  thread_local int64_t last_wait = -1;
  const int64_t now = monotonic_ns();
  if (now - last_ns < kSampleNs) return;
  const int64_t wait = run_queue_wait_ns();
  if (wait >= 0 && last_wait >= 0 && last_ns > 0) {
    const double waited = static_cast<double>(wait - last_wait) / static_cast<double>(now - last_ns);
    int threads = g_num_threads;
    if (waited > 0.10) {
      threads = std::max(1, threads / 2);
    } else if (waited < 0.03) {
      threads = std::min(g_configured_threads, threads * 2);
    }
    g_num_threads.store(threads, std::memory_order_relaxed);
  }
  last_ns = now;
  last_wait = wait;
}

void apply_num_threads_to_this_thread() {
  refresh_num_threads();
  thread_local int applied = 0;
  if (applied != g_num_threads) {
    omp_set_num_threads(current_threads());
    applied = g_num_threads;
  }
}

// ------------------------------------------------------------ iterator ---

bool make_iter(const OarKernelContext* ctx, StridedIter* it, const OarTensorView& out,
               std::initializer_list<const OarTensorView*> ins) {
  const int nd = out.ndim;
  it->nops = 1 + static_cast<int>(ins.size());
  const OarTensorView* views[kMaxOperands] = {&out};
  int k = 1;
  for (const OarTensorView* v : ins) views[k++] = v;
  for (int op = 1; op < it->nops; ++op) {
    const OarTensorView& v = *views[op];
    if (v.ndim != nd) {
      fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "input %d has rank %d but the output has rank %d",
           op - 1, v.ndim, nd);
      return false;
    }
    for (int d = 0; d < nd; ++d) {
      if (v.shape[d] != out.shape[d] && v.shape[d] != 1) {
        fail(ctx, OAR_ERROR_INVALID_ARGUMENT,
             "input %d has size %lld in dim %d, which neither equals the output's %lld nor is 1",
             op - 1, static_cast<long long>(v.shape[d]), d, static_cast<long long>(out.shape[d]));
        return false;
      }
    }
  }
  it->numel = oar_view_numel(&out);
  for (int op = 0; op < it->nops; ++op) {
    it->base[op] = static_cast<char*>(oar_view_ptr(views[op]));
  }
  // Keep the dims of size != 1, merging neighbours contiguous for all operands.
  int n = 0;
  for (int d = 0; d < nd; ++d) {
    if (out.shape[d] == 1) continue;
    int64_t s[kMaxOperands];
    for (int op = 0; op < it->nops; ++op) {
      const OarTensorView& v = *views[op];
      s[op] = v.shape[d] == 1 ? 0 : v.strides[d] * static_cast<int64_t>(oar_dtype_size(v.dtype));
    }
    bool merge = n > 0;
    for (int op = 0; merge && op < it->nops; ++op) {
      merge = it->strides[op][n - 1] == s[op] * out.shape[d];
    }
    if (merge) {
      it->shape[n - 1] *= out.shape[d];
      for (int op = 0; op < it->nops; ++op) it->strides[op][n - 1] = s[op];
    } else {
      it->shape[n] = out.shape[d];
      for (int op = 0; op < it->nops; ++op) it->strides[op][n] = s[op];
      ++n;
    }
  }
  if (n == 0) {  // a scalar or all-ones shape: one row of one element
    it->shape[0] = 1;
    for (int op = 0; op < it->nops; ++op) it->strides[op][0] = 0;
    n = 1;
  }
  it->ndim = n;
  return true;
}

void iter_run(const StridedIter& it, RowFn fn, void* fn_ctx) {
  if (it.numel <= 0) return;
  constexpr int64_t kTile = 16384;  // elements per parallel task
  const int nd = it.ndim;
  const int nops = it.nops;
  const int64_t inner = it.shape[nd - 1];
  const int64_t rows = it.numel / inner;
  int64_t inner_strides[kMaxOperands];
  for (int op = 0; op < nops; ++op) inner_strides[op] = it.strides[op][nd - 1];

  // Row r's operand pointers, from its multi-index over the outer dims.
  auto row_ptrs = [&](int64_t r, char** ptrs, int64_t* idx) {
    for (int op = 0; op < nops; ++op) ptrs[op] = it.base[op];
    for (int d = nd - 2; d >= 0; --d) {
      idx[d] = r % it.shape[d];
      r /= it.shape[d];
      for (int op = 0; op < nops; ++op) ptrs[op] += idx[d] * it.strides[op][d];
    }
  };

  // Small or single-threaded work runs on the calling thread without
  // entering an OpenMP region at all (an `if (false)` region still costs).
  bool parallel = g_configured_threads > 1 && it.numel >= kParallelMinElementwise;
  if (parallel) {
    refresh_num_threads();
    parallel = g_num_threads > 1;
  }
  // Note [Streaming stores for big outputs]: operand 0's bytes, as strided.
  int64_t out_bytes = 0;
  const bool huge = __builtin_mul_overflow(it.numel, std::abs(inner_strides[0]), &out_bytes);
  const bool stream = huge || out_bytes >= g_stream_min_bytes;
  struct StreamFlag {  // set on every thread that runs rows; fenced and cleared after
    bool on;  // small ops never touch the thread-local (a __tls_get_addr call in a plugin)
    explicit StreamFlag(bool on_) : on(on_) {
      if (on) t_stream_output = true;
    }
    ~StreamFlag() {
      if (on) {
        stream_fence();  // the streamed stores are visible before the region ends
        t_stream_output = false;
      }
    }
  };

  if (inner >= kTile) {  // long rows: tiles are pieces of one row
    const int64_t per_row = (inner + kTile - 1) / kTile;
    const int64_t tiles = rows * per_row;
    auto run_tile = [&](int64_t t) {
      StreamFlag flag(stream);
      char* ptrs[kMaxOperands];
      int64_t idx[OAR_MAX_NDIM];
      row_ptrs(t / per_row, ptrs, idx);
      const int64_t col = (t % per_row) * kTile;
      for (int op = 0; op < nops; ++op) ptrs[op] += col * inner_strides[op];
      fn(fn_ctx, ptrs, inner_strides, std::min(kTile, inner - col));
    };
    if (parallel && tiles > 1) {
#pragma omp parallel for num_threads(current_threads()) schedule(static)
      for (int64_t t = 0; t < tiles; ++t) run_tile(t);
    } else {
      for (int64_t t = 0; t < tiles; ++t) run_tile(t);
    }
    return;
  }
  // Short rows: tiles are groups of whole rows, walked with an odometer.
  const int64_t rows_per_tile = std::max<int64_t>(1, kTile / inner);
  const int64_t tiles = (rows + rows_per_tile - 1) / rows_per_tile;
  auto run_rows = [&](int64_t r0, int64_t r1) {
    StreamFlag flag(stream);
    char* ptrs[kMaxOperands];
    int64_t idx[OAR_MAX_NDIM];
    row_ptrs(r0, ptrs, idx);
    for (int64_t r = r0; r < r1; ++r) {
      fn(fn_ctx, ptrs, inner_strides, inner);
      for (int d = nd - 2; d >= 0; --d) {  // advance to the next row
        for (int op = 0; op < nops; ++op) ptrs[op] += it.strides[op][d];
        if (++idx[d] < it.shape[d]) break;
        for (int op = 0; op < nops; ++op) ptrs[op] -= it.shape[d] * it.strides[op][d];
        idx[d] = 0;
      }
    }
  };
  if (parallel && tiles > 1) {
#pragma omp parallel for num_threads(current_threads()) schedule(static)
    for (int64_t t = 0; t < tiles; ++t) {
      run_rows(t * rows_per_tile, std::min(rows, (t + 1) * rows_per_tile));
    }
  } else if (nd == 1) {  // one row (a contiguous op): no odometer
    StreamFlag flag(stream);
    char* ptrs[kMaxOperands];
    for (int op = 0; op < nops; ++op) ptrs[op] = it.base[op];
    fn(fn_ctx, ptrs, inner_strides, inner);
  } else {
    run_rows(0, rows);
  }
}

namespace {

template <class T>
void copy_row(void*, char* const* p, const int64_t* s, int64_t n) {
  T* dst = reinterpret_cast<T*>(p[0]);
  const T* src = reinterpret_cast<const T*>(p[1]);
  if (s[0] == sizeof(T) && s[1] == sizeof(T)) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(T));
  } else if (s[0] == sizeof(T) && s[1] == 0) {
    const T v = *src;
    for (int64_t i = 0; i < n; ++i) dst[i] = v;
  } else if (s[0] == sizeof(T)) {
    const int64_t ss = s[1] / static_cast<int64_t>(sizeof(T));
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i * ss];
  } else {
    const char* sp = p[1];
    char* dp = p[0];
    for (int64_t i = 0; i < n; ++i, sp += s[1], dp += s[0]) {
      *reinterpret_cast<T*>(dp) = *reinterpret_cast<const T*>(sp);
    }
  }
}

}  // namespace

bool strided_copy(const OarKernelContext* ctx, const OarTensorView& out, const OarTensorView& in) {
  StridedIter it;
  if (!make_iter(ctx, &it, out, {&in})) return false;
  RowFn fn = nullptr;
  visit_by_size(out.dtype, [&](auto tag) { fn = &copy_row<decltype(tag)>; });
  if (fn == nullptr) {
    fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "unsupported dtype %d", out.dtype);
    return false;
  }
  iter_run(it, fn, nullptr);
  return true;
}

bool is_contiguous(const OarTensorView& v) {
  for (int d = 0; d < v.ndim; ++d)
    if (v.shape[d] == 0) return true;  // no element: any strides will do (the core gives [0, 1] to a [0, 0])
  int64_t expected = 1;
  for (int d = v.ndim - 1; d >= 0; --d) {
    if (v.shape[d] != 1 && v.strides[d] != expected) return false;
    expected *= v.shape[d];
  }
  return true;
}

void set_contiguous_strides(OarTensorView* v) {
  int64_t s = 1;
  for (int d = v->ndim - 1; d >= 0; --d) {
    v->strides[d] = s;
    s *= v->shape[d];
  }
}

namespace {
// x - x is 0 for a finite x and NaN for an infinity or NaN; a NaN survives the sum.
template <class T>
OAR_CPU_CLONES_STREAM bool all_finite_span(const T* x, int64_t n) {
  T acc = 0;
#pragma omp simd reduction(+ : acc)
  for (int64_t k = 0; k < n; ++k) acc += x[k] - x[k];
  return acc == T(0);
}
// f16 / bf16: the exponent bits all set.
bool all_finite_bits(const uint16_t* x, int64_t n, uint16_t exponent) {
  uint16_t any = 0;
  for (int64_t k = 0; k < n; ++k) any |= static_cast<uint16_t>((x[k] & exponent) == exponent);
  return any == 0;
}
}  // namespace

bool all_finite(const OarTensorView& v) {
  const int64_t n = oar_view_numel(&v);
  const void* p = oar_view_ptr(&v);
  switch (v.dtype) {
    case OAR_DTYPE_F32:
      return all_finite_span(static_cast<const float*>(p), n);
    case OAR_DTYPE_F64:
      return all_finite_span(static_cast<const double*>(p), n);
    case OAR_DTYPE_F16:
      return all_finite_bits(static_cast<const uint16_t*>(p), n, 0x7c00);
    case OAR_DTYPE_BF16:
      return all_finite_bits(static_cast<const uint16_t*>(p), n, 0x7f80);
    default:
      return true;
  }
}

}  // namespace oar_cpu
