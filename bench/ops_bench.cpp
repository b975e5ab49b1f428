// Times single ops of oar's CPU plugin through the C++ eager API, one JSON
// line per case (the median over --reps calls after --warmup). The same
// cases run in bench/onednn_raw.cpp (raw oneDNN) and bench/ops_peers.py
// (PyTorch, PaddlePaddle); bench/run_ops_bench.sh joins them into a table.
//
//   bench_ops [--reps 20] [--warmup 3] [--device cpu] [--only matmul]
#include <omp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "oar/oar.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  int reps = 20, warmup = 3;
  std::string device = "cpu", only;
};

double median_ms(const std::function<void()>& fn, int reps, int warmup) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

void emit(const std::string& op, const std::string& shape, double ms, const char* framework = "oar",
          double bytes = 0) {
  std::printf("{\"op\": \"%s\", \"shape\": \"%s\", \"framework\": \"%s\", \"median_ms\": %.6f", op.c_str(),
              shape.c_str(), framework, ms);
  if (bytes > 0) std::printf(", \"gbps\": %.2f", bytes / (ms * 1e-3) / 1e9);
  std::printf("}\n");
  std::fflush(stdout);
}

oar::Tensor random(const oar::Shape& shape, oar::DType dtype, const oar::Device& device) {
  return oar::uniform(shape, -1.0, 1.0, dtype, device, /*seed=*/42);
}

oar::Tensor apply(const char* op, std::vector<oar::Tensor> in, const oar::Attrs& attrs) {
  return oar::apply1(oar::OpRegistry::instance().get(op), in, attrs);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string arg = argv[i], value = argv[i + 1];
    if (arg == "--reps") o.reps = std::stoi(value);
    else if (arg == "--warmup") o.warmup = std::stoi(value);
    else if (arg == "--device") o.device = value;
    else if (arg == "--only") o.only = value;
  }
  const oar::Device dev{o.device, 0};
  auto want = [&](const char* op) { return o.only.empty() || o.only == op; };
  auto time = [&](const std::function<void()>& fn) { return median_ms(fn, o.reps, o.warmup); };

  if (want("matmul")) {
    for (oar::DType dtype : {oar::DType::f32, oar::DType::bf16}) {
      for (int64_t n : {256, 1024, 2048}) {
        oar::Tensor a = random({n, n}, dtype, dev), b = random({n, n}, dtype, dev);
        const std::string shape = std::to_string(n) + "^3 " + (dtype == oar::DType::f32 ? "f32" : "bf16");
        emit("matmul", shape, time([&] { oar::matmul(a, b); }));
      }
    }
  }
  const int64_t big = 16 << 20;  // 16M elements
  if (want("add")) {
    oar::Tensor a = random({big}, oar::DType::f32, dev), b = random({big}, oar::DType::f32, dev);
    emit("add", "16M f32", time([&] { oar::add(a, b); }), "oar", 3.0 * 4 * big);
    // The bandwidth limit: a parallel memcpy of one operand (read + write)
    // into a buffer already touched, as the caching allocator hands out.
    std::vector<float> src(static_cast<size_t>(big), 1.0f), dst(static_cast<size_t>(big), 0.0f);
    emit("memcpy", "16M f32", time([&] {
           const int64_t chunk = big / omp_get_max_threads() + 1;
#pragma omp parallel for
           for (int t = 0; t < omp_get_max_threads(); ++t) {
             const int64_t s = t * chunk, e = std::min<int64_t>(big, s + chunk);
             if (s < e) std::memcpy(dst.data() + s, src.data() + s, static_cast<size_t>(e - s) * 4);
           }
         }),
         "oar", 2.0 * 4 * big);
  }
  if (want("reduce_sum")) {
    oar::Tensor a = random({big}, oar::DType::f32, dev);
    emit("reduce_sum", "16M f32", time([&] { oar::sum(a); }), "oar", 4.0 * big);
  }
  if (want("softmax") || want("layer_norm")) {
    oar::Tensor x = random({4096, 4096}, oar::DType::f32, dev);
    oar::Tensor w = random({4096}, oar::DType::f32, dev), b = random({4096}, oar::DType::f32, dev);
    if (want("softmax")) emit("softmax", "4096x4096 f32", time([&] { oar::softmax(x, -1); }));
    if (want("softmax")) emit("log_softmax", "4096x4096 f32", time([&] { oar::log_softmax(x, -1); }));
    if (want("layer_norm")) emit("layer_norm", "4096x4096 f32", time([&] { oar::layer_norm(x, w, b, 1e-5, -1); }));
  }
  if (want("conv2d")) {
    const std::string shape = "8x64x56x56 k3 p1 f32";
    oar::Tensor x = random({8, 64, 56, 56}, oar::DType::f32, dev), w = random({64, 64, 3, 3}, oar::DType::f32, dev);
    oar::Tensor g = random({8, 64, 56, 56}, oar::DType::f32, dev);
    oar::Attrs attrs{{"strides", std::vector<int64_t>{1, 1}},
                     {"paddings", std::vector<int64_t>{1, 1}},
                     {"dilations", std::vector<int64_t>{1, 1}},
                     {"groups", int64_t{1}}};
    oar::Attrs data_attrs = attrs, weight_attrs = attrs;
    data_attrs.set("input_shape", std::vector<int64_t>{8, 64, 56, 56});
    weight_attrs.set("weight_shape", std::vector<int64_t>{64, 64, 3, 3});
    emit("conv2d_fwd", shape, time([&] { oar::conv2d(x, w, oar::Tensor(), {1}, {1}); }));
    emit("conv2d_bwd_data", shape, time([&] { apply("conv2d_grad_input", {g, w}, data_attrs); }));
    emit("conv2d_bwd_weights", shape, time([&] { apply("conv2d_grad_weight", {x, g}, weight_attrs); }));
    // Forward and both gradients through autograd.
    emit("conv2d_fwd_bwd", shape, time([&] {
           oar::Tensor xr = x.detach().set_requires_grad(), wr = w.detach().set_requires_grad();
           oar::grad({oar::conv2d(xr, wr, oar::Tensor(), {1}, {1})}, {xr, wr}, {g});
         }));
  }
  if (want("tiny_add")) {
    // Dispatch overhead: a 1-element add through the eager API, per call.
    oar::Tensor a = oar::ones({1}, oar::DType::f32, dev), b = oar::ones({1}, oar::DType::f32, dev);
    const int calls = 20000;
    double ms = time([&] {
      for (int i = 0; i < calls; ++i) oar::add(a, b);
    });
    emit("tiny_add_us", "1 f32", ms * 1e3 / calls);  // microseconds per call, in the ms field
  }
  return 0;
}
