// The oar-run command on a saved program: outputs written to safetensors
// equal hand-computed values; bad files and bad usage give exit codes 1
// and 2 with a sentence on stderr.
#include <sys/wait.h>
#include <unistd.h>

#include <complex>
#include <cstdlib>
#include <filesystem>

#include "oar/ir/safetensors.h"
#include "oar/ir/serialize.h"
#include "oar/ir/trace.h"
#include "test_util.h"

using oar::Device;
using oar::DType;
using oar::Shape;
using oar::Tensor;
using oar_test::check_close;
namespace ir = oar::ir;
namespace fs = std::filesystem;

namespace {

struct Result {
  int status = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

std::string read_file(const fs::path& path) {
  std::string text;
  FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return text;
  char buf[512];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  std::fclose(f);
  return text;
}

// Runs oar-run of this build with `args` (already shell-quoted).
Result oar_run(const fs::path& dir, const std::string& args) {
  const char* bin = std::getenv("OAR_BIN_DIR");
  REQUIRE(bin != nullptr);
  fs::path out = dir / "stdout.txt", err = dir / "stderr.txt";
  std::string command =
      std::string(bin) + "/oar-run " + args + " >" + out.string() + " 2>" + err.string();
  int raw = std::system(command.c_str());
  Result r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Saves relu(x @ w - 10) and sum(x) for x: f32[-1, 3] and w = [[1, 2], [3, 4], [5, 6]].
std::string save_model(const fs::path& dir) {
  Device cpu{"cpu", 0};
  Tensor w = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2}, cpu);
  ir::Trace t = ir::trace(
      [&](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{oar::relu(oar::matmul(in[0], w) - 10.0), oar::sum(in[0])};
      },
      {{{-1, 3}, DType::f32, "x"}}, {{"w", w}}, cpu);
  ir::Value* y = t.program.outputs()[0].value;
  ir::Value* total = t.program.outputs()[1].value;
  t.program.clear_outputs();
  t.program.add_output(y, "y");
  t.program.add_output(total, "total");
  std::string path = (dir / "model").string();
  ir::save(t.program, t.parameters, path);
  return path;
}

}  // namespace

