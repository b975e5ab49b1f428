// template_plugin.cpp — a complete, small oar device plugin to start from.
//
// Copy this directory, rename the device type (kDeviceType) and the library
// (CMakeLists.txt), then replace the host-memory "device" below with calls to
// your driver. What it shows, section by section:
//   1. state: devices with a memory capacity, streams, events;
//   2. device and memory functions (malloc reports OUT_OF_MEMORY past the
//      capacity; copies in every direction, async ones ordered on a stream);
//   3. streams and events: work queued on a stream runs in order (here
//      lazily, on the calling thread, when someone waits on the stream);
//   4. kernels for a handful of ops; every other op either runs decomposed
//      into these (composite ops) or is reported "missing" by
//      `oar ops --device template` and oar-conformance;
//   5. oar_plugin_init: the handshake, the device table, the kernels.
// Options (read through the host, i.e. the environment by default):
//   OAR_TEMPLATE_DEVICES   number of devices (default 1; 0 is valid)
//   OAR_TEMPLATE_MEMORY_MB capacity of each device (default 256)
// Only `oar_plugin_init` is exported (oar_add_device_plugin sees to it).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <oar/plugin.hpp>  // C++ layer; it includes oar/plugin_api.h
#include <set>
#include <vector>

namespace {

namespace op = oar::plugin;
using op::fail;
using op::format;

constexpr const char* kDeviceType = "template";
constexpr uint64_t kMinAlignment = 64;

// ---------------------------------------------------------------------------
// 1. State
// ---------------------------------------------------------------------------

// A stream: a FIFO of work. The template runs it on the calling thread when
// the host waits on the stream (or launches a kernel on it), which keeps the
// order without worker threads. A real device enqueues to its hardware queue.
struct Stream {
  int32_t device = 0;
  std::deque<std::function<void()>> pending;
  uint64_t enqueued = 0, completed = 0;
};

// An event marks a point in one stream: complete once the stream ran that far.
struct Event {
  Stream* stream = nullptr;  // not owned; null until recorded
  uint64_t ticket = 0;
};

struct Device {
  uint64_t capacity = 0, used = 0;
  std::map<void*, uint64_t> blocks;  // live allocations and their sizes
  std::unique_ptr<Stream> default_stream = std::make_unique<Stream>();
  std::set<Stream*> streams;  // created streams (owned)
};

struct State {
  std::recursive_mutex mu;  // guards everything below; tasks may re-enter
  std::vector<Device> devices;
  std::set<Event*> events;  // owned
};
State* g_state = nullptr;

bool valid_device(int32_t device) {
  return g_state && device >= 0 && device < static_cast<int32_t>(g_state->devices.size());
}
#define CHECK_DEVICE(device, what)        \
  if (!valid_device(device))              \
  return fail(OAR_ERROR_INVALID_ARGUMENT, \
              format("%s: template device %d does not exist", what, static_cast<int>(device)))

// The stream a call names (null: the device's default stream).
Stream* stream_of(int32_t device, OarStream_t stream) {
  if (!stream) return g_state->devices[device].default_stream.get();
  return reinterpret_cast<Stream*>(stream);
}
bool stream_alive(Stream* s) {
  for (auto& dev : g_state->devices)
    if (s == dev.default_stream.get() || dev.streams.count(s)) return true;
  return false;
}

// Runs queued work of `s` until `ticket` tasks have completed. Caller holds mu.
void run_until(Stream& s, uint64_t ticket) {
  while (s.completed < ticket && !s.pending.empty()) {
    auto task = std::move(s.pending.front());
    s.pending.pop_front();
    task();
    ++s.completed;
  }
}
void run_all(Stream& s) { run_until(s, s.enqueued); }
void enqueue(Stream& s, std::function<void()> task) {
  s.pending.push_back(std::move(task));
  ++s.enqueued;
}
void run_device(int32_t device) {
  Device& dev = g_state->devices[device];
  run_all(*dev.default_stream);
  for (Stream* s : dev.streams) run_all(*s);
}

// ---------------------------------------------------------------------------
// 2. Device and memory
// ---------------------------------------------------------------------------

OarStatus device_count(void*, int32_t* count) {
  *count = static_cast<int32_t>(g_state->devices.size());
  return OAR_OK;
}

OarStatus device_properties(void*, int32_t device, OarDeviceProperties* props) {
  CHECK_DEVICE(device, "device_properties");
  std::lock_guard<std::recursive_mutex> lock(g_state->mu);
  const Device& dev = g_state->devices[device];
  OarDeviceProperties p = op::make_struct<OarDeviceProperties>();
  std::snprintf(p.name, sizeof p.name, "oar template device %d", device);
  std::snprintf(p.isa, sizeof p.isa, "host");
  p.total_memory = dev.capacity;
  p.free_memory = dev.capacity - dev.used;
  p.compute_units = 1;
  p.flags = OAR_DEVICE_HOST_ADDRESSABLE;  // our "device memory" is host memory
  op::write_struct(props, p);             // only what the host's struct holds
  return OAR_OK;
}

OarStatus synchronize_device(void*, int32_t device) {
  CHECK_DEVICE(device, "synchronize_device");
  std::lock_guard<std::recursive_mutex> lock(g_state->mu);
  run_device(device);
  return OAR_OK;
}

OarStatus dev_malloc(void*, int32_t device, uint64_t bytes, uint64_t alignment, void** ptr) {
  CHECK_DEVICE(device, "malloc");
  *ptr = nullptr;
  if (alignment & (alignment - 1))
    return fail(OAR_ERROR_INVALID_ARGUMENT, format("malloc: alignment %llu is not a power of two",
                                                   static_cast<unsigned long long>(alignment)));
  alignment = std::max(alignment, kMinAlignment);
  std::lock_guard<std::recursive_mutex> lock(g_state->mu);
  Device& dev = g_state->devices[device];
  // The capacity is the contract: past it, OUT_OF_MEMORY with a sentence.
  if (bytes > dev.capacity - dev.used)
    return fail(OAR_ERROR_OUT_OF_MEMORY,
                format("template: device %d cannot allocate %llu bytes: %llu of %llu bytes in use "
                       "(OAR_TEMPLATE_MEMORY_MB)",
                       device, static_cast<unsigned long long>(bytes),
                       static_cast<unsigned long long>(dev.used),
                       static_cast<unsigned long long>(dev.capacity)));
  uint64_t rounded = (std::max<uint64_t>(bytes, 1) + alignment - 1) / alignment * alignment;
  void* p = rounded >= bytes ? std::aligned_alloc(alignment, rounded) : nullptr;
  if (!p)
    return fail(OAR_ERROR_OUT_OF_MEMORY, format("template: the host cannot allocate %llu bytes",
                                                static_cast<unsigned long long>(bytes)));
  dev.blocks[p] = bytes;
  dev.used += bytes;
  *ptr = p;
  return OAR_OK;
}

OarStatus dev_free(void*, int32_t device, void* ptr) {
  CHECK_DEVICE(device, "free");
  if (!ptr) return OAR_OK;
  std::lock_guard<std::recursive_mutex> lock(g_state->mu);
  Device& dev = g_state->devices[device];
  auto it = dev.blocks.find(ptr);
  if (it == dev.blocks.end())
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                format("free: %p is not a live allocation of template device %d", ptr, device));
  dev.used -= it->second;
  dev.blocks.erase(it);
  std::free(ptr);
  return OAR_OK;
}

