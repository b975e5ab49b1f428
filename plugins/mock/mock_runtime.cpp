// The mock accelerator's runtime: devices, memory, streams, events and the
// plugin entry point. See Note [Mock accelerator] in mock_internal.h.
#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "mock_internal.h"

namespace oar_mock {

Plugin* g_plugin = nullptr;

namespace {

// Freed blocks wait here (poisoned) until this many bytes are queued.
constexpr uint64_t kQuarantineBytes = 64ull << 20;
constexpr uint64_t kDefaultAlignment = 64;
thread_local int32_t t_current_device = 0;

Plugin& state() { return *g_plugin; }

void* tag(void* real) {
  return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(real) ^ kPointerTag);
}
char* untag(const void* ptr) {
  return reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(ptr) ^ kPointerTag);
}

}  // namespace

// ------------------------------------------------------------------------
// Stream
// ------------------------------------------------------------------------

Stream::~Stream() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void Stream::enqueue(Task task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
    ++enqueued_;
    if (!worker_.joinable()) worker_ = std::thread([this] { run(); });
  }
  work_cv_.notify_one();
}

void Stream::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop requested and drained
    Task task = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    std::string message;
    OarStatus status = OAR_OK;
    try {
      status = task(message);
    } catch (const std::exception& e) {
      status = OAR_ERROR_INTERNAL;
      message = format("mock: a task on device %d threw: %s", device_, e.what());
    }
    lock.lock();
    // The first error sticks until the next synchronize; later work still runs.
    if (status != OAR_OK && sticky_ == OAR_OK) {
      sticky_ = status;
      sticky_message_ = message;
    }
    ++completed_;
    idle_cv_.notify_all();
  }
}

void Stream::wait_idle() {
  std::unique_lock<std::mutex> lock(mu_);
  uint64_t target = enqueued_;
  idle_cv_.wait(lock, [&] { return completed_ >= target; });
}

bool Stream::idle() {
  std::lock_guard<std::mutex> lock(mu_);
  return completed_ == enqueued_;
}

OarStatus Stream::take_error(std::string* message) {
  std::lock_guard<std::mutex> lock(mu_);
  OarStatus status = sticky_;
  *message = std::move(sticky_message_);
  sticky_ = OAR_OK;
  sticky_message_.clear();
  return status;
}

// ------------------------------------------------------------------------
// Lookups shared with the kernels and collectives
// ------------------------------------------------------------------------

bool check_device(int32_t device, const char* what) {
  int32_t count = static_cast<int32_t>(state().devices.size());
  if (device >= 0 && device < count) return true;
  fail(OAR_ERROR_INVALID_ARGUMENT,
       format("%s: mock device %d does not exist (%d mock devices; set OAR_MOCK_DEVICES)", what,
            device, count));
  return false;
}

std::shared_ptr<Stream> find_stream(int32_t device, OarStream_t stream, const char* what) {
  if (!check_device(device, what)) return nullptr;
  Device& dev = *state().devices[device];
  if (!stream) return dev.default_stream;
  std::lock_guard<std::mutex> lock(state().mu);
  auto* key = reinterpret_cast<Stream*>(stream);
  auto it = dev.streams.find(key);
  if (it != dev.streams.end()) return it->second;
  fail(OAR_ERROR_INVALID_ARGUMENT, format("%s: stream %p is not a live stream of mock device %d",
                                        what, static_cast<void*>(stream), device));
  return nullptr;
}

