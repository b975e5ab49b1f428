// Private to compiler/src: the child-process runner of toolchain.cpp and
// the helpers cache.cpp shares with it.
#pragma once

#include <string>
#include <vector>

#include "oar_compiler/log.h"
#include "oar_compiler/toolchain.h"

namespace oar::compiler {

/// How a child process ended.
struct ChildResult {
  bool started = false;    ///< false: it could not be started (`error` says why)
  bool timed_out = false;  ///< killed at the deadline
  bool exited = false;     ///< exited normally (`status` holds its code)
  int status = -1;
  int signal = 0;          ///< the signal that ended it, if one did
  double seconds = 0;
  std::string output;      ///< its stdout and stderr together
  std::string error;
};

/// Runs argv[0] (looked up on PATH) with `argv` in its own process group,
/// output into `log_path`, killed after `timeout_seconds` (Note [Compiling
/// in a child]).
ChildResult run_child(const std::vector<std::string>& argv, const std::string& log_path, double timeout_seconds);
/// "<what> exited with status 1:\n  <first lines of its output>", or the
/// timeout or start failure, as one sentence.
std::string describe_failure(const std::string& what, const ChildResult& result, double timeout_seconds);
/// `cxx --version`'s output, asked once per process and command; throws
/// CompileError when it fails. `scratch_dir` holds its log briefly.
std::string compiler_version(const std::string& cxx, const std::string& scratch_dir);
/// The words of a command line ("ccache g++" -> {"ccache", "g++"}).
std::vector<std::string> split_command(const std::string& command);
/// A file's bytes ("" when it cannot be read).
std::string read_file(const std::string& path);
/// A number unique in this process, for temporary file names.
std::string unique_suffix();

}  // namespace oar::compiler
