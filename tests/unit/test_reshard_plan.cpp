// Reshard (core/src/dist/reshard.cpp) and the collective host ops
// (collective_ops.cpp): the pure plan (which steps, in which order), and
// the host ops and every transition run for real with ranks as forked
// processes over the cpu plugin's Gloo (a FileStore in a temporary
// directory, as test_gloo_collectives.cpp). Expected pieces are cut from
// the dense value by hand-checkable slicing; Partial pieces are made so
// that they combine to the dense value. Collectives also run traced: the
// IR program (after the default passes) gives the eager result through the
// executor and the interpreter.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <sstream>
#include <thread>

#include "dist/dist_internal.h"
#include "doctest/doctest.h"
#include "oar/ir/executor.h"
#include "oar/ir/interpreter.h"
#include "oar/ir/pass.h"
#include "oar/ir/serialize.h"
#include "oar/ir/trace.h"
#include "oar/oar.h"

namespace {

using oar::DistAttr;
using oar::DType;
using oar::Placement;
using oar::ProcessMesh;
using oar::ReduceKind;
using oar::Shape;
using oar::Tensor;
using oar::dist::ReshardStep;
using Kind = ReshardStep::Kind;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

const Placement R = Placement::Replicate();
Placement S(int64_t d) { return Placement::Shard(d); }
Placement P(ReduceKind k = ReduceKind::sum) { return Placement::Partial(k); }

std::string plan_str(const Shape& global, const std::vector<int64_t>& mesh,
                     const std::vector<Placement>& from, const std::vector<Placement>& to) {
  std::string out;
  for (const ReshardStep& s : oar::dist::plan_reshard(global, mesh, from, to))
    out += (out.empty() ? "" : " ") + s.str();
  return out;
}

// ------------------------------------------------------------- the plan ---

TEST_CASE("plan_reshard: one mesh dim, every transition") {
  const Shape g{5, 4};
  CHECK(plan_str(g, {2}, {S(0)}, {R}) == "all_gather(mesh_dim=0, dim=0)");
  CHECK(plan_str(g, {2}, {P()}, {R}) == "all_reduce(mesh_dim=0, reduce=Partial(sum))");
  CHECK(plan_str(g, {2}, {P(ReduceKind::max)}, {S(1)}) ==
        "reduce_scatter(mesh_dim=0, dim=1, reduce=Partial(max))");
  CHECK(plan_str(g, {2}, {R}, {S(1)}) == "slice(mesh_dim=0, dim=1)");
  CHECK(plan_str(g, {2}, {R}, {P()}) == "make_partial(mesh_dim=0, reduce=Partial(sum))");
  // S(i) -> S(j): all_to_all when both dims divide evenly, else gather + slice.
  CHECK(plan_str({4, 6}, {2}, {S(0)}, {S(1)}) == "all_to_all(mesh_dim=0, dim=0, to_dim=1)");
  CHECK(plan_str(g, {2}, {S(0)}, {S(1)}) ==
        "all_gather(mesh_dim=0, dim=0) slice(mesh_dim=0, dim=1)");
  // Partial kinds go through Replicate.
  CHECK(
      plan_str(g, {2}, {P()}, {P(ReduceKind::max)}) ==
      "all_reduce(mesh_dim=0, reduce=Partial(sum)) make_partial(mesh_dim=0, reduce=Partial(max))");
  CHECK(plan_str(g, {2}, {S(0)}, {P()}) ==
        "all_gather(mesh_dim=0, dim=0) make_partial(mesh_dim=0, reduce=Partial(sum))");
  CHECK(plan_str(g, {2}, {S(1)}, {S(1)}).empty());
  CHECK(plan_str(g, {1}, {S(0)}, {P()}).empty());  // a mesh dim of one rank moves nothing
}

TEST_CASE("plan_reshard: 2-d meshes go one mesh dim at a time, nested shards from the inside out") {
  const Shape g{6, 4};
  CHECK(plan_str(g, {2, 2}, {S(0), S(1)}, {R, R}) ==
        "all_gather(mesh_dim=1, dim=1) all_gather(mesh_dim=0, dim=0)");
  // Dim 0 split over both mesh dims: keep the outer split, undo the inner one.
  CHECK(plan_str(g, {2, 2}, {S(0), S(0)}, {S(0), R}) == "all_gather(mesh_dim=1, dim=0)");
  // The outer split goes: the inner piece is a chunk of it, so it goes too and comes back.
  CHECK(plan_str(g, {2, 2}, {S(0), S(0)}, {R, S(0)}) ==
        "all_gather(mesh_dim=1, dim=0) all_gather(mesh_dim=0, dim=0) slice(mesh_dim=1, dim=0)");
  CHECK(plan_str(g, {2, 2}, {R, S(0)}, {S(0), S(0)}) ==
        "all_gather(mesh_dim=1, dim=0) slice(mesh_dim=0, dim=0) slice(mesh_dim=1, dim=0)");
  // Partial on one mesh dim, a shard on the other: reduce_scatter where the dim is free.
  CHECK(plan_str(g, {2, 2}, {P(), S(0)}, {S(1), S(0)}) ==
        "reduce_scatter(mesh_dim=0, dim=1, reduce=Partial(sum))");
  CHECK(plan_str(g, {2, 2}, {P(), S(0)}, {S(0), R}) ==
        "all_reduce(mesh_dim=0, reduce=Partial(sum)) all_gather(mesh_dim=1, dim=0) "
        "slice(mesh_dim=0, dim=0)");
  // Both tensor dims are sharded by both mesh dims' placements: no all_to_all.
  CHECK(plan_str(g, {2, 2}, {S(0), S(1)}, {S(1), S(0)}) ==
        "all_gather(mesh_dim=1, dim=1) all_gather(mesh_dim=0, dim=0) slice(mesh_dim=0, dim=1) "
        "slice(mesh_dim=1, dim=0)");
  CHECK_THROWS_WITH(plan_str(g, {2, 2}, {R}, {R, R}), doctest::Contains("the mesh has 2 dims"));
}

// ----------------------------------------------------- ranks as processes ---

/// A rank's checks: "" when all held, else the first problem.
using RankBody = std::function<std::string(int rank, int nranks)>;

/// Runs `body` in `nranks` forked children meeting through a FileStore
/// (set_collective_env); returns each rank's message ("did not finish"
/// for a child killed at the deadline).
std::vector<std::string> run_ranks(int nranks, const RankBody& body,
                                   std::chrono::seconds deadline = std::chrono::seconds(60)) {
  fs::path dir =
      fs::temp_directory_path() / ("oar_reshard_" + std::to_string(::getpid()) + "_" +
                                   std::to_string(Clock::now().time_since_epoch().count()));
  fs::create_directories(dir);
  std::vector<pid_t> pids(static_cast<size_t>(nranks), -1);
  for (int rank = 0; rank < nranks; ++rank) {
    std::fflush(nullptr);
    pid_t pid = ::fork();
    if (pid == 0) {
      std::string message;
      try {
        auto store = std::make_shared<oar::FileStore>((dir / "store").string());
        oar::dist::set_collective_env(store, oar::Device{"cpu", 0}, rank, nranks, 20000);
        message = body(rank, nranks);
        // Nobody leaves while a peer may still read from it.
        std::vector<int> world(static_cast<size_t>(nranks));
        std::iota(world.begin(), world.end(), 0);
        oar::dist::group_communicator(world)->barrier();
      } catch (const std::exception& e) {
        message = std::string("threw: ") + e.what();
      }
      std::ofstream((dir / ("rank" + std::to_string(rank))).string())
          << (message.empty() ? "ok" : message);
      std::fflush(nullptr);
      ::_exit(0);  // no static destruction in a forked child
    }
    pids[static_cast<size_t>(rank)] = pid;
  }
  auto until = Clock::now() + deadline;
  for (bool waiting = true; waiting;) {
    waiting = false;
    for (pid_t& pid : pids) {
      if (pid > 0 && ::waitpid(pid, nullptr, WNOHANG) == pid) pid = -1;
      waiting = waiting || pid > 0;
    }
    if (waiting && Clock::now() > until) {
      for (pid_t& pid : pids)
        if (pid > 0) ::kill(pid, SIGKILL), ::waitpid(pid, nullptr, 0), pid = -1;
    }
    if (waiting) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::vector<std::string> results;
  for (int rank = 0; rank < nranks; ++rank) {
    std::ifstream in((dir / ("rank" + std::to_string(rank))).string());
    std::stringstream text;
    if (in) text << in.rdbuf();
    results.push_back(!in ? "did not finish" : text.str() == "ok" ? "" : text.str());
  }
  fs::remove_all(dir);
  return results;
}

void check_ranks(const std::vector<std::string>& results) {
  for (size_t r = 0; r < results.size(); ++r) {
    INFO("rank " << r << ": " << results[r]);
    CHECK(results[r].empty());
  }
}

Tensor iota(const Shape& shape, float start = 0) {
  std::vector<float> v(static_cast<size_t>(oar::shape_numel(shape)));
  std::iota(v.begin(), v.end(), start);
  return Tensor::from_vector(v, shape, oar::Device{"cpu", 0});
}

std::string vec_str(const std::vector<float>& v) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < v.size(); ++i) s << (i ? " " : "") << v[i];
  return s.str() + "]";
}

