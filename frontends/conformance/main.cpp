// oar-conformance: checks one device plugin against the mock reference.
//
//   oar-conformance --plugin PATH [--device-type T] [--tier smoke|ci|full]
//                   [--filter REGEX] [--report FILE.json] [--reference TYPE]
//                   [--reference-plugin PATH] [--require-all]
//
// Sections, in order: abi (forked probes, then loading into the runtime),
// memory, stream/event, kernel (every op, per dtype, against the reference),
// grad, collective (2 processes). Prints a table, one repro command per
// failure, writes the JSON report, exits 1 on any failure (2: bad usage).
//
// Note [Reference device]
// Kernel and gradient results are compared with the mock, loaded next to the
// plugin in one oar::Runtime. When the plugin under test *is* the mock, the
// reference is the cpu plugin instead (comparing the mock with itself would
// prove nothing); --reference overrides either choice.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "conformance.h"
#include "runtime/runtime_state.h"

#ifndef OAR_BUILD_PLUGIN_DIR
#define OAR_BUILD_PLUGIN_DIR ""
#endif
#ifndef OAR_INSTALL_PLUGIN_DIR
#define OAR_INSTALL_PLUGIN_DIR ""
#endif

namespace fs = std::filesystem;

namespace oar_conformance {

const char* tier_name(Tier tier) {
  switch (tier) {
    case Tier::smoke:
      return "smoke";
    case Tier::ci:
      return "ci";
    case Tier::full:
      return "full";
  }
  return "?";
}

const char* result_name(Result result) {
  switch (result) {
    case Result::pass:
      return "PASS";
    case Result::fail:
      return "FAIL";
    case Result::skip:
      return "SKIP";
    case Result::info:
      return "INFO";
  }
  return "?";
}

std::string take_plugin_error() { return oar::host_take_error(); }

std::string status_str(OarStatus status) {
  static const char* const names[] = {"ok",          "invalid argument", "out of memory",
                                      "unsupported", "device error",     "timeout",
                                      "internal",    "no device"};
  std::string s = "status " + std::to_string(status);
  if (status >= 0 && status <= 7) s += std::string(" (") + names[status] + ")";
  return s;
}

Suite::Suite(Options options) : options_(std::move(options)) {
  if (!options_.filter.empty()) {
    has_filter_ = true;
    filter_ = std::regex(options_.filter, std::regex::ECMAScript);
  }
}

bool Suite::selected(const std::string& name) const {
  return !has_filter_ || std::regex_search(name, filter_);
}

bool Suite::case_selected(const std::string& name, int case_index) const {
  return !has_filter_ || std::regex_search(name, filter_) ||
         std::regex_search(name + "/" + std::to_string(case_index), filter_);
}

bool Suite::section_selected(const std::string& prefix) const {
  if (!has_filter_) return true;
  // A filter anchored on another section ("^kernel\.") cannot select this one.
  const std::string& f = options_.filter;
  if (f.size() > 1 && f[0] == '^' && std::isalpha(static_cast<unsigned char>(f[1]))) {
    std::string head;
    for (size_t i = 1;
         i < f.size() && (std::isalnum(static_cast<unsigned char>(f[i])) || f[i] == '_'); ++i)
      head += f[i];
    return prefix.rfind(head, 0) == 0 || head.rfind(prefix, 0) == 0;
  }
  return true;
}

void Suite::add(CheckResult result) {
  if (result.result == Result::skip && options_.require_all &&
      result.extra.value("missing", false)) {
    result.result = Result::fail;
    result.detail += " (--require-all)";
  }
  results_.push_back(std::move(result));
}

bool Suite::any_failure() const {
  for (const auto& r : results_)
    if (r.result == Result::fail) return true;
  return false;
}

namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string regex_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::strchr(".^$|()[]{}*+?\\", c)) out += '\\';
    out += c;
  }
  return out;
}

std::string g_self_exe;

}  // namespace

std::string Suite::repro_command(const std::string& id) const {
  std::string cmd = shell_quote(g_self_exe) + " --plugin " + shell_quote(options_.plugin);
  if (!options_.device_type.empty()) cmd += " --device-type " + options_.device_type;
  cmd += std::string(" --tier ") + tier_name(options_.tier);
  if (!options_.reference.empty()) cmd += " --reference " + options_.reference;
  if (!options_.reference_plugin.empty())
    cmd += " --reference-plugin " + shell_quote(options_.reference_plugin);
  if (options_.require_all) cmd += " --require-all";
  cmd += " --filter " + shell_quote("^" + regex_escape(id) + "$");
  return cmd;
}

