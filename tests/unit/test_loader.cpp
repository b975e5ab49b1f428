// Plugin discovery and loading: broken plugins are skipped with one warning
// naming path and reason, and the process goes on; device selection.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "test_util.h"

namespace {

std::string test_plugin_dir() {
  const char* dir = std::getenv("OAR_TEST_PLUGIN_DIR");
  REQUIRE(dir != nullptr);
  return dir;
}

oar::RuntimeOptions only(const std::string& path) {
  oar::RuntimeOptions options;
  options.plugin_path = path;
  options.search_default_dirs = false;
  return options;
}

std::string reason_for(const oar::Runtime& rt, const std::string& file) {
  for (const auto& s : rt.skipped()) {
    if (s.path.find(file) != std::string::npos) return s.reason;
  }
  return "(not skipped)";
}


}  // namespace

using oar_test::run_command;

TEST_CASE("broken plugins are skipped with their reasons; good ones load") {
  oar::Runtime rt(only(test_plugin_dir()));
  CHECK(reason_for(rt, "liboar_test_garbage.so").find("not a loadable shared object") == 0);
  CHECK(reason_for(rt, "liboar_test_no_entry.so") == "it does not export the entry symbol 'oar_plugin_init'");
  CHECK(reason_for(rt, "liboar_test_wrong_major.so") == "incompatible ABI version (plugin: 2.3, host: 1.3)");
  CHECK(reason_for(rt, "liboar_test_init_fails.so") == "its init failed with status 4: minimal: init failed on purpose");
  CHECK(reason_for(rt, "liboar_test_dup_b.so").find("device type 'dupdev' is already provided by '") == 0);
  CHECK(reason_for(rt, "liboar_test_dup_b.so").find("liboar_test_dup_a.so") != std::string::npos);
  CHECK(rt.skipped().size() == 5);

  CHECK(rt.device_count("minimal") == 1);
  CHECK(rt.device_count("fastdev") == 2);
  CHECK(rt.device_count("dupdev") == 1);
  CHECK(rt.device_count("absentdev") == 0);  // zero devices is success
  CHECK(rt.device_count("majordev") == 0);
  CHECK(rt.device_count("faildev") == 0);
  CHECK(rt.kernel_ops("minimal") == std::vector<std::string>{"add"});
  // A failed init registers nothing, even what it registered before failing.
  CHECK(rt.kernel_ops("faildev").empty());
}

TEST_CASE("the default device is the best present one; OAR_DEVICE-style selection is checked") {
  oar::Runtime rt(only(test_plugin_dir()));
  // absentdev has the highest priority but no device; fastdev (5) beats minimal (1).
  CHECK(rt.default_device() == oar::Device{"fastdev", 0});
  CHECK(rt.device_types().front() == "absentdev");

  oar::RuntimeOptions options = only(test_plugin_dir());
  options.device = "minimal";
  CHECK(oar::Runtime(options).default_device() == oar::Device{"minimal", 0});
  options.device = "fastdev:1";
  CHECK(oar::Runtime(options).default_device() == oar::Device{"fastdev", 1});

  options.device = "cuda";
  std::string message = oar_test::error_of([&] { oar::Runtime bad(options); });
  CHECK(message.find("OAR_DEVICE='cuda' names a device that is not present") == 0);
  CHECK(message.find("fastdev:0, fastdev:1") != std::string::npos);
  CHECK(message.find("minimal:0") != std::string::npos);

  options.device = "fastdev:7";
  CHECK(oar_test::error_of([&] { oar::Runtime bad(options); }).find("not present") != std::string::npos);
  options.device = "fast dev:x";
  CHECK(oar_test::error_of([&] { oar::Runtime bad(options); }).find("is not a device") != std::string::npos);
  CHECK(oar_test::error_of([&] { rt.set_default_device({"minimal", 3}); })
            .find("device 'minimal:3' is not present; present devices:") == 0);
}

TEST_CASE("plugin path entries may be files; missing entries are reported") {
  std::string dir = test_plugin_dir();
  oar::Runtime rt(only(dir + "/liboar_test_ok.so:" + dir + "/does_not_exist"));
  CHECK(rt.plugins().size() == 1);
  CHECK(rt.device_count("minimal") == 1);
  CHECK(reason_for(rt, "does_not_exist") == "no such file or directory");
}

TEST_CASE("no plugins at all: zero devices, a clear error on use") {
  oar::Runtime rt(only(""));
  CHECK(rt.devices().empty());
  CHECK(oar_test::error_of([&] { rt.default_device(); }).find("no device is present") == 0);
}

TEST_CASE("`oar devices` prints one warning line per skipped plugin and goes on") {
  std::string bin = std::getenv("OAR_BIN_DIR");
  std::string out = run_command("OAR_PLUGIN_PATH=" + test_plugin_dir() + " " + bin + "/oar devices");
  auto count = [&](const std::string& needle) {
    size_t n = 0;
    for (size_t pos = out.find(needle); pos != std::string::npos; pos = out.find(needle, pos + 1)) ++n;
    return n;
  };
  CHECK(count("oar warning: skipping plugin '") == 5);
  CHECK(count("liboar_test_wrong_major.so': incompatible ABI version (plugin: 2.3, host: 1.3)\n") == 1);
  CHECK(count("liboar_test_garbage.so': not a loadable shared object") == 1);
  CHECK(out.find("device type 'fastdev': 2 devices") != std::string::npos);
  CHECK(out.find("minimal:0  minimal test device") != std::string::npos);
  // The real plugins of this build are found in the default directory.
  CHECK(out.find("device type 'cpu': 1 device") != std::string::npos);
  CHECK(out.find("device type 'mock': 2 devices") != std::string::npos);
  CHECK(out.find("Default device: fastdev:0") != std::string::npos);
}

TEST_CASE("`oar ops` tells native, decomposed and missing ops apart") {
  std::string bin = std::getenv("OAR_BIN_DIR");
  std::string out = run_command("OAR_PLUGIN_PATH=" + test_plugin_dir() + "/liboar_test_ok.so " + bin + "/oar ops --device minimal");
  CHECK(out.find("native kernels: add\n") != std::string::npos);
  CHECK(out.find("runs decomposed: ") != std::string::npos);
  CHECK(out.find("softmax") != std::string::npos);
  CHECK(out.find("missing (primitive without kernel): ") != std::string::npos);
}
