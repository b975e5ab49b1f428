// Composite ops (relu, sigmoid, silu, gelu, softmax, log_softmax,
// layer_norm, rms_norm, linear) against plain loops, and the error
// sentences ops raise.
#include <cmath>
#include <cstdint>

#include "test_util.h"

using oar::DType;
using oar::Shape;
using oar::Tensor;
using oar_test::check_close;
using oar_test::error_of;
using oar_test::test_devices;

namespace {

Tensor f32(const std::vector<float>& v, const Shape& s, const oar::Device& d) {
  return Tensor::from_vector(v, s, d);
}

std::vector<double> map(const std::vector<float>& xs, double (*f)(double)) {
  std::vector<double> out;
  for (float x : xs) out.push_back(f(x));
  return out;
}

// Softmax of each row of a row-major [rows, cols] matrix.
std::vector<double> host_softmax(const std::vector<float>& x, int rows, int cols, bool log_space) {
  std::vector<double> y(x.size());
  for (int r = 0; r < rows; ++r) {
    double mx = x[r * cols];
    for (int c = 0; c < cols; ++c) mx = std::max(mx, double(x[r * cols + c]));
    double total = 0;
    for (int c = 0; c < cols; ++c) total += std::exp(x[r * cols + c] - mx);
    for (int c = 0; c < cols; ++c) {
      double shifted = x[r * cols + c] - mx;
      y[r * cols + c] = log_space ? shifted - std::log(total) : std::exp(shifted) / total;
    }
  }
  return y;
}

// Layer norm of each row of [rows, cols]; empty weight/bias mean 1 and 0.
std::vector<double> host_layer_norm(const std::vector<float>& x, int rows, int cols,
                                    const std::vector<float>& w, const std::vector<float>& b,
                                    double eps) {
  std::vector<double> y(x.size());
  for (int r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int c = 0; c < cols; ++c) mean += x[r * cols + c];
    mean /= cols;
    for (int c = 0; c < cols; ++c) var += (x[r * cols + c] - mean) * (x[r * cols + c] - mean);
    var /= cols;
    for (int c = 0; c < cols; ++c) {
      double v = (x[r * cols + c] - mean) / std::sqrt(var + eps);
      y[r * cols + c] = v * (w.empty() ? 1.0 : w[c]) + (b.empty() ? 0.0 : b[c]);
    }
  }
  return y;
}

}  // namespace

TEST_CASE("relu, sigmoid, silu and gelu") {
  std::vector<float> xs = {-3, -1, -0.5, 0, 0.5, 1, 2.5};
  Shape shape = {7};
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor x = f32(xs, shape, device);
    check_close(oar::relu(x), {0, 0, 0, 0, 0.5, 1, 2.5});
    CHECK(oar::relu(Tensor::from_vector<int32_t>({-2, 0, 3}, {3}, device)).to_vector<int32_t>() ==
          std::vector<int32_t>{0, 0, 3});
    check_close(oar::sigmoid(x), map(xs, [](double v) { return 1 / (1 + std::exp(-v)); }), 1e-6,
                1e-6);
    check_close(oar::silu(x), map(xs, [](double v) { return v / (1 + std::exp(-v)); }), 1e-6, 1e-6);
    check_close(oar::gelu(x),
                map(xs, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }),
                1e-6, 1e-6);
    check_close(oar::gelu(x, true),
                map(xs,
                    [](double v) {
                      return 0.5 * v *
                             (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
                    }),
                1e-6, 1e-6);
    // A few values known by heart.
    check_close(oar::sigmoid(f32({0}, {1}, device)), {0.5});
    check_close(oar::gelu(f32({0, 1}, {2}, device)), {0, 0.8413447460685429}, 1e-6, 1e-6);
    CHECK(oar::gelu(Tensor::from_vector<double>({1}, {1}, device)).dtype() == DType::f64);
  }
}

