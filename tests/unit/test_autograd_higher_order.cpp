// Higher-order gradients: grad-of-grad of every differentiable op
// (grad_cases.h) against finite differences of the first-order analytic
// gradient; third order for tanh, sin, exp, matmul and softmax against
// finite differences of the second-order gradient, and for tanh, sin and
// exp against closed forms.
#include <cmath>

#include "grad_cases.h"

using oar::DType;
using oar::Tensor;
using oar_test::check_close;
using oar_test::test_devices;
using Ins = std::vector<Tensor>;

TEST_CASE("every differentiable op: second derivatives match finite differences of the gradient") {
  // Ops that are linear in an input (add, reshape, ...) or piecewise constant
  // (sign, floor) have a gradient that does not depend on it: their second
  // derivative is zero, which the finite differences confirm.
  for (const auto& device : test_devices()) {
    for (const auto& c : oar_test::grad_cases(device)) {
      INFO(device.str() << ": " << c.name);
      oar_test::check_second_order(c.f, c.inputs, c.wrt, c.tol);
    }
  }
}

TEST_CASE("third derivatives match finite differences of the second-order gradient") {
  oar_test::GradTolerance tol{.eps = 1e-6, .atol = 1e-6, .rtol = 1e-6};
  for (const auto& device : test_devices()) {
    CAPTURE(device.str());
    Tensor x = oar_test::random_f64({2, 3}, device);
    oar_test::check_third_order([](const Ins& in) { return oar::tanh(in[0]); }, {x}, {0}, tol);
    oar_test::check_third_order([](const Ins& in) { return oar::sin(in[0]); }, {x}, {0}, tol);
    oar_test::check_third_order([](const Ins& in) { return oar::exp(in[0]); }, {x}, {0}, tol);
    // matmul is bilinear: its only nonzero second derivatives are mixed, and
    // the third vanish (finite differences of the second-order gradient
    // confirm both).
    oar_test::check_third_order(
        [](const Ins& in) { return oar::matmul(in[0], in[1]); },
        {oar_test::random_f64({2, 3}, device), oar_test::random_f64({3, 2}, device)}, {0, 1}, tol);
    // The product of the output with itself gives matmul a nonzero third derivative.
    oar_test::check_third_order(
        [](const Ins& in) {
          Tensor y = oar::matmul(in[0], in[1], false, true);
          return y * y * y;
        },
        {oar_test::random_f64({2, 3}, device), oar_test::random_f64({2, 3}, device)}, {0, 1}, tol);
    oar_test::check_third_order([](const Ins& in) { return oar::softmax(in[0]); },
                                {oar_test::random_f64({2, 3}, device, -2, 2)}, {0}, tol);
  }
}

TEST_CASE("third derivatives of tanh, sin and exp equal their closed forms") {
  for (const auto& device : test_devices()) {
    CAPTURE(device.str());
    auto third = [](Tensor (*f)(const Tensor&), const Tensor& x) {
      // Elementwise ops: grad of sum(f^(k)(x)) is f^(k+1)(x).
      Tensor d1 = oar::grad({oar::sum(f(x))}, {x}, {}, true)[0];
      Tensor d2 = oar::grad({oar::sum(d1)}, {x}, {}, true)[0];
      return oar::grad({oar::sum(d2)}, {x})[0];
    };
    std::vector<double> xs{-1.5, -0.3, 0.0, 0.4, 1.2, 2.0};
    Tensor x = Tensor::from_vector(xs, {2, 3}, device).set_requires_grad();
    std::vector<double> tanh3, sin3, exp3;
    for (double v : xs) {
      double t = std::tanh(v);
      tanh3.push_back((1 - t * t) * (6 * t * t - 2));  // tanh''' = (1 - t^2)(6 t^2 - 2)
      sin3.push_back(-std::cos(v));                    // sin''' = -cos
      exp3.push_back(std::exp(v));                     // exp''' = exp
    }
    check_close(third(oar::tanh, x), tanh3, 1e-12, 1e-12);
    check_close(third(oar::sin, x), sin3, 1e-12, 1e-12);
    check_close(third(oar::exp, x), exp3, 1e-12, 1e-12);
  }
}

TEST_CASE("second derivative of x^3 is 6x; the gradient keeps a graph only with create_graph") {
  for (const auto& device : test_devices()) {
    CAPTURE(device.str());
    Tensor x = Tensor::from_vector(std::vector<double>{1, -2}, {2}, device).set_requires_grad();
    Tensor g = oar::grad({oar::sum(x * x * x)}, {x}, {}, true)[0];
    CHECK(g.requires_grad());
    check_close(g, {3, 12});
    check_close(oar::grad({oar::sum(g)}, {x})[0], {6, -12});
    CHECK_FALSE(oar::grad({oar::sum(x * x * x)}, {x})[0].requires_grad());
  }
}
