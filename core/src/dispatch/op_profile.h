// The eager op profiler (Note [Op profile] in op_profile.cpp).
#pragma once

#include <chrono>
#include <cstdint>

namespace oar {

struct OpDef;

/// True when OAR_PROFILE is set to a non-empty value other than 0 (read once).
bool op_profile_enabled();
/// Adds one call of `op` that took `ns` nanoseconds.
void op_profile_add(const OpDef& op, int64_t ns);

/// Times one top-level eager op call when the profiler is on.
class OpProfileScope {
 public:
  OpProfileScope(const OpDef& op, bool top_level)
      : op_(top_level && op_profile_enabled() ? &op : nullptr),
        start_(op_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{}) {}
  ~OpProfileScope() {
    if (op_)
      op_profile_add(*op_, std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::steady_clock::now() - start_).count());
  }
  OpProfileScope(const OpProfileScope&) = delete;
  OpProfileScope& operator=(const OpProfileScope&) = delete;

 private:
  const OpDef* op_;  // not owned; null: not timing
  std::chrono::steady_clock::time_point start_;
};

}  // namespace oar
