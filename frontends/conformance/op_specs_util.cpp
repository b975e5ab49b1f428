// Building blocks of the op cases (op_specs_util.h).
#include "op_specs_util.h"

#include <random>

namespace oar_conformance::specs {


HostArray random(const Shape& shape, DType dtype, double lo, double hi, uint32_t& seed, bool integral) {
  std::mt19937 gen(seed++);
  std::uniform_real_distribution<double> dist(lo, hi);
  const size_t parts = oar::is_complex(dtype) ? 2 : 1;  // complex: (real, imaginary) pairs
  HostArray a{dtype, shape, std::vector<double>(parts * static_cast<size_t>(oar::shape_numel(shape)))};
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


const std::vector<DType> kFloat = {DType::f32, DType::f64, DType::f16, DType::bf16};
const std::vector<DType> kNumeric = {DType::f32,  DType::f64, DType::f16,
                                     DType::bf16, DType::i32, DType::i64};
const std::vector<DType> kAll = {DType::f32, DType::f64, DType::f16, DType::bf16,   DType::i32,
                                 DType::i64, DType::i8,  DType::u8,  DType::boolean};
const std::vector<DType> kComposite = {DType::f32, DType::f64};
const std::vector<DType> kComplex = {DType::c64, DType::c128};
const std::vector<DType> kAllComplex = [] {
  std::vector<DType> v = kAll;
  v.insert(v.end(), kComplex.begin(), kComplex.end());
  return v;
}();
const std::vector<DType> kFloatComplex = [] {
  std::vector<DType> v = kFloat;
  v.insert(v.end(), kComplex.begin(), kComplex.end());
  return v;
}();
const std::vector<DType> kNumericComplex = [] {
  std::vector<DType> v = kNumeric;
  v.insert(v.end(), kComplex.begin(), kComplex.end());
  return v;
}();

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


OpSpec unary(const std::string& op, std::vector<DType> dtypes, Fn1 fn, double lo, double hi, bool integral,
             double tol_scale) {
  return {op, std::move(dtypes), tol_scale, [=](DType dt, Tier tier, uint32_t& seed) {
            std::vector<OpCase> cases;
            for (const Shape& s : unary_shapes(tier))
              cases.push_back({"x " + str(s),
                               {random(s, dt, lo, hi, seed, integral)},
                               [fn](const Inputs& in, const oar::Device&) { return fn(in[0]); }});
            return cases;
          }};
}

OpSpec binary(const std::string& op, std::vector<DType> dtypes, Fn2 fn, double lo, double hi, bool integral,
              double blo, double bhi, bool nonzero_b) {
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
                 double hi, bool allow_empty, double tol_scale) {
  return {
      op, std::move(dtypes), tol_scale, [=](DType dt, Tier tier, uint32_t& seed) {
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

OpSpec creation(const std::string& op, std::vector<DType> dtypes, std::function<CreationCalls(Tier)> calls) {
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

OpSpec composite(const std::string& op,
                 std::function<std::vector<OpCase>(DType, Tier, uint32_t&)> cases) {
  return {op, kComposite, 10, std::move(cases)};
}
OpCase case1(const std::string& label, HostArray x, Fn1 fn) {
  return {label, {std::move(x)}, [fn](const Inputs& in, const oar::Device&) { return fn(in[0]); }};
}

}  // namespace oar_conformance::specs
