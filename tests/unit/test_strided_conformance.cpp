// The strided.* conformance rows can fail: a kernel flagged
// OAR_KERNEL_STRIDED that ignores strides (tests/plugins/strided_liar_plugin.c,
// loaded for cpu ahead of the cpu plugin's exp) passes kernel.exp.f32, whose
// inputs are contiguous, and fails strided.exp.f32; the cpu plugin alone
// passes both.
#include <cstdlib>

#include "test_util.h"

namespace {

std::string bin_dir() {
  const char* dir = std::getenv("OAR_BIN_DIR");
  REQUIRE(dir != nullptr);
  return dir;
}

std::string conformance(const std::string& extra_plugin_path) {
  return oar_test::run_command("OAR_LOG_LEVEL=error OAR_PLUGIN_PATH=" + extra_plugin_path + " " + bin_dir() +
                               "/oar-conformance --plugin " + bin_dir() + "/../plugins/liboar_cpu.so --tier smoke" +
                               " --filter '^(kernel|strided)\\.exp\\.f32'");
}

// The table row of check `name` ("" when absent).
std::string row_of(const std::string& out, const std::string& name) {
  size_t at = out.find("\n" + name + " ");
  if (at == std::string::npos) return "";
  size_t end = out.find('\n', at + 1);
  return out.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
}

}  // namespace

TEST_CASE("strided.exp.f32 fails for a strided-flagged exp that ignores strides, and passes for the cpu plugin") {
  std::string liar = std::string(std::getenv("OAR_TEST_PLUGIN_DIR")) + "_kernels/liboar_test_strided_liar.so";
  std::string faulty = conformance(liar);
  INFO(faulty);
  CHECK(row_of(faulty, "kernel.exp.f32").find(" PASS ") != std::string::npos);
  CHECK(row_of(faulty, "strided.exp.f32").find(" FAIL   kernel flagged strided: case 0") != std::string::npos);

  std::string clean = conformance("");
  INFO(clean);
  CHECK(row_of(clean, "strided.exp.f32").find(" PASS   kernel flagged strided") != std::string::npos);
}
