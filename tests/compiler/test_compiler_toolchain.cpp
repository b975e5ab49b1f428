// The toolchain and the disk cache (issue 15, item 4): compile and load,
// cache hits, corrupt / truncated / garbled entries recompiled (never
// loaded), compile failures and timeouts as sentences, two processes
// writing the same key at once.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>

#include "oar_compiler/toolchain.h"
#include "test_util.h"

namespace cc = oar::compiler;

extern char** environ;

namespace {

// Sources whose function returns a known value.
std::string answer_source(int value, const std::string& symbol = "oar_test_answer") {
  return "extern \"C\" int " + symbol + "() { return " + std::to_string(value) + "; }\n";
}

using AnswerFn = int (*)();

int call(const cc::CompiledLibrary& lib) { return reinterpret_cast<AnswerFn>(lib.symbol())(); }

std::string fresh_dir(const std::string& tag) {
  std::string base = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/oar-cc-test-" + tag + "-XXXXXX";
  std::vector<char> buf(base.begin(), base.end());
  buf.push_back('\0');
  REQUIRE(mkdtemp(buf.data()) != nullptr);
  return buf.data();
}

cc::ToolchainConfig config_in(const std::string& dir) {
  cc::ToolchainConfig c;
  c.cache_dir = dir;
  c.flags = {"-O1", "-fPIC", "-shared", "-std=c++17"};  // fast: these tests check the cache, not the code
  return c;
}

std::set<std::string> files_in(const std::string& dir) {
  std::set<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") out.insert(n);
    }
    closedir(d);
  }
  return out;
}

int64_t file_size(const std::string& path) {
  struct stat st{};
  return stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
}

// The child mode of this binary (for the two-writers test): compile one
// source into the directory OAR_TEST_COMPILE_CHILD names, print the answer.
const int kChildMode = [] {
  const char* dir = std::getenv("OAR_TEST_COMPILE_CHILD");
  if (dir == nullptr) return 0;
  try {
    cc::ToolchainConfig c = config_in(dir);
    // A source that takes the compiler a moment, so the two children overlap.
    std::string src = answer_source(77, "oar_test_shared");
    for (int i = 0; i < 300; ++i) src += "static int pad" + std::to_string(i) + "(int x) { return x * " + std::to_string(i) + " + 1; }\n";
    cc::CompiledLibrary lib = cc::compile_cpu(src, "oar_test_shared", c);
    std::printf("%d %s\n", reinterpret_cast<AnswerFn>(lib.symbol())(), lib.cache_hit() ? "hit" : "compiled");
    std::fflush(stdout);
    _exit(0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child failed: %s\n", e.what());
    _exit(3);
  }
}();

}  // namespace

TEST_CASE("compile_cpu compiles once, then loads the checked cache entry") {
  (void)kChildMode;
  std::string dir = fresh_dir("hit");
  cc::ToolchainConfig c = config_in(dir);
  c.keep_source = true;
  cc::ToolchainStats before = cc::toolchain_stats();
  cc::CompiledLibrary first = cc::compile_cpu(answer_source(42), "oar_test_answer", c);
  CHECK(call(first) == 42);
  CHECK_FALSE(first.cache_hit());
  CHECK(first.key().size() == 32);
  CHECK(first.path() == dir + "/" + first.key() + ".so");
  std::set<std::string> files = files_in(dir);
  CHECK(files == std::set<std::string>{first.key() + ".so", first.key() + ".meta", first.key() + ".cpp"});
  cc::CompiledLibrary second = cc::compile_cpu(answer_source(42), "oar_test_answer", c);
  CHECK(second.cache_hit());
  CHECK(call(second) == 42);
  CHECK(second.key() == first.key());
  cc::ToolchainStats after = cc::toolchain_stats();
  CHECK(after.compiles == before.compiles + 1);
  CHECK(after.cache_hits == before.cache_hits + 1);
  // Another source, flags or compiler is another key.
  CHECK(cc::cpu_cache_key(answer_source(43), c) != cc::cpu_cache_key(answer_source(42), c));
  cc::ToolchainConfig other = c;
  other.flags.push_back("-DOAR_TEST=1");
  CHECK(cc::cpu_cache_key(answer_source(42), other) != cc::cpu_cache_key(answer_source(42), c));
}

