// The TCP store's client and oar::TCPStore (Note [TCP store protocol],
// store_tcp.h; the server is in store_tcp_server.cpp).
#include "runtime/store_tcp.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "oar/error.h"

namespace oar {
namespace detail {

namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point deadline_after(int64_t timeout_ms) {
  // Clamped (about 30 years) so that "wait forever" callers do not overflow.
  return Clock::now() +
         std::chrono::milliseconds(std::clamp<int64_t>(timeout_ms, 0, int64_t{1} << 40));
}

int64_t ms_left(Clock::time_point deadline) {
  return std::max<int64_t>(
      0, std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count());
}

// Waits until fd is ready for `events` or the deadline passes; false on the deadline.
bool wait_ready(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    int64_t left = ms_left(deadline);
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, int64_t{60000})));
    if (n > 0) return true;  // ready, or an error the next send/recv reports
    if (n < 0 && errno != EINTR) return true;
    if (n == 0 && left == 0) return false;
  }
}

enum class Io { done, broken, deadline };

Io send_all(int fd, const std::vector<uint8_t>& bytes, Clock::time_point deadline) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      if (!wait_ready(fd, POLLOUT, deadline)) return Io::deadline;
    } else {
      return Io::broken;
    }
  }
  return Io::done;
}

Io recv_exact(int fd, uint8_t* out, size_t size, Clock::time_point deadline) {
  size_t got = 0;
  while (got < size) {
    ssize_t n = ::recv(fd, out + got, size - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      if (!wait_ready(fd, POLLIN, deadline)) return Io::deadline;
    } else {
      return Io::broken;  // EOF or reset
    }
  }
  return Io::done;
}

// One reply frame's payload.
Io recv_frame(int fd, std::vector<uint8_t>& payload, Clock::time_point deadline) {
  uint8_t header[4];
  Io io = recv_exact(fd, header, 4, deadline);
  if (io != Io::done) return io;
  size_t len = frame_length(header);
  if (len > kMaxFrameBytes) return Io::broken;
  payload.resize(len);
  return recv_exact(fd, payload.data(), len, deadline);
}

// A fresh 64-bit id per connection, from the OS's entropy on every call: a
// generator seeded once would repeat its ids in forked children.
uint64_t random_id() {
  std::random_device device;
  return (uint64_t{device()} << 32) ^ uint64_t { device() };
}

}  // namespace

/// A connection of a client: its socket and the ids the server knows it by.
struct ClientConnection {
  int fd = -1;
  uint64_t id = random_id();
  uint64_t next_request = 1;
  ~ClientConnection() { close(); }
  void close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

/// How long a client tries to reconnect after a connection broke.
constexpr int64_t kReconnectWindowMs = 5000;

/// The client: a pool of connections to one server; each call takes an idle
/// connection (or makes one) so concurrent calls never wait on each other.
class TCPStoreClient {
 public:
  /// display_host names the server in messages (a serving store given host
  /// "0.0.0.0" connects through 127.0.0.1 but is known by its host).
  TCPStoreClient(std::string host, std::string display_host, int port, std::string job_id,
                 int64_t timeout_ms)
      : host_(std::move(host)),
        display_host_(std::move(display_host)),
        port_(port),
        job_id_(std::move(job_id)),
        timeout_ms_(timeout_ms) {
    auto c = std::make_unique<ClientConnection>();
    connect(*c, deadline_after(timeout_ms_));  // fail early: no server, or another job's
    give_back(std::move(c));
  }

  std::string address() const { return display_host_ + ":" + std::to_string(port_); }
  int64_t timeout_ms() const { return timeout_ms_; }