// "" when `got` has `want`'s shape and values.
std::string same(const Tensor& got, const Tensor& want, const std::string& what) {
  if (got.shape() != want.shape())
    return what + ": shape " + oar::shape_str(got.shape()) + " but expected " +
           oar::shape_str(want.shape());
  auto a = got.contiguous().to_vector<float>(), b = want.contiguous().to_vector<float>();
  if (a != b) return what + ": got " + vec_str(a) + " but expected " + vec_str(b);
  return "";
}

// ------------------------------------------------------------- host ops ---

Tensor call(const char* name, std::vector<Tensor> in, oar::Attrs attrs) {
  return oar::current_builder()
      .apply(oar::OpRegistry::instance().get(name), in, attrs, nullptr)
      .at(0);
}

std::string host_ops_on_two_ranks(int rank, int) {
  const std::vector<int64_t> ranks{0, 1};
  Tensor x = iota({2, 2}, static_cast<float>(10 * rank));  // rank 0: 0 1 2 3, rank 1: 10 11 12 13
  std::string p;
  auto first = [&](const std::string& q) {
    if (p.empty()) p = q;
  };
  oar::dist::reset_collective_stats();
  first(same(call("c_all_reduce", {x}, {{"ranks", ranks}}),
             Tensor::from_vector<float>({10, 12, 14, 16}, {2, 2}), "c_all_reduce sum"));
  {  // Note [Collective counts]: one call of a [2, 2] f32 input
    auto stats = oar::dist::collective_stats();
    auto it = stats.find("c_all_reduce");
    if (stats.size() != 1 || it == stats.end() || it->second.calls != 1 || it->second.bytes != 16)
      first("collective_stats after one c_all_reduce of [2, 2] f32 is not {c_all_reduce: (1, 16)}");
  }
  first(same(call("c_all_reduce", {x}, {{"ranks", ranks}, {"reduce", int64_t{2}}}),
             iota({2, 2}, 10), "c_all_reduce max"));
  first(same(x, iota({2, 2}, static_cast<float>(10 * rank)), "c_all_reduce leaves its input"));
  first(same(call("c_all_gather", {x}, {{"ranks", ranks}, {"axis", int64_t{1}}}),
             Tensor::from_vector<float>({0, 1, 10, 11, 2, 3, 12, 13}, {2, 4}),
             "c_all_gather axis 1"));
  first(same(call("c_all_gather", {x}, {{"ranks", ranks}, {"axis", int64_t{0}}}),
             Tensor::from_vector<float>({0, 1, 2, 3, 10, 11, 12, 13}, {4, 2}),
             "c_all_gather axis 0"));
  // Sum [10 12; 14 16], rank r keeps column r.
  first(same(call("c_reduce_scatter", {x}, {{"ranks", ranks}, {"axis", int64_t{1}}}),
             rank == 0 ? Tensor::from_vector<float>({10, 14}, {2, 1})
                       : Tensor::from_vector<float>({12, 16}, {2, 1}),
             "c_reduce_scatter axis 1"));
  // Split columns, concatenate rows: rank 0 gets column 0 of both ranks.
  first(same(call("c_all_to_all", {x},
                  {{"ranks", ranks}, {"split_axis", int64_t{1}}, {"concat_axis", int64_t{0}}}),
             rank == 0 ? Tensor::from_vector<float>({0, 2, 10, 12}, {4, 1})
                       : Tensor::from_vector<float>({1, 3, 11, 13}, {4, 1}),
             "c_all_to_all"));
  first(same(call("c_broadcast", {x}, {{"ranks", ranks}, {"root", int64_t{1}}}), iota({2, 2}, 10),
             "c_broadcast"));
  if (rank == 0) {
    first(same(call("c_send", {x}, {{"ranks", ranks}, {"peer", int64_t{1}}}), x, "c_send's token"));
  } else {
    oar::Attrs a{{"ranks", ranks},
                 {"peer", int64_t{0}},
                 {"shape", std::vector<int64_t>{2, 2}},
                 {"dtype", static_cast<int64_t>(DType::f32)}};
    first(same(call("c_recv", {}, a), iota({2, 2}), "c_recv"));
  }
  // A bad attribute is a sentence naming the op, before any communication.
  try {
    call("c_reduce_scatter", {iota({3})}, {{"ranks", ranks}, {"axis", int64_t{0}}});
    first("c_reduce_scatter of 3 elements over 2 ranks did not throw");
  } catch (const oar::Error& e) {
    if (std::string(e.what()).find("c_reduce_scatter: dim axis has size 3") == std::string::npos)
      first(std::string("unexpected error: ") + e.what());
  }
  return p;
}

