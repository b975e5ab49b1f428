/// \file plugin.hpp
/// Optional, header-only C++17 layer over the plugin ABI for plugin authors.
/// It depends only on oar/plugin_api.h and oar/plugin_util.h (never on the
/// oar core) and adds no exported symbol: everything is inline and ends up
/// hidden in the plugin. It offers
///  - error reporting and logging through the host (`fail`, `log`),
///  - the init handshake (`accept_host`) and versioned-struct helpers,
///  - element types, dtype visitors and the cast contract (`visit_*`,
///    `Element`, `cast_to`),
///  - typed tensor access and a broadcasting indexer for kernels,
///  - attribute reads with defaults and errors that name the op (`Attrs`),
///  - a kernel table that registers C++ kernels and keeps exceptions from
///    crossing the C ABI (`KernelTable`, `OAR_KERNEL`, `guarded`).
/// A plugin may use any part of it, or none: the C header alone is enough.
/// oar's own mock and cpu plugins are built on it.
#ifndef OAR_PLUGIN_HPP
#define OAR_PLUGIN_HPP

#include <complex>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <limits>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "oar/plugin_api.h"
#include "oar/plugin_util.h"

// oar_add_device_plugin stamps the ABI version the build system saw; it must
// be the one of the header the compiler sees.
#if defined(OAR_PLUGIN_BUILD_ABI_MAJOR) && (OAR_PLUGIN_BUILD_ABI_MAJOR != OAR_ABI_VERSION_MAJOR)
#error "oar/plugin_api.h and the OarSDK CMake package disagree on the ABI major version"
#endif

