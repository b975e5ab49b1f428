// The plugin probe (Note [Plugin probe]): plugins that crash, abort, exit or
// hang in init are skipped with their signal or exit code, the process
// lives and still loads the good ones; probe outcomes are cached; a plugin
// whose needed library is missing is skipped naming that library.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "runtime/probe_cache.h"
#include "runtime/probe_report.h"
#include "test_util.h"

namespace fs = std::filesystem;

namespace {

std::string hostile_dir() {
  const char* dir = std::getenv("OAR_TEST_PLUGIN_DIR");
  REQUIRE(dir != nullptr);
  return std::string(dir) + "_hostile";
}

std::string bin_dir() {
  const char* dir = std::getenv("OAR_BIN_DIR");
  REQUIRE(dir != nullptr);
  return dir;
}

oar::RuntimeOptions only(const std::string& path, double timeout_s = 2) {
  oar::RuntimeOptions options;
  options.plugin_path = path;
  options.search_default_dirs = false;
  options.probe_timeout_s = timeout_s;
  return options;
}

std::string reason_for(const oar::Runtime& rt, const std::string& file) {
  for (const auto& s : rt.skipped()) {
    if (s.path.find(file) != std::string::npos) return s.reason;
  }
  return "(not skipped)";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A fresh directory for one test's files.
std::string temp_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("oar_probe_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

const char* kNeedsLib =
    "it needs the shared library 'liboar_test_dep.so', which was not found (install it, or add its "
    "directory to LD_LIBRARY_PATH)";

}  // namespace

using oar_test::run_command;

TEST_CASE("plugins that crash, abort, exit or hang in init are skipped with the reason; good ones load") {
  auto start = std::chrono::steady_clock::now();
  oar::Runtime rt(only(hostile_dir()));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(reason_for(rt, "liboar_test_segv.so") ==
        "its probe process was killed by signal 11 (SIGSEGV) during oar_plugin_init");
  CHECK(reason_for(rt, "liboar_test_abort.so") ==
        "its probe process was killed by signal 6 (SIGABRT) during oar_plugin_init");
  CHECK(reason_for(rt, "liboar_test_exit.so") == "its probe process exited with code 3 during oar_plugin_init");
  CHECK(reason_for(rt, "liboar_test_hang.so") ==
        "its probe process did not finish within 2 s (OAR_PLUGIN_PROBE_TIMEOUT) during oar_plugin_init; it was killed");
  // Passed the probe (init returned), then failed init in this process too.
  CHECK(reason_for(rt, "liboar_test_thread_fails.so") ==
        "its init failed with status 4: minimal: init started a thread, then failed");
  CHECK(reason_for(rt, "liboar_test_needs_lib.so") == kNeedsLib);
  CHECK(rt.skipped().size() == 6);
  CHECK(rt.device_count("survivor") == 1);
  CHECK(rt.device_types() == std::vector<std::string>{"survivor"});
  // The probes run side by side: the hang costs its 2 s limit once, not more
  // (a generous bound for a loaded machine).
  CHECK(seconds < 30);
  // The thread the failed init started keeps running the plugin's code.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

TEST_CASE("a plugin whose init starts a thread and fails does not crash the host, probe or not") {
  std::string dir = hostile_dir();
  oar::RuntimeOptions options = only(dir + "/liboar_test_thread_fails.so:" + dir + "/liboar_test_survivor.so");
  options.probe_plugins = false;  // the probe does not guard this case: the loader must
  {
    oar::Runtime rt(options);
    CHECK(reason_for(rt, "liboar_test_thread_fails.so").find("its init failed with status 4") == 0);
    CHECK(rt.device_count("survivor") == 1);
  }
  // The failed plugin's thread is still ticking in its (still mapped) code.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(oar::Runtime(options).device_count("survivor") == 1);
}

TEST_CASE("`oar devices` survives hostile plugins and names each one's fault; without the probe it dies") {
  std::string env = "OAR_PLUGIN_PATH=" + hostile_dir() + " OAR_PLUGIN_PROBE_TIMEOUT=2 OAR_PLUGIN_PROBE_CACHE= ";
  std::string out = run_command(env + bin_dir() + "/oar devices 2>&1; echo \"exit=$?\"");
  CHECK(out.find("liboar_test_segv.so': its probe process was killed by signal 11 (SIGSEGV) during oar_plugin_init\n") !=
        std::string::npos);
  CHECK(out.find("liboar_test_exit.so': its probe process exited with code 3 during oar_plugin_init\n") !=
        std::string::npos);
  CHECK(out.find("liboar_test_needs_lib.so': " + std::string(kNeedsLib) + "\n") != std::string::npos);
  CHECK(out.find("device type 'survivor': 1 device") != std::string::npos);
  CHECK(out.find("device type 'cpu': 1 device") != std::string::npos);  // the build's own plugins too
  CHECK(out.find("exit=0") != std::string::npos);

  // What the probe prevents: the same crash takes the unprobed process down.
  std::string unprobed = run_command("OAR_PLUGIN_PROBE=0 OAR_PLUGIN_PATH=" + hostile_dir() +
                                     "/liboar_test_segv.so " + bin_dir() + "/oar devices 2>&1; echo \"exit=$?\"");
  CHECK(unprobed.find("exit=139") != std::string::npos);  // 128 + SIGSEGV
  CHECK(unprobed.find("Plugins loaded") == std::string::npos);
}

TEST_CASE("the missing library is named; with it on LD_LIBRARY_PATH the plugin loads") {
  std::string lib_dir = fs::path(hostile_dir()).parent_path().string() + "/test_plugin_deps";
  std::string plugin = hostile_dir() + "/liboar_test_needs_lib.so";
  oar::Runtime rt(only(plugin));
  CHECK(reason_for(rt, "liboar_test_needs_lib.so") == kNeedsLib);
  std::string out = run_command("LD_LIBRARY_PATH=" + lib_dir + " OAR_PLUGIN_PROBE_CACHE= OAR_PLUGIN_PATH=" + plugin +
                                " " + bin_dir() + "/oar devices");
  CHECK(out.find("device type 'needslibdev': 1 device") != std::string::npos);
  CHECK(out.find("skipping plugin") == std::string::npos);
}

TEST_CASE("probe outcomes are cached by path, size and mtime; a damaged cache is ignored") {
  std::string dir = temp_dir("cache");
  // Copies, so the test may replace a plugin file under the same path.
  fs::copy_file(hostile_dir() + "/liboar_test_segv.so", dir + "/liboar_a.so");
  fs::copy_file(hostile_dir() + "/liboar_test_survivor.so", dir + "/liboar_b.so");
  fs::copy_file(hostile_dir() + "/liboar_test_hang.so", dir + "/liboar_c.so");
  fs::copy_file(hostile_dir() + "/liboar_test_needs_lib.so", dir + "/liboar_d.so");
  oar::RuntimeOptions options = only(dir, 1);
  options.probe_cache_file = dir + "/cache/probe.cache";

  const std::string crash = "its probe process was killed by signal 11 (SIGSEGV) during oar_plugin_init";
  {
    oar::Runtime rt(options);
    CHECK(reason_for(rt, "liboar_a.so") == crash);
    CHECK(rt.device_count("survivor") == 1);
  }
  std::string cache = read_file(options.probe_cache_file);
  CHECK(cache.find("oar-plugin-probe-cache 2 abi 1.3\n") == 0);
  CHECK(cache.find("fail\t") != std::string::npos);
  CHECK(cache.find("/liboar_a.so\t" + crash + "\t") != std::string::npos);
  CHECK(cache.find("/liboar_b.so\t\t") != std::string::npos);  // a pass
  CHECK(cache.find("/libc.so.6") != std::string::npos);  // with the libraries the probe saw
  CHECK(cache.find("liboar_c.so") == std::string::npos);      // a timeout is never cached
  CHECK(cache.find("liboar_d.so") == std::string::npos);      // nor a plugin that did not load
  {
    oar::Runtime rt(options);
    CHECK(reason_for(rt, "liboar_a.so") == crash + " (remembered from an earlier probe of this file)");
    CHECK(rt.device_count("survivor") == 1);
  }

  // A new file under the same path is probed afresh: now it is a good plugin.
  fs::remove(dir + "/liboar_a.so");
  fs::copy_file(std::string(std::getenv("OAR_TEST_PLUGIN_DIR")) + "/liboar_test_ok.so", dir + "/liboar_a.so");
  fs::remove(dir + "/liboar_c.so");
  {
    oar::Runtime rt(options);
    CHECK(reason_for(rt, "liboar_a.so") == "(not skipped)");
    CHECK(rt.device_count("minimal") == 1);
  }

  // Damaged caches are ignored as a whole and rewritten.
  for (std::string garbage : {std::string("not a cache\n"),
                              "oar-plugin-probe-cache 2 abi 1.3\npass\t12\tx\t" + dir + "/liboar_a.so\t\n",
                              "oar-plugin-probe-cache 2 abi 1.3\nfail\t1\t2\t" + dir + "/liboar_a.so\n",
                              "oar-plugin-probe-cache 2 abi 1.3\npass\t1\t2\t" + dir + "/liboar_a.so\t\tno-library\n",
                              std::string("oar-plugin-probe-cache 1 abi 9.9\n"), std::string(2 << 20, '\t')}) {
    std::ofstream(options.probe_cache_file, std::ios::binary) << garbage;
    oar::Runtime rt(options);
    CHECK(rt.device_count("minimal") == 1);
    CHECK(rt.device_count("survivor") == 1);
    CHECK(read_file(options.probe_cache_file).find("oar-plugin-probe-cache 2 abi 1.3\npass\t") == 0);
  }
  fs::remove_all(dir);
}

TEST_CASE("a cached pass for a file of another size or mtime is not used") {
  // The key is the file: an entry written for what used to be at this path
  // (here a forged "pass") does not vouch for the crashing plugin there now.
  std::string dir = temp_dir("forged");
  fs::copy_file(hostile_dir() + "/liboar_test_segv.so", dir + "/liboar_a.so");
  oar::RuntimeOptions options = only(dir);
  options.probe_cache_file = dir + "/probe.cache";
  std::string canonical = fs::canonical(dir + "/liboar_a.so").string();
  std::ofstream(options.probe_cache_file) << "oar-plugin-probe-cache 2 abi 1.3\npass\t1\t1\t" << canonical << "\t\n";
  oar::Runtime rt(options);
  CHECK(reason_for(rt, "liboar_a.so").find("killed by signal 11 (SIGSEGV)") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("probe settings from the environment are checked") {
  setenv("OAR_PLUGIN_PROBE_TIMEOUT", "abc", 1);
  CHECK(oar_test::error_of([] { oar::Runtime::options_from_env(); }) ==
        "OAR_PLUGIN_PROBE_TIMEOUT='abc' is not a number of seconds in (0, 86400]");
  setenv("OAR_PLUGIN_PROBE_TIMEOUT", "-1", 1);
  CHECK(oar_test::error_of([] { oar::Runtime::options_from_env(); }).find("is not a number of seconds") !=
        std::string::npos);
  setenv("OAR_PLUGIN_PROBE_TIMEOUT", "0.5", 1);
  CHECK(oar::Runtime::options_from_env().probe_timeout_s == 0.5);
  unsetenv("OAR_PLUGIN_PROBE_TIMEOUT");
  setenv("OAR_PLUGIN_PROBE", "maybe", 1);
  CHECK(oar_test::error_of([] { oar::Runtime::options_from_env(); }).find("OAR_PLUGIN_PROBE='maybe' is not understood") == 0);
  setenv("OAR_PLUGIN_PROBE", "0", 1);
  CHECK_FALSE(oar::Runtime::options_from_env().probe_plugins);
  unsetenv("OAR_PLUGIN_PROBE");
  CHECK(oar::Runtime::options_from_env().probe_plugins);
  setenv("OAR_PLUGIN_PROBE_CACHE", "/tmp/x.cache", 1);
  CHECK(oar::Runtime::options_from_env().probe_cache_file == "/tmp/x.cache");
  unsetenv("OAR_PLUGIN_PROBE_CACHE");
  setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  CHECK(oar::Runtime::options_from_env().probe_cache_file == "/tmp/xdg/oar/plugin-probe.cache");
  unsetenv("XDG_CACHE_HOME");

  oar::RuntimeOptions options = only(hostile_dir() + "/liboar_test_survivor.so", 0);
  CHECK(oar_test::error_of([&] { oar::Runtime rt(options); }) ==
        "RuntimeOptions.probe_timeout_s is 0; a plugin probe needs a time limit above 0 seconds");
}

TEST_CASE("probing from a busy multi-threaded process gives the same verdicts every time") {
  // Note [Plugin probe]: the probe is spawned, not forked, so locks other
  // threads hold (malloc's here) cannot hang a good plugin's probe.
  std::atomic<bool> stop{false};
  std::vector<std::thread> busy;
  for (int t = 0; t < 4; ++t) {
    busy.emplace_back([&] {
      while (!stop) {
        std::vector<std::unique_ptr<char[]>> blocks;
        for (int i = 0; i < 64; ++i) blocks.emplace_back(new char[static_cast<size_t>(64 + i * 97)]);
      }
    });
  }
  std::string dir = hostile_dir();
  for (int round = 0; round < 5; ++round) {
    oar::Runtime rt(only(dir + "/liboar_test_segv.so:" + dir + "/liboar_test_survivor.so", 20));
    CHECK(rt.device_count("survivor") == 1);
    CHECK(reason_for(rt, "liboar_test_segv.so") ==
          "its probe process was killed by signal 11 (SIGSEGV) during oar_plugin_init");
  }
  stop = true;
  for (auto& t : busy) t.join();
}

TEST_CASE("without the probe helper, plugins load unprobed after one warning") {
  // A liboar_core.so copied where no oar-plugin-probe sits next to it.
  std::string dir = temp_dir("nohelper");
  std::string build = fs::path(bin_dir()).parent_path().string();
  fs::copy_file(build + "/lib/liboar_core.so", dir + "/liboar_core.so");
  std::string out = oar_test::run_command("LD_LIBRARY_PATH=" + dir + " OAR_PLUGIN_PROBE_CACHE= OAR_PLUGIN_PATH=" +
                                          hostile_dir() + "/liboar_test_survivor.so " + bin_dir() + "/oar devices");
  CHECK(out.find("oar warning: cannot start the plugin probe '" + dir +
                 "/oar-plugin-probe' (No such file or directory); loading plugins without probing them first\n") !=
        std::string::npos);
  CHECK(out.find("device type 'survivor': 1 device") != std::string::npos);
  CHECK(out.find("device type 'cpu': 1 device") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("a cached outcome holds only while the plugin's libraries are unchanged") {
  std::string dir = temp_dir("deps");
  std::string plugin = dir + "/liboar_x.so", dep = dir + "/libdep.so.1";
  std::ofstream(plugin) << "plugin";
  std::ofstream(dep) << "v1";
  auto key = oar::plugin_file_key(plugin);
  REQUIRE(key.has_value());
  {
    oar::ProbeCache cache(dir + "/probe.cache");
    cache.put(*key, true, "", {dep});
    cache.save();
  }
  CHECK(oar::ProbeCache(dir + "/probe.cache").find(*key).has_value());
  std::ofstream(dep) << "version 2";  // an upgraded dependency
  CHECK_FALSE(oar::ProbeCache(dir + "/probe.cache").find(*key).has_value());
  fs::remove(dep);
  CHECK_FALSE(oar::ProbeCache(dir + "/probe.cache").find(*key).has_value());
  // A library that cannot be stat'ed when the outcome is put: not cached.
  oar::ProbeCache cache(dir + "/other.cache");
  cache.put(*key, true, "", {dir + "/gone.so"});
  CHECK_FALSE(cache.find(*key).has_value());

  // The cpu plugin's entry lists oneDNN, which it links against.
  oar::RuntimeOptions options = only(fs::path(bin_dir()).parent_path().string() + "/plugins/liboar_cpu.so", 20);
  options.probe_cache_file = dir + "/cpu.cache";
  CHECK(oar::Runtime(options).device_count("cpu") == 1);
  CHECK(read_file(options.probe_cache_file).find("/libdnnl.so") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("the probe report parser keeps what it understood and nothing after done") {
  using oar::ProbeStage;
  auto parse = [](const std::string& text) { return oar::parse_probe_report(text); };
  const std::string header = "oar-plugin-probe 1\n";
  oar::ProbeReport died = parse(header + "stage load\nlib /x/liboar_a.so\nstage init\n");
  CHECK(died.header);
  CHECK(died.stage == ProbeStage::init);
  CHECK_FALSE(died.done);
  CHECK(died.libraries == std::vector<std::string>{"/x/liboar_a.so"});
  CHECK(oar::describe_probe_stage(died.stage) == "during oar_plugin_init");

  oar::ProbeReport passed = parse(header + "stage load\nstage init\ninit-status 4\nstage returned\ndone\nstage init\n"
                                           "init-status 9\n");
  CHECK(passed.done);
  CHECK(passed.stage == ProbeStage::returned);  // stages never move back; nothing counts after done
  CHECK(passed.init_status == 4);

  CHECK(parse("stage init\ndone\n") == oar::ProbeReport{});  // no header: nothing
  CHECK_FALSE(parse(header + "done").done);                     // an unfinished line is not trusted
  CHECK(parse(header + "init-status 99999999999\n").init_status == 0);  // out of range: ignored
  CHECK(parse(header + "lib relative.so\nlib /a.so\nlib /a.so\n").libraries == std::vector<std::string>{"/a.so"});
  CHECK(parse(header + "load-error a\rb\n").load_error == "a b");
  oar::ProbeReport full = parse(header + "stage load\nload-error x: cannot open\nstage returned\ndone\n");
  CHECK(parse(oar::format_probe_report(full)) == full);
}
