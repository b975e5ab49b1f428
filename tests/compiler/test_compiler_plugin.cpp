// The compiler plugin end to end (issue 15, items 1 and 4): liboar_compiler.so
// is listed by `oar devices` and registers its pass; RMSNorm written as a
// composite compiles to one fusion_group that equals the uncompiled program
// at several sizes of a dynamic dim without compiling again; a saved program
// with fusion groups runs in oar-run with and without the plugin; a compile
// that fails or times out leaves the group unfused with a warning.
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "env_var.h"
#include "oar/ir/executor.h"
#include "oar/ir/interpreter.h"
#include "oar/ir/pass.h"
#include "oar/ir/safetensors.h"
#include "oar/ir/serialize.h"
#include "oar/ir/trace.h"
#include "oar/ops.h"
#include "test_util.h"

namespace ir = oar::ir;
namespace fs = std::filesystem;
using oar::Device;
using oar::DType;
using oar::Tensor;

namespace {

const Device kCpu{"cpu", 0};


std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// What this process writes to stderr while alive (the core's warnings).
class StderrCapture {
 public:
  explicit StderrCapture(const fs::path& file) : file_(file) {
    std::fflush(stderr);
    saved_ = dup(2);
    FILE* f = std::fopen(file.c_str(), "w");
    REQUIRE(f != nullptr);
    dup2(fileno(f), 2);
    std::fclose(f);
  }
  std::string text() {
    std::fflush(stderr);
    return read_file(file_);
  }
  ~StderrCapture() {
    std::fflush(stderr);
    dup2(saved_, 2);
    close(saved_);
  }

 private:
  fs::path file_;
  int saved_;
};

fs::path fresh_dir(const std::string& tag) {
  fs::path base = fs::temp_directory_path() / ("oar-cc-plugin-" + tag + "-" + std::to_string(getpid()));
  fs::remove_all(base);
  fs::create_directories(base);
  return base;
}

int count_ops(const ir::Program& p, const std::string& name) {
  int n = 0;
  for (const auto& op : p.block().ops()) n += op->name() == name;
  return n;
}

int count_files(const fs::path& dir, const std::string& ext) {
  int n = 0;
  if (!fs::exists(dir)) return 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.path().extension() == ext;
  return n;
}

// rms_norm(x, w) * 2 for x: f32[-1, cols] (the composite; the pipeline decomposes it).
ir::Trace rms_program(int64_t cols, double epsilon = 1e-6) {
  ir::TracedFunction fn = [epsilon](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{oar::multiply(oar::rms_norm(in[0], in[1], epsilon), in[0])};
  };
  return ir::trace(fn, {{{-1, cols}, DType::f32, "x"}, {{cols}, DType::f32, "w"}}, {}, kCpu);
}

Tensor random_tensor(const oar::Shape& shape, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(oar::shape_numel(shape)));
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (float& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = static_cast<float>((s >> 40) % 2001) / 1000.0f - 1.0f;
  }
  return Tensor::from_vector(v, shape, kCpu);
}

ir::Program compiled(const ir::Program& p) {
  ir::Program c = p.clone();
  ir::default_pipeline(kCpu, {.compiler = true, .decompose_composites = true}).run(c);
  return c;
}

}  // namespace

TEST_CASE("oar devices lists liboar_compiler.so and the plugin registers its pass") {
  const char* bin = std::getenv("OAR_BIN_DIR");
  REQUIRE(bin != nullptr);
  fs::path dir = fresh_dir("devices");
  std::string command = std::string(bin) + "/oar devices >" + (dir / "out.txt").string() + " 2>&1";
  REQUIRE(std::system(command.c_str()) == 0);
  std::string out = read_file(dir / "out.txt");
  INFO(out);
  size_t loaded = out.find("Plugins loaded:"), skipped = out.find("Plugins skipped:");
  size_t at = out.find("liboar_compiler.so");
  REQUIRE(at != std::string::npos);
  CHECK(at > loaded);
  CHECK(at < skipped);
  CHECK(out.find("name oar-compiler") != std::string::npos);
  oar::Runtime::global();
  auto names = ir::registered_pipeline_passes();
  CHECK(std::find(names.begin(), names.end(), "compiler") != names.end());
}

TEST_CASE("RMSNorm compiles to one fusion_group equal to the uncompiled program at every batch size") {
  fs::path cache = fresh_dir("rms-cache");
  EnvVar dir("OAR_COMPILER_CACHE_DIR", cache.c_str());
  ir::Trace t = rms_program(96);
  ir::Program fused = compiled(t.program);
  INFO(ir::to_json(fused));
  CHECK(count_ops(fused, "fusion_group") == 1);
  CHECK(count_ops(fused, "rsqrt") == 0);
  CHECK(count_ops(fused, "rms_norm") == 0);
  CHECK(count_files(cache, ".so") == 1);
  ir::Executor exec(fused, kCpu);
  for (int64_t rows : {3, 17, 1}) {
    std::vector<Tensor> in{random_tensor({rows, 96}, static_cast<uint64_t>(rows)), random_tensor({96}, 7)};
    Tensor want = ir::interpret(t.program, in)[0];
    Tensor got = exec.run(in)[0];
    CHECK(got.shape() == oar::Shape{rows, 96});
    oar_test::check_close(got, oar_test::values(want), 1e-5, 1e-5);
  }
  CHECK(count_files(cache, ".so") == 1);  // no new batch size compiled anything
}

