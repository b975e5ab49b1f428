/// \file plugin.hpp
/// Optional, header-only C++17 layer over the plugin ABI for plugin authors.
/// It depends only on oar/plugin_api.h and oar/plugin_util.h (never on the
/// oar core) and adds no exported symbol: everything is inline and ends up
/// hidden in the plugin. It offers
///  - error reporting and logging through the host (`fail`, `log`),
///  - the init handshake (`accept_host`) and versioned-struct helpers,
///  - typed tensor access and a broadcasting indexer for kernels,
///  - attribute reads with defaults (`Attrs`),
///  - a kernel table that registers C++ kernels and keeps exceptions from
///    crossing the C ABI (`KernelTable`, `OAR_KERNEL`).
/// A plugin may use any part of it, or none: the C header alone is enough.
#ifndef OAR_PLUGIN_HPP
#define OAR_PLUGIN_HPP

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <string>
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

/// printf into a std::string.
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
/// table that reaches the functions plugins need. Returns OAR_OK or the
/// error to return from oar_plugin_init.
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
  if (!OAR_HOST_HAS(host, attr_float_array) || !host->register_device || !host->register_kernel) {
    return fail(OAR_ERROR_UNSUPPORTED,
                format("%s: the host table lacks register_device, register_kernel "
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
// Tensors
// ---------------------------------------------------------------------------

/// The OarDType of a C++ element type.
template <typename T>
constexpr int32_t dtype_of();
template <>
constexpr int32_t dtype_of<float>() {
  return OAR_DTYPE_F32;
}
template <>
constexpr int32_t dtype_of<double>() {
  return OAR_DTYPE_F64;
}
template <>
constexpr int32_t dtype_of<int8_t>() {
  return OAR_DTYPE_I8;
}
template <>
constexpr int32_t dtype_of<uint8_t>() {
  return OAR_DTYPE_U8;
}
template <>
constexpr int32_t dtype_of<int32_t>() {
  return OAR_DTYPE_I32;
}
template <>
constexpr int32_t dtype_of<int64_t>() {
  return OAR_DTYPE_I64;
}

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

/// Reads a kernel's attributes; missing ones give the default.
class Attrs {
 public:
  explicit Attrs(const OarKernelContext& ctx) : host_(host_table()), attrs_(ctx.attrs) {}
  bool has(const char* name) const { return host_->attr_kind(attrs_, name) != OAR_ATTR_MISSING; }
  int64_t get_int(const char* name, int64_t fallback = 0) const {
    int64_t v = fallback;
    return host_->attr_int(attrs_, name, &v) == OAR_OK ? v : fallback;
  }
  double get_float(const char* name, double fallback = 0) const {
    double v = fallback;
    if (host_->attr_float(attrs_, name, &v) == OAR_OK) return v;
    int64_t i = 0;  // an int given where a float is read
    return host_->attr_int(attrs_, name, &i) == OAR_OK ? static_cast<double>(i) : fallback;
  }
  bool get_bool(const char* name, bool fallback = false) const {
    int32_t v = fallback;
    return host_->attr_bool(attrs_, name, &v) == OAR_OK ? v != 0 : fallback;
  }
  std::vector<int64_t> get_ints(const char* name) const {
    const int64_t* values = nullptr;
    int64_t count = 0;
    if (host_->attr_int_array(attrs_, name, &values, &count) != OAR_OK) return {};
    return std::vector<int64_t>(values, values + count);
  }

 private:
  const OarHostApi* host_;
  OarAttrs_t attrs_;
};

// ---------------------------------------------------------------------------
// Kernel registration
// ---------------------------------------------------------------------------

/// Registers kernels of one device type; the first failure sticks.
///   KernelTable table(host, "mydev");
///   table.add("add", {OAR_DTYPE_F32, OAR_DTYPE_F32}, {OAR_DTYPE_F32}, OAR_KERNEL(add_f32));
///   return table.status();
class KernelTable {
 public:
  KernelTable(const OarHostApi* host, const char* device_type) : host_(host), type_(device_type) {}
  /// `inputs`/`outputs`: concrete dtypes or OAR_DTYPE_ANY / OAR_DTYPE_ANY_FLOAT.
  KernelTable& add(const char* op, std::initializer_list<int32_t> inputs,
                   std::initializer_list<int32_t> outputs, OarKernelFn fn, uint32_t flags = 0) {
    if (status_ != OAR_OK) return *this;
    std::vector<int32_t> in(inputs), out(outputs);  // the host copies the arrays
    OarKernelDesc desc = make_struct<OarKernelDesc>();
    desc.num_input_dtypes = static_cast<int32_t>(in.size());
    desc.input_dtypes = in.data();
    desc.num_output_dtypes = static_cast<int32_t>(out.size());
    desc.output_dtypes = out.data();
    desc.flags = flags;
    desc.fn = fn;
    status_ = host_->register_kernel(host_->host, type_, op, &desc);
    ++count_;
    return *this;
  }
  OarStatus status() const { return status_; }
  int count() const { return count_; }

 private:
  const OarHostApi* host_;
  const char* type_;
  OarStatus status_ = OAR_OK;
  int count_ = 0;
};

/// Calls a C++ kernel `OarStatus f(const OarKernelContext&)`, turning an
/// exception into OAR_ERROR_INTERNAL with its message (exceptions must never
/// cross the C ABI).
template <OarStatus (*F)(const OarKernelContext&)>
OarStatus kernel_entry(const OarKernelContext* ctx) noexcept {
  try {
    return F(*ctx);
  } catch (const std::exception& e) {
    return fail(OAR_ERROR_INTERNAL,
                format("%s: %s", ctx->op_name ? ctx->op_name : "kernel", e.what()));
  } catch (...) {
    return fail(OAR_ERROR_INTERNAL,
                format("%s: unknown exception", ctx->op_name ? ctx->op_name : "kernel"));
  }
}
/// The OarKernelFn of a C++ kernel function.
#define OAR_KERNEL(f) (&::oar::plugin::kernel_entry<&f>)

}  // namespace oar::plugin

#endif  // OAR_PLUGIN_HPP