TEST_CASE("collective host ops on two ranks (eager)") {
  check_ranks(run_ranks(2, host_ops_on_two_ranks));
}

// ---------------------------------------------------------- transitions ---

// The piece `rank` holds of `full` placed as `attr` (Partial pieces combine
// to `full`: sum: coordinate 0 holds full - (n - 1), the others ones; avg:
// full + c - (n - 1) / 2; max: others full - 1; min: others full + 1).
Tensor piece_of(const Tensor& full, const DistAttr& attr, int rank) {
  Shape local;
  std::vector<int64_t> begin = oar::dist::local_begin(full.shape(), attr, rank, &local);
  if (!attr.mesh.contains(rank)) return oar::zeros(local);
  std::vector<int64_t> axes, starts, ends;
  for (size_t d = 0; d < local.size(); ++d) {
    axes.push_back(static_cast<int64_t>(d));
    starts.push_back(begin[d]);
    ends.push_back(begin[d] + local[d]);
  }
  Tensor x = oar::slice(full, axes, starts, ends).contiguous();
  std::vector<int64_t> coord = attr.mesh.coordinate(rank);
  for (size_t m = 0; m < attr.placements.size(); ++m) {
    const Placement& p = attr.placements[m];
    if (!p.is_partial()) continue;
    auto c = static_cast<double>(coord[m]);
    double n = static_cast<double>(attr.mesh.shape()[m]);
    switch (p.reduce) {
      case ReduceKind::sum:
        x = c == 0 ? x - (n - 1) : oar::ones_like(x);
        break;
      case ReduceKind::avg:
        x = x + (c - (n - 1) / 2);
        break;
      case ReduceKind::max:
        x = c == 0 ? x : x - 1.0;
        break;
      case ReduceKind::min:
        x = c == 0 ? x : x + 1.0;
        break;
    }
  }
  return x;
}

