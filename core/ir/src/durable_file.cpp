// Files that survive a crash or a kill -9 in the middle of a save: the
// TempFile of serialize_util.h, renames made durable, and the removal of
// temporary files that killed saves left behind.
//
// Note [Durable saves]
// A save writes `path.tmp-<pid>-<n>`, fsyncs it, renames it over `path`
// and fsyncs the directory, so at every instant `path` is the previous file
// or the new one, whole, even across a power loss. A kill between the
// write and the rename leaves the temporary file; the next TempFile for the
// same destination removes those whose process is gone (kill(pid, 0) says
// ESRCH), never one of a live process, which may be saving right now.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "serialize_util.h"

namespace oar::ir::detail {

namespace {

constexpr const char* kTempInfix = ".tmp-";

[[noreturn]] void fail_errno(const std::string& what) {
  throw Error(ErrorCode::invalid_argument, what + " (" + std::strerror(errno) + ")");
}

void fsync_path(const std::string& path, int flags, const std::string& what) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) fail_errno(what + ": cannot open " + path + " to flush it");
  int rc = ::fsync(fd);
  int saved = errno;
  ::close(fd);
  errno = saved;
  if (rc != 0) fail_errno(what + ": fsync of " + path + " failed");
}

std::string directory_of(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

// The pid of a temporary file name "<base>.tmp-<pid>[-<n>]", or -1.
long temp_file_pid(const std::string& name, const std::string& base) {
  std::string prefix = base + kTempInfix;
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return -1;
  long pid = 0;
  size_t i = prefix.size();
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9'; ++i) {
    if (pid > 100'000'000) return -1;
    pid = pid * 10 + (name[i] - '0');
  }
  if (i == prefix.size() || pid <= 0) return -1;
  if (i < name.size() && name[i] != '-') return -1;
  return pid;
}

}  // namespace

void fsync_directory_of(const std::string& path) {
  fsync_path(directory_of(path), O_RDONLY | O_DIRECTORY, path);
}

void durable_rename(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) fail_errno(to + ": cannot rename " + from + " into place");
  fsync_directory_of(to);
}

void remove_stale_temp_files(const std::string& path) {
  std::string dir = directory_of(path);
  std::string base = std::filesystem::path(path).filename().string();
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;  // nothing to clean where nothing can be listed
  std::vector<std::string> stale;
  while (const dirent* e = ::readdir(d)) {
    long pid = temp_file_pid(e->d_name, base);
    if (pid < 0 || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) stale.emplace_back(e->d_name);
  }
  ::closedir(d);
  for (const auto& name : stale) ::unlink((dir + "/" + name).c_str());  // best effort: another save may race us
}

TempFile::TempFile(std::string path) : path_(std::move(path)) {
  static std::atomic<uint64_t> counter{0};
  remove_stale_temp_files(path_);
  tmp_path_ = path_ + kTempInfix + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  out_.open(tmp_path_, std::ios::binary | std::ios::trunc);
  if (!out_) {
    throw Error(ErrorCode::invalid_argument, path_ + ": cannot create the temporary file " +
                                                 tmp_path_ + " (" + std::strerror(errno) + ")");
  }
}

TempFile::~TempFile() {
  if (committed_) return;
  if (out_.is_open()) out_.close();
  ::unlink(tmp_path_.c_str());
}

void TempFile::close() {
  if (!out_.is_open()) return;
  out_.flush();
  bool ok = out_.good();
  out_.close();
  if (!ok || out_.fail()) {
    throw Error(ErrorCode::invalid_argument, path_ + ": writing the temporary file " + tmp_path_ +
                                                 " failed (" + std::strerror(errno) + ")");
  }
  fsync_path(tmp_path_, O_RDONLY, path_);  // the data is on disk before any rename
}

void TempFile::commit() {
  close();
  durable_rename(tmp_path_, path_);
  committed_ = true;
}

}  // namespace oar::ir::detail
