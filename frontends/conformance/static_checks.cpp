// Static mode on the plugin: programs traced once and run by the executor.
// Its kernels read and write views at non-zero byte offsets inside one
// arena, and with several streams they are ordered by the plugin's events,
// two things eager mode rarely exercises. Results are compared with the
// reference interpreter (op by op, eagerly) on the reference device.
#include <cmath>

#include "conformance.h"
#include "oar/ir/executor.h"
#include "oar/ir/interpreter.h"
#include "oar/ir/trace.h"
#include "op_specs.h"

namespace oar_conformance {

namespace {

using oar::DType;
using oar::Tensor;

// Host values of a float tensor.
std::vector<double> host_values(const Tensor& t) { return oar::cast(t, DType::f64).to_vector<double>(); }

Tensor random_tensor(const oar::Shape& shape, uint32_t seed, const oar::Device& d) {
  std::vector<float> v(static_cast<size_t>(oar::shape_numel(shape)));
  uint32_t s = seed * 2654435761u + 12345u;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>((s >> 8) * (1.0 / 16777216.0) * 2.0 - 1.0);
  }
  return Tensor::from_vector(v, shape, d);
}

// One program: several intermediates alive at once (arena offsets), a
// reduction, a scalar, a dynamic batch.
std::vector<Tensor> chain(const std::vector<Tensor>& in) {
  Tensor h = oar::matmul(in[0], in[1]) + in[2];
  Tensor y = oar::exp(oar::neg(h * h));
  Tensor z = y - h;
  return {z, oar::sum(z, {1}), y * 2.0};
}

// Two independent branches joined at the end (spread over streams).
std::vector<Tensor> branches(const std::vector<Tensor>& in) {
  Tensor a = oar::exp(oar::neg(oar::matmul(in[0], in[1])));
  Tensor b = oar::matmul(in[0], in[2]) * oar::matmul(in[0], in[2]);
  for (int i = 0; i < 3; ++i) {
    a = a * 0.5 + a;
    b = b - b * 0.25;
  }
  return {a + b, a, b};
}

struct Program {
  const char* name;
  std::vector<Tensor> (*fn)(const std::vector<Tensor>&);
  std::vector<oar::ir::InputSpec> specs;
  std::vector<oar::Shape> (*shapes)(int64_t batch);
  int streams;
};

std::string first_difference(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  if (got.size() != want.size()) {
    return "expected " + std::to_string(want.size()) + " elements, found " + std::to_string(got.size());
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(std::abs(got[i] - want[i]) <= tol + tol * std::abs(want[i]))) {
      return "element " + std::to_string(i) + ": expected " + std::to_string(want[i]) + ", found " +
             std::to_string(got[i]);
    }
  }
  return "";
}

}  // namespace

void run_static_checks(Suite& suite, const Devices& devices) {
  if (!devices.has_reference || suite.tier() == Tier::smoke) return;
  const std::vector<Program> programs = {
      {"static.executor", chain, {{{-1, 6}, DType::f32, "x"}, {{6, 5}, DType::f32, "w"}, {{5}, DType::f32, "b"}},
       [](int64_t n) { return std::vector<oar::Shape>{{n, 6}, {6, 5}, {5}}; }, 1},
      {"static.streams", branches, {{{-1, 4}, DType::f32, "x"}, {{4, 8}, DType::f32, "u"}, {{4, 8}, DType::f32, "v"}},
       [](int64_t n) { return std::vector<oar::Shape>{{n, 4}, {4, 8}, {4, 8}}; }, 2},
  };
  const double tol = tolerance(DType::f32) * 10;
  for (const Program& p : programs) {
    if (!suite.selected(p.name)) continue;
    suite.set_current(p.name);
    CheckResult r{.name = p.name};
    try {
      oar::ir::Trace t = oar::ir::trace(p.fn, p.specs, {}, devices.dut, {p.shapes(3)});
      oar::ir::Executor exec(t.program, devices.dut, {.num_streams = p.streams});
      // Batch sizes change between runs: the executor plans again.
      const int64_t batches[] = {3, 7, 3, 1};
      uint32_t seed = 1;
      for (int64_t batch : batches) {
        std::vector<Tensor> dut_in, ref_in;
        for (const oar::Shape& s : p.shapes(batch)) {
          Tensor host = random_tensor(s, seed++, devices.reference);
          ref_in.push_back(host);
          dut_in.push_back(host.to(devices.dut));
        }
        std::vector<Tensor> want = oar::ir::interpret(t.program, ref_in);
        std::vector<Tensor> got = exec.run(dut_in);
        ++r.cases;
        std::string diff;
        for (size_t k = 0; diff.empty() && k < want.size(); ++k) {
          diff = first_difference(host_values(got[k]), host_values(want[k]), tol);
          if (!diff.empty()) diff = "output " + std::to_string(k) + " at batch " + std::to_string(batch) + ": " + diff;
        }
        if (!diff.empty() && r.failed_cases++ == 0) {
          r.result = Result::fail;
          r.detail = diff + " (the executor's kernels see views at byte offsets inside one arena" +
                     std::string(p.streams > 1 ? " on several streams ordered by events" : "") + ")";
          r.failed_case = p.name;
        }
      }
      if (r.result == Result::pass) {
        r.detail = std::to_string(r.cases) + " runs of a traced program (" + std::to_string(t.program.block().size()) +
                   " ops, " + std::to_string(exec.num_streams()) + " stream" + (exec.num_streams() > 1 ? "s" : "") +
                   ") equal the reference";
      }
    } catch (const oar::Error& e) {
      if (e.code() == oar::ErrorCode::unsupported) {
        r.result = Result::skip;
        r.detail = std::string("the device cannot run the program: ") + e.what();
      } else {
        r.result = Result::fail;
        r.detail = e.what();
        r.failed_case = p.name;
      }
    }
    suite.add(std::move(r));
  }
  suite.set_current("");
}

}  // namespace oar_conformance
