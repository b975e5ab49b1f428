// libFuzzer target for the plugin probe's report parser: the bytes a probe
// process (which ran untrusted plugin code) sends back over its pipe.
// Checks beyond "does not crash": parsing is total and deterministic, and
// what it keeps survives a format/parse round trip unchanged.
//
// Built by tests/fuzz/CMakeLists.txt:
//   oar_add_fuzzer(probe_report fuzz_probe_report.cpp)
// linking core/src/runtime/probe_report.cpp (no other dependency) with
// core/src on the include path.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "runtime/probe_report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  oar::ProbeReport report = oar::parse_probe_report(bytes);
  if (!(oar::parse_probe_report(bytes) == report)) std::abort();
  oar::ProbeReport again = oar::parse_probe_report(oar::format_probe_report(report));
  // A report without its header keeps nothing, so it formats to nothing.
  if (!report.header && !(again == oar::ProbeReport{})) std::abort();
  if (report.header && !(again == report)) std::abort();
  if (report.load_error.size() > oar::kProbeReportMaxLine) std::abort();
  (void)oar::describe_probe_stage(report.stage);
  return 0;
}