char* translate(int32_t device, const void* ptr, uint64_t bytes, const char* what) {
  if (!check_device(device, what)) return nullptr;
  if (!is_device_pointer(ptr)) {
    fail(OAR_ERROR_INVALID_ARGUMENT,
         format("%s: %p is not a mock device address (host memory or null was passed where "
              "device memory is required)",
              what, ptr));
    return nullptr;
  }
  char* real = untag(ptr);
  auto addr = reinterpret_cast<uintptr_t>(real);
  std::lock_guard<std::mutex> lock(state().mu);
  Device& dev = *state().devices[device];
  auto it = dev.blocks.upper_bound(addr);
  if (it != dev.blocks.begin()) {
    --it;
    uint64_t start = addr - it->first;
    if (start <= it->second.bytes) {
      if (bytes <= it->second.bytes - start) return real;
      fail(
          OAR_ERROR_INVALID_ARGUMENT,
          format("%s: %llu bytes at offset %llu run past the end of a %llu-byte block of mock "
               "device %d",
               what, static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(start),
               static_cast<unsigned long long>(it->second.bytes), device));
      return nullptr;
    }
  }
  fail(OAR_ERROR_INVALID_ARGUMENT,
       format("%s: %p is not inside a live allocation of mock device %d (freed, or another "
            "device's memory)",
            what, ptr, device));
  return nullptr;
}

