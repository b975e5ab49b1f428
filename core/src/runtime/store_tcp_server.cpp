// The TCP store's server: one thread, poll() over the listening socket, a
// wake pipe and every connection (Note [TCP store protocol], store_tcp.h).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "oar/error.h"
#include "runtime/store_tcp.h"

namespace oar::detail {

namespace {

using Clock = std::chrono::steady_clock;

// Longest timeout a request may carry (about 30 years), so deadlines never overflow.
constexpr int64_t kMaxTimeoutMs = int64_t{1} << 40;

struct Connection {
  int fd = -1;
  bool greeted = false;  // the hello was accepted
  bool close_after_flush = false;
  uint64_t client_id = 0;
  std::vector<uint8_t> in;   // received bytes not yet parsed
  std::vector<uint8_t> out;  // replies not yet written
  size_t out_sent = 0;
};

struct Waiter {
  uint64_t connection;  // serial of the Connection
  uint64_t request_id;
  bool want_value;
  Clock::time_point deadline;
};

struct LastAdd {
  uint64_t request_id;
  int64_t result;
};

int64_t decode_counter(const std::vector<uint8_t>& bytes) {
  WireReader r(bytes.data(), bytes.size());
  return r.i64();
}
std::vector<uint8_t> encode_counter(int64_t v) {
  std::vector<uint8_t> out(8);
  for (int i = 0; i < 8; ++i)
    out[static_cast<size_t>(i)] = static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i));
  return out;
}

}  // namespace

struct TCPStoreServer::State {
  std::string job_id;
  int listen_fd = -1;
  int wake_read = -1, wake_write = -1;
  int port = 0;
  std::thread thread;

  // Requests from other threads, seen by the loop after a wake.
  std::atomic<bool> stop{false};
  std::atomic<bool> drop_after_add{false};
  std::mutex control_mutex;
  std::condition_variable control_done;
  uint64_t drop_requested = 0, drop_done = 0;  // guarded by control_mutex

  // Owned by the server thread.
  uint64_t next_serial = 1;
  std::map<uint64_t, Connection> connections;
  std::unordered_map<std::string, std::vector<uint8_t>> values;
  std::unordered_map<std::string, std::vector<Waiter>> waiters;
  std::unordered_map<uint64_t, LastAdd> last_add;  // by client connection id

  void wake() {
    char c = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_write, &c, 1);
  }

  void run();
  void accept_all();
  void read_from(uint64_t serial, Connection& c);
  void handle_frame(uint64_t serial, Connection& c, const uint8_t* data, size_t size);
  void handle_request(uint64_t serial, Connection& c, WireReader& r);
  void reply(Connection& c, const WireWriter& w);
  void flush(Connection& c);
  void close_connection(uint64_t serial);
  void close_all();
  void key_changed(const std::string& key);
  Clock::time_point expire_waiters();
};

TCPStoreServer::TCPStoreServer(int port, std::string job_id) : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.job_id = std::move(job_id);
  s.listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s.listen_fd < 0) {
    throw Error(ErrorCode::internal,
                std::string("TCP store server: cannot create a socket: ") + std::strerror(errno));
  }
  int one = 1;
  ::setsockopt(s.listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (port < 0 || port > 65535 ||
      ::bind(s.listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(s.listen_fd, 1024) != 0) {
    std::string why = (port < 0 || port > 65535) ? "not a port number" : std::strerror(errno);
    ::close(s.listen_fd);
    throw Error(ErrorCode::invalid_argument, "TCP store server: cannot listen on port " +
                                                 std::to_string(port) + ": " + why +
                                                 " (is another store or program using it?)");
  }
  socklen_t len = sizeof addr;
  ::getsockname(s.listen_fd, reinterpret_cast<sockaddr*>(&addr), &len);
  s.port = ntohs(addr.sin_port);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    ::close(s.listen_fd);
    throw Error(ErrorCode::internal,
                std::string("TCP store server: cannot create a pipe: ") + std::strerror(errno));
  }
  s.wake_read = pipe_fds[0];
  s.wake_write = pipe_fds[1];
  s.thread = std::thread([&s] { s.run(); });
}

TCPStoreServer::~TCPStoreServer() {
  State& s = *state_;
  s.stop = true;
  s.wake();
  s.thread.join();
  s.close_all();
  ::close(s.listen_fd);
  ::close(s.wake_read);
  ::close(s.wake_write);
}

int TCPStoreServer::port() const { return state_->port; }

void TCPStoreServer::drop_connections() {
  State& s = *state_;
  std::unique_lock lock(s.control_mutex);
  uint64_t ticket = ++s.drop_requested;
  s.wake();
  // Bounded: the loop answers within one poll round; 10 s means it is stuck.
  if (!s.control_done.wait_for(lock, std::chrono::seconds(10),
                               [&] { return s.drop_done >= ticket; })) {
    throw Error(ErrorCode::timeout,
                "TCP store server on port " + std::to_string(s.port) +
                    ": the server thread did not drop its connections within 10 s");
  }
}

void TCPStoreServer::drop_after_next_add() { state_->drop_after_add = true; }

