// The host communicator across processes: avg, reduce, scatter,
// all_to_all(_v) with their fallbacks, async ordering, failures that name
// the rank, the check mode, destroy with pending work. Ranks are this
// binary re-executed (fork + exec) with OAR_TEST_SCENARIO set; they meet in
// a FileStore. Every scenario runs on the mock's stream path and on the
// worker-thread path (OAR_COMM_WORKER=1), and on cpu when the cpu plugin
// has collectives.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "oar/distributed.h"
#include "test_util.h"

using oar::Device;
using oar::DType;
using oar::Tensor;
using oar::distributed::CommOptions;
using oar::distributed::Communicator;
using oar::distributed::ReduceOp;
using oar::distributed::WorkPtr;

namespace doctest {
template <typename T>
struct StringMaker<std::vector<T>> {
  static String convert(const std::vector<T>& v) {
    std::ostringstream out;
    out << "{";
    for (size_t i = 0; i < v.size(); ++i) out << (i ? ", " : "") << v[i];
    out << "}";
    return out.str().c_str();
  }
};
}  // namespace doctest

namespace {

int env_int(const char* name) { return std::atoi(std::getenv(name)); }

Device test_device() { return oar::parse_device(std::getenv("OAR_TEST_DEVICE")); }

template <typename T>
Tensor tensor(std::vector<T> v) {
  int64_t n = static_cast<int64_t>(v.size());
  return Tensor::from_vector<T>(std::move(v), {n}, test_device());
}

template <typename T>
std::vector<T> host(const Tensor& t) {
  return t.to_vector<T>();
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// --- rank bodies ---

void scenario_values(Communicator& comm) {
  int r = comm.rank(), n = comm.nranks();
  // avg: floats divide, integers truncate toward zero.
  Tensor f = tensor<float>({float(r + 1), float(2 * (r + 1))});
  comm.all_reduce(f, ReduceOp::avg);
  CHECK(host<float>(f) == std::vector<float>{(n + 1) / 2.0f, float(n + 1)});
  Tensor i = tensor<int32_t>({r + 1, -(r + 1)});
  comm.all_reduce(i, ReduceOp::avg);
  int32_t s = n * (n + 1) / 2;
  CHECK(host<int32_t>(i) == std::vector<int32_t>{s / n, -s / n});
  if (n == 2) CHECK(host<int32_t>(i) == std::vector<int32_t>{1, -1});  // 1.5 -> 1, -1.5 -> -1

  // reduce to root 1, the plugin's entry (or its fallback) and the fallback.
  for (int fallback = 0; fallback < 2; ++fallback) {
    Tensor t = tensor<float>({float(r + 1), 10.0f * (r + 1)});
    WorkPtr w = fallback ? comm.reduce_via_all_reduce_async(t, 1, ReduceOp::sum) : comm.reduce_async(t, 1);
    w->wait();
    if (r == 1)
      CHECK(host<float>(t) == std::vector<float>{float(s), 10.0f * s});
    else
      CHECK(host<float>(t) == std::vector<float>{float(r + 1), 10.0f * (r + 1)});
  }

  // scatter from root 0: rank k gets {2k, 2k + 1}.
  for (int fallback = 0; fallback < 2; ++fallback) {
    std::vector<float> all;
    for (int k = 0; k < 2 * n; ++k) all.push_back(float(k));
    Tensor in = r == 0 ? tensor<float>(all) : Tensor();
    Tensor out = oar::zeros({2}, DType::f32, test_device());
    WorkPtr w = fallback ? comm.scatter_via_broadcast_async(out, in, 0) : comm.scatter_async(out, in, 0);
    w->wait();
    CHECK(host<float>(out) == std::vector<float>{float(2 * r), float(2 * r + 1)});
  }

  // all_to_all: block p of rank r's input is 10r + p.
  std::vector<int64_t> blocks;
  for (int p = 0; p < n; ++p) blocks.push_back(10 * r + p);
  Tensor out = oar::zeros({n}, DType::i64, test_device());
  comm.all_to_all(out, tensor<int64_t>(blocks));
  for (int p = 0; p < n; ++p) CHECK(host<int64_t>(out)[p] == 10 * p + r);

  // all_to_all_v: rank r sends (r + p) % 3 elements to rank p (zeros
  // included), element k of them valued 100r + 10p + k.
  for (int fallback = 0; fallback < 2; ++fallback) {
    std::vector<int64_t> in_counts, out_counts;
    std::vector<int32_t> in_values, expected;
    for (int p = 0; p < n; ++p) {
      int c = (r + p) % 3;
      in_counts.push_back(c);
      out_counts.push_back(c);  // rank p sends (p + r) % 3 to us
      for (int k = 0; k < c; ++k) {
        in_values.push_back(100 * r + 10 * p + k);
        expected.push_back(100 * p + 10 * r + k);
      }
    }
    Tensor vin = tensor<int32_t>(in_values);
    Tensor vout = oar::zeros({int64_t(expected.size())}, DType::i32, test_device());
    WorkPtr w = fallback ? comm.all_to_all_v_via_send_recv_async(vout, vin, out_counts, in_counts)
                         : comm.all_to_all_v_async(vout, vin, out_counts, in_counts);
    w->wait();
    CHECK(host<int32_t>(vout) == expected);
  }

  // all_gather and reduce_scatter into given outputs; avg on reduce_scatter.
  Tensor gathered = oar::zeros({2 * n}, DType::f32, test_device());
  comm.all_gather_async(gathered, tensor<float>({float(r), float(-r)}))->wait();
  for (int p = 0; p < n; ++p) CHECK(host<float>(gathered)[2 * p] == float(p));
  std::vector<float> rs;
  for (int k = 0; k < n; ++k) rs.push_back(float(k * (r + 1)));
  Tensor block = oar::zeros({1}, DType::f32, test_device());
  comm.reduce_scatter_async(block, tensor<float>(rs), ReduceOp::avg)->wait();
  CHECK(host<float>(block)[0] == doctest::Approx(double(r) * s / n));

  // Async: several in flight, waited in reverse order.
  std::vector<Tensor> ts;
  std::vector<WorkPtr> ws;
  for (int k = 1; k <= 4; ++k) {
    ts.push_back(tensor<float>({float(k * (r + 1))}));
    ws.push_back(comm.all_reduce_async(ts.back()));
  }
  for (int k = 4; k >= 1; --k) {
    CHECK(ws[k - 1]->wait());
    CHECK(ws[k - 1]->is_completed());
    CHECK(host<float>(ts[k - 1])[0] == float(k * s));
  }
  // Issue order on one tensor: sum, then prod (reversed would differ).
  Tensor x = tensor<float>({float(r + 1)});
  WorkPtr sum = comm.all_reduce_async(x, ReduceOp::sum);
  WorkPtr prod = comm.all_reduce_async(x, ReduceOp::prod);
  prod->wait();
  sum->wait();
  float expect = 1;
  for (int k = 0; k < n; ++k) expect *= float(s);
  CHECK(host<float>(x)[0] == expect);

  // The argument checks are sentences.
  CHECK(oar_test::error_of([&] { comm.broadcast(x, n); }) ==
        "broadcast on group 'world': root " + std::to_string(n) + " is outside [0, " + std::to_string(n) +
            ") (ranks are group-local)");
  CHECK(oar_test::error_of([&] { comm.all_to_all_v(out, out, {1}, {1}); })
            .find("in_counts has 1 entries but the group has") != std::string::npos);
  comm.barrier();
}

void scenario_subgroup(Communicator&, oar::Store& store) {
  int r = env_int("OAR_TEST_RANK"), n = env_int("OAR_TEST_NRANKS");
  CommOptions opts;
  opts.name = "group 1";
  for (int k = 0; k < n; ++k) opts.global_ranks.push_back(10 + k);
  Communicator group(test_device(), n, r, store, "test/group1", 5000, opts);
  Tensor t = tensor<float>({1.0f});
  WorkPtr w = group.all_reduce_async(t);
  CHECK(w->description() == "all_reduce #1 on group 'group 1' (rank " + std::to_string(10 + r) + " of " +
                                std::to_string(n) + ", f32 x 1)");
  w->wait();
  CHECK(host<float>(t)[0] == float(n));
  CHECK(group.global_ranks() == opts.global_ranks);
}

// Rank 1 exits before the collective; rank 0's error names it as dead.
void scenario_dead(Communicator& comm, oar::Store& store) {
  if (comm.rank() == 1) {
    store.wait("oar/progress/test/world/1", 5000);  // its publisher has written once
    // and rank 0 has finished connecting (exiting while rank 0 is still in
    // comm_init would fail its constructor, not the collective under test)
    store.wait("oar/progress/test/world/0", 5000);
    std::_Exit(0);
  }
  Tensor t = tensor<float>({1, 2, 3, 4});
  int64_t start = now_ms();
  oar::Error error(oar::ErrorCode::internal, "none");
  try {
    comm.all_reduce_async(t)->wait();
  } catch (const oar::Error& e) {
    error = e;
  }
  int64_t took = now_ms() - start;
  std::string message = error.what();
  INFO(message);
  // The mock times out; Gloo sees the connection close (a device error).
  CHECK((error.code() == oar::ErrorCode::timeout || error.code() == oar::ErrorCode::device));
  CHECK(message.find("all_reduce #1 on group 'world' (rank 0 of 2, f32 x 4) ") == 0);
  if (error.code() == oar::ErrorCode::timeout) CHECK(message.find("did not complete within 2 s: ") != std::string::npos);
  CHECK(message.find("rank 1 is unreachable or died (it has not started a collective on this group)") !=
        std::string::npos);
  CHECK(took < 8000);
  // Work after a failure fails fast with the first error.
  std::string later = oar_test::error_of([&] { comm.all_reduce_async(t)->wait(); });
  CHECK(later.find("all_reduce #2 on group 'world'") == 0);
  CHECK(later.find("because of an earlier failure on this communicator: all_reduce #1") != std::string::npos);
}

// Rank 1 dies inside all_reduce #1 after both ranks started it (Gloo: the
// connection closes). Rank 0 cannot say "did not arrive"; it names rank 1
// once its heartbeat stops.
void scenario_dies_inside(Communicator& comm, oar::Store& store) {
  auto started = [&](int rank) {
    for (int i = 0; i < 500; ++i) {
      auto text = store.get("oar/progress/test/world/" + std::to_string(rank), 5000);
      if (!text.empty() && text[0] == '1') return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    FAIL("rank " << rank << " never published #1");
  };
  Tensor t = oar::zeros({1 << 22}, DType::f32, test_device());
  if (comm.rank() == 1) {
    auto work = comm.all_reduce_async(t);
    started(1);
    started(0);
    std::_Exit(0);
  }
  started(1);
  std::string message = oar_test::error_of([&] { comm.all_reduce_async(t)->wait(); });
  INFO(message);
  CHECK(message.find("all_reduce #1 on group 'world' (rank 0 of 2, f32 x 4194304) ") == 0);
  CHECK(message.find("rank 1 died or became unreachable during it (its last collective was #1 all_reduce; its "
                     "heartbeat stopped)") != std::string::npos);
}

// Rank 1 stays alive but never calls the second collective.
void scenario_never(Communicator& comm, oar::Store& store) {
  Tensor g = oar::zeros({4}, DType::f32, test_device());
  comm.all_gather_async(g, tensor<float>({1, 2}))->wait();
  if (comm.rank() == 1) {
    store.wait("test/never/done", 20000);
    return;
  }
  Tensor t = tensor<float>({1, 2, 3, 4});
  std::string message = oar_test::error_of([&] { comm.all_reduce_async(t)->wait(); });
  store.set("test/never/done", {1});
  CHECK(message.find("all_reduce #2 on group 'world' (rank 0 of 2, f32 x 4) did not complete within 2 s: rank 1 "
                     "did not arrive (its last collective was #1 all_gather)") == 0);
}

// Check mode: both ranks raise the same sentence.
void scenario_mismatch(oar::Store& store) {
  int r = env_int("OAR_TEST_RANK");
  CommOptions opts;
  opts.check = 1;
  Communicator comm(test_device(), 2, r, store, "test/check", 5000, opts);
  Tensor ok = tensor<float>({1});
  comm.all_reduce_async(ok)->wait();  // #1 agrees
  Tensor t = oar::zeros({1024}, DType::f32, test_device());
  std::string message;
  if (r == 0) {
    message = oar_test::error_of([&] { comm.all_reduce_async(t)->wait(); });
  } else {
    Tensor out = oar::zeros({2048}, DType::f32, test_device());
    message = oar_test::error_of([&] { comm.all_gather_async(out, t)->wait(); });
  }
  CHECK(message ==
        "collective mismatch at #2 on group 'world': rank 0 called all_reduce(f32, 1024 elements) but rank 1 called "
        "all_gather(f32, 1024 elements)");
}

// Destroy with work pending: it waits for it; the values are right.
void scenario_destroy(Communicator& comm) {
  int r = comm.rank(), n = comm.nranks();
  std::vector<Tensor> ts;
  std::vector<WorkPtr> ws;
  for (int k = 0; k < 3; ++k) {
    ts.push_back(tensor<float>({float(r + k)}));
    ws.push_back(comm.all_reduce_async(ts.back()));
  }
  comm.destroy();
  comm.destroy();  // idempotent
  for (int k = 0; k < 3; ++k) {
    CHECK(ws[k]->is_completed());
    CHECK(host<float>(ts[k])[0] == float(n * (n - 1) / 2 + n * k));
  }
  CHECK(oar_test::error_of([&] { comm.all_reduce(ts[0]); }).find("the communicator was destroyed") !=
        std::string::npos);
}

// An async collective returns before its peer arrives (the caller computes
// meanwhile): rank 1 issues its all_reduce only after rank 0 has seen its
// own still pending and said so through the store.
void scenario_overlap(Communicator& comm, oar::Store& store) {
  int r = comm.rank();
  Tensor t = tensor<float>({float(r + 1)});
  if (r == 1) store.wait("test/overlap/issued", 10000);
  WorkPtr w = comm.all_reduce_async(t);
  if (r == 0) {
    CHECK_FALSE(w->is_completed());
    if (test_device().type == "cpu") {  // on the mock, compute queues behind the collective on its stream
      Tensor busy = oar::ones({64, 64}, DType::f32, test_device());
      CHECK(host<float>(oar::sum(oar::matmul(busy, busy)))[0] == 64.0f * 64 * 64);  // compute meanwhile
      CHECK_FALSE(w->is_completed());
    }
    store.set("test/overlap/issued", {1});
  }
  CHECK(w->wait());
  CHECK(host<float>(t)[0] == 3.0f);
}

// --- the parent side ---

std::string self_exe() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  REQUIRE(n > 0);
  buf[n] = 0;
  return buf;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `scenario` as `nranks` processes; every rank must exit 0 within 60 s.
void run_ranks(const std::string& scenario, int nranks, const std::string& device, bool worker = false) {
  static int counter = 0;
  std::string dir = std::filesystem::temp_directory_path() /
                    ("oar_comm_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::string exe = self_exe();
  std::vector<pid_t> pids;
  for (int r = 0; r < nranks; ++r) {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      std::string log = dir + "/rank" + std::to_string(r) + ".log";
      FILE* f = std::freopen(log.c_str(), "w", stdout);
      (void)f;
      ::dup2(::fileno(stdout), 2);
      ::setenv("OAR_TEST_SCENARIO", scenario.c_str(), 1);
      ::setenv("OAR_TEST_RANK", std::to_string(r).c_str(), 1);
      ::setenv("OAR_TEST_NRANKS", std::to_string(nranks).c_str(), 1);
      ::setenv("OAR_TEST_STORE", (dir + "/store").c_str(), 1);
      ::setenv("OAR_TEST_DEVICE", device.c_str(), 1);
      if (worker) ::setenv("OAR_COMM_WORKER", "1", 1);
      std::string filter = "--test-case=distributed host: rank body*";
      ::execl(exe.c_str(), exe.c_str(), filter.c_str(), "--no-version=true", static_cast<char*>(nullptr));
      std::_Exit(127);
    }
    pids.push_back(pid);
  }
  std::vector<int> status(nranks, -1);
  int64_t deadline = now_ms() + 60000;
  int left = nranks;
  while (left > 0 && now_ms() < deadline) {
    for (int r = 0; r < nranks; ++r) {
      if (status[r] != -1) continue;
      int st = 0;
      if (::waitpid(pids[r], &st, WNOHANG) == pids[r]) {
        status[r] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        --left;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (int r = 0; r < nranks; ++r) {
    if (status[r] != -1) continue;
    ::kill(pids[r], SIGKILL);
    ::waitpid(pids[r], nullptr, 0);
    status[r] = 999;  // hung
  }
  for (int r = 0; r < nranks; ++r) {
    INFO("scenario " << scenario << " on " << device << std::string(worker ? " (worker thread)" : "") << ", rank " << r
                     << " of " << nranks << " exited with " << status[r] << "; its log:\n"
                     << slurp(dir + "/rank" + std::to_string(r) + ".log"));
    CHECK(status[r] == 0);
  }
  std::filesystem::remove_all(dir);
}

bool cpu_has_collectives() {
  try {
    oar::InProcessStore store;
    Communicator one(Device{"cpu", 0}, 1, 0, store, "probe", 2000);
    return true;
  } catch (const oar::Error& e) {
    MESSAGE("skipping the cpu cases: " << std::string(e.what()));
    return false;
  }
}

}  // namespace

TEST_CASE("distributed host: rank body (runs only as a child process)") {
  const char* scenario_env = std::getenv("OAR_TEST_SCENARIO");
  if (!scenario_env) return;
  std::string scenario = scenario_env;
  int r = env_int("OAR_TEST_RANK"), n = env_int("OAR_TEST_NRANKS");
  oar::FileStore store(std::getenv("OAR_TEST_STORE"));
  if (scenario == "mismatch") return scenario_mismatch(store);
  bool failing = scenario == "dead" || scenario == "never" || scenario == "dies_inside";
  Communicator comm(test_device(), n, r, store, "test/world", failing ? 2000 : 10000);
  if (scenario == "values") scenario_values(comm);
  if (scenario == "subgroup") scenario_subgroup(comm, store);
  if (scenario == "dead") scenario_dead(comm, store);
  if (scenario == "never") scenario_never(comm, store);
  if (scenario == "dies_inside") scenario_dies_inside(comm, store);
  if (scenario == "destroy") scenario_destroy(comm);
  if (scenario == "overlap") scenario_overlap(comm, store);
}

TEST_CASE("distributed host: avg, reduce, scatter, all_to_all(_v) and async order with 2 and 3 ranks") {
  if (std::getenv("OAR_TEST_SCENARIO")) return;
  for (bool worker : {false, true}) {
    run_ranks("values", 2, "mock:0", worker);
    run_ranks("values", 3, "mock:0", worker);
  }
  if (cpu_has_collectives()) {
    run_ranks("values", 2, "cpu");
    run_ranks("values", 3, "cpu");
  }
}

TEST_CASE("distributed host: an async collective lets the caller compute until its peer arrives") {
  if (std::getenv("OAR_TEST_SCENARIO")) return;
  run_ranks("overlap", 2, "mock:0");
  run_ranks("overlap", 2, "mock:0", true);
  if (cpu_has_collectives()) run_ranks("overlap", 2, "cpu");
}

TEST_CASE("distributed host: a subgroup names itself and its global ranks") {
  if (std::getenv("OAR_TEST_SCENARIO")) return;
  run_ranks("subgroup", 2, "mock:0");
  run_ranks("subgroup", 3, "mock:0", true);
}

TEST_CASE("distributed host: a rank that died is named within the timeout") {
  if (std::getenv("OAR_TEST_SCENARIO")) return;
  run_ranks("dead", 2, "mock:0");
  run_ranks("dead", 2, "mock:0", true);
  if (cpu_has_collectives()) run_ranks("dead", 2, "cpu");
}

TEST_CASE("distributed host: a rank that dies inside a collective is named once its heartbeat stops") {
  if (std::getenv("OAR_TEST_SCENARIO")) return;
  if (cpu_has_collectives()) run_ranks("dies_inside", 2, "cpu");
}

TEST_CASE("distributed host: a rank that never arrives is named with its last collective") {
  if (std::getenv("OAR_TEST_SCENARIO")) return;
  run_ranks("never", 2, "mock:0");
  run_ranks("never", 2, "mock:0", true);
  if (cpu_has_collectives()) run_ranks("never", 2, "cpu");
}

TEST_CASE("distributed host: check mode raises the same mismatch sentence on both ranks") {
  if (std::getenv("OAR_TEST_SCENARIO")) return;
  run_ranks("mismatch", 2, "mock:0");
  run_ranks("mismatch", 2, "mock:0", true);
}

TEST_CASE("distributed host: destroy with pending work waits for it") {
  if (std::getenv("OAR_TEST_SCENARIO")) return;
  run_ranks("destroy", 2, "mock:0");
  run_ranks("destroy", 3, "mock:0", true);
}

TEST_CASE("distributed host: destroying a communicator whose peer never comes is bounded and does not crash") {
  if (std::getenv("OAR_TEST_SCENARIO")) return;
  oar::InProcessStore store;
  int64_t start = now_ms();
  {
    Communicator lonely(Device{"mock", 0}, 2, 0, store, "test/lonely", 500);
    WorkPtr w = lonely.all_reduce_async(oar::ones({4}, DType::f32, Device{"mock", 0}));
    lonely.destroy();
    std::string message = oar_test::error_of([&] { w->wait(); });
    CHECK(message.find("did not arrive") != std::string::npos);
  }
  CHECK(now_ms() - start < 5000);
}

namespace {
// A store whose server "dies": once broken, every call throws as a TCP
// client does when it cannot reconnect.
class BreakableStore final : public oar::Store {
 public:
  std::atomic<bool> broken{false};
  void set(const std::string& key, const std::vector<uint8_t>& value) override {
    fail_if_broken(key);
    inner_.set(key, value);
  }
  std::vector<uint8_t> get(const std::string& key, int64_t timeout_ms) override {
    fail_if_broken(key);
    return inner_.get(key, timeout_ms);
  }
  int64_t add(const std::string& key, int64_t delta) override {
    fail_if_broken(key);
    return inner_.add(key, delta);
  }
  void wait(const std::string& key, int64_t timeout_ms) override {
    fail_if_broken(key);
    inner_.wait(key, timeout_ms);
  }
  bool check(const std::string& key) override {
    fail_if_broken(key);
    return inner_.check(key);
  }

 private:
  void fail_if_broken(const std::string& key) {
    if (broken)
      throw oar::Error(oar::ErrorCode::device,
                       "store 10.0.0.1:6170: cannot reach the server for key '" + key + "' (connection refused)");
  }
  oar::InProcessStore inner_;
};
}  // namespace

TEST_CASE("distributed host: when the store is gone the error says its server has probably died") {
  if (std::getenv("OAR_TEST_SCENARIO")) return;
  BreakableStore store;
  Communicator lonely(Device{"mock", 0}, 2, 0, store, "test/gone", 1000);
  store.broken = true;
  std::string message =
      oar_test::error_of([&] { lonely.all_reduce_async(oar::ones({2}, DType::f32, Device{"mock", 0}))->wait(); });
  INFO(message);
  CHECK(message.find("all_reduce #1 on group 'world' (rank 0 of 2, f32 x 2) failed: the store cannot be reached "
                     "(store 10.0.0.1:6170: cannot reach the server for key 'oar/progress/test/gone/1' (connection "
                     "refused)): rank 0, which serves it, has probably died") == 0);
}

TEST_CASE("distributed host: a TCP store whose server is gone is named by its address") {
  if (std::getenv("OAR_TEST_SCENARIO")) return;
  auto server = std::make_unique<oar::TCPStore>("127.0.0.1", 0, true, "job", 2000);
  int port = server->port();
  oar::TCPStore client("127.0.0.1", port, false, "job", 300);
  Communicator lonely(Device{"mock", 0}, 2, 0, client, "test/tcp-gone", 1000);
  server.reset();  // the server (rank 0's, in a real job) dies
  std::string message =
      oar_test::error_of([&] { lonely.all_reduce_async(oar::ones({2}, DType::f32, Device{"mock", 0}))->wait(); });
  INFO(message);
  CHECK(message.find("all_reduce #1 on group 'world' (rank 0 of 2, f32 x 2) ") == 0);
  CHECK(message.find("the store at 127.0.0.1:" + std::to_string(port) +
                     " (served by rank 0) cannot be reached: rank 0 has probably died (TCP store at 127.0.0.1:" +
                     std::to_string(port)) != std::string::npos);
}

TEST_CASE("distributed host: timeout -1 reads OAR_COLLECTIVE_TIMEOUT (seconds), and refuses a bad value") {
  if (std::getenv("OAR_TEST_SCENARIO")) return;
  oar::InProcessStore store;
  ::setenv("OAR_COLLECTIVE_TIMEOUT", "1.5", 1);
  {
    Communicator one(Device{"mock", 0}, 1, 0, store, "test/env-timeout");
    CHECK(one.timeout_ms() == 1500);
    Tensor t = oar::ones({3}, DType::f32, Device{"mock", 0});
    one.all_reduce(t, ReduceOp::avg);  // one rank: its own values
    CHECK(t.to_vector<float>() == std::vector<float>{1, 1, 1});
  }
  ::setenv("OAR_COLLECTIVE_TIMEOUT", "soon", 1);
  CHECK(oar_test::error_of([&] { Communicator bad(Device{"mock", 0}, 1, 0, store, "test/env-bad"); }) ==
        "OAR_COLLECTIVE_TIMEOUT is 'soon'; expected a positive number of seconds");
  ::unsetenv("OAR_COLLECTIVE_TIMEOUT");
  Communicator fallback(Device{"mock", 0}, 1, 0, store, "test/env-default");
  CHECK(fallback.timeout_ms() == 1800 * 1000);
}