namespace oar::plugin {

/// The host table handed to oar_plugin_init; set by accept_host.
inline const OarHostApi*& host_table() {
  static const OarHostApi* host = nullptr;
  return host;
}

/// True when the host's table is long enough to hold `field`.
#define OAR_HOST_HAS(host, field) \
  ((host)->struct_size >= OAR_STRUCT_SIZE(OarHostApi, field) && (host)->field != nullptr)

/// printf into a std::string (messages longer than 1023 bytes are cut).
inline std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
inline std::string format(const char* fmt, ...) {
  char buffer[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buffer, sizeof buffer, fmt, args);
  va_end(args);
  return buffer;
}

/// Reports an error message to the host and returns `code`, so a function
/// can `return fail(OAR_ERROR_INVALID_ARGUMENT, "...")`.
inline OarStatus fail(OarStatus code, const std::string& message) {
  const OarHostApi* host = host_table();
  if (host && OAR_HOST_HAS(host, set_error)) host->set_error(host->host, code, message.c_str());
  return code;
}

/// The op a kernel context launches ("kernel" when the host gave none).
inline const char* op_name(const OarKernelContext* ctx) {
  return ctx != nullptr && ctx->op_name != nullptr ? ctx->op_name : "kernel";
}

/// Reports "<op>: <printf message>" for a kernel launch and returns `code`.
inline OarStatus fail(const OarKernelContext* ctx, OarStatus code, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
inline OarStatus fail(const OarKernelContext* ctx, OarStatus code, const char* fmt, ...) {
  char body[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(body, sizeof body, fmt, args);
  va_end(args);
  return fail(code, std::string(op_name(ctx)) + ": " + body);
}

/// Logs one line through the host (OAR_LOG_DEBUG ... OAR_LOG_ERROR).
inline void log(int32_t level, const std::string& message) {
  const OarHostApi* host = host_table();
  if (host && OAR_HOST_HAS(host, log)) host->log(host->host, level, message.c_str());
}

/// Reads a host option (the environment by default), or `fallback`.
inline std::string option(const char* name, const std::string& fallback = "") {
  const OarHostApi* host = host_table();
  if (!host || !OAR_HOST_HAS(host, get_option)) return fallback;
  const char* value = host->get_option(host->host, name);
  return value && *value ? std::string(value) : fallback;
}

/// The init handshake: fills `info` (within its struct_size) with this
/// build's ABI version and `name`, then checks the host: same major, and a
/// table that reaches the functions plugins need (registration, set_error,
/// the attribute accessors). Returns OAR_OK or the error to return from
/// oar_plugin_init (with the message set when the host can take one).
inline OarStatus accept_host(const OarHostApi* host, OarPluginInfo* info, const char* name) {
  if (!host) return OAR_ERROR_INVALID_ARGUMENT;
  host_table() = host;
  if (info && info->struct_size >= OAR_STRUCT_SIZE(OarPluginInfo, abi_minor)) {
    info->abi_major = OAR_ABI_VERSION_MAJOR;
    info->abi_minor = OAR_ABI_VERSION_MINOR;
  }
  if (info && info->struct_size >= OAR_STRUCT_SIZE(OarPluginInfo, name)) info->name = name;
  if (host->abi_major != OAR_ABI_VERSION_MAJOR) {
    return fail(
        OAR_ERROR_UNSUPPORTED,
        format("%s: incompatible plugin ABI (plugin: %d.%d, host: %d.%d); the major versions "
               "must be equal",
               name, OAR_ABI_VERSION_MAJOR, OAR_ABI_VERSION_MINOR, host->abi_major,
               host->abi_minor));
  }
  if (!OAR_HOST_HAS(host, attr_float_array) || !host->register_device || !host->register_kernel ||
      !host->set_error || !host->attr_kind || !host->attr_int || !host->attr_float ||
      !host->attr_bool || !host->attr_int_array || !host->attr_string) {
    return fail(OAR_ERROR_UNSUPPORTED,
                format("%s: the host table lacks register_device, register_kernel, set_error "
                       "or the attribute accessors",
                       name));
  }
  return OAR_OK;
}

/// A zeroed ABI struct with struct_size set to what this build knows.
template <typename T>
T make_struct() {
  T value;
  std::memset(&value, 0, sizeof value);
  value.struct_size = sizeof value;
  return value;
}

/// Copies `src` into a struct the host allocated, writing only the fields
/// inside the host's struct_size (rule 2 of the ABI) and keeping that size.
template <typename T>
void write_struct(T* dst, const T& src) {
  size_t room = dst->struct_size < sizeof(T) ? dst->struct_size : sizeof(T);
  if (room > sizeof(size_t))
    std::memcpy(reinterpret_cast<char*>(dst) + sizeof(size_t),
                reinterpret_cast<const char*>(&src) + sizeof(size_t), room - sizeof(size_t));
}

// ---------------------------------------------------------------------------
// Element types, dtype visitors and the cast contract
// ---------------------------------------------------------------------------

/// Storage type of an f16 element (IEEE binary16 bits).
struct f16_t {
  uint16_t bits;  ///< the raw bits
};
/// Storage type of a bf16 element (the upper half of an f32).
struct bf16_t {
  uint16_t bits;  ///< the raw bits
};

/// Storage type of a complex64 element: two f32 (real, imaginary).
using c64_t = std::complex<float>;
/// Storage type of a complex128 element: two f64 (real, imaginary).
using c128_t = std::complex<double>;
/// 16 bytes moved as one element by dtype-agnostic kernels (visit_by_size).
struct alignas(8) bytes16_t {
  uint64_t lo, hi;  ///< the raw bytes
};

/// True for c64_t and c128_t.
template <class T>
inline constexpr bool kIsComplex = std::is_same_v<T, c64_t> || std::is_same_v<T, c128_t>;
/// True for f16_t and bf16_t.
template <class T>
inline constexpr bool kIsHalf = std::is_same_v<T, f16_t> || std::is_same_v<T, bf16_t>;
/// True for the floating storage types (float, double, f16_t, bf16_t).
template <class T>
inline constexpr bool kIsFloat = std::is_floating_point_v<T> || kIsHalf<T>;

/// The OarDType of a storage type.
template <typename T>
constexpr int32_t dtype_of() {
  if constexpr (std::is_same_v<T, float>) return OAR_DTYPE_F32;
  else if constexpr (std::is_same_v<T, double>) return OAR_DTYPE_F64;
  else if constexpr (std::is_same_v<T, f16_t>) return OAR_DTYPE_F16;
  else if constexpr (std::is_same_v<T, bf16_t>) return OAR_DTYPE_BF16;
  else if constexpr (std::is_same_v<T, int8_t>) return OAR_DTYPE_I8;
  else if constexpr (std::is_same_v<T, uint8_t>) return OAR_DTYPE_U8;
  else if constexpr (std::is_same_v<T, int32_t>) return OAR_DTYPE_I32;
  else if constexpr (std::is_same_v<T, int64_t>) return OAR_DTYPE_I64;
  else if constexpr (std::is_same_v<T, c64_t>) return OAR_DTYPE_C64;
  else if constexpr (std::is_same_v<T, c128_t>) return OAR_DTYPE_C128;
  else {
    static_assert(std::is_same_v<T, bool>, "dtype_of: not a storage type of an OarDType");
    return OAR_DTYPE_BOOL;
  }
}

/// "f32", "i64", "c64", ... ("unknown dtype" outside OarDType).
inline const char* dtype_name(int32_t dtype) {
  static const char* const names[] = {"f32", "f64", "f16", "bf16", "i8", "u8",
                                      "i32", "i64", "bool", "c64", "c128"};
  static_assert(sizeof(names) / sizeof(names[0]) == OAR_DTYPE_COUNT);
  return dtype >= 0 && dtype < OAR_DTYPE_COUNT ? names[dtype] : "unknown dtype";
}

/// "[2, 3]".
inline std::string shape_str(int32_t ndim, const int64_t* shape) {
  std::string s = "[";
  for (int32_t d = 0; d < ndim; ++d) s += (d ? ", " : "") + std::to_string(shape[d]);
  return s + "]";
}

/// Storage type T computes in Num<T>::C: itself, except f16/bf16 in float.
template <class T>
struct Num {
  using C = T;                          ///< compute type
  static C load(T v) { return v; }      ///< storage -> compute
};
/// f16 computes in float.
template <>
struct Num<f16_t> {
  using C = float;                                                 ///< compute type
  static float load(f16_t v) { return oar_f16_to_f32(v.bits); }    ///< storage -> compute
};
/// bf16 computes in float.
template <>
struct Num<bf16_t> {
  using C = float;                                                 ///< compute type
  static float load(bf16_t v) { return oar_bf16_to_f32(v.bits); }  ///< storage -> compute
};

/// Note [Cast contract]
/// Every oar plugin converts values the same way (the `cast` op, `full`'s
/// value, stores of wider results), so results agree across devices:
///  - float -> int truncates toward zero and saturates at the target's range
///    (NaN -> 0); the limits compare exactly in double, and i64's max rounds
///    up to 2^63, so >= sends it to the max;
///  - int -> int wraps (two's complement), int -> float rounds to nearest;
///  - anything -> bool is v != 0 (NaN is true);
///  - -> f16/bf16 rounds to nearest even through float.
/// `V` is a compute value (arithmetic; load halves with Num first).
template <class D, class V>
inline D cast_to(V v) {
  if constexpr (std::is_same_v<D, f16_t>) {
    return f16_t{oar_f32_to_f16(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<D, bf16_t>) {
    return bf16_t{oar_f32_to_bf16(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<D, bool>) {
    return v != 0;
  } else if constexpr (std::is_floating_point_v<D> || !std::is_floating_point_v<V>) {
    return static_cast<D>(v);
  } else {
    const double d = static_cast<double>(v);
    if (d != d) return D(0);
    if (d <= static_cast<double>(std::numeric_limits<D>::min()))
      return std::numeric_limits<D>::min();
    if (d >= static_cast<double>(std::numeric_limits<D>::max()))
      return std::numeric_limits<D>::max();
    return static_cast<D>(d);
  }
}

/// Traits of one element type for loops that read and write through byte
/// pointers: S is the storage type, C the compute type (f16/bf16 in float,
/// integers and bool in i64), A the accumulator of sums and products (f64
/// for floats, i64 for integers). `store` follows the cast contract.
template <class T>
struct Element {
  using S = T;  ///< storage type
  using C = std::conditional_t<kIsFloat<T>, typename Num<T>::C, int64_t>;  ///< compute type
  using A = std::conditional_t<kIsFloat<T>, double, int64_t>;              ///< accumulator
  static constexpr int32_t dtype = dtype_of<T>();  ///< the OarDType
  static constexpr bool is_float = kIsFloat<T>;    ///< floating family
  /// Reads the element at `p` (any alignment) as C.
  static C load(const void* p) {
    if constexpr (std::is_same_v<T, bool>) {
      unsigned char byte;  // any nonzero byte is true
      std::memcpy(&byte, p, 1);
      return byte != 0;
    } else {
      T s;
      std::memcpy(&s, p, sizeof(T));
      return static_cast<C>(Num<T>::load(s));
    }
  }
  /// Writes `v` to the element at `p` (any alignment) with the cast contract.
  static void store(void* p, C v) {
    T s = cast_to<T>(v);
    std::memcpy(p, &s, sizeof(T));
  }
};

/// Note [Complex casts]
/// Casts with a complex side extend the cast contract as Paddle's cast does:
///  - real -> complex sets the imaginary part to 0 (the real part converts as
///    a float: halves through float, integers rounded to nearest);
///  - complex -> real takes the real part and converts it by the contract
///    above, except -> bool, which is true when either part is nonzero
///    (Paddle's and NumPy's truth of a complex number);
///  - c64 <-> c128 converts each part.
/// `convert<D>(s)` converts one storage value `s` of any dtype to storage D.
template <class D, class S>
inline D convert(S s) {
  if constexpr (kIsComplex<S> && kIsComplex<D>) {
    using R = typename D::value_type;
    return D(static_cast<R>(s.real()), static_cast<R>(s.imag()));
  } else if constexpr (kIsComplex<S>) {
    if constexpr (std::is_same_v<D, bool>) return s.real() != 0 || s.imag() != 0;
    else return cast_to<D>(s.real());
  } else if constexpr (kIsComplex<D>) {
    using R = typename D::value_type;
    if constexpr (std::is_same_v<S, bool>) return D(s ? R(1) : R(0), R(0));
    else return D(static_cast<R>(Num<S>::load(s)), R(0));
  } else if constexpr (std::is_same_v<S, bool>) {
    return cast_to<D>(static_cast<int64_t>(s));
  } else {
    return cast_to<D>(Num<S>::load(s));
  }
}

/// Dtype visitors: call f(T{}) with T the storage type of `dtype` (float,
/// double, f16_t, bf16_t, int8_t, uint8_t, int32_t, int64_t, bool, c64_t,
/// c128_t) when the dtype is in the family, and return whether it was.
/// `visit_all` covers the real dtypes and bool only (its lambdas use
/// Element<T>, comparisons and casts that complex lacks); complex kernels
/// opt in with `visit_complex`.
///   visit_numeric(x.dtype, [&](auto tag) { using T = decltype(tag); ... });
template <class F>
bool visit_float(int32_t dtype, F&& f) {
  switch (dtype) {
    case OAR_DTYPE_F32: f(float{}); return true;
    case OAR_DTYPE_F64: f(double{}); return true;
    case OAR_DTYPE_F16: f(f16_t{}); return true;
    case OAR_DTYPE_BF16: f(bf16_t{}); return true;
    default: return false;
  }
}
/// The integer dtypes i8, u8, i32, i64 (not bool).
template <class F>
bool visit_int(int32_t dtype, F&& f) {
  switch (dtype) {
    case OAR_DTYPE_I8: f(int8_t{}); return true;
    case OAR_DTYPE_U8: f(uint8_t{}); return true;
    case OAR_DTYPE_I32: f(int32_t{}); return true;
    case OAR_DTYPE_I64: f(int64_t{}); return true;
    default: return false;
  }
}
/// Floats and integers, not bool.
template <class F>
bool visit_numeric(int32_t dtype, F&& f) {
  return visit_float(dtype, f) || visit_int(dtype, f);
}
/// c64 and c128.
template <class F>
bool visit_complex(int32_t dtype, F&& f) {
  switch (dtype) {
    case OAR_DTYPE_C64: f(c64_t{}); return true;
    case OAR_DTYPE_C128: f(c128_t{}); return true;
    default: return false;
  }
}
/// Every real dtype and bool (not complex: see visit_complex).
template <class F>
bool visit_all(int32_t dtype, F&& f) {
  if (dtype == OAR_DTYPE_BOOL) {
    f(bool{});
    return true;
  }
  return visit_numeric(dtype, f);
}
/// Dtype-agnostic data movement: f(uintN_t{}) by element size only (1, 2, 4,
/// 8 bytes; 16 bytes, c128, as bytes16_t), every dtype including complex.
template <class F>
bool visit_by_size(int32_t dtype, F&& f) {
  switch (oar_dtype_size(dtype)) {
    case 1: f(uint8_t{}); return true;
    case 2: f(uint16_t{}); return true;
    case 4: f(uint32_t{}); return true;
    case 8: f(uint64_t{}); return true;
    case 16: f(bytes16_t{}); return true;
    default: return false;
  }
}

/// Stores `value` into one element of `dtype` at `p` with the cast contract
/// (an int64 stays exact where the dtype can hold it; a double saturates
/// into integers). Returns false for a dtype outside OarDType.
template <class V>
bool store_as(int32_t dtype, void* p, V value) {
  static_assert(std::is_arithmetic_v<V>, "store_as: pass a compute value");
  return visit_all(dtype, [&](auto tag) {
    auto s = cast_to<decltype(tag)>(value);
    std::memcpy(p, &s, sizeof s);
  });
}

/// Dtype lists for registration tables.
inline constexpr int32_t kFloatDtypes[] = {OAR_DTYPE_F32, OAR_DTYPE_F64, OAR_DTYPE_F16,
                                           OAR_DTYPE_BF16};
/// i8 u8 i32 i64.
inline constexpr int32_t kIntDtypes[] = {OAR_DTYPE_I8, OAR_DTYPE_U8, OAR_DTYPE_I32, OAR_DTYPE_I64};
/// Floats, then integers.
inline constexpr int32_t kNumericDtypes[] = {OAR_DTYPE_F32,  OAR_DTYPE_F64, OAR_DTYPE_F16,
                                             OAR_DTYPE_BF16, OAR_DTYPE_I8,  OAR_DTYPE_U8,
                                             OAR_DTYPE_I32,  OAR_DTYPE_I64};
/// Numeric, then bool.
inline constexpr int32_t kAllDtypes[] = {OAR_DTYPE_F32,  OAR_DTYPE_F64, OAR_DTYPE_F16,
                                         OAR_DTYPE_BF16, OAR_DTYPE_I8,  OAR_DTYPE_U8,
                                         OAR_DTYPE_I32,  OAR_DTYPE_I64, OAR_DTYPE_BOOL};
/// c64 c128 (not in kAllDtypes: kernels register complex explicitly).
inline constexpr int32_t kComplexDtypes[] = {OAR_DTYPE_C64, OAR_DTYPE_C128};

// ---------------------------------------------------------------------------
// Tensors
// ---------------------------------------------------------------------------

/// First element of a view as T* (the view must hold T; contiguous unless
/// the kernel registered OAR_KERNEL_STRIDED).
template <typename T>
T* data(const OarTensorView& view) {
  return reinterpret_cast<T*>(static_cast<char*>(view.data) + view.byte_offset);
}

/// Number of elements of a view.
inline int64_t numel(const OarTensorView& view) { return oar_view_numel(&view); }

/// Maps the linear index of an output element to the element offset of an
/// input with the same ndim whose dims of size 1 broadcast (the host's
/// convention for elementwise ops, docs/kernels.md). Walk outputs in order
/// and call next() after each element.
class BroadcastIndexer {
 public:
  /// Walks `out` in row-major order, reading `in`.
  BroadcastIndexer(const OarTensorView& out, const OarTensorView& in) : ndim_(out.ndim) {
    for (int32_t d = 0; d < ndim_; ++d) {
      shape_[d] = out.shape[d];
      stride_[d] = in.shape[d] == 1 ? 0 : in.strides[d];
      index_[d] = 0;
    }
  }
  /// Element offset (in elements) of the current output element in the input.
  int64_t offset() const { return offset_; }
  /// Advances to the next output element (row-major).
  void next() {
    for (int32_t d = ndim_ - 1; d >= 0; --d) {
      offset_ += stride_[d];
      if (++index_[d] < shape_[d]) return;
      offset_ -= stride_[d] * index_[d];
      index_[d] = 0;
    }
  }

 private:
  int32_t ndim_;
  int64_t shape_[OAR_MAX_NDIM], stride_[OAR_MAX_NDIM], index_[OAR_MAX_NDIM];
  int64_t offset_ = 0;
};

// ---------------------------------------------------------------------------
// Attributes
// ---------------------------------------------------------------------------

/// Reads a kernel's attributes. The one-argument forms require the
/// attribute; the forms with a fallback return it when the attribute is
/// missing. A required attribute that is missing, or one of another kind,
/// reports "<op>: attribute '<name>' is missing or not <kind>" once (the
/// first failure sticks: later reads return their fallback or zero), so a
/// kernel reads everything, then checks `ok()` and returns `status()`.
/// Kinds convert where it is lossless in intent: a number read accepts an
/// int, float or bool; a bool read accepts an int; an int-array read accepts
/// a single int. Values live only during the kernel call.
class Attrs {
 public:
  /// Attributes of the launch `ctx` (read through the host table).
  explicit Attrs(const OarKernelContext& ctx) : host_(host_table()), ctx_(&ctx) {}
  /// Same, from a pointer.
  explicit Attrs(const OarKernelContext* ctx) : host_(host_table()), ctx_(ctx) {}

  /// OAR_ATTR_MISSING, OAR_ATTR_INT, ... for `name`.
  int32_t kind(const char* name) const { return host_->attr_kind(ctx_->attrs, name); }
  /// True when the attribute is given (of any kind).
  bool has(const char* name) const { return kind(name) != OAR_ATTR_MISSING; }

  /// A required int.
  int64_t get_int(const char* name) {
    int64_t v = 0;
    if (status_ == OAR_OK && host_->attr_int(ctx_->attrs, name, &v) != OAR_OK) {
      missing(name, "an int");
      return 0;
    }
    return v;
  }
  /// An int, or `fallback` when missing.
  int64_t get_int(const char* name, int64_t fallback) {
    return has(name) ? get_int(name) : fallback;
  }

  /// A required number (float, int or bool attribute).
  double get_float(const char* name) {
    if (status_ != OAR_OK) return 0;
    switch (kind(name)) {
      case OAR_ATTR_FLOAT: {
        double v = 0;
        if (host_->attr_float(ctx_->attrs, name, &v) == OAR_OK) return v;
        break;
      }
      case OAR_ATTR_INT: {
        int64_t v = 0;
        if (host_->attr_int(ctx_->attrs, name, &v) == OAR_OK) return static_cast<double>(v);
        break;
      }
      case OAR_ATTR_BOOL: {
        int32_t v = 0;
        if (host_->attr_bool(ctx_->attrs, name, &v) == OAR_OK) return v ? 1.0 : 0.0;
        break;
      }
      default:
        break;
    }
    missing(name, "a number");
    return 0;
  }
  /// A number, or `fallback` when missing.
  double get_float(const char* name, double fallback) {
    return has(name) ? get_float(name) : fallback;
  }

  /// A required bool (a bool, or an int read as v != 0).
  bool get_bool(const char* name) {
    if (status_ != OAR_OK) return false;
    if (kind(name) == OAR_ATTR_INT) {
      int64_t v = 0;
      if (host_->attr_int(ctx_->attrs, name, &v) == OAR_OK) return v != 0;
    } else {
      int32_t v = 0;
      if (host_->attr_bool(ctx_->attrs, name, &v) == OAR_OK) return v != 0;
    }
    missing(name, "a bool");
    return false;
  }
  /// A bool, or `fallback` when missing.
  bool get_bool(const char* name, bool fallback) {
    return has(name) ? get_bool(name) : fallback;
  }

  /// A required int array (a single int reads as a list of one), copied.
  std::vector<int64_t> get_ints(const char* name) {
    if (status_ != OAR_OK) return {};
    if (kind(name) == OAR_ATTR_INT) {
      int64_t v = 0;
      if (host_->attr_int(ctx_->attrs, name, &v) == OAR_OK) return {v};
    } else {
      const int64_t* values = nullptr;
      int64_t count = 0;
      if (host_->attr_int_array(ctx_->attrs, name, &values, &count) == OAR_OK)
        return std::vector<int64_t>(values, values + count);
    }
    missing(name, "an int array");
    return {};
  }
  /// An int array, or `fallback` when missing.
  std::vector<int64_t> get_ints(const char* name, std::vector<int64_t> fallback) {
    return has(name) ? get_ints(name) : fallback;
  }

  /// A string, or `fallback` when missing or of another kind (valid during
  /// the call).
  const char* get_string(const char* name, const char* fallback) const {
    const char* value = nullptr;
    return host_->attr_string(ctx_->attrs, name, &value) == OAR_OK && value ? value : fallback;
  }

  /// Attribute `name` as one element of storage type T: an int attribute
  /// converts exactly where T holds it (integers wrap), a number with the
  /// cast contract; `*fallback` when missing and `fallback` is not null.
  template <class T>
  T element(const char* name, const double* fallback) {
    if (fallback != nullptr && !has(name)) return cast_to<T>(*fallback);
    if (kind(name) == OAR_ATTR_INT) return cast_to<T>(get_int(name));
    return cast_to<T>(get_float(name));
  }
  /// `element` for a runtime dtype: writes oar_dtype_size(dtype) bytes to
  /// `out`. Returns ok() (false for an unknown dtype too). A complex dtype
  /// takes its real part from `name` and its imaginary part from the float
  /// attribute `<name>_imag` (0 when absent), as `full`'s `value_imag`.
  bool element_into(const char* name, int32_t dtype, const double* fallback, void* out) {
    bool known = visit_all(dtype, [&](auto tag) {
      auto v = element<decltype(tag)>(name, fallback);
      std::memcpy(out, &v, sizeof v);
    });
    known = known || visit_complex(dtype, [&](auto tag) {
      using T = decltype(tag);
      using R = typename T::value_type;
      const std::string imag_name = std::string(name) + "_imag";
      const double im = has(imag_name.c_str()) ? get_float(imag_name.c_str()) : 0.0;
      T v(element<R>(name, fallback), static_cast<R>(im));
      std::memcpy(out, &v, sizeof v);
    });
    if (!known && status_ == OAR_OK)
      status_ = fail(ctx_, OAR_ERROR_INVALID_ARGUMENT, "attribute '%s' read as unknown dtype %d",
                     name, static_cast<int>(dtype));
    return ok();
  }

  /// False once a read failed.
  bool ok() const { return status_ == OAR_OK; }
  /// OAR_OK, or the code of the first failed read (its message is set).
  OarStatus status() const { return status_; }

 private:
  void missing(const char* name, const char* kind) {
    if (status_ == OAR_OK)
      status_ = fail(ctx_, OAR_ERROR_INVALID_ARGUMENT, "attribute '%s' is missing or not %s",
                     name, kind);
  }
  const OarHostApi* host_;
  const OarKernelContext* ctx_;
  OarStatus status_ = OAR_OK;
};

// ---------------------------------------------------------------------------
// Kernel registration
// ---------------------------------------------------------------------------

/// Registers kernels of one device type; the first failure sticks (and is
/// logged with the op's name).
///   KernelTable table(host, "mydev");
///   table.add("add", {OAR_DTYPE_F32, OAR_DTYPE_F32}, {OAR_DTYPE_F32}, OAR_KERNEL(add_f32));
///   return table.status();
class KernelTable {
 public:
  /// Kernels for `device_type` (a string that outlives the table).
  KernelTable(const OarHostApi* host, const char* device_type) : host_(host), type_(device_type) {}

  /// One signature: `inputs`/`outputs` hold concrete dtypes or OAR_DTYPE_ANY /
  /// OAR_DTYPE_ANY_FLOAT; `accepts` (ABI 1.1, optional) may decline problems.
  KernelTable& add(const char* op, std::initializer_list<int32_t> inputs,
                   std::initializer_list<int32_t> outputs, OarKernelFn fn, uint32_t flags = 0,
                   int32_t (*accepts)(const OarKernelContext*) = nullptr) {
    return add_arrays(op, inputs.begin(), static_cast<int32_t>(inputs.size()), outputs.begin(),
                      static_cast<int32_t>(outputs.size()), fn, flags, accepts);
  }
  /// The same with the dtypes in vectors (signatures built at run time).
  KernelTable& add(const char* op, const std::vector<int32_t>& inputs,
                   const std::vector<int32_t>& outputs, OarKernelFn fn, uint32_t flags = 0,
                   int32_t (*accepts)(const OarKernelContext*) = nullptr) {
    return add_arrays(op, inputs.data(), static_cast<int32_t>(inputs.size()), outputs.data(),
                      static_cast<int32_t>(outputs.size()), fn, flags, accepts);
  }
  /// Any number of inputs of any dtype (variadic ops such as concat).
  KernelTable& add_any_inputs(const char* op, std::initializer_list<int32_t> outputs,
                              OarKernelFn fn, uint32_t flags = 0) {
    return add_arrays(op, nullptr, 0, outputs.begin(), static_cast<int32_t>(outputs.size()), fn,
                      flags, nullptr);
  }
  /// Flags or-ed into every later registration (e.g. OAR_KERNEL_STRIDED for
  /// a plugin whose kernels all read through strides).
  KernelTable& set_default_flags(uint32_t flags) {
    default_flags_ = flags;
    return *this;
  }
  /// The first failure (OAR_OK when every registration succeeded).
  OarStatus status() const { return status_; }
  /// Number of registrations attempted.
  int count() const { return count_; }

 private:
  KernelTable& add_arrays(const char* op, const int32_t* in, int32_t num_in, const int32_t* out,
                          int32_t num_out, OarKernelFn fn, uint32_t flags,
                          int32_t (*accepts)(const OarKernelContext*)) {
    if (status_ != OAR_OK) return *this;
    OarKernelDesc desc = make_struct<OarKernelDesc>();  // the host copies the arrays
    desc.num_input_dtypes = num_in;
    desc.input_dtypes = num_in > 0 ? in : nullptr;
    desc.num_output_dtypes = num_out;
    desc.output_dtypes = num_out > 0 ? out : nullptr;
    desc.flags = flags | default_flags_;
    desc.fn = fn;
    desc.accepts = accepts;
    status_ = host_->register_kernel(host_->host, type_, op, &desc);
    ++count_;
    if (status_ != OAR_OK)
      log(OAR_LOG_ERROR, format("%s: registering kernel %s failed (status %d)", type_, op,
                                static_cast<int>(status_)));
    return *this;
  }
  const OarHostApi* host_;
  const char* type_;
  OarStatus status_ = OAR_OK;
  int count_ = 0;
  uint32_t default_flags_ = 0;
};

/// Classifies the exception being handled for a kernel launch and reports
/// it: std::bad_alloc -> OAR_ERROR_OUT_OF_MEMORY, anything else ->
/// OAR_ERROR_INTERNAL, with a message naming the op. Call inside `catch`.
inline OarStatus report_exception(const OarKernelContext* ctx) noexcept {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return fail(ctx, OAR_ERROR_OUT_OF_MEMORY, "out of host memory for temporary buffers");
  } catch (const std::exception& e) {
    return fail(ctx, OAR_ERROR_INTERNAL, "internal error: %s", e.what());
  } catch (...) {
    return fail(ctx, OAR_ERROR_INTERNAL, "unknown internal error");
  }
}

/// Calls a C++ kernel `OarStatus f(const OarKernelContext&)`, turning an
/// exception into an error status (exceptions must never cross the C ABI).
template <OarStatus (*F)(const OarKernelContext&)>
OarStatus kernel_entry(const OarKernelContext* ctx) noexcept {
  try {
    return F(*ctx);
  } catch (...) {
    return report_exception(ctx);
  }
}
/// The OarKernelFn of a C++ kernel function taking the context by reference.
#define OAR_KERNEL(f) (&::oar::plugin::kernel_entry<&f>)

/// The same guard for a kernel with the C signature (`OarKernelFn`):
/// `&guarded<&my_kernel>` is an OarKernelFn that lets no exception out.
template <OarKernelFn F>
OarStatus guarded(const OarKernelContext* ctx) noexcept {
  try {
    return F(ctx);
  } catch (...) {
    return report_exception(ctx);
  }
}

}  // namespace oar::plugin

#endif  // OAR_PLUGIN_HPP