TEST_CASE("a corrupt, truncated or garbled cache entry is compiled again, never loaded") {
  std::string dir = fresh_dir("corrupt");
  cc::ToolchainConfig c = config_in(dir);
  std::string so, meta;
  {  // unloaded before the damage: a mapped file must not change under the process
    cc::CompiledLibrary lib = cc::compile_cpu(answer_source(5), "oar_test_answer", c);
    so = lib.path();
    meta = dir + "/" + lib.key() + ".meta";
  }
  const int64_t size = file_size(so);
  REQUIRE(size > 1000);

  SUBCASE("a byte flipped in the .so") {
    std::fstream f(so, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(size / 2);
    char byte = 0;
    f.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x5a);
    f.seekp(size / 2);
    f.write(&byte, 1);
  }
  SUBCASE("the .so truncated") { REQUIRE(truncate(so.c_str(), size / 3) == 0); }
  SUBCASE("the .so emptied") { REQUIRE(truncate(so.c_str(), 0) == 0); }
  SUBCASE("the .meta truncated") { REQUIRE(truncate(meta.c_str(), file_size(meta) - 10) == 0); }
  SUBCASE("the .meta replaced by garbage") { std::ofstream(meta, std::ios::trunc) << "not a cache entry\n"; }
  SUBCASE("the .so missing") { REQUIRE(unlink(so.c_str()) == 0); }

  cc::ToolchainStats before = cc::toolchain_stats();
  cc::CompiledLibrary again = cc::compile_cpu(answer_source(5), "oar_test_answer", c);
  CHECK_FALSE(again.cache_hit());
  CHECK(call(again) == 5);
  cc::ToolchainStats after = cc::toolchain_stats();
  CHECK(after.compiles == before.compiles + 1);
  CHECK(after.rejected == before.rejected + 1);
  CHECK(file_size(so) > 1000);
  // The replaced entry checks out now.
  CHECK(cc::compile_cpu(answer_source(5), "oar_test_answer", c).cache_hit());
  CHECK(files_in(dir).size() == 2);  // no temporary files left
}

TEST_CASE("a compile error is a sentence with the compiler's first lines; nothing is cached") {
  std::string dir = fresh_dir("fail");
  cc::ToolchainConfig c = config_in(dir);
  std::string msg = oar_test::error_of([&] { cc::compile_cpu("int broken( {\n", "broken", c); });
  CHECK(msg.find("the C++ compiler `c++` exited with status 1") != std::string::npos);
  CHECK(msg.find("error") != std::string::npos);
  CHECK(files_in(dir).empty());
  // A library that lacks the symbol asked for.
  std::string missing = oar_test::error_of([&] { cc::compile_cpu(answer_source(1), "not_there", c); });
  CHECK(missing.find("has no symbol 'not_there'") != std::string::npos);
  // A compiler that cannot even say its version (OAR_COMPILER_CXX=false).
  cc::ToolchainConfig f = c;
  f.cxx = "false";
  std::string no_cxx = oar_test::error_of([&] { cc::compile_cpu(answer_source(1), "oar_test_answer", f); });
  CHECK(no_cxx.find("`false --version` (OAR_COMPILER_CXX) exited with status 1") != std::string::npos);
  f.cxx = "/nonexistent/c++";
  CHECK(oar_test::error_of([&] { cc::compile_cpu(answer_source(1), "oar_test_answer", f); }).find("cannot start") !=
        std::string::npos);
}