void Suite::set_current(const std::string& id) { current_ = id; }

nlohmann::json Suite::report_json() const {
  nlohmann::json j = meta_;
  int pass = 0, fail = 0, skip = 0, info = 0;
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& r : results_) {
    nlohmann::json c = {{"name", r.name}, {"result", result_name(r.result)}, {"detail", r.detail}};
    if (r.cases) c["cases"] = r.cases;
    if (r.failed_cases) c["failed_cases"] = r.failed_cases;
    if (r.result == Result::fail)
      c["repro"] = repro_command(r.failed_case.empty() ? r.name : r.failed_case);
    if (!r.extra.empty()) c["extra"] = r.extra;
    checks.push_back(std::move(c));
    (r.result == Result::pass   ? pass
     : r.result == Result::fail ? fail
     : r.result == Result::skip ? skip
                                : info)++;
  }
  j["checks"] = std::move(checks);
  j["summary"] = {{"pass", pass}, {"fail", fail}, {"skip", skip}, {"info", info}};
  j["failed"] = nlohmann::json::array();
  for (const auto& r : results_)
    if (r.result == Result::fail) j["failed"].push_back(r.name);
  return j;
}

}  // namespace oar_conformance

namespace {

using namespace oar_conformance;

Suite* g_suite = nullptr;

void usage(std::ostream& out) {
  out << "usage: oar-conformance --plugin PATH [--device-type T] [--tier smoke|ci|full]\n"
         "                       [--filter REGEX] [--report FILE.json] [--reference TYPE]\n"
         "                       [--reference-plugin PATH] [--require-all]\n"
         "Checks a device plugin against the mock reference: ABI behaviour, memory, streams\n"
         "and events, every kernel per dtype, gradients, collectives (2 processes).\n"
         "  --filter REGEX   run only checks (\"kernel.add.f32\") or cases (\"kernel.add.f32/3\")\n"
         "                   the regex finds; every failure prints a command rerunning just it\n"
         "  --require-all    primitives without a kernel fail instead of being listed\n"
         "Exit status: 0 all selected checks passed or were skipped, 1 a check failed, 2 usage.\n";
}

bool parse_args(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* name) -> std::string {
      if (a.rfind(std::string(name) + "=", 0) == 0) return a.substr(std::strlen(name) + 1);
      if (i + 1 >= argc) throw std::runtime_error(std::string(name) + " needs a value");
      return argv[++i];
    };
    auto is = [&](const char* name) {
      return a == name || a.rfind(std::string(name) + "=", 0) == 0;
    };
    if (is("--plugin"))
      o.plugin = value("--plugin");
    else if (is("--device-type"))
      o.device_type = value("--device-type");
    else if (is("--tier")) {
      std::string t = value("--tier");
      if (t == "smoke")
        o.tier = Tier::smoke;
      else if (t == "ci")
        o.tier = Tier::ci;
      else if (t == "full")
        o.tier = Tier::full;
      else
        throw std::runtime_error("--tier must be smoke, ci or full, not '" + t + "'");
    } else if (is("--filter"))
      o.filter = value("--filter");
    else if (is("--report"))
      o.report_path = value("--report");
    else if (is("--reference"))
      o.reference = value("--reference");
    else if (is("--reference-plugin"))
      o.reference_plugin = value("--reference-plugin");
    else if (a == "--require-all")
      o.require_all = true;
    else if (is("--collective-worker"))
      o.collective_rank = std::stoi(value("--collective-worker"));
    else if (is("--store"))
      o.store_dir = value("--store");
    else if (a == "-h" || a == "--help") {
      usage(std::cout);
      std::exit(0);
    } else
      throw std::runtime_error("unknown argument '" + a + "'");
  }
  if (o.plugin.empty()) throw std::runtime_error("--plugin PATH is required");
  std::error_code ec;
  fs::path p = fs::absolute(o.plugin, ec);
  o.plugin = ec ? o.plugin : p.lexically_normal().string();
  if (!o.filter.empty()) std::regex check(o.filter);  // throws on a bad regex
  return true;
}

// liboar_<type>.so of the reference: --reference-plugin, else beside the
// runner (build tree: bin/../plugins; install: bin/../lib*/oar/plugins), else
// the directories the core was built to search.
std::string find_reference_plugin(const std::string& type, const std::string& exe) {
  std::string file = "liboar_" + type + ".so";
  fs::path bin = fs::path(exe).parent_path();
  for (const fs::path& dir : {bin / ".." / "plugins", bin / ".." / "lib" / "oar" / "plugins",
                              bin / ".." / "lib64" / "oar" / "plugins",
                              fs::path(OAR_BUILD_PLUGIN_DIR), fs::path(OAR_INSTALL_PLUGIN_DIR)}) {
    std::error_code ec;
    if (!dir.empty() && fs::exists(dir / file, ec))
      return fs::weakly_canonical(dir / file, ec).string();
  }
  return {};
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec);
}

