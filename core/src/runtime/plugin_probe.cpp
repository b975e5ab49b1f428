// Plugin probes: spawn oar-plugin-probe per plugin, read its report with a
// time limit, and turn a crash, exit or hang into a skip reason.
//
// Note [Plugin probe]
// ~~~~~~~~~~~~~~~~~~~
// A plugin's static constructors and oar_plugin_init run arbitrary vendor
// code; one that segfaults, aborts, calls exit() or loops forever would take
// the host down (or hang it) with no word about which plugin. So before
// dlopen in this process, each candidate is loaded and initialised once in a
// child process, and only plugins whose child reported that init returned
// are loaded here. The child's failure is the skip reason: its signal or
// exit code and the stage it died in (probe_report.h), or the time limit.
//
// Why posix_spawn of a helper executable and not fork(): the host is often
// multi-threaded when the runtime starts (Python threads, OpenMP and oneDNN
// pools, a caller's own threads). After fork() only async-signal-safe calls
// are safe in the child, and dlopen, malloc and a plugin's init are not: a
// lock held by another thread at the fork stays locked forever in the child,
// so a good plugin could "hang" its probe, and libgomp's pools do not survive
// a fork. posix_spawn (vfork + exec in glibc) runs nothing of ours between
// the two, and the helper starts as a fresh single-threaded process with the
// same environment, loader paths and options as ours.
//
// The helper lives next to liboar_core.so (build tree, install and Python
// package alike). When it is missing or cannot start, plugins are loaded
// unprobed with one warning: a missing helper must not cost the devices.
//
// Only a probe that crashed, exited early or hung fails; a plugin whose init
// returned an error, or that does not load at all, passes the probe and gets
// its exact reason from the ordinary load (one code path for those messages).
//
// Cache (probe_cache.h): a pass, and a crash or exit in init, are
// properties of the files involved: they are cached by the (path, size,
// mtime) of the plugin and of every library the probe saw loaded with it
// (its dependencies, and what its init opened), and by the host's ABI, so
// an upgraded libdnnl or driver library means a new probe. A timeout may be
// a loaded machine, and a death inside dlopen or a plugin that does not load
// comes before the library list, so none of those is cached. What the cache cannot see: a changed environment
// (a device plugged in, an option set); remove the cache file or set
// OAR_PLUGIN_PROBE_CACHE= to probe afresh.
#include "runtime/plugin_probe.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "runtime/probe_cache.h"
#include "runtime/probe_report.h"
#include "runtime/runtime_state.h"

extern char** environ;

namespace oar {

namespace {

using Clock = std::chrono::steady_clock;

// The probe process of one candidate, while it runs.
struct RunningProbe {
  size_t index = 0;  // into the candidates
  pid_t pid = -1;
  int report_fd = -1;  // read end of the report pipe
  Clock::time_point deadline;
};

std::string signal_description(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return "signal " + std::to_string(sig) + (abbrev ? std::string(" (SIG") + abbrev + ")" : std::string());
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

// Starts the helper for `plugin`; returns the running probe or an errno.
int spawn_probe(const std::string& helper, const std::string& plugin, RunningProbe& probe) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return errno;
  if (fds[1] <= 3) {  // dup2(3, 3) would leave close-on-exec set on the report fd
    int moved = fcntl(fds[1], F_DUPFD_CLOEXEC, 4);
    close(fds[1]);
    if (moved < 0) {
      close(fds[0]);
      return errno;
    }
    fds[1] = moved;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 3);  // clears close-on-exec on fd 3
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);  // signals we ignore (SIGPIPE...) are not inherited
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::string arg0 = "oar-plugin-probe";
  char* argv[] = {arg0.data(), const_cast<char*>(plugin.c_str()), nullptr};
  int error = posix_spawn(&probe.pid, helper.c_str(), &actions, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(fds[1]);
  if (error != 0) {
    close(fds[0]);
    return error;
  }
  probe.report_fd = fds[0];
  return 0;
}

// Reads the report until the probe says "done", closes the pipe, or the
// deadline passes. Returns false on the deadline.
bool read_report(RunningProbe& probe, std::string& bytes) {
  char buffer[4096];
  while (true) {
    if (parse_probe_report(bytes).done) return true;
    // Probes run side by side and are collected one after the other, so a
    // probe's deadline may have passed while another was waited for: what it
    // wrote by then still counts, and only an empty pipe past the deadline
    // is a timeout.
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(probe.deadline - Clock::now());
    pollfd pfd{probe.report_fd, POLLIN, 0};
    int ready = poll(&pfd, 1, static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1000)));
    if (ready < 0 && errno != EINTR) return true;
    if (ready == 0 && left.count() <= 0) return false;
    if (ready <= 0) continue;
    ssize_t n = read(probe.report_fd, buffer, sizeof buffer);
    if (n == 0) return true;  // every writer closed it: the probe has exited
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return true;
    }
    if (bytes.size() < (1 << 16)) bytes.append(buffer, static_cast<size_t>(n));
  }
}