void TCPStoreServer::State::run() {
  std::vector<pollfd> fds;
  std::vector<uint64_t> serials;
  while (!stop) {
    Clock::time_point next_deadline = expire_waiters();
    fds.clear();
    serials.clear();
    fds.push_back({wake_read, POLLIN, 0});
    fds.push_back({listen_fd, POLLIN, 0});
    for (auto& [serial, c] : connections) {
      short events = POLLIN;
      if (c.out_sent < c.out.size()) events |= POLLOUT;
      fds.push_back({c.fd, events, 0});
      serials.push_back(serial);
    }
    int timeout = -1;
    if (next_deadline != Clock::time_point::max()) {
      auto ms = std::chrono::ceil<std::chrono::milliseconds>(next_deadline - Clock::now()).count();
      timeout = static_cast<int>(std::clamp<int64_t>(ms, 0, int64_t{60000}));
    }
    int n = ::poll(fds.data(), fds.size(), timeout);
    if (n < 0 && errno != EINTR) break;  // cannot happen with valid fds
    if (n <= 0) continue;
    if (fds[0].revents) {
      char buf[64];
      while (::read(wake_read, buf, sizeof buf) > 0) {
      }
      std::unique_lock lock(control_mutex);
      if (drop_done < drop_requested) {
        close_all();
        drop_done = drop_requested;
        control_done.notify_all();
      }
      continue;  // the connection list changed (or we stop)
    }
    if (fds[1].revents & POLLIN) accept_all();
    for (size_t i = 0; i < serials.size(); ++i) {
      short revents = fds[i + 2].revents;
      if (!revents) continue;
      auto it = connections.find(serials[i]);
      if (it == connections.end()) continue;  // closed by an earlier event this round
      if (revents & POLLOUT) flush(it->second);
      if (revents & (POLLIN | POLLHUP | POLLERR)) {
        read_from(serials[i], it->second);
      }
    }
  }
}

void TCPStoreServer::State::accept_all() {
  for (;;) {
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;  // EAGAIN, or a transient error (EMFILE): retried on the next poll
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    Connection c;
    c.fd = fd;
    connections.emplace(next_serial++, std::move(c));
  }
}

void TCPStoreServer::State::read_from(uint64_t serial, Connection& c) {
  uint8_t buf[64 * 1024];
  for (;;) {
    ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      close_connection(serial);  // the peer left, or the connection broke
      return;
    }
    if (n < 0) break;
    c.in.insert(c.in.end(), buf, buf + n);
    // Parse every complete frame; refuse an oversized or (before the hello) a long one.
    size_t pos = 0;
    while (c.in.size() - pos >= 4) {
      size_t len = frame_length(c.in.data() + pos);
      if (len > kMaxFrameBytes || (!c.greeted && len > kMaxHelloBytes)) {
        close_connection(serial);
        return;
      }
      if (c.in.size() - pos - 4 < len) {
        c.in.reserve(pos + 4 + len);  // a large value arrives in one allocation
        break;
      }
      handle_frame(serial, c, c.in.data() + pos + 4, len);
      pos += 4 + len;
      if (!connections.count(serial)) return;  // the frame closed it
    }
    c.in.erase(c.in.begin(), c.in.begin() + static_cast<std::ptrdiff_t>(pos));
  }
}

void TCPStoreServer::State::handle_frame(uint64_t serial, Connection& c, const uint8_t* data,
                                         size_t size) {
  WireReader r(data, size);
  try {
    handle_request(serial, c, r);
  } catch (const WireError&) {
    close_connection(serial);  // not our protocol, or a broken peer: drop it
  }
}