  /// Sends the request that `encode(w, ms_left)` writes after the op and the
  /// request id, retrying on a new connection when one breaks, and returns
  /// the reply's payload after the status and id; nullopt when a get/wait
  /// timed out (the server answered `timeout`, or the deadline passed first).
  /// Throws Error(timeout) when another op's deadline passes.
  std::optional<std::vector<uint8_t>> call(
      StoreOp op, const std::string& what, int64_t timeout_ms,
      const std::function<void(WireWriter&, int64_t)>& encode) {
    Clock::time_point deadline = deadline_after(timeout_ms);
    std::unique_ptr<ClientConnection> c = take();
    uint64_t request_id = c->next_request++;
    for (;;) {
      if (c->fd < 0) {
        // After a connection broke, a server that is gone (its process
        // exited: rank 0 died, or finished first) must not hold every later
        // call, and a rank's teardown, for the whole timeout: reconnecting
        // gets kReconnectWindowMs (Note [TCP store protocol]).
        bool lost = lost_.load();
        Clock::time_point until = deadline;
        if (lost) until = std::min(deadline, deadline_after(kReconnectWindowMs));
        try {
          connect(*c, until);
          lost_ = false;
        } catch (const Error& e) {
          if (e.code() != ErrorCode::timeout) throw;
          throw Error(ErrorCode::timeout,
                      std::string(e.what()) + " (while trying the " + what +
                          (lost ? "; the connection to it broke and it did not come back within " +
                                      std::to_string(kReconnectWindowMs / 1000) +
                                      " s: its process has probably exited)"
                                : ")"));
        }
      }
      WireWriter w;
      w.u8(static_cast<uint8_t>(op)).u64(request_id);
      encode(w, ms_left(deadline));
      Io io = send_all(c->fd, w.frame(), deadline);
      std::vector<uint8_t> payload;
      while (io == Io::done) {
        io = recv_frame(c->fd, payload, deadline);
        if (io != Io::done) break;
        WireReader r(payload.data(), payload.size());
        try {
          auto status = static_cast<StoreStatus>(r.u8());
          if (r.u64() != request_id) continue;  // a stale reply
          size_t head = 9;
          std::vector<uint8_t> rest(payload.begin() + static_cast<std::ptrdiff_t>(head),
                                    payload.end());
          give_back(std::move(c));
          if (status == StoreStatus::ok) return rest;
          if (status == StoreStatus::timeout) return std::nullopt;
          WireReader er(rest.data(), rest.size());
          throw Error(
              status == StoreStatus::error ? ErrorCode::invalid_argument : ErrorCode::internal,
              "TCP store at " + address() + ": the " + what + " was refused: " +
                  (status == StoreStatus::error ? er.str(kMaxHelloBytes) : "an unexpected reply"));
        } catch (const WireError& e) {
          throw Error(ErrorCode::internal, "TCP store at " + address() + ": the reply to the " +
                                               what + " is malformed (" + e.what() + ")");
        }
      }
      c->close();  // broken, or mid-frame at the deadline: the stream position is lost
      if (io == Io::broken) lost_ = true;
      if (io == Io::deadline && op == StoreOp::get)
        return std::nullopt;  // as the server's `timeout`
      if (io == Io::deadline || Clock::now() >= deadline) {
        throw Error(ErrorCode::timeout, "TCP store at " + address() + ": the " + what +
                                            " got no answer within " + std::to_string(timeout_ms) +
                                            " ms");
      }
      // Broken: reconnect and send the same request again (Note [TCP store protocol]).
    }
  }

  /// Closes every idle connection (used by the tests' drop hook and the destructor).
  void close_idle() {
    std::lock_guard lock(mutex_);
    idle_.clear();
  }

 private:
  std::unique_ptr<ClientConnection> take() {
    std::lock_guard lock(mutex_);
    if (idle_.empty()) return std::make_unique<ClientConnection>();
    auto c = std::move(idle_.back());
    idle_.pop_back();
    return c;
  }
  void give_back(std::unique_ptr<ClientConnection> c) {
    std::lock_guard lock(mutex_);
    idle_.push_back(std::move(c));
  }

  // Connects and greets, retrying until the deadline while the server is not
  // there yet (refused, unreachable, a name that does not resolve yet).
  void connect(ClientConnection& c, Clock::time_point deadline) {
    std::string last_error = "no attempt was made";
    auto pause = std::chrono::milliseconds(10);
    for (;;) {
      if (try_connect(c, deadline, last_error)) return;
      if (Clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline - Clock::now()));
      pause = std::min(pause * 2, std::chrono::milliseconds(200));
    }
    throw Error(ErrorCode::timeout, "TCP store at " + address() +
                                        ": cannot connect within the timeout (" + last_error +
                                        "); is the store (rank 0 or oar-store) running there?");
  }

