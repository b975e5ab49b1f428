// Memory, stream and event checks through the plugin's raw device table
// (the OarDeviceApi the runtime holds), on device 0. Device memory is never
// dereferenced by the host: every byte is checked through copies.
#include <chrono>
#include <cstring>
#include <numeric>
#include <thread>

#include "conformance.h"
#include "runtime/runtime_state.h"

namespace oar_conformance {
namespace {

using Bytes = std::vector<unsigned char>;

/// Thrown by the helpers below: a failed step of a check.
struct Failure {
  std::string what;
};

/// The plugin's table for device 0, with calls that throw Failure.
class Raw {
 public:
  explicit Raw(const Devices& d)
      : api_(d.backend->api), impl_(api_.impl), count_(d.backend->count) {}
  const OarDeviceApi& api() const { return api_; }
  int count() const { return count_; }

  void check(OarStatus s, const std::string& what) const {
    if (s != OAR_OK)
      throw Failure{what + " returned " + status_str(s) + ": " + take_plugin_error()};
  }
  void* alloc(uint64_t bytes, uint64_t alignment = 64, int device = 0) {
    void* p = nullptr;
    check(api_.malloc(impl_, device, bytes, alignment, &p),
          "malloc(" + std::to_string(bytes) + ")");
    if (!p && bytes)
      throw Failure{"malloc(" + std::to_string(bytes) + ") returned OK and a null pointer"};
    return p;
  }
  void free(void* p, int device = 0) { check(api_.free(impl_, device, p), "free"); }
  void h2d(void* dst, const void* src, uint64_t n) {
    check(api_.memcpy_h2d(impl_, 0, dst, src, n), "memcpy_h2d");
  }
  void d2h(void* dst, const void* src, uint64_t n) {
    check(api_.memcpy_d2h(impl_, 0, dst, src, n), "memcpy_d2h");
  }
  void d2d(void* dst, const void* src, uint64_t n) {
    check(api_.memcpy_d2d(impl_, 0, dst, src, n), "memcpy_d2d");
  }
  void sync(OarStream_t s) { check(api_.stream_synchronize(impl_, 0, s), "stream_synchronize"); }
  Bytes read(const void* src, uint64_t n) {
    Bytes out(n);
    d2h(out.data(), src, n);
    return out;
  }

