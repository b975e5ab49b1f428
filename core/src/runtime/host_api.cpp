// Host services handed to plugins: logging, error reporting, attribute
// access inside kernels, the key-value store, options, kernel scratch memory.
//
// Note [Error codes from plugins]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A plugin call reports failure twice: it returns a status and it may call
// set_error(code, message) first. The host keeps both, per thread, and
// host_take_failure turns them into the oar::Error the user sees:
//  - The returned status decides whether the call failed. OAR_OK is success
//    even when set_error ran during the call (that message is dropped).
//  - The exception's code is the code given to set_error with the message,
//    when it is a failure code the ABI defines; otherwise the returned
//    status. The message and its code describe the same failure, and the
//    returned status is often generic: a kernel whose scratch_alloc failed
//    (the host set OAR_ERROR_OUT_OF_MEMORY) and that returns
//    OAR_ERROR_INTERNAL still raises out_of_memory, so out-of-memory stays
//    distinguishable from invalid argument whatever the kernel returns.
//  - set_error(OAR_OK, message) sets only the message.
//  - A code outside the ABI's enum becomes internal, with the number in the
//    message. The last set_error before the return wins.
// In Python, out_of_memory raises oar.ResourceExhaustedError, a MemoryError
// (frontends/python/src/module.cpp).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "oar/op.h"
#include "oar/store.h"
#include "runtime/runtime_state.h"