namespace {

// ------------------------------------------------------------------------
// Device table: device
// ------------------------------------------------------------------------

OarStatus device_count(void*, int32_t* count) {
  if (!count) return fail(OAR_ERROR_INVALID_ARGUMENT, "device_count: count is null");
  *count = static_cast<int32_t>(state().devices.size());
  return OAR_OK;
}

OarStatus device_properties(void*, int32_t device, OarDeviceProperties* props) {
  if (!props) return fail(OAR_ERROR_INVALID_ARGUMENT, "device_properties: props is null");
  if (!check_device(device, "device_properties")) return OAR_ERROR_INVALID_ARGUMENT;
  Device& dev = *state().devices[device];
  uint64_t used;
  {
    std::lock_guard<std::mutex> lock(state().mu);
    used = dev.used;
  }
  OarDeviceProperties p{};
  p.struct_size = OAR_STRUCT_SIZE(OarDeviceProperties, flags);
  std::snprintf(p.name, sizeof p.name, "oar mock accelerator %d", device);
  std::snprintf(p.isa, sizeof p.isa, "mock-ref");
  p.total_memory = dev.capacity;
  p.free_memory = dev.capacity - used;
  p.compute_units = 1;
  p.flags = OAR_DEVICE_SUPPORTS_BF16 | OAR_DEVICE_SUPPORTS_F16;  // not host-addressable
  op::write_struct(props, p);  // only what the host's struct has room for
  return OAR_OK;
}

OarStatus set_device(void*, int32_t device) {
  if (!check_device(device, "set_device")) return OAR_ERROR_INVALID_ARGUMENT;
  t_current_device = device;
  return OAR_OK;
}

std::vector<std::shared_ptr<Stream>> device_streams(int32_t device) {
  Device& dev = *state().devices[device];
  std::vector<std::shared_ptr<Stream>> all{dev.default_stream};
  std::lock_guard<std::mutex> lock(state().mu);
  for (auto& [key, stream] : dev.streams) all.push_back(stream);
  return all;
}

OarStatus report_sticky(Stream& stream) {
  std::string message;
  OarStatus status = stream.take_error(&message);
  return status == OAR_OK ? OAR_OK : fail(status, message);
}

OarStatus synchronize_device(void*, int32_t device) {
  if (!check_device(device, "synchronize_device")) return OAR_ERROR_INVALID_ARGUMENT;
  OarStatus first = OAR_OK;
  for (auto& stream : device_streams(device)) {
    stream->wait_idle();
    OarStatus status = report_sticky(*stream);
    if (first == OAR_OK) first = status;
  }
  return first;
}

// ------------------------------------------------------------------------
// Device table: memory
// ------------------------------------------------------------------------

OarStatus mock_malloc(void*, int32_t device, uint64_t bytes, uint64_t alignment, void** ptr) {
  if (!ptr) return fail(OAR_ERROR_INVALID_ARGUMENT, "malloc: ptr is null");
  *ptr = nullptr;
  if (!check_device(device, "malloc")) return OAR_ERROR_INVALID_ARGUMENT;
  if (alignment & (alignment - 1))
    return fail(OAR_ERROR_INVALID_ARGUMENT, format("malloc: alignment %llu is not a power of two",
                                                 static_cast<unsigned long long>(alignment)));
  alignment = std::max(alignment, kDefaultAlignment);
  Device& dev = *state().devices[device];
  {
    std::lock_guard<std::mutex> lock(state().mu);
    if (bytes > dev.capacity - dev.used)
      return fail(OAR_ERROR_OUT_OF_MEMORY,
                  format("mock: device %d cannot allocate %llu bytes: %llu of %llu bytes in use "
                       "(OAR_MOCK_MEMORY_MB=%llu)",
                       device, static_cast<unsigned long long>(bytes),
                       static_cast<unsigned long long>(dev.used),
                       static_cast<unsigned long long>(dev.capacity),
                       static_cast<unsigned long long>(state().memory_mb)));
    dev.used += bytes;
  }
  void* real = nullptr;
  if (posix_memalign(&real, alignment, std::max<uint64_t>(bytes, 1)) != 0) {
    std::lock_guard<std::mutex> lock(state().mu);
    dev.used -= bytes;
    return fail(OAR_ERROR_OUT_OF_MEMORY,
                format("mock: device %d cannot allocate %llu bytes: the host is out of memory",
                     device, static_cast<unsigned long long>(bytes)));
  }
  std::memset(real, kPoisonByte, std::max<uint64_t>(bytes, 1));  // memory starts as garbage
  {
    std::lock_guard<std::mutex> lock(state().mu);
    dev.blocks[reinterpret_cast<uintptr_t>(real)] = Block{bytes};
  }
  *ptr = tag(real);
  return OAR_OK;
}

OarStatus mock_free(void*, int32_t device, void* ptr) {
  if (!ptr) return OAR_OK;
  if (!check_device(device, "free")) return OAR_ERROR_INVALID_ARGUMENT;
  char* real = is_device_pointer(ptr) ? untag(ptr) : nullptr;
  std::vector<void*> release;
  {
    std::lock_guard<std::mutex> lock(state().mu);
    Device& dev = *state().devices[device];
    auto it = dev.blocks.find(reinterpret_cast<uintptr_t>(real));
    if (!real || it == dev.blocks.end())
      return fail(OAR_ERROR_INVALID_ARGUMENT,
                  format("free: %p is not a live allocation of mock device %d (double free, an "
                       "interior pointer, or another device's memory)",
                       ptr, device));
    uint64_t bytes = it->second.bytes;
    dev.used -= bytes;
    dev.blocks.erase(it);
    std::memset(real, kPoisonByte, bytes);
    Plugin& p = state();
    p.quarantine.emplace_back(real, bytes);
    p.quarantine_bytes += bytes;
    while (p.quarantine_bytes > kQuarantineBytes || p.quarantine.size() > 1024) {
      release.push_back(p.quarantine.front().first);
      p.quarantine_bytes -= p.quarantine.front().second;
      p.quarantine.pop_front();
    }
  }
  for (void* r : release) std::free(r);
  return OAR_OK;
}

char* host_side(const void* ptr, uint64_t bytes, const char* what, const char* arg) {
  if (bytes && !ptr) {
    fail(OAR_ERROR_INVALID_ARGUMENT, format("%s: %s is null", what, arg));
    return nullptr;
  }
  if (is_device_pointer(ptr)) {
    fail(OAR_ERROR_INVALID_ARGUMENT,
         format("%s: %s %p is a mock device address but host memory is required", what, arg, ptr));
    return nullptr;
  }
  return const_cast<char*>(static_cast<const char*>(ptr));
}

// Resolves both sides of a copy; kind is "h2d", "d2h" or "d2d".
bool resolve_copy(const char* what, char kind_dst, char kind_src, int32_t device, void* dst,
                  const void* src, uint64_t bytes, char** rdst, char** rsrc) {
  *rdst =
      kind_dst == 'd' ? translate(device, dst, bytes, what) : host_side(dst, bytes, what, "dst");
  if (!*rdst) return false;
  *rsrc =
      kind_src == 'd' ? translate(device, src, bytes, what) : host_side(src, bytes, what, "src");
  return *rsrc != nullptr;
}

OarStatus copy_sync(const char* what, char kd, char ks, int32_t device, void* dst, const void* src,
                    uint64_t bytes) {
  if (!check_device(device, what)) return OAR_ERROR_INVALID_ARGUMENT;
  if (bytes == 0) return OAR_OK;
  char *rdst, *rsrc;
  if (!resolve_copy(what, kd, ks, device, dst, src, bytes, &rdst, &rsrc))
    return OAR_ERROR_INVALID_ARGUMENT;
  state().devices[device]->default_stream->wait_idle();  // only the default stream
  std::memmove(rdst, rsrc, bytes);
  return OAR_OK;
}

OarStatus copy_async(const char* what, char kd, char ks, int32_t device, void* dst, const void* src,
                     uint64_t bytes, OarStream_t stream) {
  auto s = find_stream(device, stream, what);
  if (!s) return OAR_ERROR_INVALID_ARGUMENT;
  if (bytes == 0) return OAR_OK;
  char *rdst, *rsrc;
  if (!resolve_copy(what, kd, ks, device, dst, src, bytes, &rdst, &rsrc))
    return OAR_ERROR_INVALID_ARGUMENT;
  s->enqueue([=](std::string&) -> OarStatus {
    std::memmove(rdst, rsrc, bytes);
    return OAR_OK;
  });
  return OAR_OK;
}

OarStatus memcpy_h2d(void*, int32_t device, void* dst, const void* src, uint64_t bytes) {
  return copy_sync("memcpy_h2d", 'd', 'h', device, dst, src, bytes);
}
OarStatus memcpy_d2h(void*, int32_t device, void* dst, const void* src, uint64_t bytes) {
  return copy_sync("memcpy_d2h", 'h', 'd', device, dst, src, bytes);
}
OarStatus memcpy_d2d(void*, int32_t device, void* dst, const void* src, uint64_t bytes) {
  return copy_sync("memcpy_d2d", 'd', 'd', device, dst, src, bytes);
}
OarStatus memcpy_h2d_async(void*, int32_t device, void* dst, const void* src, uint64_t bytes,
                           OarStream_t stream) {
  return copy_async("memcpy_h2d_async", 'd', 'h', device, dst, src, bytes, stream);
}
OarStatus memcpy_d2h_async(void*, int32_t device, void* dst, const void* src, uint64_t bytes,
                           OarStream_t stream) {
  return copy_async("memcpy_d2h_async", 'h', 'd', device, dst, src, bytes, stream);
}
OarStatus memcpy_d2d_async(void*, int32_t device, void* dst, const void* src, uint64_t bytes,
                           OarStream_t stream) {
  return copy_async("memcpy_d2d_async", 'd', 'd', device, dst, src, bytes, stream);
}

OarStatus memcpy_peer(void*, int32_t dst_device, void* dst, int32_t src_device, const void* src,
                      uint64_t bytes) {
  if (!check_device(dst_device, "memcpy_peer") || !check_device(src_device, "memcpy_peer"))
    return OAR_ERROR_INVALID_ARGUMENT;
  if (bytes == 0) return OAR_OK;
  char* rdst = translate(dst_device, dst, bytes, "memcpy_peer (dst)");
  if (!rdst) return OAR_ERROR_INVALID_ARGUMENT;
  char* rsrc = translate(src_device, src, bytes, "memcpy_peer (src)");
  if (!rsrc) return OAR_ERROR_INVALID_ARGUMENT;
  state().devices[src_device]->default_stream->wait_idle();
  state().devices[dst_device]->default_stream->wait_idle();
  std::memmove(rdst, rsrc, bytes);
  return OAR_OK;
}

OarStatus memset_async(void*, int32_t device, void* ptr, int32_t value, uint64_t bytes,
                       OarStream_t stream) {
  auto s = find_stream(device, stream, "memset_async");
  if (!s) return OAR_ERROR_INVALID_ARGUMENT;
  if (bytes == 0) return OAR_OK;
  char* real = translate(device, ptr, bytes, "memset_async");
  if (!real) return OAR_ERROR_INVALID_ARGUMENT;
  s->enqueue([=](std::string&) -> OarStatus {
    std::memset(real, value & 0xff, bytes);
    return OAR_OK;
  });
  return OAR_OK;
}

OarStatus memory_stats(void*, int32_t device, OarMemoryStats* stats) {
  if (!stats) return fail(OAR_ERROR_INVALID_ARGUMENT, "memory_stats: stats is null");
  if (!check_device(device, "memory_stats")) return OAR_ERROR_INVALID_ARGUMENT;
  Device& dev = *state().devices[device];
  OarMemoryStats s{};
  {
    std::lock_guard<std::mutex> lock(state().mu);
    s.used = dev.used;
  }
  s.total = dev.capacity;
  s.free = dev.capacity - s.used;
  op::write_struct(stats, s);
  return OAR_OK;
}

// ------------------------------------------------------------------------
// Device table: streams and events
// ------------------------------------------------------------------------

OarStatus stream_create(void*, int32_t device, OarStream_t* stream) {
  if (!stream) return fail(OAR_ERROR_INVALID_ARGUMENT, "stream_create: stream is null");
  if (!check_device(device, "stream_create")) return OAR_ERROR_INVALID_ARGUMENT;
  auto s = std::make_shared<Stream>(device);
  std::lock_guard<std::mutex> lock(state().mu);
  state().devices[device]->streams[s.get()] = s;
  *stream = reinterpret_cast<OarStream_t>(s.get());
  return OAR_OK;
}

OarStatus stream_destroy(void*, int32_t device, OarStream_t stream) {
  if (!stream)
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                "stream_destroy: the default stream (NULL) cannot be destroyed");
  auto s = find_stream(device, stream, "stream_destroy");
  if (!s) return OAR_ERROR_INVALID_ARGUMENT;
  {
    std::lock_guard<std::mutex> lock(state().mu);
    state().devices[device]->streams.erase(s.get());
  }
  s.reset();  // the last reference drains the queue and joins the worker
  return OAR_OK;
}

