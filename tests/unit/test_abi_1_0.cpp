// A plugin compiled against the frozen ABI 1.0 header (tests/abi_1_0) loads
// into this host and runs, and the host reads none of the fields 1.1
// appended to its kernel descriptors (their bytes are 0xFF in the plugin).
// The conformance suite runs against it too (ctest conformance_abi_1_0).
#include <complex>
#include <cstdlib>
#include <string>
#include <vector>

#include "oar/op.h"
#include "runtime/runtime_state.h"
#include "test_util.h"

using oar::Device;
using oar::DType;
using oar::Tensor;

namespace {

std::string abi10_plugin() {
  const char* dir = std::getenv("OAR_BIN_DIR");
  REQUIRE(dir != nullptr);
  return std::string(dir) + "/../test_plugins_abi10/liboar_test_abi10.so";
}

oar::RuntimeOptions only(const std::string& path) {
  oar::RuntimeOptions options;
  options.plugin_path = path;
  options.search_default_dirs = false;
  return options;
}

}  // namespace

TEST_CASE("an ABI 1.0 plugin loads as 1.0, with the 1.1 descriptor fields it lacks left at their defaults") {
  oar::Runtime rt(only(abi10_plugin()));
  REQUIRE(rt.plugins().size() == 1);
  CHECK(rt.skipped().empty());
  const oar::PluginRecord& p = rt.plugins()[0];
  CHECK(p.abi_major == 1);
  CHECK(p.abi_minor == 0);
  CHECK(p.name == "abi10-test");
  CHECK(p.num_kernels == 6);
  CHECK(rt.device_count("abi10") == 1);
  CHECK(rt.kernel_ops("abi10") == std::vector<std::string>{"add", "div", "exp", "mul", "neg", "sub"});
  // Reading past struct_size would give priority -1 (0xFFFFFFFF).
  for (const oar::KernelProvider& k : rt.kernel_providers("abi10")) {
    INFO("kernel " << k.op);
    CHECK(k.priority == 0);
    CHECK(k.owner);
  }
  const oar::DeviceBackend* b = rt.state().find("abi10");
  REQUIRE(b != nullptr);
  // The 1.0 device table leaves streams and events NULL: the runtime uses the default stream.
  CHECK_FALSE(bool(b->api.stream_create));
  CHECK_FALSE(bool(b->api.event_create));
  CHECK(b->slots.at(0).stream == nullptr);
}

TEST_CASE("eager ops run on the ABI 1.0 plugin's kernels with 1.1 kernel contexts") {
  setenv("OAR_PLUGIN_PATH", abi10_plugin().c_str(), 1);
  oar::Runtime& rt = oar::Runtime::global();
  REQUIRE(rt.device_count("abi10") == 1);
  Device dev{"abi10", 0};
  Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}, dev);
  Tensor y = Tensor::from_vector(std::vector<float>{10, 20, 30}, {3}, dev);
  CHECK((x + y).to_vector<float>() == std::vector<float>{11, 22, 33, 14, 25, 36});  // y broadcast over rows
  CHECK((y - x).to_vector<float>() == std::vector<float>{9, 18, 27, 6, 15, 24});
  CHECK((x * y).to_vector<float>() == std::vector<float>{10, 40, 90, 40, 100, 180});
  CHECK(oar::neg(x).to_vector<float>() == std::vector<float>{-1, -2, -3, -4, -5, -6});
  std::vector<float> e = oar::exp(Tensor::from_vector(std::vector<float>{0, 1}, {2}, dev)).to_vector<float>();
  CHECK(e[0] == 1.0f);
  CHECK(e[1] == doctest::Approx(2.718281828).epsilon(1e-6));
  // No kernel for this dtype: the usual sentence, not a crash.
  Tensor i = Tensor::from_vector(std::vector<int32_t>{1, 2}, {2}, dev);
  CHECK(oar_test::error_of([&] { i + i; }).find("add: device type 'abi10' has no kernel for dtypes (int32, int32)") == 0);
}

// Note [Complex dtypes and older plugins]: a kernel of a plugin built before
// ABI 1.3 registered for any dtype (null lists or OAR_DTYPE_ANY) was written
// for the real dtypes: it never matches a complex tensor.
TEST_CASE("an older plugin's any-dtype kernel never matches complex dtypes") {
  using oar::DType;
  oar::KernelEntry any;
  any.any_inputs = any.any_outputs = true;
  oar::KernelEntry pattern;
  pattern.input_dtypes = {OAR_DTYPE_ANY};
  pattern.output_dtypes = {OAR_DTYPE_ANY};
  for (oar::KernelEntry* k : {&any, &pattern}) {
    k->knows_complex = true;  // built with ABI >= 1.3
    CHECK(k->matches(std::vector<DType>{DType::c64}, std::vector<DType>{DType::f32}));
    k->knows_complex = false;  // an ABI 1.0-1.2 plugin
    CHECK_FALSE(k->matches(std::vector<DType>{DType::c64}, std::vector<DType>{DType::f32}));
    CHECK_FALSE(k->matches(std::vector<DType>{DType::f32}, std::vector<DType>{DType::c128}));
    CHECK(k->matches(std::vector<DType>{DType::f32}, std::vector<DType>{DType::f32}));
  }
}
