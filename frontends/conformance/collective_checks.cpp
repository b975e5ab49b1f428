// Collectives on 2 and then 3 ranks: the runner starts itself once per rank
// as a worker (--collective-worker RANK --store DIR; DIR/nranks holds the
// group size); the workers meet through a file store, create a communicator
// through the plugin's raw device table and run every collective entry for
// every dtype (f32 f64 f16 bf16 i8 u8 i32 i64 bool) and reduce op, checking
// each result against values computed on the host. Rank r holds
// f(r, i), small integers, so every reduction is exact in every dtype (u8
// products wrap, as they must). Each worker writes its results as JSON; a
// check passes when every rank of both groups passes.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "conformance.h"
#include "oar/plugin_util.h"
#include "runtime/runtime_state.h"

namespace oar_conformance {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
const int kGroupSizes[] = {2, 3};
const char* const kCollectives[] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                                    "reduce",     "scatter",    "all_to_all",     "all_to_allv",
                                    "send_recv",  "barrier"};
const int32_t kDtypes[] = {OAR_DTYPE_F32,  OAR_DTYPE_F64, OAR_DTYPE_F16,
                           OAR_DTYPE_BF16, OAR_DTYPE_I8,  OAR_DTYPE_U8,
                           OAR_DTYPE_I32,  OAR_DTYPE_I64, OAR_DTYPE_BOOL};
const char* const kOpNames[] = {"sum", "prod", "max", "min"};

const char* dtype_str(int32_t d) {
  static const char* const names[] = {"f32", "f64", "f16", "bf16", "i8", "u8",
                                      "i32", "i64", "bool", "c64", "c128"};
  return d >= 0 && d < OAR_DTYPE_COUNT ? names[d] : "?";
}

// The value rank `rank` holds at element i, as the dtype sees it.
double value(int32_t dtype, int rank, int64_t i) {
  int64_t v = (i * 7 + rank * 3) % 11;
  if (dtype == OAR_DTYPE_BOOL) return v % 3 == 0 ? 1 : 0;
  if (dtype == OAR_DTYPE_U8) return static_cast<double>(v);
  return static_cast<double>(v - 5);
}

// Host values <-> the bytes of a dtype. Integers wrap like the device's.
std::vector<char> encode(int32_t dtype, const std::vector<double>& v) {
  size_t es = oar_dtype_size(dtype);
  std::vector<char> out(v.size() * es);
  for (size_t i = 0; i < v.size(); ++i) {
    char* p = out.data() + i * es;
    auto put = [&](auto x) { std::memcpy(p, &x, sizeof x); };
    auto as_int = static_cast<int64_t>(v[i]);
    switch (dtype) {
      case OAR_DTYPE_F32:
        put(static_cast<float>(v[i]));
        break;
      case OAR_DTYPE_F64:
        put(v[i]);
        break;
      case OAR_DTYPE_F16:
        put(oar_f32_to_f16(static_cast<float>(v[i])));
        break;
      case OAR_DTYPE_BF16:
        put(oar_f32_to_bf16(static_cast<float>(v[i])));
        break;
      case OAR_DTYPE_I8:
        put(static_cast<int8_t>(as_int));
        break;
      case OAR_DTYPE_U8:
        put(static_cast<uint8_t>(as_int));
        break;
      case OAR_DTYPE_I32:
        put(static_cast<int32_t>(as_int));
        break;
      case OAR_DTYPE_I64:
        put(as_int);
        break;
      default:
        put(static_cast<uint8_t>(v[i] != 0));
        break;
    }
  }
  return out;
}

