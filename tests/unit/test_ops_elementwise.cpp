// Elementwise ops: unary math, binary arithmetic and comparisons, where,
// cast, dtype promotion, scalar operators and broadcasting edge cases.
#include <cmath>
#include <cstdint>
#include <limits>

#include "test_util.h"

using oar::DType;
using oar::Shape;
using oar::Tensor;
using oar_test::check_close;
using oar_test::test_devices;
using oar_test::values;

namespace {

Tensor f32(const std::vector<float>& v, const Shape& s, const oar::Device& d) {
  return Tensor::from_vector(v, s, d);
}
Tensor f64(const std::vector<double>& v, const Shape& s, const oar::Device& d) {
  return Tensor::from_vector(v, s, d);
}
Tensor i32(const std::vector<int32_t>& v, const Shape& s, const oar::Device& d) {
  return Tensor::from_vector(v, s, d);
}
Tensor i64(const std::vector<int64_t>& v, const Shape& s, const oar::Device& d) {
  return Tensor::from_vector(v, s, d);
}

std::vector<bool> bools(const Tensor& t) {
  REQUIRE(t.dtype() == DType::boolean);
  return t.to_vector<bool>();
}

struct UnaryCase {
  const char* name;
  Tensor (*op)(const Tensor&);
  double (*ref)(double);
  std::vector<double> inputs;
};

const std::vector<UnaryCase>& unary_cases() {
  static const std::vector<UnaryCase> cases = {
      {"neg", oar::neg, [](double x) { return -x; }, {-2.5, -1, 0, 0.5, 3}},
      {"abs", oar::abs, [](double x) { return std::abs(x); }, {-2.5, -1, 0, 0.5, 3}},
      {"exp", oar::exp, [](double x) { return std::exp(x); }, {-2, -0.5, 0, 1, 3}},
      {"log",
       oar::log,
       [](double x) { return std::log(x); },
       {0.25, 0.5, 1, 2.718281828459045, 10}},
      {"sqrt", oar::sqrt, [](double x) { return std::sqrt(x); }, {0, 0.25, 1, 2, 9}},
      {"rsqrt", oar::rsqrt, [](double x) { return 1.0 / std::sqrt(x); }, {0.25, 1, 2, 4, 100}},
      {"sin", oar::sin, [](double x) { return std::sin(x); }, {-3, -1, 0, 0.5, 2}},
      {"cos", oar::cos, [](double x) { return std::cos(x); }, {-3, -1, 0, 0.5, 2}},
      {"tanh", oar::tanh, [](double x) { return std::tanh(x); }, {-20, -1, 0, 0.5, 3}},
      {"erf", oar::erf, [](double x) { return std::erf(x); }, {-2, -0.5, 0, 0.3, 1.5}},
      {"expm1", oar::expm1, [](double x) { return std::expm1(x); }, {-3, -0.5, 0, 1e-4, 2}},
      {"sign",
       oar::sign,
       [](double x) { return double((x > 0) - (x < 0)); },
       {-2.5, -0.1, 0, 0.1, 7}},
      {"floor", oar::floor, [](double x) { return std::floor(x); }, {-1.5, -1, -0.2, 0.7, 2.5}},
      {"ceil", oar::ceil, [](double x) { return std::ceil(x); }, {-1.5, -1, -0.2, 0.7, 2.5}},
  };
  return cases;
}

}  // namespace

TEST_CASE("unary float ops match std:: functions in f32 and f64") {
  for (const auto& device : test_devices()) {
    for (const auto& c : unary_cases()) {
      INFO(device.str() << " " << c.name);
      std::vector<double> want;
      for (double x : c.inputs) want.push_back(c.ref(x));
      std::vector<float> in32(c.inputs.begin(), c.inputs.end());
      Tensor y32 = c.op(f32(in32, {5}, device));
      CHECK(y32.dtype() == DType::f32);
      CHECK(y32.shape() == Shape{5});
      check_close(y32, want, 1e-6, 1e-6);
      Tensor y64 = c.op(f64(c.inputs, {5}, device));
      CHECK(y64.dtype() == DType::f64);
      check_close(y64, want, 1e-12, 1e-12);
    }
  }
}