// Synchronous copies wait for the device's queued work, then copy.
OarStatus copy_sync(void*, int32_t device, void* dst, const void* src, uint64_t bytes) {
  CHECK_DEVICE(device, "memcpy");
  std::lock_guard<std::recursive_mutex> lock(g_state->mu);
  run_device(device);
  if (bytes) std::memmove(dst, src, bytes);
  return OAR_OK;
}

// Asynchronous copies are queued on the stream: they run after everything
// enqueued before them. The host keeps host buffers alive until then.
OarStatus copy_async(void*, int32_t device, void* dst, const void* src, uint64_t bytes,
                     OarStream_t stream) {
  CHECK_DEVICE(device, "memcpy_async");
  std::lock_guard<std::recursive_mutex> lock(g_state->mu);
  enqueue(*stream_of(device, stream), [=] { std::memmove(dst, src, bytes); });
  return OAR_OK;
}

OarStatus memset_async(void*, int32_t device, void* ptr, int32_t value, uint64_t bytes,
                       OarStream_t stream) {
  CHECK_DEVICE(device, "memset_async");
  std::lock_guard<std::recursive_mutex> lock(g_state->mu);
  enqueue(*stream_of(device, stream), [=] { std::memset(ptr, value & 0xff, bytes); });
  return OAR_OK;
}

