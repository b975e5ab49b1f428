// The CPU device plugin: entry point and device table.
//
// Note [CPU streams are synchronous]: the CPU device runs all work in the
// calling thread at launch — a kernel has finished when its function
// returns, an "async" copy is a plain copy. It has one in-order stream, the
// default one (NULL), and nothing to wait for, so it advertises no streams
// and no events (ABI 1.1: stream_create/destroy, stream_query, the event
// group and stream_wait_event are NULL). The host then runs everything on
// the default stream and never records or waits for events; the static
// executor schedules one stream. stream_synchronize (required) is kept and
// returns at once. Memory is ordinary host memory
// (OAR_DEVICE_HOST_ADDRESSABLE): the host may read it directly.
//
// Collectives go through Gloo's TCP transport (cpu_collectives.cpp, Note
// [CPU collectives through Gloo]); like kernels, they run in the calling
// thread and have finished when they return.
#include <sys/mman.h>
#include <omp.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>

#include "blas_gemm.h"
#include "cpu_common.h"

namespace oar_cpu {
namespace {

constexpr const char* kPluginVersion = "0.1.0";

/// Plugin-wide state (the `impl` of the device table).
struct CpuState {
  std::mutex mutex;
  std::unordered_map<void*, uint64_t> sizes;  // live allocations
  uint64_t used = 0;
  std::string name;
  std::string isa;
  bool has_bf16 = false;
};

CpuState* g_state = nullptr;  // owned; deleted at shutdown

/// Reads "model name" and the flags line of /proc/cpuinfo.
void probe_cpu(CpuState* s) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::string flags;
  while (std::getline(in, line)) {
    auto value = [&] {
      size_t colon = line.find(':');
      if (colon == std::string::npos) return std::string();
      size_t start = line.find_first_not_of(" \t", colon + 1);
      return start == std::string::npos ? std::string() : line.substr(start);
    };
    if (s->name.empty() && line.rfind("model name", 0) == 0) s->name = value();
    if (flags.empty() && (line.rfind("flags", 0) == 0 || line.rfind("Features", 0) == 0)) {
      flags.assign(1, ' ');
      flags += value();
      flags += ' ';
    }
  }
  if (s->name.empty()) s->name = "cpu";
  auto has = [&](const char* f) {
    return flags.find(std::string(" ") + f + " ") != std::string::npos;
  };
#if defined(__x86_64__)
  s->isa = "x86-64";
  if (has("avx512_bf16")) {
    s->isa += " avx512_bf16";
  } else if (has("avx512f")) {
    s->isa += " avx512f";
  } else if (has("avx2")) {
    s->isa += " avx2";
  }
  if (has("amx_tile")) s->isa += " amx";
  s->has_bf16 = has("avx512_bf16");
#elif defined(__aarch64__)
  s->isa = "aarch64";
  if (has("sve")) s->isa += " sve";
  s->has_bf16 = has("bf16");
#else
  s->isa = "unknown";
#endif
}

uint64_t total_memory() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

uint64_t available_memory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemAvailable:") return kb * 1024;
  }
  long pages = sysconf(_SC_AVPHYS_PAGES);
  long page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

CpuState* state(void* impl) { return static_cast<CpuState*>(impl); }

OarStatus check_device(int32_t device) {
  if (device != 0) {
    return fail_plain(OAR_ERROR_INVALID_ARGUMENT, "device index %d is out of range (1 cpu device)",
                      device);
  }
  return OAR_OK;
}

// --- device ---

OarStatus device_count(void*, int32_t* count) {
  *count = 1;
  return OAR_OK;
}

OarStatus device_properties(void* impl, int32_t device, OarDeviceProperties* props) {
  if (OarStatus s = check_device(device)) return s;
  CpuState* st = state(impl);
  const size_t size = props->struct_size;
  auto fits = [&](size_t end) { return end <= size; };
  if (fits(offsetof(OarDeviceProperties, name) + sizeof props->name)) {
    std::snprintf(props->name, sizeof props->name, "%s", st->name.c_str());
  }
  if (fits(OAR_STRUCT_SIZE(OarDeviceProperties, isa))) {
    std::snprintf(props->isa, sizeof props->isa, "%s", st->isa.c_str());
  }
  if (fits(OAR_STRUCT_SIZE(OarDeviceProperties, total_memory)))
    props->total_memory = total_memory();
  if (fits(OAR_STRUCT_SIZE(OarDeviceProperties, free_memory)))
    props->free_memory = available_memory();
  if (fits(OAR_STRUCT_SIZE(OarDeviceProperties, compute_units)))
    props->compute_units = g_configured_threads;
  if (fits(OAR_STRUCT_SIZE(OarDeviceProperties, flags))) {
    props->flags = OAR_DEVICE_HOST_ADDRESSABLE | OAR_DEVICE_SUPPORTS_F16 |
                   (st->has_bf16 ? uint32_t{OAR_DEVICE_SUPPORTS_BF16} : 0u);
  }
  return OAR_OK;
}

