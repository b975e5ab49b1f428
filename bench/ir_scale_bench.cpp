// How the IR scales (issue 12, "An IR that scales"): wall time of building
// a program of N operations (tests/ir_scale_program.h: 10 per repetition)
// and of each pass of the default pipeline on it, the verifier included,
// and of decomposing N/2 composite `linear` operations. Prints one JSON
// line per size, then a table.
//
//   bench_ir_scale [--ops 100000] [--sizes 10000,30000,100000] [--repeat 3]
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "ir_scale_program.h"
#include "oar/ir/pass.h"
#include "oar/ir/verifier.h"
#include "oar/oar.h"

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Times {
  double build = 0, fold = 0, cse = 0, dce = 0, verify = 0, total = 0, total_cpu = 0, decompose = 0;
};

// x: f32[2, 4]; N/2 times h = linear(h, w, b), with w: f32[4, 4], b: f32[4].
oar::ir::Program linear_chain(int n) {
  using oar::ir::TensorType;
  oar::ir::Program p;
  oar::ir::Value* h = p.add_input("x", {oar::DType::f32, {2, 4}});
  oar::ir::Value* w = p.add_parameter("w", {oar::DType::f32, {4, 4}});
  oar::ir::Value* b = p.add_parameter("b", {oar::DType::f32, {4}});
  const oar::OpDef& linear = oar::OpRegistry::instance().get("linear");
  for (int i = 0; i < n; ++i) h = p.append(linear, {h, w, b}, {}, {TensorType{oar::DType::f32, {2, 4}}})->result();
  p.add_output(h, "h");
  return p;
}

Times measure(int ops) {
  oar::Device cpu{"cpu", 0};
  Times t;
  const std::clock_t c0 = std::clock();
  auto t0 = Clock::now();
  oar::ir::Program p = oar_test::scale_program(ops / 10);
  t.build = since(t0);
  auto step = [&](std::unique_ptr<oar::ir::Pass> pass, double& slot) {
    auto s = Clock::now();
    pass->run(p);
    slot = since(s);
    s = Clock::now();
    oar::ir::verify(p);
    t.verify += since(s);
  };
  step(oar::ir::make_constant_folding_pass(cpu), t.fold);
  step(oar::ir::make_cse_pass(), t.cse);
  step(oar::ir::make_dce_pass(), t.dce);
  t.total = since(t0);
  t.total_cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  if (p.block().size() != static_cast<size_t>(ops / 10 * 4)) {
    throw std::runtime_error("bench_ir_scale: the pipeline left " + std::to_string(p.block().size()) +
                             " operations, expected " + std::to_string(ops / 10 * 4));
  }
  oar::ir::Program q = linear_chain(ops / 2);
  auto d0 = Clock::now();
  oar::ir::make_decomposition_pass(std::set<std::string>{"linear"})->run(q);
  t.decompose = since(d0);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes = {10000, 30000, 100000};
  int repeat = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string arg = argv[i], value = argv[i + 1];
    if (arg == "--sizes" || arg == "--ops") {
      sizes.clear();
      std::stringstream ss(value);
      for (std::string item; std::getline(ss, item, ',');) sizes.push_back(std::stoi(item));
    } else if (arg == "--repeat") {
      repeat = std::stoi(value);
    } else {
      std::fprintf(stderr, "bench_ir_scale: unknown argument '%s'\n", arg.c_str());
      return 2;
    }
  }
  std::vector<std::pair<int, Times>> rows;
  for (int ops : sizes) {
    std::vector<Times> runs;
    for (int r = 0; r < repeat; ++r) runs.push_back(measure(ops));
    // The run with the median total time.
    std::sort(runs.begin(), runs.end(), [](const Times& a, const Times& b) { return a.total < b.total; });
    const Times& m = runs[runs.size() / 2];
    std::printf(
        "{\"bench\": \"ir_scale\", \"ops\": %d, \"build_s\": %.3f, \"fold_s\": %.3f, \"cse_s\": %.3f, "
        "\"dce_s\": %.3f, \"verify_s\": %.3f, \"pipeline_total_s\": %.3f, \"pipeline_total_cpu_s\": %.3f, "
        "\"decompose_linear_s\": %.3f}\n",
        ops, m.build, m.fold, m.cse, m.dce, m.verify, m.total, m.total_cpu, m.decompose);
    rows.emplace_back(ops, m);
  }
  std::printf("\nseconds (wall; cpu = process CPU time of build + pipeline)\n");
  std::printf("%8s %7s %7s %7s %7s %7s %7s %7s %14s\n", "ops", "build", "fold", "cse", "dce", "verify", "total", "cpu",
              "decompose N/2");
  for (const auto& [ops, m] : rows) {
    std::printf("%8d %7.3f %7.3f %7.3f %7.3f %7.3f %7.3f %7.3f %14.3f\n", ops, m.build, m.fold, m.cse, m.dce, m.verify,
                m.total, m.total_cpu, m.decompose);
  }
  return 0;
}
