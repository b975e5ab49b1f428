// The C++ inference API: a saved program loaded by a Predictor gives eager
// mode's outputs, alone and with several predictors running concurrently.
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "oar/ir/predictor.h"
#include "oar/ir/serialize.h"
#include "oar/ir/trace.h"
#include "test_util.h"

using oar::Device;
using oar::DType;
using oar::Shape;
using oar::Tensor;
using oar_test::check_close;
using oar_test::error_of;
using oar_test::test_devices;
using oar_test::values;
namespace ir = oar::ir;
namespace fs = std::filesystem;

namespace {

// A fresh directory under the system's temporary directory.
fs::path temp_dir(const std::string& name) {
  fs::path dir =
      fs::temp_directory_path() / ("oar_predictor_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

struct Model {
  Tensor w1, b1, w2;
  std::vector<Tensor> operator()(const std::vector<Tensor>& in) const {
    Tensor h = oar::gelu(oar::matmul(in[0], w1) + b1);
    Tensor logits = oar::matmul(h, w2) + in[1];
    return {oar::softmax(logits), oar::sum(h, {1})};
  }
};

Model make_model(const Device& dev) {
  return {oar::uniform({4, 16}, -1, 1, DType::f32, dev, 1),
          oar::uniform({16}, -1, 1, DType::f32, dev, 2),
          oar::uniform({16, 5}, -1, 1, DType::f32, dev, 3)};
}

// Saves the model, traced with a dynamic batch, as `dir`/model; its
// outputs are named "probs" and "hidden_sum".
std::string save_model(const Model& model, const fs::path& dir, const Device& dev) {
  ir::Trace t = ir::trace([&](const std::vector<Tensor>& in) { return model(in); },
                          {{{-1, 4}, DType::f32, "x"}, {{5}, DType::f32, "bias"}},
                          {{"w1", model.w1}, {"b1", model.b1}, {"w2", model.w2}}, dev);
  REQUIRE_FALSE(t.specialized);
  ir::Value* probs = t.program.outputs()[0].value;
  ir::Value* hidden_sum = t.program.outputs()[1].value;
  t.program.clear_outputs();
  t.program.add_output(probs, "probs");
  t.program.add_output(hidden_sum, "hidden_sum");
  std::string path = (dir / "model").string();
  ir::save(t.program, t.parameters, path);
  return path;
}

}  // namespace

TEST_CASE("predictor: a saved program gives eager mode's outputs") {
  for (const Device& dev : test_devices()) {
    INFO("device " << dev.str());
    Model model = make_model(dev);
    fs::path dir = temp_dir("eager_" + dev.type);
    std::string path = save_model(model, dir, dev);

    oar::Predictor predictor(path, {.device = dev.str()});
    CHECK(predictor.device() == dev);
    CHECK(predictor.input_names() == std::vector<std::string>{"x", "bias"});
    CHECK(predictor.output_names() == std::vector<std::string>{"probs", "hidden_sum"});
    CHECK(predictor.input_type("x") == "f32[-1, 4]");
    CHECK(predictor.input_type("bias") == "f32[5]");
    for (int64_t batch : {3, 1, 3}) {
      INFO("batch " << batch);
      Tensor x =
          oar::uniform({batch, 4}, -2, 2, DType::f32, dev, 10 + static_cast<uint64_t>(batch));
      Tensor bias = oar::uniform({5}, -1, 1, DType::f32, dev, 20);
      predictor.set_input("x", x);
      predictor.set_input("bias", bias);
      predictor.run();
      std::vector<Tensor> want = model({x, bias});
      check_close(values(predictor.output(0)), values(want[0]));
      check_close(values(predictor.output("probs")), values(want[0]));
      check_close(values(predictor.output("hidden_sum")), values(want[1]), 1e-5, 1e-5);
      CHECK(predictor.output(0).shape() == Shape{batch, 5});
      CHECK(predictor.output(1).shape() == Shape{batch});
    }
    fs::remove_all(dir);
  }
}

TEST_CASE("predictor: four threads with their own predictors give identical results") {
  for (const Device& dev : test_devices()) {
    INFO("device " << dev.str());
    Model model = make_model(dev);
    fs::path dir = temp_dir("threads_" + dev.type);
    std::string path = save_model(model, dir, dev);
    Tensor x = oar::uniform({64, 4}, -2, 2, DType::f32, dev, 30);
    Tensor bias = oar::uniform({5}, -1, 1, DType::f32, dev, 31);
    std::vector<double> want_probs = values(model({x, bias})[0]),
                        want_sum = values(model({x, bias})[1]);

    constexpr int kThreads = 4, kRuns = 20;
    std::vector<int> mismatches(kThreads, 0);
    std::vector<std::string> errors(kThreads);
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, i] {
        try {
          oar::Predictor predictor(path,
                                   {.device = dev.str(), .executor = {.num_streams = 1 + i % 2}});
          for (int run = 0; run < kRuns; ++run) {
            predictor.set_input("x", x);
            predictor.set_input("bias", bias);
            predictor.run();
            std::vector<float> probs = predictor.output("probs").to_vector<float>();
            std::vector<float> sums = predictor.output("hidden_sum").to_vector<float>();
            for (size_t k = 0; k < probs.size(); ++k)
              mismatches[i] += std::abs(probs[k] - want_probs[k]) > 1e-5;
            for (size_t k = 0; k < sums.size(); ++k)
              mismatches[i] += std::abs(sums[k] - want_sum[k]) > 1e-4;
          }
        } catch (const std::exception& e) {
          errors[i] = e.what();
        }
      });
    }
    for (auto& t : threads) t.join();
    for (int i = 0; i < kThreads; ++i) {
      INFO("thread " << i);
      CHECK(errors[i] == "");
      CHECK(mismatches[i] == 0);
    }
    fs::remove_all(dir);
  }
}