OarStatus stream_synchronize(void*, int32_t device, OarStream_t stream) {
  auto s = find_stream(device, stream, "stream_synchronize");
  if (!s) return OAR_ERROR_INVALID_ARGUMENT;
  s->wait_idle();
  return report_sticky(*s);
}

OarStatus stream_query(void*, int32_t device, OarStream_t stream, int32_t* done) {
  if (!done) return fail(OAR_ERROR_INVALID_ARGUMENT, "stream_query: done is null");
  auto s = find_stream(device, stream, "stream_query");
  if (!s) return OAR_ERROR_INVALID_ARGUMENT;
  *done = s->idle() ? 1 : 0;
  return OAR_OK;
}

std::shared_ptr<Event> find_event(OarEvent_t event, const char* what) {
  std::lock_guard<std::mutex> lock(state().mu);
  auto it = state().events.find(reinterpret_cast<Event*>(event));
  if (it != state().events.end()) return it->second;
  fail(OAR_ERROR_INVALID_ARGUMENT,
       format("%s: event %p is not a live mock event", what, static_cast<void*>(event)));
  return nullptr;
}

OarStatus event_create(void*, int32_t device, OarEvent_t* event) {
  if (!event) return fail(OAR_ERROR_INVALID_ARGUMENT, "event_create: event is null");
  if (!check_device(device, "event_create")) return OAR_ERROR_INVALID_ARGUMENT;
  auto e = std::make_shared<Event>();
  e->device = device;
  std::lock_guard<std::mutex> lock(state().mu);
  state().events[e.get()] = e;
  *event = reinterpret_cast<OarEvent_t>(e.get());
  return OAR_OK;
}