OarStatus set_device(void*, int32_t device) { return check_device(device); }

OarStatus synchronize_device(void*, int32_t device) { return check_device(device); }

// --- memory ---

OarStatus cpu_malloc(void* impl, int32_t device, uint64_t bytes, uint64_t alignment, void** ptr) {
  if (OarStatus s = check_device(device)) return s;
  uint64_t align = alignment < 64 ? 64 : alignment;
  if ((align & (align - 1)) != 0) {
    return fail_plain(OAR_ERROR_INVALID_ARGUMENT, "malloc: alignment %llu is not a power of two",
                      static_cast<unsigned long long>(alignment));
  }
  // Note [Huge pages for big tensors]: blocks of 4 MiB and more are 2 MiB
  // aligned and advised as transparent huge pages (as numpy does for its
  // arrays): a streaming kernel over 4 KiB pages walks the page table every
  // 64 cache lines; a [4096, 768] f32 sum over the last dim read a numpy
  // array's memory ~1.5x faster than oar's. Where THP is off the advice is
  // ignored.
  constexpr uint64_t kHugePage = uint64_t{2} << 20;
  const bool huge = bytes >= 2 * kHugePage;
  if (huge && align < kHugePage) align = kHugePage;
  // aligned_alloc wants a size that is a multiple of the alignment; 0 bytes
  // still returns a distinct pointer.
  uint64_t rounded = bytes == 0 ? align : (bytes + align - 1) / align * align;
  void* p = rounded < bytes ? nullptr : std::aligned_alloc(align, rounded);
  if (p == nullptr) {
    return fail_plain(OAR_ERROR_OUT_OF_MEMORY,
                      "malloc of %llu bytes failed (available: %llu bytes)",
                      static_cast<unsigned long long>(bytes),
                      static_cast<unsigned long long>(available_memory()));
  }
#ifdef MADV_HUGEPAGE
  if (huge) madvise(p, rounded, MADV_HUGEPAGE);  // advice only: failure changes nothing
#endif
  CpuState* st = state(impl);
  try {
    std::lock_guard<std::mutex> lock(st->mutex);
    st->sizes.emplace(p, bytes);
    st->used += bytes;
  } catch (const std::bad_alloc&) {
    std::free(p);
    return fail_plain(OAR_ERROR_OUT_OF_MEMORY, "malloc: out of memory for bookkeeping");
  }
  *ptr = p;
  return OAR_OK;
}

OarStatus cpu_free(void* impl, int32_t device, void* ptr) {
  if (OarStatus s = check_device(device)) return s;
  if (ptr == nullptr) return OAR_OK;
  CpuState* st = state(impl);
  {
    std::lock_guard<std::mutex> lock(st->mutex);
    auto it = st->sizes.find(ptr);
    if (it == st->sizes.end()) {
      return fail_plain(OAR_ERROR_INVALID_ARGUMENT, "free: %p was not allocated by this device",
                        ptr);
    }
    st->used -= it->second;
    st->sizes.erase(it);
  }
  std::free(ptr);
  return OAR_OK;
}

OarStatus copy_bytes(int32_t device, void* dst, const void* src, uint64_t bytes) {
  if (OarStatus s = check_device(device)) return s;
  if (bytes != 0 && dst != src) std::memmove(dst, src, bytes);
  return OAR_OK;
}

OarStatus memcpy_sync(void*, int32_t device, void* dst, const void* src, uint64_t bytes) {
  return copy_bytes(device, dst, src, bytes);
}

OarStatus memcpy_async(void*, int32_t device, void* dst, const void* src, uint64_t bytes,
                       OarStream_t) {
  return copy_bytes(device, dst, src, bytes);  // Note [CPU streams are synchronous]
}