void print_table(const Suite& suite) {
  size_t width = 10;
  for (const auto& r : suite.results()) width = std::max(width, r.name.size());
  width = std::min<size_t>(width, 44);
  std::printf("%-*s  %-6s %s\n", static_cast<int>(width), "check", "result", "detail");
  std::printf("%s\n", std::string(width + 60, '-').c_str());
  for (const auto& r : suite.results()) {
    std::string detail = r.detail;
    if (r.cases) detail += " [" + std::to_string(r.cases) + " cases]";
    if (detail.size() > 160) detail = detail.substr(0, 157) + "...";
    std::printf("%-*s  %-6s %s\n", static_cast<int>(width), r.name.c_str(), result_name(r.result),
                detail.c_str());
  }
}

bool write_report(const Suite& suite) {
  if (suite.options().report_path.empty()) return true;
  std::ofstream out(suite.options().report_path);
  out << suite.report_json().dump(2) << "\n";
  if (!out) {
    std::cerr << "oar-conformance: cannot write the report to '" << suite.options().report_path
              << "'\n";
    return false;
  }
  return true;
}

// A plugin that crashes the process still gets a report naming the case.
void on_fatal_signal(int sig) {
  std::signal(sig, SIG_DFL);
  if (g_suite) {
    CheckResult r;
    r.name = g_suite->current().empty() ? "crash" : g_suite->current();
    size_t slash = r.name.find('/');
    r.failed_case = r.name;
    if (slash != std::string::npos) r.name = r.name.substr(0, slash);
    r.result = Result::fail;
    r.detail = std::string("the process died with signal ") + std::to_string(sig) + " (" +
               strsignal(sig) + ") while running " + r.failed_case;
    g_suite->add(r);
    std::fprintf(stderr, "\noar-conformance: %s\nreproduce: %s\n", r.detail.c_str(),
                 g_suite->repro_command(r.failed_case).c_str());
    write_report(*g_suite);
  }
  std::raise(sig);
}

