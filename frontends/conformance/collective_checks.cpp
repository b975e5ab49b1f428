// Collectives across 2 ranks: the runner starts itself twice as a worker
// (--collective-worker RANK --store DIR); the workers meet through a file
// store, run each collective on the plugin's device and check the result
// against values computed on the host (rank r holds f(r, i), small integers
// so sums are exact). Each worker writes its results as JSON; a check passes
// when both ranks pass.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "conformance.h"
#include "oar/distributed.h"
#include "runtime/runtime_state.h"

namespace oar_conformance {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
constexpr int kRanks = 2;
const char* const kCollectives[] = {"all_reduce", "all_gather", "reduce_scatter",
                                    "broadcast",  "send_recv",  "barrier"};

float value(int rank, int64_t i) { return static_cast<float>((i * 7 + rank * 3) % 11 - 5); }

std::vector<float> rank_data(int rank, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = value(rank, i);
  return v;
}

std::string expect(const std::vector<float>& got, const std::vector<float>& want,
                   const std::string& what) {
  if (got.size() != want.size())
    return what + ": " + std::to_string(got.size()) + " elements but " +
           std::to_string(want.size()) + " expected";
  for (size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i])
      return what + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) + " but " +
             std::to_string(want[i]) + " was expected";
  return {};
}

}  // namespace

int collective_worker(const Options& o) {
  json results = json::object();
  const int rank = o.collective_rank;
  try {
    oar::Runtime& rt = oar::Runtime::global();
    std::string type = o.device_type;
    int count = rt.device_count(type);
    if (count == 0)
      throw std::runtime_error("device type '" + type + "' has no devices in the worker");
    oar::Device dev{type, rank % count};
    oar::FileStore store(o.store_dir + "/store");
    oar::distributed::Communicator comm(dev, kRanks, rank, store, "conformance/comm", 30000);
    const int64_t n = 1001;  // odd on purpose
    auto run = [&](const char* name, auto body) {
      try {
        std::string problem = body();
        results[name] = {{"ok", problem.empty()}, {"detail", problem}};
      } catch (const std::exception& e) {
        results[name] = {{"ok", false}, {"detail", e.what()}};
      }
    };
    run("all_reduce", [&] {
      oar::Tensor t = oar::Tensor::from_vector(rank_data(rank, n), {n}, dev);
      comm.all_reduce(t, oar::distributed::ReduceOp::sum);
      std::vector<float> want(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) want[static_cast<size_t>(i)] = value(0, i) + value(1, i);
      std::string p = expect(t.to_vector<float>(), want, "all_reduce sum");
      oar::Tensor m = oar::Tensor::from_vector(rank_data(rank, n), {n}, dev);
      comm.all_reduce(m, oar::distributed::ReduceOp::max);
      for (int64_t i = 0; i < n; ++i)
        want[static_cast<size_t>(i)] = std::max(value(0, i), value(1, i));
      return p.empty() ? expect(m.to_vector<float>(), want, "all_reduce max") : p;
    });
    run("all_gather", [&] {
      oar::Tensor g = comm.all_gather(oar::Tensor::from_vector(rank_data(rank, n), {n}, dev));
      std::vector<float> want = rank_data(0, n), r1 = rank_data(1, n);
      want.insert(want.end(), r1.begin(), r1.end());
      return expect(g.to_vector<float>(), want, "all_gather");
    });
    run("reduce_scatter", [&] {
      oar::Tensor s =
          comm.reduce_scatter(oar::Tensor::from_vector(rank_data(rank, 2 * n), {2 * n}, dev));
      std::vector<float> want(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i)
        want[static_cast<size_t>(i)] = value(0, rank * n + i) + value(1, rank * n + i);
      return expect(s.to_vector<float>(), want, "reduce_scatter sum");
    });
    run("broadcast", [&] {
      oar::Tensor t = oar::Tensor::from_vector(rank_data(rank, n), {n}, dev);
      comm.broadcast(t, 1);
      return expect(t.to_vector<float>(), rank_data(1, n), "broadcast from rank 1");
    });
    run("send_recv", [&] {
      if (rank == 0) {
        comm.send(oar::Tensor::from_vector(rank_data(0, n), {n}, dev), 1);
        oar::Tensor t =
            oar::Tensor::from_vector(std::vector<float>(static_cast<size_t>(n), 0.f), {n}, dev);
        comm.recv(t, 1);
        return expect(t.to_vector<float>(), rank_data(1, n), "recv from rank 1");
      }
      oar::Tensor t =
          oar::Tensor::from_vector(std::vector<float>(static_cast<size_t>(n), 0.f), {n}, dev);
      comm.recv(t, 0);
      comm.send(oar::Tensor::from_vector(rank_data(1, n), {n}, dev), 0);
      return expect(t.to_vector<float>(), rank_data(0, n), "recv from rank 0");
    });
    run("barrier", [&] {
      comm.barrier();
      return std::string();
    });
  } catch (const std::exception& e) {
    results["setup"] = {{"ok", false}, {"detail", e.what()}};
  }
  std::ofstream(o.store_dir + "/rank" + std::to_string(rank) + ".json") << results.dump();
  std::fflush(nullptr);
  _exit(0);  // skip static destruction: the plugin's comms are aborted by the OS
}