std::vector<double> decode(int32_t dtype, const std::vector<char>& bytes) {
  size_t es = oar_dtype_size(dtype), n = bytes.size() / es;
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) {
    const char* p = bytes.data() + i * es;
    auto get = [&](auto x) {
      std::memcpy(&x, p, sizeof x);
      return x;
    };
    switch (dtype) {
      case OAR_DTYPE_F32:
        out[i] = get(float{});
        break;
      case OAR_DTYPE_F64:
        out[i] = get(double{});
        break;
      case OAR_DTYPE_F16:
        out[i] = oar_f16_to_f32(get(uint16_t{}));
        break;
      case OAR_DTYPE_BF16:
        out[i] = oar_bf16_to_f32(get(uint16_t{}));
        break;
      case OAR_DTYPE_I8:
        out[i] = get(int8_t{});
        break;
      case OAR_DTYPE_U8:
        out[i] = get(uint8_t{});
        break;
      case OAR_DTYPE_I32:
        out[i] = get(int32_t{});
        break;
      case OAR_DTYPE_I64:
        out[i] = static_cast<double>(get(int64_t{}));
        break;
      default:
        out[i] = get(uint8_t{});
        break;
    }
  }
  return out;
}

std::vector<double> rank_data(int32_t dtype, int rank, int64_t n, int64_t first = 0) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = value(dtype, rank, first + i);
  return v;
}

// op over ranks 0..nranks-1 of element i, then rounded through the dtype.
std::vector<double> reduced(int32_t dtype, int op, int nranks, int64_t n, int64_t first = 0) {
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double acc = value(dtype, 0, first + i);
    for (int r = 1; r < nranks; ++r) {
      double v = value(dtype, r, first + i);
      acc = op == OAR_REDUCE_SUM    ? acc + v
            : op == OAR_REDUCE_PROD ? acc * v
            : op == OAR_REDUCE_MAX  ? std::max(acc, v)
                                    : std::min(acc, v);
    }
    out[static_cast<size_t>(i)] = acc;
  }
  return decode(dtype, encode(dtype, out));  // u8 products wrap; bool sum is or
}

// The communicator and device memory of one worker, through the raw table.
struct Raw {
  const OarDeviceApi& api;
  int32_t device = 0;
  OarComm_t comm = nullptr;

  void check(OarStatus st, const std::string& what) const {
    if (st != OAR_OK) {
      std::string message = take_plugin_error();
      throw std::runtime_error(what + " returned " + status_str(st) +
                               (message.empty() ? "" : ": " + message));
    }
  }
  /// Device buffer holding `host`'s bytes (at least 1 byte).
  void* upload(const std::vector<char>& host) const {
    void* p = nullptr;
    check(api.malloc(api.impl, device, std::max<size_t>(host.size(), 1), 64, &p), "malloc");
    if (!host.empty())
      check(api.memcpy_h2d(api.impl, device, p, host.data(), host.size()), "memcpy_h2d");
    return p;
  }
  std::vector<char> download(const void* p, size_t bytes) const {
    std::vector<char> host(bytes);
    if (bytes) check(api.memcpy_d2h(api.impl, device, host.data(), p, bytes), "memcpy_d2h");
    return host;
  }
  void free(void* p) const { api.free(api.impl, device, p); }
  /// Waits for the default stream and reports an error the collective left there.
  void finish(OarStatus st, const std::string& what) const {
    check(st, what);
    check(api.stream_synchronize(api.impl, device, nullptr), what + " (stream_synchronize)");
  }
};

/// "" when `got` (bytes of dtype) equals `want`, else the first difference.
std::string compare(int32_t dtype, const std::vector<char>& got, const std::vector<double>& want,
                    const std::string& what) {
  std::vector<double> g = decode(dtype, got);
  if (g.size() != want.size())
    return what + ": " + std::to_string(g.size()) + " elements but " + std::to_string(want.size()) +
           " expected";
  for (size_t i = 0; i < want.size(); ++i)
    if (g[i] != want[i])
      return what + ": element " + std::to_string(i) + " is " + std::to_string(g[i]) + " but " +
             std::to_string(want[i]) + " was expected";
  return {};
}

