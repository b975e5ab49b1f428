// Conformance: the cpu plugin and the mock reference give the same results
// on the same random inputs (host std::mt19937 values copied to both), for
// every primitive and composite op, across broadcasting, size-0, size-1 and
// odd shapes, in f32 and f64 (and bf16/f16 for a few ops).
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>

#include "test_util.h"

using oar::DType;
using oar::Shape;
using oar::Tensor;
using oar_test::check_close;
using oar_test::values;

namespace {

const oar::Device kCpu{"cpu", 0};
const oar::Device kMock{"mock", 0};

// The same tensor on both devices.
struct Both {
  Tensor cpu, mock;
};

// Uniform values in [lo, hi); `integral` rounds them (so ties and zeros occur).
std::vector<float> random_values(int64_t n, uint32_t seed, float lo, float hi,
                                 bool integral = false) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = integral ? std::round(dist(gen)) : dist(gen);
  return v;
}

Both both(const std::vector<float>& v, const Shape& shape, DType dtype = DType::f32) {
  return {oar::cast(Tensor::from_vector(v, shape, kCpu), dtype),
          oar::cast(Tensor::from_vector(v, shape, kMock), dtype)};
}

Both random_both(const Shape& shape, uint32_t seed, DType dtype = DType::f32, float lo = -2,
                 float hi = 2, bool integral = false) {
  return both(random_values(oar::shape_numel(shape), seed, lo, hi, integral), shape, dtype);
}

Both index_both(int64_t n, int64_t bound, uint32_t seed, DType dtype) {
  std::mt19937 gen(seed);
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (auto& i : v) i = static_cast<int64_t>(gen() % static_cast<uint32_t>(bound));
  return {oar::cast(Tensor::from_vector(v, {n}, kCpu), dtype),
          oar::cast(Tensor::from_vector(v, {n}, kMock), dtype)};
}

double tolerance(DType dtype) {
  return dtype == DType::f64 ? 1e-12 : dtype == DType::f32 ? 1e-5 : 1e-2;
}

// cpu and mock agree on shape, dtype and values (|c - m| <= atol + rtol |m|).
void check_same(const Tensor& c, const Tensor& m, double atol, double rtol) {
  CHECK(c.device() == kCpu);
  CHECK(m.device() == kMock);
  CHECK(oar::shape_str(c.shape()) == oar::shape_str(m.shape()));
  CHECK(c.dtype() == m.dtype());
  check_close(values(c), values(m), atol, rtol);
}

using Unary = std::function<Tensor(const Tensor&)>;
using Binary = std::function<Tensor(const Tensor&, const Tensor&)>;

void check_unary(const Unary& fn, const Both& x, double tol) {
  check_same(fn(x.cpu), fn(x.mock), tol, tol);
}
void check_binary(const Binary& fn, const Both& a, const Both& b, double tol) {
  check_same(fn(a.cpu, b.cpu), fn(a.mock, b.mock), tol, tol);
}

}  // namespace