// expm1 is the op the registry's one-definition contract was proved on
// (Note [One op definition] in core/src/ops/op_registry.cpp).
TEST_CASE("expm1 keeps its precision near 0, where exp(x) - 1 loses it, and its gradient is e^x") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    // e^1e-6 - 1 = 1.0000005e-6; in f32 exp(x) - 1 gives 9.5367e-7 (5% off).
    Tensor x = f32({1e-6f, -1e-6f, 3e-8f}, {3}, device);
    std::vector<float> got = oar::expm1(x).to_vector<float>();
    const double want[] = {std::expm1(1e-6), std::expm1(-1e-6), std::expm1(3e-8)};
    for (size_t i = 0; i < 3; ++i) CHECK(std::abs(got[i] - want[i]) <= 1e-6 * std::abs(want[i]));
    CHECK(std::abs(oar::subtract(oar::exp(x), oar::ones_like(x)).to_vector<float>()[0] - want[0]) > 1e-2 * want[0]);

    Tensor xs = f64({-1, 0, 0.5}, {3}, device).set_requires_grad();
    oar::sum(oar::expm1(xs)).backward();
    check_close(xs.grad(), {std::exp(-1.0), 1.0, std::exp(0.5)}, 1e-12, 1e-12);
    // An integer input is refused by the meta rule, naming the op.
    std::string e = oar_test::error_of([&] { oar::expm1(i32({1}, {1}, device)); });
    CHECK(e.find("expm1: input 0 has dtype int32 but a floating dtype is required") != std::string::npos);
  }
}

TEST_CASE("neg, abs and sign accept integers; logical_not gives bool") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor x = i32({-3, 0, 5}, {3}, device);
    CHECK(oar::neg(x).to_vector<int32_t>() == std::vector<int32_t>{3, 0, -5});
    CHECK(oar::abs(x).to_vector<int32_t>() == std::vector<int32_t>{3, 0, 5});
    CHECK(oar::sign(x).to_vector<int32_t>() == std::vector<int32_t>{-1, 0, 1});
    CHECK(oar::neg(i64({-4, 9}, {2}, device)).to_vector<int64_t>() == std::vector<int64_t>{4, -9});
    CHECK(bools(oar::logical_not(f32({0, 1.5, -2}, {3}, device))) ==
          std::vector<bool>{true, false, false});
    CHECK(bools(oar::logical_not(x)) == std::vector<bool>{false, true, false});
    Tensor b = Tensor::from_vector<bool>({true, false}, {2}, device);
    CHECK(bools(oar::logical_not(b)) == std::vector<bool>{false, true});
  }
}

TEST_CASE("binary arithmetic ops") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor a = f32({1, -2, 3, 4}, {2, 2}, device);
    Tensor b = f32({2, 2, -1, 0.5}, {2, 2}, device);
    check_close(oar::add(a, b), {3, 0, 2, 4.5});
    check_close(oar::subtract(a, b), {-1, -4, 4, 3.5});
    check_close(oar::multiply(a, b), {2, -4, -3, 2});
    check_close(oar::divide(a, b), {0.5, -1, -3, 8});
    check_close(oar::maximum(a, b), {2, 2, 3, 4});
    check_close(oar::minimum(a, b), {1, -2, -1, 0.5});
    check_close(a + b, {3, 0, 2, 4.5});
    check_close(a - b, {-1, -4, 4, 3.5});
    check_close(a * b, {2, -4, -3, 2});
    check_close(a / b, {0.5, -1, -3, 8});
    check_close(-a, {-1, 2, -3, -4});
    Tensor base = f64({1, 2, 9, 4}, {4}, device);
    check_close(oar::pow(base, f64({2, 0.5, -1, 3}, {4}, device)), {1, std::sqrt(2.0), 1.0 / 9, 64},
                1e-12, 1e-12);
    check_close(oar::pow(base, 2.0), {1, 4, 81, 16}, 1e-12, 1e-12);
    CHECK(oar::add(a, b).shape() == Shape{2, 2});
  }
}