// The piece reshard_local must give: the dense value cut as `to` says (a
// Partial target: coordinate 0 holds the value, the others zeros for sum).
Tensor expected_piece(const Tensor& full, const DistAttr& to, int rank) {
  Shape local;
  std::vector<int64_t> begin = oar::dist::local_begin(full.shape(), to, rank, &local);
  if (!to.mesh.contains(rank)) return oar::zeros(local);
  std::vector<int64_t> axes, starts, ends;
  for (size_t d = 0; d < local.size(); ++d) {
    axes.push_back(static_cast<int64_t>(d));
    starts.push_back(begin[d]);
    ends.push_back(begin[d] + local[d]);
  }
  Tensor x = oar::slice(full, axes, starts, ends).contiguous();
  std::vector<int64_t> coord = to.mesh.coordinate(rank);
  for (size_t m = 0; m < to.placements.size(); ++m) {
    if (to.placements[m].is_partial() && to.placements[m].reduce == ReduceKind::sum &&
        coord[m] != 0)
      x = oar::zeros_like(x);
  }
  return x;
}

struct Case {
  Shape shape;
  DistAttr from, to;
};

std::string run_cases(const std::vector<Case>& cases, int rank) {
  for (const Case& c : cases) {
    Tensor full = iota(c.shape, 1);
    std::string what =
        "reshard " + c.from.str() + " -> " + c.to.str() + " of " + oar::shape_str(c.shape);
    Tensor got = oar::dist::reshard_local(piece_of(full, c.from, rank), c.shape, c.from, c.to);
    // A Partial mesh dim kept from `from` keeps pieces of its own making:
    // they must still combine to the dense value.
    bool kept_partial = false;
    for (size_t m = 0; m < c.to.placements.size(); ++m)
      kept_partial = kept_partial || (c.from.mesh == c.to.mesh && c.to.placements[m].is_partial() &&
                                      c.from.placements[m] == c.to.placements[m]);
    if (kept_partial) {
      DistAttr dense{c.to.mesh, std::vector<Placement>(c.to.placements.size(), R)};
      if (Shape want = oar::dist::local_shape(c.shape, c.to, rank); got.shape() != want)
        return what + ": shape " + oar::shape_str(got.shape()) + " but expected " +
               oar::shape_str(want);
      got = oar::dist::reshard_local(got, c.shape, c.to, dense);
      if (std::string p = same(got, full, what + ", combined"); !p.empty()) return p;
      continue;
    }
    if (std::string p = same(got, expected_piece(full, c.to, rank), what); !p.empty()) return p;
  }
  return "";
}