TEST_CASE("conformance: unary and composite elementwise ops") {
  struct Op {
    const char* name;
    Unary fn;
    float lo, hi;
    bool integral;
  };
  const std::vector<Op> ops = {
      {"neg", [](const Tensor& x) { return oar::neg(x); }, -3, 3, false},
      {"abs", [](const Tensor& x) { return oar::abs(x); }, -3, 3, false},
      {"exp", [](const Tensor& x) { return oar::exp(x); }, -5, 5, false},
      {"log", [](const Tensor& x) { return oar::log(x); }, 0.01f, 10, false},
      {"sqrt", [](const Tensor& x) { return oar::sqrt(x); }, 0, 10, false},
      {"rsqrt", [](const Tensor& x) { return oar::rsqrt(x); }, 0.01f, 10, false},
      {"sin", [](const Tensor& x) { return oar::sin(x); }, -6, 6, false},
      {"cos", [](const Tensor& x) { return oar::cos(x); }, -6, 6, false},
      {"tanh", [](const Tensor& x) { return oar::tanh(x); }, -4, 4, false},
      {"erf", [](const Tensor& x) { return oar::erf(x); }, -3, 3, false},
      {"sign", [](const Tensor& x) { return oar::sign(x); }, -2, 2, true},
      {"floor", [](const Tensor& x) { return oar::floor(x); }, -3, 3, false},
      {"ceil", [](const Tensor& x) { return oar::ceil(x); }, -3, 3, false},
      {"logical_not", [](const Tensor& x) { return oar::logical_not(x); }, -1, 1, true},
      {"relu", [](const Tensor& x) { return oar::relu(x); }, -3, 3, false},
      {"sigmoid", [](const Tensor& x) { return oar::sigmoid(x); }, -8, 8, false},
      {"silu", [](const Tensor& x) { return oar::silu(x); }, -8, 8, false},
      {"gelu", [](const Tensor& x) { return oar::gelu(x); }, -4, 4, false},
      {"gelu_tanh", [](const Tensor& x) { return oar::gelu(x, true); }, -4, 4, false},
      {"softmax", [](const Tensor& x) { return oar::softmax(x); }, -10, 10, false},
      {"log_softmax", [](const Tensor& x) { return oar::log_softmax(x); }, -10, 10, false},
  };
  const std::vector<Shape> shapes = {{}, {1}, {17}, {3, 33}, {0, 5}, {1, 1, 1}, {2, 1023}};
  uint32_t seed = 1;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (const Shape& shape : shapes) {
      for (const auto& op : ops) {
        INFO(op.name << " " << oar::dtype_name(dtype) << " " << oar::shape_str(shape));
        check_unary(op.fn, random_both(shape, seed++, dtype, op.lo, op.hi, op.integral),
                    tolerance(dtype));
      }
    }
  }
  // softmax along a leading axis.
  Both x = random_both({33, 17}, 99);
  check_unary([](const Tensor& t) { return oar::softmax(t, 0); }, x, 1e-5);
  check_unary([](const Tensor& t) { return oar::log_softmax(t, -2); }, x, 1e-5);
}

TEST_CASE("conformance: binary ops with broadcasting") {
  struct Op {
    const char* name;
    Binary fn;
    float lo, hi;
    bool integral;
  };
  const std::vector<Op> ops = {
      {"add", [](const Tensor& a, const Tensor& b) { return oar::add(a, b); }, -3, 3, false},
      {"subtract", [](const Tensor& a, const Tensor& b) { return oar::subtract(a, b); }, -3, 3,
       false},
      {"multiply", [](const Tensor& a, const Tensor& b) { return oar::multiply(a, b); }, -3, 3,
       false},
      {"divide", [](const Tensor& a, const Tensor& b) { return oar::divide(a, b); }, 0.5f, 3,
       false},
      {"pow", [](const Tensor& a, const Tensor& b) { return oar::pow(a, b); }, 0.1f, 2.5f, false},
      {"maximum", [](const Tensor& a, const Tensor& b) { return oar::maximum(a, b); }, -3, 3,
       false},
      {"minimum", [](const Tensor& a, const Tensor& b) { return oar::minimum(a, b); }, -3, 3,
       false},
      {"equal", [](const Tensor& a, const Tensor& b) { return oar::equal(a, b); }, -2, 2, true},
      {"not_equal", [](const Tensor& a, const Tensor& b) { return oar::not_equal(a, b); }, -2, 2,
       true},
      {"less_than", [](const Tensor& a, const Tensor& b) { return oar::less_than(a, b); }, -2, 2,
       true},
      {"less_equal", [](const Tensor& a, const Tensor& b) { return oar::less_equal(a, b); }, -2, 2,
       true},
      {"greater_than", [](const Tensor& a, const Tensor& b) { return oar::greater_than(a, b); }, -2,
       2, true},
      {"greater_equal", [](const Tensor& a, const Tensor& b) { return oar::greater_equal(a, b); },
       -2, 2, true},
      {"logical_and", [](const Tensor& a, const Tensor& b) { return oar::logical_and(a, b); }, -1,
       1, true},
      {"logical_or", [](const Tensor& a, const Tensor& b) { return oar::logical_or(a, b); }, -1, 1,
       true},
  };
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{17}, {17}},     {{3, 1}, {1, 33}}, {{4, 33}, {33}},      {{}, {5, 7}},     {{5, 7}, {}},
      {{0, 3}, {1, 3}}, {{1}, {1}},        {{2, 1, 17}, {3, 1}}, {{1023}, {1023}}, {{2, 0}, {0}},
  };
  uint32_t seed = 1000;
  for (DType dtype : {DType::f32, DType::f64, DType::i32, DType::i64}) {
    for (const auto& [sa, sb] : shapes) {
      for (const auto& op : ops) {
        bool is_int = dtype == DType::i32 || dtype == DType::i64;
        if (is_int && std::string(op.name) == "pow") continue;  // pow is float only
        INFO(op.name << " " << oar::dtype_name(dtype) << " " << oar::shape_str(sa) << " "
                     << oar::shape_str(sb));
        // Integers: values in [-20, 20]; divisors in [-5, 5] (x / 0 writes 0 on both).
        float lo = is_int ? -20 : op.lo, hi = is_int ? 20 : op.hi;
        bool divisor = is_int && std::string(op.name) == "divide";
        Both a = random_both(sa, seed++, dtype, lo, hi, op.integral || is_int);
        Both b = random_both(sb, seed++, dtype, divisor ? -5 : lo, divisor ? 5 : hi,
                             op.integral || is_int);
        check_binary(op.fn, a, b, tolerance(dtype));
      }
    }
  }
}