TEST_CASE("predictor: errors name the file, the input or the output") {
  Device dev{"cpu", 0};
  fs::path dir = temp_dir("errors");
  std::string missing = (dir / "no_such_model").string();
  std::string msg = error_of([&] { oar::Predictor p(missing, {.device = "cpu"}); });
  CHECK(msg.find("no_such_model") != std::string::npos);

  std::string path = save_model(make_model(dev), dir, dev);
  oar::Predictor predictor(path, {.device = "cpu"});
  msg = error_of([&] { predictor.output(0); });
  CHECK(msg.find("call run first") != std::string::npos);
  msg = error_of([&] { predictor.run(); });
  CHECK(msg.find("inputs 'x', 'bias' are not set") != std::string::npos);
  predictor.set_input("x", oar::ones({2, 4}, DType::f32, dev));
  msg = error_of([&] { predictor.run(); });
  CHECK(msg.find("input 'bias' is not set") != std::string::npos);
  msg = error_of([&] { predictor.set_input("y", oar::ones({2, 4}, DType::f32, dev)); });
  CHECK(msg.find("no input 'y' (its inputs: x, bias)") != std::string::npos);
  msg = error_of([&] { predictor.set_input("x", oar::ones({2, 4}, DType::i64, dev)); });
  CHECK(msg.find("input 'x' expects f32[-1, 4] but got i64[2, 4] (the dtype differs)") !=
        std::string::npos);
  msg = error_of([&] { predictor.set_input("x", oar::ones({8}, DType::f32, dev)); });
  CHECK(msg.find("(the rank differs)") != std::string::npos);
  msg = error_of([&] { predictor.set_input("bias", oar::ones({4}, DType::f32, dev)); });
  CHECK(msg.find("input 'bias' expects f32[5] but got f32[4]") != std::string::npos);
  msg = error_of([&] { predictor.input_type("z"); });
  CHECK(msg.find("no input 'z'") != std::string::npos);

  // Inputs on another device are copied to the predictor's.
  predictor.set_input("bias", oar::zeros({5}, DType::f32, Device{"mock", 0}));
  predictor.run();
  check_close(values(oar::sum(predictor.output("probs"), {1})), {1, 1});
  msg = error_of([&] { predictor.output("logits"); });
  CHECK(msg.find("no output 'logits' (its outputs: probs, hidden_sum)") != std::string::npos);
  msg = error_of([&] { predictor.output(2); });
  CHECK(msg.find("output index 2 is out of range") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("predictor: a dynamic batch dim takes every batch size, also where relu decomposes") {
  // The mock has no relu kernel: its decomposition needs concrete sizes, so
  // the executor compiles the program per input shapes (Note [Decomposing
  // per input shapes]); the predictor checks inputs against the saved
  // program's types, not the last compilation's ("expects f32[54, 4]").
  for (const Device& dev : test_devices()) {
    INFO("device " << dev.str());
    fs::path dir = temp_dir("batches_" + dev.type);
    // relu(x @ w - 1) with w = [[1], [1], [1], [1]]: a row of k's gives max(4k - 1, 0).
    Tensor w = oar::ones({4, 1}, DType::f32, dev);
    ir::Trace t = ir::trace(
        [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{oar::relu(oar::matmul(in[0], w) - 1.0)}; },
        {{{-1, 4}, DType::f32, "x"}}, {{"w", w}}, dev);
    std::string path = (dir / "relu").string();
    ir::save(t.program, t.parameters, path);
    oar::Predictor predictor(path, {.device = dev.str()});
    for (int64_t batch : {54, 5, 1, 54}) {
      INFO("batch " << batch);
      std::vector<float> x(static_cast<size_t>(batch) * 4), want(static_cast<size_t>(batch));
      for (int64_t r = 0; r < batch; ++r) {
        float k = static_cast<float>(r % 3) * 0.5f;  // rows of 0, 0.5, 1
        for (int c = 0; c < 4; ++c) x[static_cast<size_t>(r * 4 + c)] = k;
        want[static_cast<size_t>(r)] = std::max(4 * k - 1, 0.0f);
      }
      predictor.set_input("x", Tensor::from_vector(x, {batch, 4}, dev));
      CHECK(predictor.input_type("x") == "f32[-1, 4]");
      predictor.run();
      CHECK(predictor.output(0).shape() == Shape{batch, 1});
      CHECK(predictor.output(0).to_vector<float>() == want);
    }
    fs::remove_all(dir);
  }
}