TEST_CASE("comparison and logical ops write bool") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor a = f32({1, 2, 3}, {3}, device);
    Tensor b = f32({2, 2, 2}, {3}, device);
    CHECK(bools(oar::equal(a, b)) == std::vector<bool>{false, true, false});
    CHECK(bools(oar::not_equal(a, b)) == std::vector<bool>{true, false, true});
    CHECK(bools(oar::less_than(a, b)) == std::vector<bool>{true, false, false});
    CHECK(bools(oar::less_equal(a, b)) == std::vector<bool>{true, true, false});
    CHECK(bools(oar::greater_than(a, b)) == std::vector<bool>{false, false, true});
    CHECK(bools(oar::greater_equal(a, b)) == std::vector<bool>{false, true, true});
    Tensor p = f32({0, 1, 2, 0}, {4}, device);
    Tensor q = f32({0, 0, -3, 4}, {4}, device);
    CHECK(bools(oar::logical_and(p, q)) == std::vector<bool>{false, false, true, false});
    CHECK(bools(oar::logical_or(p, q)) == std::vector<bool>{false, true, true, true});
    Tensor t = Tensor::from_vector<bool>({true, true, false, false}, {4}, device);
    Tensor u = Tensor::from_vector<bool>({true, false, true, false}, {4}, device);
    CHECK(bools(oar::logical_and(t, u)) == std::vector<bool>{true, false, false, false});
    CHECK(bools(oar::logical_or(t, u)) == std::vector<bool>{true, true, true, false});
    // Integer comparisons and comparisons that broadcast.
    CHECK(bools(oar::less_than(i64({-5, 7}, {2, 1}, device), i64({0, 7}, {2}, device))) ==
          std::vector<bool>{true, true, false, false});
  }
}

TEST_CASE("where selects and broadcasts") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor cond = Tensor::from_vector<bool>({true, false, true, false}, {4}, device);
    Tensor x = f32({1, 2, 3, 4}, {4}, device);
    Tensor y = f32({10, 20, 30, 40}, {4}, device);
    check_close(oar::where(cond, x, y), {1, 20, 3, 40});
    // cond [2,1], x [1,3], y [] -> [2,3].
    Tensor c2 = Tensor::from_vector<bool>({true, false}, {2, 1}, device);
    Tensor out = oar::where(c2, f32({1, 2, 3}, {1, 3}, device), f32({-1}, {}, device));
    CHECK(out.shape() == Shape{2, 3});
    check_close(out, {1, 2, 3, -1, -1, -1});
    // x i32 and y f32 promote to f32.
    Tensor mixed = oar::where(cond, i32({1, 2, 3, 4}, {4}, device), y);
    CHECK(mixed.dtype() == DType::f32);
    check_close(mixed, {1, 20, 3, 40});
  }
}

TEST_CASE("cast between dtypes") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor x = f32({1.7f, -1.7f, 2.5f, -0.2f, 0}, {5}, device);
    // float -> int truncates toward zero.
    CHECK(oar::cast(x, DType::i32).to_vector<int32_t>() == std::vector<int32_t>{1, -1, 2, 0, 0});
    CHECK(oar::cast(x, DType::i64).to_vector<int64_t>() == std::vector<int64_t>{1, -1, 2, 0, 0});
    CHECK(bools(oar::cast(x, DType::boolean)) == std::vector<bool>{true, true, true, true, false});
    CHECK(oar::cast(i32({-3, 0, 7}, {3}, device), DType::f32).to_vector<float>() ==
          std::vector<float>{-3, 0, 7});
    CHECK(oar::cast(i64({-3, 0, 7}, {3}, device), DType::i32).to_vector<int32_t>() ==
          std::vector<int32_t>{-3, 0, 7});
    CHECK(oar::cast(Tensor::from_vector<bool>({true, false}, {2}, device), DType::f32)
              .to_vector<float>() == std::vector<float>{1, 0});
    CHECK(oar::cast(f64({0.1, -2.75}, {2}, device), DType::f32).to_vector<float>() ==
          std::vector<float>{0.1f, -2.75f});
    CHECK(oar::cast(x, DType::f32).shape() == Shape{5});
  }
}