TEST_CASE("conformance: where, cast, scalar operators") {
  Both cond_src = random_both({4, 1, 33}, 7, DType::f32, -1, 1);
  Tensor cond_cpu = oar::greater_than(cond_src.cpu, oar::zeros({}, DType::f32, kCpu));
  Tensor cond_mock = oar::greater_than(cond_src.mock, oar::zeros({}, DType::f32, kMock));
  for (DType dtype : {DType::f32, DType::f64, DType::i64}) {
    INFO(oar::dtype_name(dtype));
    Both x = random_both({5, 1}, 8, dtype, -9, 9, true),
         y = random_both({33}, 9, dtype, -9, 9, true);
    check_same(oar::where(cond_cpu, x.cpu, y.cpu), oar::where(cond_mock, x.mock, y.mock), 0, 0);
  }
  Both f = random_both({1023}, 10, DType::f32, -300, 300);
  for (DType to : {DType::f64, DType::f16, DType::bf16, DType::i32, DType::i64, DType::boolean,
                   DType::i8, DType::u8}) {
    INFO("f32 -> " << oar::dtype_name(to));
    Both src =
        (to == DType::i8 || to == DType::u8) ? random_both({1023}, 11, DType::f32, 0, 100) : f;
    check_same(oar::cast(src.cpu, to), oar::cast(src.mock, to), 0, 0);
    check_same(oar::cast(oar::cast(src.cpu, to), DType::f32),
               oar::cast(oar::cast(src.mock, to), DType::f32), 0, 0);
  }
  check_unary([](const Tensor& t) { return 2.5 * t - 1.0; }, f, 1e-5);
  check_unary([](const Tensor& t) { return 1.0 / (t + 1000.0); }, f, 1e-5);
  check_unary([](const Tensor& t) { return oar::pow(t, 2.0); }, f, 1e-5);
}

