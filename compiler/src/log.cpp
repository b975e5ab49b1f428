// The compiler's log and warnings (log.h).
#include "oar_compiler/log.h"

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>

#include "oar/plugin_api.h"
#include "runtime/runtime_state.h"

namespace oar::compiler {

bool log_enabled() {
  const char* v = std::getenv("OAR_COMPILER_LOG");
  return v != nullptr && std::strcmp(v, "0") != 0 && v[0] != '\0';
}

std::ostream* log_stream() { return log_enabled() ? &std::cerr : nullptr; }

void log(const std::string& message) {
  if (!log_enabled()) return;
  static std::mutex mutex;  // whole lines from concurrent compiles
  std::lock_guard lock(mutex);
  std::cerr << "oar compiler: " << message << "\n" << std::flush;
}

void warn(const std::string& message) { log_message(OAR_LOG_WARNING, "compiler: " + message); }

}  // namespace oar::compiler
