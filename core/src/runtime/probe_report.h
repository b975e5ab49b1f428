// The report a plugin probe process (oar-plugin-probe) writes to its parent,
// and its parser. The parser reads bytes from a process that ran untrusted
// plugin code, so it accepts any input: it never throws, never reads past
// the buffer, and keeps only what it understood (fuzzed by
// tests/fuzz/fuzz_probe_report.cpp). No dependency beyond the standard
// library, so the probe helper and the fuzzer link this file alone.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace oar {

/// How far the probe got. Each stage is reported before it starts, so a
/// process that dies leaves the stage it died in as the last one.
enum class ProbeStage : int32_t {
  none = 0,      ///< nothing understood was reported
  load = 1,      ///< dlopen of the plugin (its static constructors run here)
  init = 2,      ///< oar_plugin_init
  returned = 3,  ///< oar_plugin_init returned (or loading failed without a crash)
};

/// What a probe reported.
struct ProbeReport {
  bool header = false;  ///< the first line was the expected header
  ProbeStage stage = ProbeStage::none;
  bool done = false;         ///< the probe finished its work and reported it
  std::string load_error;    ///< dlopen's message when loading failed
  bool no_entry = false;     ///< the plugin does not export oar_plugin_init
  bool init_threw = false;   ///< oar_plugin_init threw a C++ exception
  int32_t init_status = 0;   ///< what oar_plugin_init returned (stage returned)
  /// Absolute paths of the shared objects loaded with the plugin (its
  /// dependencies, and what its init opened), without duplicates: a cached
  /// outcome holds only while none of them changed.
  std::vector<std::string> libraries;
  bool operator==(const ProbeReport&) const = default;
};

/// The report's first line.
inline constexpr std::string_view kProbeReportHeader = "oar-plugin-probe 1";
/// Longest line the parser keeps; longer lines are ignored.
inline constexpr size_t kProbeReportMaxLine = 4096;
/// Most libraries the parser keeps; later ones are ignored.
inline constexpr size_t kProbeReportMaxLibraries = 512;

/// Lines the probe writes (each ends with '\n'; `text` loses any newline).
std::string probe_line_stage(ProbeStage stage);
std::string probe_line_load_error(std::string_view text);
std::string probe_line_no_entry();
std::string probe_line_init_threw();
std::string probe_line_init_status(int32_t status);
std::string probe_line_library(std::string_view path);
std::string probe_line_done();

/// Parses a report. Unknown or malformed lines are ignored; nothing is
/// accepted before the header or after "done"; stages only move forward.
ProbeReport parse_probe_report(std::string_view bytes);
/// Writes the report back as the probe would (the fuzzer checks that parse
/// and format round-trip).
std::string format_probe_report(const ProbeReport& report);
/// "during load", "during oar_plugin_init", ... for messages.
std::string describe_probe_stage(ProbeStage stage);

}  // namespace oar