TEST_CASE("conformance: reductions") {
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {{17}, {}},        {{33, 17}, {0}},  {{33, 17}, {1}}, {{33, 17}, {}}, {{4, 5, 6}, {0, 2}},
      {{4, 5, 6}, {-1}}, {{5, 1, 7}, {1}}, {{1}, {0}},      {{}, {}},       {{1023}, {}},
  };
  uint32_t seed = 5000;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (const auto& [shape, axes] : cases) {
      for (bool keepdim : {false, true}) {
        INFO(oar::dtype_name(dtype) << " " << oar::shape_str(shape) << " axes "
                                    << oar::shape_str(axes) << " keepdim " << keepdim);
        double tol = tolerance(dtype);
        Both x = random_both(shape, seed++, dtype, -2, 2);
        auto ax = axes;
        check_unary([&](const Tensor& t) { return oar::sum(t, ax, keepdim); }, x, tol);
        check_unary([&](const Tensor& t) { return oar::max(t, ax, keepdim); }, x, tol);
        check_unary([&](const Tensor& t) { return oar::min(t, ax, keepdim); }, x, tol);
        check_unary([&](const Tensor& t) { return oar::mean(t, ax, keepdim); }, x, tol);
        if (oar::shape_numel(shape) > 1) {
          check_unary([&](const Tensor& t) { return oar::var(t, ax, true, keepdim); }, x, tol);
          check_unary([&](const Tensor& t) { return oar::var(t, ax, false, keepdim); }, x, tol);
        }
        Both p = random_both(shape, seed++, dtype, 0.5f, 1.5f);
        check_unary([&](const Tensor& t) { return oar::prod(t, ax, keepdim); }, p,
                    dtype == DType::f32 ? 1e-4 : tol);
        // Integer inputs with ties: sum/prod go to int64, argmax/argmin pick the first extreme.
        Both ints = random_both(shape, seed++, DType::i32, -3, 3, true);
        check_unary([&](const Tensor& t) { return oar::sum(t, ax, keepdim); }, ints, 0);
        check_unary([&](const Tensor& t) { return oar::max(t, ax, keepdim); }, ints, 0);
        int64_t axis = axes.empty() ? 0 : axes[0];
        for (const Both* src : {&x, &ints}) {
          check_unary([&](const Tensor& t) { return oar::argmax(t, std::nullopt, keepdim); }, *src,
                      0);
          check_unary([&](const Tensor& t) { return oar::argmin(t, std::nullopt, keepdim); }, *src,
                      0);
          if (!shape.empty()) {
            check_unary([&](const Tensor& t) { return oar::argmax(t, axis, keepdim); }, *src, 0);
            check_unary([&](const Tensor& t) { return oar::argmin(t, axis, keepdim); }, *src, 0);
          }
        }
      }
    }
  }
  // Size-0 inputs: sum 0, prod 1, and max over the non-empty axis.
  Both e = both({}, {0, 3});
  check_unary([](const Tensor& t) { return oar::sum(t, {0}); }, e, 0);
  check_unary([](const Tensor& t) { return oar::prod(t, {0}); }, e, 0);
  check_unary([](const Tensor& t) { return oar::sum(t); }, e, 0);
  check_unary([](const Tensor& t) { return oar::max(t, {1}); }, e, 0);
}

TEST_CASE("conformance: a large reduction of 1 << 20 elements") {
  const int64_t n = int64_t{1} << 20;
  auto v = random_values(n, 77, 0, 1);
  double host_sum = 0;
  for (float x : v) host_sum += x;
  Both x = both(v, {n});
  INFO("host sum " << host_sum);
  check_same(oar::sum(x.cpu), oar::sum(x.mock), 0, 2e-4);
  check_close(oar::sum(x.cpu), {host_sum}, 0, 2e-4);
  check_close(oar::sum(x.mock), {host_sum}, 0, 2e-4);
  check_close(oar::mean(x.cpu), {host_sum / double(n)}, 0, 2e-4);
  Both x64 = both(v, {n}, DType::f64);
  check_close(oar::sum(x64.cpu), {host_sum}, 0, 1e-10);
  check_close(oar::sum(x64.mock), {host_sum}, 0, 1e-10);
  Both m = both(v, {1024, 1024});
  check_same(oar::sum(m.cpu, {0}), oar::sum(m.mock, {0}), 1e-4, 1e-4);
  check_same(oar::sum(m.cpu, {1}), oar::sum(m.mock, {1}), 1e-4, 1e-4);
  check_same(oar::max(m.cpu, {0}), oar::max(m.mock, {0}), 0, 0);
  check_same(oar::argmax(x.cpu), oar::argmax(x.mock), 0, 0);
}