OarStatus memory_stats(void*, int32_t device, OarMemoryStats* stats) {
  CHECK_DEVICE(device, "memory_stats");
  std::lock_guard<std::recursive_mutex> lock(g_state->mu);
  const Device& dev = g_state->devices[device];
  OarMemoryStats s = op::make_struct<OarMemoryStats>();
  s.used = dev.used;
  s.total = dev.capacity;
  s.free = dev.capacity - dev.used;
  op::write_struct(stats, s);
  return OAR_OK;
}

// ---------------------------------------------------------------------------
// 3. Streams and events
// ---------------------------------------------------------------------------

OarStatus stream_create(void*, int32_t device, OarStream_t* stream) {
  CHECK_DEVICE(device, "stream_create");
  std::lock_guard<std::recursive_mutex> lock(g_state->mu);
  auto* s = new Stream;
  s->device = device;
  g_state->devices[device].streams.insert(s);
  *stream = reinterpret_cast<OarStream_t>(s);
  return OAR_OK;
}

OarStatus stream_destroy(void*, int32_t device, OarStream_t stream) {
  CHECK_DEVICE(device, "stream_destroy");
  std::lock_guard<std::recursive_mutex> lock(g_state->mu);
  Stream* s = reinterpret_cast<Stream*>(stream);
  if (!g_state->devices[device].streams.erase(s))
    return fail(OAR_ERROR_INVALID_ARGUMENT, "stream_destroy: not a live stream of this device");
  run_all(*s);  // finish its work first
  for (Event* e : g_state->events)
    if (e->stream == s) e->stream = nullptr;  // complete from now on
  delete s;
  return OAR_OK;
}

OarStatus stream_synchronize(void*, int32_t device, OarStream_t stream) {
  CHECK_DEVICE(device, "stream_synchronize");
  std::lock_guard<std::recursive_mutex> lock(g_state->mu);
  run_all(*stream_of(device, stream));
  return OAR_OK;
}

// A query must make progress: here it runs the queue, then reports done.
OarStatus stream_query(void*, int32_t device, OarStream_t stream, int32_t* done) {
  CHECK_DEVICE(device, "stream_query");
  std::lock_guard<std::recursive_mutex> lock(g_state->mu);
  Stream* s = stream_of(device, stream);
  run_all(*s);
  *done = s->completed == s->enqueued ? 1 : 0;
  return OAR_OK;
}

OarStatus event_create(void*, int32_t device, OarEvent_t* event) {
  CHECK_DEVICE(device, "event_create");
  std::lock_guard<std::recursive_mutex> lock(g_state->mu);
  auto* e = new Event;
  g_state->events.insert(e);
  *event = reinterpret_cast<OarEvent_t>(e);
  return OAR_OK;
}

OarStatus event_destroy(void*, int32_t, OarEvent_t event) {
  std::lock_guard<std::recursive_mutex> lock(g_state->mu);
  auto* e = reinterpret_cast<Event*>(event);
  if (!g_state->events.erase(e))
    return fail(OAR_ERROR_INVALID_ARGUMENT, "event_destroy: not a live event");
  delete e;
  return OAR_OK;
}

