/// \file store.h
/// Key-value stores for collective rendezvous: rank 0 puts a communicator's
/// unique id, the others wait for it. Plugins reach the store through the
/// ABI's store_* host functions. Three stores: InProcessStore (threads of one
/// process), FileStore (processes of one machine) and TCPStore (many machines;
/// served by rank 0 or by the standalone `oar-store` binary).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
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
  /// Whether the key exists now (never waits).
  virtual bool check(const std::string& key) = 0;
};

/// A store inside one process (ranks are threads or devices).
class InProcessStore final : public Store {
 public:
  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> get(const std::string& key, int64_t timeout_ms) override;
  int64_t add(const std::string& key, int64_t delta) override;
  void wait(const std::string& key, int64_t timeout_ms) override;
  bool check(const std::string& key) override;

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
  bool check(const std::string& key) override;

 private:
  std::string path_of(const std::string& key) const;
  std::string directory_;
};

namespace detail {
class TCPStoreServer;
class TCPStoreClient;
}  // namespace detail

/// A store reached over TCP (IPv4; the host may be a name or a dotted
/// address). One process serves it (rank 0 with serve=true, or `oar-store`);
/// every TCPStore, the serving one included, is a client of that server.
///
/// Protocol (Note [TCP store protocol] in core/src/runtime/store_tcp.h):
/// length-prefixed binary frames; each connection starts with a handshake
/// carrying the protocol version and the job id. Blocking get/wait are
/// parked in the server and answered when the key is set, bounded by the
/// caller's timeout. A dropped connection is re-established and the
/// operation retried; every add carries a (connection id, sequence number)
/// the server remembers, so a retried add is applied once.
///
/// Thread-safe: concurrent calls use separate pooled connections, so a
/// thread blocked in get() never holds up another thread's set().
/// Errors are oar::Error sentences naming the store address and the key:
/// timeout (a key that did not appear, a server that cannot be reached),
/// invalid_argument (job id or protocol mismatch, a key or value over the
/// limits below), internal (a malformed reply).
class TCPStore final : public Store {
 public:
  /// Longest key, in bytes.
  static constexpr size_t kMaxKeyBytes = 4096;
  /// Largest value, in bytes (64 MiB).
  static constexpr size_t kMaxValueBytes = size_t{64} << 20;

  /// serve=true: starts the server in this process (a background thread),
  /// listening on port `port` of every IPv4 interface (port 0 = pick a free
  /// one; port() tells). host names the server for clients; a serving store
  /// connects to itself through host too (127.0.0.1 when host is "" or
  /// "0.0.0.0"). Clients connect with retries until
  /// timeout_ms (the server may start later); they reconnect transparently
  /// when a connection drops (the op is retried). job_id: a client whose job
  /// id differs from the server's gets Error(invalid_argument) naming both
  /// ids and the address. timeout_ms also bounds set/add/check (get and wait
  /// take their own).
  TCPStore(std::string host, int port, bool serve, std::string job_id, int64_t timeout_ms);
  /// Stops the server (when serving) and closes this client's connections.
  ~TCPStore() override;
  TCPStore(const TCPStore&) = delete;
  TCPStore& operator=(const TCPStore&) = delete;

  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> get(const std::string& key, int64_t timeout_ms) override;
  /// Counters are 8-byte little-endian integers; add on a key that holds a
  /// value of another size throws Error(invalid_argument).
  int64_t add(const std::string& key, int64_t delta) override;
  void wait(const std::string& key, int64_t timeout_ms) override;
  bool check(const std::string& key) override;

  /// The server's port (the picked one when constructed with port 0).
  int port() const;
  /// The host clients connect to, as given.
  const std::string& host() const;
  /// This store's job id.
  const std::string& job_id() const;
  /// Whether this store runs the server.
  bool serving() const;

  /// Test hook (serving store only): the server closes every client
  /// connection now; returns when it has. Clients reconnect on their next op.
  void drop_connections_for_test();
  /// Test hook (serving store only): the server applies the next add, then
  /// closes that connection without replying (the client's retry must not
  /// apply it again).
  void drop_after_next_add_for_test();

 private:
  std::string host_;
  int port_;
  std::string job_id_;
  std::unique_ptr<detail::TCPStoreServer> server_;  // owned; null when not serving
  std::unique_ptr<detail::TCPStoreClient> client_;  // owned
};

}  // namespace oar