OarStatus event_destroy(void*, int32_t, OarEvent_t event) {
  if (!find_event(event, "event_destroy")) return OAR_ERROR_INVALID_ARGUMENT;
  std::lock_guard<std::mutex> lock(state().mu);
  state().events.erase(reinterpret_cast<Event*>(event));  // pending tasks keep their reference
  return OAR_OK;
}

OarStatus event_record(void*, int32_t device, OarEvent_t event, OarStream_t stream) {
  auto e = find_event(event, "event_record");
  if (!e) return OAR_ERROR_INVALID_ARGUMENT;
  auto s = find_stream(device, stream, "event_record");
  if (!s) return OAR_ERROR_INVALID_ARGUMENT;
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(e->mu);
    generation = ++e->recorded;
  }
  s->enqueue([e, generation](std::string&) -> OarStatus {
    {
      std::lock_guard<std::mutex> lock(e->mu);
      e->completed = std::max(e->completed, generation);
    }
    e->cv.notify_all();
    return OAR_OK;
  });
  return OAR_OK;
}

OarStatus event_synchronize(void*, int32_t, OarEvent_t event) {
  auto e = find_event(event, "event_synchronize");
  if (!e) return OAR_ERROR_INVALID_ARGUMENT;
  std::unique_lock<std::mutex> lock(e->mu);
  uint64_t target = e->recorded;  // a never-recorded event is complete
  e->cv.wait(lock, [&] { return e->completed >= target; });
  return OAR_OK;
}

