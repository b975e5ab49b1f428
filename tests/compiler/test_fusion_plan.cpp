// The fusion planner (compiler/include/oar_compiler/fusion.h): plans of
// traced, decomposed programs checked as text against tests/compiler/plans/
// (read them: each says which ops fuse), and rules checked on their own:
// every plan is a partition of fusible ops whose contraction has no cycle,
// cycle-creating candidates are refused with a logged reason.
// OAR_UPDATE_PLANS=1 rewrites the expected files (then read the diff).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "fusion_programs.h"
#include "oar/ir/autodiff.h"
#include "oar/ir/pass.h"
#include "oar/ir/printer.h"
#include "oar/ir/trace.h"
#include "oar/ops.h"
#include "oar_compiler/fusion.h"

using namespace oar;
using oar::compiler::FusionOptions;
using oar::compiler::Group;
using oar::compiler::GroupKind;
using oar_test::block_fn;
using oar_test::block_specs;
using oar_test::decompose_all;
using oar_test::traced;

namespace {

std::filesystem::path plan_dir() {
#ifdef OAR_COMPILER_TEST_DIR
  return std::filesystem::path(OAR_COMPILER_TEST_DIR) / "plans";
#else
  return std::filesystem::path(__FILE__).parent_path() / "plans";
#endif
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A value as plan_text names it: its interface name or op<position>.
std::string name_of(const ir::Value* v) {
  if (!v->name().empty()) return v->name();
  const ir::Operation* op = v->producer();
  std::string out = "op" + std::to_string(op->block()->index_of(op));
  return op->results().size() > 1 ? out + "." + std::to_string(v->result_index()) : out;
}

// Compares the plan with plans/<name>.txt (the program is listed first in
// the file as comment lines, one op per line with its position, so the
// plan can be read against it).
void check_plan(const std::string& name, ir::Program& p, const std::vector<Group>& groups) {
  std::string text = "# " + name + ": the decomposed program, then its fusion plan\n";
  for (const ir::Operation* op : p.block().ops()) {
    text += "# " + std::to_string(op->block()->index_of(op)) + ": " + op->name() + "(";
    for (size_t i = 0; i < op->operands().size(); ++i)
      text += (i ? ", " : "") + name_of(op->operand(i));
    text +=
        ") -> " + (op->results().empty() ? std::string("()") : op->result()->type().str()) + "\n";
  }
  for (const auto& out : p.outputs())
    text += "# output " + out.name + " = " + name_of(out.value) + "\n";
  text += compiler::plan_text(groups);
  const auto path = plan_dir() / (name + ".txt");
  if (const char* update = std::getenv("OAR_UPDATE_PLANS"); update && std::string(update) == "1") {
    std::ofstream(path) << text;
  }
  CHECK_MESSAGE(read_file(path) == text, "plan of " << name << " differs from " << path.string()
                                                    << ":\n"
                                                    << text);
}

// The rules every plan keeps, checked independently of the planner: each op
// in at most one group; no opaque op in a group; inputs and outputs are
// exactly the values crossing the group's boundary; contracting each group
// to one node leaves the program acyclic (a topological order exists).
void check_valid(const ir::Program& p, const std::vector<Group>& groups) {
  std::map<const ir::Operation*, int> group_of;
  for (size_t g = 0; g < groups.size(); ++g) {
    for (const ir::Operation* op : groups[g].ops) {
      CHECK_MESSAGE(group_of.count(op) == 0, op->name() << " is in two groups");
      CHECK(compiler::classify(*op) != compiler::OpClass::opaque);
      group_of[op] = static_cast<int>(g);
    }
  }
  std::map<const ir::Operation*, int> pos;
  for (const ir::Operation* op : p.block().ops()) pos[op] = static_cast<int>(pos.size());
  // Nodes: groups as -1 - g, other ops by position.
  auto node = [&](const ir::Operation* op) {
    return group_of.count(op) ? -1 - group_of[op] : pos[op];
  };
  std::map<int, std::set<int>> succ;
  std::map<int, int> indegree;
  for (const ir::Operation* op : p.block().ops()) indegree[node(op)] += 0;
  for (const ir::Operation* op : p.block().ops()) {
    for (const ir::Value* v : op->operands()) {
      if (!v->producer()) continue;
      int from = node(v->producer()), to = node(op);
      if (from != to && succ[from].insert(to).second) indegree[to]++;
    }
  }
  std::vector<int> ready;
  for (auto& [n, d] : indegree)
    if (d == 0) ready.push_back(n);
  size_t done = 0;
  while (!ready.empty()) {
    int n = ready.back();
    ready.pop_back();
    ++done;
    for (int s : succ[n])
      if (--indegree[s] == 0) ready.push_back(s);
  }
  CHECK_MESSAGE(done == indegree.size(), "the plan's groups make a cycle");
  for (size_t g = 0; g < groups.size(); ++g) {
    std::set<const ir::Operation*> ops(groups[g].ops.begin(), groups[g].ops.end());
    std::vector<ir::Value*> inputs, outputs;
    for (const ir::Operation* op : groups[g].ops) {
      for (ir::Value* v : op->operands())
        if ((!v->producer() || !ops.count(v->producer())) &&
            std::find(inputs.begin(), inputs.end(), v) == inputs.end())
          inputs.push_back(v);
      for (ir::Value* r : op->results()) {
        bool outside = r->interface_uses() > 0;
        for (const ir::Use& u : r->uses()) outside = outside || !ops.count(u.user);
        if (outside) outputs.push_back(r);
      }
    }
    CHECK(inputs == groups[g].inputs);
    CHECK(outputs == groups[g].outputs);
  }
}

std::vector<Group> plan(ir::Program& p, std::string* log = nullptr, FusionOptions options = {}) {
  std::ostringstream os;
  auto groups = compiler::plan_fusion(p.block(), options, &os);
  if (log) *log = os.str();
  // Each refusal is logged once (a pair of groups may meet over several values).
  std::istringstream lines(os.str());
  std::set<std::string> refusals;
  for (std::string line; std::getline(lines, line);)
    if (line.find("refused") != std::string::npos)
      CHECK_MESSAGE(refusals.insert(line).second, "logged twice: " << line);
  check_valid(p, groups);
  return groups;
}

size_t count_ops(const Group& g, const std::string& name) {
  return static_cast<size_t>(
      std::count_if(g.ops.begin(), g.ops.end(), [&](auto* op) { return op->name() == name; }));
}

}  // namespace

TEST_CASE("classify: a table by op name, opaque for matmul, random and complex ops") {
  ir::Program p;
  ir::Value* x = p.add_input("x", {DType::f32, {4, 4}});
  ir::Value* z = p.add_input("z", {DType::c64, {4}});
  auto op = [&](const char* name, std::vector<ir::Value*> in, Attrs attrs, ir::TensorType t) {
    return p.append(OpRegistry::instance().get(name), std::move(in), std::move(attrs), {t});
  };
  using compiler::OpClass;
  CHECK(compiler::classify(*op("exp", {x}, {}, x->type())) == OpClass::elementwise);
  CHECK(compiler::classify(*op("add", {x, x}, {}, x->type())) == OpClass::elementwise);
  CHECK(compiler::classify(*op("sum", {x}, {{"axes", std::vector<int64_t>{1}}, {"keepdim", true}},
                               {DType::f32, {4, 1}})) == OpClass::reduce);
  CHECK(compiler::classify(*op("reshape", {x}, {{"shape", std::vector<int64_t>{16}}},
                               {DType::f32, {16}})) == OpClass::reshape);
  CHECK(compiler::classify(*op("transpose", {x}, {{"perm", std::vector<int64_t>{1, 0}}},
                               x->type())) == OpClass::transpose);
  CHECK(compiler::classify(*op("matmul", {x, x}, {}, x->type())) == OpClass::opaque);
  CHECK(compiler::classify(*op("exp", {z}, {}, z->type())) == OpClass::opaque);  // complex
}

TEST_CASE("plan: RMSNorm is one reduce group (square, mean, rsqrt and both multiplies)") {
  ir::Program p = traced(
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{rms_norm(in[0], in[1])}; },
      {{{-1, 768}, DType::f32, "x"}, {{768}, DType::f32, "w"}});
  std::string log;
  auto groups = plan(p, &log);
  REQUIRE(groups.size() == 1);
  const Group& g = groups[0];
  CHECK(g.kind == GroupKind::reduce);
  CHECK(g.ops.size() == p.block().size());  // every op of the decomposition
  CHECK(count_ops(g, "sum") == 1);
  CHECK(g.inputs.size() >= 2);
  CHECK(g.inputs[0] == p.find("x"));
  REQUIRE(g.outputs.size() == 1);
  CHECK(g.outputs[0] == p.outputs()[0].value);
  CHECK(log.find("fusion: 1 groups") != std::string::npos);
  check_plan("rms_norm", p, groups);
}