OarStatus event_record(void*, int32_t device, OarEvent_t event, OarStream_t stream) {
  CHECK_DEVICE(device, "event_record");
  std::lock_guard<std::recursive_mutex> lock(g_state->mu);
  auto* e = reinterpret_cast<Event*>(event);
  e->stream = stream_of(device, stream);
  e->ticket = e->stream->enqueued;  // everything enqueued so far
  return OAR_OK;
}

OarStatus event_synchronize(void*, int32_t, OarEvent_t event) {
  std::lock_guard<std::recursive_mutex> lock(g_state->mu);
  auto* e = reinterpret_cast<Event*>(event);
  if (e->stream) run_until(*e->stream, e->ticket);
  return OAR_OK;
}

OarStatus event_query(void* impl, int32_t device, OarEvent_t event, int32_t* done) {
  OarStatus status = event_synchronize(impl, device, event);  // progress, as above
  *done = 1;
  return status;
}

// `stream` waits for the event without blocking the host: a queued task
// that first runs the event's stream up to the recorded point.
OarStatus stream_wait_event(void*, int32_t device, OarStream_t stream, OarEvent_t event) {
  CHECK_DEVICE(device, "stream_wait_event");
  std::lock_guard<std::recursive_mutex> lock(g_state->mu);
  auto* e = reinterpret_cast<Event*>(event);
  Stream* waited = e->stream;
  uint64_t ticket = e->ticket;
  if (!waited) return OAR_OK;  // never recorded: nothing to wait for
  enqueue(*stream_of(device, stream), [waited, ticket] {
    if (stream_alive(waited)) run_until(*waited, ticket);
  });
  return OAR_OK;
}

void shutdown(void*) {
  if (!g_state) return;
  for (auto& dev : g_state->devices) {
    for (Stream* s : dev.streams) delete s;
    for (auto& [ptr, bytes] : dev.blocks) std::free(ptr);
  }
  for (Event* e : g_state->events) delete e;
  delete g_state;
  g_state = nullptr;
}

// ---------------------------------------------------------------------------
// 4. Kernels (docs/kernels.md is the contract: outputs are allocated by the
//    host with their final shape; inputs are contiguous; binary ops get
//    inputs with the output's ndim, size-1 dims broadcasting).
// ---------------------------------------------------------------------------

// A kernel runs in stream order: first whatever is queued before it. (A real
// device would enqueue the kernel instead.)
void wait_for_stream(const OarKernelContext& ctx) {
  std::lock_guard<std::recursive_mutex> lock(g_state->mu);
  if (valid_device(ctx.device)) run_all(*stream_of(ctx.device, ctx.stream));
}

template <typename T, typename F>
OarStatus binary(const OarKernelContext& ctx, F f) {
  wait_for_stream(ctx);
  const OarTensorView &a = ctx.inputs[0], &b = ctx.inputs[1], &y = ctx.outputs[0];
  op::BroadcastIndexer ia(y, a), ib(y, b);
  const T *pa = op::data<T>(a), *pb = op::data<T>(b);  // data + byte_offset
  T* py = op::data<T>(y);
  int64_t n = op::numel(y);
  for (int64_t i = 0; i < n; ++i, ia.next(), ib.next()) py[i] = f(pa[ia.offset()], pb[ib.offset()]);
  return OAR_OK;
}
template <typename T>
OarStatus add(const OarKernelContext& c) {
  return binary<T>(c, [](T a, T b) { return a + b; });
}
template <typename T>
OarStatus sub(const OarKernelContext& c) {
  return binary<T>(c, [](T a, T b) { return a - b; });
}
template <typename T>
OarStatus mul(const OarKernelContext& c) {
  return binary<T>(c, [](T a, T b) { return a * b; });
}
template <typename T>
OarStatus div(const OarKernelContext& c) {
  return binary<T>(c, [](T a, T b) { return a / b; });
}