TEST_CASE("oar-run: outputs of a saved program written to safetensors equal hand-computed values") {
  fs::path dir = fs::temp_directory_path() / ("oar_run_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string model = save_model(dir);
  Device cpu{"cpu", 0};
  fs::path inputs = dir / "in.safetensors";
  ir::save_safetensors(inputs.string(),
                       {{"x", Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, cpu)}});

  // x @ w = [[22, 28], [49, 64]]; minus 10, relu: [[12, 18], [39, 54]]; sum(x) = 21.
  for (const char* device : {"cpu", "mock"}) {
    INFO("device " << device);
    fs::path outputs = dir / (std::string("out_") + device + ".safetensors");
    Result r = oar_run(dir, model + " --device " + device + " --inputs " + inputs.string() +
                                " --output " + outputs.string());
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    CHECK(contains(r.out, "input x: f32[2, 3] (from " + inputs.string() + ")"));
    CHECK(contains(r.out, "output y: f32[2, 2] first [12, 18, 39, 54], sum 123"));
    CHECK(contains(r.out, "output total: f32[] first [21], sum 21"));
    std::map<std::string, Tensor> got = ir::load_safetensors(outputs.string(), cpu);
    REQUIRE(got.size() == 2);
    CHECK(got.at("y").shape() == Shape{2, 2});
    check_close(got.at("y"), {12, 18, 39, 54});
    check_close(got.at("total"), {21});
  }

  // One input from a file holding only that tensor, under another name.
  fs::path single = dir / "single.safetensors";
  ir::save_safetensors(single.string(),
                       {{"batch", Tensor::from_vector<float>({10, 0, 0}, {1, 3}, cpu)}});
  Result r =
      oar_run(dir, model + " --device cpu --input x=" + single.string() + " --print-program");
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(contains(r.out, "output y: f32[1, 2] first [0, 10], sum 10"));  // [10, 20] - 10
  CHECK(contains(r.out, "= matmul(%x, %w)"));

  // Generated inputs need the shape of dynamic dims.
  r = oar_run(dir, model + " --device mock");
  CHECK(r.status == 1);
  CHECK(contains(r.err, "input 'x' has dynamic dims (f32[-1, 3])"));
  CHECK(contains(r.err, "--shape x=2,3"));
  r = oar_run(dir, model + " --device mock --shape x=4,3 --repeat 3 --streams 2");
  CHECK(r.status == 0);
  CHECK(contains(r.out, "input x: f32[4, 3] (generated: uniform in [-1, 1), seed 1)"));
  CHECK(contains(r.out, "ran 3 times"));
  CHECK(contains(r.out, "output y: f32[4, 2]"));

  // A missing file or input is an error sentence naming it, exit status 1.
  r = oar_run(dir, (dir / "no_such_model").string());
  CHECK(r.status == 1);
  CHECK(contains(r.err, "no_such_model"));
  r = oar_run(dir, model + " --input z=" + single.string());
  CHECK(r.status == 1);
  CHECK(contains(r.err, "no input 'z'"));
  r = oar_run(dir, model + " --inputs " + (dir / "missing.safetensors").string());
  CHECK(r.status == 1);
  CHECK(contains(r.err, "missing.safetensors"));

  // Bad usage: exit status 2 with the usage line.
  for (const std::string& args : std::vector<std::string>{
           "", "--repeat 0 " + model, model + " --frobnicate", model + " --shape x"}) {
    INFO("args: " << args);
    r = oar_run(dir, args);
    CHECK(r.status == 2);
    CHECK(contains(r.err, "usage: oar-run <path>"));
  }
  r = oar_run(dir, "--help");
  CHECK(r.status == 0);
  CHECK(contains(r.out, "usage: oar-run <path>"));
  fs::remove_all(dir);
}