TEST_CASE("plan: softmax is one group with two reductions over the same rows (max and sum)") {
  ir::Program p =
      traced([](const std::vector<Tensor>& in) { return std::vector<Tensor>{softmax(in[0], -1)}; },
             {{{-1, 128}, DType::f32, "x"}});
  auto groups = plan(p);
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].kind == GroupKind::reduce);
  CHECK(count_ops(groups[0], "max") == 1);
  CHECK(count_ops(groups[0], "sum") == 1);
  CHECK(groups[0].ops.size() == p.block().size());
  check_plan("softmax", p, groups);
}

TEST_CASE("plan: log_softmax is one group") {
  ir::Program p = traced(
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{log_softmax(in[0], -1)}; },
      {{{-1, 7, 33}, DType::f32, "x"}});
  auto groups = plan(p);
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].kind == GroupKind::reduce);
  CHECK(groups[0].ops.size() == p.block().size());
}

TEST_CASE("plan: layer_norm is one group (mean and variance over the same rows)") {
  ir::Program p = traced(
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{layer_norm(in[0], in[1], in[2], 1e-5, -1)};
      },
      {{{-1, 256}, DType::f32, "x"}, {{256}, DType::f32, "w"}, {{256}, DType::f32, "b"}});
  auto groups = plan(p);
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].kind == GroupKind::reduce);
  CHECK(count_ops(groups[0], "sum") == 2);
  CHECK(groups[0].ops.size() == p.block().size());
  check_plan("layer_norm", p, groups);
}