ProcessMesh line(std::vector<int> ids) { return ProcessMesh::from_ids(std::move(ids), "x"); }

TEST_CASE("every transition on two ranks, even and uneven (one rank's chunk empty)") {
  const ProcessMesh mesh = line({0, 1});
  std::vector<Case> cases;
  const std::vector<std::vector<Placement>> all = {
      {R}, {S(0)}, {S(1)}, {P()}, {P(ReduceKind::avg)}, {P(ReduceKind::max)}, {P(ReduceKind::min)}};
  for (const Shape& shape : {Shape{4, 6}, Shape{5, 3}, Shape{1, 3}}) {
    for (const auto& from : all)
      for (const auto& to : all) cases.push_back({shape, {mesh, from}, {mesh, to}});
  }
  check_ranks(run_ranks(2, [&](int rank, int) { return run_cases(cases, rank); }));
}

TEST_CASE("transitions on a 2x2 mesh of four ranks, nested and uneven shards") {
  const ProcessMesh mesh({2, 2}, {0, 1, 2, 3}, {"dp", "mp"});
  const std::vector<std::vector<Placement>> all = {
      {R, R},    {S(0), R},   {R, S(1)},   {S(0), S(1)}, {S(1), S(0)},           {S(0), S(0)},
      {R, S(0)}, {P(), S(0)}, {S(1), P()}, {P(), P()},   {P(ReduceKind::max), R}};
  std::vector<Case> cases;
  for (const Shape& shape : {Shape{4, 4}, Shape{3, 5}}) {
    for (const auto& from : all)
      for (const auto& to : all) cases.push_back({shape, {mesh, from}, {mesh, to}});
  }
  check_ranks(run_ranks(
      4, [&](int rank, int) { return run_cases(cases, rank); }, std::chrono::seconds(120)));
}