TEST_CASE("softmax and log_softmax") {
  std::vector<float> xs = {1, 2, 3, -1, 0, 5};  // [2,3]
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor x = f32(xs, {2, 3}, device);
    Tensor s = oar::softmax(x);
    CHECK(s.shape() == Shape{2, 3});
    check_close(s, host_softmax(xs, 2, 3, false), 1e-6, 1e-6);
    check_close(oar::sum(s, {-1}), {1, 1}, 1e-6, 0);
    check_close(oar::log_softmax(x), host_softmax(xs, 2, 3, true), 1e-6, 1e-6);
    // axis 0: softmax of each column, i.e. of the rows of the transpose.
    std::vector<float> xt = {1, -1, 2, 0, 3, 5};
    auto col = host_softmax(xt, 3, 2, false);
    check_close(oar::softmax(x, 0), {col[0], col[2], col[4], col[1], col[3], col[5]}, 1e-6, 1e-6);
    check_close(oar::sum(oar::softmax(x, 0), {0}), {1, 1, 1}, 1e-6, 0);
    // Large inputs stay finite: softmax is shift invariant.
    Tensor big = f32({1000, 1001, 1002, -1000, 0, 1000}, {2, 3}, device);
    check_close(oar::softmax(big),
                {0.09003057317038046, 0.24472847105479767, 0.6652409557748219, 0, 0, 1}, 1e-6,
                1e-6);
    check_close(oar::log_softmax(big),
                {-2.4076059644443806, -1.4076059644443806, -0.4076059644443806, -2000, -1000, 0},
                1e-4, 1e-6);
    CHECK_THROWS_AS(oar::softmax(Tensor::from_vector<int32_t>({1, 2}, {2}, device)), oar::Error);
  }
}

TEST_CASE("layer_norm with and without weight and bias") {
  std::vector<float> xs = {1, 2, 3, 2, 4, 9};  // [2,3]
  std::vector<float> w = {1, 2, 0.5}, b = {0, 1, -1};
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor x = f32(xs, {2, 3}, device);
    Tensor y = oar::layer_norm(x, f32(w, {3}, device), f32(b, {3}, device), 1e-5);
    CHECK(y.shape() == Shape{2, 3});
    check_close(y, host_layer_norm(xs, 2, 3, w, b, 1e-5), 1e-5, 1e-5);
    check_close(oar::layer_norm(x, Tensor(), Tensor(), 1e-5),
                host_layer_norm(xs, 2, 3, {}, {}, 1e-5), 1e-5, 1e-5);
    check_close(oar::layer_norm(x, f32(w, {3}, device), Tensor(), 1e-5),
                host_layer_norm(xs, 2, 3, w, {}, 1e-5), 1e-5, 1e-5);
    // Row {1,2,3}: mean 2, variance 2/3, so (x - 2) / sqrt(2/3).
    check_close(oar::slice(oar::layer_norm(x, Tensor(), Tensor(), 0), {0}, {0}, {1}),
                {-1.224744871391589, 0, 1.224744871391589}, 1e-5, 1e-5);
    // begin_axis 1 on [2,2,2] normalizes each group of 4 with a [2,2] weight.
    std::vector<float> x3 = {1, 2, 3, 4, 0, 0, 8, 8}, w3 = {1, -1, 2, 0.5}, b3 = {0, 0, 1, 1};
    Tensor y3 = oar::layer_norm(f32(x3, {2, 2, 2}, device), f32(w3, {2, 2}, device),
                                f32(b3, {2, 2}, device), 1e-5, 1);
    CHECK(y3.shape() == Shape{2, 2, 2});
    check_close(y3, host_layer_norm(x3, 2, 4, w3, b3, 1e-5), 1e-5, 1e-5);
    std::string msg = error_of([&] { oar::layer_norm(x, f32({1, 2}, {2}, device), Tensor()); });
    CHECK(msg.find("layer_norm") != std::string::npos);
  }
}

TEST_CASE("rms_norm with and without weight") {
  std::vector<float> xs = {1, 2, 3, -4, 0, 4};  // [2,3]
  std::vector<float> w = {1, 2, 3};
  for (const auto& device : test_devices()) {
    INFO(device.str());
    std::vector<double> want, want_w;
    for (int r = 0; r < 2; ++r) {
      double ms = 0;
      for (int c = 0; c < 3; ++c) ms += double(xs[r * 3 + c]) * xs[r * 3 + c] / 3;
      for (int c = 0; c < 3; ++c) {
        want.push_back(xs[r * 3 + c] / std::sqrt(ms + 1e-6));
        want_w.push_back(want.back() * w[c]);
      }
    }
    Tensor x = f32(xs, {2, 3}, device);
    check_close(oar::rms_norm(x, Tensor()), want, 1e-5, 1e-5);
    check_close(oar::rms_norm(x, f32(w, {3}, device)), want_w, 1e-5, 1e-5);
    // Row {-4, 0, 4}: mean square 32/3.
    check_close(oar::slice(oar::rms_norm(x, Tensor(), 0), {0}, {1}, {2}),
                {-4 / std::sqrt(32.0 / 3), 0, 4 / std::sqrt(32.0 / 3)}, 1e-5, 1e-5);
  }
}