  bool try_connect(ClientConnection& c, Clock::time_point deadline, std::string& last_error) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    int rc = ::getaddrinfo(host_.c_str(), std::to_string(port_).c_str(), &hints, &found);
    if (rc != 0) {
      last_error = "cannot resolve '" + host_ + "': " + ::gai_strerror(rc);
      return false;
    }
    std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(found, ::freeaddrinfo);
    for (addrinfo* a = found; a; a = a->ai_next) {
      int fd =
          ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
      if (fd < 0) continue;
      int err = 0;
      if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
        err = errno;
        if (err == EINPROGRESS) {
          if (!wait_ready(fd, POLLOUT, deadline)) {
            err = ETIMEDOUT;
          } else {
            socklen_t len = sizeof err;
            ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
          }
        }
      }
      if (err != 0) {
        last_error = std::string("last error: ") + std::strerror(err);
        ::close(fd);
        continue;
      }
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      c.fd = fd;
      if (greet(c, deadline, last_error)) return true;
      c.close();
    }
    return false;
  }

  // The handshake; false when the connection broke (retry), throws on a mismatch.
  bool greet(ClientConnection& c, Clock::time_point deadline, std::string& last_error) {
    WireWriter w;
    w.u8(static_cast<uint8_t>(StoreOp::hello)).u64(0).u32(kStoreMagic).u32(kStoreProtocolVersion);
    w.u64(c.id).str(job_id_);
    std::vector<uint8_t> payload;
    if (send_all(c.fd, w.frame(), deadline) != Io::done ||
        recv_frame(c.fd, payload, deadline) != Io::done) {
      last_error = "the connection closed during the handshake";
      return false;
    }
    try {
      WireReader r(payload.data(), payload.size());
      auto status = static_cast<StoreStatus>(r.u8());
      r.u64();
      if (status == StoreStatus::ok) return true;
      if (status != StoreStatus::mismatch) throw WireError("an unexpected handshake status");
      uint32_t version = r.u32();
      std::string server_job = r.str(kMaxHelloBytes);
      if (version != kStoreProtocolVersion) {
        throw Error(ErrorCode::invalid_argument,
                    "TCP store at " + address() + " speaks store protocol version " +
                        std::to_string(version) + " but this client speaks version " +
                        std::to_string(kStoreProtocolVersion) +
                        "; use the same oar build on every rank");
      }
      throw Error(ErrorCode::invalid_argument,
                  "TCP store at " + address() + " serves job id '" + server_job +
                      "' but this client has job id '" + job_id_ +
                      "'; another job's store is on that address (give each job its own " +
                      "MASTER_PORT, or the same OAR_JOB_ID to every rank)");
    } catch (const WireError& e) {
      throw Error(ErrorCode::internal,
                  "TCP store at " + address() +
                      ": the peer answered the handshake with a malformed reply (" + e.what() +
                      "); is it an oar store?");
    }
  }

  std::string host_;
  std::string display_host_;
  int port_;
  std::string job_id_;
  int64_t timeout_ms_;
  /// A connection broke and no new one has been made since.
  std::atomic<bool> lost_{false};
  std::mutex mutex_;
  std::vector<std::unique_ptr<ClientConnection>> idle_;  // owned
};

}  // namespace detail

namespace {

void check_key(const std::string& address, const std::string& key) {
  if (key.size() > TCPStore::kMaxKeyBytes) {
    throw Error(ErrorCode::invalid_argument, "TCP store at " + address + ": a key of " +
                                                 std::to_string(key.size()) + " bytes (starting '" +
                                                 key.substr(0, 40) + "') exceeds the limit of " +
                                                 std::to_string(TCPStore::kMaxKeyBytes) + " bytes");
  }
}

}  // namespace

TCPStore::TCPStore(std::string host, int port, bool serve, std::string job_id, int64_t timeout_ms)
    : host_(std::move(host)), port_(port), job_id_(std::move(job_id)) {
  if (port < 0 || port > 65535) {
    throw Error(ErrorCode::invalid_argument, "TCP store at " + host_ + ":" + std::to_string(port) +
                                                 ": the port is not in 0..65535");
  }
  if (serve) {
    server_ = std::make_unique<detail::TCPStoreServer>(port, job_id_);
    port_ = server_->port();
    // Through host, as every other rank (a fresh network namespace has its
    // loopback down); 127.0.0.1 when host names no particular interface.
    std::string self = (host_.empty() || host_ == "0.0.0.0") ? "127.0.0.1" : host_;
    client_ = std::make_unique<detail::TCPStoreClient>(self, host_, port_, job_id_, timeout_ms);
  } else {
    if (port == 0) {
      throw Error(ErrorCode::invalid_argument,
                  "TCP store at " + host_ +
                      ":0: a client needs the server's port (0 only picks one "
                      "when serving)");
    }
    client_ = std::make_unique<detail::TCPStoreClient>(host_, host_, port_, job_id_, timeout_ms);
  }
}