TEST_CASE("cast to f16 and bf16 rounds to nearest even") {
  const double e11 = std::ldexp(1.0, -11), e8 = std::ldexp(1.0, -8);
  for (const auto& device : test_devices()) {
    INFO(device.str());
    // Exactly representable values survive the round trip.
    Tensor exact = f32({1, 0.5, -2, 65504, 0}, {5}, device);
    check_close(oar::cast(exact, DType::f16), {1, 0.5, -2, 65504, 0}, 0, 0);
    check_close(oar::cast(f32({1, 0.5, -2, 256}, {4}, device), DType::bf16), {1, 0.5, -2, 256}, 0,
                0);
    // f16 has 10 fraction bits: 1 + 2^-11 ties to 1, 1 + 3*2^-11 ties to 1 + 2^-9.
    Tensor h =
        oar::cast(f32({float(1 + e11), float(1 + 3 * e11), 100000.0f}, {3}, device), DType::f16);
    CHECK(h.dtype() == DType::f16);
    auto hv = values(h);
    CHECK(hv[0] == 1.0);
    CHECK(hv[1] == 1 + std::ldexp(1.0, -9));
    CHECK(std::isinf(hv[2]));
    // bf16 has 7 fraction bits: 1 + 2^-8 ties to 1, 1 + 3*2^-8 ties to 1 + 2^-6.
    Tensor bf =
        oar::cast(f32({float(1 + e8), float(1 + 3 * e8), 3.14159f}, {3}, device), DType::bf16);
    CHECK(bf.dtype() == DType::bf16);
    auto bv = values(bf);
    CHECK(bv[0] == 1.0);
    CHECK(bv[1] == 1 + std::ldexp(1.0, -6));
    CHECK(bv[2] == 3.140625);
    // f16 subnormals: 2^-25 ties to 0, 3 * 2^-25 ties to 2^-23; NaN and inf survive.
    const float inf = std::numeric_limits<float>::infinity();
    auto sub = values(oar::cast(
        f32({std::ldexp(1.0f, -25), 3 * std::ldexp(1.0f, -25), std::ldexp(1.0f, -24)}, {3}, device),
        DType::f16));
    CHECK(sub == std::vector<double>{0, std::ldexp(1.0, -23), std::ldexp(1.0, -24)});
    for (DType half : {DType::f16, DType::bf16}) {
      auto special = values(oar::cast(f32({std::nanf(""), inf, -inf}, {3}, device), half));
      CHECK(std::isnan(special[0]));
      CHECK(special[1] == inf);
      CHECK(special[2] == -inf);
    }
    CHECK(bools(oar::cast(f32({std::nanf(""), -0.0f}, {2}, device), DType::boolean)) ==
          std::vector<bool>{true, false});
    // Back to int and f32.
    CHECK(oar::cast(bf, DType::i32).to_vector<int32_t>() == std::vector<int32_t>{1, 1, 3});
    CHECK(oar::cast(h, DType::f32).to_vector<float>()[1] == float(1 + std::ldexp(1.0, -9)));
    CHECK(oar::cast(oar::cast(i32({-7, 300}, {2}, device), DType::f16), DType::i64)
              .to_vector<int64_t>() == std::vector<int64_t>{-7, 300});
  }
}

TEST_CASE("dtype promotion of binary ops") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor a = i32({1, 2, 3}, {3}, device);
    Tensor r = a + f32({0.5, 0.5, 0.5}, {3}, device);
    CHECK(r.dtype() == DType::f32);
    check_close(r, {1.5, 2.5, 3.5});
    Tensor w = a + i64({10, 20, 30}, {3}, device);
    CHECK(w.dtype() == DType::i64);
    CHECK(w.to_vector<int64_t>() == std::vector<int64_t>{11, 22, 33});
    Tensor d = f32({1}, {1}, device) + f64({2}, {1}, device);
    CHECK(d.dtype() == DType::f64);
    Tensor hb = oar::cast(f32({1}, {1}, device), DType::f16) +
                oar::cast(f32({2}, {1}, device), DType::bf16);
    CHECK(hb.dtype() == DType::f32);
    check_close(hb, {3});
    Tensor bi = Tensor::from_vector<bool>({true, false, true}, {3}, device) + a;
    CHECK(bi.dtype() == DType::i32);
    CHECK(bi.to_vector<int32_t>() == std::vector<int32_t>{2, 2, 4});
  }
}

TEST_CASE("scalar operators take the tensor's dtype") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor x = f32({1, 2, 4}, {3}, device);
    check_close(x + 2.0, {3, 4, 6});
    check_close(x - 1.0, {0, 1, 3});
    check_close(x * 3.0, {3, 6, 12});
    check_close(x / 2.0, {0.5, 1, 2});
    check_close(2.0 + x, {3, 4, 6});
    check_close(10.0 - x, {9, 8, 6});
    check_close(0.5 * x, {0.5, 1, 2});
    check_close(1.0 / x, {1, 0.5, 0.25});
    CHECK((x * 3.0).dtype() == DType::f32);
    Tensor xi = i32({1, 2, 3}, {3}, device);
    Tensor yi = xi + 2.0;
    CHECK(yi.dtype() == DType::i32);
    CHECK(yi.to_vector<int32_t>() == std::vector<int32_t>{3, 4, 5});
    CHECK((f64({1, 2}, {2}, device) * 2.0).dtype() == DType::f64);
    Tensor s = oar::scalar_like(x, 7.0);
    CHECK(s.shape() == Shape{});
    CHECK(s.item() == 7.0);
  }
}

