// ABI 1.1 kernel fall-through (Note [Kernel fall-through] in
// core/src/dispatch/kernel_launch.h) in eager and static mode, with the
// declining test plugin (tests/plugins/declining_plugin.c) loaded for cpu;
// and static mode on a device table whose stream and event entries are NULL.
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "oar/ir/executor.h"
#include "oar/ir/trace.h"
#include "ops/op_util.h"
#include "runtime/runtime_state.h"
#include "test_util.h"

using oar::Device;
using oar::DType;
using oar::Shape;
using oar::Tensor;
using oar_test::error_of;
namespace ir = oar::ir;

namespace {

// The global runtime loads the declining plugin besides the default ones
// (set before anything asks for the runtime).
const bool kPluginPathSet = [] {
  const char* dir = std::getenv("OAR_TEST_PLUGIN_DIR");
  if (!dir) return false;
  std::string path = std::string(dir) + "_fallthrough/liboar_test_decline.so";
  return setenv("OAR_PLUGIN_PATH", path.c_str(), 1) == 0;
}();

const Device kCpu{"cpu", 0};

Tensor f32(const std::vector<float>& v) { return Tensor::from_vector(v, {static_cast<int64_t>(v.size())}, kCpu); }

std::vector<float> iota(int n, float start) {
  std::vector<float> v;
  for (int i = 0; i < n; ++i) v.push_back(start + static_cast<float>(i));
  return v;
}

// A primitive op only the declining plugin implements (no decomposition).
const oar::OpDef& probe_op() { return oar::OpRegistry::instance().get("fallthrough_probe"); }
Tensor probe(const Tensor& x) { return oar::apply1(probe_op(), std::vector<Tensor>{x}); }

std::set<std::string> op_names(const ir::Program& p) {
  std::set<std::string> names;
  for (const auto& op : p.block().ops()) names.insert(op->name());
  return names;
}

float mse(const std::vector<float>& a, const std::vector<float>& b) {
  float s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
  return s / static_cast<float>(a.size());
}

const std::string kProbeError3 =
    "fallthrough_probe: device type 'cpu' has no kernel for dtypes (float32) -> (float32) that accepts "
    "shapes ([3]) -> ([3]): the implementations of 'liboar_test_decline.so' declined it and the op has no "
    "decomposition";

}  // namespace

OAR_REGISTER_OPS(fallthrough_test) {
  oar::add_op({.name = "fallthrough_probe", .meta = oar::meta::same_as_input, .differentiable = false});
}

TEST_CASE("fall-through: the declining plugin is loaded and tried before cpu's own add") {
  REQUIRE(kPluginPathSet);
  bool found = false;
  for (const auto& p : oar::Runtime::global().plugins())
    found = found || p.path.find("liboar_test_decline.so") != std::string::npos;
  REQUIRE(found);
  const oar::DeviceBackend* cpu = oar::Runtime::global().state().find("cpu");
  REQUIRE(cpu != nullptr);
  const auto& list = cpu->kernels_by_op[static_cast<size_t>(oar::OpRegistry::instance().get("add").id)];
  REQUIRE(list.size() >= 2);
  CHECK(static_cast<bool>(list.front().accepts));  // ABI 1.1 descriptor: kept by the loader
  CHECK(list.front().priority == 20);
  CHECK(list.back().owner);
  CHECK_FALSE(static_cast<bool>(list.back().accepts));
}

TEST_CASE("fall-through in eager mode: declined shapes run the next kernel, then the decomposition, then fail") {
  // add: even counts run the plugin (a + b + 1000), odd counts and
  // broadcasts fall through to cpu's add.
  CHECK(oar::add(f32({1, 2, 3, 4}), f32({10, 20, 30, 40})).to_vector<float>() ==
        std::vector<float>{1011, 1022, 1033, 1044});
  CHECK(oar::add(f32({1, 2, 3}), f32({10, 20, 30})).to_vector<float>() == std::vector<float>{11, 22, 33});
  Tensor m = Tensor::from_vector(iota(6, 0), {2, 3}, kCpu);
  CHECK(oar::add(m, f32({100, 200, 300})).to_vector<float>() == std::vector<float>{100, 201, 302, 103, 204, 305});

  // mse_loss (composite, no cpu kernel): the plugin's 777, or the decomposition.
  CHECK(oar::mse_loss(f32({1, 2, 3, 4}), f32({0, 0, 0, 0})).to_vector<float>()[0] == 777.0f);
  CHECK(oar::mse_loss(f32({1, 2, 4}), f32({0, 1, 1})).to_vector<float>()[0] == doctest::Approx((1 + 1 + 9) / 3.0));

  // fallthrough_probe (primitive, nothing else implements it).
  CHECK(probe(f32({1, 2, 3, 4})).to_vector<float>() == std::vector<float>{2, 4, 6, 8});
  CHECK(error_of([] { probe(f32({1, 2, 3})); }) == kProbeError3);
}