TCPStore::~TCPStore() {
  client_.reset();  // close our connections before the server goes
  server_.reset();
}

int TCPStore::port() const { return port_; }
const std::string& TCPStore::host() const { return host_; }
const std::string& TCPStore::job_id() const { return job_id_; }
bool TCPStore::serving() const { return server_ != nullptr; }

void TCPStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  std::string address = host_ + ":" + std::to_string(port_);
  check_key(address, key);
  if (value.size() > kMaxValueBytes) {
    throw Error(ErrorCode::invalid_argument,
                "TCP store at " + address + ": the value for key '" + key + "' is " +
                    std::to_string(value.size()) + " bytes; the store takes at most " +
                    std::to_string(kMaxValueBytes) + " bytes per value");
  }
  client_->call(detail::StoreOp::set, "set of key '" + key + "'", client_->timeout_ms(),
                [&](detail::WireWriter& w, int64_t) { w.str(key).str(value); });
}

std::vector<uint8_t> TCPStore::get(const std::string& key, int64_t timeout_ms) {
  check_key(host_ + ":" + std::to_string(port_), key);
  auto reply =
      client_->call(detail::StoreOp::get, "get of key '" + key + "'", timeout_ms,
                    [&](detail::WireWriter& w, int64_t left) { w.str(key).i64(left).u8(1); });
  if (!reply) {
    throw Error(ErrorCode::timeout, "TCP store at " + host_ + ":" + std::to_string(port_) +
                                        ": key '" + key + "' did not appear within " +
                                        std::to_string(timeout_ms) + " ms");
  }
  detail::WireReader r(reply->data(), reply->size());
  return r.bytes(kMaxValueBytes);
}

int64_t TCPStore::add(const std::string& key, int64_t delta) {
  check_key(host_ + ":" + std::to_string(port_), key);
  auto reply =
      client_->call(detail::StoreOp::add, "add to key '" + key + "'", client_->timeout_ms(),
                    [&](detail::WireWriter& w, int64_t) { w.str(key).i64(delta); });
  detail::WireReader r(reply->data(), reply->size());
  return r.i64();
}

void TCPStore::wait(const std::string& key, int64_t timeout_ms) {
  check_key(host_ + ":" + std::to_string(port_), key);
  auto reply =
      client_->call(detail::StoreOp::get, "wait for key '" + key + "'", timeout_ms,
                    [&](detail::WireWriter& w, int64_t left) { w.str(key).i64(left).u8(0); });
  if (!reply) {
    throw Error(ErrorCode::timeout, "TCP store at " + host_ + ":" + std::to_string(port_) +
                                        ": key '" + key + "' did not appear within " +
                                        std::to_string(timeout_ms) + " ms");
  }
}

bool TCPStore::check(const std::string& key) {
  check_key(host_ + ":" + std::to_string(port_), key);
  auto reply =
      client_->call(detail::StoreOp::check, "check of key '" + key + "'", client_->timeout_ms(),
                    [&](detail::WireWriter& w, int64_t) { w.str(key); });
  detail::WireReader r(reply->data(), reply->size());
  return r.u8() != 0;
}

void TCPStore::drop_connections_for_test() {
  OAR_CHECK_ARG(server_, "TCPStore::drop_connections_for_test: this store at " + host_ + ":" +
                             std::to_string(port_) +
                             " does not serve; call it on the serving store");
  server_->drop_connections();
}

void TCPStore::drop_after_next_add_for_test() {
  OAR_CHECK_ARG(server_, "TCPStore::drop_after_next_add_for_test: this store at " + host_ + ":" +
                             std::to_string(port_) +
                             " does not serve; call it on the serving store");
  server_->drop_after_next_add();
}

}  // namespace oar
