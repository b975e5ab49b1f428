// Gradient checks for the autograd tests: the analytic gradient from
// oar::grad against central finite differences, in f64.
//
// A check differentiates the scalar sum(f(x) * v) for a fixed random v of
// f's output shape. `gradient_of` turns f into that analytic gradient
// contracted with fixed random w's, sum_k sum(grad_k * w_k), computed with
// create_graph; checking it checks the second derivative against finite
// differences of the first-order analytic gradient, and applying it twice
// checks the third.
#pragma once

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"

namespace oar_test {

/// A function of several tensors (some differentiated) to one tensor.
using TensorFn = std::function<oar::Tensor(const std::vector<oar::Tensor>&)>;

/// Uniform values in [lo, hi), the same for the same (n, seed).
inline std::vector<double> random_values(int64_t n, uint64_t seed, double lo = -1.0,
                                         double hi = 1.0) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(gen);
  return v;
}

/// A random f64 tensor from a per-process sequence of seeds (tests stay
/// reproducible: the sequence restarts in every process).
inline oar::Tensor random_f64(const oar::Shape& shape, const oar::Device& device, double lo = -1.0,
                              double hi = 1.0) {
  static uint64_t next_seed = 1;
  return oar::Tensor::from_vector(random_values(oar::shape_numel(shape), next_seed++, lo, hi),
                                  shape, device);
}

/// Like random_f64, but |x| in [lo, hi) with a random sign: away from 0
/// (abs, sign, divide, prod, relu).
inline oar::Tensor random_nonzero_f64(const oar::Shape& shape, const oar::Device& device,
                                      double lo = 0.2, double hi = 1.0) {
  oar::Tensor magnitude = random_f64(shape, device, lo, hi);
  return oar::where(
      oar::greater_than(random_f64(shape, device), oar::zeros(shape, oar::DType::f64, device)),
      magnitude, -magnitude);
}

inline oar::Tensor int64s(const std::vector<int64_t>& v, const oar::Shape& shape,
                          const oar::Device& device) {
  return oar::Tensor::from_vector(v, shape, device);
}

/// Tolerances of one check: |analytic - numeric| <= atol + rtol * |numeric|.
struct GradTolerance {
  double eps = 1e-6;
  double atol = 1e-6;
  double rtol = 1e-6;
};

namespace detail {

// Fresh leaves: the differentiated inputs require grad, the rest are kept.
inline std::vector<oar::Tensor> make_leaves(const std::vector<oar::Tensor>& inputs,
                                            const std::vector<size_t>& wrt) {
  std::vector<oar::Tensor> leaves = inputs;
  for (size_t i : wrt) leaves[i] = inputs[i].detach().set_requires_grad(true);
  return leaves;
}

inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace detail

/// Checks the gradients of sum(f(inputs) * v) with respect to inputs[wrt]
/// (f64 tensors) against central differences. `strict`: f's output must
/// require grad and every input must be reached (first order); otherwise an
/// output without history or an unreached input has gradient zero (the
/// derivatives of a gradient that does not depend on some input).
inline void check_gradients(const TensorFn& f, const std::vector<oar::Tensor>& inputs,
                            const std::vector<size_t>& wrt, GradTolerance tol = {},
                            bool strict = true) {
  const oar::Device& device = inputs[wrt.at(0)].device();
  std::vector<oar::Tensor> leaves = detail::make_leaves(inputs, wrt);
  oar::Tensor y = f(leaves);
  std::vector<double> v_host = random_values(y.numel(), 7);
  oar::Tensor v = oar::Tensor::from_vector(v_host, y.shape(), device);

  std::vector<oar::Tensor> targets;
  for (size_t i : wrt) targets.push_back(leaves[i]);
  std::vector<oar::Tensor> analytic(wrt.size());
  if (strict) REQUIRE(y.requires_grad());
  if (y.requires_grad()) analytic = oar::grad({y}, targets, {v}, false, std::nullopt, !strict);

  for (size_t k = 0; k < wrt.size(); ++k) {
    const oar::Tensor& x = inputs[wrt[k]];
    REQUIRE(x.dtype() == oar::DType::f64);
    std::vector<double> x_host = x.to_vector<double>();
    std::vector<double> got =
        analytic[k].defined() ? values(analytic[k]) : std::vector<double>(x_host.size(), 0.0);
    REQUIRE(got.size() == x_host.size());
    for (size_t j = 0; j < x_host.size(); ++j) {
      auto at = [&](double delta) {
        std::vector<double> moved = x_host;
        moved[j] += delta;
        std::vector<oar::Tensor> in = inputs;
        in[wrt[k]] = oar::Tensor::from_vector(moved, x.shape(), device);
        return detail::dot(values(f(detail::make_leaves(in, wrt))), v_host);
      };
      double numeric = (at(tol.eps) - at(-tol.eps)) / (2 * tol.eps);
      INFO("input " << wrt[k] << " element " << j << ": analytic " << got[j] << ", numeric "
                    << numeric);
      CHECK(std::abs(got[j] - numeric) <= tol.atol + tol.rtol * std::abs(numeric));
    }
  }
}

/// The scalar sum_k sum(grad_k * w_k), grad_k the gradient of sum(f * v)
/// for inputs[wrt[k]], computed with create_graph so that it is
/// differentiable again. v and the w_k are fixed random tensors (`seed`).
inline TensorFn gradient_of(TensorFn f, std::vector<size_t> wrt, uint64_t seed) {
  return [f = std::move(f), wrt = std::move(wrt), seed](const std::vector<oar::Tensor>& in) {
    oar::Tensor y = f(in);
    const oar::Device& device = y.device();
    oar::Tensor total = oar::zeros({}, oar::DType::f64, device);
    if (!y.requires_grad()) return total;
    oar::Tensor v = oar::Tensor::from_vector(random_values(y.numel(), seed), y.shape(), device);
    std::vector<oar::Tensor> targets;
    for (size_t i : wrt) targets.push_back(in[i]);
    std::vector<oar::Tensor> grads =
        oar::grad({y}, targets, {v}, /*create_graph=*/true, std::nullopt,
                  /*allow_unused=*/true);
    for (size_t k = 0; k < grads.size(); ++k) {
      if (!grads[k].defined()) continue;
      const oar::Tensor& x = in[wrt[k]];
      oar::Tensor w =
          oar::Tensor::from_vector(random_values(x.numel(), seed + 1 + k), x.shape(), device);
      total = total + oar::sum(grads[k] * w);
    }
    return total;
  };
}

/// Checks the second derivatives of f: the gradient of gradient_of(f).
inline void check_second_order(const TensorFn& f, const std::vector<oar::Tensor>& inputs,
                               const std::vector<size_t>& wrt, GradTolerance tol = {}) {
  check_gradients(gradient_of(f, wrt, 11), inputs, wrt, tol, /*strict=*/false);
}

/// Checks the third derivatives of f.
inline void check_third_order(const TensorFn& f, const std::vector<oar::Tensor>& inputs,
                              const std::vector<size_t>& wrt, GradTolerance tol = {}) {
  check_gradients(gradient_of(gradient_of(f, wrt, 11), wrt, 23), inputs, wrt, tol,
                  /*strict=*/false);
}

}  // namespace oar_test
