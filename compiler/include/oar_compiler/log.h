/// \file log.h
/// The compiler's messages: OAR_COMPILER_LOG=1 prints groups, refused
/// fusions, cache hits and misses and compile times to stderr ("oar
/// compiler: ..."); warnings (a group that runs unfused, and why) always
/// print, through the core's log ("oar warning: compiler: ...").
#pragma once

#include <ostream>
#include <string>

namespace oar::compiler {

/// True when OAR_COMPILER_LOG is set to 1 (read on every call: tests flip it).
bool log_enabled();
/// The stream the log goes to (std::cerr) when log_enabled(), else nullptr:
/// what plan_fusion's `log` argument takes.
std::ostream* log_stream();
/// Prints "oar compiler: <message>" when log_enabled().
void log(const std::string& message);
/// Prints "oar warning: compiler: <message>" (always, unless OAR_LOG_LEVEL
/// silences warnings).
void warn(const std::string& message);

}  // namespace oar::compiler
