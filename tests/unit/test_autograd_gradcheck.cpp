// First-order gradients of every differentiable op (grad_cases.h) against
// central finite differences in f64, on the cpu and mock devices; plus a few
// gradients a human can check by hand.
#include <cmath>
#include <cstdint>

#include "grad_cases.h"

using oar::DType;
using oar::Tensor;
using oar_test::check_close;
using oar_test::test_devices;

TEST_CASE("every differentiable op: analytic gradient matches finite differences") {
  for (const auto& device : test_devices()) {
    for (const auto& c : oar_test::grad_cases(device)) {
      INFO(device.str() << ": " << c.name);
      oar_test::check_gradients(c.f, c.inputs, c.wrt, c.tol);
    }
  }
}

TEST_CASE("hand-checked gradients") {
  for (const auto& device : test_devices()) {
    CAPTURE(device.str());
    SUBCASE("d sum(x^3) / dx = 3 x^2") {
      Tensor x =
          Tensor::from_vector(std::vector<double>{1, 2, -3}, {3}, device).set_requires_grad();
      check_close(oar::grad({oar::sum(oar::pow(x, 3.0))}, {x})[0], {3, 12, 27});
    }
    SUBCASE(
        "broadcast [3,1] * [1,4]: each gradient sums the other operand over the broadcast dim") {
      Tensor a =
          Tensor::from_vector(std::vector<double>{1, 2, 3}, {3, 1}, device).set_requires_grad();
      Tensor b = Tensor::from_vector(std::vector<double>{1, 10, 100, 1000}, {1, 4}, device)
                     .set_requires_grad();
      auto g = oar::grad({oar::sum(a * b)}, {a, b});
      CHECK(g[0].shape() == oar::Shape{3, 1});
      CHECK(g[1].shape() == oar::Shape{1, 4});
      check_close(g[0], {1111, 1111, 1111});
      check_close(g[1], {6, 6, 6, 6});
    }
    SUBCASE("max over a row sends the gradient to the largest element") {
      Tensor x = Tensor::from_vector(std::vector<double>{1, 5, 2, 7, 3, 4}, {2, 3}, device)
                     .set_requires_grad();
      check_close(oar::grad({oar::sum(oar::max(x, {1}))}, {x})[0], {0, 1, 0, 1, 0, 0});
    }
    SUBCASE("cross_entropy with one label ignored: softmax - one_hot over the 2 counted rows") {
      Tensor logits = oar::zeros({3, 2}, DType::f64, device).set_requires_grad();
      Tensor labels = Tensor::from_vector(std::vector<int64_t>{0, -100, 1}, {3}, device);
      check_close(oar::grad({oar::cross_entropy(logits, labels)}, {logits})[0],
                  {-0.25, 0.25, 0, 0, 0.25, -0.25});
    }
  }
}

TEST_CASE("dropout: the gradient is the mask it drew, scaled by 1/(1-p)") {
  for (const auto& device : test_devices()) {
    CAPTURE(device.str());
    const double p = 0.3;
    Tensor x = oar_test::random_f64({8, 16}, device, 0.5, 1.5).set_requires_grad();
    Tensor v = oar_test::random_f64({8, 16}, device);
    oar::seed(99);
    Tensor y = oar::dropout(x, p);
    Tensor g = oar::grad({y}, {x}, {v})[0];
    auto xs = oar_test::values(x), ys = oar_test::values(y), vs = oar_test::values(v);
    std::vector<double> want;
    int64_t kept = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      bool keep = ys[i] != 0.0;  // x > 0, so y == 0 exactly where the mask dropped
      kept += keep;
      if (keep) CHECK(ys[i] == doctest::Approx(xs[i] / (1 - p)).epsilon(1e-12));
      want.push_back(keep ? vs[i] / (1 - p) : 0.0);
    }
    check_close(g, want, 1e-12, 1e-12);
    CHECK(kept > 64);  // about 0.7 of 128 kept
    CHECK(kept < 115);
  }
}
