// The TCP rendezvous store: set/get/add/wait/check across threads and
// processes, timeouts that name the key and address, late servers, dropped
// connections, another job's store, hostile peers, size limits and many
// clients (Note [TCP store protocol], core/src/runtime/store_tcp.h).
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "oar/store.h"
#include "runtime/store_tcp.h"
#include "test_util.h"

using oar::TCPStore;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int64_t kTimeout = 5000;  // ms; only failure cases get near it

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }
std::string text(const std::vector<uint8_t>& b) { return {b.begin(), b.end()}; }

int64_t elapsed_ms(Clock::time_point since) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - since).count();
}

// A port nobody listens on right now (bound to 0, then released).
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// A raw TCP connection to 127.0.0.1:port (for hostile peers).
int raw_connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  return fd;
}

// Whether the server closed fd within 5 s (recv sees EOF or a reset).
bool closed_by_peer(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 5000) != 1) return false;
  char buf[256];
  ssize_t n = ::recv(fd, buf, sizeof buf, 0);
  return n <= 0;
}

// A child process running `oar-store`; killed and reaped on destruction.
struct StoreProcess {
  pid_t pid = -1;
  int port = 0;
  explicit StoreProcess(const std::string& job_id) {
    const char* bin = std::getenv("OAR_BIN_DIR");
    REQUIRE_MESSAGE(bin, "OAR_BIN_DIR (set by ctest) names the directory of oar-store");
    std::string exe = std::string(bin) + "/oar-store";
    int out[2];
    REQUIRE(::pipe(out) == 0);
    pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::dup2(out[1], 1);
      ::close(out[0]);
      ::execl(exe.c_str(), exe.c_str(), "--host", "127.0.0.1", "--port", "0", "--job-id",
              job_id.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(out[1]);
    // Read the banner "oar-store: serving job J on 127.0.0.1:P\n" (bounded).
    std::string line;
    pollfd p{out[0], POLLIN, 0};
    while (line.find('\n') == std::string::npos && ::poll(&p, 1, 5000) == 1) {
      char c[256];
      ssize_t n = ::read(out[0], c, sizeof c);
      if (n <= 0) break;
      line.append(c, static_cast<size_t>(n));
    }
    ::close(out[0]);
    std::string prefix = "oar-store: serving job " + job_id + " on 127.0.0.1:";
    REQUIRE_MESSAGE(line.rfind(prefix, 0) == 0, "oar-store printed: " << line);
    port = std::atoi(line.c_str() + prefix.size());
    REQUIRE(port > 0);
  }
  ~StoreProcess() {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
};

// Waits up to 10 s for a child; kills it if it is still running. Its exit status, or -1.
int reap(pid_t pid) {
  auto deadline = Clock::now() + std::chrono::seconds(10);
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (Clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling a child's exit
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("tcp store: set, get, add, wait and check in one process") {
  TCPStore server("127.0.0.1", 0, /*serve=*/true, "job-a", kTimeout);
  CHECK(server.port() > 0);
  CHECK(server.serving());
  TCPStore client("127.0.0.1", server.port(), false, "job-a", kTimeout);
  CHECK_FALSE(client.check("k"));
  client.set("k", bytes("hello"));
  CHECK(server.check("k"));
  CHECK(text(server.get("k", kTimeout)) == "hello");
  client.set("k", bytes(""));  // overwrite with an empty value
  CHECK(server.get("k", kTimeout).empty());
  CHECK(client.add("n", 5) == 5);
  CHECK(server.add("n", -2) == 3);
  CHECK(client.get("n", kTimeout) == std::vector<uint8_t>{3, 0, 0, 0, 0, 0, 0, 0});
  client.wait("n", kTimeout);
  std::string message = oar_test::error_of([&] { client.add("k", 1); });
  CHECK(message.find("'k'") != std::string::npos);
  CHECK(message.find("0-byte value") != std::string::npos);
  // A server given "0.0.0.0" listens on every interface and reaches itself through loopback.
  TCPStore any("0.0.0.0", 0, true, "job-a", kTimeout);
  any.set("x", bytes("1"));
  CHECK(text(TCPStore("127.0.0.1", any.port(), false, "job-a", kTimeout).get("x", kTimeout)) ==
        "1");
}

TEST_CASE("tcp store: a get parked in the server is answered when another thread sets the key") {
  TCPStore server("127.0.0.1", 0, true, "job", kTimeout);
  std::string got;
  std::thread waiter([&] {
    TCPStore client("127.0.0.1", server.port(), false, "job", kTimeout);
    got = text(client.get("late", kTimeout));
  });
  // The same store object serves another thread while one is blocked in get.
  std::thread waiter2([&] { server.wait("late", kTimeout); });
  server.set("other", bytes("x"));
  server.set("late", bytes("value"));
  waiter.join();
  waiter2.join();
  CHECK(got == "value");
}

TEST_CASE("tcp store: a get timeout names the key and the address and returns within the timeout") {
  TCPStore server("127.0.0.1", 0, true, "job", kTimeout);
  // A host name, when this machine resolves one (a bare chroot may have no
  // /etc/hosts, so not even "localhost").
  std::string host = "localhost";
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) == 0) {
    ::freeaddrinfo(found);
  } else {
    MESSAGE("'localhost' does not resolve here (no /etc/hosts?): testing with 127.0.0.1");
    host = "127.0.0.1";
  }
  TCPStore client(host, server.port(), false, "job", kTimeout);
  auto start = Clock::now();
  std::string message = oar_test::error_of([&] { client.get("missing/key", 300); });
  int64_t took = elapsed_ms(start);
  CHECK(took >= 300);
  CHECK(took < 1500);
  std::string address = host + ":" + std::to_string(server.port());
  CHECK(message == "TCP store at " + address + ": key 'missing/key' did not appear within 300 ms");
  start = Clock::now();
  message = oar_test::error_of([&] { client.wait("missing/key", 200); });
  CHECK(elapsed_ms(start) < 1500);
  CHECK(message.find("'missing/key'") != std::string::npos);
  // The store still answers after the timeouts.
  client.set("missing/key", bytes("now"));
  CHECK(text(client.get("missing/key", 100)) == "now");
}

TEST_CASE("tcp store: a client started before the server connects once the server appears") {
  int port = free_port();
  std::string got, error;
  std::thread early([&] {
    try {
      TCPStore client("127.0.0.1", port, false, "job", kTimeout);
      got = text(client.get("ready", kTimeout));
    } catch (const oar::Error& e) {
      error = e.what();
    }
  });
  std::this_thread::sleep_for(
      std::chrono::milliseconds(200));  // the scenario: the server comes later
  TCPStore server("127.0.0.1", port, true, "job", kTimeout);
  server.set("ready", bytes("yes"));
  early.join();
  CHECK(error == "");
  CHECK(got == "yes");
}

TEST_CASE("tcp store: no server within the timeout is a timeout naming the address") {
  int port = free_port();
  auto start = Clock::now();
  oar::Error error(oar::ErrorCode::internal, "");
  try {
    TCPStore client("127.0.0.1", port, false, "job", 300);
  } catch (const oar::Error& e) {
    error = e;
  }
  CHECK(error.code() == oar::ErrorCode::timeout);
  CHECK(std::string(error.what()).find("127.0.0.1:" + std::to_string(port)) != std::string::npos);
  CHECK(elapsed_ms(start) < 1500);
}

TEST_CASE(
    "tcp store: clients reconnect after dropped connections; values stay and an add counts once") {
  TCPStore server("127.0.0.1", 0, true, "job", kTimeout);
  TCPStore client("127.0.0.1", server.port(), false, "job", kTimeout);
  client.set("a", bytes("1"));
  CHECK(client.add("c", 1) == 1);
  server.drop_connections_for_test();
  CHECK(text(client.get("a", kTimeout)) == "1");
  CHECK(client.add("c", 1) == 2);
  // The server applies the next add, then drops the connection before replying:
  // the client's retry must get the remembered result, not a second increment.
  server.drop_after_next_add_for_test();
  CHECK(client.add("c", 10) == 12);
  CHECK(server.add("c", 0) == 12);
  // A get parked in the server when the connections drop is re-sent and answered.
  std::string got;
  std::thread waiter([&] { got = text(client.get("b", kTimeout)); });
  // Whether the drop comes before or after the get reaches the server, the
  // client must see the broken connection and re-send.
  server.drop_connections_for_test();
  server.set("b", bytes("2"));
  waiter.join();
  CHECK(got == "2");
}

TEST_CASE("tcp store: once its server is gone a client gives up after the reconnect window, not the timeout") {
  auto server = std::make_unique<TCPStore>("127.0.0.1", 0, true, "job", kTimeout);
  int port = server->port();
  TCPStore client("127.0.0.1", port, false, "job", 120000);  // a long timeout, as a collective's
  client.set("a", bytes("1"));
  server.reset();  // the serving process is gone
  auto start = Clock::now();
  oar::Error error(oar::ErrorCode::internal, "");
  try {
    client.set("b", bytes("2"));
  } catch (const oar::Error& e) {
    error = e;
  }
  INFO(error.what());
  CHECK(error.code() == oar::ErrorCode::timeout);
  CHECK(std::string(error.what()).find("127.0.0.1:" + std::to_string(port)) != std::string::npos);
  CHECK(std::string(error.what()).find("did not come back within 5 s") != std::string::npos);
  CHECK(elapsed_ms(start) < 9000);
}

TEST_CASE(
    "tcp store: a client of another job gets a sentence naming both job ids and the address") {
  TCPStore server("127.0.0.1", 0, true, "job-one", kTimeout);
  auto start = Clock::now();
  oar::Error error(oar::ErrorCode::internal, "");
  try {
    TCPStore client("127.0.0.1", server.port(), false, "job-two", kTimeout);
  } catch (const oar::Error& e) {
    error = e;
  }
  CHECK(error.code() == oar::ErrorCode::invalid_argument);
  std::string message = error.what();
  CHECK(message.find("127.0.0.1:" + std::to_string(server.port())) != std::string::npos);
  CHECK(message.find("'job-one'") != std::string::npos);
  CHECK(message.find("'job-two'") != std::string::npos);
  CHECK(elapsed_ms(start) < 1000);  // not retried until the timeout
}

TEST_CASE(
    "tcp store: garbage bytes and oversized frames drop that peer; the server keeps serving") {
  TCPStore server("127.0.0.1", 0, true, "job", kTimeout);
  int http = raw_connect(server.port());
  const char request[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  CHECK(::send(http, request, sizeof request - 1, MSG_NOSIGNAL) > 0);
  CHECK(closed_by_peer(http));
  ::close(http);
  // A well-formed hello, then a frame claiming 4 GiB.
  int big = raw_connect(server.port());
  oar::detail::WireWriter hello;
  hello.u8(0)
      .u64(0)
      .u32(oar::detail::kStoreMagic)
      .u32(oar::detail::kStoreProtocolVersion)
      .u64(42)
      .str("job");
  std::vector<uint8_t> frame = hello.frame();
  const uint8_t huge[] = {0xf0, 0xff, 0xff, 0xff, 1, 2, 3};
  frame.insert(frame.end(), huge, huge + sizeof huge);
  CHECK(::send(big, frame.data(), frame.size(), MSG_NOSIGNAL) ==
        static_cast<ssize_t>(frame.size()));
  uint8_t reply[13];
  CHECK(::recv(big, reply, sizeof reply, MSG_WAITALL) == 13);  // the hello's ok
  CHECK(reply[4] == 0);
  CHECK(closed_by_peer(big));
  ::close(big);
  // A peer that connects and leaves at once.
  ::close(raw_connect(server.port()));
  TCPStore client("127.0.0.1", server.port(), false, "job", kTimeout);
  client.set("still", bytes("serving"));
  CHECK(text(server.get("still", kTimeout)) == "serving");
}

TEST_CASE("tcp store: an oversized value or key is refused with a sentence") {
  TCPStore server("127.0.0.1", 0, true, "job", kTimeout);
  std::vector<uint8_t> value(TCPStore::kMaxValueBytes + 1, 7);
  std::string message = oar_test::error_of([&] { server.set("big", value); });
  CHECK(message ==
        "TCP store at 127.0.0.1:" + std::to_string(server.port()) +
            ": the value for key 'big' is 67108865 bytes; the store takes at most 67108864 bytes "
            "per value");
  message = oar_test::error_of([&] { server.check(std::string(5000, 'k')); });
  CHECK(message.find("a key of 5000 bytes") != std::string::npos);
  CHECK_FALSE(server.check("big"));
  // The largest value allowed goes through.
  value.pop_back();
  server.set("big", value);
  CHECK(server.get("big", kTimeout).size() == TCPStore::kMaxValueBytes);
}

TEST_CASE("tcp store: 64 concurrent clients count and publish correctly") {
  TCPStore server("127.0.0.1", 0, true, "job", kTimeout);
  constexpr int kClients = 64, kAdds = 10;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      try {
        TCPStore client("127.0.0.1", server.port(), false, "job", kTimeout);
        for (int k = 0; k < kAdds; ++k) client.add("count", 1);
        client.set("client/" + std::to_string(i), bytes(std::to_string(i * i)));
        client.wait("go", kTimeout);  // every client parked in the server at once
        if (text(client.get("client/" + std::to_string((i + 1) % kClients), kTimeout)) !=
            std::to_string((i + 1) % kClients * ((i + 1) % kClients))) {
          ++failures;
        }
      } catch (const oar::Error&) {
        ++failures;
      }
    });
  }
  for (int i = 0; i < kClients; ++i) server.wait("client/" + std::to_string(i), kTimeout);
  CHECK(server.add("count", 0) == kClients * kAdds);
  server.set("go", bytes("1"));
  for (auto& t : threads) t.join();
  CHECK(failures == 0);
}