TEST_CASE("linear with and without bias") {
  std::vector<float> xs = {1, 2, 3, 4, 5, 6};    // [2,3]
  std::vector<float> w = {1, 0, -1, 2, 0.5, 1};  // [3,2]
  std::vector<float> b = {10, -10};
  for (const auto& device : test_devices()) {
    INFO(device.str());
    std::vector<double> want(4, 0.0);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j)
        for (int k = 0; k < 3; ++k) want[i * 2 + j] += double(xs[i * 3 + k]) * w[k * 2 + j];
    Tensor x = f32(xs, {2, 3}, device), wt = f32(w, {3, 2}, device);
    Tensor y = oar::linear(x, wt);
    CHECK(y.shape() == Shape{2, 2});
    check_close(y, want);
    check_close(oar::linear(x, wt, f32(b, {2}, device)),
                {want[0] + 10, want[1] - 10, want[2] + 10, want[3] - 10});
    // Leading dims pass through: [1,2,3] -> [1,2,2].
    Tensor y3 = oar::linear(oar::reshape(x, {1, 2, 3}), wt, f32(b, {2}, device));
    CHECK(y3.shape() == Shape{1, 2, 2});
    check_close(y3, {want[0] + 10, want[1] - 10, want[2] + 10, want[3] - 10});
    std::string msg = error_of([&] { oar::linear(x, wt, f32({1, 2, 3}, {3}, device)); });
    CHECK(msg.find("linear") != std::string::npos);
  }
}

TEST_CASE("errors are sentences naming the op and the shapes") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    std::string mm = error_of([&] {
      oar::matmul(oar::zeros({2, 3}, DType::f32, device), oar::zeros({4, 5}, DType::f32, device));
    });
    INFO(mm);
    CHECK(mm.find("matmul") != std::string::npos);
    CHECK(mm.find("[2, 3]") != std::string::npos);
    CHECK(mm.find("[4, 5]") != std::string::npos);

    std::string add = error_of([&] {
      oar::add(oar::zeros({2, 3}, DType::f32, device), oar::zeros({4}, DType::f32, device));
    });
    INFO(add);
    CHECK(add.find("add") != std::string::npos);
    CHECK(add.find("[2, 3]") != std::string::npos);
    CHECK(add.find("[4]") != std::string::npos);

    std::string ex = error_of([&] { oar::exp(Tensor::from_vector<int32_t>({1, 2}, {2}, device)); });
    INFO(ex);
    CHECK(ex.find("exp") != std::string::npos);
    CHECK(ex.find("int32") != std::string::npos);

    try {
      oar::sum(oar::zeros({2}, DType::f32, device), {3});
      FAIL("sum over axis 3 of a 1-D tensor did not throw");
    } catch (const oar::Error& e) {
      CHECK(e.code() == oar::ErrorCode::invalid_argument);
      CHECK(std::string(e.what()).find("sum") != std::string::npos);
    }
    CHECK(error_of([&] { oar::softmax(oar::zeros({2}, DType::f32, device), 2); }).find("softmax") !=
          std::string::npos);
    CHECK(error_of([&] {
            oar::transpose(oar::zeros({2, 3}, DType::f32, device), {0});
          }).find("transpose") != std::string::npos);
    CHECK(error_of([&] {
            oar::where(oar::zeros({2}, DType::f32, device), oar::zeros({2}, DType::f32, device),
                       oar::zeros({2}, DType::f32, device));
          }).find("where") != std::string::npos);
  }
}

TEST_CASE("ops on tensors of two devices name both devices") {
  oar::Device cpu{"cpu", 0}, mock{"mock", 0};
  Tensor a = oar::ones({2, 2}, DType::f32, cpu);
  Tensor b = oar::ones({2, 2}, DType::f32, mock);
  for (const std::string& msg :
       {error_of([&] { oar::add(a, b); }), error_of([&] { oar::matmul(b, a); }), error_of([&] {
          oar::where(oar::ones({2, 2}, DType::boolean, cpu), a, b);
        }),
        error_of([&] {
          oar::concat({a, b});
        }),
        error_of([&] { oar::linear(a, b); })}) {
    INFO(msg);
    CHECK(msg.find("cpu:0") != std::string::npos);
    CHECK(msg.find("mock:0") != std::string::npos);
  }
  // After moving one operand the op works.
  check_close(oar::add(a, b.to(cpu)), {2, 2, 2, 2});
}
