// Op cases of the FFT primitives (core/src/ops/fft.cpp): fft_c2c, fft_r2c,
// fft_c2r on odd, even, prime and size-1 lengths, one or several axes in any
// order, every normalization, batched. On the cpu they compare liboar_fftw.so
// with the mock's reference DFT; a cpu without that plugin lists them as
// missing. Gradients are checked by finite differences in
// frontends/python/tests/test_fft.py (complex cotangents).
#include "op_specs_util.h"

namespace oar_conformance::specs {

namespace {

struct FftCase {
  Shape shape;                // of the op's input
  std::vector<int64_t> axes;  // as given (the last is r2c/c2r's halved one)
  const char* norm;
  bool flag;                  // c2c: forward; r2c: onesided; c2r: odd output length
};

std::vector<FftCase> fft_cases(Tier tier) {
  std::vector<FftCase> cs = {{{8}, {0}, "backward", true}, {{3, 7}, {1}, "ortho", false},
                             {{4, 5, 6}, {0, 2}, "forward", true}};
  if (tier != Tier::smoke) {
    cs.insert(cs.end(), {{{2, 13}, {-1}, "backward", false},      // prime length
                         {{6, 1, 4}, {2, 0, 1}, "ortho", true},   // a size-1 axis, axes out of order
                         {{5, 4}, {1, 0}, "forward", false},      // the halved axis first in memory
                         {{16, 12}, {0, 1}, "backward", true},
                         {{0, 6}, {1}, "backward", true}});       // empty batch
  }
  return cs;
}

std::string label(const FftCase& c, const char* flag_name) {
  return "x " + str(c.shape) + " axes " + str(Shape(c.axes.begin(), c.axes.end())) + " " + c.norm + " " +
         flag_name + "=" + (c.flag ? "true" : "false");
}

int64_t last_axis(const FftCase& c) {
  int64_t a = c.axes.back();
  return a < 0 ? a + static_cast<int64_t>(c.shape.size()) : a;
}

}  // namespace

void add_fft_specs(std::vector<OpSpec>& s) {
  const size_t first = s.size();
  s.push_back({"fft_c2c", {DType::c64, DType::c128}, 10, [](DType dt, Tier tier, uint32_t& seed) {
                 std::vector<OpCase> cases;
                 for (const auto& c : fft_cases(tier)) {
                   OpCase oc = case1(label(c, "forward"), random(c.shape, dt, -1, 1, seed),
                                     [c](const Tensor& x) { return oar::fft_c2c(x, c.axes, c.norm, c.flag); });
                   oc.differentiable = false;
                   cases.push_back(std::move(oc));
                 }
                 return cases;
               }});
  s.push_back({"fft_r2c", {DType::f32, DType::f64}, 10, [](DType dt, Tier tier, uint32_t& seed) {
                 std::vector<OpCase> cases;
                 for (const auto& c : fft_cases(tier)) {
                   OpCase oc = case1(label(c, "onesided"), random(c.shape, dt, -1, 1, seed),
                                     [c](const Tensor& x) { return oar::fft_r2c(x, c.axes, c.norm, c.flag); });
                   oc.differentiable = false;
                   cases.push_back(std::move(oc));
                 }
                 return cases;
               }});
  // c2r: the input holds n / 2 + 1 bins of the last axis for an output of n
  // points (n odd when the flag is set); random bins, so the imaginary parts
  // of DC and Nyquist (which c2r ignores) are not zero.
  s.push_back({"fft_c2r", {DType::c64, DType::c128}, 10, [](DType dt, Tier tier, uint32_t& seed) {
                 std::vector<OpCase> cases;
                 for (auto c : fft_cases(tier)) {
                   const auto last = static_cast<size_t>(last_axis(c));
                   int64_t n = c.shape[last] + (c.flag && c.shape[last] % 2 == 0 ? 1 : 0);
                   Shape bins = c.shape;
                   bins[last] = n / 2 + 1;
                   OpCase oc = case1(label(c, "odd") + " n " + std::to_string(n), random(bins, dt, -1, 1, seed),
                                     [c, n](const Tensor& x) { return oar::fft_c2r(x, c.axes, c.norm, n); });
                   oc.differentiable = false;
                   cases.push_back(std::move(oc));
                 }
                 return cases;
               }});
  for (size_t i = first; i < s.size(); ++i) s[i].edge_values = false;  // Note [Edge-value cases]
}

}  // namespace oar_conformance::specs