TEST_CASE("tcp store: processes rendezvous through the oar-store binary") {
  StoreProcess store("proc-job");
  constexpr int kChildren = 3;
  std::vector<pid_t> children;
  for (int rank = 0; rank < kChildren; ++rank) {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int code = 1;
      try {
        TCPStore client("127.0.0.1", store.port, false, "proc-job", kTimeout);
        int64_t arrived = client.add("arrived", 1);
        client.set("rank/" + std::to_string(rank), bytes(std::to_string(100 + rank)));
        std::string go = text(client.get("go", kTimeout));
        code = (arrived >= 1 && arrived <= kChildren && go == "3") ? 0 : 2;
      } catch (...) {
        code = 3;
      }
      ::_exit(code);
    }
    children.push_back(pid);
  }
  int status = 0;
  try {
    TCPStore parent("127.0.0.1", store.port, false, "proc-job", kTimeout);
    for (int rank = 0; rank < kChildren; ++rank) {
      CHECK(text(parent.get("rank/" + std::to_string(rank), kTimeout)) ==
            std::to_string(100 + rank));
    }
    int64_t arrived = parent.add("arrived", 0);
    CHECK(arrived == kChildren);
    parent.set("go", bytes(std::to_string(arrived)));
  } catch (...) {
    for (pid_t pid : children) reap(pid);
    throw;
  }
  for (pid_t pid : children) status |= reap(pid);
  CHECK(status == 0);
}

TEST_CASE("in-process and file stores: check says whether a key exists without waiting") {
  oar::InProcessStore memory;
  CHECK_FALSE(memory.check("k"));
  memory.set("k", bytes("v"));
  CHECK(memory.check("k"));
  std::string dir =
      std::filesystem::temp_directory_path() / ("oar_store_check_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  oar::FileStore file(dir);
  CHECK_FALSE(file.check("a/b"));
  file.add("a/b", 2);
  CHECK(file.check("a/b"));
  std::filesystem::remove_all(dir);
}