OarStatus memcpy_peer(void*, int32_t dst_device, void* dst, int32_t src_device, const void* src,
                      uint64_t bytes) {
  if (OarStatus s = check_device(src_device)) return s;
  return copy_bytes(dst_device, dst, src, bytes);
}

OarStatus memset_async(void*, int32_t device, void* ptr, int32_t value, uint64_t bytes,
                       OarStream_t) {
  if (OarStatus s = check_device(device)) return s;
  if (bytes != 0) std::memset(ptr, value, bytes);
  return OAR_OK;
}

OarStatus memory_stats(void* impl, int32_t device, OarMemoryStats* stats) {
  if (OarStatus s = check_device(device)) return s;
  CpuState* st = state(impl);
  uint64_t used;
  {
    std::lock_guard<std::mutex> lock(st->mutex);
    used = st->used;
  }
  const size_t size = stats->struct_size;
  if (OAR_STRUCT_SIZE(OarMemoryStats, used) <= size) stats->used = used;
  if (OAR_STRUCT_SIZE(OarMemoryStats, free) <= size) stats->free = available_memory();
  if (OAR_STRUCT_SIZE(OarMemoryStats, total) <= size) stats->total = total_memory();
  return OAR_OK;
}

// --- the default stream: Note [CPU streams are synchronous] ---

OarStatus stream_synchronize(void*, int32_t device, OarStream_t) { return check_device(device); }

void shutdown(void* impl) {
  if (impl == g_state) {
    delete g_state;
    g_state = nullptr;
  }
}

/// The host's setting `name` (an OAR_* option), or null where it is unset
/// or the host predates get_option.
const char* host_option(const OarHostApi* host, const char* name) {
  if (host->struct_size < OAR_STRUCT_SIZE(OarHostApi, get_option) || host->get_option == nullptr) return nullptr;
  return host->get_option(host->host, name);
}

/// Threads of every parallel region: OAR_NUM_THREADS, else all cores.
int choose_num_threads(const OarHostApi* host) {
  int n = omp_get_num_procs();
  const char* option = host_option(host, "OAR_NUM_THREADS");
  if (option != nullptr && *option != '\0') {
    char* end = nullptr;
    long v = std::strtol(option, &end, 10);
    if (end != option && *end == '\0' && v > 0 && v <= 4096) {
      n = static_cast<int>(v);
    } else if (host->log != nullptr) {
      char message[200];
      std::snprintf(message, sizeof message,
                    "cpu plugin: ignoring OAR_NUM_THREADS='%.40s' (expected a positive integer)",
                    option);
      host->log(host->host, OAR_LOG_WARNING, message);
    }
  }
  return n < 1 ? 1 : n;
}

/// OAR_ADAPTIVE_THREADS=0 keeps every region at the configured thread count
/// even on a busy machine (Note [Threads on a busy machine], cpu_common.h).
bool adaptive_threads(const OarHostApi* host) {
  const char* option = host_option(host, "OAR_ADAPTIVE_THREADS");
  return option == nullptr || std::strcmp(option, "0") != 0;
}

/// Output bytes from which elementwise ops stream their stores (Note
/// [Streaming stores for big outputs], cpu_common.h): OAR_CPU_STREAM_MIN_BYTES
/// (a non-negative integer), else the L3 size, else 32 MiB.
int64_t stream_min_bytes(const OarHostApi* host) {
  const char* option = host_option(host, "OAR_CPU_STREAM_MIN_BYTES");
  if (option != nullptr && *option != '\0') {
    char* end = nullptr;
    const long long v = std::strtoll(option, &end, 10);
    if (end != option && *end == '\0' && v >= 0) return static_cast<int64_t>(v);
    char message[200];
    std::snprintf(message, sizeof message,
                  "cpu plugin: ignoring OAR_CPU_STREAM_MIN_BYTES='%.40s' (expected a non-negative integer)",
                  option);
    host->log(host->host, OAR_LOG_WARNING, message);
  }
  // sysfs first: in a VM, sysconf (cpuid) may report the host package's L3
  // (64 MB on the Zen 1 VM, whose sysfs and lscpu say 8 MB).
  long long kib = 0;
  if (FILE* f = std::fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r")) {
    if (std::fscanf(f, "%lldK", &kib) != 1) kib = 0;
    std::fclose(f);
  }
  if (kib > 0) return static_cast<int64_t>(kib) << 10;
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return l3 > 0 ? static_cast<int64_t>(l3) : int64_t{32} << 20;
}