TEST_CASE("conformance: matmul and linear") {
  struct Case {
    Shape a, b;
    bool ta, tb;
  };
  const std::vector<Case> cases = {
      {{17, 33}, {33, 5}, false, false},
      {{33, 17}, {33, 5}, true, false},
      {{17, 33}, {5, 33}, false, true},
      {{33, 17}, {5, 33}, true, true},
      {{2, 1, 7, 9}, {3, 9, 4}, false, false},
      {{9}, {9, 4}, false, false},
      {{7, 9}, {9}, false, false},
      {{9}, {9}, false, false},
      {{1, 1}, {1, 1}, false, false},
      {{0, 3}, {3, 4}, false, false},
      {{3, 0}, {0, 4}, false, false},
      {{4, 64, 65}, {4, 65, 63}, false, false},
      {{2, 1, 9, 7}, {3, 4, 9}, true, true},
  };
  uint32_t seed = 9000;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (const auto& c : cases) {
      INFO(oar::dtype_name(dtype) << " " << oar::shape_str(c.a) << " @ " << oar::shape_str(c.b)
                                  << " ta " << c.ta << " tb " << c.tb);
      Both a = random_both(c.a, seed++, dtype), b = random_both(c.b, seed++, dtype);
      double atol = dtype == DType::f32 ? 1e-4 : 1e-11;
      check_same(oar::matmul(a.cpu, b.cpu, c.ta, c.tb), oar::matmul(a.mock, b.mock, c.ta, c.tb),
                 atol, tolerance(dtype));
    }
    Both x = random_both({2, 17, 33}, seed++, dtype), w = random_both({33, 5}, seed++, dtype);
    Both bias = random_both({5}, seed++, dtype);
    check_same(oar::linear(x.cpu, w.cpu, bias.cpu), oar::linear(x.mock, w.mock, bias.mock), 1e-4,
               tolerance(dtype));
    check_same(oar::linear(x.cpu, w.cpu), oar::linear(x.mock, w.mock), 1e-4, tolerance(dtype));
  }
}

TEST_CASE("conformance: layer_norm and rms_norm") {
  uint32_t seed = 12000;
  for (DType dtype : {DType::f32, DType::f64}) {
    INFO(oar::dtype_name(dtype));
    double tol = dtype == DType::f32 ? 1e-4 : 1e-10;
    Both x = random_both({17, 33}, seed++, dtype, -3, 3);
    Both w = random_both({33}, seed++, dtype), b = random_both({33}, seed++, dtype);
    check_same(oar::layer_norm(x.cpu, w.cpu, b.cpu), oar::layer_norm(x.mock, w.mock, b.mock), tol,
               tol);
    check_same(oar::layer_norm(x.cpu, Tensor(), Tensor()),
               oar::layer_norm(x.mock, Tensor(), Tensor()), tol, tol);
    check_same(oar::rms_norm(x.cpu, w.cpu), oar::rms_norm(x.mock, w.mock), tol, tol);
    check_same(oar::rms_norm(x.cpu, Tensor()), oar::rms_norm(x.mock, Tensor()), tol, tol);
    Both x3 = random_both({3, 5, 7}, seed++, dtype), w3 = random_both({5, 7}, seed++, dtype);
    check_same(oar::layer_norm(x3.cpu, w3.cpu, Tensor(), 1e-5, 1),
               oar::layer_norm(x3.mock, w3.mock, Tensor(), 1e-5, 1), tol, tol);
  }
}