template <typename T, typename F>
OarStatus unary(const OarKernelContext& ctx, F f) {
  wait_for_stream(ctx);
  const T* x = op::data<T>(ctx.inputs[0]);
  T* y = op::data<T>(ctx.outputs[0]);
  for (int64_t i = 0, n = op::numel(ctx.outputs[0]); i < n; ++i) y[i] = f(x[i]);
  return OAR_OK;
}
template <typename T>
OarStatus neg(const OarKernelContext& c) {
  return unary<T>(c, [](T x) { return -x; });
}
template <typename T>
OarStatus exp(const OarKernelContext& c) {
  return unary<T>(c, [](T x) { return std::exp(x); });
}

// sum over the attribute `axes` (sorted, unique; empty = all) with `keepdim`.
template <typename T>
OarStatus sum(const OarKernelContext& ctx) {
  wait_for_stream(ctx);
  const OarTensorView &x = ctx.inputs[0], &y = ctx.outputs[0];
  op::Attrs attrs(ctx);
  std::vector<int64_t> axes = attrs.get_ints("axes", {});
  if (!attrs.ok()) return attrs.status();  // the message names op and attribute
  bool reduced[OAR_MAX_NDIM] = {};
  for (int64_t a : axes) reduced[a] = true;
  if (axes.empty()) std::fill(reduced, reduced + OAR_MAX_NDIM, true);
  // Stride in y of each dim of x (0 for reduced dims), from y's row-major layout.
  int64_t y_stride[OAR_MAX_NDIM] = {}, stride = 1;
  for (int32_t d = x.ndim - 1; d >= 0; --d) {
    if (reduced[d]) continue;
    y_stride[d] = stride;
    stride *= x.shape[d];
  }
  std::vector<double> acc(static_cast<size_t>(op::numel(y)), 0.0);  // accumulate in double
  const T* px = op::data<T>(x);
  int64_t index[OAR_MAX_NDIM] = {}, offset = 0;
  for (int64_t i = 0, n = op::numel(x); i < n; ++i) {
    acc[static_cast<size_t>(offset)] += static_cast<double>(px[i]);
    for (int32_t d = x.ndim - 1; d >= 0; --d) {  // next row-major index of x
      offset += y_stride[d];
      if (++index[d] < x.shape[d]) break;
      offset -= y_stride[d] * index[d];
      index[d] = 0;
    }
  }
  T* py = op::data<T>(y);
  for (size_t i = 0; i < acc.size(); ++i) py[i] = static_cast<T>(acc[i]);
  return OAR_OK;
}

// matmul: a [..., m, k] (or [..., k, m] with transpose_a), b likewise; all
// three share ndim >= 2 and batch dims of size 1 broadcast.
template <typename T>
OarStatus matmul(const OarKernelContext& ctx) {
  wait_for_stream(ctx);
  const OarTensorView &a = ctx.inputs[0], &b = ctx.inputs[1], &y = ctx.outputs[0];
  op::Attrs attrs(ctx);
  bool ta = attrs.get_bool("transpose_a", false), tb = attrs.get_bool("transpose_b", false);
  if (!attrs.ok()) return attrs.status();
  int32_t nd = y.ndim;
  int64_t m = y.shape[nd - 2], n = y.shape[nd - 1], k = ta ? a.shape[nd - 2] : a.shape[nd - 1];
  // Walk the batch dims with two broadcasting indexers over [batch..., 1, 1].
  OarTensorView yb = y, ab = a, bb = b;
  yb.shape[nd - 2] = yb.shape[nd - 1] = 1;
  for (int32_t d = 0; d < nd; ++d) ab.strides[d] = bb.strides[d] = 0;
  for (int32_t d = nd - 3, sa = 1, sb = 1; d >= 0; --d) {  // batch strides in matrices
    ab.strides[d] = sa, sa *= static_cast<int32_t>(a.shape[d]);
    bb.strides[d] = sb, sb *= static_cast<int32_t>(b.shape[d]);
  }
  op::BroadcastIndexer ia(yb, ab), ib(yb, bb);
  const T *pa = op::data<T>(a), *pb = op::data<T>(b);  // data + byte_offset
  T* py = op::data<T>(y);
  int64_t batches = op::numel(yb);
  for (int64_t batch = 0; batch < batches; ++batch, ia.next(), ib.next()) {
    const T* ma = pa + ia.offset() * m * k;
    const T* mb = pb + ib.offset() * k * n;
    T* my = py + batch * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc += static_cast<double>(ta ? ma[p * m + i] : ma[i * k + p]) *
                 static_cast<double>(tb ? mb[j * k + p] : mb[p * n + j]);
        my[i * n + j] = static_cast<T>(acc);
      }
  }
  return OAR_OK;
}

