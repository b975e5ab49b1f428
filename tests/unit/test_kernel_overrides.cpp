// Kernels for another plugin's device type (Note [Kernel overrides]): they
// need a declared priority, the order they are tried in does not depend on
// load order, and who overrides whom is logged and shown by `oar ops`.
#include <cstdlib>
#include <string>
#include <vector>

#include "oar/op.h"
#include "runtime/runtime_state.h"
#include "test_util.h"

namespace {

std::string bin_dir() {
  const char* dir = std::getenv("OAR_BIN_DIR");
  REQUIRE(dir != nullptr);
  return dir;
}
std::string cpu_plugin() { return bin_dir() + "/../plugins/liboar_cpu.so"; }
std::string kernel_plugin(const std::string& name) {
  return std::string(std::getenv("OAR_TEST_PLUGIN_DIR")) + "_kernels/liboar_test_" + name + ".so";
}

oar::RuntimeOptions only(const std::string& path) {
  oar::RuntimeOptions options;
  options.plugin_path = path;
  options.search_default_dirs = false;
  return options;
}

// "provider:priority:owner" per implementation of `op` on cpu, in the order tried.
std::vector<std::string> order_of(const oar::Runtime& rt, const std::string& op) {
  std::vector<std::string> out;
  for (const auto& k : rt.kernel_providers("cpu")) {
    if (k.op != op) continue;
    std::string file = k.plugin_path.substr(k.plugin_path.rfind('/') + 1);
    std::string item = file + ":" + std::to_string(k.priority) + (k.owner ? ":owner" : "");
    if (out.empty() || out.back() != item) out.push_back(item);  // one per provider's run of dtype variants
  }
  return out;
}

// Runs the f32 `add` kernel cpu would pick on [1, 2] + [3, 4].
std::vector<float> run_add(const oar::Runtime& rt) {
  const oar::DeviceBackend* cpu = rt.state().find("cpu");
  REQUIRE(cpu != nullptr);
  const oar::DType f32[3] = {oar::DType::f32, oar::DType::f32, oar::DType::f32};
  const oar::KernelEntry* k =
      cpu->find_kernel(oar::OpRegistry::instance().find("add")->id, std::span(f32, 2), std::span(f32 + 2, 1));
  REQUIRE(k != nullptr);
  float a[2] = {1, 2}, b[2] = {3, 4}, y[2] = {0, 0};
  auto view = [](float* data) {
    OarTensorView v{};
    v.struct_size = sizeof v;
    v.data = data;
    v.dtype = OAR_DTYPE_F32;
    v.ndim = 1;
    v.shape[0] = 2;
    v.strides[0] = 1;
    return v;
  };
  OarTensorView inputs[2] = {view(a), view(b)};
  OarTensorView output = view(y);
  OarKernelContext ctx{};
  ctx.struct_size = sizeof ctx;
  ctx.num_inputs = 2;
  ctx.inputs = inputs;
  ctx.num_outputs = 1;
  ctx.outputs = &output;
  ctx.op_name = "add";
  oar::Attrs attrs;
  ctx.attrs = oar::attrs_handle(attrs);
  REQUIRE(k->fn(&ctx) == OAR_OK);
  return {y[0], y[1]};
}

}  // namespace

TEST_CASE("a kernel-only plugin with a declared priority overrides cpu's kernel, whatever the load order") {
  std::string cpu = cpu_plugin(), extra = kernel_plugin("override_666");
  oar::Runtime owner_first(only(cpu + ":" + extra));
  oar::Runtime extra_first(only(extra + ":" + cpu));
  for (const oar::Runtime* rt : {&owner_first, &extra_first}) {
    CHECK(rt->skipped().empty());
    CHECK(order_of(*rt, "add").front() == "liboar_test_override_666.so:10");
    CHECK(order_of(*rt, "add").back() == "liboar_cpu.so:0:owner");
    CHECK(order_of(*rt, "mse_loss") == std::vector<std::string>{"liboar_test_override_666.so:10"});
    CHECK(run_add(*rt) == std::vector<float>{666, 666});
  }
  CHECK(order_of(owner_first, "add") == order_of(extra_first, "add"));
  CHECK(owner_first.kernel_providers("cpu").size() == extra_first.kernel_providers("cpu").size());

  // Without it, cpu's own kernel runs: 1 + 3, 2 + 4.
  oar::Runtime plain(only(cpu));
  CHECK(run_add(plain) == std::vector<float>{4, 6});
  CHECK(order_of(plain, "add") == std::vector<std::string>{"liboar_cpu.so:0:owner"});
}

TEST_CASE("a kernel for another plugin's device type without a priority (ABI 1.0 descriptor) is refused") {
  oar::Runtime rt(only(kernel_plugin("override_v10") + ":" + cpu_plugin()));
  CHECK(rt.skipped().empty());  // the plugin loads; only its foreign kernels are dropped
  CHECK(rt.plugins().size() == 2);
  CHECK(order_of(rt, "add") == std::vector<std::string>{"liboar_cpu.so:0:owner"});
  CHECK(order_of(rt, "mse_loss").empty());
  CHECK(run_add(rt) == std::vector<float>{4, 6});
}

TEST_CASE("overrides are logged at info level and shown by `oar ops --device cpu`") {
  std::string extra = kernel_plugin("override_666");
  std::string out = oar_test::run_command("OAR_LOG_LEVEL=info OAR_PLUGIN_PATH=" + extra + " " + bin_dir() +
                                          "/oar ops --device cpu");
  CHECK(out.find("oar info: plugin '" + extra + "' overrides kernel 'add' of device type 'cpu' with priority 10: "
                 "it is tried before '") != std::string::npos);
  CHECK(out.find("liboar_cpu.so' (priority 0)\n") != std::string::npos);
  CHECK(out.find("oar info: plugin '" + extra + "' provides the only kernel 'mse_loss' of device type 'cpu'") !=
        std::string::npos);
  CHECK(out.find("  kernel providers (an op with several is tried in the order shown):\n") != std::string::npos);
  CHECK(out.find("    " + extra + ": add (priority 10; overrides ") != std::string::npos);
  CHECK(out.find("liboar_cpu.so) mse_loss (priority 10)\n") != std::string::npos);
  CHECK(out.find("liboar_cpu.so (owner): ") != std::string::npos);

  std::string v10 = oar_test::run_command("OAR_PLUGIN_PATH=" + kernel_plugin("override_v10") + " " + bin_dir() +
                                          "/oar ops --device cpu");
  CHECK(v10.find("oar warning: plugin '" + kernel_plugin("override_v10") +
                 "' registered kernel 'add' for device type 'cpu', which it does not provide, without a priority") !=
        std::string::npos);
  CHECK(v10.find("liboar_test_override_v10.so:") == std::string::npos);  // provides nothing
}