TEST_CASE("a compile past OAR_COMPILER_TIMEOUT is killed, with its process group") {
  std::string dir = fresh_dir("timeout");
  std::string script = dir + "/slow-cxx";
  {
    std::ofstream s(script);
    s << "#!/bin/sh\nif [ \"$1\" = --version ]; then echo slow-cxx 1.0; exit 0; fi\n"
         "sleep 30 &\necho $! > " << dir << "/sleeper.pid\nwait\n";
  }
  REQUIRE(chmod(script.c_str(), 0755) == 0);
  cc::ToolchainConfig c = config_in(dir + "/cache");
  c.cxx = script;
  c.timeout_seconds = 0.5;
  auto start = std::chrono::steady_clock::now();
  std::string msg;
  oar::ErrorCode code = oar::ErrorCode::internal;
  try {
    cc::compile_cpu(answer_source(1), "oar_test_answer", c);
  } catch (const cc::CompileError& e) {
    msg = e.what();
    code = e.code();
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(code == oar::ErrorCode::timeout);
  CHECK(msg.find("did not finish within 0.5") != std::string::npos);
  CHECK(msg.find("OAR_COMPILER_TIMEOUT") != std::string::npos);
  CHECK(seconds < 10);
  // The grandchild (the script's sleep) died with the group.
  std::ifstream pid_file(dir + "/sleeper.pid");
  int pid = 0;
  pid_file >> pid;
  REQUIRE(pid > 0);
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = kill(pid, 0) != 0;
    if (!gone) usleep(20000);
  }
  CHECK(gone);
  CHECK(files_in(dir + "/cache").empty());
}

TEST_CASE("two processes compiling the same key at once both succeed and leave one valid entry") {
  std::string dir = fresh_dir("race");
  std::vector<pid_t> pids;
  std::vector<std::string> outs;
  for (int i = 0; i < 2; ++i) {
    std::string out = dir + "/child" + std::to_string(i) + ".out";
    outs.push_back(out);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e) env_strings.push_back(*e);
    env_strings.push_back("OAR_TEST_COMPILE_CHILD=" + dir + "/cache");
    std::vector<char*> envp;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    char arg0[] = "test_compiler_toolchain";
    char* argv[] = {arg0, nullptr};
    pid_t pid = 0;
    REQUIRE(posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv, envp.data()) == 0);
    posix_spawn_file_actions_destroy(&actions);
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  for (const std::string& out : outs) {
    std::ifstream in(out);
    int answer = 0;
    in >> answer;
    CHECK(answer == 77);
  }
  // One entry, no temporary files, and it checks out for a third process (here).
  std::set<std::string> files = files_in(dir + "/cache");
  CHECK(files.size() == 2);
  for (const std::string& f : files) CHECK(f.find(".tmp.") == std::string::npos);
  std::string src = answer_source(77, "oar_test_shared");
  for (int i = 0; i < 300; ++i) src += "static int pad" + std::to_string(i) + "(int x) { return x * " + std::to_string(i) + " + 1; }\n";
  cc::CompiledLibrary lib = cc::compile_cpu(src, "oar_test_shared", config_in(dir + "/cache"));
  CHECK(lib.cache_hit());
  CHECK(reinterpret_cast<AnswerFn>(lib.symbol())() == 77);
}

TEST_CASE("temporary files of a process killed mid-compile are removed; a live writer's are kept") {
  std::string dir = fresh_dir("stale");
  // A pid that does not exist: the highest pid_max allows is never handed out while we look.
  pid_t dead = 0;
  for (pid_t p = 4194000; p < 4194300 && !dead; ++p)
    if (kill(p, 0) != 0 && errno == ESRCH) dead = p;
  REQUIRE(dead > 0);
  std::string stale = dir + "/0123abcd.so.tmp." + std::to_string(dead) + ".0";
  std::string live = dir + "/0123abcd.so.tmp." + std::to_string(getppid()) + ".0";
  std::ofstream(stale) << "half a library";
  std::ofstream(live) << "still being written";
  cc::CompiledLibrary lib = cc::compile_cpu(answer_source(9), "oar_test_answer", config_in(dir));
  CHECK(call(lib) == 9);
  std::set<std::string> files = files_in(dir);
  CHECK(files.count("0123abcd.so.tmp." + std::to_string(dead) + ".0") == 0);
  CHECK(files.count("0123abcd.so.tmp." + std::to_string(getppid()) + ".0") == 1);
}