void TCPStoreServer::State::handle_request(uint64_t serial, Connection& c, WireReader& r) {
  auto op = static_cast<StoreOp>(r.u8());
  uint64_t request_id = r.u64();
  if (!c.greeted) {
    if (op != StoreOp::hello || r.u32() != kStoreMagic) throw WireError("not an oar store client");
    uint32_t version = r.u32();
    uint64_t client_id = r.u64();
    std::string client_job = r.str(kMaxHelloBytes);
    if (version != kStoreProtocolVersion || client_job != job_id) {
      WireWriter w;
      w.u8(static_cast<uint8_t>(StoreStatus::mismatch))
          .u64(request_id)
          .u32(kStoreProtocolVersion)
          .str(job_id);
      c.close_after_flush = true;  // the client reads the reply, then closes
      reply(c, w);
      return;
    }
    c.greeted = true;
    c.client_id = client_id;
    WireWriter w;
    w.u8(static_cast<uint8_t>(StoreStatus::ok)).u64(request_id);
    reply(c, w);
    return;
  }
  WireWriter w;
  switch (op) {
    case StoreOp::set: {
      std::string key = r.str(TCPStore::kMaxKeyBytes);
      values[key] = r.bytes(TCPStore::kMaxValueBytes);
      w.u8(static_cast<uint8_t>(StoreStatus::ok)).u64(request_id);
      reply(c, w);
      key_changed(key);
      return;
    }
    case StoreOp::get: {
      std::string key = r.str(TCPStore::kMaxKeyBytes);
      int64_t timeout_ms = std::clamp<int64_t>(r.i64(), 0, kMaxTimeoutMs);
      bool want_value = r.u8() != 0;
      auto it = values.find(key);
      if (it != values.end()) {
        w.u8(static_cast<uint8_t>(StoreStatus::ok)).u64(request_id);
        if (want_value) w.str(it->second);
        reply(c, w);
        return;
      }
      waiters[key].push_back(
          {serial, request_id, want_value, Clock::now() + std::chrono::milliseconds(timeout_ms)});
      return;
    }
    case StoreOp::add: {
      std::string key = r.str(TCPStore::kMaxKeyBytes);
      int64_t delta = r.i64();
      auto seen = last_add.find(c.client_id);
      if (seen != last_add.end() && seen->second.request_id == request_id) {
        w.u8(static_cast<uint8_t>(StoreStatus::ok)).u64(request_id).i64(seen->second.result);
        reply(c, w);
        return;
      }
      auto it = values.find(key);
      if (it != values.end() && it->second.size() != 8) {
        w.u8(static_cast<uint8_t>(StoreStatus::error)).u64(request_id);
        w.str("key '" + key + "' holds a " + std::to_string(it->second.size()) +
              "-byte value, not an 8-byte counter, so add cannot apply to it");
        reply(c, w);
        return;
      }
      int64_t result = static_cast<int64_t>(
          static_cast<uint64_t>(it == values.end() ? 0 : decode_counter(it->second)) +
          static_cast<uint64_t>(delta));
      values[key] = encode_counter(result);
      last_add[c.client_id] = {request_id, result};
      if (drop_after_add.exchange(false)) {
        close_connection(serial);  // test hook: applied, reply lost
      } else {
        w.u8(static_cast<uint8_t>(StoreStatus::ok)).u64(request_id).i64(result);
        reply(c, w);
      }
      key_changed(key);
      return;
    }
    case StoreOp::check: {
      std::string key = r.str(TCPStore::kMaxKeyBytes);
      w.u8(static_cast<uint8_t>(StoreStatus::ok)).u64(request_id).u8(values.count(key) ? 1 : 0);
      reply(c, w);
      return;
    }
    case StoreOp::hello:
      break;
  }
  throw WireError("unknown request op " + std::to_string(static_cast<int>(op)));
}

void TCPStoreServer::State::reply(Connection& c, const WireWriter& w) {
  std::vector<uint8_t> frame = w.frame();
  c.out.insert(c.out.end(), frame.begin(), frame.end());
  flush(c);
}

void TCPStoreServer::State::flush(Connection& c) {
  while (c.out_sent < c.out.size()) {
    ssize_t n = ::send(c.fd, c.out.data() + c.out_sent, c.out.size() - c.out_sent, MSG_NOSIGNAL);
    if (n <= 0) {
      // EAGAIN: poll says when to go on; an error: the next recv sees it and closes.
      return;
    }
    c.out_sent += static_cast<size_t>(n);
  }
  c.out.clear();
  c.out_sent = 0;
  if (c.close_after_flush) ::shutdown(c.fd, SHUT_WR);  // the client's close ends it
}

void TCPStoreServer::State::close_connection(uint64_t serial) {
  auto it = connections.find(serial);
  if (it == connections.end()) return;
  ::close(it->second.fd);
  connections.erase(it);
  // Its parked waiters are skipped when their key appears or their deadline passes.
}

void TCPStoreServer::State::close_all() {
  for (auto& [serial, c] : connections) ::close(c.fd);
  connections.clear();
  waiters.clear();
}

void TCPStoreServer::State::key_changed(const std::string& key) {
  auto it = waiters.find(key);
  if (it == waiters.end()) return;
  std::vector<Waiter> ready = std::move(it->second);
  waiters.erase(it);
  const std::vector<uint8_t>& value = values[key];
  for (const Waiter& waiter : ready) {
    auto c = connections.find(waiter.connection);
    if (c == connections.end()) continue;
    WireWriter w;
    w.u8(static_cast<uint8_t>(StoreStatus::ok)).u64(waiter.request_id);
    if (waiter.want_value) w.str(value);
    reply(c->second, w);
  }
}

Clock::time_point TCPStoreServer::State::expire_waiters() {
  Clock::time_point now = Clock::now(), next = Clock::time_point::max();
  for (auto it = waiters.begin(); it != waiters.end();) {
    auto& list = it->second;
    for (size_t i = 0; i < list.size();) {
      auto c = connections.find(list[i].connection);
      if (c == connections.end() || list[i].deadline <= now) {
        if (c != connections.end()) {
          WireWriter w;
          w.u8(static_cast<uint8_t>(StoreStatus::timeout)).u64(list[i].request_id);
          reply(c->second, w);
        }
        list[i] = list.back();
        list.pop_back();
      } else {
        next = std::min(next, list[i].deadline);
        ++i;
      }
    }
    it = list.empty() ? waiters.erase(it) : std::next(it);
  }
  return next;
}

}  // namespace oar::detail
