// Note [Trace recorder]
// ~~~~~~~~~~~~~~~~~~~~~
// paddle.profiler's events come from RecordEvent scopes: every eager op
// dispatch (category "Operator", nested when a decomposition re-enters the
// dispatcher), every op a static program's executor launches ("Operator"
// inside the run's "Program" scope), every kernel launch ("Kernel", on the
// device and stream it runs on) and the scopes users open from Python. A
// scope reads one relaxed atomic at its start: off, that is its whole cost.
// On, it takes the steady clock at both ends and this thread's allocation
// counter (bytes the caching allocator handed out to this thread, so a
// scope's bytes include its nested scopes'), and appends the finished event
// to one list behind a mutex; collect() moves the list out. Scopes that
// began before stop() are still recorded when they end, so the list holds
// only whole scopes. Thread ids are small numbers in order of first use, not
// the OS ids, so traces of one program compare across runs.
#include "oar/profiler.h"

#include <chrono>
#include <mutex>

namespace oar::profiler {

namespace detail {
std::atomic<bool> g_recording{false};
std::atomic<bool> g_shapes{false};
thread_local int64_t t_allocated = 0;
}  // namespace detail

namespace {

struct Recorder {
  std::mutex mu;
  std::vector<Event> events;
};

Recorder& recorder() {
  static Recorder* r = new Recorder;  // never destroyed: scopes may end during exit
  return *r;
}

std::atomic<uint64_t> g_next_thread{1};

}  // namespace

void start(bool record_shapes) {
  detail::g_shapes.store(record_shapes, std::memory_order_relaxed);
  detail::g_recording.store(true, std::memory_order_relaxed);
}

void stop() { detail::g_recording.store(false, std::memory_order_relaxed); }

std::vector<Event> collect() {
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<Event> out;
  out.swap(r.events);
  return out;
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

uint64_t thread_id() {
  thread_local uint64_t id = g_next_thread.fetch_add(1, std::memory_order_relaxed);
  return id;
}

void RecordEvent::begin(std::string_view name, std::string_view category, std::string_view device,
                        int stream) {
  if (!recording()) return;
  Event& e = event_.emplace();
  e.name = name;
  e.category = category;
  e.device = device;
  e.stream = stream;
  e.thread = thread_id();
  e.bytes = detail::t_allocated;
  e.start_ns = now_ns();
}

void RecordEvent::end() {
  if (!event_) return;
  Event& e = *event_;
  e.end_ns = now_ns();
  e.bytes = detail::t_allocated - e.bytes;
  Recorder& r = recorder();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    r.events.push_back(std::move(e));
  }
  event_.reset();
}

}  // namespace oar::profiler
