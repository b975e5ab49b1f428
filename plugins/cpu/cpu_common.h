// Shared pieces of the CPU plugin: host access, threading, the strided
// element iterator. Errors, element types, dtype visitors, the cast
// contract, attributes and kernel registration are the SDK's
// (sdk/include/oar/plugin.hpp), which is the only project header here.
#pragma once

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <type_traits>

#include "oar/plugin.hpp"

namespace oar_cpu {

// ---------------------------------------------------------------- host ---

extern const OarHostApi* g_host;  // not owned; valid from init to shutdown
extern std::atomic<int> g_num_threads;  // OpenMP threads of the next parallel regions
/// g_num_threads now (any thread may change it: Note [Threads on a busy machine]).
inline int current_threads() { return g_num_threads.load(std::memory_order_relaxed); }
extern int g_configured_threads;  // OAR_NUM_THREADS, else all cores
extern bool g_adaptive_threads;   // OAR_ADAPTIVE_THREADS != 0 (Note [Threads on a busy machine])

/// Note [Threads on a busy machine]: when another process takes a core, a
/// parallel region's threads wait for each other at its barrier: a thread
/// that lost its core holds the region up for a scheduler slice (ms), and
/// the one that arrived first spins on its own slice. A step of many small
/// regions collapsed that way (RMSNorm as ops, 2 threads, a parallel build
/// beside it: 10.6 -> 111 ms, torch 1.95 -> 6.3 ms). So the calling thread
/// measures contention directly: every kSampleNs it reads its own run-queue
/// wait (/proc/thread-self/schedstat, the time it was runnable without a
/// core). Waiting over 10% of the window halves g_num_threads (at least 1);
/// under 3% doubles it back (at most g_configured_threads). A region of
/// fewer threads is slower on an idle machine but does not stall on a busy
/// one; an idle machine never waits, so it keeps every thread. The choice
/// changes only the number of pieces, never a result (every kernel is
/// deterministic for any thread count). Called where regions are entered
/// (parallel_range, iter_run, oneDNN's apply_num_threads_to_this_thread),
/// only for work big enough to go parallel, so tiny ops pay nothing.
void refresh_num_threads();

// Elements below which a loop runs on the calling thread only.
constexpr int64_t kParallelMin = 32768;
// The same for the strided elementwise loops (iter_run): vectorized, a
// [1024, 32] f32 add (32768 elements) takes ~4 us, less than waking a
// second thread costs (the C++ PINN step, width 32, with 2 threads: 4.2 ms
// at 32768, 2.8 ms above it). At [1024, 64] (65536) splitting pays: the
// Python PINN step of bench_eager.py (width 64) with 2 threads took 9.8 ms
// with this at 131072 and 7.1 ms at 65536 (same idle box, 2026-12-02).
constexpr int64_t kParallelMinElementwise = 65536;

/// Calls body(begin, end) on pieces of [0, n): one piece per thread when
/// n >= grain and there are several threads, else one call on the calling
/// thread without entering an OpenMP region (tiny ops pay nothing for it).
template <class F>
void parallel_range(int64_t n, int64_t grain, F&& body) {
  if (n <= 0) return;
  if (g_configured_threads <= 1 || n < grain) {
    body(int64_t{0}, n);
    return;
  }
  refresh_num_threads();
  const int64_t pieces = g_num_threads;
  if (pieces <= 1) {
    body(int64_t{0}, n);
    return;
  }
#pragma omp parallel for num_threads(static_cast<int>(pieces)) schedule(static)
  for (int64_t p = 0; p < pieces; ++p) body(n * p / pieces, n * (p + 1) / pieces);
}

/// Same as oar::plugin::fail without an op name: "cpu plugin: <message>"
/// (device-table functions).
OarStatus fail_plain(OarStatus code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

/// Makes oneDNN's OpenMP regions on the calling thread use g_num_threads.
void apply_num_threads_to_this_thread();

// ------------------------------------------- the SDK's dtypes, attributes ---

namespace op = oar::plugin;
using op::Attrs;
using op::bf16_t;
using op::cast_to;
using op::dtype_name;
using op::f16_t;
using op::fail;
using op::guarded;
using op::kAllDtypes;
using op::kComplexDtypes;
using op::bytes16_t;
using op::convert;
using op::c64_t;
using op::c128_t;
using op::kIsComplex;
using op::kFloatDtypes;
using op::kIntDtypes;
using op::kIsFloat;
using op::kIsHalf;
using op::kNumericDtypes;
using op::Num;
using op::visit_all;
using op::visit_complex;
using op::visit_by_size;
using op::visit_float;
using op::visit_int;
using op::visit_numeric;

// ----------------------------------------------------------- iterator ---

/// Up to this many operands (output first) per strided iteration.
constexpr int kMaxOperands = 4;

/// Note [Strided iteration]: an elementwise loop over the output's shape.
/// Every operand has a byte stride per dim; an input dim of size 1 gets
/// stride 0 (broadcast without materializing). Size-1 dims are dropped and
/// adjacent dims that are contiguous for every operand are merged, so a
/// contiguous same-shape op becomes one flat row. The innermost dim is
/// handed to a row function in tiles; tiles run in parallel.
struct StridedIter {
  int ndim = 0;
  int nops = 0;
  int64_t numel = 0;
  int64_t shape[OAR_MAX_NDIM] = {};
  char* base[kMaxOperands] = {};
  int64_t strides[kMaxOperands][OAR_MAX_NDIM] = {};  // bytes
};

/// Row function: ptrs[i] is operand i's first element of the row,
/// strides[i] its byte stride along the row, n the row length.
using RowFn = void (*)(void* ctx, char* const* ptrs, const int64_t* strides, int64_t n);

/// Builds an iterator for `out` (operand 0) and `ins` (operands 1..). Input
/// ranks must equal the output's; each input dim must equal the output's or
/// be 1. Returns false (with the error set) otherwise.
bool make_iter(const OarKernelContext* ctx, StridedIter* it, const OarTensorView& out,
               std::initializer_list<const OarTensorView*> ins);
/// Runs fn over all rows of `it`, in parallel for large iterations.
void iter_run(const StridedIter& it, RowFn fn, void* fn_ctx);

/// Note [Streaming stores for big outputs]: an elementwise op whose output
/// is larger than the last-level cache writes it with non-temporal stores
/// (computed into an L1 buffer, then streamed out 16 bytes at a time): the
/// cache line is not read before it is written, and the output does not
/// push the inputs out of the cache on its way to memory. On the 2-vCPU
/// Zen 1 VM (8 MB L3), y = x * x over [4096, 768] f32 took 1.26 ms with
/// normal stores and 0.55 ms streamed at 2 threads (1.99 / 1.60 at 1), in a
/// C++ probe. Smaller outputs keep normal stores, so the next op finds them
/// in the cache. Measured on that VM only: on the Zen 4 box of 2026-12-02
/// the compiler's RMSNorm with a similar L1-buffer + non-temporal variant
/// was 3x slower (compiler/src/codegen_cpu.cpp, Note [CPU schedules]), so
/// measure on an AVX-512 machine before trusting the default there. iter_run sets t_stream_output on the threads that run the
/// rows; the contiguous f32/f64 loops of kernels_elementwise.cpp read it.
/// OAR_CPU_STREAM_MIN_BYTES sets the threshold (default: the L3 size from
/// sysconf, 32 MiB where unknown; 0 streams every output, tests use it).
extern int64_t g_stream_min_bytes;
extern thread_local bool t_stream_output;
/// out[0, bytes) <- buf[0, bytes) with non-temporal stores where out is
/// 16-byte aligned (plain copies for the rest). The caller fences.
void stream_out(void* out, const void* buf, int64_t bytes);
/// Orders the calling thread's streamed stores before its later stores
/// (sfence); iter_run calls it once per thread after the rows it ran.
void stream_fence();

/// out <- in for two views of the same shape and element size (any strides).
/// Used by copy and all the data-movement kernels.
bool strided_copy(const OarKernelContext* ctx, const OarTensorView& out, const OarTensorView& in);

/// View helpers.
bool is_contiguous(const OarTensorView& v);
/// True when no element of a contiguous float view is NaN or infinite
/// (integer views: true). oneDNN's softmax and max pooling do not follow
/// numpy on non-finite values; their kernels take the loops then.
bool all_finite(const OarTensorView& v);
void set_contiguous_strides(OarTensorView* v);

// ------------------------------------------------------- registration ---

void register_elementwise_kernels(op::KernelTable& r);
void register_cast_kernels(op::KernelTable& r);
void register_reduce_kernels(op::KernelTable& r);
void register_shape_kernels(op::KernelTable& r);
void register_matmul_kernels(op::KernelTable& r);
void register_fused_kernels(op::KernelTable& r);
void register_conv_kernels(op::KernelTable& r);
void register_linalg_kernels(op::KernelTable& r);  // LAPACK (kernels_linalg.cpp)
void register_complex_kernels(op::KernelTable& r);
void register_optimizer_kernels(op::KernelTable& r);  // adam_update (kernels_optimizer.cpp)

/// The collective entries of the device table: Gloo (cpu_collectives.cpp).
void fill_collectives(OarDeviceApi* api);

}  // namespace oar_cpu
