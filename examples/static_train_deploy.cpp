// Static mode end to end: the same model code that runs eagerly is traced
// into a program, given its backward and SGD updates by program autodiff,
// optimized, and trained by the executor; then the inference program is
// saved (program JSON + safetensors parameters) and loaded by the C++
// Predictor, with no Python involved. `oar-run <path>` runs the saved file.
//
// Task: three interleaved spirals in 2-D (300 points), an MLP 2-64-64-3.
//
//   static_train_deploy [--out DIR] [--steps N] [--device T] [--print-ir]
#include <cmath>
#include <filesystem>
#include <iostream>
#include <numbers>
#include <string>
#include <vector>

#include "oar/ir/autodiff.h"
#include "oar/ir/executor.h"
#include "oar/ir/pass.h"
#include "oar/ir/predictor.h"
#include "oar/ir/printer.h"
#include "oar/ir/serialize.h"
#include "oar/ir/trace.h"
#include "oar/oar.h"

namespace {

using oar::Tensor;

// Spiral k (of 3): r in (0, 1], angle = 4r + 2πk/3 + noise.
void spirals(int per_class, std::vector<float>& xy, std::vector<int64_t>& labels) {
  uint64_t state = 12345;
  auto noise = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (static_cast<double>(state >> 11) / 9007199254740992.0 - 0.5) * 0.3;
  };
  for (int k = 0; k < 3; ++k) {
    for (int i = 0; i < per_class; ++i) {
      double r = (i + 1.0) / per_class;
      double a = 4.0 * r + 2.0 * std::numbers::pi * k / 3.0 + noise();
      xy.push_back(static_cast<float>(r * std::cos(a)));
      xy.push_back(static_cast<float>(r * std::sin(a)));
      labels.push_back(k);
    }
  }
}

Tensor mlp(const Tensor& x, const oar::ir::ParamMap& p) {
  Tensor h = oar::tanh(oar::linear(x, p.at("fc1.weight"), p.at("fc1.bias")));
  h = oar::tanh(oar::linear(h, p.at("fc2.weight"), p.at("fc2.bias")));
  return oar::linear(h, p.at("fc3.weight"), p.at("fc3.bias"));
}

double accuracy(const Tensor& logits, const std::vector<int64_t>& labels) {
  std::vector<int64_t> pred = oar::argmax(logits, 1).to_vector<int64_t>();
  int correct = 0;
  for (size_t i = 0; i < labels.size(); ++i) correct += pred[i] == labels[i];
  return static_cast<double>(correct) / static_cast<double>(labels.size());
}

}  // namespace

int main(int argc, char** argv) try {
  std::string out_dir = "static_model", device_name;
  int steps = 1500;
  bool print_ir = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(arg + " expects a value");
      return argv[++i];
    };
    if (arg == "--out") out_dir = value();
    else if (arg == "--steps") steps = std::stoi(value());
    else if (arg == "--device") device_name = value();
    else if (arg == "--print-ir") print_ir = true;
    else throw std::runtime_error("unknown argument '" + arg + "'; usage: static_train_deploy [--out DIR] [--steps N] [--device T] [--print-ir]");
  }
  oar::Device d = device_name.empty() ? oar::default_device() : oar::parse_device(device_name);
  std::vector<float> xy;
  std::vector<int64_t> labels;
  spirals(100, xy, labels);
  const int64_t n = static_cast<int64_t>(labels.size());
  Tensor x = Tensor::from_vector(xy, {n, 2}, d);
  Tensor y = Tensor::from_vector(labels, {n}, d);

  oar::ir::ParamMap params;
  auto init = [&](const std::string& name, const oar::Shape& s, uint64_t seed) {
    double bound = 1.0 / std::sqrt(static_cast<double>(s[0]));
    params[name] = s.size() == 1 ? oar::zeros(s, oar::DType::f32, d) : oar::uniform(s, -bound, bound, oar::DType::f32, d, seed);
  };
  init("fc1.weight", {2, 64}, 1), init("fc1.bias", {64}, 0), init("fc2.weight", {64, 64}, 2);
  init("fc2.bias", {64}, 0), init("fc3.weight", {64, 3}, 3), init("fc3.bias", {3}, 0);

  // 1. Capture the loss, append its backward and the SGD updates, optimize.
  auto loss_fn = [&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{oar::cross_entropy(mlp(in[0], params), in[1])};
  };
  oar::ir::Trace train = oar::ir::trace(loss_fn, {{{n, 2}, oar::DType::f32, "x"}, {{n}, oar::DType::i64, "label"}},
                                        params, d);
  size_t forward_ops = train.program.block().size();
  oar::ir::append_sgd_step(train.program, train.program.outputs()[0].value, 0.5);
  oar::ir::PassManager pm = oar::ir::default_pipeline(d);
  pm.set_print_after_each(print_ir, &std::cout);
  pm.run(train.program);
  std::cout << "training program: " << forward_ops << " forward ops, " << train.program.block().size()
            << " ops with backward and SGD updates after optimization\n";

  // 2. Train in static mode: the executor applies the updates to its parameters.
  oar::ir::Executor trainer(train.program, d);
  trainer.set_parameters(params);
  std::vector<Tensor> feed{x, y};
  double first = 0, last = 0;
  for (int step = 0; step < steps; ++step) {
    last = trainer.run(feed)[0].item();
    if (step == 0) first = last;
    if (step % 500 == 0 || step + 1 == steps) std::cout << "step " << step << ": loss " << last << "\n";
  }
  std::cout << oar::ir::memory_summary(trainer.memory_plan()) << "\n";
  const oar::ir::ParamMap& trained = trainer.parameters();

  // 3. Capture inference (dynamic batch), optimize, save.
  auto infer_fn = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{mlp(in[0], trained)}; };
  oar::ir::Trace infer = oar::ir::trace(infer_fn, {{{-1, 2}, oar::DType::f32, "x"}}, trained, d);
  oar::ir::default_pipeline(d).run(infer.program);
  std::filesystem::create_directories(out_dir);
  std::string path = (std::filesystem::path(out_dir) / "spiral_mlp").string();
  oar::ir::save(infer.program, trained, path);
  std::cout << "saved " << path << ".json and " << path << ".safetensors:\n" << infer.program;

  // 4. Deploy: the Predictor loads the files and runs them.
  oar::Predictor predictor(path, {.device = d.str()});
  predictor.set_input("x", x);
  predictor.run();
  double acc = accuracy(predictor.output(0), labels);
  std::cout << "predictor accuracy on the training spirals: " << acc << " (loss " << first << " -> " << last << ")\n";
  if (acc < 0.9) {
    std::cerr << "static_train_deploy: accuracy " << acc << " is below 0.9\n";
    return 1;
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "static_train_deploy: " << e.what() << "\n";
  return 1;
}