// full: every element = attribute `value`, any output dtype.
OarStatus full(const OarKernelContext& ctx) {
  wait_for_stream(ctx);
  const OarTensorView& y = ctx.outputs[0];
  // One element of y's dtype with the cast contract (an int attribute stays
  // exact; Note [Cast contract] in oar/plugin.hpp), then copies of it.
  unsigned char value[8];
  op::Attrs attrs(ctx);
  if (!attrs.element_into("value", y.dtype, nullptr, value)) return attrs.status();
  size_t size = oar_dtype_size(y.dtype);
  char* p = op::data<char>(y);
  for (int64_t i = 0, n = op::numel(y); i < n; ++i) std::memcpy(p + i * size, value, size);
  return OAR_OK;
}

// cast between f32, f64, i32 and i64 with the cast contract (float -> int
// truncates toward zero and saturates, NaN -> 0).
template <typename From, typename To>
OarStatus cast(const OarKernelContext& ctx) {
  wait_for_stream(ctx);
  const From* x = op::data<From>(ctx.inputs[0]);
  To* y = op::data<To>(ctx.outputs[0]);
  for (int64_t i = 0, n = op::numel(ctx.outputs[0]); i < n; ++i) y[i] = op::cast_to<To>(x[i]);
  return OAR_OK;
}

// copy: makes a contiguous copy, any dtype (the host uses it for views).
OarStatus copy(const OarKernelContext& ctx) {
  wait_for_stream(ctx);
  std::memmove(
      op::data<char>(ctx.outputs[0]), op::data<char>(ctx.inputs[0]),
      static_cast<size_t>(op::numel(ctx.outputs[0])) * oar_dtype_size(ctx.outputs[0].dtype));
  return OAR_OK;
}

template <typename From, typename To>
void add_cast(op::KernelTable& t) {
  t.add("cast", {op::dtype_of<From>()}, {op::dtype_of<To>()}, OAR_KERNEL((cast<From, To>)));
}
template <typename From>
void add_casts(op::KernelTable& t) {
  add_cast<From, float>(t), add_cast<From, double>(t), add_cast<From, int32_t>(t),
      add_cast<From, int64_t>(t);
}