TEST_CASE("plan: bias + gelu is one elementwise group") {
  ir::Program p =
      traced([](const std::vector<Tensor>& in) { return std::vector<Tensor>{gelu(in[0] + in[1])}; },
             {{{-1, 3072}, DType::f32, "x"}, {{3072}, DType::f32, "bias"}});
  auto groups = plan(p);
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].kind == GroupKind::elementwise);
  CHECK(count_ops(groups[0], "erf") == 1);
  CHECK(groups[0].ops.size() == p.block().size());
  check_plan("bias_gelu", p, groups);
}

TEST_CASE("plan: cross_entropy forward and backward") {
  ir::Trace t = ir::trace(
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{cross_entropy(in[0], in[1])};
      },
      {{{-1, 10}, DType::f32, "logits"}, {{-1}, DType::i64, "label"}});
  ir::Program& p = t.program;
  decompose_all(p);
  SUBCASE(
      "forward: the log_softmax with the label pick is one group, the mean over the batch "
      "another; the count of valid labels is summed alone") {
    std::string log;
    auto groups = plan(p, &log);
    REQUIRE(groups.size() == 3);
    CHECK(groups[0].ops.size() == 18);
    CHECK(groups[1].ops.size() == 1);  // sum(valid): one op, which the cpu plugin runs
    CHECK(groups[2].ops.size() == 2);  // sum(loss) / sum(valid)
    // sum(valid [B, 1]) and sum(loss [B]) reduce the same B only through the
    // program: in a group of their own the two B would be unrelated.
    CHECK(log.find("equal the group's only through the program around it") != std::string::npos);
    size_t reductions = 0;
    for (const Group& g : groups) reductions += count_ops(g, "sum") + count_ops(g, "max");
    CHECK(reductions == 5);  // max, sum(exp), sum(pick), sum(loss), sum(valid): none duplicated
    check_plan("cross_entropy", p, groups);
  }
  SUBCASE("backward") {
    std::vector<ir::Value*> g = ir::append_backward(p, {p.outputs()[0].value}, {p.find("logits")});
    p.add_output(g[0], "grad_logits");
    decompose_all(p);
    auto groups = plan(p);
    CHECK(!groups.empty());
    check_plan("cross_entropy_backward", p, groups);
  }
}

