// Running the system compiler in a child process (toolchain.h).
//
// Note [Compiling in a child]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Generated C++ is compiled by the system compiler (OAR_COMPILER_CXX,
// default `c++`) in a child started with posix_spawnp, in a process group
// of its own (the driver starts cc1plus, as and ld: a timeout kills the
// whole group), stdin from /dev/null, stdout and stderr into a log file
// that the failure message quotes (its first lines). The parent polls
// waitpid with a deadline (OAR_COMPILER_TIMEOUT seconds, default 120):
// nothing blocks without a bound, and a compiler that hangs costs the
// timeout, then the group runs unfused. The compiler's `--version` output
// (part of the cache key) is asked once per process and command.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "toolchain_internal.h"

extern char** environ;

namespace oar::compiler {

namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' ? std::string(v) : fallback;
}

}  // namespace

ToolchainConfig toolchain_from_env() {
  ToolchainConfig config;
  config.cxx = env_or("OAR_COMPILER_CXX", "c++");
  std::string timeout = env_or("OAR_COMPILER_TIMEOUT", "");
  if (!timeout.empty()) {
    char* end = nullptr;
    double t = std::strtod(timeout.c_str(), &end);
    if (end != timeout.c_str() && *end == '\0' && t > 0) {
      config.timeout_seconds = t;
    } else {
      warn("OAR_COMPILER_TIMEOUT='" + timeout + "' is not a positive number of seconds; using " +
           std::to_string(static_cast<int>(config.timeout_seconds)));
    }
  }
  std::string dir = env_or("OAR_COMPILER_CACHE_DIR", "");
  if (dir.empty()) {
    std::string xdg = env_or("XDG_CACHE_HOME", "");
    std::string home = env_or("HOME", "");
    if (!xdg.empty()) dir = xdg + "/oar/compiler";
    else if (!home.empty()) dir = home + "/.cache/oar/compiler";
    else dir = "/tmp/oar-compiler-cache-" + std::to_string(getuid());
  }
  config.cache_dir = dir;
  std::string keep = env_or("OAR_COMPILER_KEEP_SOURCE", "0");
  config.keep_source = keep != "0" && keep != "false";
  return config;
}

std::vector<std::string> split_command(const std::string& command) {
  std::vector<std::string> words;
  std::istringstream in(command);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

ChildResult run_child(const std::vector<std::string>& argv, const std::string& log_path, double timeout_seconds) {
  ChildResult result;
  if (argv.empty()) {
    result.error = "the command is empty";
    return result;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);  // its own group: a timeout kills the driver and its children
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGINT);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    result.error = "cannot start `" + argv[0] + "`: " + std::strerror(rc);
    return result;
  }
  result.started = true;
  auto start = std::chrono::steady_clock::now();
  auto deadline = start + std::chrono::duration<double>(timeout_seconds);
  auto pause = std::chrono::milliseconds(2);
  for (;;) {
    int status = 0;
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      result.exited = WIFEXITED(status);
      result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      result.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      break;
    }
    if (done < 0 && errno != EINTR) {
      result.error = std::string("waitpid failed: ") + std::strerror(errno);
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      result.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(pause);
    if (pause < std::chrono::milliseconds(50)) pause *= 2;
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.output = read_file(log_path);
  return result;
}

std::string describe_failure(const std::string& what, const ChildResult& r, double timeout_seconds) {
  if (!r.started) return what + ": " + r.error;
  if (r.timed_out) {
    return what + " did not finish within " + std::to_string(timeout_seconds) +
           " s (OAR_COMPILER_TIMEOUT) and was killed";
  }
  std::string how = r.signal ? "was killed by signal " + std::to_string(r.signal)
                             : "exited with status " + std::to_string(r.status);
  std::string text = what + " " + how;
  if (!r.output.empty()) {
    text += ":";
    int lines = 0;
    std::istringstream in(r.output);
    for (std::string line; std::getline(in, line);) {
      if (lines == 12) {
        text += "\n  ...";
        break;
      }
      text += "\n  " + line;
      ++lines;
    }
  }
  return text;
}

std::string compiler_version(const std::string& cxx, const std::string& scratch_dir) {
  static std::mutex mutex;
  static std::map<std::string, std::string>* versions = new std::map<std::string, std::string>;
  std::lock_guard lock(mutex);
  auto it = versions->find(cxx);
  if (it != versions->end()) return it->second;
  std::vector<std::string> argv = split_command(cxx);
  argv.push_back("--version");
  std::string log_path = scratch_dir + "/version.log.tmp." + std::to_string(getpid()) + "." + unique_suffix();
  ChildResult r = run_child(argv, log_path, 30);
  unlink(log_path.c_str());
  if (!r.started || r.timed_out || !r.exited || r.status != 0) {
    throw CompileError(ErrorCode::unsupported,
                       describe_failure("the C++ compiler `" + cxx + " --version` (OAR_COMPILER_CXX)", r, 30));
  }
  versions->emplace(cxx, r.output);
  return r.output;
}

std::string unique_suffix() {
  static std::atomic<uint64_t> counter{0};
  return std::to_string(counter.fetch_add(1));
}

}  // namespace oar::compiler