TEST_CASE("conformance: shape manipulation, gather, scatter_add, creation") {
  uint32_t seed = 15000;
  for (DType dtype : {DType::f32, DType::f64}) {
    INFO(oar::dtype_name(dtype));
    Both x = random_both({3, 17, 5}, seed++, dtype);
    check_unary([](const Tensor& t) { return oar::transpose(t, {2, 0, 1}); }, x, 0);
    check_unary(
        [](const Tensor& t) {
          return oar::reshape(oar::transpose(t, {1, 0, 2}), {17, -1});
        },
        x, 0);
    check_unary(
        [](const Tensor& t) {
          return oar::broadcast_to(oar::slice(t, {1}, {0}, {1}), {2, 3, 1, 5});
        },
        x, 0);
    check_unary(
        [](const Tensor& t) {
          return oar::slice(t, {0, 1, 2}, {-1, 1, 4}, {-100, 16, 0}, {-1, 3, -2});
        },
        x, 0);
    check_unary([](const Tensor& t) { return oar::slice(t, {1}, {10}, {3}); }, x, 0);  // empty
    check_unary([](const Tensor& t) { return oar::pad(t, {0, 1, 2, 0, 1, 1}, -7); }, x, 0);
    check_unary(
        [](const Tensor& t) {
          return oar::concat({t, oar::zeros({3, 0, 5}, t.dtype(), t.device()), t}, 1);
        },
        x, 0);
    check_unary(
        [](const Tensor& t) {
          return oar::concat({t, oar::slice(t, {2}, {0}, {2})}, -1);
        },
        x, 0);
    for (DType index_dtype : {DType::i32, DType::i64}) {
      Both idx = index_both(40, 17, seed++, index_dtype);
      check_same(oar::gather(x.cpu, idx.cpu, 1), oar::gather(x.mock, idx.mock, 1), 0, 0);
      Both upd = random_both({3, 40, 5}, seed++, dtype);
      check_same(oar::scatter_add(x.cpu, idx.cpu, upd.cpu, 1),
                 oar::scatter_add(x.mock, idx.mock, upd.mock, 1), tolerance(dtype),
                 tolerance(dtype));
      Both idx0 = index_both(7, 3, seed++, index_dtype);
      check_same(oar::gather(x.cpu, idx0.cpu, 0), oar::gather(x.mock, idx0.mock, 0), 0, 0);
    }
    check_same(oar::full({17, 3}, -1.25, dtype, kCpu), oar::full({17, 3}, -1.25, dtype, kMock), 0,
               0);
    check_same(oar::arange(-3, 5, 0.37, dtype, kCpu), oar::arange(-3, 5, 0.37, dtype, kMock), 0, 0);
  }
  check_same(oar::arange(100, -1023, -7, DType::i64, kCpu),
             oar::arange(100, -1023, -7, DType::i64, kMock), 0, 0);
  check_same(oar::arange(0, 1023, 1, DType::i32, kCpu), oar::arange(0, 1023, 1, DType::i32, kMock),
             0, 0);
}

TEST_CASE("conformance: bf16 and f16") {
  uint32_t seed = 20000;
  for (DType dtype : {DType::bf16, DType::f16}) {
    INFO(oar::dtype_name(dtype));
    const double tol = 1e-2;
    Both a = random_both({17, 33}, seed++, dtype), b = random_both({33}, seed++, dtype);
    check_binary([](const Tensor& p, const Tensor& q) { return oar::add(p, q); }, a, b, tol);
    check_binary([](const Tensor& p, const Tensor& q) { return oar::multiply(p, q); }, a, b, tol);
    check_binary([](const Tensor& p, const Tensor& q) { return oar::maximum(p, q); }, a, b, 0);
    check_binary([](const Tensor& p, const Tensor& q) { return oar::less_than(p, q); }, a, b, 0);
    check_unary([](const Tensor& t) { return oar::exp(t); }, a, tol);
    check_unary([](const Tensor& t) { return oar::tanh(t); }, a, tol);
    check_unary([](const Tensor& t) { return oar::relu(t); }, a, 0);
    check_unary([](const Tensor& t) { return oar::softmax(t); }, a, tol);
    check_unary([](const Tensor& t) { return oar::gelu(t); }, a, tol);
    check_unary([](const Tensor& t) { return oar::sum(t, {1}); }, a, 5e-2);
    check_unary([](const Tensor& t) { return oar::max(t, {0}); }, a, 0);
    check_unary([](const Tensor& t) { return oar::transpose(t, {1, 0}); }, a, 0);
    check_unary([](const Tensor& t) { return oar::cast(t, DType::f32); }, a, 0);
    Both m = random_both({8, 16}, seed++, dtype), n = random_both({16, 8}, seed++, dtype);
    check_binary([](const Tensor& p, const Tensor& q) { return oar::matmul(p, q); }, m, n, 5e-2);
    check_same(oar::uniform({1023}, -1, 1, dtype, kCpu, 3, 1),
               oar::uniform({1023}, -1, 1, dtype, kMock, 3, 1), 0, 0);
    check_same(oar::normal({1023}, 0, 1, dtype, kCpu, 3, 1),
               oar::normal({1023}, 0, 1, dtype, kMock, 3, 1), 0, 0);
  }
}