TEST_CASE("broadcasting edge cases") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    // [3,1] + [1,4] -> [3,4]
    Tensor c = f32({0, 10, 20}, {3, 1}, device) + f32({1, 2, 3, 4}, {1, 4}, device);
    CHECK(c.shape() == Shape{3, 4});
    std::vector<double> want;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) want.push_back(10 * i + j + 1);
    check_close(c, want);
    // [2,3] + [3]
    Tensor r = f32({1, 2, 3, 4, 5, 6}, {2, 3}, device) + f32({10, 20, 30}, {3}, device);
    CHECK(r.shape() == Shape{2, 3});
    check_close(r, {11, 22, 33, 14, 25, 36});
    // [] + [2,2], both orders
    Tensor s = f32({5}, {}, device);
    Tensor m = f32({1, 2, 3, 4}, {2, 2}, device);
    CHECK((s + m).shape() == Shape{2, 2});
    check_close(s - m, {4, 3, 2, 1});
    check_close(m - s, {-4, -3, -2, -1});
    CHECK((s + s).shape() == Shape{});
    check_close(s * s, {25});
    // size 0: [0,3] + [1,3] -> [0,3]
    Tensor empty = oar::zeros({0, 3}, DType::f32, device) + f32({1, 2, 3}, {1, 3}, device);
    CHECK(empty.shape() == Shape{0, 3});
    CHECK(empty.numel() == 0);
    CHECK(empty.to_vector<float>().empty());
    CHECK((f32({1, 2, 3}, {3}, device) * oar::zeros({2, 0, 1}, DType::f32, device)).shape() ==
          Shape{2, 0, 3});
    // size-1 dims
    Tensor one = f32({2}, {1}, device) + f32({3}, {1}, device);
    CHECK(one.shape() == Shape{1});
    check_close(one, {5});
    Tensor g = f32({1, 2, 3}, {1, 1, 3}, device) * f32({1, 10}, {2, 1}, device);
    CHECK(g.shape() == Shape{1, 2, 3});
    check_close(g, {1, 2, 3, 10, 20, 30});
    CHECK((f32({7}, {1, 1}, device) + f32({1}, {}, device)).shape() == Shape{1, 1});
  }
}

TEST_CASE("integer arithmetic") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor a = i32({7, -7, 7, -7, 5}, {5}, device);
    Tensor b = i32({2, 2, -2, -2, 0}, {5}, device);
    // Division truncates toward zero; division by zero writes 0 on mock and cpu.
    CHECK(oar::divide(a, b).to_vector<int32_t>() == std::vector<int32_t>{3, -3, -3, 3, 0});
    CHECK(oar::add(a, b).to_vector<int32_t>() == std::vector<int32_t>{9, -5, 5, -9, 5});
    CHECK(oar::subtract(a, b).to_vector<int32_t>() == std::vector<int32_t>{5, -9, 9, -5, 5});
    CHECK(oar::multiply(a, b).to_vector<int32_t>() == std::vector<int32_t>{14, -14, -14, 14, 0});
    CHECK(oar::maximum(a, b).to_vector<int32_t>() == std::vector<int32_t>{7, 2, 7, -2, 5});
    CHECK(oar::minimum(a, b).to_vector<int32_t>() == std::vector<int32_t>{2, -7, -2, -7, 0});
    Tensor big = i64({3000000000LL, -9, 9}, {3}, device);
    Tensor k = i64({2, 4, -4}, {3}, device);
    CHECK(oar::multiply(big, k).to_vector<int64_t>() ==
          std::vector<int64_t>{6000000000LL, -36, -36});
    CHECK(oar::divide(big, k).to_vector<int64_t>() == std::vector<int64_t>{1500000000LL, -2, -2});
    CHECK(oar::add(big, k).to_vector<int64_t>() == std::vector<int64_t>{3000000002LL, -5, 5});
    CHECK(oar::add(a, i32({1}, {1}, device)).dtype() == DType::i32);
  }
}
