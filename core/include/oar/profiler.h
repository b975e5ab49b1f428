// The trace recorder behind paddle.profiler (Note [Trace recorder] in
// core/src/runtime/profiler.cpp): RecordEvent scopes around eager op
// dispatch, static-program ops and kernel launches, and user scopes.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oar::profiler {

/// One finished scope.
struct Event {
  std::string name;      ///< op, kernel or user label
  std::string category;  ///< "Operator", "Kernel", "Program", "UserDefined", "ProfileStep", ...
  std::string device;    ///< "cpu:0"; empty for a scope not tied to a device
  int stream = -1;       ///< stream index on the device (0: the compute stream); -1: none
  uint64_t thread = 0;   ///< the recording thread: 1, 2, ... in order of first use
  int64_t start_ns = 0;  ///< steady clock, as now_ns()
  int64_t end_ns = 0;
  int64_t bytes = 0;         ///< bytes the recording thread allocated during the scope
  std::string input_shapes;  ///< "[[2, 3], [3]]" of an eager op when recording shapes; else empty
  std::string input_dtypes;  ///< "[float32, float32]" likewise
};

namespace detail {
extern std::atomic<bool> g_recording;
extern std::atomic<bool> g_shapes;
extern thread_local int64_t t_allocated;
}  // namespace detail

/// True while recording; one relaxed atomic load, so scopes cost nothing when off.
inline bool recording() { return detail::g_recording.load(std::memory_order_relaxed); }
/// True while recording with record_shapes (eager ops keep their input shapes and dtypes).
inline bool recording_shapes() {
  return recording() && detail::g_shapes.load(std::memory_order_relaxed);
}
/// Starts recording (events already recorded are kept until collect());
/// `record_shapes`: eager op events carry their input shapes and dtypes.
void start(bool record_shapes = false);
/// Stops recording; scopes open now are still recorded when they end.
void stop();
/// Moves out every event recorded so far, in order of their end.
std::vector<Event> collect();
/// The steady clock in nanoseconds, the time base of Event.
int64_t now_ns();
/// The recording thread's id as in Event.thread.
uint64_t thread_id();
/// Counts `bytes` allocated by this thread (the caching allocator calls it).
inline void note_allocation(uint64_t bytes) {
  if (recording()) detail::t_allocated += static_cast<int64_t>(bytes);
}

/// A scope: records one Event from construction (or begin()) to destruction
/// (or end()) when the recorder was on at its start.
class RecordEvent {
 public:
  RecordEvent() = default;
  RecordEvent(std::string_view name, std::string_view category, std::string_view device = {},
              int stream = -1) {
    if (recording()) begin(name, category, device, stream);
  }
  ~RecordEvent() {
    if (event_) end();
  }
  RecordEvent(const RecordEvent&) = delete;
  RecordEvent& operator=(const RecordEvent&) = delete;

  /// Starts the scope (when recording); a scope already begun restarts.
  void begin(std::string_view name, std::string_view category, std::string_view device = {},
             int stream = -1);
  /// Ends the scope and records it; nothing when it did not begin. Idempotent.
  void end();
  /// True between a recording begin() and end().
  bool active() const { return event_.has_value(); }
  /// Sets the input shapes and dtypes of an active scope.
  void set_inputs(std::string shapes, std::string dtypes) {
    if (event_) {
      event_->input_shapes = std::move(shapes);
      event_->input_dtypes = std::move(dtypes);
    }
  }

 private:
  std::optional<Event> event_;  // the scope being timed; bytes holds the counter at begin
};

}  // namespace oar::profiler