TEST_CASE("fall-through in static mode: kernels are asked once per planned shapes") {
  auto fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{in[0] + in[1], oar::mse_loss(in[0], in[1])};
  };
  for (int n : {4, 3}) {
    CAPTURE(n);
    ir::Trace t = ir::trace(fn, {{{n}, DType::f32, "x"}, {{n}, DType::f32, "y"}}, {}, kCpu);
    ir::Executor exec(t.program, kCpu);
    std::vector<float> x = iota(n, 1), y = iota(n, -2);
    std::vector<Tensor> got = exec.run(std::vector<Tensor>{f32(x), f32(y)});
    std::vector<float> sum;
    for (int i = 0; i < n; ++i) sum.push_back(x[static_cast<size_t>(i)] + y[static_cast<size_t>(i)] + (n % 2 == 0 ? 1000.0f : 0.0f));
    CHECK(got[0].to_vector<float>() == sum);
    if (n % 2 == 0) {
      CHECK(got[1].to_vector<float>()[0] == 777.0f);
      CHECK(op_names(exec.program()).count("mse_loss") == 1);
    } else {
      CHECK(got[1].to_vector<float>()[0] == doctest::Approx(mse(x, y)));  // 9 each: x - y = 3
      CHECK(op_names(exec.program()).count("mse_loss") == 0);     // decomposed for these shapes
    }
  }

  // One program with a dynamic dim: each batch size asks the kernels anew.
  ir::Trace dyn = ir::trace(fn, {{{-1}, DType::f32, "x"}, {{-1}, DType::f32, "y"}}, {}, kCpu, {{4}, {4}});
  ir::Executor exec(dyn.program, kCpu);
  for (int n : {4, 3, 6, 5}) {
    CAPTURE(n);
    std::vector<float> x = iota(n, 0), y(static_cast<size_t>(n), 1.0f);
    std::vector<Tensor> got = exec.run(std::vector<Tensor>{f32(x), f32(y)});
    CHECK(got[0].to_vector<float>()[0] == (n % 2 == 0 ? 1001.0f : 1.0f));
    CHECK(got[1].to_vector<float>()[0] == doctest::Approx(n % 2 == 0 ? 777.0f : mse(x, y)));
  }

  // A declined primitive without a decomposition fails when the shapes are planned.
  auto pf = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{probe(in[0])}; };
  ir::Trace pt = ir::trace(pf, {{{-1}, DType::f32, "x"}}, {}, kCpu, {{2}});
  ir::Executor pe(pt.program, kCpu);
  CHECK(pe.run(std::vector<Tensor>{f32({1, 2})})[0].to_vector<float>() == std::vector<float>{2, 4});
  CHECK(error_of([&] { pe.run(std::vector<Tensor>{f32({1, 2, 3})}); }) == kProbeError3);
}

TEST_CASE("static mode on a device whose stream and event entries are NULL uses one in-order stream") {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor a = oar::exp(in[0]) * 2.0;
    Tensor b = oar::sin(in[1]) + 1.0;
    return std::vector<Tensor>{a + b, a, b};
  };
  ir::Trace t = ir::trace(fn, {{{5}, DType::f32, "x"}, {{5}, DType::f32, "y"}}, {}, kCpu);
  std::vector<float> x = iota(5, 0), y = iota(5, 1);
  Tensor tx = f32(x), ty = f32(y);  // made (and read below) with the real table
  oar::DeviceBackend& cpu = *oar::Runtime::global().state().find("cpu");
  OarDeviceApi saved = cpu.api;
  // As the ABI allows: no streams, no events (a call to one would crash).
  cpu.api.stream_create = nullptr;
  cpu.api.stream_destroy = nullptr;
  cpu.api.stream_synchronize = nullptr;
  cpu.api.event_create = nullptr;
  cpu.api.event_destroy = nullptr;
  cpu.api.event_record = nullptr;
  cpu.api.stream_wait_event = nullptr;
  std::vector<Tensor> got;
  int streams = 0;
  std::set<int> used;
  {
    ir::Executor exec(t.program, kCpu, {.num_streams = 3});
    exec.run(std::vector<Tensor>{ty, tx});
    got = exec.run(std::vector<Tensor>{tx, ty});  // a second run with the plan in place
    streams = exec.num_streams();
    for (const auto& ins : exec.instructions()) used.insert(ins.stream);
  }
  cpu.api = saved;
  CHECK(streams == 1);
  CHECK(used == std::set<int>{0});
  std::vector<Tensor> want = fn({f32(x), f32(y)});
  REQUIRE(got.size() == 3);
  for (size_t i = 0; i < 3; ++i) CHECK(got[i].to_vector<float>() == want[i].to_vector<float>());
}
