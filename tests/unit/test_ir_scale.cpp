// The IR scales: the default pipeline (constant folding, CSE, DCE, each
// followed by the verifier) on a program of 100,000 operations runs in
// seconds, because use lists make every rewrite O(uses) and blocks erase in
// O(1) (the measured time is in bench/RESULTS.md, from bench_ir_scale).
// The small version checks the optimized program's numbers by hand.
#include <chrono>
#include <cmath>

#include "ir_scale_program.h"
#include "oar/ir/interpreter.h"
#include "oar/ir/pass.h"
#include "oar/ir/verifier.h"
#include "test_util.h"

using oar::Device;
using oar::Tensor;
using oar::ir::Operation;

namespace {

size_t count_ops(const oar::ir::Program& p, const std::string& name) {
  size_t n = 0;
  for (const auto& op : p.block().ops()) n += op->name() == name;
  return n;
}

}  // namespace

TEST_CASE("the default pipeline leaves 4 of each 10 operations and computes the same numbers") {
  oar::ir::Program p = oar_test::scale_program(3);
  REQUIRE(p.block().size() == 30);
  oar::ir::verify(p);
  Device cpu{"cpu", 0};
  CHECK(oar::ir::default_pipeline(cpu).run(p));
  CHECK(p.block().size() == 12);
  CHECK(count_ops(p, "add") == 6);  // a1 and h per repetition
  CHECK(count_ops(p, "mul") == 3);
  CHECK(count_ops(p, "sub") == 3);
  CHECK(p.constants().size() == 3);  // d of each repetition

  std::vector<float> x = {0.1f, -0.2f, 0.3f, 0.05f};
  std::vector<Tensor> inputs = {Tensor::from_vector<float>(x, {4}, cpu)};
  std::vector<double> got = oar_test::values(oar::ir::interpret(p, inputs).at(0));
  for (size_t i = 0; i < x.size(); ++i) {
    double h = x[i];
    for (int r = 0; r < 3; ++r) h = 2 * ((h + 0.25 * (r % 7)) * (h + 0.25 * (r % 7)) - h);
    CHECK(got[i] == doctest::Approx(h).epsilon(1e-5));
  }
}

TEST_CASE("the default pipeline on 100,000 operations takes seconds, not hours") {
  const int reps = 10000;
  auto start = std::chrono::steady_clock::now();
  oar::ir::Program p = oar_test::scale_program(reps);
  REQUIRE(p.block().size() == 100000);
  CHECK(oar::ir::default_pipeline(Device{"cpu", 0}).run(p));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE("build + default pipeline on 100,000 operations: " << seconds << " s");
  CHECK(p.block().size() == 4 * static_cast<size_t>(reps));
  CHECK(p.constants().size() == static_cast<size_t>(reps));
  CHECK(seconds < 20.0);  // generous: about a second on a loaded 2-core machine
}

TEST_CASE("decomposing 50,000 composite operations is linear too") {
  // x: f32[2, 4]; h = linear(h, w, b) 50,000 times; each becomes matmul + add.
  const int n = 50000;
  oar::ir::Program p;
  oar::ir::Value* h = p.add_input("x", {oar::DType::f32, {2, 4}});
  oar::ir::Value* w = p.add_parameter("w", {oar::DType::f32, {4, 4}});
  oar::ir::Value* b = p.add_parameter("b", {oar::DType::f32, {4}});
  const oar::OpDef& linear = oar::OpRegistry::instance().get("linear");
  for (int i = 0; i < n; ++i) {
    h = p.append(linear, {h, w, b}, {}, {oar::ir::TensorType{oar::DType::f32, {2, 4}}})->result();
  }
  p.add_output(h, "h");
  auto start = std::chrono::steady_clock::now();
  CHECK(oar::ir::make_decomposition_pass(std::set<std::string>{"linear"})->run(p));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE("decomposition of 50,000 linear operations: " << seconds << " s");
  oar::ir::verify(p);
  CHECK(p.block().size() == 2 * static_cast<size_t>(n));
  CHECK(count_ops(p, "matmul") == static_cast<size_t>(n));
  CHECK(count_ops(p, "add") == static_cast<size_t>(n));
  // In order: each add reads the matmul just before it, and the next matmul that add.
  const Operation* prev_add = nullptr;
  bool chained = true;
  for (auto it = p.block().begin(); it != p.block().end(); ++it) {
    const Operation* mm = *it;
    const Operation* add = *++it;
    chained = chained && mm->name() == "matmul" && add->operand(0) == mm->result() &&
              (prev_add ? mm->operand(0) == prev_add->result() : mm->operand(0) == p.inputs()[0]);
    prev_add = add;
  }
  CHECK(chained);
  CHECK(p.outputs()[0].value == prev_add->result());
  CHECK(seconds < 20.0);
}
