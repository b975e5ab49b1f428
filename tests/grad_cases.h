// The differentiable ops as gradient-check cases, shared by the first-order
// (test_autograd_gradcheck.cpp) and second-order
// (test_autograd_higher_order.cpp) checks. Inputs stay away from the points
// where an op is not differentiable: abs/sign/relu/prod/divide at 0,
// log/sqrt/rsqrt at x <= 0, ties of max/min (random values have none).
#pragma once

#include <string>
#include <vector>

#include "gradcheck.h"

namespace oar_test {

struct GradCase {
  std::string name;
  TensorFn f;
  std::vector<oar::Tensor> inputs;
  std::vector<size_t> wrt;  ///< the differentiated inputs (f64)
  GradTolerance tol{};
};

/// Every differentiable op on `d`, with broadcast, axis and option variants.
inline std::vector<GradCase> grad_cases(const oar::Device& d) {
  using oar::Shape;
  using oar::Tensor;
  using Ins = std::vector<Tensor>;
  auto rnd = [&](const Shape& s, double lo = -1.0, double hi = 1.0) {
    return random_f64(s, d, lo, hi);
  };
  auto nonzero = [&](const Shape& s) { return random_nonzero_f64(s, d); };
  auto positive = [&](const Shape& s) { return random_f64(s, d, 0.5, 2.0); };
  std::vector<GradCase> cases;
  auto add = [&](std::string name, TensorFn f, Ins inputs, std::vector<size_t> wrt,
                 GradTolerance tol = {}) {
    cases.push_back({std::move(name), std::move(f), std::move(inputs), std::move(wrt), tol});
  };
  auto unary = [&](std::string name, Tensor (*op)(const Tensor&), Tensor x) {
    add(std::move(name), [op](const Ins& in) { return op(in[0]); }, {std::move(x)}, {0});
  };

  // ---- elementwise ----
  using UnaryOps = std::vector<std::pair<const char*, Tensor (*)(const Tensor&)>>;
  for (auto [name, op] : UnaryOps{{"neg", oar::neg},
                                  {"exp", oar::exp},
                                  {"sin", oar::sin},
                                  {"cos", oar::cos},
                                  {"tanh", oar::tanh},
                                  {"erf", oar::erf}}) {
    unary(name, op, rnd({2, 3}));
  }
  unary("abs", oar::abs, nonzero({2, 3}));
  for (auto [name, op] : UnaryOps{{"log", oar::log}, {"sqrt", oar::sqrt}, {"rsqrt", oar::rsqrt}}) {
    unary(name, op, positive({2, 3}));
  }
  // Piecewise constant: the gradient is zero (finite differences agree).
  for (auto [name, op] :
       UnaryOps{{"sign", oar::sign}, {"floor", oar::floor}, {"ceil", oar::ceil}}) {
    unary(name, op, nonzero({2, 3}) * 1.7);
  }

  const std::vector<std::pair<Shape, Shape>> broadcasts = {
      {{3, 1}, {1, 4}}, {{2, 3}, {3}}, {{}, {2, 3}}};
  for (const auto& [sa, sb] : broadcasts) {
    std::string shapes = " " + oar::shape_str(sa) + " " + oar::shape_str(sb);
    add("add" + shapes, [](const Ins& in) { return in[0] + in[1]; }, {rnd(sa), rnd(sb)}, {0, 1});
    add("subtract" + shapes, [](const Ins& in) { return in[0] - in[1]; }, {rnd(sa), rnd(sb)},
        {0, 1});
    add("multiply" + shapes, [](const Ins& in) { return in[0] * in[1]; }, {rnd(sa), rnd(sb)},
        {0, 1});
    add("divide" + shapes, [](const Ins& in) { return in[0] / in[1]; }, {rnd(sa), nonzero(sb)},
        {0, 1});
    add("pow" + shapes, [](const Ins& in) { return oar::pow(in[0], in[1]); },
        {positive(sa), rnd(sb)}, {0, 1});
    add("maximum" + shapes, [](const Ins& in) { return oar::maximum(in[0], in[1]); },
        {rnd(sa), rnd(sb)}, {0, 1});
    add("minimum" + shapes, [](const Ins& in) { return oar::minimum(in[0], in[1]); },
        {rnd(sa), rnd(sb)}, {0, 1});
  }
  add("pow scalar exponent", [](const Ins& in) { return oar::pow(in[0], 3.0); }, {rnd({2, 3})},
      {0});
  add("where", [](const Ins& in) { return oar::where(in[0], in[1], in[2]); },
      {oar::greater_than(rnd({3, 1}), oar::zeros({}, oar::DType::f64, d)), rnd({3, 4}), rnd({4})},
      {1, 2});
  // f64 -> f32 -> f64: the f32 rounding (~6e-8) needs a larger step.
  add("cast f64->f32->f64",
      [](const Ins& in) { return oar::cast(oar::cast(in[0], oar::DType::f32), oar::DType::f64); },
      {rnd({2, 3})}, {0}, {.eps = 1e-2, .atol = 2e-5, .rtol = 2e-5});

  // ---- reductions ----
  using Axes = std::vector<int64_t>;
  auto reduction = [&](std::string name, Tensor (*op)(const Tensor&, Axes, bool), Tensor x,
                       Axes axes, bool keep) {
    add(name + " axes " + oar::shape_str(axes) + (keep ? " keepdim" : ""),
        [op, axes, keep](const Ins& in) { return op(in[0], axes, keep); }, {std::move(x)}, {0});
  };
  reduction("sum", oar::sum, rnd({2, 3, 4}), {}, false);
  reduction("sum", oar::sum, rnd({2, 3, 4}), {1}, true);
  reduction("sum", oar::sum, rnd({2, 3, 4}), {0, -1}, false);
  reduction("prod", oar::prod, nonzero({2, 3}), {}, false);
  reduction("prod", oar::prod, nonzero({2, 3, 2}), {1}, true);
  reduction("max", oar::max, rnd({3, 4}), {}, false);
  reduction("max", oar::max, rnd({3, 4}), {1}, true);
  reduction("min", oar::min, rnd({3, 4}), {0}, false);
  reduction("min", oar::min, rnd({2, 3}), {}, true);
  reduction("mean", oar::mean, rnd({2, 3, 4}), {}, false);
  reduction("mean", oar::mean, rnd({2, 3, 4}), {1, 2}, true);
  add("var axes [1] unbiased", [](const Ins& in) { return oar::var(in[0], {1}); }, {rnd({3, 4})},
      {0});
  add("var biased keepdim", [](const Ins& in) { return oar::var(in[0], {}, false, true); },
      {rnd({2, 3})}, {0});

  // ---- matmul ----
  auto mm = [&](const Shape& sa, const Shape& sb, bool ta, bool tb) {
    add("matmul " + oar::shape_str(sa) + (ta ? "^T " : " ") + oar::shape_str(sb) + (tb ? "^T" : ""),
        [ta, tb](const Ins& in) { return oar::matmul(in[0], in[1], ta, tb); }, {rnd(sa), rnd(sb)},
        {0, 1});
  };
  mm({2, 3}, {3, 4}, false, false);
  mm({3, 2}, {3, 4}, true, false);
  mm({2, 3}, {4, 3}, false, true);
  mm({3, 2}, {4, 3}, true, true);
  mm({2, 1, 2, 3}, {3, 3, 4}, false, false);  // batch dims broadcast
  mm({3}, {3, 4}, false, false);
  mm({2, 3, 4}, {4}, false, false);
  mm({3}, {3}, false, false);

  // ---- manipulation ----
  add("reshape", [](const Ins& in) { return oar::reshape(in[0], {3, -1}); }, {rnd({2, 6})}, {0});
  add("transpose",
      [](const Ins& in) {
        return oar::transpose(in[0], {2, 0, 1});
      },
      {rnd({2, 3, 4})}, {0});
  add("broadcast_to",
      [](const Ins& in) {
        return oar::broadcast_to(in[0], {2, 3, 4});
      },
      {rnd({3, 1})}, {0});
  add("slice", [](const Ins& in) { return oar::slice(in[0], {0}, {1}, {3}); }, {rnd({4, 5})}, {0});
  add("slice step 2", [](const Ins& in) { return oar::slice(in[0], {1}, {1}, {5}, {2}); },
      {rnd({4, 5})}, {0});
  add("slice negative steps",
      [](const Ins& in) {
        return oar::slice(in[0], {0, 1}, {3, -1}, {-5, -6}, {-2, -1});
      },
      {rnd({4, 5})}, {0});
  add("concat axis 1",
      [](const Ins& in) {
        return oar::concat({in[0], in[1], in[2]}, 1);
      },
      {rnd({2, 1}), rnd({2, 3}), rnd({2, 2})}, {0, 1, 2});
  add("concat axis 0",
      [](const Ins& in) {
        return oar::concat({in[0], in[1]}, 0);
      },
      {rnd({1, 3}), rnd({2, 3})}, {0, 1});
  add("pad", [](const Ins& in) { return oar::pad(in[0], {1, 0, 2, 1}, 0.5); }, {rnd({2, 3})}, {0});
  add("gather axis 0 (repeated index)", [](const Ins& in) { return oar::gather(in[0], in[1], 0); },
      {rnd({5, 3}), int64s({2, 0, 2, 4}, {4}, d)}, {0});
  add("gather axis 1", [](const Ins& in) { return oar::gather(in[0], in[1], 1); },
      {rnd({3, 4}), int64s({3, 1}, {2}, d)}, {0});
  add("scatter_add", [](const Ins& in) { return oar::scatter_add(in[0], in[1], in[2], 0); },
      {rnd({4, 3}), int64s({1, 3, 1}, {3}, d), rnd({3, 3})}, {0, 2});
  add("squeeze", [](const Ins& in) { return oar::squeeze(in[0], {1}); }, {rnd({2, 1, 3})}, {0});
  add("unsqueeze",
      [](const Ins& in) {
        return oar::unsqueeze(in[0], {0, -1});
      },
      {rnd({2, 3})}, {0});
  add("flatten", [](const Ins& in) { return oar::flatten(in[0], 1, 2); }, {rnd({2, 3, 2})}, {0});

  // ---- nn ----
  unary("relu", oar::relu, nonzero({2, 3}));
  unary("sigmoid", oar::sigmoid, rnd({2, 3}, -3, 3));
  unary("silu", oar::silu, rnd({2, 3}, -3, 3));
  add("gelu", [](const Ins& in) { return oar::gelu(in[0]); }, {rnd({2, 3}, -3, 3)}, {0});
  add("gelu approximate", [](const Ins& in) { return oar::gelu(in[0], true); },
      {rnd({2, 3}, -3, 3)}, {0});
  add("softmax", [](const Ins& in) { return oar::softmax(in[0]); }, {rnd({3, 4}, -2, 2)}, {0});
  add("softmax axis 0", [](const Ins& in) { return oar::softmax(in[0], 0); }, {rnd({3, 4}, -2, 2)},
      {0});
  add("log_softmax", [](const Ins& in) { return oar::log_softmax(in[0]); }, {rnd({3, 4}, -2, 2)},
      {0});
  add("log_softmax axis 1", [](const Ins& in) { return oar::log_softmax(in[0], 1); },
      {rnd({2, 3, 2}, -2, 2)}, {0});
  add("layer_norm", [](const Ins& in) { return oar::layer_norm(in[0], in[1], in[2]); },
      {rnd({2, 3, 4}), rnd({4}), rnd({4})}, {0, 1, 2});
  add("layer_norm begin_axis 1",
      [](const Ins& in) { return oar::layer_norm(in[0], in[1], in[2], 1e-5, 1); },
      {rnd({2, 3, 2}), rnd({3, 2}), rnd({3, 2})}, {0, 1, 2});
  add("rms_norm", [](const Ins& in) { return oar::rms_norm(in[0], in[1]); },
      {rnd({3, 5}), rnd({5})}, {0, 1});
  add("linear", [](const Ins& in) { return oar::linear(in[0], in[1], in[2]); },
      {rnd({2, 3, 4}), rnd({4, 5}), rnd({5})}, {0, 1, 2});
  add("linear without bias", [](const Ins& in) { return oar::linear(in[0], in[1]); },
      {rnd({3, 4}), rnd({4, 2})}, {0, 1});

  // ---- losses and layers ----
  auto hard_ce = [&](std::string name, std::vector<int64_t> labels, Shape label_shape,
                     Shape logits_shape, int64_t axis, std::string reduction,
                     int64_t ignore_index) {
    add("cross_entropy " + name,
        [axis, reduction, ignore_index](const Ins& in) {
          return oar::cross_entropy(in[0], in[1], false, axis, reduction, ignore_index);
        },
        {rnd(logits_shape, -2, 2), int64s(labels, label_shape, d)}, {0});
  };
  hard_ce("mean", {1, 0, 4, 2}, {4}, {4, 5}, -1, "mean", -100);
  hard_ce("mean ignore_index", {1, -100, 4, 2}, {4}, {4, 5}, -1, "mean", -100);
  hard_ce("sum ignore_index 2", {1, 2, 4, 2}, {4, 1}, {4, 5}, -1, "sum", 2);
  hard_ce("none", {3, 0, 4, 2}, {4}, {4, 5}, -1, "none", -100);
  hard_ce("axis 1", {0, 2, 1, 1, 0, 2, 2, 1}, {2, 4}, {2, 3, 4}, 1, "mean", -100);
  for (std::string reduction : {"mean", "none"}) {
    add("cross_entropy soft " + reduction,
        [reduction](const Ins& in) {
          return oar::cross_entropy(in[0], in[1], true, -1, reduction);
        },
        {rnd({3, 4}, -2, 2), oar::softmax(rnd({3, 4}, -2, 2))}, {0, 1});
  }
  for (std::string reduction : {"mean", "sum", "none"}) {
    add("mse_loss " + reduction,
        [reduction](const Ins& in) { return oar::mse_loss(in[0], in[1], reduction); },
        {rnd({2, 3}), rnd({3})}, {0, 1});
  }
  add("embedding", [](const Ins& in) { return oar::embedding(in[0], in[1]); },
      {int64s({1, 4, 1, 0, 5, 4}, {2, 3}, d), rnd({6, 4})}, {1});
  for (bool causal : {false, true}) {
    std::string tag = causal ? " causal" : "";
    auto attention = [causal](const Ins& in) {
      return oar::scaled_dot_product_attention(in[0], in[1], in[2], causal);
    };
    add("scaled_dot_product_attention" + tag, attention,
        {rnd({1, 3, 2, 3}), rnd({1, 4, 2, 3}), rnd({1, 4, 2, 2})}, {0, 1, 2});
    add("scaled_dot_product_attention square" + tag, attention,
        {rnd({2, 3, 1, 2}), rnd({2, 3, 1, 2}), rnd({2, 3, 1, 2})}, {0, 1, 2});
  }
  // Reseeding makes every call draw the same mask.
  add("dropout",
      [](const Ins& in) {
        oar::seed(1234);
        return oar::dropout(in[0], 0.4);
      },
      {rnd({4, 5})}, {0});
  return cases;
}

}  // namespace oar_test
