// Shared pieces of the CPU plugin: host access, dtype traits and dispatch,
// attribute reading, the strided element iterator, kernel registration.
// Internal to plugins/cpu (only oar/plugin_api.h and oar/plugin_util.h are
// project headers included here).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <type_traits>

#include "oar/plugin_api.h"
#include "oar/plugin_util.h"

namespace oar_cpu {

// ---------------------------------------------------------------- host ---

extern const OarHostApi* g_host;  // not owned; valid from init to shutdown
extern int g_num_threads;         // OpenMP threads of every parallel region

// Elements below which a loop runs on the calling thread only.
constexpr int64_t kParallelMin = 32768;
// The same for the strided elementwise loops (iter_run): vectorized, a
// [1024, 32] f32 add takes ~4 us, less than waking a second thread costs
// (the PINN step with 2 threads: 4.2 ms at 32768, 2.8 ms at this value).
constexpr int64_t kParallelMinElementwise = 131072;

/// Calls body(begin, end) on pieces of [0, n): one piece per thread when
/// n >= grain and there are several threads, else one call on the calling
/// thread without entering an OpenMP region (tiny ops pay nothing for it).
template <class F>
void parallel_range(int64_t n, int64_t grain, F&& body) {
  if (n <= 0) return;
  if (g_num_threads <= 1 || n < grain) {
    body(int64_t{0}, n);
    return;
  }
  const int64_t pieces = g_num_threads;
#pragma omp parallel for num_threads(g_num_threads) schedule(static)
  for (int64_t p = 0; p < pieces; ++p) body(n * p / pieces, n * (p + 1) / pieces);
}

/// Sets the calling thread's error message ("<op>: <formatted>") and
/// returns `code`.
OarStatus fail(const OarKernelContext* ctx, OarStatus code, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
/// Same, without an op name (device-table functions).
OarStatus fail_plain(OarStatus code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

/// Makes oneDNN's OpenMP regions on the calling thread use g_num_threads.
void apply_num_threads_to_this_thread();

// ------------------------------------------------------------- dtypes ---

struct f16_t {
  uint16_t bits;
};
struct bf16_t {
  uint16_t bits;
};

/// Storage type T computes in Num<T>::C (f16/bf16 in float).
template <class T>
struct Num {
  using C = T;
  static C load(T v) { return v; }
};
template <>
struct Num<f16_t> {
  using C = float;
  static float load(f16_t v) { return oar_f16_to_f32(v.bits); }
};
template <>
struct Num<bf16_t> {
  using C = float;
  static float load(bf16_t v) { return oar_bf16_to_f32(v.bits); }
};

template <class T>
inline constexpr bool kIsHalf = std::is_same_v<T, f16_t> || std::is_same_v<T, bf16_t>;
template <class T>
inline constexpr bool kIsFloat = std::is_floating_point_v<T> || kIsHalf<T>;

/// Converts a compute value to storage type D with the cast contract (the
/// mock's): float->int truncates toward zero and saturates at D's range
/// (NaN -> 0), int->int wraps, ->bool is v != 0 (NaN is true), ->f16/bf16
/// rounds to nearest even through float.
template <class D, class V>
inline D to(V v) {
  if constexpr (std::is_same_v<D, f16_t>) {
    return f16_t{oar_f32_to_f16(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<D, bf16_t>) {
    return bf16_t{oar_f32_to_bf16(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<D, bool>) {
    return v != 0;
  } else if constexpr (std::is_floating_point_v<D> || !std::is_floating_point_v<V>) {
    return static_cast<D>(v);
  } else {
    // Limits compare exactly in double; i64's max rounds up to 2^63, so >=
    // sends it to the max.
    const double d = static_cast<double>(v);
    if (d != d) return D(0);
    if (d <= static_cast<double>(std::numeric_limits<D>::min()))
      return std::numeric_limits<D>::min();
    if (d >= static_cast<double>(std::numeric_limits<D>::max()))
      return std::numeric_limits<D>::max();
    return static_cast<D>(d);
  }
}

/// Calls f(T{}) with T the storage type of `dtype`, for the dtypes in the
/// chosen family; returns false for a dtype outside it.
template <class F>
bool visit_float(int32_t dtype, F&& f) {
  switch (dtype) {
    case OAR_DTYPE_F32:
      f(float{});
      return true;
    case OAR_DTYPE_F64:
      f(double{});
      return true;
    case OAR_DTYPE_F16:
      f(f16_t{});
      return true;
    case OAR_DTYPE_BF16:
      f(bf16_t{});
      return true;
    default:
      return false;
  }
}
template <class F>
bool visit_int(int32_t dtype, F&& f) {
  switch (dtype) {
    case OAR_DTYPE_I8:
      f(int8_t{});
      return true;
    case OAR_DTYPE_U8:
      f(uint8_t{});
      return true;
    case OAR_DTYPE_I32:
      f(int32_t{});
      return true;
    case OAR_DTYPE_I64:
      f(int64_t{});
      return true;
    default:
      return false;
  }
}
template <class F>
bool visit_numeric(int32_t dtype, F&& f) {
  return visit_float(dtype, f) || visit_int(dtype, f);
}
template <class F>
bool visit_all(int32_t dtype, F&& f) {
  if (dtype == OAR_DTYPE_BOOL) {
    f(bool{});
    return true;
  }
  return visit_numeric(dtype, f);
}
/// Dtype-agnostic data movement: dispatches on the element size only.
template <class F>
bool visit_by_size(int32_t dtype, F&& f) {
  switch (oar_dtype_size(dtype)) {
    case 1:
      f(uint8_t{});
      return true;
    case 2:
      f(uint16_t{});
      return true;
    case 4:
      f(uint32_t{});
      return true;
    case 8:
      f(uint64_t{});
      return true;
    default:
      return false;
  }
}

inline const char* dtype_name(int32_t dtype) {
  static const char* const names[] = {"f32", "f64", "f16", "bf16", "i8",
                                      "u8",  "i32", "i64", "bool"};
  return dtype >= 0 && dtype < OAR_DTYPE_COUNT ? names[dtype] : "unknown";
}

/// Dtype lists used by the registration tables.
inline constexpr int32_t kFloatDtypes[] = {OAR_DTYPE_F32, OAR_DTYPE_F64, OAR_DTYPE_F16,
                                           OAR_DTYPE_BF16};
inline constexpr int32_t kIntDtypes[] = {OAR_DTYPE_I8, OAR_DTYPE_U8, OAR_DTYPE_I32, OAR_DTYPE_I64};
inline constexpr int32_t kNumericDtypes[] = {OAR_DTYPE_F32,  OAR_DTYPE_F64, OAR_DTYPE_F16,
                                             OAR_DTYPE_BF16, OAR_DTYPE_I8,  OAR_DTYPE_U8,
                                             OAR_DTYPE_I32,  OAR_DTYPE_I64};
inline constexpr int32_t kAllDtypes[] = {OAR_DTYPE_F32,  OAR_DTYPE_F64, OAR_DTYPE_F16,
                                         OAR_DTYPE_BF16, OAR_DTYPE_I8,  OAR_DTYPE_U8,
                                         OAR_DTYPE_I32,  OAR_DTYPE_I64, OAR_DTYPE_BOOL};

// --------------------------------------------------------- attributes ---

/// Reads attributes of one kernel call; the first failure is remembered
/// (with a message naming the op and attribute) and later reads are no-ops.
class Attrs {
 public:
  explicit Attrs(const OarKernelContext* ctx) : ctx_(ctx) {}
  int64_t get_int(const char* name);
  int64_t get_int(const char* name, int64_t fallback);
  double get_float(const char* name);
  bool get_bool(const char* name, bool fallback);
  /// Array attribute; `count` receives its length. Missing: error.
  const int64_t* get_ints(const char* name, int64_t* count);
  bool has(const char* name) const;
  /// Attribute `name` as one element of T: an int attribute converts exactly
  /// (integers wrap), a float one with cast semantics; `fallback` when
  /// missing, or an error when `fallback` is null.
  template <class T>
  T element(const char* name, const double* fallback) {
    if (fallback != nullptr && !has(name)) return to<T>(*fallback);
    if (g_host->attr_kind(ctx_->attrs, name) == OAR_ATTR_INT) return to<T>(get_int(name));
    return to<T>(get_float(name));
  }
  bool ok() const { return status_ == OAR_OK; }
  OarStatus status() const { return status_; }

 private:
  void missing(const char* name, const char* kind);
  const OarKernelContext* ctx_;
  OarStatus status_ = OAR_OK;
};

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

/// Registers kernels with the host; the first failing registration is kept
/// in `status`.
struct Registrar {
  OarStatus status = OAR_OK;
  /// One concrete signature.
  void add(const char* op, std::initializer_list<int32_t> ins, std::initializer_list<int32_t> outs,
           uint32_t flags, OarKernelFn fn);
  /// Any number of inputs of any dtype (variadic ops); concrete outputs.
  void add_any_inputs(const char* op, std::initializer_list<int32_t> outs, uint32_t flags,
                      OarKernelFn fn);

 private:
  void add_desc(const char* op, const int32_t* ins, int32_t ni, std::initializer_list<int32_t> outs,
                uint32_t flags, OarKernelFn fn);
};

void register_elementwise_kernels(Registrar& r);
void register_cast_kernels(Registrar& r);
void register_reduce_kernels(Registrar& r);
void register_shape_kernels(Registrar& r);
void register_matmul_kernels(Registrar& r);
void register_fused_kernels(Registrar& r);
void register_conv_kernels(Registrar& r);

/// Classifies the exception being handled (bad_alloc -> out of memory,
/// others -> internal) and sets the error message.
OarStatus on_exception(const OarKernelContext* ctx) noexcept;

/// Wraps a kernel so no C++ exception crosses the C ABI.
template <OarKernelFn F>
OarStatus guarded(const OarKernelContext* ctx) noexcept {
  try {
    return F(ctx);
  } catch (...) {
    return on_exception(ctx);
  }
}

}  // namespace oar_cpu