TEST_CASE(
    "plan: a candidate that would make a cycle through an opaque op is refused, with the reason "
    "logged") {
  // a = exp(x); m = matmul(a, w); c = a * m. Fusing exp into the multiply
  // would make the group both feed and read the matmul.
  ir::Program p = traced(
      [](const std::vector<Tensor>& in) {
        Tensor a = exp(in[0]);
        return std::vector<Tensor>{a * matmul(a, in[1])};
      },
      {{{8, 8}, DType::f32, "x"}, {{8, 8}, DType::f32, "w"}});
  std::string log;
  auto groups = plan(p, &log);
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].ops.size() == 1);
  CHECK(groups[1].ops.size() == 1);
  CHECK(
      log.find(
          "refused vertical {op 0 (exp)} + {op 2 (mul)}: it would make a cycle: {op 1 (matmul)}") !=
      std::string::npos);

  // Horizontally: exp(x) and x + matmul(exp(x), w) read x over the same
  // space, but the second depends on the first through the matmul.
  ir::Program q = traced(
      [](const std::vector<Tensor>& in) {
        Tensor a = exp(in[0]);
        return std::vector<Tensor>{a, in[0] + matmul(a, in[1])};
      },
      {{{8, 8}, DType::f32, "x"}, {{8, 8}, DType::f32, "w"}});
  groups = plan(q, &log);
  CHECK(groups.size() == 2);
  CHECK(log.find("refused horizontal {op 0 (exp)} + {op 2 (add)}: it would make a cycle") !=
        std::string::npos);
}

TEST_CASE(
    "plan: horizontal fusion of independent groups reading the same input over the same space") {
  auto f = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{sum(in[0] * in[0], {1}, true), max(in[0], {1}, true), exp(in[1]),
                               sin(in[1])};
  };
  ir::Program p = traced(f, {{{-1, 64}, DType::f32, "x"}, {{-1, 64}, DType::f32, "y"}});
  auto groups = plan(p);
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].kind == GroupKind::reduce);
  CHECK(groups[0].outputs.size() == 2);  // the sum of squares and the max, one read of x
  CHECK(groups[1].kind == GroupKind::elementwise);
  CHECK(groups[1].outputs.size() == 2);
  check_plan("horizontal", p, groups);
  ir::Program q = traced(f, {{{-1, 64}, DType::f32, "x"}, {{-1, 64}, DType::f32, "y"}});
  CHECK(compiler::plan_fusion(q.block(), {.horizontal = false}, nullptr).size() == 4);
}

TEST_CASE("plan: reductions aligned through a reshape share a group; another axis set does not") {
  // sum(x, {2}) of x [4, 6, 8] and max(reshape(x, [24, 8]), {1}) reduce the
  // same 24 rows of 8; sum(x, {1, 2}) reduces 4 rows of 48.
  ir::Program p = traced(
      [](const std::vector<Tensor>& in) {
        const Tensor& x = in[0];
        Tensor a = sum(x, {2}, true);
        Tensor b = reshape(max(reshape(x, {24, 8}), {1}, true), {4, 6, 1});
        Tensor c = sum(x, {1, 2}, true);
        return std::vector<Tensor>{(b - a) * c};
      },
      {{{4, 6, 8}, DType::f32, "x"}});
  std::string log;
  auto groups = plan(p, &log);
  REQUIRE(groups.size() == 2);
  CHECK(count_ops(groups[0], "sum") == 1);
  CHECK(count_ops(groups[0], "max") == 1);
  CHECK(count_ops(groups[0], "sub") == 1);
  CHECK(log.find("reduce different axis sets") != std::string::npos);
  check_plan("reshape_alignment", p, groups);
}

