// The probe report: one line per fact, written by oar-plugin-probe as it
// goes, parsed by the host (see probe_report.h).
#include "runtime/probe_report.h"

#include <algorithm>
#include <charconv>

namespace oar {

namespace {

constexpr std::string_view kStage = "stage ";
constexpr std::string_view kLoadError = "load-error ";
constexpr std::string_view kNoEntry = "no-entry";
constexpr std::string_view kInitThrew = "init-threw";
constexpr std::string_view kInitStatus = "init-status ";
constexpr std::string_view kLibrary = "lib ";
constexpr std::string_view kDone = "done";

std::string_view stage_name(ProbeStage stage) {
  switch (stage) {
    case ProbeStage::load: return "load";
    case ProbeStage::init: return "init";
    case ProbeStage::returned: return "returned";
    default: return "none";
  }
}

bool parse_stage(std::string_view name, ProbeStage& stage) {
  for (ProbeStage s : {ProbeStage::load, ProbeStage::init, ProbeStage::returned}) {
    if (name == stage_name(s)) {
      stage = s;
      return true;
    }
  }
  return false;
}

bool parse_int32(std::string_view text, int32_t& value) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

std::string one_line(std::string_view text) {
  std::string out(text.substr(0, kProbeReportMaxLine / 2));
  for (char& c : out) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

// Applies one line to the report; lines that make no sense are ignored.
void apply_line(std::string_view line, ProbeReport& report) {
  if (line.substr(0, kStage.size()) == kStage) {
    ProbeStage stage;
    if (parse_stage(line.substr(kStage.size()), stage) && stage > report.stage) report.stage = stage;
  } else if (line.substr(0, kLoadError.size()) == kLoadError) {
    report.load_error = one_line(line.substr(kLoadError.size()));
  } else if (line == kNoEntry) {
    report.no_entry = true;
  } else if (line == kInitThrew) {
    report.init_threw = true;
  } else if (line.substr(0, kInitStatus.size()) == kInitStatus) {
    int32_t status;
    if (parse_int32(line.substr(kInitStatus.size()), status)) report.init_status = status;
  } else if (line.substr(0, kLibrary.size()) == kLibrary) {
    std::string path = one_line(line.substr(kLibrary.size()));
    if (path.size() > 1 && path[0] == '/' && report.libraries.size() < kProbeReportMaxLibraries &&
        std::find(report.libraries.begin(), report.libraries.end(), path) == report.libraries.end()) {
      report.libraries.push_back(std::move(path));
    }
  } else if (line == kDone) {
    report.done = true;
  }
}

}  // namespace

std::string probe_line_stage(ProbeStage stage) { return std::string(kStage) + std::string(stage_name(stage)) + "\n"; }
std::string probe_line_load_error(std::string_view text) { return std::string(kLoadError) + one_line(text) + "\n"; }
std::string probe_line_no_entry() { return std::string(kNoEntry) + "\n"; }
std::string probe_line_init_threw() { return std::string(kInitThrew) + "\n"; }
std::string probe_line_init_status(int32_t status) { return std::string(kInitStatus) + std::to_string(status) + "\n"; }
std::string probe_line_library(std::string_view path) { return std::string(kLibrary) + one_line(path) + "\n"; }
std::string probe_line_done() { return std::string(kDone) + "\n"; }

ProbeReport parse_probe_report(std::string_view bytes) {
  ProbeReport report;
  size_t start = 0;
  bool first = true;
  while (start < bytes.size() && !report.done) {
    size_t end = bytes.find('\n', start);
    if (end == std::string_view::npos) break;  // an unfinished last line is not trusted
    std::string_view line = bytes.substr(start, end - start);
    start = end + 1;
    if (first) {
      first = false;
      report.header = line == kProbeReportHeader;
      if (!report.header) return report;
      continue;
    }
    if (line.size() <= kProbeReportMaxLine) apply_line(line, report);
  }
  return report;
}

std::string format_probe_report(const ProbeReport& report) {
  if (!report.header) return {};
  std::string out = std::string(kProbeReportHeader) + "\n";
  if (report.stage != ProbeStage::none) out += probe_line_stage(report.stage);
  if (!report.load_error.empty()) out += probe_line_load_error(report.load_error);
  if (report.no_entry) out += probe_line_no_entry();
  if (report.init_threw) out += probe_line_init_threw();
  if (report.init_status != 0) out += probe_line_init_status(report.init_status);
  for (const auto& path : report.libraries) out += probe_line_library(path);
  if (report.done) out += probe_line_done();
  return out;
}

std::string describe_probe_stage(ProbeStage stage) {
  switch (stage) {
    case ProbeStage::load: return "during load (dlopen and the plugin's static constructors)";
    case ProbeStage::init: return "during oar_plugin_init";
    case ProbeStage::returned: return "after oar_plugin_init returned";
    default: return "before it reported anything";
  }
}

}  // namespace oar
