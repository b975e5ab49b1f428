// The op cases: shapes cover broadcasting, size-0 and size-1 dims, scalars
// and odd sizes; values are drawn from std::mt19937 on the host, in ranges
// where every op is defined, with integers and ties where they matter.
#include "op_specs.h"

#include <cmath>
#include <cstring>
#include <random>

#include "oar/plugin_util.h"

namespace oar_conformance {

using oar::DType;
using oar::Shape;
using oar::Tensor;
using Inputs = std::vector<Tensor>;

// ---------------------------------------------------------------------------
// Host arrays
// ---------------------------------------------------------------------------

std::string short_dtype(DType dtype) {
  static const char* const names[] = {"f32", "f64", "f16", "bf16", "i8",
                                      "u8",  "i32", "i64", "bool"};
  auto i = static_cast<int>(dtype);
  return i >= 0 && i < 9 ? names[i] : "dtype" + std::to_string(i);
}

Tensor upload(const HostArray& a, const oar::Device& device) {
  size_t n = a.values.size(), size = oar::dtype_size(a.dtype);
  std::vector<unsigned char> bytes(std::max<size_t>(n * size, 1));
  for (size_t i = 0; i < n; ++i) {
    double v = a.values[i];
    unsigned char* p = bytes.data() + i * size;
    switch (a.dtype) {
      case DType::f32: {
        float f = static_cast<float>(v);
        std::memcpy(p, &f, 4);
        break;
      }
      case DType::f64:
        std::memcpy(p, &v, 8);
        break;
      case DType::f16: {
        uint16_t h = oar_f32_to_f16(static_cast<float>(v));
        std::memcpy(p, &h, 2);
        break;
      }
      case DType::bf16: {
        uint16_t h = oar_f32_to_bf16(static_cast<float>(v));
        std::memcpy(p, &h, 2);
        break;
      }
      case DType::i8: {
        auto x = static_cast<int8_t>(v);
        std::memcpy(p, &x, 1);
        break;
      }
      case DType::u8: {
        auto x = static_cast<uint8_t>(v);
        std::memcpy(p, &x, 1);
        break;
      }
      case DType::i32: {
        auto x = static_cast<int32_t>(v);
        std::memcpy(p, &x, 4);
        break;
      }
      case DType::i64: {
        auto x = static_cast<int64_t>(v);
        std::memcpy(p, &x, 8);
        break;
      }
      case DType::boolean:
        *p = v != 0;
        break;
    }
  }
  return Tensor::from_host(bytes.data(), a.shape, a.dtype, device);
}

HostArray download(const Tensor& t) {
  HostArray a{t.dtype(), t.shape(), {}};
  size_t n = static_cast<size_t>(t.numel()), size = oar::dtype_size(t.dtype());
  std::vector<unsigned char> bytes(std::max<size_t>(n * size, 1));
  if (n) t.copy_to_host(bytes.data());
  a.values.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char* p = bytes.data() + i * size;
    double& v = a.values[i];
    switch (t.dtype()) {
      case DType::f32: {
        float f;
        std::memcpy(&f, p, 4);
        v = f;
        break;
      }
      case DType::f64:
        std::memcpy(&v, p, 8);
        break;
      case DType::f16: {
        uint16_t h;
        std::memcpy(&h, p, 2);
        v = oar_f16_to_f32(h);
        break;
      }
      case DType::bf16: {
        uint16_t h;
        std::memcpy(&h, p, 2);
        v = oar_bf16_to_f32(h);
        break;
      }
      case DType::i8: {
        int8_t x;
        std::memcpy(&x, p, 1);
        v = x;
        break;
      }
      case DType::u8:
        v = *p;
        break;
      case DType::i32: {
        int32_t x;
        std::memcpy(&x, p, 4);
        v = x;
        break;
      }
      case DType::i64: {
        int64_t x;
        std::memcpy(&x, p, 8);
        v = static_cast<double>(x);
        break;
      }
      case DType::boolean:
        v = *p;
        break;
    }
  }
  return a;
}

double tolerance(DType dtype) {
  switch (dtype) {
    case DType::f64:
      return 1e-10;
    case DType::f32:
      return 1e-5;
    case DType::f16:
      return 1e-2;
    case DType::bf16:
      return 2e-2;
    default:
      return 0;
  }
}