 private:
  OarDeviceApi api_;
  void* impl_;
  int count_;
};

/// Device memory freed when the scope ends.
class Buffer {
 public:
  Buffer(Raw& raw, uint64_t bytes, uint64_t alignment = 64)
      : raw_(raw), bytes_(bytes), ptr_(raw.alloc(bytes, alignment)) {}
  ~Buffer() {
    if (ptr_) raw_.api().free(raw_.api().impl, 0, ptr_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  char* ptr() const { return static_cast<char*>(ptr_); }
  uint64_t size() const { return bytes_; }

 private:
  Raw& raw_;
  uint64_t bytes_;
  void* ptr_;
};

/// A stream created for a check (the default stream when streams are absent).
class ScopedStream {
 public:
  explicit ScopedStream(Raw& raw) : raw_(raw) {
    if (raw.api().stream_create)
      raw.check(raw.api().stream_create(raw.api().impl, 0, &s_), "stream_create");
  }
  ~ScopedStream() {
    if (s_ && raw_.api().stream_destroy) raw_.api().stream_destroy(raw_.api().impl, 0, s_);
  }
  OarStream_t get() const { return s_; }

 private:
  Raw& raw_;
  OarStream_t s_ = nullptr;
};

class ScopedEvent {
 public:
  explicit ScopedEvent(Raw& raw) : raw_(raw) {
    raw.check(raw.api().event_create(raw.api().impl, 0, &e_), "event_create");
  }
  ~ScopedEvent() {
    if (e_) raw_.api().event_destroy(raw_.api().impl, 0, e_);
  }
  OarEvent_t get() const { return e_; }

 private:
  Raw& raw_;
  OarEvent_t e_ = nullptr;
};

Bytes pattern(uint64_t n, unsigned seed) {
  Bytes b(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& v : b) {
    x = x * 1664525u + 1013904223u;
    v = static_cast<unsigned char>(x >> 24);
  }
  return b;
}

// First differing byte, as a sentence; empty when equal.
std::string compare(const Bytes& got, const Bytes& want, const std::string& what) {
  for (size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i])
      return what + ": byte " + std::to_string(i) + " is " + std::to_string(got[i]) + " but " +
             std::to_string(want[i]) + " was written";
  return {};
}

void expect_equal(const Bytes& got, const Bytes& want, const std::string& what) {
  if (std::string diff = compare(got, want, what); !diff.empty()) throw Failure{diff};
}

/// Runs one named check: body returns the pass detail or throws Failure.
template <typename F>
void run_check(Suite& suite, const std::string& name, F body) {
  if (!suite.selected(name)) return;
  suite.set_current(name);
  CheckResult r{.name = name};
  try {
    r.detail = body();
    if (r.detail.rfind("skip:", 0) == 0) {
      r.result = Result::skip;
      r.detail = r.detail.substr(6);
    }
  } catch (const Failure& f) {
    r.result = Result::fail;
    r.detail = f.what;
  } catch (const std::exception& e) {
    r.result = Result::fail;
    r.detail = e.what();
  }
  suite.add(r);
}

const uint64_t kOffsets[] = {0, 1, 3, 17, 4093};
const uint64_t kLengths[] = {1, 5, 31, 1000};

// Copies `len` bytes at `src_off` of one buffer to `dst_off` of another with
// `copy`, then checks the target range and that the bytes around it survived.
template <typename Copy>
void offset_copies(Raw& raw, const char* what, Copy copy) {
  const uint64_t size = 8192;
  Buffer a(raw, size), b(raw, size);
  unsigned seed = 1;
  for (uint64_t so : kOffsets)
    for (uint64_t doff : {uint64_t{0}, uint64_t{7}})
      for (uint64_t len : kLengths) {
        Bytes src = pattern(size, seed++), dst = pattern(size, seed++);
        raw.h2d(a.ptr(), src.data(), size);
        raw.h2d(b.ptr(), dst.data(), size);
        copy(a.ptr(), b.ptr(), so, doff, len, src, dst);
        std::memcpy(dst.data() + doff, src.data() + so, len);
        expect_equal(raw.read(b.ptr(), size), dst,
                     std::string(what) + " of " + std::to_string(len) + " bytes from offset " +
                         std::to_string(so) + " to offset " + std::to_string(doff));
      }
}

}  // namespace

void run_memory_checks(Suite& suite, const Devices& devices) {
  Raw raw(devices);
  const OarDeviceApi& api = raw.api();

  run_check(suite, "memory.alloc_free", [&]() -> std::string {
    for (uint64_t n : {uint64_t{1}, uint64_t{3}, uint64_t{64}, uint64_t{4097}, uint64_t{1} << 20}) {
      Buffer b(raw, n);
      Bytes p = pattern(n, static_cast<unsigned>(n));
      raw.h2d(b.ptr(), p.data(), n);
      expect_equal(raw.read(b.ptr(), n), p, "a " + std::to_string(n) + "-byte block read back");
    }
    void* zero = nullptr;
    raw.check(api.malloc(api.impl, 0, 0, 64, &zero), "malloc(0)");
    raw.free(zero);
    // Many live blocks at once must not overlap.
    std::vector<std::unique_ptr<Buffer>> blocks;
    for (unsigned i = 0; i < 32; ++i) {
      blocks.push_back(std::make_unique<Buffer>(raw, 257));
      Bytes p = pattern(257, 100 + i);
      raw.h2d(blocks.back()->ptr(), p.data(), 257);
    }
    for (unsigned i = 0; i < 32; ++i)
      expect_equal(raw.read(blocks[i]->ptr(), 257), pattern(257, 100 + i),
                   "block " + std::to_string(i) + " of 32 live blocks");
    return "sizes 1 to 1 MiB and 0 bytes; 32 live blocks keep their contents";
  });

  run_check(suite, "memory.alignment", [&]() -> std::string {
    for (uint64_t align : {uint64_t{16}, uint64_t{64}, uint64_t{256}, uint64_t{4096}}) {
      for (uint64_t n : {uint64_t{1}, uint64_t{100}, uint64_t{5000}}) {
        Buffer b(raw, n, align);
        if (reinterpret_cast<uintptr_t>(b.ptr()) % align != 0)
          throw Failure{"malloc(" + std::to_string(n) + ", alignment " + std::to_string(align) +
                        ") returned " + oar_conformance::status_str(OAR_OK) +
                        " with a pointer that is not aligned"};
      }
    }
    return "alignments 16, 64, 256, 4096 honoured";
  });

  run_check(suite, "memory.copy", [&]() -> std::string {
    const uint64_t n = (1 << 20) + 13;
    Buffer a(raw, n), b(raw, n);
    Bytes p = pattern(n, 7);
    raw.h2d(a.ptr(), p.data(), n);
    expect_equal(raw.read(a.ptr(), n), p, "h2d then d2h");
    raw.d2d(b.ptr(), a.ptr(), n);
    expect_equal(raw.read(b.ptr(), n), p, "d2d");
    offset_copies(raw, "h2d",
                  [&](char*, char* dst, uint64_t so, uint64_t doff, uint64_t len, const Bytes& src,
                      const Bytes&) { raw.h2d(dst + doff, src.data() + so, len); });
    offset_copies(raw, "d2d",
                  [&](char* src, char* dst, uint64_t so, uint64_t doff, uint64_t len, const Bytes&,
                      const Bytes&) { raw.d2d(dst + doff, src + so, len); });
    Buffer c(raw, 8192);
    Bytes q = pattern(8192, 9);
    raw.h2d(c.ptr(), q.data(), 8192);
    for (uint64_t so : kOffsets)
      for (uint64_t len : kLengths) {
        Bytes out(len + 8, 0x5C), want = out;
        raw.d2h(out.data() + 3, c.ptr() + so, len);
        std::memcpy(want.data() + 3, q.data() + so, len);
        expect_equal(out, want,
                     "d2h of " + std::to_string(len) + " bytes from offset " + std::to_string(so));
      }
    raw.h2d(a.ptr(), p.data(), 0);  // zero-byte copies are no-ops
    return "h2d, d2h, d2d of 1 MiB + 13 bytes and at odd offsets and lengths";
  });

  run_check(suite, "memory.copy_async", [&]() -> std::string {
    if (!api.memcpy_h2d_async && !api.memcpy_d2h_async && !api.memcpy_d2d_async)
      return "skip: no async copies (the host uses the synchronous ones)";
    ScopedStream s(raw);
    offset_copies(
        raw, "async copy",
        [&](char* src, char* dst, uint64_t so, uint64_t doff, uint64_t len, const Bytes& hsrc,
            const Bytes&) {
          if (api.memcpy_h2d_async && len % 2) {
            raw.check(api.memcpy_h2d_async(api.impl, 0, dst + doff, hsrc.data() + so, len, s.get()),
                      "memcpy_h2d_async");
          } else if (api.memcpy_d2d_async) {
            raw.check(api.memcpy_d2d_async(api.impl, 0, dst + doff, src + so, len, s.get()),
                      "memcpy_d2d_async");
          } else {
            raw.d2d(dst + doff, src + so, len);
          }
          raw.sync(s.get());
        });
    if (api.memcpy_d2h_async) {
      Buffer c(raw, 4096);
      Bytes q = pattern(4096, 11), out(4096 + 16, 0x77), want = out;
      raw.h2d(c.ptr(), q.data(), 4096);
      raw.check(api.memcpy_d2h_async(api.impl, 0, out.data() + 5, c.ptr() + 1, 4000, s.get()),
                "memcpy_d2h_async");
      raw.sync(s.get());
      std::memcpy(want.data() + 5, q.data() + 1, 4000);
      expect_equal(out, want, "d2h_async of 4000 bytes from offset 1");
    }
    return "async copies on a stream, at odd offsets and lengths";
  });

  run_check(suite, "memory.peer", [&]() -> std::string {
    if (raw.count() < 2) return "skip: one device; peer copies need two";
    if (!api.memcpy_peer) return "skip: memcpy_peer is null (the host stages through host memory)";
    const uint64_t n = 10007;
    Buffer a(raw, n);
    void* b = raw.alloc(n, 64, 1);
    Bytes p = pattern(n, 21);
    raw.h2d(a.ptr(), p.data(), n);
    raw.check(api.memcpy_peer(api.impl, 1, b, 0, a.ptr(), n), "memcpy_peer");
    Bytes out(n);
    raw.check(api.memcpy_d2h(api.impl, 1, out.data(), b, n), "memcpy_d2h on device 1");
    raw.free(b, 1);
    expect_equal(out, p, "peer copy device 0 -> 1");
    return "device 0 -> device 1";
  });

  run_check(suite, "memory.memset", [&]() -> std::string {
    if (!api.memset_async)
      return "skip: memset_async is null (the host copies a filled host buffer)";
    const uint64_t n = 4096;
    Buffer a(raw, n);
    Bytes p = pattern(n, 31);
    raw.h2d(a.ptr(), p.data(), n);
    ScopedStream s(raw);
    raw.check(api.memset_async(api.impl, 0, a.ptr() + 5, 0x5A, 37, s.get()), "memset_async");
    raw.check(api.memset_async(api.impl, 0, a.ptr() + 1000, 0, 3000, s.get()), "memset_async");
    raw.sync(s.get());
    std::memset(p.data() + 5, 0x5A, 37);
    std::memset(p.data() + 1000, 0, 3000);
    expect_equal(raw.read(a.ptr(), n), p, "memset of 37 bytes at offset 5 and 3000 at offset 1000");
    return "ranges at odd offsets set, neighbours untouched";
  });

  run_check(suite, "memory.stats", [&]() -> std::string {
    if (!api.memory_stats)
      return "skip: memory_stats is null (the host reports its allocator only)";
    auto stats = [&] {
      OarMemoryStats s{};
      s.struct_size = sizeof s;
      raw.check(api.memory_stats(api.impl, 0, &s), "memory_stats");
      return s;
    };
    OarMemoryStats before = stats();
    if (before.used > before.total)
      throw Failure{"used " + std::to_string(before.used) + " exceeds total " +
                    std::to_string(before.total)};
    const uint64_t n = 3 << 20;
    uint64_t during_used;
    {
      Buffer b(raw, n);
      during_used = stats().used;
    }
    OarMemoryStats after = stats();
    if (during_used < before.used + n)
      throw Failure{"used grew from " + std::to_string(before.used) + " to " +
                    std::to_string(during_used) + " bytes after allocating " + std::to_string(n)};
    if (after.used != before.used)
      throw Failure{"used is " + std::to_string(after.used) + " after the free but was " +
                    std::to_string(before.used) + " before"};
    return "used +" + std::to_string(during_used - before.used) +
           " bytes for a 3 MiB block and back; total " + std::to_string(before.total);
  });

  run_check(suite, "memory.out_of_memory", [&]() -> std::string {
    uint64_t capacity = 0;
    if (api.memory_stats) {
      OarMemoryStats s{};
      s.struct_size = sizeof s;
      if (api.memory_stats(api.impl, 0, &s) == OAR_OK) capacity = s.total;
    }
    if (!capacity) {
      OarDeviceProperties p{};
      p.struct_size = sizeof p;
      raw.check(api.device_properties(api.impl, 0, &p), "device_properties");
      capacity = p.total_memory;
    }
    if (!capacity) return "skip: the device reports no total memory";
    uint64_t request = capacity * 2 + (64 << 20);
    void* p = nullptr;
    OarStatus s = api.malloc(api.impl, 0, request, 64, &p);
    std::string message = take_plugin_error();
    if (s == OAR_OK) {
      api.free(api.impl, 0, p);
      throw Failure{"malloc of " + std::to_string(request) +
                    " bytes, twice the reported capacity of " + std::to_string(capacity) +
                    ", returned OK instead of OUT_OF_MEMORY"};
    }
    if (s != OAR_ERROR_OUT_OF_MEMORY)
      throw Failure{"malloc past capacity returned " + status_str(s) +
                    " instead of status 2 (out of memory)"};
    Buffer after(raw, 4096);  // the device still works
    return "malloc of 2 x capacity (" + std::to_string(capacity) +
           " bytes) reported out of memory: " +
           (message.empty() ? std::string("(no message)") : message);
  });

  run_check(suite, "memory.tensor_roundtrip", [&]() -> std::string {
    // The same path ops use: the runtime's allocator and the compute stream.
    std::vector<float> v(1031);
    std::iota(v.begin(), v.end(), -515.f);
    oar::Tensor t = oar::Tensor::from_vector(v, {1031}, devices.dut);
    if (t.to_vector<float>() != v)
      throw Failure{"Tensor::from_vector then to_vector changed the values"};
    if (devices.has_reference) {
      oar::Tensor r = t.to(devices.reference).to(devices.dut);
      if (r.to_vector<float>() != v)
        throw Failure{"Tensor::to reference and back changed the values"};
    }
    return "from_vector, to_vector, to() and back";
  });
  suite.set_current("");
}

void run_stream_checks(Suite& suite, const Devices& devices) {
  Raw raw(devices);
  const OarDeviceApi& api = raw.api();
  const uint64_t n = 4 << 20;  // big enough that an early read sees stale data

  run_check(suite, "stream.order", [&]() -> std::string {
    if (!api.memcpy_h2d_async) return "skip: no async copies; all work is synchronous";
    ScopedStream s(raw);
    Buffer a(raw, n), b(raw, n);
    for (unsigned round = 0; round < 8; ++round) {
      Bytes old = pattern(n, 1000 + round), fresh = pattern(n, 2000 + round), out(n), out2(n);
      raw.h2d(a.ptr(), old.data(), n);
      // h2d, then d2d, then overwrite the source, then read both back: each
      // step must see the previous one, on one stream.
      raw.check(api.memcpy_h2d_async(api.impl, 0, a.ptr(), fresh.data(), n, s.get()),
                "memcpy_h2d_async");
      if (api.memcpy_d2d_async)
        raw.check(api.memcpy_d2d_async(api.impl, 0, b.ptr(), a.ptr(), n, s.get()),
                  "memcpy_d2d_async");
      if (api.memset_async)
        raw.check(api.memset_async(api.impl, 0, a.ptr(), 0x3C, n, s.get()), "memset_async");
      if (api.memcpy_d2h_async) {
        raw.check(api.memcpy_d2h_async(api.impl, 0, out.data(), a.ptr(), n, s.get()),
                  "memcpy_d2h_async");
        if (api.memcpy_d2d_async)
          raw.check(api.memcpy_d2h_async(api.impl, 0, out2.data(), b.ptr(), n, s.get()),
                    "memcpy_d2h_async");
        raw.sync(s.get());
      } else {
        raw.sync(s.get());
        raw.d2h(out.data(), a.ptr(), n);
        if (api.memcpy_d2d_async) raw.d2h(out2.data(), b.ptr(), n);
      }
      Bytes want_a = api.memset_async ? Bytes(n, 0x3C) : fresh;
      expect_equal(
          out, want_a,
          "round " + std::to_string(round) + ": the last read of the stream's work on block a");
      if (api.memcpy_d2d_async)
        expect_equal(out2, fresh, "round " + std::to_string(round) + ": d2d_async then d2h_async");
    }
    // A synchronous copy waits for work queued on the default stream.
    Bytes fresh = pattern(n, 3000);
    raw.check(api.memcpy_h2d_async(api.impl, 0, a.ptr(), fresh.data(), n, nullptr),
              "memcpy_h2d_async (default stream)");
    expect_equal(raw.read(a.ptr(), n), fresh,
                 "memcpy_d2h right after h2d_async on the default stream");
    return std::string("8 rounds of h2d_async -> d2d_async -> memset_async -> d2h_async on ") +
           (api.stream_create ? "one stream" : "the default stream (the device has no others)") +
           "; sync copies after the default stream";
  });

  run_check(suite, "stream.cross_stream_wait", [&]() -> std::string {
    if (!api.stream_create)
      return "skip: no streams: everything runs on the default stream, in order, so there is "
             "no other stream to wait for";
    if (!api.event_create) return "skip: no events (the host synchronizes streams instead)";
    if (!api.memcpy_h2d_async || !api.memcpy_d2h_async) return "skip: no async copies";
    ScopedStream s1(raw), s2(raw);
    Buffer a(raw, n);
    for (unsigned round = 0; round < 4; ++round) {
      ScopedEvent e(raw);
      Bytes old = pattern(n, 4000 + round), fresh = pattern(n, 5000 + round), out(n);
      raw.h2d(a.ptr(), old.data(), n);
      raw.check(api.memcpy_h2d_async(api.impl, 0, a.ptr(), fresh.data(), n, s1.get()),
                "memcpy_h2d_async on s1");
      raw.check(api.event_record(api.impl, 0, e.get(), s1.get()), "event_record on s1");
      if (api.stream_wait_event)
        raw.check(api.stream_wait_event(api.impl, 0, s2.get(), e.get()),
                  "stream_wait_event(s2, e)");
      else
        raw.check(api.event_synchronize(api.impl, 0, e.get()), "event_synchronize");
      raw.check(api.memcpy_d2h_async(api.impl, 0, out.data(), a.ptr(), n, s2.get()),
                "memcpy_d2h_async on s2");
      raw.sync(s2.get());  // only s2: its wait must have covered s1's copy
      expect_equal(out, fresh,
                   "round " + std::to_string(round) + ": s2 read after waiting for s1's event");
      raw.sync(s1.get());
    }
    return api.stream_wait_event
               ? "s2 waits for an event recorded on s1 (4 rounds)"
               : "stream_wait_event is null: the host's event_synchronize fallback works";
  });

  run_check(suite, "stream.query_sync", [&]() -> std::string {
    if (!api.stream_query && !api.event_create)
      return "skip: no stream_query and no events: the device has one in-order stream and "
             "nothing to wait for (the host synchronizes instead)";
    if (!api.memcpy_h2d_async) return "skip: no async copies";
    ScopedStream s(raw);
    Buffer a(raw, n);
    Bytes fresh = pattern(n, 6000);
    auto poll = [&](const char* what, auto query) {
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      for (;;) {
        int32_t done = -1;
        raw.check(query(&done), what);
        if (done == 1) return;
        if (done != 0)
          throw Failure{std::string(what) + " set done to " + std::to_string(done) +
                        ", not 0 or 1"};
        if (std::chrono::steady_clock::now() > deadline)
          throw Failure{std::string(what) +
                        " still reports 0 after 20 s: queries must make progress"};
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    };
    std::string detail;
    if (api.stream_query) {
      raw.check(api.memcpy_h2d_async(api.impl, 0, a.ptr(), fresh.data(), n, s.get()),
                "memcpy_h2d_async");
      poll("stream_query", [&](int32_t* d) { return api.stream_query(api.impl, 0, s.get(), d); });
      expect_equal(raw.read(a.ptr(), n), fresh, "data after stream_query reported done");
      detail += "stream_query reaches done; ";
    }
    if (api.event_create) {
      ScopedEvent e(raw);
      Bytes fresh2 = pattern(n, 6001);
      raw.check(api.memcpy_h2d_async(api.impl, 0, a.ptr(), fresh2.data(), n, s.get()),
                "memcpy_h2d_async");
      raw.check(api.event_record(api.impl, 0, e.get(), s.get()), "event_record");
      poll("event_query", [&](int32_t* d) { return api.event_query(api.impl, 0, e.get(), d); });
      expect_equal(raw.read(a.ptr(), n), fresh2, "data after event_query reported done");
      Bytes fresh3 = pattern(n, 6002);
      raw.check(api.memcpy_h2d_async(api.impl, 0, a.ptr(), fresh3.data(), n, s.get()),
                "memcpy_h2d_async");
      raw.check(api.event_record(api.impl, 0, e.get(), s.get()), "event_record (again)");
      raw.check(api.event_synchronize(api.impl, 0, e.get()), "event_synchronize");
      int32_t done = -1;
      raw.check(api.event_query(api.impl, 0, e.get(), &done), "event_query");
      if (done != 1)
        throw Failure{"event_query reports " + std::to_string(done) +
                      " right after event_synchronize"};
      expect_equal(raw.read(a.ptr(), n), fresh3, "data after event_synchronize");
      detail += "event_query reaches done; event_synchronize waits; ";
    }
    raw.sync(s.get());
    if (api.stream_query) {
      int32_t done = -1;
      raw.check(api.stream_query(api.impl, 0, s.get(), &done), "stream_query");
      if (done != 1)
        throw Failure{"stream_query reports " + std::to_string(done) +
                      " right after stream_synchronize"};
    }
    raw.check(api.synchronize_device(api.impl, 0), "synchronize_device");
    return detail + "synchronize_device OK";
  });
  suite.set_current("");
}

}  // namespace oar_conformance