std::vector<double> concat(const std::vector<std::vector<double>>& parts) {
  std::vector<double> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// One collective for one dtype; returns "" or the first problem.
using CaseFn = std::function<std::string(const Raw&, int32_t dtype, int rank, int nranks)>;

constexpr int64_t kCount = 37;  // odd on purpose: blocks never align with Gloo's segments

std::string case_all_reduce(const Raw& raw, int32_t dt, int rank, int nranks) {
  const size_t bytes = kCount * oar_dtype_size(dt);
  std::string first;
  for (int op = 0; op < 4; ++op) {
    std::string what = std::string("all_reduce ") + kOpNames[op] + " " + dtype_str(dt);
    void* send = raw.upload(encode(dt, rank_data(dt, rank, kCount)));
    void* recv =
        op == OAR_REDUCE_SUM ? send : raw.upload(std::vector<char>(bytes));  // sum in place
    raw.finish(raw.api.all_reduce(raw.api.impl, send, recv, kCount, dt, op, raw.comm, nullptr),
               what);
    std::string p = compare(dt, raw.download(recv, bytes), reduced(dt, op, nranks, kCount),
                            what + (send == recv ? " (in place)" : ""));
    if (recv != send) raw.free(recv);
    raw.free(send);
    if (first.empty()) first = p;  // every op runs, so the ranks stay in step
  }
  return first;
}

std::string case_reduce_scatter(const Raw& raw, int32_t dt, int rank, int nranks) {
  const size_t bytes = kCount * oar_dtype_size(dt);
  std::string first;
  for (int op = 0; op < 4; ++op) {
    std::string what = std::string("reduce_scatter ") + kOpNames[op] + " " + dtype_str(dt);
    void* send = raw.upload(encode(dt, rank_data(dt, rank, kCount * nranks)));
    void* recv = raw.upload(std::vector<char>(bytes));
    raw.finish(raw.api.reduce_scatter(raw.api.impl, send, recv, kCount, dt, op, raw.comm, nullptr),
               what);
    std::string p = compare(dt, raw.download(recv, bytes),
                            reduced(dt, op, nranks, kCount, rank * kCount), what);
    raw.free(recv);
    raw.free(send);
    if (first.empty()) first = p;  // every op runs, so the ranks stay in step
  }
  return first;
}

std::string case_reduce(const Raw& raw, int32_t dt, int rank, int nranks) {
  const size_t bytes = kCount * oar_dtype_size(dt);
  const int root = 1;
  std::string first;
  for (int op = 0; op < 4; ++op) {
    std::string what = std::string("reduce ") + kOpNames[op] + " " + dtype_str(dt) + " to root 1";
    std::vector<double> sentinel(kCount, 1);
    void* send = raw.upload(encode(dt, rank_data(dt, rank, kCount)));
    void* recv = raw.upload(encode(dt, sentinel));
    raw.finish(raw.api.reduce(raw.api.impl, send, recv, kCount, dt, op, root, raw.comm, nullptr),
               what);
    std::string p =
        rank == root ? compare(dt, raw.download(recv, bytes), reduced(dt, op, nranks, kCount), what)
                     : compare(dt, raw.download(recv, bytes), sentinel,
                               what + ": a non-root's recv must stay untouched");
    raw.free(recv);
    raw.free(send);
    if (first.empty()) first = p;  // every op runs, so the ranks stay in step
  }
  return first;
}

std::string case_all_gather(const Raw& raw, int32_t dt, int rank, int nranks) {
  const size_t bytes = kCount * oar_dtype_size(dt);
  void* send = raw.upload(encode(dt, rank_data(dt, rank, kCount)));
  void* recv = raw.upload(std::vector<char>(bytes * nranks));
  std::string what = std::string("all_gather ") + dtype_str(dt);
  raw.finish(raw.api.all_gather(raw.api.impl, send, recv, kCount, dt, raw.comm, nullptr), what);
  std::vector<std::vector<double>> parts;
  for (int r = 0; r < nranks; ++r) parts.push_back(rank_data(dt, r, kCount));
  std::string p = compare(dt, raw.download(recv, bytes * nranks), concat(parts), what);
  raw.free(recv);
  raw.free(send);
  return p;
}

std::string case_broadcast(const Raw& raw, int32_t dt, int rank, int nranks) {
  const size_t bytes = kCount * oar_dtype_size(dt);
  const int root = nranks - 1;
  void* buf = raw.upload(encode(dt, rank_data(dt, rank, kCount)));
  std::string what =
      std::string("broadcast ") + dtype_str(dt) + " from rank " + std::to_string(root);
  raw.finish(raw.api.broadcast(raw.api.impl, buf, kCount, dt, root, raw.comm, nullptr), what);
  std::string p = compare(dt, raw.download(buf, bytes), rank_data(dt, root, kCount), what);
  raw.free(buf);
  return p;
}

std::string case_scatter(const Raw& raw, int32_t dt, int rank, int nranks) {
  const size_t bytes = kCount * oar_dtype_size(dt);
  const int root = nranks - 1;
  // root's send: block r holds rank_data(root) at elements r*kCount...
  void* send = raw.upload(encode(dt, rank_data(dt, root, kCount * nranks)));
  void* recv = raw.upload(std::vector<char>(bytes));
  std::string what = std::string("scatter ") + dtype_str(dt) + " from rank " + std::to_string(root);
  raw.finish(raw.api.scatter(raw.api.impl, send, recv, kCount, dt, root, raw.comm, nullptr), what);
  std::string p =
      compare(dt, raw.download(recv, bytes), rank_data(dt, root, kCount, rank * kCount), what);
  raw.free(recv);
  raw.free(send);
  return p;
}

std::string case_all_to_all(const Raw& raw, int32_t dt, int rank, int nranks) {
  const size_t bytes = kCount * oar_dtype_size(dt);
  void* send = raw.upload(encode(dt, rank_data(dt, rank, kCount * nranks)));
  void* recv = raw.upload(std::vector<char>(bytes * nranks));
  std::string what = std::string("all_to_all ") + dtype_str(dt);
  raw.finish(raw.api.all_to_all(raw.api.impl, send, recv, kCount, dt, raw.comm, nullptr), what);
  std::vector<std::vector<double>> parts;  // block r: rank r's block `rank`
  for (int r = 0; r < nranks; ++r) parts.push_back(rank_data(dt, r, kCount, rank * kCount));
  std::string p = compare(dt, raw.download(recv, bytes * nranks), concat(parts), what);
  raw.free(recv);
  raw.free(send);
  return p;
}

// Uneven blocks: rank s sends (s + 2 d + 1) % 4 elements (some zero) to rank
// d, taken from element 10 d of its data; received blocks land in rank
// order with a gap of 2 elements before each (offsets that are not the
// running sums).
uint64_t v_count(int src, int dst) { return static_cast<uint64_t>((src + 2 * dst + 1) % 4); }

std::string case_all_to_allv(const Raw& raw, int32_t dt, int rank, int nranks) {
  const size_t es = oar_dtype_size(dt);
  std::vector<uint64_t> sc(nranks), so(nranks), rc(nranks), ro(nranks);
  uint64_t at = 0;
  for (int r = 0; r < nranks; ++r) {
    sc[r] = v_count(rank, r);
    so[r] = 10 * static_cast<uint64_t>(r);
    rc[r] = v_count(r, rank);
    ro[r] = at + 2;
    at = ro[r] + rc[r];
  }
  const int64_t send_n = 10 * nranks;
  void* send = raw.upload(encode(dt, rank_data(dt, rank, send_n)));
  std::vector<double> fill(at, 1);
  void* recv = raw.upload(encode(dt, fill));
  std::string what = std::string("all_to_allv ") + dtype_str(dt);
  raw.finish(raw.api.all_to_allv(raw.api.impl, send, sc.data(), so.data(), recv, rc.data(),
                                 ro.data(), dt, raw.comm, nullptr),
             what);
  std::vector<double> want = fill;  // gaps keep their fill
  for (int r = 0; r < nranks; ++r)
    for (uint64_t k = 0; k < rc[r]; ++k)
      want[ro[r] + k] = value(dt, r, 10 * rank + static_cast<int64_t>(k));
  std::string p = compare(dt, raw.download(recv, at * es), want, what);
  raw.free(recv);
  raw.free(send);
  return p;
}

// A ring: rank r sends to r+1 and receives from r-1; even ranks send first,
// so a transport whose send waits for the receiver cannot deadlock.
std::string case_send_recv(const Raw& raw, int32_t dt, int rank, int nranks) {
  const size_t bytes = kCount * oar_dtype_size(dt);
  const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
  void* out = raw.upload(encode(dt, rank_data(dt, rank, kCount)));
  void* in = raw.upload(std::vector<char>(bytes));
  std::string what = std::string("send_recv ") + dtype_str(dt);
  auto do_send = [&] {
    raw.finish(raw.api.send(raw.api.impl, out, kCount, dt, next, raw.comm, nullptr),
               what + ": send to rank " + std::to_string(next));
  };
  auto do_recv = [&] {
    raw.finish(raw.api.recv(raw.api.impl, in, kCount, dt, prev, raw.comm, nullptr),
               what + ": recv from rank " + std::to_string(prev));
  };
  if (rank % 2 == 0) {
    do_send();
    do_recv();
  } else {
    do_recv();
    do_send();
  }
  std::string p = compare(dt, raw.download(in, bytes), rank_data(dt, prev, kCount),
                          what + " from rank " + std::to_string(prev));
  raw.free(in);
  raw.free(out);
  return p;
}

const std::pair<const char*, CaseFn> kCases[] = {{"all_reduce", case_all_reduce},
                                                 {"all_gather", case_all_gather},
                                                 {"reduce_scatter", case_reduce_scatter},
                                                 {"broadcast", case_broadcast},
                                                 {"reduce", case_reduce},
                                                 {"scatter", case_scatter},
                                                 {"all_to_all", case_all_to_all},
                                                 {"all_to_allv", case_all_to_allv},
                                                 {"send_recv", case_send_recv}};

}  // namespace