/// OAR_CPU_SGEMM=auto|onednn|openblas (Note [f32 GEMM on AVX2 machines]);
/// anything else is reported and treated as auto.
SgemmBackend sgemm_backend(const OarHostApi* host) {
  const char* option = host_option(host, "OAR_CPU_SGEMM");
  if (option == nullptr || *option == '\0' || std::strcmp(option, "auto") == 0) return SgemmBackend::automatic;
  if (std::strcmp(option, "onednn") == 0) return SgemmBackend::onednn;
  if (std::strcmp(option, "openblas") == 0) return SgemmBackend::openblas;
  char message[200];
  std::snprintf(message, sizeof message,
                "cpu plugin: ignoring OAR_CPU_SGEMM='%.40s' (expected auto, onednn or openblas)", option);
  host->log(host->host, OAR_LOG_WARNING, message);
  return SgemmBackend::automatic;
}

}  // namespace
}  // namespace oar_cpu

extern "C" OAR_PLUGIN_EXPORT OarStatus oar_plugin_init(const OarHostApi* host,
                                                       OarPluginInfo* info) {
  using namespace oar_cpu;
  if (OarStatus s = op::accept_host(host, info, "oar-cpu")) return s;
  g_host = host;
  g_configured_threads = choose_num_threads(host);
  g_num_threads = g_configured_threads;
  g_adaptive_threads = adaptive_threads(host);
  g_sgemm_backend = sgemm_backend(host);
  g_stream_min_bytes = stream_min_bytes(host);
  {
    char line[160];
    std::snprintf(line, sizeof line,
                  "cpu plugin: elementwise outputs of %lld bytes or more use streaming stores",
                  static_cast<long long>(g_stream_min_bytes));
    host->log(host->host, OAR_LOG_INFO, line);
  }
  {
    char policy[256];
    std::snprintf(policy, sizeof policy, "cpu plugin: %s", sgemm_policy());
    host->log(host->host, OAR_LOG_INFO, policy);
  }
  omp_set_num_threads(current_threads());

  if (g_state == nullptr) {
    g_state = new (std::nothrow) CpuState();
    if (g_state == nullptr) return fail_plain(OAR_ERROR_OUT_OF_MEMORY, "init: out of memory");
    try {
      probe_cpu(g_state);
    } catch (...) {
      g_state->name = "cpu";
      g_state->isa = "unknown";
    }
  }

  OarDeviceApi api = op::make_struct<OarDeviceApi>();
  api.device_type = "cpu";
  api.plugin_version = kPluginVersion;
  api.priority = 0;
  api.impl = g_state;
  api.device_count = device_count;
  api.device_properties = device_properties;
  api.set_device = set_device;
  api.synchronize_device = synchronize_device;
  api.malloc = cpu_malloc;
  api.free = cpu_free;
  api.memcpy_h2d = memcpy_sync;
  api.memcpy_d2h = memcpy_sync;
  api.memcpy_d2d = memcpy_sync;
  api.memcpy_h2d_async = memcpy_async;
  api.memcpy_d2h_async = memcpy_async;
  api.memcpy_d2d_async = memcpy_async;
  api.memcpy_peer = memcpy_peer;
  api.memset_async = memset_async;
  api.memory_stats = memory_stats;
  // No streams and no events: Note [CPU streams are synchronous].
  api.stream_synchronize = stream_synchronize;
  fill_collectives(&api);  // Gloo
  api.shutdown = shutdown;
  if (OarStatus s = host->register_device(host->host, &api)) return s;

  op::KernelTable r(host, "cpu");
  register_elementwise_kernels(r);
  register_cast_kernels(r);
  register_reduce_kernels(r);
  register_shape_kernels(r);
  register_matmul_kernels(r);
  register_fused_kernels(r);
  register_conv_kernels(r);
  register_linalg_kernels(r);
  register_complex_kernels(r);
  register_optimizer_kernels(r);
  if (r.status() != OAR_OK) return r.status();

  if (host->log != nullptr) {
    char message[320];
    std::snprintf(message, sizeof message, "cpu plugin %s: %s (%s), %d threads", kPluginVersion,
                  g_state->name.c_str(), g_state->isa.c_str(), current_threads());
    host->log(host->host, OAR_LOG_INFO, message);
  }
  return OAR_OK;
}
