// oar-conformance: shared declarations of the runner (see main.cpp for the
// command line and sdk/README.md for how to read the results).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "oar/oar.h"
#include "oar/plugin_api.h"

namespace oar {
struct DeviceBackend;
}

namespace oar_conformance {

enum class Tier { smoke = 0, ci = 1, full = 2 };
const char* tier_name(Tier tier);

enum class Result { pass, fail, skip, info };
const char* result_name(Result result);

/// One row of the table and one entry of the JSON report.
struct CheckResult {
  std::string name;  ///< "memory.copy", "kernel.add.f32", ...
  Result result = Result::pass;
  std::string detail;  ///< a sentence; for a failure, what was expected and found
  std::string
      failed_case;       ///< id of the first failing case ("kernel.add.f32/3"), for the repro line
  int cases = 0;         ///< cases run
  int failed_cases = 0;  ///< cases that failed
  nlohmann::json extra = nlohmann::json::object();
};

/// The command line.
struct Options {
  std::string plugin;            ///< path of the plugin under test (absolute)
  std::string device_type;       ///< type under test; default: the first the plugin registers
  std::string reference = "";    ///< reference type; default mock (cpu when testing the mock)
  std::string reference_plugin;  ///< path of the reference plugin; default: found beside the runner
  Tier tier = Tier::ci;
  std::string filter;  ///< ECMAScript regex over check names and case ids
  std::string report_path;
  bool require_all = false;  ///< missing primitives fail instead of being listed
  int collective_rank = -1;  ///< internal: run as collective worker of this rank
  std::string store_dir;     ///< internal: the collective workers' file store
};

/// What every section needs: options, filter, results.
class Suite {
 public:
  explicit Suite(Options options);

  const Options& options() const { return options_; }
  /// The device type and reference are resolved once the plugin is loaded.
  Options& mutable_options() { return options_; }
  Tier tier() const { return options_.tier; }
  /// True when the filter selects check `name` (empty filter: everything).
  bool selected(const std::string& name) const;
  /// True when the filter selects the check or the case `name/case_index`.
  bool case_selected(const std::string& name, int case_index) const;
  /// True when any check whose name starts with `prefix` could be selected;
  /// used to skip whole sections cheaply.
  bool section_selected(const std::string& prefix) const;

  void add(CheckResult result);
  const std::vector<CheckResult>& results() const { return results_; }
  bool any_failure() const;

  /// Shell command that reruns only `id` (a check name or a case id).
  std::string repro_command(const std::string& id) const;

  /// Marks what is running, for the crash handler.
  void set_current(const std::string& id);
  const std::string& current() const { return current_; }

  nlohmann::json report_json() const;
  nlohmann::json& meta() { return meta_; }

 private:
  Options options_;
  bool has_filter_ = false;
  std::regex filter_;
  std::vector<CheckResult> results_;
  std::string current_;
  nlohmann::json meta_ = nlohmann::json::object();
};

/// The devices compared: the one under test and the reference.
struct Devices {
  oar::Device dut;        ///< device under test, index 0
  oar::Device reference;  ///< reference device, index 0 (may be absent)
  bool has_reference = false;
  oar::DeviceBackend* backend = nullptr;  ///< the plugin's backend (raw OarDeviceApi)
};

// ---- sections ----
/// ABI checks that load the plugin in forked children (before the runtime
/// exists): version, struct sizes, required/optional entries, zero devices,
/// a host of another major.
void run_abi_probes(Suite& suite);
/// Memory checks through the plugin's raw device table.
void run_memory_checks(Suite& suite, const Devices& devices);
/// Stream and event checks through the raw device table.
void run_stream_checks(Suite& suite, const Devices& devices);
/// Every op: native kernels against the reference, per dtype, on generated
/// shapes; decomposed and missing ops listed.
void run_kernel_checks(Suite& suite, const Devices& devices);
/// Gradients of differentiable ops through the plugin against the reference.
void run_grad_checks(Suite& suite, const Devices& devices);
/// Every op with a native kernel on transposed, sliced and broadcast views
/// against contiguous inputs (strided_checks.cpp).
void run_strided_checks(Suite& suite, const Devices& devices);
/// Tensor::assign_ into whole, offset, transposed and strided views of a
/// buffer, against the same write on the host (inplace_checks.cpp).
void run_inplace_checks(Suite& suite, const Devices& devices);
/// Static mode: traced programs run by the executor (arena views at byte
/// offsets, several streams) against the reference interpreter.
void run_static_checks(Suite& suite, const Devices& devices);
/// Collectives across 2 ranks (child processes) when the plugin has them.
void run_collective_checks(Suite& suite, const Devices& devices, const std::string& self_exe);
/// Entry point of a collective worker process; returns the exit status.
int collective_worker(const Options& options);

// ---- helpers shared by sections ----
/// Last error message the plugin set through the host (and clears it).
std::string take_plugin_error();
/// "status 2 (out of memory)".
std::string status_str(OarStatus status);

}  // namespace oar_conformance