int collective_worker(const Options& o) {
  json results = json::object();
  const int rank = o.collective_rank;
  int nranks = 2;
  try {
    std::ifstream(o.store_dir + "/nranks") >> nranks;
    oar::Runtime& rt = oar::Runtime::global();
    const std::string& type = o.device_type;
    int count = rt.device_count(type);
    if (count == 0)
      throw std::runtime_error("device type '" + type + "' has no devices in the worker");
    oar::DeviceBackend* backend = rt.state().find(type);
    if (!backend) throw std::runtime_error("device type '" + type + "' has no backend");
    Raw raw{backend->api, rank % count};
    const OarDeviceApi& api = raw.api;
    oar::FileStore store(o.store_dir + "/store");
    uint64_t id_size = 0;
    raw.check(api.comm_unique_id_size(api.impl, &id_size), "comm_unique_id_size");
    std::vector<uint8_t> id(id_size);
    if (rank == 0) {
      raw.check(api.comm_unique_id(api.impl, id.data(), id_size), "comm_unique_id");
      store.set("conformance/id", id);
    } else {
      id = store.get("conformance/id", 30000);
    }
    raw.check(api.comm_init(api.impl, id.data(), id_size, nranks, rank, raw.device,
                            reinterpret_cast<OarStore_t>(static_cast<oar::Store*>(&store)), 30000,
                            &raw.comm),
              "comm_init");
    for (const auto& [name, fn] : kCases) {
      std::string problem;
      for (int32_t dt : kDtypes) {  // every dtype runs, so the ranks stay in step
        std::string p;
        try {
          p = fn(raw, dt, rank, nranks);
        } catch (const std::exception& e) {
          p = e.what();
        }
        if (problem.empty()) problem = p;
      }
      results[name] = {{"ok", problem.empty()}, {"detail", problem}};
    }
    try {
      raw.finish(api.barrier(api.impl, raw.comm, nullptr), "barrier");
      results["barrier"] = {{"ok", true}, {"detail", ""}};
    } catch (const std::exception& e) {
      results["barrier"] = {{"ok", false}, {"detail", e.what()}};
    }
  } catch (const std::exception& e) {
    results["setup"] = {{"ok", false}, {"detail", e.what()}};
  }
  std::ofstream(o.store_dir + "/rank" + std::to_string(rank) + ".json") << results.dump();
  std::fflush(nullptr);
  _exit(0);  // skip static destruction: the plugin's comms are closed by the OS
}