// One row per (op, dtype signature). Ops not listed run decomposed when they
// are composite and are "missing" otherwise.
OarStatus register_kernels(const OarHostApi* host) {
  op::KernelTable t(host, kDeviceType);
  constexpr int32_t F32 = OAR_DTYPE_F32, F64 = OAR_DTYPE_F64;
  t.add("add", {F32, F32}, {F32}, OAR_KERNEL(add<float>))
      .add("add", {F64, F64}, {F64}, OAR_KERNEL(add<double>));
  t.add("sub", {F32, F32}, {F32}, OAR_KERNEL(sub<float>))
      .add("sub", {F64, F64}, {F64}, OAR_KERNEL(sub<double>));
  t.add("mul", {F32, F32}, {F32}, OAR_KERNEL(mul<float>))
      .add("mul", {F64, F64}, {F64}, OAR_KERNEL(mul<double>));
  t.add("div", {F32, F32}, {F32}, OAR_KERNEL(div<float>))
      .add("div", {F64, F64}, {F64}, OAR_KERNEL(div<double>));
  t.add("neg", {F32}, {F32}, OAR_KERNEL(neg<float>))
      .add("neg", {F64}, {F64}, OAR_KERNEL(neg<double>));
  t.add("exp", {F32}, {F32}, OAR_KERNEL(exp<float>))
      .add("exp", {F64}, {F64}, OAR_KERNEL(exp<double>));
  t.add("sum", {F32}, {F32}, OAR_KERNEL(sum<float>))
      .add("sum", {F64}, {F64}, OAR_KERNEL(sum<double>));
  t.add("matmul", {F32, F32}, {F32}, OAR_KERNEL(matmul<float>));
  t.add("matmul", {F64, F64}, {F64}, OAR_KERNEL(matmul<double>));
  t.add("full", {}, {OAR_DTYPE_ANY}, OAR_KERNEL(full));
  t.add("copy", {OAR_DTYPE_ANY}, {OAR_DTYPE_ANY}, OAR_KERNEL(copy));
  add_casts<float>(t), add_casts<double>(t), add_casts<int32_t>(t), add_casts<int64_t>(t);
  return t.status();
}

}  // namespace

// ---------------------------------------------------------------------------
// 5. The entry point
// ---------------------------------------------------------------------------

extern "C" OAR_PLUGIN_EXPORT OarStatus oar_plugin_init(const OarHostApi* host,
                                                       OarPluginInfo* info) {
  // Version handshake first: a host of another major is refused politely.
  if (OarStatus s = op::accept_host(host, info, "oar-template")) return s;
  if (g_state) shutdown(nullptr);  // a second init starts afresh
  g_state = new State;
  long count = std::strtol(op::option("OAR_TEMPLATE_DEVICES", "1").c_str(), nullptr, 10);
  long memory_mb = std::strtol(op::option("OAR_TEMPLATE_MEMORY_MB", "256").c_str(), nullptr, 10);
  g_state->devices.resize(static_cast<size_t>(std::clamp(count, 0L, 16L)));  // zero devices is fine
  for (auto& dev : g_state->devices)
    dev.capacity = static_cast<uint64_t>(std::max(memory_mb, 1L)) << 20;

  // The device table: required entries first, optional ones may stay null
  // (the host then falls back; see sdk/README.md).
  OarDeviceApi api = op::make_struct<OarDeviceApi>();
  api.device_type = kDeviceType;
  api.plugin_version = "0.1.0";
  api.priority = -20;  // never the default device over cpu
  api.impl = g_state;
  api.device_count = device_count;              // required
  api.device_properties = device_properties;    // required
  api.synchronize_device = synchronize_device;  // required
  api.malloc = dev_malloc;                      // required
  api.free = dev_free;                          // required
  api.memcpy_h2d = copy_sync;                   // required
  api.memcpy_d2h = copy_sync;                   // required
  api.memcpy_d2d = copy_sync;                   // required
  api.memcpy_h2d_async = copy_async;            // optional
  api.memcpy_d2h_async = copy_async;            // optional
  api.memcpy_d2d_async = copy_async;            // optional
  api.memset_async = memset_async;              // optional
  api.memory_stats = memory_stats;              // optional
  api.stream_create = stream_create;            // optional (group)
  api.stream_destroy = stream_destroy;
  api.stream_synchronize = stream_synchronize;  // required
  api.stream_query = stream_query;              // optional
  api.event_create = event_create;              // optional (group)
  api.event_destroy = event_destroy;
  api.event_record = event_record;
  api.event_synchronize = event_synchronize;
  api.event_query = event_query;
  api.stream_wait_event = stream_wait_event;  // optional
  // memcpy_peer, collectives: left null (not supported).
  api.shutdown = shutdown;
  OarStatus status = host->register_device(host->host, &api);
  if (status == OAR_OK) status = register_kernels(host);
  if (status != OAR_OK) shutdown(nullptr);  // the host drops our registrations
  return status;
}