OarStatus event_query(void*, int32_t, OarEvent_t event, int32_t* done) {
  if (!done) return fail(OAR_ERROR_INVALID_ARGUMENT, "event_query: done is null");
  auto e = find_event(event, "event_query");
  if (!e) return OAR_ERROR_INVALID_ARGUMENT;
  std::lock_guard<std::mutex> lock(e->mu);
  *done = e->completed >= e->recorded ? 1 : 0;
  return OAR_OK;
}

OarStatus stream_wait_event(void*, int32_t device, OarStream_t stream, OarEvent_t event) {
  auto e = find_event(event, "stream_wait_event");
  if (!e) return OAR_ERROR_INVALID_ARGUMENT;
  auto s = find_stream(device, stream, "stream_wait_event");
  if (!s) return OAR_ERROR_INVALID_ARGUMENT;
  uint64_t target;
  {
    std::lock_guard<std::mutex> lock(e->mu);
    target = e->recorded;  // waits for the record issued before this call
  }
  s->enqueue([e, target](std::string&) -> OarStatus {
    std::unique_lock<std::mutex> lock(e->mu);
    e->cv.wait(lock, [&] { return e->completed >= target; });
    return OAR_OK;
  });
  return OAR_OK;
}

// ------------------------------------------------------------------------
// Lifetime
// ------------------------------------------------------------------------

void shutdown(void* impl) {
  Plugin* plugin = static_cast<Plugin*>(impl);
  if (!plugin) return;
  abort_all_comms();
  for (auto& dev : plugin->devices) {
    std::map<Stream*, std::shared_ptr<Stream>> streams;
    {
      std::lock_guard<std::mutex> lock(plugin->mu);
      streams.swap(dev->streams);
    }
    streams.clear();              // drain and join created streams
    dev->default_stream.reset();  // then the default stream
    for (auto& [addr, block] : dev->blocks) std::free(reinterpret_cast<void*>(addr));
  }
  for (auto& [raw, bytes] : plugin->quarantine) std::free(raw);
  if (g_plugin == plugin) g_plugin = nullptr;
  delete plugin;
}