TEST_CASE("plan: a column reduction stays out of groups, saying why") {
  ir::Program p = traced(
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{sum(exp(in[0]), {0})}; },
      {{{-1, 16}, DType::f32, "x"}});
  std::string log;
  auto groups = plan(p, &log);
  REQUIRE(groups.size() == 1);  // the exp alone
  CHECK(count_ops(groups[0], "sum") == 0);
  CHECK(count_ops(groups[0], "exp") == 1);
  CHECK(log.find("boundary: op 1 (sum) reduces axes [0] of [s0, 16], not the trailing ones") !=
        std::string::npos);
}

TEST_CASE("plan: axes aligned through a transpose; a reduction's result is never transposed") {
  // sum(exp(x)^T, {1}) for x [B, 16]: the transposed exp is a row reduction
  // over 16 rows of B (strided loads), one group with its prologue.
  ir::Program p = traced(
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{sum(transpose(exp(in[0]), {1, 0}), {1}, true)};
      },
      {{{-1, 16}, DType::f32, "x"}});
  auto groups = plan(p);
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].kind == GroupKind::reduce);
  CHECK(groups[0].ops.size() == 3);  // exp, transpose, sum
  check_plan("transpose_alignment", p, groups);

  // softmax(x)^T * 2: the transpose would read other rows' max and sum.
  ir::Program q = traced(
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{transpose(softmax(in[0], -1), {1, 0}) * 2.0};
      },
      {{{-1, 16}, DType::f32, "x"}});
  std::string log;
  groups = plan(q, &log);
  REQUIRE(groups.size() == 2);
  CHECK(count_ops(groups[0], "transpose") == 0);
  CHECK(count_ops(groups[1], "transpose") == 1);
  CHECK(log.find("permutes a value computed from the group's reductions") != std::string::npos);
}

TEST_CASE("plan: a decomposed transformer block, forward and backward") {
  ir::Trace t = ir::trace(block_fn, block_specs());
  ir::Program& p = t.program;
  decompose_all(p);
  SUBCASE(
      "forward: two layer_norms, the softmax (with its scale), bias+gelu and the residual adds") {
    auto groups = plan(p);
    size_t reduce_groups = 0;
    for (const Group& g : groups) reduce_groups += g.kind == GroupKind::reduce;
    CHECK(reduce_groups == 3);  // layer_norm, softmax, layer_norm
    for (const Group& g : groups) CHECK(count_ops(g, "matmul") == 0);
    check_plan("transformer_block", p, groups);
  }
  SUBCASE("backward (append_backward of mean(y^2) with respect to x and every weight)") {
    ir::Program q = oar_test::block_backward_program();
    std::string log;
    auto groups = plan(q, &log);
    // The loss mean(y^2) is one row: its backward's broadcast of the seed
    // over [B, 8, 16] goes to an elementwise group, not into that row.
    CHECK(log.find("would apply a reduction over everything to every element in one row") !=
          std::string::npos);
    size_t reduce_groups = 0;
    for (const Group& g : groups) reduce_groups += g.kind == GroupKind::reduce;
    CHECK(reduce_groups >= 6);  // forward 3 (+ the loss), layer_norm and softmax backward
    check_plan("transformer_block_backward", q, groups);
  }
}

