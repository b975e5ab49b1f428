// Eager vs static mode (issue: the IR and static mode).
//  1. One training step (forward, loss, backward, SGD update) of a small
//     transformer block, where dispatch overhead dominates: eager (tape +
//     oar::grad + update ops) against the traced program with its appended
//     backward and SGD updates run by the executor. Also the forward only.
//  2. The memory planner's arena peak against the naive sum of every
//     intermediate for an MLP training program.
// Prints one JSON line per case with medians, then a table with ratios.
//
//   bench_static [--device cpu] [--dim 32] [--seq 8] [--batch 2] [--heads 2]
//                [--warmup 20] [--steps 200]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "oar/ir/autodiff.h"
#include "oar/ir/executor.h"
#include "oar/ir/memory_planner.h"
#include "oar/ir/pass.h"
#include "oar/ir/shape_inference.h"
#include "oar/ir/trace.h"
#include "oar/oar.h"

namespace {

using oar::Tensor;
using Clock = std::chrono::steady_clock;

struct Config {
  std::string device;
  int64_t dim = 32, seq = 8, batch = 2, heads = 2;
  int warmup = 20, steps = 200;
};

Config parse(int argc, char** argv) {
  Config c;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (i + 1 >= argc) throw std::runtime_error("bench_static: " + arg + " expects a value");
    std::string value = argv[++i];
    if (arg == "--device") c.device = value;
    else if (arg == "--dim") c.dim = std::stoll(value);
    else if (arg == "--seq") c.seq = std::stoll(value);
    else if (arg == "--batch") c.batch = std::stoll(value);
    else if (arg == "--heads") c.heads = std::stoll(value);
    else if (arg == "--warmup") c.warmup = std::stoi(value);
    else if (arg == "--steps") c.steps = std::stoi(value);
    else throw std::runtime_error("bench_static: unknown argument '" + arg + "'");
  }
  return c;
}

