// The TCP store's wire protocol and its server (internal to the core).
//
// Note [TCP store protocol]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// A frame is a 4-byte little-endian payload length, then the payload. All
// integers are little-endian; a string is a u32 length and its bytes.
//
//   request: u8 op, u64 request_id, then by op
//     hello  u32 magic 'OARS', u32 protocol version, u64 connection id, str job id
//     set    str key, str value
//     get    str key, i64 timeout_ms, u8 want_value   (wait: want_value = 0)
//     add    str key, i64 delta
//     check  str key
//   reply:   u8 status, u64 request_id (echoed), then by status
//     ok        get: str value (if wanted); add: i64 result; check: u8 exists
//     timeout   (nothing: the key did not appear within the request's timeout)
//     mismatch  u32 server protocol version, str server job id (hello only)
//     error     str sentence (a malformed or refused request)
//
// The first frame of a connection must be a hello of at most 1 KiB with the
// magic; anything else (a port scanner, an HTTP client) is dropped at once,
// as is any frame longer than kMaxFrameBytes. After a mismatch the server
// closes the connection; the client turns the reply into a sentence naming
// both job ids (or versions) and the address.
//
// Blocking get/wait requests are parked in the server (a list of waiters per
// key) and answered when the key is set or added, or with `timeout` at their
// deadline. The client also bounds its own wait by the caller's deadline: when
// it passes first, the client closes that connection (the stream is then at
// an unknown position) and reports the timeout.
//
// Retries. A client that loses its connection (EOF, reset, a failed send)
// reconnects, re-sends the hello with the same connection id, and re-sends
// the request with the same request id. set, get, wait and check are
// idempotent. add is not, so the server remembers, per connection id, the
// request id and result of the last add it applied: a request carrying that
// id again gets the remembered result instead of a second increment. One
// memory per connection id suffices because a client connection has at most
// one request outstanding (requests on it are serialized). The memory lives
// as long as the server (one small entry per client connection ever made).
// Reconnecting after a break is bounded by kReconnectWindowMs (5 s) rather
// than the op's timeout: a server whose process exited (rank 0 died, or
// finished before the others) must not hold every later call and every
// rank's teardown for the whole collective timeout.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "oar/store.h"

namespace oar::detail {

inline constexpr uint32_t kStoreMagic = 0x5352414f;  // "OARS" read as little-endian
inline constexpr uint32_t kStoreProtocolVersion = 1;
inline constexpr size_t kMaxHelloBytes = 1024;
inline constexpr size_t kMaxFrameBytes = TCPStore::kMaxValueBytes + TCPStore::kMaxKeyBytes + 64;

enum class StoreOp : uint8_t { hello = 0, set = 1, get = 2, add = 3, check = 4 };
enum class StoreStatus : uint8_t { ok = 0, timeout = 1, mismatch = 2, error = 3 };

/// A malformed frame (truncated, an unknown op, a field over its limit).
struct WireError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Appends little-endian fields to a payload.
class WireWriter {
 public:
  WireWriter& u8(uint8_t v) {
    bytes_.push_back(v);
    return *this;
  }
  WireWriter& u32(uint32_t v) { return fixed(v, 4); }
  WireWriter& u64(uint64_t v) { return fixed(v, 8); }
  WireWriter& i64(int64_t v) { return fixed(static_cast<uint64_t>(v), 8); }
  WireWriter& str(const void* data, size_t size) {
    u32(static_cast<uint32_t>(size));
    const auto* p = static_cast<const uint8_t*>(data);
    bytes_.insert(bytes_.end(), p, p + size);
    return *this;
  }
  WireWriter& str(const std::string& s) { return str(s.data(), s.size()); }
  WireWriter& str(const std::vector<uint8_t>& s) { return str(s.data(), s.size()); }
  /// The frame: the 4-byte length, then the payload.
  std::vector<uint8_t> frame() const {
    std::vector<uint8_t> out;
    out.reserve(bytes_.size() + 4);
    uint32_t n = static_cast<uint32_t>(bytes_.size());
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(n >> (8 * i)));
    out.insert(out.end(), bytes_.begin(), bytes_.end());
    return out;
  }

 private:
  WireWriter& fixed(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  std::vector<uint8_t> bytes_;
};

/// Reads little-endian fields of one payload; throws WireError past its end.
class WireReader {
 public:
  WireReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t u8() { return static_cast<uint8_t>(fixed(1)); }
  uint32_t u32() { return static_cast<uint32_t>(fixed(4)); }
  uint64_t u64() { return fixed(8); }
  int64_t i64() { return static_cast<int64_t>(fixed(8)); }
  /// A string of at most `limit` bytes.
  std::string str(size_t limit) {
    size_t n = u32();
    if (n > limit)
      throw WireError("a field of " + std::to_string(n) + " bytes exceeds the limit of " +
                      std::to_string(limit));
    need(n);
    std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return s;
  }
  std::vector<uint8_t> bytes(size_t limit) {
    std::string s = str(limit);
    return std::vector<uint8_t>(s.begin(), s.end());
  }
  bool at_end() const { return pos_ == size_; }

 private:
  void need(size_t n) const {
    if (size_ - pos_ < n) throw WireError("the frame ends in the middle of a field");
  }
  uint64_t fixed(int n) {
    need(static_cast<size_t>(n));
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= uint64_t{data_[pos_ + i]} << (8 * i);
    pos_ += static_cast<size_t>(n);
    return v;
  }
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

/// Decodes the 4-byte little-endian length at `p`.
inline uint32_t frame_length(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

/// The server: one background thread polling the listening socket and every
/// connection (store_tcp_server.cpp).
class TCPStoreServer {
 public:
  /// Binds port `port` (0: a free one) on every IPv4 interface and starts the
  /// thread. Throws Error(invalid_argument) when the port cannot be bound.
  TCPStoreServer(int port, std::string job_id);
  /// Stops the thread and closes every socket.
  ~TCPStoreServer();
  int port() const;
  /// See TCPStore::drop_connections_for_test.
  void drop_connections();
  /// See TCPStore::drop_after_next_add_for_test.
  void drop_after_next_add();

 private:
  struct State;
  std::unique_ptr<State> state_;  // owned
};

}  // namespace oar::detail
