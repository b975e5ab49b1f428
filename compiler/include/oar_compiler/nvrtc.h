// CUDA C -> PTX through NVRTC (loaded at run time), and ptxas on the PTX.
//
// Neither needs a GPU: NVRTC and ptxas are plain host programs of the CUDA
// toolkit. The plugin never links them; a machine without the toolkit simply
// reports "absent" and the CUDA target is not offered.
#pragma once

#include <string>
#include <vector>

namespace oar::compiler {

/// The result of compiling one CUDA C translation unit with NVRTC.
struct PtxResult {
  bool ok = false;   ///< true when NVRTC produced PTX
  std::string ptx;   ///< the PTX text (empty unless ok); for a real arch ("sm_90"): the CUBIN bytes
  std::string log;   ///< NVRTC's program log (warnings, or the errors)
  std::string error; ///< a sentence saying what failed (empty when ok)
};

/// The NVRTC library of the CUDA toolkit, opened once with dlopen.
///
/// Search order (Note [Finding NVRTC] in nvrtc.cpp): `OAR_NVRTC_LIBRARY`
/// (a file), the dynamic loader's own search (`libnvrtc.so`,
/// `libnvrtc.so.13/12/11`), then `lib64/` and `lib/` of `$CUDA_HOME`,
/// `$CUDA_PATH`, `/usr/local/cuda` and `/usr/local/cuda-*` (newest first).
class Nvrtc {
 public:
  /// The loaded library, or nullptr with `*why_not` saying what was searched.
  /// Thread-safe; the search runs once per process.
  static const Nvrtc* get(std::string* why_not = nullptr);

  /// NVRTC's version, e.g. {13, 0}.
  int major() const { return major_; }
  int minor() const { return minor_; }
  /// The file that was opened.
  const std::string& path() const { return path_; }

  /// Compiles `source` (named `name` in messages) to PTX for `arch`
  /// (a virtual architecture, "compute_90" by default) with `-std=c++17`
  /// plus `extra_options`; for a real architecture ("sm_90") the result
  /// holds the CUBIN instead (NVRTC 11.1+), which a driver older than the
  /// toolkit's PTX version still loads. Never throws; a failure is reported
  /// in the result.
  PtxResult compile(const std::string& source, const std::string& name,
                    const std::string& arch = "compute_90",
                    const std::vector<std::string>& extra_options = {}) const;

  struct Api;  ///< the resolved entry points (defined in nvrtc.cpp)

 private:
  Nvrtc() = default;
  const Api* api_ = nullptr;  // owned, lives for the process
  std::string path_;
  int major_ = 0, minor_ = 0;
};

/// The result of assembling PTX with ptxas.
struct PtxasResult {
  bool ok = false;    ///< ptxas exited 0
  std::string log;    ///< its stdout + stderr (register/spill info with -v)
  std::string error;  ///< a sentence saying what failed (empty when ok)
};

/// The ptxas executable: `OAR_PTXAS`, then `ptxas` on PATH, then `bin/` of
/// the CUDA homes NVRTC is searched in. Empty with `*why_not` when absent.
std::string find_ptxas(std::string* why_not = nullptr);

/// Runs `ptxas -arch=<arch> -v` on `ptx` (written to a temporary file, the
/// cubin discarded) in a child process, killed after `timeout_s` seconds.
PtxasResult run_ptxas(const std::string& ptx, const std::string& arch = "sm_90",
                      int timeout_s = 120);

}  // namespace oar::compiler