namespace {

bool is_float(DType d) { return oar::is_floating(d); }

/// Uniform values in [lo, hi); integral (and always so for integer dtypes)
/// rounds them, so zeros and ties occur. Bool: 0/1.
HostArray random(const Shape& shape, DType dtype, double lo, double hi, uint32_t& seed,
                 bool integral = false) {
  std::mt19937 gen(seed++);
  std::uniform_real_distribution<double> dist(lo, hi);
  HostArray a{dtype, shape, std::vector<double>(static_cast<size_t>(oar::shape_numel(shape)))};
  for (auto& v : a.values) {
    if (dtype == DType::boolean)
      v = gen() % 2;
    else
      v = (integral || !is_float(dtype)) ? std::round(dist(gen)) : dist(gen);
  }
  return a;
}

HostArray indices(int64_t n, int64_t bound, DType dtype, uint32_t& seed) {
  std::mt19937 gen(seed++);
  HostArray a{dtype, {n}, {}};
  for (int64_t i = 0; i < n; ++i)
    a.values.push_back(static_cast<double>(gen() % static_cast<uint32_t>(bound)));
  return a;
}

std::string str(const Shape& s) { return oar::shape_str(s); }

const std::vector<DType> kFloat = {DType::f32, DType::f64, DType::f16, DType::bf16};
const std::vector<DType> kNumeric = {DType::f32,  DType::f64, DType::f16,
                                     DType::bf16, DType::i32, DType::i64};
const std::vector<DType> kAll = {DType::f32, DType::f64, DType::f16, DType::bf16,   DType::i32,
                                 DType::i64, DType::i8,  DType::u8,  DType::boolean};
const std::vector<DType> kComposite = {DType::f32, DType::f64};

std::vector<Shape> unary_shapes(Tier tier) {
  if (tier == Tier::smoke) return {{17}, {3, 5}};
  std::vector<Shape> s = {{}, {1}, {17}, {3, 33}, {0, 5}, {2, 1, 7}};
  if (tier == Tier::full) s.insert(s.end(), {{2, 1023}, {1, 1, 1}, {4, 5, 6, 7}});
  return s;
}

std::vector<std::pair<Shape, Shape>> binary_shapes(Tier tier) {
  std::vector<std::pair<Shape, Shape>> s = {{{17}, {17}}, {{3, 1}, {1, 33}}};
  if (tier == Tier::smoke) return s;
  s.insert(s.end(), {{{4, 33}, {33}}, {{}, {5, 7}}, {{0, 3}, {1, 3}}, {{2, 1, 17}, {3, 1}}});
  if (tier == Tier::full)
    s.insert(s.end(), {{{1023}, {1023}}, {{2, 0}, {0}}, {{5, 7}, {}}, {{1}, {1}}});
  return s;
}

using Fn1 = std::function<Tensor(const Tensor&)>;
using Fn2 = std::function<Tensor(const Tensor&, const Tensor&)>;

OpSpec unary(const std::string& op, std::vector<DType> dtypes, Fn1 fn, double lo, double hi,
             bool integral = false, double tol_scale = 1) {
  return {op, std::move(dtypes), tol_scale, [=](DType dt, Tier tier, uint32_t& seed) {
            std::vector<OpCase> cases;
            for (const Shape& s : unary_shapes(tier))
              cases.push_back({"x " + str(s),
                               {random(s, dt, lo, hi, seed, integral)},
                               [fn](const Inputs& in, const oar::Device&) { return fn(in[0]); }});
            return cases;
          }};
}

// nonzero_b: integer divisors avoid 0.
OpSpec binary(const std::string& op, std::vector<DType> dtypes, Fn2 fn, double lo, double hi,
              bool integral = false, double blo = NAN, double bhi = NAN, bool nonzero_b = false) {
  return {op, std::move(dtypes), 1, [=](DType dt, Tier tier, uint32_t& seed) {
            std::vector<OpCase> cases;
            bool ints = !is_float(dt);
            for (const auto& [sa, sb] : binary_shapes(tier)) {
              HostArray a = random(sa, dt, ints ? -20 : lo, ints ? 20 : hi, seed, integral);
              HostArray b = random(sb, dt, std::isnan(blo) || ints ? (ints ? -5 : lo) : blo,
                                   std::isnan(bhi) || ints ? (ints ? 5 : hi) : bhi, seed, integral);
              if (nonzero_b)
                for (auto& v : b.values)
                  if (v == 0) v = 1;
              cases.push_back(
                  {"a " + str(sa) + ", b " + str(sb),
                   {a, b},
                   [fn](const Inputs& in, const oar::Device&) { return fn(in[0], in[1]); }});
            }
            return cases;
          }};
}

struct ReduceCase {
  Shape shape;
  std::vector<int64_t> axes;
  bool keepdim;
};
std::vector<ReduceCase> reduce_cases(Tier tier, bool allow_empty) {
  std::vector<ReduceCase> c = {{{17}, {}, false}, {{33, 17}, {0}, true}};
  if (tier == Tier::smoke) return c;
  c.insert(c.end(), {{{33, 17}, {1}, false},
                     {{4, 5, 6}, {0, 2}, true},
                     {{4, 5, 6}, {-1}, false},
                     {{5, 1, 7}, {1}, false},
                     {{}, {}, false}});
  if (allow_empty) c.push_back({{0, 3}, {0}, false});
  if (tier == Tier::full) c.insert(c.end(), {{{1023}, {}, true}, {{64, 65}, {0, 1}, false}});
  return c;
}

OpSpec reduction(const std::string& op, std::vector<DType> dtypes,
                 std::function<Tensor(const Tensor&, std::vector<int64_t>, bool)> fn, double lo,
                 double hi, bool allow_empty) {
  return {
      op, std::move(dtypes), 10, [=](DType dt, Tier tier, uint32_t& seed) {
        std::vector<OpCase> cases;
        for (const auto& rc : reduce_cases(tier, allow_empty)) {
          auto axes = rc.axes;
          bool keep = rc.keepdim;
          cases.push_back({"x " + str(rc.shape) + " axes " + str(axes) + (keep ? " keepdim" : ""),
                           {random(rc.shape, dt, lo, hi, seed, !is_float(dt))},
                           [fn, axes, keep](const Inputs& in, const oar::Device&) {
                             return fn(in[0], axes, keep);
                           }});
        }
        return cases;
      }};
}

OpSpec arg_reduction(const std::string& op, bool is_max) {
  return {op, kNumeric, 1, [=](DType dt, Tier tier, uint32_t& seed) {
            std::vector<OpCase> cases;
            struct C {
              Shape s;
              std::optional<int64_t> axis;
              bool keep;
            };
            std::vector<C> cs = {{{17}, std::nullopt, false}, {{33, 17}, 1, true}};
            if (tier != Tier::smoke)
              cs.insert(cs.end(), {{{33, 17}, 0, false},
                                   {{4, 5, 6}, -1, false},
                                   {{5, 1, 7}, std::nullopt, true},
                                   {{1}, 0, false}});
            for (const auto& c : cs) {
              auto axis = c.axis;
              bool keep = c.keep;
              // Few distinct values: ties, where the first index must win.
              cases.push_back({"x " + str(c.s) +
                                   (axis ? " axis " + std::to_string(*axis) : std::string(" flat")),
                               {random(c.s, dt, -3, 3, seed, true)},
                               [=](const Inputs& in, const oar::Device&) {
                                 return is_max ? oar::argmax(in[0], axis, keep)
                                               : oar::argmin(in[0], axis, keep);
                               },
                               false});
            }
            return cases;
          }};
}

OpSpec matmul_spec() {
  return {
      "matmul", kFloat, 10, [](DType dt, Tier tier, uint32_t& seed) {
        struct C {
          Shape a, b;
          bool ta, tb;
        };
        std::vector<C> cs = {{{17, 33}, {33, 5}, false, false}, {{33, 17}, {5, 33}, true, true}};
        if (tier != Tier::smoke)
          cs.insert(cs.end(), {{{33, 17}, {33, 5}, true, false},
                               {{17, 33}, {5, 33}, false, true},
                               {{2, 1, 7, 9}, {3, 9, 4}, false, false},
                               {{9}, {9, 4}, false, false},
                               {{7, 9}, {9}, false, false},
                               {{1, 1}, {1, 1}, false, false},
                               {{0, 3}, {3, 4}, false, false},
                               {{3, 0}, {0, 4}, false, false}});
        if (tier == Tier::full) cs.push_back({{64, 129}, {129, 65}, false, false});
        std::vector<OpCase> cases;
        for (const auto& c : cs) {
          bool ta = c.ta, tb = c.tb;
          cases.push_back(
              {"a " + str(c.a) + (ta ? "^T" : "") + ", b " + str(c.b) + (tb ? "^T" : ""),
               {random(c.a, dt, -1, 1, seed), random(c.b, dt, -1, 1, seed)},
               [=](const Inputs& in, const oar::Device&) {
                 return oar::matmul(in[0], in[1], ta, tb);
               }});
        }
        return cases;
      }};
}

// Every dtype cast to every dtype, in ranges both can hold.
OpSpec cast_spec() {
  return {"cast", kAll, 1, [](DType from, Tier tier, uint32_t& seed) {
            std::vector<OpCase> cases;
            for (DType to : kAll) {
              if (tier == Tier::smoke && to != DType::f32 && to != DType::i64) continue;
              bool unsigned_side = from == DType::u8 || to == DType::u8;
              bool small = from == DType::i8 || to == DType::i8 || from == DType::boolean;
              double lo = unsigned_side ? 0
                          : small       ? -100
                                        : -300,
                     hi = unsigned_side || small ? 100 : 300;
              bool integral = to == DType::boolean;  // exact zeros make x != 0 interesting
              HostArray x = random({37}, from, to == DType::boolean ? -2 : lo,
                                   to == DType::boolean ? 2 : hi, seed, integral);
              cases.push_back(
                  {short_dtype(from) + " -> " + short_dtype(to) + " [37]",
                   {x},
                   [to](const Inputs& in, const oar::Device&) { return oar::cast(in[0], to); },
                   is_float(from) && is_float(to)});
            }
            return cases;
          }};
}

OpSpec copy_spec() {
  return {"copy", kAll, 1, [](DType dt, Tier tier, uint32_t& seed) {
            std::vector<OpCase> cases;
            for (const Shape& s : unary_shapes(tier))
              cases.push_back({"x " + str(s),
                               {random(s, dt, -50, 50, seed)},
                               [](const Inputs& in, const oar::Device&) {
                                 const oar::OpDef& op = oar::OpRegistry::instance().get("copy");
                                 return oar::apply1(op, in);
                               }});
            return cases;
          }};
}

// One-input ops with fixed shape cases: (shape, label, call).
using ShapeCall = std::tuple<Shape, std::string, Fn1>;
OpSpec shaped(const std::string& op, std::vector<DType> dtypes,
              std::function<std::vector<ShapeCall>(Tier)> calls) {
  return {
      op, std::move(dtypes), 1, [=](DType dt, Tier tier, uint32_t& seed) {
        std::vector<OpCase> cases;
        for (const auto& [s, label, fn] : calls(tier))
          cases.push_back({"x " + str(s) + " " + label,
                           {random(s, dt, -9, 9, seed)},
                           [fn = fn](const Inputs& in, const oar::Device&) { return fn(in[0]); }});
        return cases;
      }};
}

std::vector<ShapeCall> smoke_cut(Tier tier, std::vector<ShapeCall> v) {
  if (tier == Tier::smoke && v.size() > 2) v.resize(2);
  return v;
}

OpSpec creation(
    const std::string& op, std::vector<DType> dtypes,
    std::function<
        std::vector<std::pair<std::string, std::function<Tensor(DType, const oar::Device&)>>>(Tier)>
        calls) {
  return {
      op, std::move(dtypes), 1, [=](DType dt, Tier tier, uint32_t&) {
        std::vector<OpCase> cases;
        for (const auto& [label, fn] : calls(tier))
          cases.push_back({label,
                           {},
                           [fn = fn, dt](const Inputs&, const oar::Device& d) { return fn(dt, d); },
                           false});
        return cases;
      }};
}

// Composite ops: a few shapes, f32/f64 (all float dtypes in the full tier).
OpSpec composite(const std::string& op,
                 std::function<std::vector<OpCase>(DType, Tier, uint32_t&)> cases) {
  return {op, kComposite, 10, std::move(cases)};
}
OpCase case1(const std::string& label, HostArray x, Fn1 fn) {
  return {label, {std::move(x)}, [fn](const Inputs& in, const oar::Device&) { return fn(in[0]); }};
}

std::vector<OpSpec> build_specs() {
  using oar::Device;
  std::vector<OpSpec> s;
  // ---- elementwise unary ----
  s.push_back(unary(
      "neg", kNumeric, [](const Tensor& x) { return oar::neg(x); }, -3, 3));
  s.push_back(unary(
      "abs", kNumeric, [](const Tensor& x) { return oar::abs(x); }, -3, 3));
  s.push_back(unary(
      "sign", kNumeric, [](const Tensor& x) { return oar::sign(x); }, -2, 2, true));
  s.push_back(unary(
      "exp", kFloat, [](const Tensor& x) { return oar::exp(x); }, -5, 5));
  s.push_back(unary(
      "log", kFloat, [](const Tensor& x) { return oar::log(x); }, 0.01, 10));
  s.push_back(unary(
      "sqrt", kFloat, [](const Tensor& x) { return oar::sqrt(x); }, 0, 10));
  s.push_back(unary(
      "rsqrt", kFloat, [](const Tensor& x) { return oar::rsqrt(x); }, 0.01, 10));
  s.push_back(unary(
      "sin", kFloat, [](const Tensor& x) { return oar::sin(x); }, -6, 6));
  s.push_back(unary(
      "cos", kFloat, [](const Tensor& x) { return oar::cos(x); }, -6, 6));
  s.push_back(unary(
      "tanh", kFloat, [](const Tensor& x) { return oar::tanh(x); }, -4, 4));
  s.push_back(unary(
      "erf", kFloat, [](const Tensor& x) { return oar::erf(x); }, -3, 3));
  s.push_back(unary(
      "floor", kFloat, [](const Tensor& x) { return oar::floor(x); }, -3, 3));
  s.push_back(unary(
      "ceil", kFloat, [](const Tensor& x) { return oar::ceil(x); }, -3, 3));
  s.push_back(unary(
      "logical_not", kAll, [](const Tensor& x) { return oar::logical_not(x); }, -1, 1, true));
  // ---- elementwise binary ----
  s.push_back(binary(
      "add", kNumeric, [](const Tensor& a, const Tensor& b) { return oar::add(a, b); }, -3, 3));
  s.push_back(binary(
      "sub", kNumeric, [](const Tensor& a, const Tensor& b) { return oar::subtract(a, b); }, -3,
      3));
  s.push_back(binary(
      "mul", kNumeric, [](const Tensor& a, const Tensor& b) { return oar::multiply(a, b); }, -3,
      3));
  s.push_back(binary(
      "div", kNumeric, [](const Tensor& a, const Tensor& b) { return oar::divide(a, b); }, -3, 3,
      false, 0.5, 3, true));
  s.push_back(binary(
      "pow", kFloat, [](const Tensor& a, const Tensor& b) { return oar::pow(a, b); }, 0.1, 2.5,
      false, -2, 2));
  s.push_back(binary(
      "maximum", kNumeric, [](const Tensor& a, const Tensor& b) { return oar::maximum(a, b); }, -3,
      3));
  s.push_back(binary(
      "minimum", kNumeric, [](const Tensor& a, const Tensor& b) { return oar::minimum(a, b); }, -3,
      3));
  s.push_back(binary(
      "equal", kNumeric, [](const Tensor& a, const Tensor& b) { return oar::equal(a, b); }, -2, 2,
      true));
  s.push_back(binary(
      "not_equal", kNumeric, [](const Tensor& a, const Tensor& b) { return oar::not_equal(a, b); },
      -2, 2, true));
  s.push_back(binary(
      "less", kNumeric, [](const Tensor& a, const Tensor& b) { return oar::less_than(a, b); }, -2,
      2, true));
  s.push_back(binary(
      "less_equal", kNumeric,
      [](const Tensor& a, const Tensor& b) { return oar::less_equal(a, b); }, -2, 2, true));
  s.push_back(binary(
      "greater", kNumeric, [](const Tensor& a, const Tensor& b) { return oar::greater_than(a, b); },
      -2, 2, true));
  s.push_back(binary(
      "greater_equal", kNumeric,
      [](const Tensor& a, const Tensor& b) { return oar::greater_equal(a, b); }, -2, 2, true));
  s.push_back(binary(
      "logical_and", kAll, [](const Tensor& a, const Tensor& b) { return oar::logical_and(a, b); },
      -1, 1, true));
  s.push_back(binary(
      "logical_or", kAll, [](const Tensor& a, const Tensor& b) { return oar::logical_or(a, b); },
      -1, 1, true));
  s.push_back(
      {"where", kNumeric, 1, [](DType dt, Tier tier, uint32_t& seed) {
         std::vector<std::array<Shape, 3>> shapes = {{Shape{7}, Shape{7}, Shape{7}},
                                                     {Shape{4, 1, 33}, Shape{5, 1}, Shape{33}}};
         if (tier != Tier::smoke)
           shapes.insert(shapes.end(),
                         {{Shape{0, 2}, Shape{2}, Shape{1}}, {Shape{}, Shape{3, 4}, Shape{}}});
         std::vector<OpCase> cases;
         for (const auto& sh : shapes)
           cases.push_back(
               {"cond " + str(sh[0]) + ", x " + str(sh[1]) + ", y " + str(sh[2]),
                {random(sh[0], DType::boolean, 0, 1, seed), random(sh[1], dt, -9, 9, seed),
                 random(sh[2], dt, -9, 9, seed)},
                [](const Inputs& in, const Device&) { return oar::where(in[0], in[1], in[2]); }});
         return cases;
       }});
  s.push_back(cast_spec());
  s.push_back(copy_spec());
  // ---- reductions ----
  std::vector<DType> sum_dtypes = {DType::f32, DType::f64, DType::f16,    DType::bf16,
                                   DType::i32, DType::i64, DType::boolean};
  s.push_back(reduction(
      "sum", sum_dtypes,
      [](const Tensor& x, std::vector<int64_t> a, bool k) { return oar::sum(x, a, k); }, -2, 2,
      true));
  s.push_back(reduction(
      "prod", kNumeric,
      [](const Tensor& x, std::vector<int64_t> a, bool k) { return oar::prod(x, a, k); }, 0.5, 1.5,
      true));
  s.push_back(reduction(
      "max", kNumeric,
      [](const Tensor& x, std::vector<int64_t> a, bool k) { return oar::max(x, a, k); }, -2, 2,
      false));
  s.push_back(reduction(
      "min", kNumeric,
      [](const Tensor& x, std::vector<int64_t> a, bool k) { return oar::min(x, a, k); }, -2, 2,
      false));
  s.push_back(arg_reduction("argmax", true));
  s.push_back(arg_reduction("argmin", false));
  s.push_back(matmul_spec());
  // ---- manipulation ----
  s.push_back(shaped("transpose", kAll, [](Tier t) {
    return smoke_cut(t, {{{3, 4},
                          "perm [1, 0]",
                          [](const Tensor& x) {
                            return oar::transpose(x, {1, 0});
                          }},
                         {{2, 3, 4},
                          "perm [2, 0, 1]",
                          [](const Tensor& x) {
                            return oar::transpose(x, {2, 0, 1});
                          }},
                         {{1, 5, 1},
                          "perm [2, 1, 0]",
                          [](const Tensor& x) {
                            return oar::transpose(x, {2, 1, 0});
                          }},
                         {{0, 3}, "perm [1, 0]", [](const Tensor& x) {
                            return oar::transpose(x, {1, 0});
                          }}});
  }));
  s.push_back(shaped("broadcast_to", kAll, [](Tier t) {
    return smoke_cut(t, {{{1}, "to [5]", [](const Tensor& x) { return oar::broadcast_to(x, {5}); }},
                         {{3, 1},
                          "to [3, 4]",
                          [](const Tensor& x) {
                            return oar::broadcast_to(x, {3, 4});
                          }},
                         {{2, 1, 4},
                          "to [2, 3, 4]",
                          [](const Tensor& x) {
                            return oar::broadcast_to(x, {2, 3, 4});
                          }},
                         {{},
                          "to [2, 2]",
                          [](const Tensor& x) {
                            return oar::broadcast_to(x, {2, 2});
                          }},
                         {{3}, "to [0, 3]", [](const Tensor& x) {
                            return oar::broadcast_to(x, {0, 3});
                          }}});
  }));
  s.push_back(shaped("slice", kAll, [](Tier t) {
    return smoke_cut(
        t, {{{10}, "[1:8:2]", [](const Tensor& x) { return oar::slice(x, {0}, {1}, {8}, {2}); }},
            {{5, 6},
             "[:, 4:0:-1]",
             [](const Tensor& x) { return oar::slice(x, {1}, {4}, {0}, {-1}); }},
            {{4, 5, 6},
             "[1:3, :, 0:6:3]",
             [](const Tensor& x) {
               return oar::slice(x, {0, 2}, {1, 0}, {3, 6}, {1, 3});
             }},
            {{3, 0}, "[0:2]", [](const Tensor& x) { return oar::slice(x, {0}, {0}, {2}); }},
            {{7}, "[-3:]", [](const Tensor& x) { return oar::slice(x, {0}, {-3}, {100}); }}});
  }));
  s.push_back({"concat", kAll, 1, [](DType dt, Tier tier, uint32_t& seed) {
                 std::vector<std::pair<std::vector<Shape>, int64_t>> cs = {
                     {{{2, 3}, {4, 3}}, 0}, {{{2, 3}, {2, 1}, {2, 0}}, 1}};
                 if (tier != Tier::smoke)
                   cs.insert(cs.end(), {{{{5}}, 0}, {{{2, 2, 3}, {2, 1, 3}}, -2}});
                 std::vector<OpCase> cases;
                 for (const auto& [shapes, axis] : cs) {
                   OpCase c{"axis " + std::to_string(axis),
                            {},
                            [axis = axis](const Inputs& in, const Device&) {
                              return oar::concat(in, axis);
                            }};
                   for (const auto& sh : shapes)
                     c.inputs.push_back(random(sh, dt, -9, 9, seed)), c.label += " " + str(sh);
                   cases.push_back(std::move(c));
                 }
                 return cases;
               }});
  s.push_back(shaped("pad", kAll, [](Tier t) {
    return smoke_cut(t, {{{3, 4},
                          "pads [1, 0, 2, 1] value 1",
                          [](const Tensor& x) {
                            return oar::pad(x, {1, 0, 2, 1}, 1);
                          }},
                         {{5},
                          "pads [0, 3] value -1",
                          [](const Tensor& x) {
                            return oar::pad(x, {0, 3}, -1);
                          }},
                         {{0, 2}, "pads [1, 1, 0, 0]", [](const Tensor& x) {
                            return oar::pad(x, {1, 1, 0, 0});
                          }}});
  }));
  s.push_back({"gather", kNumeric, 1, [](DType dt, Tier tier, uint32_t& seed) {
                 std::vector<OpCase> cases;
                 struct C {
                   Shape x;
                   int64_t n, axis;
                   DType index;
                 };
                 std::vector<C> cs = {{{5, 4}, 3, 0, DType::i64}, {{3, 7}, 10, 1, DType::i32}};
                 if (tier != Tier::smoke)
                   cs.insert(cs.end(), {{{5}, 0, 0, DType::i64}, {{2, 3, 4}, 5, 2, DType::i64}});
                 for (const auto& c : cs) {
                   int64_t axis = c.axis;
                   cases.push_back({"x " + str(c.x) + " index [" + std::to_string(c.n) + "] axis " +
                                        std::to_string(axis),
                                    {random(c.x, dt, -9, 9, seed),
                                     indices(c.n, c.x[static_cast<size_t>(axis)], c.index, seed)},
                                    [axis](const Inputs& in, const Device&) {
                                      return oar::gather(in[0], in[1], axis);
                                    }});
                 }
                 return cases;
               }});
  s.push_back({"scatter_add", kNumeric, 1, [](DType dt, Tier tier, uint32_t& seed) {
                 std::vector<OpCase> cases;
                 struct C {
                   Shape x;
                   int64_t n, axis;
                   Shape updates;
                 };
                 std::vector<C> cs = {{{5, 4}, 6, 0, {6, 4}}, {{3, 7}, 4, 1, {3, 4}}};
                 if (tier != Tier::smoke) cs.push_back({{4}, 9, 0, {9}});
                 for (const auto& c : cs) {
                   int64_t axis = c.axis;
                   cases.push_back({"x " + str(c.x) + " index [" + std::to_string(c.n) + "] axis " +
                                        std::to_string(axis),
                                    {random(c.x, dt, -9, 9, seed),
                                     indices(c.n, c.x[static_cast<size_t>(axis)], DType::i64, seed),
                                     random(c.updates, dt, -9, 9, seed)},
                                    [axis](const Inputs& in, const Device&) {
                                      return oar::scatter_add(in[0], in[1], in[2], axis);
                                    }});
                 }
                 return cases;
               }});
  // ---- convolution and pooling (NCHW); their *_grad kernels run in grad.* ----
  s.push_back({"conv2d", kComposite, 10, [](DType dt, Tier tier, uint32_t& seed) {
                 struct C {
                   Shape x, w;
                   bool bias;
                   std::vector<int64_t> stride, padding, dilation;
                   int64_t groups;
                 };
                 std::vector<C> cs = {{{1, 3, 7, 7}, {4, 3, 3, 3}, true, {1}, {0}, {1}, 1},
                                      {{2, 4, 9, 8}, {6, 2, 3, 2}, false, {2, 1}, {1, 0}, {1}, 2}};
                 if (tier != Tier::smoke)
                   cs.insert(cs.end(), {{{1, 2, 10, 10}, {3, 2, 3, 3}, true, {1}, {2}, {2}, 1},
                                        {{1, 1, 1, 1}, {1, 1, 1, 1}, false, {1}, {0}, {1}, 1},
                                        {{0, 3, 7, 7}, {4, 3, 3, 3}, true, {1}, {1}, {1}, 1}});  // empty batch
                 std::vector<OpCase> cases;
                 for (const auto& c : cs) {
                   OpCase oc{"x " + str(c.x) + " w " + str(c.w) + " stride " + str(c.stride) +
                                 " pad " + str(c.padding) + " dil " + str(c.dilation) + " groups " +
                                 std::to_string(c.groups),
                             {random(c.x, dt, -1, 1, seed), random(c.w, dt, -1, 1, seed)},
                             [c](const Inputs& in, const Device&) {
                               return oar::conv2d(in[0], in[1], in.size() > 2 ? in[2] : Tensor(),
                                                  c.stride, c.padding, c.dilation, c.groups);
                             }};
                   if (c.bias) oc.inputs.push_back(random({c.w[0]}, dt, -1, 1, seed));
                   cases.push_back(std::move(oc));
                 }
                 return cases;
               }});
  for (const char* name : {"max_pool2d", "avg_pool2d"}) {
    bool is_max = std::string(name) == "max_pool2d";
    s.push_back({name, kComposite, 10, [is_max](DType dt, Tier tier, uint32_t& seed) {
                   struct C {
                     Shape x;
                     std::vector<int64_t> k, stride, padding;
                     bool exclusive;
                   };
                   std::vector<C> cs = {{{1, 2, 6, 6}, {2}, {}, {0}, true},
                                        {{2, 3, 7, 5}, {3, 2}, {2, 1}, {1, 0}, true}};
                   if (tier != Tier::smoke) {
                     cs.push_back({{1, 1, 5, 5}, {3}, {2}, {1}, false});
                     cs.push_back({{0, 2, 6, 6}, {2}, {}, {0}, true});  // empty batch
                   }
                   std::vector<OpCase> cases;
                   for (const auto& c : cs)
                     cases.push_back(case1(
                         "x " + str(c.x) + " kernel " + str(c.k) + " stride " + str(c.stride) +
                             " pad " + str(c.padding) + (c.exclusive ? "" : " inclusive"),
                         random(c.x, dt, -3, 3, seed), [c, is_max](const Tensor& x) {
                           return is_max
                                      ? oar::max_pool2d(x, c.k, c.stride, c.padding)
                                      : oar::avg_pool2d(x, c.k, c.stride, c.padding, c.exclusive);
                         }));
                   return cases;
                 }});
  }
  // ---- creation ----
  s.push_back(creation("full", kAll, [](Tier) {
    return std::vector<std::pair<std::string, std::function<Tensor(DType, const Device&)>>>{
        {"[3, 4] = 2.5",
         [](DType dt, const Device& d) {
           return oar::full({3, 4}, 2.5, dt, d);
         }},
        {"[] = -1",
         [](DType dt, const Device& d) { return oar::full({}, dt == DType::u8 ? 1 : -1, dt, d); }},
        {"[0] = 7", [](DType dt, const Device& d) { return oar::full({0}, 7, dt, d); }},
        {"[1031] = 0", [](DType dt, const Device& d) { return oar::full({1031}, 0, dt, d); }}};
  }));
  s.push_back(creation("arange", {DType::f32, DType::f64, DType::i32, DType::i64}, [](Tier) {
    return std::vector<std::pair<std::string, std::function<Tensor(DType, const Device&)>>>{
        {"0..17", [](DType dt, const Device& d) { return oar::arange(0, 17, 1, dt, d); }},
        {"-3..5 step 0.5",
         [](DType dt, const Device& d) {
           return oar::arange(-3, 5, oar::is_floating(dt) ? 0.5 : 2, dt, d);
         }},
        {"10..0 step -3", [](DType dt, const Device& d) { return oar::arange(10, 0, -3, dt, d); }}};
  }));
  for (const char* name : {"uniform", "normal"}) {
    bool is_uniform = std::string(name) == "uniform";
    s.push_back(creation(name, kFloat, [is_uniform](Tier) {
      return std::vector<std::pair<std::string, std::function<Tensor(DType, const Device&)>>>{
          {"[1000] seed 42",
           [is_uniform](DType dt, const Device& d) {
             return is_uniform ? oar::uniform({1000}, -2, 3, dt, d, 42)
                               : oar::normal({1000}, 1, 2, dt, d, 42);
           }},
          {"[3, 7] seed 7 offset 5", [is_uniform](DType dt, const Device& d) {
             return is_uniform ? oar::uniform({3, 7}, 0, 1, dt, d, 7, 5)
                               : oar::normal({3, 7}, 0, 1, dt, d, 7, 5);
           }}};
    }));
  }
  // ---- composite ops ----
  auto float_cases = [](Fn1 fn, double lo, double hi) {
    return [=](DType dt, Tier tier, uint32_t& seed) {
      std::vector<OpCase> cases;
      for (const Shape& sh : unary_shapes(tier))
        cases.push_back(case1("x " + str(sh), random(sh, dt, lo, hi, seed), fn));
      return cases;
    };
  };
  s.push_back(composite("relu", float_cases([](const Tensor& x) { return oar::relu(x); }, -3, 3)));
  s.push_back(
      composite("sigmoid", float_cases([](const Tensor& x) { return oar::sigmoid(x); }, -8, 8)));
  s.push_back(composite("silu", float_cases([](const Tensor& x) { return oar::silu(x); }, -8, 8)));
  s.push_back(composite("gelu", [](DType dt, Tier tier, uint32_t& seed) {
    std::vector<OpCase> cases;
    for (const Shape& sh : unary_shapes(tier)) {
      cases.push_back(case1("x " + str(sh), random(sh, dt, -4, 4, seed),
                            [](const Tensor& x) { return oar::gelu(x); }));
      cases.push_back(case1("x " + str(sh) + " tanh", random(sh, dt, -4, 4, seed),
                            [](const Tensor& x) { return oar::gelu(x, true); }));
    }
    return cases;
  }));
  for (const char* name : {"softmax", "log_softmax"}) {
    bool log = std::string(name) == "log_softmax";
    s.push_back(composite(name, [log](DType dt, Tier tier, uint32_t& seed) {
      std::vector<std::pair<Shape, int64_t>> cs = {{{17}, -1}, {{3, 33}, -1}};
      if (tier != Tier::smoke) cs.insert(cs.end(), {{{33, 17}, 0}, {{2, 1, 5}, 1}, {{4, 0}, 0}});
      std::vector<OpCase> cases;
      for (const auto& [sh, axis] : cs)
        cases.push_back(case1("x " + str(sh) + " axis " + std::to_string(axis),
                              random(sh, dt, -10, 10, seed), [log, axis = axis](const Tensor& x) {
                                return log ? oar::log_softmax(x, axis) : oar::softmax(x, axis);
                              }));
      return cases;
    }));
  }
  s.push_back(composite("layer_norm", [](DType dt, Tier, uint32_t& seed) {
    return std::vector<OpCase>{
        {"x [4, 33], weight, bias",
         {random({4, 33}, dt, -3, 3, seed), random({33}, dt, 0.5, 1.5, seed),
          random({33}, dt, -1, 1, seed)},
         [](const Inputs& in, const oar::Device&) { return oar::layer_norm(in[0], in[1], in[2]); }},
        {"x [2, 3, 5] over the last 2 dims, no weight",
         {random({2, 3, 5}, dt, -3, 3, seed)},
         [](const Inputs& in, const oar::Device&) {
           return oar::layer_norm(in[0], Tensor(), Tensor(), 1e-5, 1);
         }},
        {"x [0, 33] (no rows), weight, bias",
         {random({0, 33}, dt, -3, 3, seed), random({33}, dt, 0.5, 1.5, seed),
          random({33}, dt, -1, 1, seed)},
         [](const Inputs& in, const oar::Device&) { return oar::layer_norm(in[0], in[1], in[2]); }}};
  }));
  s.push_back(composite("rms_norm", [](DType dt, Tier, uint32_t& seed) {
    return std::vector<OpCase>{
        {"x [4, 33], weight",
         {random({4, 33}, dt, -3, 3, seed), random({33}, dt, 0.5, 1.5, seed)},
         [](const Inputs& in, const oar::Device&) { return oar::rms_norm(in[0], in[1]); }},
        {"x [0, 33] (no rows), weight",
         {random({0, 33}, dt, -3, 3, seed), random({33}, dt, 0.5, 1.5, seed)},
         [](const Inputs& in, const oar::Device&) { return oar::rms_norm(in[0], in[1]); }}};
  }));
  s.push_back(composite("linear", [](DType dt, Tier, uint32_t& seed) {
    return std::vector<OpCase>{
        {"x [5, 9], w [9, 4], b [4]",
         {random({5, 9}, dt, -1, 1, seed), random({9, 4}, dt, -1, 1, seed),
          random({4}, dt, -1, 1, seed)},
         [](const Inputs& in, const oar::Device&) { return oar::linear(in[0], in[1], in[2]); }},
        {"x [0, 9] (no rows), w [9, 4], b [4]",
         {random({0, 9}, dt, -1, 1, seed), random({9, 4}, dt, -1, 1, seed), random({4}, dt, -1, 1, seed)},
         [](const Inputs& in, const oar::Device&) { return oar::linear(in[0], in[1], in[2]); }}};
  }));
  s.push_back(composite("mean", [](DType dt, Tier tier, uint32_t& seed) {
    std::vector<OpCase> cases;
    for (const auto& rc : reduce_cases(tier, false))
      cases.push_back(case1("x " + str(rc.shape) + " axes " + str(rc.axes),
                            random(rc.shape, dt, -2, 2, seed),
                            [rc](const Tensor& x) { return oar::mean(x, rc.axes, rc.keepdim); }));
    return cases;
  }));
  s.push_back(composite("var", [](DType dt, Tier, uint32_t& seed) {
    return std::vector<OpCase>{
        case1("x [33, 17] axes [0] unbiased", random({33, 17}, dt, -2, 2, seed),
              [](const Tensor& x) { return oar::var(x, {0}); }),
        case1("x [4, 5, 6] all, biased", random({4, 5, 6}, dt, -2, 2, seed),
              [](const Tensor& x) { return oar::var(x, {}, false); }),
        case1("x [0, 5] axes [0] (empty: nan)", random({0, 5}, dt, -2, 2, seed),
              [](const Tensor& x) { return oar::var(x, {0}); })};
  }));
  s.push_back(composite("mse_loss", [](DType dt, Tier, uint32_t& seed) {
    return std::vector<OpCase>{
        {"[7, 3] mean",
         {random({7, 3}, dt, -2, 2, seed), random({7, 3}, dt, -2, 2, seed)},
         [](const Inputs& in, const oar::Device&) { return oar::mse_loss(in[0], in[1]); }},
        {"[0, 3] sum (empty)",
         {random({0, 3}, dt, -2, 2, seed), random({0, 3}, dt, -2, 2, seed)},
         [](const Inputs& in, const oar::Device&) { return oar::mse_loss(in[0], in[1], "sum"); }}};
  }));
  s.push_back(composite("cross_entropy", [](DType dt, Tier, uint32_t& seed) {
    return std::vector<OpCase>{
        {"logits [5, 7], labels i64 [5]",
         {random({5, 7}, dt, -3, 3, seed), indices(5, 7, DType::i64, seed)},
         [](const Inputs& in, const oar::Device&) { return oar::cross_entropy(in[0], in[1]); }},
        {"logits [0, 7], labels i64 [0] (empty), reduction none",
         {random({0, 7}, dt, -3, 3, seed), indices(0, 7, DType::i64, seed)},
         [](const Inputs& in, const oar::Device&) {
           return oar::cross_entropy(in[0], in[1], false, -1, "none");
         }}};
  }));
  s.push_back(composite("embedding", [](DType dt, Tier, uint32_t& seed) {
    return std::vector<OpCase>{
        {"ids i64 [6], weight [10, 4]",
         {indices(6, 10, DType::i64, seed), random({10, 4}, dt, -1, 1, seed)},
         [](const Inputs& in, const oar::Device&) { return oar::embedding(in[0], in[1]); }}};
  }));
  s.push_back(composite("scaled_dot_product_attention", [](DType dt, Tier, uint32_t& seed) {
    std::vector<OpCase> cases;
    for (bool causal : {false, true})
      cases.push_back(
          {std::string("q, k, v [2, 5, 2, 4]") + (causal ? " causal" : ""),
           {random({2, 5, 2, 4}, dt, -1, 1, seed), random({2, 5, 2, 4}, dt, -1, 1, seed),
            random({2, 5, 2, 4}, dt, -1, 1, seed)},
           [causal](const Inputs& in, const oar::Device&) {
             return oar::scaled_dot_product_attention(in[0], in[1], in[2], causal);
           }});
    return cases;
  }));
  s.push_back(composite("dropout", [](DType dt, Tier, uint32_t& seed) {
    // The mask comes from the global generator: reseed before each device.
    return std::vector<OpCase>{
        case1("x [8, 33] p 0.3", random({8, 33}, dt, -2, 2, seed), [](const Tensor& x) {
          oar::seed(1234);
          return oar::dropout(x, 0.3, true);
        })};
  }));
  return s;
}

// Note [Edge-value cases]: beyond the smoke tier, every op with a float
// input gets one more case per float dtype: its first case with NaN, +inf
// and -inf planted in the first three elements of its first float input of
// at least three elements. The reference defines what those give (NaN
// propagates, numpy's rules); a device that drops a NaN in a max or turns
// an infinity into a finite number fails the check. No gradient check: the
// gradients of non-finite inputs are not part of the contract.
void add_edge_value_cases(std::vector<OpSpec>& specs) {
  for (OpSpec& spec : specs) {
    auto base = spec.cases;
    spec.cases = [base](DType dt, Tier tier, uint32_t& seed) {
      std::vector<OpCase> cases = base(dt, tier, seed);
      if (tier == Tier::smoke || !is_float(dt)) return cases;
      for (const OpCase& c : cases) {
        for (size_t i = 0; i < c.inputs.size(); ++i) {
          if (!is_float(c.inputs[i].dtype) || c.inputs[i].values.size() < 3) continue;
          OpCase edge = c;
          std::vector<double>& v = edge.inputs[i].values;
          v[0] = NAN;
          v[1] = INFINITY;
          v[2] = -INFINITY;
          edge.label += " [NaN, +inf, -inf in input " + std::to_string(i) + "]";
          edge.differentiable = false;
          cases.push_back(std::move(edge));
          return cases;
        }
      }
      return cases;
    };
  }
}

}  // namespace

const std::vector<OpSpec>& op_specs() {
  static const std::vector<OpSpec> specs = [] {
    std::vector<OpSpec> s = build_specs();
    add_edge_value_cases(s);
    return s;
  }();
  return specs;
}

}  // namespace oar_conformance
