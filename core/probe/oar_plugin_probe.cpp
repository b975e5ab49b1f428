// oar-plugin-probe: loads one plugin and runs its oar_plugin_init in this
// short-lived process, writing a report (runtime/probe_report.h) to fd 3 as
// it goes, so the host learns whether init crashes, exits or hangs without
// risking its own process. See Note [Plugin probe] in
// core/src/runtime/plugin_probe.cpp.
//
// usage: oar-plugin-probe PLUGIN.so   (report on fd 3; stdout/stderr unused)
//
// The host table here is a stand-in: registrations are accepted and
// forgotten, logs dropped, options read from the environment like the real
// host's. Nothing in this process outlives it.
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "oar/plugin_api.h"
#include "runtime/probe_report.h"

namespace {

constexpr int kReportFd = 3;

void report(const std::string& line) {
  size_t off = 0;
  while (off < line.size()) {
    ssize_t n = write(kReportFd, line.data() + off, line.size() - off);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

// Every shared object loaded so far that has a path (the plugin, its
// dependencies, what its init opened), for the host's probe cache.
void report_libraries() {
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void*) {
        if (info->dlpi_name && info->dlpi_name[0] == '/') report(oar::probe_line_library(info->dlpi_name));
        return 0;
      },
      nullptr);
}

OarStatus register_device(void*, const OarDeviceApi* api) {
  return api && api->device_type ? OAR_OK : OAR_ERROR_INVALID_ARGUMENT;
}
OarStatus register_kernel(void*, const char* type, const char* op, const OarKernelDesc* desc) {
  return type && op && desc && desc->fn ? OAR_OK : OAR_ERROR_INVALID_ARGUMENT;
}
void log(void*, int32_t, const char*) {}
void set_error(void*, OarStatus, const char*) {}
int32_t attr_kind(OarAttrs_t, const char*) { return OAR_ATTR_MISSING; }
OarStatus attr_int(OarAttrs_t, const char*, int64_t*) { return OAR_ERROR_INVALID_ARGUMENT; }
OarStatus attr_float(OarAttrs_t, const char*, double*) { return OAR_ERROR_INVALID_ARGUMENT; }
OarStatus attr_bool(OarAttrs_t, const char*, int32_t*) { return OAR_ERROR_INVALID_ARGUMENT; }
OarStatus attr_string(OarAttrs_t, const char*, const char**) { return OAR_ERROR_INVALID_ARGUMENT; }
OarStatus attr_ints(OarAttrs_t, const char*, const int64_t**, int64_t*) { return OAR_ERROR_INVALID_ARGUMENT; }
OarStatus attr_floats(OarAttrs_t, const char*, const double**, int64_t*) { return OAR_ERROR_INVALID_ARGUMENT; }
OarStatus store_set(OarStore_t, const char*, const void*, uint64_t) { return OAR_ERROR_UNSUPPORTED; }
OarStatus store_get(OarStore_t, const char*, int64_t, void**, uint64_t*) { return OAR_ERROR_UNSUPPORTED; }
OarStatus store_add(OarStore_t, const char*, int64_t, int64_t*) { return OAR_ERROR_UNSUPPORTED; }
OarStatus store_wait(OarStore_t, const char*, int64_t) { return OAR_ERROR_UNSUPPORTED; }
void store_free(void* p) { std::free(p); }
const char* get_option(void*, const char* name) { return name ? std::getenv(name) : nullptr; }
// No kernel runs in the probe; the entries exist so the table a plugin's
// init sees is the real host's (ABI 1.1).
void* scratch_alloc(void*, const OarKernelContext*, uint64_t) { return nullptr; }
void scratch_free(void*, const OarKernelContext*, void*) {}

OarHostApi make_host() {
  OarHostApi h;
  std::memset(&h, 0, sizeof h);
  h.struct_size = sizeof h;
  h.abi_major = OAR_ABI_VERSION_MAJOR;
  h.abi_minor = OAR_ABI_VERSION_MINOR;
  h.register_device = register_device;
  h.register_kernel = register_kernel;
  h.log = log;
  h.set_error = set_error;
  h.attr_kind = attr_kind;
  h.attr_int = attr_int;
  h.attr_float = attr_float;
  h.attr_bool = attr_bool;
  h.attr_string = attr_string;
  h.attr_int_array = attr_ints;
  h.attr_float_array = attr_floats;
  h.store_set = store_set;
  h.store_get = store_get;
  h.store_add = store_add;
  h.store_wait = store_wait;
  h.store_free = store_free;
  h.get_option = get_option;
  h.scratch_alloc = scratch_alloc;
  h.scratch_free = scratch_free;
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  report(std::string(oar::kProbeReportHeader) + "\n");
  report(oar::probe_line_stage(oar::ProbeStage::load));
  void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* error = dlerror();
    report(oar::probe_line_load_error(error ? error : "dlopen failed"));
  } else if (void* symbol = dlsym(library, OAR_PLUGIN_INIT_SYMBOL); !symbol) {
    report(oar::probe_line_no_entry());
  } else {
    report_libraries();
    report(oar::probe_line_stage(oar::ProbeStage::init));
    auto init = reinterpret_cast<OarPluginInitFn>(symbol);
    OarHostApi host = make_host();
    OarPluginInfo info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    try {
      report(oar::probe_line_init_status(init(&host, &info)));
    } catch (...) {
      report(oar::probe_line_init_threw());
    }
    report_libraries();
  }
  report(oar::probe_line_stage(oar::ProbeStage::returned));
  report(oar::probe_line_done());
  // No exit handlers or static destructors of the plugin: only loading and
  // init are probed, and threads the plugin started die with the process.
  _exit(0);
}