TEST_CASE("a saved program with a fusion_group runs in oar-run with and without the plugin") {
  fs::path dir = fresh_dir("oar-run");
  EnvVar cache("OAR_COMPILER_CACHE_DIR", (dir / "cache").c_str());
  ir::Trace t = rms_program(40);
  ir::Program fused = compiled(t.program);
  REQUIRE(count_ops(fused, "fusion_group") == 1);
  std::string path = (dir / "model").string();
  ir::save(fused, {}, path);
  std::vector<Tensor> in{random_tensor({5, 40}, 3), random_tensor({40}, 4)};
  ir::save_safetensors((dir / "in.safetensors").string(), {{"x", in[0]}, {"w", in[1]}});
  Tensor want = ir::interpret(t.program, in)[0];
  const char* bin = std::getenv("OAR_BIN_DIR");
  REQUIRE(bin != nullptr);
  for (const char* env : {"", "OAR_COMPILER_DISABLE=1 "}) {
    CAPTURE(env);
    fs::path out = dir / "out.safetensors";
    fs::remove(out);
    std::string command = std::string(env) + "OAR_COMPILER_CACHE_DIR=" + (dir / "cache").string() + " " + bin +
                          "/oar-run " + path + " --inputs " + (dir / "in.safetensors").string() + " --output " +
                          out.string() + " >" + (dir / "run.txt").string() + " 2>&1";
    int status = std::system(command.c_str());
    INFO(read_file(dir / "run.txt"));
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    auto outputs = ir::load_safetensors(out.string(), kCpu);
    REQUIRE(outputs.size() == 1);
    oar_test::check_close(outputs.begin()->second, oar_test::values(want), 1e-5, 1e-5);
    CHECK(read_file(dir / "run.txt").find("warning") == std::string::npos);
  }
}

TEST_CASE("a group whose compile fails or times out runs unfused, with a warning naming it") {
  fs::path dir = fresh_dir("fallback");
  fs::path script = dir / "slow-cxx";
  std::ofstream(script) << "#!/bin/sh\nif [ \"$1\" = --version ]; then echo slow-cxx 1.0; exit 0; fi\nexec sleep 30\n";
  fs::permissions(script, fs::perms::owner_all);
  struct Case {
    const char* cxx;
    const char* timeout;
    double epsilon;  // another group each time: the process remembers a group's outcome
    const char* reason;
  };
  for (const Case& c : {Case{"false", "120", 1e-3, "`false --version` (OAR_COMPILER_CXX) exited with status 1"},
                        Case{script.c_str(), "0.5", 1e-4, "did not finish within 0.5"}}) {
    CAPTURE(c.cxx);
    EnvVar cache("OAR_COMPILER_CACHE_DIR", (dir / "cache").c_str());
    EnvVar cxx("OAR_COMPILER_CXX", c.cxx);
    EnvVar timeout("OAR_COMPILER_TIMEOUT", c.timeout);
    ir::Trace t = rms_program(24, c.epsilon);
    std::string warnings;
    ir::Program p = t.program.clone();
    {
      StderrCapture capture(dir / "stderr.txt");
      p = compiled(t.program);
      warnings = capture.text();
    }
    INFO(warnings);
    CHECK(count_ops(p, "fusion_group") == 0);
    CHECK(warnings.find("compiler: group g") != std::string::npos);
    CHECK(warnings.find("runs unfused") != std::string::npos);
    CHECK(warnings.find(c.reason) != std::string::npos);
    std::vector<Tensor> in{random_tensor({4, 24}, 11), random_tensor({24}, 12)};
    oar_test::check_close(ir::Executor(p, kCpu).run(in)[0], oar_test::values(ir::interpret(t.program, in)[0]), 1e-5,
                          1e-5);
  }
}

TEST_CASE("a fusion_group whose key attribute names another group's kernel still runs its own program") {
  fs::path cache = fresh_dir("stale-key");
  EnvVar dir("OAR_COMPILER_CACHE_DIR", cache.c_str());
  // Two groups with equal buffer shapes and different results (epsilon 1e-6 vs 0.5).
  ir::Trace a = rms_program(32, 1e-6), b = rms_program(32, 0.5);
  ir::Program fa = compiled(a.program), fb = compiled(b.program);
  auto group_of = [](ir::Program& p) -> ir::Operation* {
    for (const auto& op : p.block().ops())
      if (op->name() == "fusion_group") return op.get();
    return nullptr;
  };
  ir::Operation* ga = group_of(fa);
  ir::Operation* gb = group_of(fb);
  REQUIRE(ga != nullptr);
  REQUIRE(gb != nullptr);
  std::vector<Tensor> in{random_tensor({3, 32}, 21), random_tensor({32}, 22)};
  ir::Executor(fb, kCpu).run(in);  // b's kernel is known to this process under its key
  ga->mutable_attrs().set("key", gb->attrs().get_string("key"));
  oar_test::check_close(ir::Executor(fa, kCpu).run(in)[0], oar_test::values(ir::interpret(a.program, in)[0]), 1e-5,
                        1e-5);
}
