/// \file store.h
/// Key-value stores for collective rendezvous: rank 0 puts a communicator's
/// unique id, the others wait for it. Plugins reach the store through the
/// ABI's store_* host functions.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace oar {

/// A key-value store shared by the ranks of a job.
class Store {
 public:
  virtual ~Store() = default;
  virtual void set(const std::string& key, const std::vector<uint8_t>& value) = 0;
  /// Waits up to timeout_ms for the key; throws oar::Error(timeout) naming it.
  virtual std::vector<uint8_t> get(const std::string& key, int64_t timeout_ms) = 0;
  /// Adds `delta` to an integer counter (created at 0) and returns the result.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  /// Waits up to timeout_ms for the key to exist; throws oar::Error(timeout).
  virtual void wait(const std::string& key, int64_t timeout_ms) = 0;
};

/// A store inside one process (ranks are threads or devices).
class InProcessStore final : public Store {
 public:
  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> get(const std::string& key, int64_t timeout_ms) override;
  int64_t add(const std::string& key, int64_t delta) override;
  void wait(const std::string& key, int64_t timeout_ms) override;

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::vector<uint8_t>> values_;
};

/// A store in a directory shared by processes on one machine: one file per
/// key, written atomically (write to a temporary name, then rename); counters
/// are serialized with an flock'ed lock file.
class FileStore final : public Store {
 public:
  /// Creates the directory if needed.
  explicit FileStore(std::string directory);
  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> get(const std::string& key, int64_t timeout_ms) override;
  int64_t add(const std::string& key, int64_t delta) override;
  void wait(const std::string& key, int64_t timeout_ms) override;

 private:
  std::string path_of(const std::string& key) const;
  std::string directory_;
};

}  // namespace oar
