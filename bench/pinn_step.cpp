// Times one PINN training step for the Poisson problem (see
// examples/pinn_poisson.cpp): MLP forward, Laplacian by grad-of-grad,
// backward to the parameters, Adam update. bench/pinn_peers.py times the same
// step in PyTorch and PaddlePaddle. Prints one JSON line with the median.
//
//   bench_pinn_step [--width 32] [--depth 3] [--points 1024] [--boundary 256]
//                   [--dtype f32] [--warmup 10] [--steps 50] [--device cpu]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <numbers>
#include <string>
#include <vector>

#include "oar/oar.h"

namespace {

struct Config {
  int width = 32, depth = 3, points = 1024, boundary = 256, warmup = 10, steps = 50;
  oar::DType dtype = oar::DType::f32;
  std::string device;
};

Config parse(int argc, char** argv) {
  Config c;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (i + 1 >= argc) throw std::runtime_error("bench_pinn_step: " + arg + " expects a value");
    std::string value = argv[++i];
    if (arg == "--width")
      c.width = std::stoi(value);
    else if (arg == "--depth")
      c.depth = std::stoi(value);
    else if (arg == "--points")
      c.points = std::stoi(value);
    else if (arg == "--boundary")
      c.boundary = std::stoi(value);
    else if (arg == "--warmup")
      c.warmup = std::stoi(value);
    else if (arg == "--steps")
      c.steps = std::stoi(value);
    else if (arg == "--dtype")
      c.dtype = oar::parse_dtype(value);
    else if (arg == "--device")
      c.device = value;
    else
      throw std::runtime_error("bench_pinn_step: unknown argument '" + arg + "'");
  }
  return c;
}

oar::Tensor column(const oar::Tensor& x, int64_t c) { return oar::slice(x, {1}, {c}, {c + 1}); }

struct PinnStep {
  std::vector<oar::Tensor> params, m, v;  // weights then biases, layer by layer
  oar::Tensor interior, forcing, boundary;
  int t = 0;

  PinnStep(const Config& c, const oar::Device& device) {
    oar::seed(0);
    std::vector<int64_t> sizes{2};
    for (int i = 0; i < c.depth; ++i) sizes.push_back(c.width);
    sizes.push_back(1);
    for (size_t l = 0; l + 1 < sizes.size(); ++l) {
      double xavier = std::sqrt(2.0 / static_cast<double>(sizes[l] + sizes[l + 1]));
      params.push_back(
          oar::normal({sizes[l], sizes[l + 1]}, 0.0, xavier, c.dtype, device).set_requires_grad());
      params.push_back(oar::zeros({sizes[l + 1]}, c.dtype, device).set_requires_grad());
    }
    for (const oar::Tensor& p : params) {
      m.push_back(oar::zeros_like(p));
      v.push_back(oar::zeros_like(p));
    }
    interior = oar::uniform({c.points, 2}, 0.0, 1.0, c.dtype, device).set_requires_grad();
    constexpr double pi = std::numbers::pi;
    oar::Tensor xy = interior.detach();
    forcing = 2.0 * pi * pi * oar::sin(pi * column(xy, 0)) * oar::sin(pi * column(xy, 1));
    boundary =
        oar::uniform({c.boundary, 2}, 0.0, 1.0, c.dtype, device);  // positions do not affect timing
  }

  oar::Tensor net(const oar::Tensor& x) const {
    oar::Tensor h = x;
    size_t layers = params.size() / 2;
    for (size_t l = 0; l + 1 < layers; ++l)
      h = oar::tanh(oar::linear(h, params[2 * l], params[2 * l + 1]));
    return oar::linear(h, params[2 * layers - 2], params[2 * layers - 1]);
  }

  /// One step; returns the loss (already computed, so item() only waits).
  double run(double lr = 1e-3) {
    oar::Tensor u = net(interior);
    oar::Tensor g = oar::grad({oar::sum(u)}, {interior}, {}, true)[0];
    oar::Tensor u_xx = column(oar::grad({oar::sum(column(g, 0))}, {interior}, {}, true)[0], 0);
    oar::Tensor u_yy = column(oar::grad({oar::sum(column(g, 1))}, {interior}, {}, true)[0], 1);
    oar::Tensor residual = u_xx + u_yy + forcing;
    oar::Tensor u_b = net(boundary);
    oar::Tensor loss = oar::mean(residual * residual) + 10.0 * oar::mean(u_b * u_b);
    std::vector<oar::Tensor> grads = oar::grad({loss}, params);

    oar::NoGrad no_grad;
    ++t;
    double step_size = lr * std::sqrt(1.0 - std::pow(0.999, t)) / (1.0 - std::pow(0.9, t));
    for (size_t i = 0; i < params.size(); ++i) {
      m[i] = 0.9 * m[i] + 0.1 * grads[i];
      v[i] = 0.999 * v[i] + 0.001 * (grads[i] * grads[i]);
      params[i] =
          (params[i].detach() - step_size * m[i] / (oar::sqrt(v[i]) + 1e-8)).set_requires_grad();
    }
    return loss.item();
  }
};

}  // namespace

int main(int argc, char** argv) {
  try {
    Config c = parse(argc, argv);
    oar::Device device = c.device.empty() ? oar::default_device() : oar::parse_device(c.device);
    oar::Runtime::global().check_device(device);
    PinnStep step(c, device);
    for (int i = 0; i < c.warmup; ++i) step.run();
    std::vector<double> ms;
    double loss = 0.0;
    for (int i = 0; i < c.steps; ++i) {
      auto start = std::chrono::steady_clock::now();
      loss = step.run();
      oar::Runtime::global().synchronize(device);
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }
    std::sort(ms.begin(), ms.end());
    const char* threads = std::getenv("OAR_NUM_THREADS");
    std::printf(
        "{\"framework\": \"oar\", \"case\": \"pinn_step_w%d_d%d_n%d_b%d_%s\", \"device\": \"%s\", "
        "\"threads\": \"%s\", \"steps\": %d, \"median_ms\": %.4f, \"min_ms\": %.4f, \"loss\": "
        "%.6g}\n",
        c.width, c.depth, c.points, c.boundary, std::string(oar::dtype_name(c.dtype)).c_str(),
        device.str().c_str(), threads ? threads : "all", c.steps, ms[ms.size() / 2], ms.front(),
        loss);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "bench_pinn_step: " << e.what() << "\n";
    return 1;
  }
}