namespace {

// Runs one group of `nranks` worker processes; returns each rank's results.
std::vector<json> run_group(Suite& suite, const Devices& devices, const std::string& self_exe,
                            int nranks) {
  char dir_template[] = "/tmp/oar-conformance-XXXXXX";
  std::string dir = mkdtemp(dir_template) ? dir_template : "";
  if (dir.empty())
    throw std::runtime_error("cannot create a temporary directory for the collective store");
  std::ofstream(dir + "/nranks") << nranks;
  std::vector<pid_t> pids;
  for (int rank = 0; rank < nranks; ++rank) {
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
  // Wait up to 120 s for all, then kill the stragglers.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  std::vector<int> statuses(nranks, -1);
  for (int left = nranks; left > 0;) {
    for (int r = 0; r < nranks; ++r) {
      if (statuses[r] != -1) continue;
      int st = 0;
      if (waitpid(pids[r], &st, WNOHANG) > 0) statuses[r] = st, --left;
    }
    if (left && std::chrono::steady_clock::now() > deadline) {
      for (int r = 0; r < nranks; ++r)
        if (statuses[r] == -1) kill(pids[r], SIGKILL);
      for (int r = 0; r < nranks; ++r)
        if (statuses[r] == -1) waitpid(pids[r], &statuses[r], 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::vector<json> per_rank;
  for (int r = 0; r < nranks; ++r) {
    std::ifstream in(dir + "/rank" + std::to_string(r) + ".json");
    json j = json::parse(in, nullptr, false);
    if (j.is_discarded()) {
      int st = statuses[r];
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
  return per_rank;
}

}  // namespace

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
  std::vector<std::pair<int, std::vector<json>>> groups;
  for (int nranks : kGroupSizes)
    groups.emplace_back(nranks, run_group(suite, devices, self_exe, nranks));
  for (const char* c : kCollectives) {
    std::string name = std::string("collective.") + c;
    if (!suite.selected(name)) continue;
    CheckResult res{.name = name};
    for (const auto& [nranks, per_rank] : groups) {
      for (int r = 0; r < nranks && res.result == Result::pass; ++r) {
        const json& j = per_rank[r];
        const json* entry = j.contains(c) ? &j[c] : j.contains("setup") ? &j["setup"] : nullptr;
        if (!entry || !(*entry)["ok"].get<bool>()) {
          res.result = Result::fail;
          res.detail = std::to_string(nranks) + " ranks, rank " + std::to_string(r) + ": " +
                       (entry ? (*entry)["detail"].get<std::string>() : "no result");
        }
      }
    }
    if (res.result == Result::pass)
      res.detail =
          std::string(c) == "barrier"
              ? "2 and 3 ranks (processes) pass the barrier"
              : "2 and 3 ranks (processes), 9 dtypes, agree with the host's expected values";
    suite.add(res);
  }
  suite.set_current("");
}

}  // namespace oar_conformance
