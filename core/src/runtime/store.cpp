// In-process and file-backed key-value stores.
#include "oar/store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "oar/error.h"

namespace oar {

namespace {
[[noreturn]] void throw_timeout(const std::string& store, const std::string& key, int64_t timeout_ms) {
  throw Error(ErrorCode::timeout, store + ": key '" + key + "' did not appear within " +
                                      std::to_string(timeout_ms) + " ms");
}

std::vector<uint8_t> encode_int(int64_t v) {
  std::vector<uint8_t> out(sizeof v);
  std::memcpy(out.data(), &v, sizeof v);
  return out;
}
int64_t decode_int(const std::vector<uint8_t>& bytes) {
  int64_t v = 0;
  if (bytes.size() == sizeof v) std::memcpy(&v, bytes.data(), sizeof v);
  return v;
}
}  // namespace

void InProcessStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  {
    std::lock_guard lock(mutex_);
    values_[key] = value;
  }
  changed_.notify_all();
}

std::vector<uint8_t> InProcessStore::get(const std::string& key, int64_t timeout_ms) {
  std::unique_lock lock(mutex_);
  if (!changed_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                         [&] { return values_.count(key) != 0; })) {
    throw_timeout("in-process store", key, timeout_ms);
  }
  return values_[key];
}

int64_t InProcessStore::add(const std::string& key, int64_t delta) {
  int64_t result;
  {
    std::lock_guard lock(mutex_);
    auto& slot = values_[key];
    result = decode_int(slot) + delta;
    slot = encode_int(result);
  }
  changed_.notify_all();
  return result;
}

void InProcessStore::wait(const std::string& key, int64_t timeout_ms) { get(key, timeout_ms); }

bool InProcessStore::check(const std::string& key) {
  std::lock_guard lock(mutex_);
  return values_.count(key) != 0;
}

FileStore::FileStore(std::string directory) : directory_(std::move(directory)) {
  std::error_code ec;
  std::filesystem::create_directories(directory_, ec);
  if (ec) {
    throw Error(ErrorCode::invalid_argument,
                "file store: cannot create directory '" + directory_ + "': " + ec.message());
  }
}

std::string FileStore::path_of(const std::string& key) const {
  std::string name;
  for (char c : key) name += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '.';
  return directory_ + "/" + name + "." + std::to_string(std::hash<std::string>{}(key));
}

void FileStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  std::string path = path_of(key);
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." +
                    std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(value.data()), static_cast<std::streamsize>(value.size()));
    if (!out) throw Error(ErrorCode::internal, "file store: cannot write '" + tmp + "'");
  }
  std::filesystem::rename(tmp, path);
}

std::vector<uint8_t> FileStore::get(const std::string& key, int64_t timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string path = path_of(key);
  for (;;) {
    std::ifstream in(path, std::ios::binary);
    if (in) return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
    if (std::chrono::steady_clock::now() >= deadline) throw_timeout("file store '" + directory_ + "'", key, timeout_ms);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

int64_t FileStore::add(const std::string& key, int64_t delta) {
  std::string lock_path = directory_ + "/.lock";
  int fd = ::open(lock_path.c_str(), O_CREAT | O_RDWR, 0644);
  if (fd < 0) throw Error(ErrorCode::internal, "file store: cannot open lock '" + lock_path + "'");
  ::flock(fd, LOCK_EX);
  int64_t result = delta;
  try {
    std::ifstream in(path_of(key), std::ios::binary);
    if (in) result += decode_int(std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {}));
    set(key, encode_int(result));
  } catch (...) {
    ::flock(fd, LOCK_UN);
    ::close(fd);
    throw;
  }
  ::flock(fd, LOCK_UN);
  ::close(fd);
  return result;
}

void FileStore::wait(const std::string& key, int64_t timeout_ms) { get(key, timeout_ms); }

bool FileStore::check(const std::string& key) {
  std::error_code ec;
  return std::filesystem::exists(path_of(key), ec);
}

}  // namespace oar