uint64_t read_option(const OarHostApi* host, const char* name, uint64_t fallback,
                     uint64_t max_value) {
  if (host->struct_size < OAR_STRUCT_SIZE(OarHostApi, get_option) || !host->get_option)
    return fallback;
  const char* text = host->get_option(host->host, name);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  unsigned long long value = std::strtoull(text, &end, 10);
  if (*end != '\0' || text[0] == '-' || value > max_value) {
    op::log(OAR_LOG_WARNING, format("mock: %s=%s is not an integer in [0, %llu]; using %llu", name,
                                   text, static_cast<unsigned long long>(max_value),
                                   static_cast<unsigned long long>(fallback)));
    return fallback;
  }
  return value;
}

}  // namespace
}  // namespace oar_mock

extern "C" OAR_PLUGIN_EXPORT OarStatus oar_plugin_init(const OarHostApi* host,
                                                       OarPluginInfo* info) {
  using namespace oar_mock;
  if (OarStatus s = op::accept_host(host, info, "oar-mock")) return s;
  if (g_plugin) shutdown(g_plugin);  // a second init replaces the first state

  auto* plugin = new Plugin;
  plugin->host = host;
  g_plugin = plugin;
  uint64_t count = read_option(host, "OAR_MOCK_DEVICES", 2, 64);
  plugin->memory_mb = read_option(host, "OAR_MOCK_MEMORY_MB", 1024, 1ull << 24);
  for (uint64_t i = 0; i < count; ++i) {
    auto dev = std::make_unique<Device>();
    dev->index = static_cast<int32_t>(i);
    dev->capacity = plugin->memory_mb << 20;
    dev->default_stream = std::make_shared<Stream>(dev->index);
    plugin->devices.push_back(std::move(dev));
  }

  OarDeviceApi api = op::make_struct<OarDeviceApi>();
  api.device_type = "mock";
  api.plugin_version = "0.1.0";
  api.priority = -10;  // a test device: never the default over cpu
  api.impl = plugin;
  api.device_count = device_count;
  api.device_properties = device_properties;
  api.set_device = set_device;
  api.synchronize_device = synchronize_device;
  api.malloc = mock_malloc;
  api.free = mock_free;
  api.memcpy_h2d = memcpy_h2d;
  api.memcpy_d2h = memcpy_d2h;
  api.memcpy_d2d = memcpy_d2d;
  api.memcpy_h2d_async = memcpy_h2d_async;
  api.memcpy_d2h_async = memcpy_d2h_async;
  api.memcpy_d2d_async = memcpy_d2d_async;
  api.memcpy_peer = memcpy_peer;
  api.memset_async = memset_async;
  api.memory_stats = memory_stats;
  api.stream_create = stream_create;
  api.stream_destroy = stream_destroy;
  api.stream_synchronize = stream_synchronize;
  api.stream_query = stream_query;
  api.event_create = event_create;
  api.event_destroy = event_destroy;
  api.event_record = event_record;
  api.event_synchronize = event_synchronize;
  api.event_query = event_query;
  api.stream_wait_event = stream_wait_event;
  fill_collectives(&api);
  api.shutdown = shutdown;

  OarStatus status = host->register_device(host->host, &api);
  if (status == OAR_OK) {
    op::KernelTable table(host, "mock");
    // Every mock kernel reads through View::at (strides, byte offset); the
    // conformance suite's strided.* rows check it.
    table.set_default_flags(OAR_KERNEL_STRIDED);
    register_elementwise_kernels(table);
    register_reduce_kernels(table);
    register_shape_kernels(table);
    register_conv_kernels(table);
    register_complex_kernels(table);
    register_fft_kernels(table);
    register_optimizer_kernels(table);
    status = table.status();
  }
  if (status != OAR_OK) {
    // The host drops our registrations; release our state.
    shutdown(plugin);
    return status;
  }
  return OAR_OK;
}
