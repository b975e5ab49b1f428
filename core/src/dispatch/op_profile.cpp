// Note [Op profile]
// OAR_PROFILE=1 times every top-level eager op call (an op a decomposition
// calls is inside its composite's time, not counted again): meta rule,
// allocation, kernel launch and, on the synchronous cpu device, the kernel.
// At exit the table (op, calls, total ms, us per call, share) goes to
// stderr, largest first; OAR_PROFILE=<path> writes it to that file instead.
// Off, the cost is one predictable branch per op. The counters are global
// behind a mutex: the profiler is for finding where a step spends its time,
// not for timing multi-threaded callers.
#include "dispatch/op_profile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "oar/op.h"

namespace oar {

namespace {

struct Entry {
  int64_t calls = 0, ns = 0;
};

struct Profile {
  std::mutex mu;
  std::map<std::string, Entry> by_op;
  void dump() {
    std::vector<std::pair<std::string, Entry>> rows(by_op.begin(), by_op.end());
    if (rows.empty()) return;
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
    int64_t total = 0;
    for (const auto& r : rows) total += r.second.ns;
    const char* target = std::getenv("OAR_PROFILE");
    FILE* out = stderr;
    if (target && std::string(target) != "1") out = std::fopen(target, "w");
    if (!out) out = stderr;
    std::fprintf(out, "%-28s %9s %11s %10s %7s\n", "op (OAR_PROFILE)", "calls", "total ms", "us/call", "share");
    for (const auto& [name, e] : rows)
      std::fprintf(out, "%-28s %9lld %11.3f %10.2f %6.1f%%\n", name.c_str(), static_cast<long long>(e.calls),
                   static_cast<double>(e.ns) / 1e6, static_cast<double>(e.ns) / 1e3 / static_cast<double>(e.calls),
                   100.0 * static_cast<double>(e.ns) / static_cast<double>(total));
    std::fprintf(out, "%-28s %9s %11.3f\n", "total", "", static_cast<double>(total) / 1e6);
    if (out != stderr) std::fclose(out);
  }
};

Profile& profile() {
  static Profile* p = new Profile;  // never destroyed: the atexit handler dumps it
  return *p;
}

}  // namespace

bool op_profile_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("OAR_PROFILE");
    if (!v || !*v || std::string(v) == "0") return false;
    profile();
    std::atexit([] {
      std::lock_guard<std::mutex> lock(profile().mu);
      profile().dump();
      profile().by_op.clear();
    });
    return true;
  }();
  return enabled;
}

void op_profile_add(const OpDef& op, int64_t ns) {
  Profile& p = profile();
  std::lock_guard<std::mutex> lock(p.mu);
  Entry& e = p.by_op[op.name];
  ++e.calls;
  e.ns += ns;
}

}  // namespace oar