TEST_CASE("plan: no group grows past max_ops") {
  // 100 chained exps: 64 in the first group, the other 36 in the second.
  ir::Program p = traced(
      [](const std::vector<Tensor>& in) {
        Tensor y = in[0];
        for (int i = 0; i < 100; ++i) y = exp(y);
        return std::vector<Tensor>{y};
      },
      {{{-1, 4}, DType::f32, "x"}});
  std::string log;
  auto groups = plan(p, &log);
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].ops.size() == 64);
  CHECK(groups[1].ops.size() == 36);
  CHECK(groups[1].inputs[0] == groups[0].outputs[0]);
  CHECK(log.find("more than max_ops = 64 operations") != std::string::npos);
  CHECK(compiler::plan_fusion(p.block(), {.max_ops = 10}, nullptr).size() == 10);
}

TEST_CASE("plan: bf16 RMSNorm (computed in f32 between casts) is one group") {
  ir::Program p = traced(
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{rms_norm(in[0], in[1])}; },
      {{{-1, 4096}, DType::bf16, "x"}, {{4096}, DType::bf16, "w"}});
  auto groups = plan(p);
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].kind == GroupKind::reduce);
  CHECK(count_ops(groups[0], "cast") == 3);  // x and w up, the result down
  CHECK(groups[0].ops.size() == p.block().size());
  REQUIRE(groups[0].outputs.size() == 1);
  CHECK(groups[0].outputs[0]->type().dtype == DType::bf16);
}

TEST_CASE(
    "plan: multi-head attention (heads by reshape and transpose): the scaled, masked softmax is "
    "one group") {
  // x [B, 8, 16] -> q, k, v [B, 2, 8, 8] (2 heads of 8); softmax over keys.
  ir::Program p = traced(
      [](const std::vector<Tensor>& in) {
        const Tensor &x = in[0], &w = in[1], &mask = in[2];
        auto heads = [](const Tensor& t) {
          return transpose(reshape(t, {-1, 8, 2, 8}), {0, 2, 1, 3});
        };
        Tensor q = heads(matmul(x, w)), k = heads(matmul(x * 2.0, w)),
               v = heads(matmul(x * 3.0, w));
        Tensor att = softmax(matmul(q, k, false, true) * 0.35 + mask, -1);
        return std::vector<Tensor>{reshape(transpose(matmul(att, v), {0, 2, 1, 3}), {-1, 8, 16})};
      },
      {{{-1, 8, 16}, DType::f32, "x"}, {{16, 16}, DType::f32, "w"}, {{8, 8}, DType::f32, "mask"}});
  auto groups = plan(p);
  const Group* softmax_group = nullptr;
  for (const Group& g : groups)
    if (count_ops(g, "max") == 1) softmax_group = &g;
  REQUIRE(softmax_group != nullptr);
  CHECK(softmax_group->kind == GroupKind::reduce);
  CHECK(count_ops(*softmax_group, "sum") == 1);
  CHECK(count_ops(*softmax_group, "exp") == 1);
  CHECK(count_ops(*softmax_group, "add") == 1);  // the mask
  REQUIRE(softmax_group->outputs.size() == 1);
  CHECK(softmax_group->outputs[0]->type().dims == std::vector<int64_t>{-1, 2, 8, 8});
  check_plan("multi_head_attention", p, groups);
}

namespace {

// A random program over a few shapes: elementwise ops with broadcasting,
// row and column reductions, reshapes, transposes and matmuls (opaque).
std::vector<Tensor> random_program(const std::vector<Tensor>& in, uint64_t seed) {
  uint64_t state = seed * 6364136223846793005ull + 1442695040888963407ull;
  auto next = [&](uint64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<size_t>((state >> 33) % n);
  };
  std::vector<Tensor> pool(in.begin(), in.end());
  auto pick = [&](const Shape& s) -> Tensor {
    std::vector<Tensor> fit;
    for (const Tensor& t : pool)
      if (t.shape() == s) fit.push_back(t);
    return fit.empty() ? Tensor() : fit[next(fit.size())];
  };
  for (int step = 0; step < 40; ++step) {
    const Tensor a = pool[next(pool.size())];
    Tensor out;
    switch (next(9)) {
      case 0:
        out = exp(a * 0.01);
        break;
      case 1:
      case 2: {
        Tensor b = pool[next(pool.size())];
        try {
          out = a + b;
        } catch (const Error&) {
          out = Tensor();
        }
        break;
      }
      case 3:
        if (a.dim() >= 1) out = sum(a, {a.dim() - 1}, true);
        break;
      case 4:
        if (a.dim() == 2) out = max(a, {0}, true);  // a column reduction
        break;
      case 5:
        if (a.shape() == Shape{4, 6})
          out = matmul(a, pick({6, 6}).defined() ? pick({6, 6}) : in[2]);
        break;
      case 6:
        if (a.dim() == 2) out = transpose(a, {1, 0});
        break;
      case 7:
        if (a.shape() == Shape{4, 6})
          out = reshape(a, {2, 2, 6});
        else if (a.shape() == Shape{2, 2, 6})
          out = reshape(a, {4, 6});
        break;
      case 8:
        if (a.shape() == Shape{4, 6}) out = a * sum(a, {1}, true);  // epilogue
        break;
    }
    if (out.defined()) pool.push_back(out);
  }
  return {pool.back(), pool[pool.size() / 2], pool[pool.size() - 3]};
}

}  // namespace