// Loads the plugin (and the reference) into the global runtime and reports
// abi.load; fills `devices`. False when nothing more can run.
bool load_into_runtime(Suite& suite, Options& o, Devices& devices) {
  CheckResult load{.name = "abi.load"};
  oar::Runtime& rt = oar::Runtime::global();
  const oar::PluginRecord* record = nullptr;
  for (const auto& p : rt.plugins())
    if (same_file(p.path, o.plugin)) record = &p;
  if (!record) {
    load.result = Result::fail;
    load.detail = "the runtime did not load the plugin";
    for (const auto& s : rt.skipped())
      if (same_file(s.path, o.plugin) || s.path == o.plugin) load.detail += ": " + s.reason;
    suite.add(load);
    return false;
  }
  if (o.device_type.empty()) {
    if (record->device_types.empty()) {
      load.result = Result::fail;
      load.detail = "the plugin loaded but registered no device type";
      suite.add(load);
      return false;
    }
    o.device_type = record->device_types.front();
  } else if (std::find(record->device_types.begin(), record->device_types.end(), o.device_type) ==
             record->device_types.end()) {
    load.result = Result::fail;
    load.detail = "the plugin does not register device type '" + o.device_type + "'";
    suite.add(load);
    return false;
  }
  load.detail = "'" + record->name + "' ABI " + std::to_string(record->abi_major) + "." +
                std::to_string(record->abi_minor) + ", device type '" + o.device_type + "', " +
                std::to_string(rt.device_count(o.device_type)) + " devices, " +
                std::to_string(record->num_kernels) + " kernels";
  suite.add(load);
  devices.dut = {o.device_type, 0};
  devices.backend = rt.state().find(o.device_type);
  if (o.reference.empty())
    o.reference = o.device_type == "mock" ? "cpu" : "mock";  // Note [Reference device]
  devices.reference = {o.reference, 0};
  suite.meta()["reference"] = o.reference;
  devices.has_reference = rt.device_count(o.reference) > 0 && o.reference != o.device_type;
  suite.meta()["device_type"] = o.device_type;
  suite.meta()["plugin_name"] = record->name;
  suite.meta()["abi"] = {
      {"plugin", std::to_string(record->abi_major) + "." + std::to_string(record->abi_minor)},
      {"host",
       std::to_string(OAR_ABI_VERSION_MAJOR) + "." + std::to_string(OAR_ABI_VERSION_MINOR)}};
  if (rt.device_count(o.device_type) == 0) {
    suite.add({.name = "device.count",
               .result = Result::skip,
               .detail = "the plugin reports zero '" + o.device_type +
                         "' devices: only the ABI checks ran"});
    return false;
  }
  if (!devices.has_reference)
    suite.add({.name = "reference",
               .result = Result::skip,
               .detail = "reference device '" + o.reference +
                         ":0' is not present; comparisons are skipped"});
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  try {
    parse_args(argc, argv, options);
  } catch (const std::exception& e) {
    std::cerr << "oar-conformance: " << e.what() << "\n";
    usage(std::cerr);
    return 2;
  }
  std::error_code ec;
  g_self_exe = fs::read_symlink("/proc/self/exe", ec).string();
  if (ec) g_self_exe = argv[0];

  // The plugin first, then the reference plugins (the first plugin of a type
  // wins, so the plugin under test shadows an installed one of its type).
  std::string path = options.plugin;
  std::vector<std::string> refs;
  if (!options.reference_plugin.empty()) refs.push_back(options.reference_plugin);
  for (const std::string& type :
       {options.reference.empty() ? std::string("mock") : options.reference, std::string("cpu")}) {
    if (!options.reference_plugin.empty()) break;
    if (std::string found = find_reference_plugin(type, g_self_exe); !found.empty())
      refs.push_back(found);
  }
  for (const auto& r : refs) path += ":" + r;
  if (const char* old = std::getenv("OAR_PLUGIN_PATH"); old && *old) path += std::string(":") + old;
  setenv("OAR_PLUGIN_PATH", path.c_str(), 1);
  setenv("OAR_DEVICE", "", 1);

  if (options.collective_rank >= 0) return collective_worker(options);

  Suite suite(options);
  g_suite = &suite;
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(sig, on_fatal_signal);
  suite.meta() = {{"plugin", options.plugin},
                  {"tier", tier_name(options.tier)},
                  {"filter", options.filter},
                  {"reference_plugins", refs}};

  // ABI probes fork before the runtime starts any thread.
  if (suite.section_selected("abi")) run_abi_probes(suite);

  Devices devices;
  bool loaded = false;
  try {
    loaded = load_into_runtime(suite, suite.mutable_options(), devices);
  } catch (const std::exception& e) {
    suite.add({.name = "abi.load",
               .result = Result::fail,
               .detail = std::string("loading failed: ") + e.what()});
  }
  Suite& s = suite;
  if (loaded) {
    auto guarded = [&](const char* section, auto&& fn) {
      if (!s.section_selected(section)) return;
      try {
        fn();
      } catch (const std::exception& e) {
        s.add({.name = std::string(section) + ".error",
               .result = Result::fail,
               .detail = std::string("the section stopped: ") + e.what(),
               .failed_case = s.current()});
      }
    };
    guarded("memory", [&] { run_memory_checks(s, devices); });
    guarded("stream", [&] { run_stream_checks(s, devices); });
    guarded("kernel", [&] { run_kernel_checks(s, devices); });
    guarded("grad", [&] { run_grad_checks(s, devices); });
    guarded("strided", [&] { run_strided_checks(s, devices); });
    guarded("inplace", [&] { run_inplace_checks(s, devices); });
    guarded("static", [&] { run_static_checks(s, devices); });
    guarded("collective", [&] { run_collective_checks(s, devices, g_self_exe); });
    s.set_current("");
  }
  options = s.options();

  print_table(s);
  int fails = 0;
  for (const auto& r : s.results()) {
    if (r.result != Result::fail) continue;
    if (fails++ == 0) std::printf("\nFailures (each line reruns one case):\n");
    std::printf("  %s: %s\n", r.name.c_str(),
                s.repro_command(r.failed_case.empty() ? r.name : r.failed_case).c_str());
  }
  auto summary = s.report_json()["summary"];
  std::printf("\n%s on %s (reference %s, tier %s): %d passed, %d failed, %d skipped\n",
              options.plugin.c_str(),
              options.device_type.empty() ? "?" : options.device_type.c_str(),
              devices.reference.type.empty() ? "none" : devices.reference.type.c_str(),
              tier_name(options.tier), summary["pass"].get<int>(), summary["fail"].get<int>(),
              summary["skip"].get<int>());
  bool written = write_report(s);
  std::fflush(stdout);
  g_suite = nullptr;
  return s.any_failure() || !written ? 1 : 0;
}