namespace oar {

namespace {
// What the plugin set through set_error on this thread (Note [Error codes from plugins]).
struct PendingError {
  OarStatus code = OAR_OK;
  std::string message;
};
thread_local PendingError t_error;

bool is_failure_code(OarStatus code) { return code >= OAR_ERROR_INVALID_ARGUMENT && code <= OAR_ERROR_NO_DEVICE; }

int32_t log_threshold() {
  static const int32_t level = [] {
    const char* env = std::getenv("OAR_LOG_LEVEL");
    if (!env) return int32_t{OAR_LOG_WARNING};
    std::string v = env;
    if (v == "debug") return int32_t{OAR_LOG_DEBUG};
    if (v == "info") return int32_t{OAR_LOG_INFO};
    if (v == "error") return int32_t{OAR_LOG_ERROR};
    return int32_t{OAR_LOG_WARNING};
  }();
  return level;
}

const char* level_name(int32_t level) {
  switch (level) {
    case OAR_LOG_DEBUG: return "debug";
    case OAR_LOG_INFO: return "info";
    case OAR_LOG_WARNING: return "warning";
    default: return "error";
  }
}

void host_log(void*, int32_t level, const char* message) { log_message(level, message ? message : ""); }

void host_set_error(void*, OarStatus code, const char* message) {
  t_error.code = code;
  t_error.message = message ? message : "";
}

const Attrs& attrs_of(OarAttrs_t handle) { return *reinterpret_cast<const Attrs*>(handle); }

template <typename T>
const T* attr_as(OarAttrs_t handle, const char* name) {
  if (!handle || !name) return nullptr;
  const AttrValue* v = attrs_of(handle).find(name);
  return v ? std::get_if<T>(v) : nullptr;
}

int32_t host_attr_kind(OarAttrs_t handle, const char* name) {
  if (!handle || !name) return OAR_ATTR_MISSING;
  const AttrValue* v = attrs_of(handle).find(name);
  if (!v) return OAR_ATTR_MISSING;
  static constexpr int32_t kinds[] = {OAR_ATTR_INT, OAR_ATTR_FLOAT, OAR_ATTR_BOOL,
                                      OAR_ATTR_STRING, OAR_ATTR_INT_ARRAY, OAR_ATTR_FLOAT_ARRAY};
  return kinds[v->index()];
}

OarStatus host_attr_int(OarAttrs_t h, const char* name, int64_t* value) {
  if (auto* v = attr_as<int64_t>(h, name)) { *value = *v; return OAR_OK; }
  if (auto* b = attr_as<bool>(h, name)) { *value = *b; return OAR_OK; }
  return OAR_ERROR_INVALID_ARGUMENT;
}
OarStatus host_attr_float(OarAttrs_t h, const char* name, double* value) {
  if (auto* v = attr_as<double>(h, name)) { *value = *v; return OAR_OK; }
  if (auto* i = attr_as<int64_t>(h, name)) { *value = static_cast<double>(*i); return OAR_OK; }
  return OAR_ERROR_INVALID_ARGUMENT;
}
OarStatus host_attr_bool(OarAttrs_t h, const char* name, int32_t* value) {
  if (auto* v = attr_as<bool>(h, name)) { *value = *v ? 1 : 0; return OAR_OK; }
  if (auto* i = attr_as<int64_t>(h, name)) { *value = *i != 0; return OAR_OK; }
  return OAR_ERROR_INVALID_ARGUMENT;
}
OarStatus host_attr_string(OarAttrs_t h, const char* name, const char** value) {
  if (auto* v = attr_as<std::string>(h, name)) { *value = v->c_str(); return OAR_OK; }
  return OAR_ERROR_INVALID_ARGUMENT;
}
OarStatus host_attr_int_array(OarAttrs_t h, const char* name, const int64_t** values, int64_t* count) {
  if (auto* v = attr_as<std::vector<int64_t>>(h, name)) {
    *values = v->data();
    *count = static_cast<int64_t>(v->size());
    return OAR_OK;
  }
  return OAR_ERROR_INVALID_ARGUMENT;
}
OarStatus host_attr_float_array(OarAttrs_t h, const char* name, const double** values, int64_t* count) {
  if (auto* v = attr_as<std::vector<double>>(h, name)) {
    *values = v->data();
    *count = static_cast<int64_t>(v->size());
    return OAR_OK;
  }
  return OAR_ERROR_INVALID_ARGUMENT;
}

Store* store_of(OarStore_t handle) { return reinterpret_cast<Store*>(handle); }

// Runs a store call, turning oar::Error into a status plus set_error.
template <typename F>
OarStatus guarded(F&& f) {
  try {
    f();
    return OAR_OK;
  } catch (const Error& e) {
    host_set_error(nullptr, static_cast<OarStatus>(e.code()), e.what());
    return static_cast<OarStatus>(e.code());
  } catch (const std::exception& e) {
    host_set_error(nullptr, OAR_ERROR_INTERNAL, e.what());
    return OAR_ERROR_INTERNAL;
  }
}

OarStatus host_store_set(OarStore_t s, const char* key, const void* value, uint64_t size) {
  if (!s || !key) return OAR_ERROR_INVALID_ARGUMENT;
  return guarded([&] {
    auto* bytes = static_cast<const uint8_t*>(value);
    store_of(s)->set(key, std::vector<uint8_t>(bytes, bytes + size));
  });
}
OarStatus host_store_get(OarStore_t s, const char* key, int64_t timeout_ms, void** value, uint64_t* size) {
  if (!s || !key || !value || !size) return OAR_ERROR_INVALID_ARGUMENT;
  return guarded([&] {
    auto bytes = store_of(s)->get(key, timeout_ms);
    void* buffer = std::malloc(bytes.empty() ? 1 : bytes.size());
    if (!bytes.empty()) std::memcpy(buffer, bytes.data(), bytes.size());
    *value = buffer;
    *size = bytes.size();
  });
}
OarStatus host_store_add(OarStore_t s, const char* key, int64_t delta, int64_t* result) {
  if (!s || !key) return OAR_ERROR_INVALID_ARGUMENT;
  return guarded([&] {
    int64_t r = store_of(s)->add(key, delta);
    if (result) *result = r;
  });
}
OarStatus host_store_wait(OarStore_t s, const char* key, int64_t timeout_ms) {
  if (!s || !key) return OAR_ERROR_INVALID_ARGUMENT;
  return guarded([&] { store_of(s)->wait(key, timeout_ms); });
}
void host_store_free(void* value) { std::free(value); }

const char* host_get_option(void*, const char* name) { return name ? std::getenv(name) : nullptr; }

// Note [Kernel scratch memory]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// scratch_alloc/scratch_free (ABI 1.1) hand a kernel temporary device memory
// from the caching allocator of the launch's device, so a workspace costs no
// plugin malloc in steady state and shows in the allocator's stats like any
// tensor (allocated while held, cached after the free).
//  - The device: ctx->device_type and ctx->device when the context is a 1.1
//    one with device_type set; otherwise the launch running on this thread,
//    which the host names with a LaunchScope around every kernel call
//    (runtime_state.h). Outside a launch, scratch_alloc fails with
//    invalid argument.
//  - Order: every kernel of a device runs on the device's compute stream
//    (Note [Stream-ordered reuse] in caching_allocator.h), so a block freed
//    there may go to the next kernel at once, even while work the kernel
//    queued still reads it. A kernel running on another stream (a static
//    program's side stream) frees its scratch after that stream is
//    synchronized, since the compute stream does not order it.
//  - Failure: NULL, with set_error(OAR_ERROR_OUT_OF_MEMORY, the allocator's
//    sentence); a kernel that passes the failure on raises out_of_memory
//    whatever status it returns (Note [Error codes from plugins]).
struct ScratchTarget {
  DeviceBackend* backend = nullptr;
  int device = 0;
};

ScratchTarget scratch_target(void* host, const OarKernelContext* ctx, const char* what) {
  ScratchTarget target{t_launch_device.backend, t_launch_device.device};
  if (ctx && ctx->struct_size >= OAR_STRUCT_SIZE(OarKernelContext, device_type) && ctx->device_type) {
    RuntimeState* runtime = runtime_of_host(host);
    target.backend = runtime ? runtime->find(ctx->device_type) : nullptr;
    target.device = ctx->device;
    if (!target.backend) {
      throw Error(ErrorCode::invalid_argument, std::string(what) + ": device type '" + ctx->device_type +
                                                   "' of the kernel context is not one this host provides");
    }
  } else if (!target.backend) {
    throw Error(ErrorCode::invalid_argument, std::string(what) +
                                                 ": called outside a kernel launch (the context names no "
                                                 "device type and no launch is running on this thread)");
  }
  target.backend->slot(target.device);  // throws for a device that does not exist
  return target;
}

void* host_scratch_alloc(void* host, const OarKernelContext* ctx, uint64_t bytes) {
  try {
    ScratchTarget t = scratch_target(host, ctx, "scratch_alloc");
    return t.backend->slot(t.device).allocator->allocate(bytes);
  } catch (const Error& e) {
    std::string op = ctx && ctx->op_name ? std::string(ctx->op_name) + ": " : std::string();
    host_set_error(nullptr, static_cast<OarStatus>(e.code()), (op + "kernel scratch memory: " + e.what()).c_str());
  } catch (const std::exception& e) {
    host_set_error(nullptr, OAR_ERROR_OUT_OF_MEMORY, (std::string("scratch_alloc: ") + e.what()).c_str());
  }
  return nullptr;
}

void host_scratch_free(void* host, const OarKernelContext* ctx, void* ptr) {
  if (!ptr) return;
  try {
    ScratchTarget t = scratch_target(host, ctx, "scratch_free");
    DeviceBackend& b = *t.backend;
    DeviceSlot& slot = b.slot(t.device);
    if (ctx && ctx->stream && ctx->stream != slot.stream) {
      host_clear_error();
      b.check(b.api.stream_synchronize(b.api.impl, t.device, ctx->stream), "stream_synchronize before scratch_free");
    }
    if (!slot.allocator->release(ptr)) {
      log_message(OAR_LOG_WARNING, b.type + ":" + std::to_string(t.device) + ": scratch_free of a pointer " +
                                       "scratch_alloc did not return" +
                                       (ctx && ctx->op_name ? std::string(" (kernel ") + ctx->op_name + ")" : ""));
    }
  } catch (const std::exception& e) {
    log_message(OAR_LOG_WARNING, e.what());
  }
}
}  // namespace

thread_local LaunchDevice t_launch_device;

bool log_enabled(int32_t level) { return level >= log_threshold(); }

void log_message(int32_t level, const std::string& message) {
  if (level < log_threshold()) return;
  std::fprintf(stderr, "oar %s: %s\n", level_name(level), message.c_str());
}

void host_clear_error() {
  t_error.code = OAR_OK;
  t_error.message.clear();
}
std::string host_take_error() {
  t_error.code = OAR_OK;
  return std::exchange(t_error.message, std::string());
}

PluginFailure host_take_failure(OarStatus returned) {
  OarStatus code = is_failure_code(t_error.code) ? t_error.code : returned;
  PluginFailure failure{ErrorCode::internal, host_take_error()};
  if (is_failure_code(code)) {
    failure.code = static_cast<ErrorCode>(code);
  } else {
    failure.message += (failure.message.empty() ? "" : " ") + std::string("(the plugin returned status ") +
                       std::to_string(code) + ", which ABI " + std::to_string(OAR_ABI_VERSION_MAJOR) +
                       " does not define)";
  }
  return failure;
}

OarAttrs_t attrs_handle(const Attrs& attrs) {
  return reinterpret_cast<OarAttrs_t>(const_cast<Attrs*>(&attrs));
}

// Fills everything but register_device/register_kernel (plugin_loader.cpp).
void fill_host_services(OarHostApi& api) {
  api.log = host_log;
  api.set_error = host_set_error;
  api.attr_kind = host_attr_kind;
  api.attr_int = host_attr_int;
  api.attr_float = host_attr_float;
  api.attr_bool = host_attr_bool;
  api.attr_string = host_attr_string;
  api.attr_int_array = host_attr_int_array;
  api.attr_float_array = host_attr_float_array;
  api.store_set = host_store_set;
  api.store_get = host_store_get;
  api.store_add = host_store_add;
  api.store_wait = host_store_wait;
  api.store_free = host_store_free;
  api.get_option = host_get_option;
  api.scratch_alloc = host_scratch_alloc;
  api.scratch_free = host_scratch_free;
}

}  // namespace oar