TEST_CASE(
    "oar-run: complex inputs, parameters and outputs are read, generated and printed as re+imj") {
  fs::path dir = fs::temp_directory_path() / ("oar_run_complex_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  Device cpu{"cpu", 0};
  // concat([w, z]) of a complex parameter (saved as safetensors C64) and a
  // complex input, and the real input cast to complex64.
  Tensor w = Tensor::from_vector<std::complex<float>>({{1, 2}, {0, -3}, {0.5f, 0}}, {1, 3}, cpu);
  ir::Trace t = ir::trace(
      [&](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{oar::concat({w, in[1]}, 0), oar::cast(in[0], DType::c64)};
      },
      {{{-1, 3}, DType::f32, "x"}, {{-1, 3}, DType::c64, "z"}}, {{"w", w}}, cpu);
  std::string model = (dir / "complex").string();
  ir::save(t.program, t.parameters, model);

  fs::path inputs = dir / "in.safetensors";
  ir::save_safetensors(
      inputs.string(),
      {{"x", Tensor::from_vector<float>({1, -2, 3}, {1, 3}, cpu)},
       {"z", Tensor::from_vector<std::complex<float>>({{1, -1}, {2, 0}, {0, 0.5f}}, {1, 3}, cpu)}});
  for (const char* device : {"cpu", "mock"}) {
    INFO("device " << device);
    fs::path outputs = dir / (std::string("out_") + device + ".safetensors");
    Result r = oar_run(dir, model + " --device " + device + " --inputs " + inputs.string() +
                                " --output " + outputs.string());
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    CHECK(contains(r.out, "input z: c64[1, 3] (from " + inputs.string() + ")"));
    CHECK(contains(r.out,
                   "output output_0: c64[2, 3] first [1+2j, 0-3j, 0.5+0j, 1-1j, 2+0j, 0+0.5j], "
                   "sum 4.5-1.5j"));
    CHECK(contains(r.out, "output output_1: c64[1, 3] first [1+0j, -2+0j, 3+0j], sum 2+0j"));
    std::map<std::string, Tensor> got = ir::load_safetensors(outputs.string(), cpu);
    REQUIRE(got.size() == 2);
    REQUIRE(got.at("output_0").dtype() == DType::c64);
    std::vector<std::complex<float>> values = got.at("output_0").to_vector<std::complex<float>>();
    std::vector<std::complex<float>> want = {{1, 2},  {0, -3}, {0.5f, 0},
                                             {1, -1}, {2, 0},  {0, 0.5f}};
    CHECK(values == want);
  }

  // A generated complex input: real and imaginary parts uniform in [-1, 1),
  // so the concatenated rows after w are not all real.
  Result r = oar_run(dir, model + " --device mock --shape x=2,3 --shape z=2,3 --output " +
                              (dir / "gen.safetensors").string());
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(contains(
      r.out,
      "input z: c64[2, 3] (generated: real and imaginary parts uniform in [-1, 1), seed 2)"));
  std::vector<std::complex<float>> generated =
      ir::load_safetensors((dir / "gen.safetensors").string(), cpu)
          .at("output_0")
          .to_vector<std::complex<float>>();
  REQUIRE(generated.size() == 9);
  bool imaginary = false;
  for (size_t i = 3; i < 9; ++i) {
    CHECK(std::abs(generated[i].real()) <= 1.0f);
    CHECK(std::abs(generated[i].imag()) <= 1.0f);
    imaginary = imaginary || generated[i].imag() != 0.0f;
  }
  CHECK(imaginary);
  fs::remove_all(dir);
}

TEST_CASE("oar-run: a program nested 100,000 deep or building 9 dims is an error sentence, not a crash") {
  fs::path dir = fs::temp_directory_path() / ("oar_run_hostile_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto write_program = [&](const std::string& name, const std::string& attrs, const std::string& result) {
    std::string text = R"({"format": "oar.program", "version": 1,
      "inputs": [{"id": 0, "name": "x", "type": {"dtype": "f32", "shape": [2, 1]}}],
      "parameters": [], "constants": [],
      "ops": [{"op": "reshape", "operands": [0], "attrs": )" + attrs + R"(,
               "results": [{"id": 1, "type": {"dtype": "f32", "shape": )" + result + R"(}}]}],
      "outputs": [{"name": "y", "value": 1}], "updates": []})";
    FILE* f = std::fopen((dir / (name + ".json")).c_str(), "w");
    REQUIRE(f != nullptr);
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
    ir::save_safetensors((dir / (name + ".safetensors")).string(), {});  // no parameters
    return (dir / name).string();
  };
  std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  Result r = oar_run(dir, write_program("deep", R"({"shape": {"ints": )" + deep + "}}", "[2]"));
  INFO(r.err);
  CHECK(r.status == 1);
  CHECK(contains(r.err, "deep.json: the program nests arrays and objects more than 64 levels deep"));
  r = oar_run(dir, write_program("nine", R"({"shape": {"ints": [1, 1, 1, 1, 1, 1, 1, 1, 2]}})",
                                 "[1, 1, 1, 1, 1, 1, 1, 1, 2]"));
  INFO(r.err);
  CHECK(r.status == 1);
  CHECK(contains(r.err, "nine.json: verify: operation 0 (reshape)"));
  CHECK(contains(r.err, "has 9 dims; at most 8 are supported"));
  r = oar_run(dir, write_program("eight", R"({"shape": {"ints": [1, 1, 1, 1, 1, 1, 1, 2]}})",
                                 "[1, 1, 1, 1, 1, 1, 1, 2]"));
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  CHECK(contains(r.out, "output y: f32[1, 1, 1, 1, 1, 1, 1, 2]"));
  fs::remove_all(dir);
}