template <typename F>
double median_us(int warmup, int steps, F&& step) {
  for (int i = 0; i < warmup; ++i) step();
  std::vector<double> times;
  for (int i = 0; i < steps; ++i) {
    auto t0 = Clock::now();
    step();
    times.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

oar::ir::ParamMap block_params(const Config& c, const oar::Device& d) {
  int64_t D = c.dim;
  uint64_t seed = 1;
  auto w = [&](const oar::Shape& s, double scale) { return oar::uniform(s, -scale, scale, oar::DType::f32, d, seed++); };
  return {{"ln.weight", oar::ones({D}, oar::DType::f32, d)}, {"ln.bias", oar::zeros({D}, oar::DType::f32, d)},
          {"wq", w({D, D}, 0.2)}, {"wk", w({D, D}, 0.2)}, {"wv", w({D, D}, 0.2)}, {"wo", w({D, D}, 0.2)},
          {"rms.weight", oar::ones({D}, oar::DType::f32, d)}, {"w1", w({D, 4 * D}, 0.2)}, {"w2", w({4 * D, D}, 0.1)}};
}

Tensor block(const Config& c, const Tensor& x, const oar::ir::ParamMap& p) {
  int64_t D = c.dim, H = c.heads;
  Tensor h = oar::layer_norm(x, p.at("ln.weight"), p.at("ln.bias"));
  auto heads = [&](const Tensor& t) { return oar::reshape(t, {0, 0, H, D / H}); };
  Tensor q = heads(oar::matmul(h, p.at("wq"))), k = heads(oar::matmul(h, p.at("wk"))),
         v = heads(oar::matmul(h, p.at("wv")));
  Tensor a = oar::reshape(oar::scaled_dot_product_attention(q, k, v, true), {0, 0, D});
  Tensor x1 = x + oar::matmul(a, p.at("wo"));
  return x1 + oar::matmul(oar::gelu(oar::matmul(oar::rms_norm(x1, p.at("rms.weight")), p.at("w1"))), p.at("w2"));
}

std::string mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

int main(int argc, char** argv) try {
  Config c = parse(argc, argv);
  oar::Device d = c.device.empty() ? oar::default_device() : oar::parse_device(c.device);
  const double lr = 1e-3;
  Tensor x = oar::uniform({c.batch, c.seq, c.dim}, -1, 1, oar::DType::f32, d, 99);

  // ---- eager training step ----
  oar::ir::ParamMap eager_params = block_params(c, d);
  for (auto& [name, t] : eager_params) t.set_requires_grad(true);
  auto eager_step = [&] {
    Tensor y = block(c, x, eager_params);
    Tensor loss = oar::mean(y * y);
    std::vector<Tensor> leaves;
    for (auto& [name, t] : eager_params) leaves.push_back(t);
    std::vector<Tensor> g = oar::grad({loss}, leaves);
    oar::NoGrad no_grad;
    size_t i = 0;
    for (auto& [name, t] : eager_params) {
      t = (t - g[i++] * lr).detach();
      t.set_requires_grad(true);
    }
    loss.item();  // wait for the step, as the static run does
  };

  // ---- static training step ----
  oar::ir::ParamMap static_params = block_params(c, d);
  auto loss_fn = [&](const std::vector<Tensor>& in) {
    Tensor y = block(c, in[0], static_params);
    return std::vector<Tensor>{oar::mean(y * y)};
  };
  oar::ir::Trace t = oar::ir::trace(loss_fn, {{{c.batch, c.seq, c.dim}, oar::DType::f32, "x"}}, static_params, d);
  oar::ir::append_sgd_step(t.program, t.program.outputs()[0].value, lr);
  oar::ir::default_pipeline(d).run(t.program);
  oar::ir::Executor train(t.program, d);
  train.set_parameters(static_params);
  std::vector<Tensor> in{x};
  auto static_step = [&] { train.run(in)[0].item(); };

  // ---- forward only ----
  oar::ir::ParamMap fwd_params = block_params(c, d);
  auto fwd_fn = [&](const std::vector<Tensor>& inputs) { return std::vector<Tensor>{block(c, inputs[0], fwd_params)}; };
  oar::ir::Trace ft = oar::ir::trace(fwd_fn, {{{-1, c.seq, c.dim}, oar::DType::f32, "x"}}, fwd_params, d,
                                     {{c.batch, c.seq, c.dim}});
  oar::ir::default_pipeline(d).run(ft.program);
  oar::ir::Executor infer(ft.program, d);
  infer.set_parameters(fwd_params);
  auto eager_forward = [&] {
    oar::NoGrad no_grad;
    Tensor y = block(c, x, fwd_params);
    oar::sum(y).item();
  };
  auto static_forward = [&] {
    Tensor y = infer.run(in)[0];
    oar::sum(y).item();
  };

  double e_train = median_us(c.warmup, c.steps, eager_step);
  double s_train = median_us(c.warmup, c.steps, static_step);
  double e_fwd = median_us(c.warmup, c.steps, eager_forward);
  double s_fwd = median_us(c.warmup, c.steps, static_forward);

  // ---- memory planner on an MLP training program ----
  oar::ir::ParamMap mlp;
  const int64_t width = 256, batch = 64, layers = 4;
  for (int64_t l = 0; l < layers; ++l) {
    mlp["l" + std::to_string(l) + ".weight"] = oar::uniform({width, width}, -0.1, 0.1, oar::DType::f32, d, 200 + l);
    mlp["l" + std::to_string(l) + ".bias"] = oar::zeros({width}, oar::DType::f32, d);
  }
  auto mlp_loss = [&](const std::vector<Tensor>& inputs) {
    Tensor h = inputs[0];
    for (int64_t l = 0; l < layers; ++l) {
      h = oar::linear(h, mlp.at("l" + std::to_string(l) + ".weight"), mlp.at("l" + std::to_string(l) + ".bias"));
      if (l + 1 < layers) h = oar::relu(h);
    }
    return std::vector<Tensor>{oar::mse_loss(h, inputs[1])};
  };
  oar::ir::Trace mt = oar::ir::trace(mlp_loss, {{{batch, width}, oar::DType::f32, "x"}, {{batch, width}, oar::DType::f32, "y"}},
                                     mlp, d);
  oar::ir::append_sgd_step(mt.program, mt.program.outputs()[0].value, 0.01);
  oar::ir::default_pipeline(d).run(mt.program);
  auto shapes = oar::ir::infer_shapes(mt.program, oar::ir::static_input_shapes(mt.program));
  oar::ir::MemoryPlan plan = oar::ir::plan_memory(mt.program, shapes);

  std::printf("{\"case\": \"transformer_train_step\", \"device\": \"%s\", \"dim\": %lld, \"seq\": %lld, \"batch\": %lld, "
              "\"eager_us\": %.1f, \"static_us\": %.1f, \"speedup\": %.2f}\n",
              d.str().c_str(), (long long)c.dim, (long long)c.seq, (long long)c.batch, e_train, s_train, e_train / s_train);
  std::printf("{\"case\": \"transformer_forward\", \"device\": \"%s\", \"dim\": %lld, \"seq\": %lld, \"batch\": %lld, "
              "\"eager_us\": %.1f, \"static_us\": %.1f, \"speedup\": %.2f}\n",
              d.str().c_str(), (long long)c.dim, (long long)c.seq, (long long)c.batch, e_fwd, s_fwd, e_fwd / s_fwd);
  std::printf("{\"case\": \"mlp_train_memory\", \"ops\": %zu, \"arena_bytes\": %lld, \"naive_bytes\": %lld, "
              "\"ratio\": %.3f}\n",
              mt.program.block().size(), (long long)plan.arena_bytes, (long long)plan.naive_bytes,
              static_cast<double>(plan.arena_bytes) / static_cast<double>(plan.naive_bytes));
  std::printf("\n%-34s %12s %12s %8s\n", "case", "eager (us)", "static (us)", "ratio");
  std::printf("%-34s %12.1f %12.1f %7.2fx\n", "transformer block train step", e_train, s_train, e_train / s_train);
  std::printf("%-34s %12.1f %12.1f %7.2fx\n", "transformer block forward", e_fwd, s_fwd, e_fwd / s_fwd);
  std::printf("MLP training program (%d layers of %lld, batch %lld, %zu ops): planner peak %s vs naive %s (%.0f%%)\n",
              (int)layers, (long long)width, (long long)batch, mt.program.block().size(), mib(plan.arena_bytes).c_str(),
              mib(plan.naive_bytes).c_str(), 100.0 * static_cast<double>(plan.arena_bytes) / static_cast<double>(plan.naive_bytes));
  return 0;
} catch (const std::exception& e) {
  std::cerr << "bench_static: " << e.what() << "\n";
  return 1;
}