TEST_CASE(
    "plan: random programs give valid plans (a partition of fusible ops, acyclic, one row set per "
    "group)") {
  size_t fused_reductions = 0, merged = 0;  // the programs exercise the rules
  for (uint64_t seed = 0; seed < 60; ++seed) {
    INFO("seed " << seed);
    ir::Program p =
        traced([seed](const std::vector<Tensor>& in) { return random_program(in, seed); },
               {{{4, 6}, DType::f32, "x"}, {{4, 1}, DType::f32, "r"}, {{6, 6}, DType::f32, "w"}});
    auto groups = plan(p);
    for (const Group& g : groups) {
      // Every reduction of a group reduces the trailing axes of the same rows x cols.
      int64_t rows = -1, cols = -1;
      for (const ir::Operation* op : g.ops) {
        if (compiler::classify(*op) != compiler::OpClass::reduce) continue;
        const auto& dims = op->operand(0)->type().dims;
        const auto& axes = op->attrs().get_ints("axes");
        const size_t k = dims.size() - axes.size();
        for (size_t j = 0; j < axes.size(); ++j) CHECK(axes[j] == static_cast<int64_t>(k + j));
        int64_t r = 1, c = 1;
        for (size_t j = 0; j < dims.size(); ++j) (j < k ? r : c) *= dims[j];
        if (rows < 0) rows = r, cols = c;
        CHECK(r == rows);
        CHECK(c == cols);
      }
      CHECK((rows >= 0) == (g.kind == GroupKind::reduce));
      fused_reductions += rows >= 0 && g.ops.size() > 1;
      merged += g.ops.size() > 1;
      // Outputs cover the iteration space (or are per row).
      for (const ir::Value* out : g.outputs) {
        int64_t n = 1;
        for (int64_t d : out->type().dims) n *= d;
        if (rows >= 0)
          CHECK((n == rows * cols || n == rows));
        else
          CHECK(n == [&] {
            int64_t m = 1;
            for (int64_t d : g.outputs[0]->type().dims) m *= d;
            return m;
          }());
      }
    }
  }
  MESSAGE(merged << " groups of several ops, " << fused_reductions << " of them with reductions");
  CHECK(fused_reductions >= 30);
  CHECK(merged >= 60);
}

TEST_CASE("plan: a reduction without its axes attribute is planned, not a crash") {
  // Hand-built (the verifier would refuse it): exp -> sum (no "axes") -> exp.
  ir::Program p;
  ir::Value* x = p.add_input("x", {DType::f32, {4, 4}});
  auto& reg = OpRegistry::instance();
  ir::Value* a = p.append(reg.get("exp"), {x}, {}, {x->type()})->result();
  ir::Value* s = p.append(reg.get("sum"), {a}, {}, {x->type()})->result();
  p.add_output(p.append(reg.get("exp"), {s}, {}, {x->type()})->result());
  std::vector<Group> groups;
  CHECK_NOTHROW(groups = plan(p));
  CHECK(!groups.empty());
}
