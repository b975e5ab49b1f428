// The cpu plugin's collectives (Gloo over TCP) with ranks as processes:
// each rank is a fork of this test, meeting the others through a FileStore
// in a temporary directory. Existing ops go through
// oar::distributed::Communicator, the ABI 1.2 entries (reduce, scatter,
// all_to_allv) through the raw device table. Values are hand-computed.
// The parent never touches the runtime (a child starts it fresh), waits for
// its children with a deadline and kills whatever is left.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "dispatch/device_context.h"
#include "doctest/doctest.h"
#include "oar/distributed.h"
#include "oar/oar.h"
#include "oar/plugin_util.h"
#include "runtime/runtime_state.h"

namespace {

using oar::Device;
using oar::DType;
using oar::Tensor;
using oar::distributed::Communicator;
using oar::distributed::ReduceOp;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

const Device kCpu{"cpu", 0};

/// What a rank body returns: "" when all its checks held, else the first
/// problem. Throwing is reported as its message.
using RankBody = std::function<std::string(int rank, int nranks, oar::Store& store)>;

struct RankResult {
  std::string message;  // "" on success
  bool finished = false;
};

/// Runs body in `nranks` forked children (ranks in `absent` are not
/// started) and returns each rank's result; kills children still running
/// after `deadline`.
std::vector<RankResult> run_ranks(int nranks, const RankBody& body, std::chrono::seconds deadline,
                                  std::vector<int> absent = {}) {
  fs::path dir =
      fs::temp_directory_path() / ("oar_gloo_" + std::to_string(::getpid()) + "_" +
                                   std::to_string(Clock::now().time_since_epoch().count()));
  fs::create_directories(dir);
  std::vector<pid_t> pids(nranks, -1);
  for (int rank = 0; rank < nranks; ++rank) {
    if (std::find(absent.begin(), absent.end(), rank) != absent.end()) continue;
    std::fflush(nullptr);
    pid_t pid = ::fork();
    if (pid == 0) {
      std::string message;
      try {
        oar::FileStore store((dir / "store").string());
        message = body(rank, nranks, store);
      } catch (const std::exception& e) {
        message = std::string("threw: ") + e.what();
      }
      std::ofstream((dir / ("rank" + std::to_string(rank))).string())
          << (message.empty() ? "ok" : message);
      std::fflush(nullptr);
      ::_exit(0);  // no static destruction in a forked child
    }
    pids[rank] = pid;
  }
  auto until = Clock::now() + deadline;
  for (bool waiting = true; waiting;) {
    waiting = false;
    for (pid_t& pid : pids) {
      if (pid <= 0) continue;
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid)
        pid = -1;
      else
        waiting = true;
    }
    if (waiting && Clock::now() > until) {
      for (pid_t pid : pids)
        if (pid > 0) ::kill(pid, SIGKILL);
      for (pid_t& pid : pids)
        if (pid > 0) ::waitpid(pid, nullptr, 0), pid = -1;
      break;
    }
    if (waiting) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::vector<RankResult> results(nranks);
  for (int rank = 0; rank < nranks; ++rank) {
    std::ifstream in((dir / ("rank" + std::to_string(rank))).string());
    if (!in) continue;
    std::stringstream text;
    text << in.rdbuf();
    results[rank].finished = true;
    results[rank].message = text.str() == "ok" ? "" : text.str();
  }
  fs::remove_all(dir);
  return results;
}

void check_all_passed(const std::vector<RankResult>& results) {
  for (size_t r = 0; r < results.size(); ++r) {
    INFO("rank " << r << ": " << (results[r].finished ? results[r].message : "did not finish"));
    CHECK(results[r].finished);
    CHECK(results[r].message.empty());
  }
}

template <typename T>
std::string expect(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  if (got == want) return "";
  std::ostringstream s;
  s << what << ": got [";
  for (const T& v : got) s << +v << ' ';
  s << "] but expected [";
  for (const T& v : want) s << +v << ' ';
  s << "]";
  return s.str();
}

std::string first(std::initializer_list<std::string> problems) {
  for (const std::string& p : problems)
    if (!p.empty()) return p;
  return "";
}

// ---------------------------------------------------------- Communicator ---

std::string communicator_ops(int rank, int n, oar::Store& store) {
  Communicator comm(kCpu, n, rank, store, "test/gloo", 10000);
  // all_reduce sum: rank r holds [r+1, 10(r+1)]; 2 ranks -> [3, 30], 3 ranks -> [6, 60].
  Tensor s = Tensor::from_vector<float>({float(rank + 1), float(10 * (rank + 1))}, {2}, kCpu);
  comm.all_reduce(s);
  std::vector<float> want_sum = n == 2 ? std::vector<float>{3, 30} : std::vector<float>{6, 60};
  // max over i32 [r, -r]: [n-1, 0]; prod over f64 [r+2]: 2*3 (=6) or 2*3*4 (=24).
  Tensor m = Tensor::from_vector<int32_t>({rank, -rank}, {2}, kCpu);
  comm.all_reduce(m, ReduceOp::max);
  Tensor p = Tensor::from_vector<double>({double(rank + 2)}, {1}, kCpu);
  comm.all_reduce(p, ReduceOp::prod);
  // min over i64 [10 - r]: 10 - (n-1).
  Tensor mn = Tensor::from_vector<int64_t>({10 - rank}, {1}, kCpu);
  comm.all_reduce(mn, ReduceOp::min);
  // all_gather of [r, 100 + r].
  Tensor g = comm.all_gather(Tensor::from_vector<int32_t>({rank, 100 + rank}, {2}, kCpu));
  std::vector<int32_t> want_g =
      n == 2 ? std::vector<int32_t>{0, 100, 1, 101} : std::vector<int32_t>{0, 100, 1, 101, 2, 102};
  // reduce_scatter sum of [0, 1, .., n-1] + 10 r: block k = n k + 10 (0 + .. + n-1).
  std::vector<float> rs_in;
  for (int k = 0; k < n; ++k) rs_in.push_back(float(k + 10 * rank));
  Tensor rs = comm.reduce_scatter(Tensor::from_vector<float>(rs_in, {int64_t(n)}, kCpu));
  float want_rs = float(n * rank + (n == 2 ? 10 : 30));
  // broadcast from the last rank: [7 r, 1].
  Tensor b = Tensor::from_vector<float>({float(7 * rank), 1}, {2}, kCpu);
  comm.broadcast(b, n - 1);
  // send/recv around a ring (even ranks send first: Gloo's send waits for the receiver).
  int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  Tensor out = Tensor::from_vector<int64_t>({rank * 1000 + 5}, {1}, kCpu);
  Tensor in = Tensor::from_vector<int64_t>({-1}, {1}, kCpu);
  if (rank % 2 == 0) {
    comm.send(out, next);
    comm.recv(in, prev);
  } else {
    comm.recv(in, prev);
    comm.send(out, next);
  }
  comm.barrier();
  return first(
      {expect(s.to_vector<float>(), want_sum, "all_reduce sum f32"),
       expect(m.to_vector<int32_t>(), {n - 1, 0}, "all_reduce max i32"),
       expect(p.to_vector<double>(), {n == 2 ? 6.0 : 24.0}, "all_reduce prod f64"),
       expect(mn.to_vector<int64_t>(), {int64_t(11 - n)}, "all_reduce min i64"),
       expect(g.to_vector<int32_t>(), want_g, "all_gather i32"),
       expect(rs.to_vector<float>(), {want_rs}, "reduce_scatter sum f32"),
       expect(b.to_vector<float>(), {float(7 * (n - 1)), 1}, "broadcast from the last rank"),
       expect(in.to_vector<int64_t>(), {int64_t(prev * 1000 + 5)}, "recv from the previous rank")});
}

TEST_CASE(
    "gloo: the Communicator's collectives on 2 and 3 processes give the hand-computed values") {
  for (int n : {2, 3}) {
    INFO(n << " ranks");
    check_all_passed(run_ranks(n, communicator_ops, std::chrono::seconds(60)));
  }
}

// f16 and bool: 2048 + 1 + 1 is 2050 in f32 but not in an f16 running sum
// (2049 rounds back to 2048, and 2 ranks give 2048); bool sum is or, prod is and.
std::string half_and_bool(int rank, int n, oar::Store& store) {
  Communicator comm(kCpu, n, rank, store, "test/gloo-half", 10000);
  Tensor h =
      oar::cast(Tensor::from_vector<float>({rank == 0 ? 2048.f : 1.f}, {1}, kCpu), DType::f16);
  comm.all_reduce(h);
  Tensor bf =
      oar::cast(Tensor::from_vector<float>({0.5f * float(rank + 1)}, {1}, kCpu), DType::bf16);
  comm.all_reduce(bf);
  Tensor any = Tensor::from_vector<bool>({rank == 1, false}, {2}, kCpu);
  comm.all_reduce(any, ReduceOp::sum);
  Tensor all = Tensor::from_vector<bool>({true, rank != 1}, {2}, kCpu);
  comm.all_reduce(all, ReduceOp::prod);
  return first({expect(oar::cast(h, DType::f32).to_vector<float>(), {n == 3 ? 2050.f : 2048.f},
                       "all_reduce sum f16"),
                expect(oar::cast(bf, DType::f32).to_vector<float>(), {n == 3 ? 3.f : 1.5f},
                       "all_reduce sum bf16"),
                expect(any.to_vector<bool>(), {true, false}, "all_reduce sum (or) bool"),
                expect(all.to_vector<bool>(), {true, false}, "all_reduce prod (and) bool")});
}

TEST_CASE("gloo: f16 sums accumulate in f32 and bool reduces with or / and") {
  for (int n : {2, 3}) {
    INFO(n << " ranks");
    check_all_passed(run_ranks(n, half_and_bool, std::chrono::seconds(60)));
  }
}

// Two communicators of the same ranks used at the same time from two
// threads (as two groups' comm workers would): each gives its own sums.
std::string two_comms_two_threads(int rank, int n, oar::Store& store) {
  Communicator a(kCpu, n, rank, store, "test/gloo-a", 10000);
  Communicator b(kCpu, n, rank, store, "test/gloo-b", 10000);
  std::string problem_a, problem_b;
  auto loop = [&](Communicator& comm, float base, std::string& problem) {
    try {
      for (int i = 0; i < 20 && problem.empty(); ++i) {
        Tensor t = Tensor::from_vector<float>({base + float(rank), float(i)}, {2}, kCpu);
        comm.all_reduce(t);
        // sum over ranks of base + r, and n * i
        float want0 = n * base + float(n * (n - 1) / 2);
        problem =
            expect(t.to_vector<float>(), {want0, float(n * i)}, "all_reduce on one of two comms");
      }
    } catch (const std::exception& e) {
      problem = e.what();
    }
  };
  std::thread t([&] { loop(a, 100.f, problem_a); });
  loop(b, 1000.f, problem_b);
  t.join();
  return first({problem_a, problem_b});
}

TEST_CASE("gloo: two communicators run concurrently from two threads (2 processes)") {
  check_all_passed(run_ranks(2, two_comms_two_threads, std::chrono::seconds(60)));
}

// --------------------------------------------------- raw ABI 1.2 entries ---

struct RawComm {
  oar::DeviceBackend* b = nullptr;
  OarComm_t comm = nullptr;
  void check(OarStatus st, const char* what) const { b->check(st, what); }
  void* dev_copy(const void* host, size_t bytes) const {
    void* p = nullptr;
    check(b->api.malloc(b->api.impl, 0, bytes ? bytes : 1, 64, &p), "malloc");
    if (bytes) check(b->api.memcpy_h2d(b->api.impl, 0, p, host, bytes), "memcpy_h2d");
    return p;
  }
  template <typename T>
  std::vector<T> read(const void* p, size_t n) const {
    std::vector<T> v(n);
    if (n) check(b->api.memcpy_d2h(b->api.impl, 0, v.data(), p, n * sizeof(T)), "memcpy_d2h");
    return v;
  }
};

RawComm raw_comm(int rank, int n, oar::Store& store, int64_t timeout_ms) {
  RawComm r;
  r.b = &oar::backend_of(kCpu);
  uint64_t size = 0;
  r.check(r.b->api.comm_unique_id_size(r.b->api.impl, &size), "comm_unique_id_size");
  std::vector<uint8_t> id(size);
  if (rank == 0) {
    r.check(r.b->api.comm_unique_id(r.b->api.impl, id.data(), size), "comm_unique_id");
    store.set("test/raw-id", id);
  } else {
    id = store.get("test/raw-id", timeout_ms);
  }
  r.check(r.b->api.comm_init(r.b->api.impl, id.data(), size, n, rank, 0,
                             reinterpret_cast<OarStore_t>(&store), timeout_ms, &r.comm),
          "comm_init");
  return r;
}

std::string abi_1_2_entries(int rank, int n, oar::Store& store) {
  RawComm r = raw_comm(rank, n, store, 10000);
  const OarDeviceApi& api = r.b->api;
  // reduce max to root 0 of i32 [r, 5 - r]: [n-1, 5]; the others' recv stays [-9, -9].
  std::vector<int32_t> mine = {rank, 5 - rank}, fill = {-9, -9};
  void* send = r.dev_copy(mine.data(), 8);
  void* recv = r.dev_copy(fill.data(), 8);
  r.check(api.reduce(api.impl, send, recv, 2, OAR_DTYPE_I32, OAR_REDUCE_MAX, 0, r.comm, nullptr),
          "reduce");
  std::string p1 =
      expect(r.read<int32_t>(recv, 2), rank == 0 ? std::vector<int32_t>{n - 1, 5} : fill,
             "reduce max to root 0");
  // scatter from root 1 of f32 [0, 1, .., 2n-1]: rank k gets [2k, 2k+1].
  std::vector<float> all;
  for (int i = 0; i < 2 * n; ++i) all.push_back(rank == 1 ? float(i) : -1.f);
  void* ssend = r.dev_copy(all.data(), all.size() * 4);
  void* srecv = r.dev_copy(fill.data(), 8);
  r.check(api.scatter(api.impl, ssend, srecv, 2, OAR_DTYPE_F32, 1, r.comm, nullptr), "scatter");
  std::string p2 = expect(r.read<float>(srecv, 2), {float(2 * rank), float(2 * rank + 1)},
                          "scatter from root 1");
  // all_to_allv of i64: rank s sends s + d + 1 copies of 10 s + d to rank d
  // (offsets with a gap of 1 before each block, on both sides).
  std::vector<uint64_t> sc(n), so(n), rc(n), ro(n);
  std::vector<int64_t> sbuf;
  uint64_t at = 0;
  for (int d = 0; d < n; ++d) {
    sc[d] = uint64_t(rank + d + 1);
    sbuf.push_back(-1);
    so[d] = sbuf.size();
    for (uint64_t k = 0; k < sc[d]; ++k) sbuf.push_back(10 * rank + d);
    rc[d] = uint64_t(d + rank + 1);
    ro[d] = at + 1;
    at = ro[d] + rc[d];
  }
  std::vector<int64_t> want(at, 7);
  for (int s = 0; s < n; ++s)
    for (uint64_t k = 0; k < rc[s]; ++k) want[ro[s] + k] = 10 * s + rank;
  std::vector<int64_t> rfill(at, 7);
  void* vsend = r.dev_copy(sbuf.data(), sbuf.size() * 8);
  void* vrecv = r.dev_copy(rfill.data(), at * 8);
  r.check(api.all_to_allv(api.impl, vsend, sc.data(), so.data(), vrecv, rc.data(), ro.data(),
                          OAR_DTYPE_I64, r.comm, nullptr),
          "all_to_allv");
  std::string p3 = expect(r.read<int64_t>(vrecv, at), want, "all_to_allv i64");
  // all_to_all in place of u8 [10 r + d for d]: block d becomes 10 d + r.
  std::vector<uint8_t> a2a;
  for (int d = 0; d < n; ++d) a2a.push_back(uint8_t(10 * rank + d));
  void* abuf = r.dev_copy(a2a.data(), a2a.size());
  r.check(api.all_to_all(api.impl, abuf, abuf, 1, OAR_DTYPE_U8, r.comm, nullptr), "all_to_all");
  std::vector<uint8_t> want_a2a;
  for (int s = 0; s < n; ++s) want_a2a.push_back(uint8_t(10 * s + rank));
  std::string p4 = expect(r.read<uint8_t>(abuf, n), want_a2a, "all_to_all in place u8");
  r.check(api.comm_destroy(api.impl, r.comm), "comm_destroy");
  return first({p1, p2, p3, p4});
}

TEST_CASE(
    "gloo: reduce, scatter, all_to_allv and in-place all_to_all through the raw ABI on 2 and 3 "
    "processes") {
  for (int n : {2, 3}) {
    INFO(n << " ranks");
    check_all_passed(run_ranks(n, abi_1_2_entries, std::chrono::seconds(60)));
  }
}

// Every rank sends to the next before it receives from the previous one:
// sends are posted without waiting for the receiver (Note [Eager sends]),
// so this cannot deadlock, and the sender may overwrite its buffer at once.
std::string send_before_recv(int rank, int n, oar::Store& store) {
  Communicator comm(kCpu, n, rank, store, "test/gloo-ring", 10000);
  int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  Tensor out = Tensor::from_vector<int32_t>({rank, rank * rank}, {2}, kCpu);
  comm.send(out, next);
  // After send returned the caller owns its buffer again (cpu memory is host memory).
  auto* bytes = static_cast<char*>(out.impl().storage->data()) + out.impl().byte_offset;
  std::memset(bytes, 0x7f, 8);
  Tensor in = Tensor::from_vector<int32_t>({-1, -1}, {2}, kCpu);
  comm.recv(in, prev);
  comm.barrier();
  return expect(in.to_vector<int32_t>(), {prev, prev * prev}, "recv from the previous rank");
}

TEST_CASE("gloo: ranks that all send before they receive do not deadlock (2 and 3 processes)") {
  for (int n : {2, 3}) {
    INFO(n << " ranks");
    check_all_passed(run_ranks(n, send_before_recv, std::chrono::seconds(60)));
  }
}

// -------------------------------------------------------------- failures ---

// Rank 1 connects and then waits (bounded) for rank 0's word instead of
// calling all_reduce; rank 0's all_reduce must time out after ~2 s.
std::string lonely_all_reduce(int rank, int n, oar::Store& store) {
  Communicator comm(kCpu, n, rank, store, "test/gloo-lonely", 2000);
  if (rank == 1) {
    store.wait("test/rank0-done", 20000);
    return "";
  }
  Tensor x = oar::ones({4}, DType::f32, kCpu);
  auto start = Clock::now();
  std::string message;
  oar::ErrorCode code = oar::ErrorCode::internal;
  try {
    comm.all_reduce(x);
  } catch (const oar::Error& e) {
    message = e.what();
    code = e.code();
  }
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  store.set("test/rank0-done", {1});
  if (message.empty()) return "all_reduce without its peer succeeded";
  if (code != oar::ErrorCode::timeout) return "expected a timeout error, got: " + message;
  if (message.find("all_reduce") == std::string::npos ||
      message.find("rank 0 of 2") == std::string::npos)
    return "the message does not name all_reduce and the rank: " + message;
  if (seconds < 1.5 || seconds > 6)
    return "timed out after " + std::to_string(seconds) + " s, not ~2 s: " + message;
  return "";
}

TEST_CASE(
    "gloo: a collective whose peer never calls it times out within ~2 s, naming the collective") {
  check_all_passed(run_ranks(2, lonely_all_reduce, std::chrono::seconds(30)));
}

std::string lonely_init(int rank, int n, oar::Store& store) {
  auto start = Clock::now();
  try {
    Communicator comm(kCpu, n, rank, store, "test/gloo-noshow", 2000);
  } catch (const oar::Error& e) {
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    std::string m = e.what();
    if (e.code() != oar::ErrorCode::timeout) return "expected a timeout error, got: " + m;
    if (m.find("comm_init") == std::string::npos)
      return "the message does not name comm_init: " + m;
    if (seconds > 6) return "took " + std::to_string(seconds) + " s";
    return "";
  }
  return "a communicator of 2 ranks was created without rank 1";
}

TEST_CASE("gloo: comm_init without the other rank times out, naming comm_init") {
  std::vector<RankResult> r = run_ranks(2, lonely_init, std::chrono::seconds(30), {1});
  INFO(r[0].message);
  CHECK(r[0].finished);
  CHECK(r[0].message.empty());
}

// Note [Gloo tags carry the call's signature]: ranks that disagree on a
// call (here the count) use different slots, so both time out with a
// sentence instead of Gloo aborting the process on mismatched messages.
std::string disagreeing_counts(int rank, int n, oar::Store& store) {
  Communicator comm(kCpu, n, rank, store, "test/gloo-desync", 2000);
  Tensor x = oar::ones({rank == 0 ? 4 : 8}, DType::f32, kCpu);
  std::string result = "all_reduce of 4 and 8 elements succeeded";
  bool timed_out = false;
  try {
    comm.all_reduce(x);
  } catch (const oar::Error& e) {
    // The rank whose wait expires first gets the timeout; Gloo then closes
    // its connections, so the other rank may instead see its peer's
    // connection break. Either way: an error naming the call, no abort.
    std::string what = e.what();
    timed_out = e.code() == oar::ErrorCode::timeout;
    bool broke = e.code() == oar::ErrorCode::device &&
                 what.find("connection broke") != std::string::npos;
    if (!timed_out && !broke)
      result = "expected a timeout or a broken connection, got: " + what;
    else if (what.find("all_reduce") == std::string::npos)
      result = "the message does not name all_reduce: " + what;
    else if (what.find("died") != std::string::npos)
      result = "the message says a live peer died: " + what;
    else
      result = "";
  }
  // Keep this rank (and its heartbeat) alive until the other has seen its
  // error, so that the other is never told this one died.
  store.set("test/gloo-desync/seen" + std::to_string(rank), {timed_out ? uint8_t(1) : uint8_t(0)});
  store.wait("test/gloo-desync/seen" + std::to_string(1 - rank), 20000);
  if (result.empty() && !timed_out && store.get("test/gloo-desync/seen" + std::to_string(1 - rank), 20000) != std::vector<uint8_t>{1})
    result = "neither rank reported a timeout";
  return result;
}

TEST_CASE("gloo: ranks that disagree on a call's count time out, not abort") {
  check_all_passed(run_ranks(2, disagreeing_counts, std::chrono::seconds(30)));
}

// all_to_allv whose ranks disagree on a count: both ranks of the pair get
// an invalid-argument sentence naming both sides, and the comm still works.
std::string disagreeing_all_to_allv(int rank, int n, oar::Store& store) {
  RawComm r = raw_comm(rank, n, store, 10000);
  const OarDeviceApi& api = r.b->api;
  std::vector<float> data(4, float(rank));
  void* send = r.dev_copy(data.data(), 16);
  void* recv = r.dev_copy(data.data(), 16);
  // Rank 0 sends 2 elements to rank 1; rank 1 expects 3 from rank 0.
  std::vector<uint64_t> sc = {1, 2}, so = {0, 1}, rc = {1, 1}, ro = {0, 1};
  if (rank == 1) sc = {2, 1}, so = {0, 2}, rc = {3, 1}, ro = {0, 3};
  OarStatus st = api.all_to_allv(api.impl, send, sc.data(), so.data(), recv, rc.data(), ro.data(),
                                 OAR_DTYPE_F32, r.comm, nullptr);
  std::string m = oar::host_take_error();
  if (st != OAR_ERROR_INVALID_ARGUMENT)
    return "all_to_allv returned " + std::to_string(st) + ": " + m;
  std::string peer = rank == 0 ? "rank 1 sends 2 elements to this rank and expects 3"
                               : "rank 0 sends 2 elements to this rank and expects 1";
  if (m.find("all_to_allv") == std::string::npos || m.find(peer) == std::string::npos)
    return "the message does not name all_to_allv and the peer's counts: " + m;
  r.check(api.barrier(api.impl, r.comm, nullptr), "barrier after the mismatch");
  return "";
}

TEST_CASE("gloo: all_to_allv with counts the ranks disagree on fails on both, naming the counts") {
  check_all_passed(run_ranks(2, disagreeing_all_to_allv, std::chrono::seconds(30)));
}

// Rank 0 sends to rank 1, which never receives: comm_destroy waits for the
// pending send and reports it, naming send and rank 1, ~2 s after the send.
std::string unreceived_send(int rank, int n, oar::Store& store) {
  RawComm r = raw_comm(rank, n, store, 2000);
  const OarDeviceApi& api = r.b->api;
  if (rank == 1) {
    store.wait("test/unreceived-done", 20000);
    return "";
  }
  float v = 1;
  void* buf = r.dev_copy(&v, 4);
  auto start = Clock::now();
  OarStatus posted = api.send(api.impl, buf, 1, OAR_DTYPE_F32, 1, r.comm, nullptr);
  OarStatus destroyed = api.comm_destroy(api.impl, r.comm);
  std::string m = oar::host_take_error();
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  store.set("test/unreceived-done", {1});
  if (posted != OAR_OK) return "send did not post: " + m;
  if (destroyed != OAR_ERROR_TIMEOUT)
    return "comm_destroy returned " + std::to_string(destroyed) + ": " + m;
  if (m.find("send #0 to rank 1") == std::string::npos)
    return "the message does not name the send: " + m;
  if (seconds < 1.5 || seconds > 6)
    return "reported after " + std::to_string(seconds) + " s, not ~2 s";
  return "";
}

TEST_CASE("gloo: a send nobody receives fails the comm within its timeout, naming the send") {
  check_all_passed(run_ranks(2, unreceived_send, std::chrono::seconds(30)));
}

// Rank 1 does one all_reduce and dies (_exit); rank 0's next all_reduce must
// fail (timeout or device error) within its 5 s timeout, not hang.
std::string peer_dies(int rank, int n, oar::Store& store) {
  Communicator comm(kCpu, n, rank, store, "test/gloo-dies", 5000);
  // Large enough that rank 0 writes to the dead peer's socket (a write
  // there must be an error, not a SIGPIPE that kills rank 0).
  Tensor x = oar::ones({1 << 22}, DType::f32, kCpu);
  comm.all_reduce(x);
  if (rank == 1) ::_exit(0);
  auto start = Clock::now();
  try {
    for (int i = 0; i < 3; ++i) comm.all_reduce(x);
  } catch (const oar::Error& e) {
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    std::string m = e.what();
    if (e.code() != oar::ErrorCode::timeout && e.code() != oar::ErrorCode::device)
      return "expected a timeout or device error, got: " + m;
    if (m.find("all_reduce") == std::string::npos)
      return "the message does not name all_reduce: " + m;
    if (seconds > 8) return "failed only after " + std::to_string(seconds) + " s";
    // The comm stays failed: the next call fails at once, naming the first failure.
    try {
      comm.barrier();
    } catch (const oar::Error& again) {
      if (std::string(again.what()).find("earlier failure") == std::string::npos)
        return std::string("the call after the failure says: ") + again.what();
      return "";
    }
    return "a barrier after the failure succeeded";
  }
  return "all_reduce with a dead peer succeeded";
}

TEST_CASE("gloo: a peer that dies makes the other rank's collective fail, not hang") {
  std::vector<RankResult> r = run_ranks(2, peer_dies, std::chrono::seconds(30));
  INFO(r[0].message);
  CHECK(r[0].finished);
  CHECK(r[0].message.empty());
}

}  // namespace
