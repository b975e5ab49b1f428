// Host services handed to plugins: logging, error reporting, attribute
// access inside kernels, the key-value store, options.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "oar/op.h"
#include "oar/store.h"
#include "runtime/runtime_state.h"

namespace oar {

namespace {
thread_local std::string t_error_message;

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

void host_set_error(void*, OarStatus, const char* message) { t_error_message = message ? message : ""; }

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
    t_error_message = e.what();
    return static_cast<OarStatus>(e.code());
  } catch (const std::exception& e) {
    t_error_message = e.what();
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
}  // namespace

void log_message(int32_t level, const std::string& message) {
  if (level < log_threshold()) return;
  std::fprintf(stderr, "oar %s: %s\n", level_name(level), message.c_str());
}

void host_clear_error() { t_error_message.clear(); }
std::string host_take_error() { return std::exchange(t_error_message, std::string()); }

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
}

}  // namespace oar