void run_collective_checks(Suite& suite, const Devices& devices, const std::string& self_exe) {
  bool any = false;
  for (const char* c : kCollectives) any = any || suite.selected(std::string("collective.") + c);
  if (!any) return;
  const OarDeviceApi& api = devices.backend->api;
  if (!api.comm_init) {
    if (suite.selected("collective"))
      suite.add({.name = "collective",
                 .result = Result::skip,
                 .detail = "the plugin has no collectives (comm_init is null)"});
    return;
  }
  if (suite.tier() == Tier::smoke) {
    suite.add({.name = "collective", .result = Result::skip, .detail = "not in the smoke tier"});
    return;
  }
  suite.set_current("collective.all_reduce");
  char dir_template[] = "/tmp/oar-conformance-XXXXXX";
  std::string dir = mkdtemp(dir_template) ? dir_template : "";
  if (dir.empty())
    throw std::runtime_error("cannot create a temporary directory for the collective store");

  std::vector<pid_t> pids;
  for (int rank = 0; rank < kRanks; ++rank) {
    std::vector<std::string> args = {self_exe,
                                     "--plugin",
                                     suite.options().plugin,
                                     "--device-type",
                                     devices.dut.type,
                                     "--collective-worker",
                                     std::to_string(rank),
                                     "--store",
                                     dir};
    std::fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(self_exe.c_str(), argv.data());
      _exit(127);
    }
    pids.push_back(pid);
  }
  // Wait up to 120 s for both, then kill the stragglers.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  std::vector<int> statuses(kRanks, -1);
  for (int left = kRanks; left > 0;) {
    for (int r = 0; r < kRanks; ++r) {
      if (statuses[static_cast<size_t>(r)] != -1) continue;
      int st = 0;
      if (waitpid(pids[static_cast<size_t>(r)], &st, WNOHANG) > 0)
        statuses[static_cast<size_t>(r)] = st, --left;
    }
    if (left && std::chrono::steady_clock::now() > deadline) {
      for (int r = 0; r < kRanks; ++r)
        if (statuses[static_cast<size_t>(r)] == -1) kill(pids[static_cast<size_t>(r)], SIGKILL);
      for (int r = 0; r < kRanks; ++r)
        if (statuses[static_cast<size_t>(r)] == -1)
          waitpid(pids[static_cast<size_t>(r)], &statuses[static_cast<size_t>(r)], 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::vector<json> per_rank;
  for (int r = 0; r < kRanks; ++r) {
    std::ifstream in(dir + "/rank" + std::to_string(r) + ".json");
    json j = json::parse(in, nullptr, false);
    if (j.is_discarded()) {
      int st = statuses[static_cast<size_t>(r)];
      std::string why =
          WIFSIGNALED(st)
              ? "was killed by signal " + std::to_string(WTERMSIG(st)) + " (timeout or crash)"
              : "exited with status " + std::to_string(WEXITSTATUS(st)) + " without results";
      j = {{"setup", {{"ok", false}, {"detail", "rank " + std::to_string(r) + " " + why}}}};
    }
    per_rank.push_back(j);
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  for (const char* c : kCollectives) {
    std::string name = std::string("collective.") + c;
    if (!suite.selected(name)) continue;
    CheckResult res{.name = name};
    for (int r = 0; r < kRanks && res.result == Result::pass; ++r) {
      const json& j = per_rank[static_cast<size_t>(r)];
      const json* entry = j.contains(c) ? &j[c] : j.contains("setup") ? &j["setup"] : nullptr;
      if (!entry || !(*entry)["ok"].get<bool>()) {
        res.result = Result::fail;
        res.detail = "rank " + std::to_string(r) + ": " +
                     (entry ? (*entry)["detail"].get<std::string>() : "no result");
      }
    }
    if (res.result == Result::pass)
      res.detail = "2 ranks (processes) agree with the host's expected values";
    suite.add(res);
  }
  suite.set_current("");
}

}  // namespace oar_conformance