TEST_CASE("reshard between two meshes (send/recv), and a rank outside both") {
  std::vector<Case> cases = {
      {{4, 3}, {line({0, 1}), {S(0)}}, {line({2, 3}), {S(1)}}},
      {{5, 2}, {line({0, 1}), {P()}}, {line({2, 3}), {R}}},
      {{3, 2}, {line({2, 3}), {R}}, {line({0, 1}), {S(0)}}},
      {{3, 2}, {line({0}), {R}}, {line({1, 2}), {P()}}},         // rank 3 in neither mesh
      {{2, 3}, {line({0, 1}), {S(1)}}, {line({1, 2}), {S(0)}}},  // overlapping meshes
      // The same ranks as a 2x2 and as a line: no transfer, a gather and a local cut.
      {{4, 4}, {ProcessMesh({2, 2}, {0, 1, 2, 3}), {S(0), S(1)}}, {line({3, 2, 1, 0}), {S(1)}}},
  };
  check_ranks(run_ranks(4, [&](int rank, int) { return run_cases(cases, rank); }));
}

// ----------------------------------------------------------- IR paths ---

std::string traced_reshard(int rank, int) {
  namespace ir = oar::ir;
  const ProcessMesh mesh = line({0, 1});
  const DistAttr from{mesh, {S(0)}}, to{mesh, {P()}}, mid{mesh, {S(1)}};
  const Shape global{5, 4};
  Tensor full = iota(global, 1);
  Tensor piece = piece_of(full, from, rank);
  auto fn = [&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    Tensor a = oar::dist::reshard_local(in[0], global, from, mid);         // gather + slice
    Tensor b = oar::dist::reshard_local(a, global, mid, to);               // gather + zeros
    Tensor unused = oar::dist::reshard_local(b, global, to, {mesh, {R}});  // dead, yet a collective
    (void)unused;
    return {oar::dist::reshard_local(b, global, to, {mesh, {S(1)}})};  // reduce_scatter
  };
  Tensor eager = fn({piece})[0];
  if (std::string p = same(eager, expected_piece(full, {mesh, {S(1)}}, rank), "eager"); !p.empty())
    return p;
  ir::Trace t = ir::trace(fn, {{piece.shape(), DType::f32, "x"}});
  ir::default_pipeline(oar::Device{"cpu", 0}).run(t.program);
  int collectives = 0;
  for (const auto& op : t.program.block().ops()) collectives += op->name().rfind("c_", 0) == 0;
  if (collectives != 4)
    return "the optimized program has " + std::to_string(collectives) + " collectives, not 4";
  std::vector<Tensor> in{piece};
  ir::Executor exec(t.program, oar::Device{"cpu", 0});
  if (std::string p = same(exec.run(in)[0], eager, "executor"); !p.empty()) return p;
  if (std::string p = same(exec.run(in)[0], eager, "executor, second run"); !p.empty()) return p;
  if (std::string p = same(ir::interpret(t.program, in)[0], eager, "interpreter"); !p.empty())
    return p;
  // The collectives survive the JSON form (verified on load) and run from it.
  ir::ParamMap constants;
  for (const oar::ir::Value* v : t.program.constants())
    constants[v->name()] = t.program.constant_value(v);
  ir::Program loaded = ir::from_json(ir::to_json(t.program), constants);
  return same(ir::Executor(loaded, oar::Device{"cpu", 0}).run(in)[0], eager,
              "executor of the loaded program");
}

TEST_CASE("a traced reshard records its collectives; the executor and interpreter run them") {
  check_ranks(run_ranks(2, traced_reshard));
}

}  // namespace