// Waits for the probe to exit until `deadline`; false when it did not.
bool wait_exit(const RunningProbe& probe, Clock::time_point deadline, int& status) {
  while (true) {
    pid_t r = waitpid(probe.pid, &status, WNOHANG);
    if (r == probe.pid) return true;
    if (r < 0 && errno != EINTR) {  // ECHILD: SIGCHLD is ignored, the child reaped itself
      status = 0;
      return true;
    }
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

struct Finished {
  ProbeVerdict verdict;
  bool cacheable = false;
  std::vector<std::string> libraries;  // what the probe saw loaded
};

// For OAR_LOG_LEVEL=debug: what the probe saw of a plugin that survived it.
std::string summary(const ProbeReport& r) {
  if (!r.load_error.empty()) return "dlopen failed: " + r.load_error;
  if (r.no_entry) return "no " OAR_PLUGIN_INIT_SYMBOL;
  if (r.init_threw) return "init threw";
  return "init returned status " + std::to_string(r.init_status);
}

Finished finish_probe(RunningProbe& probe, const std::string& plugin, double timeout_s) {
  std::string bytes;
  bool in_time = read_report(probe, bytes);
  int status = 0;
  // A probe that reported "done" is only exiting: give it a moment even when
  // its deadline passed while another probe was waited for.
  auto exit_deadline = std::max(probe.deadline, Clock::now() + std::chrono::seconds(1));
  if (in_time) in_time = wait_exit(probe, parse_probe_report(bytes).done ? exit_deadline : probe.deadline, status);
  close(probe.report_fd);
  ProbeReport report = parse_probe_report(bytes);
  std::string stage = describe_probe_stage(report.stage);
  if (!in_time) {
    kill(probe.pid, SIGKILL);
    while (waitpid(probe.pid, &status, 0) < 0 && errno == EINTR) {
    }
    return {{false, "its probe process did not finish within " + seconds_text(timeout_s) +
                        " s (OAR_PLUGIN_PROBE_TIMEOUT) " + stage + "; it was killed"},
            false,
            {}};
  }
  // Cached only when init ran (or died) after the probe listed the plugin's
  // libraries: a death inside dlopen, or a plugin that did not load there,
  // comes before that list, and nothing would notice a dependency installed
  // or fixed later (then the next probe could find a crash).
  bool cacheable = report.stage >= ProbeStage::init && report.load_error.empty() && !report.no_entry;
  if (WIFSIGNALED(status)) {
    return {{false, "its probe process was killed by " + signal_description(WTERMSIG(status)) + " " + stage},
            cacheable, report.libraries};
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    return {{false, "its probe process exited with code " + std::to_string(WEXITSTATUS(status)) + " " + stage},
            cacheable, report.libraries};
  }
  if (!report.done) {
    return {{false, "its probe process exited with code 0 " + stage + ", before the probe finished"}, cacheable,
            report.libraries};
  }
  log_message(OAR_LOG_DEBUG, "probe of plugin '" + plugin + "' passed (" + summary(report) + ")");
  return {{true, {}}, cacheable, report.libraries};
}

}  // namespace

std::string probe_helper_path() {
  std::string dir = core_library_dir();
  return dir.empty() ? std::string() : dir + "/oar-plugin-probe";
}

std::vector<ProbeVerdict> probe_plugins(const std::vector<PluginCandidate>& candidates,
                                        const RuntimeOptions& options) {
  std::vector<ProbeVerdict> verdicts(candidates.size());
  if (!options.probe_plugins || candidates.empty()) return verdicts;
  if (!(options.probe_timeout_s > 0)) {
    throw Error(ErrorCode::invalid_argument, "RuntimeOptions.probe_timeout_s is " + seconds_text(options.probe_timeout_s) +
                                                 "; a plugin probe needs a time limit above 0 seconds");
  }
  ProbeCache cache(options.probe_cache_file);
  std::vector<std::optional<PluginFileKey>> keys(candidates.size());
  std::vector<RunningProbe> running;
  std::string helper = probe_helper_path();
  auto timeout = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.probe_timeout_s));
  for (size_t i = 0; i < candidates.size(); ++i) {
    keys[i] = plugin_file_key(candidates[i].path);
    if (keys[i]) {
      if (auto hit = cache.find(*keys[i])) {
        verdicts[i] = {hit->passed, hit->passed ? std::string() : hit->reason + " (remembered from an earlier probe of this file)"};
        continue;
      }
    }
    RunningProbe probe;
    probe.index = i;
    if (int error = spawn_probe(helper, candidates[i].path, probe); error != 0) {
      log_message(OAR_LOG_WARNING, "cannot start the plugin probe '" + helper + "' (" + std::strerror(error) +
                                       "); loading plugins without probing them first");
      break;  // every later spawn would fail alike; the rest load unprobed
    }
    probe.deadline = Clock::now() + timeout;
    running.push_back(probe);
  }
  for (auto& probe : running) {
    Finished f = finish_probe(probe, candidates[probe.index].path, options.probe_timeout_s);
    verdicts[probe.index] = f.verdict;
    if (f.cacheable && keys[probe.index]) {
      cache.put(*keys[probe.index], f.verdict.passed, f.verdict.reason, f.libraries);
    }
  }
  cache.save();
  return verdicts;
}

}  // namespace oar
