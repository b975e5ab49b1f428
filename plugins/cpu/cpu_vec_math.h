// Vectorizable f32 math for the CPU plugin's multiversioned loops.
//
// Note [Multiversioned loops]: the plugin is built without -march, so a
// plain loop vectorizes to SSE2 only. Hot contiguous loops are therefore
// function templates GCC compiles for several ISAs, picking one at load time
// (ifunc): OAR_CPU_CLONES (AVX-512F, AVX2, x86-64) for compute-bound loops
// (exp, tanh, ...: 1.4x faster in AVX-512 than AVX2 on Zen 4), and
// OAR_CPU_CLONES_STREAM (AVX2, x86-64) for memory-bound ones such as add
// (zmm streams were ~10% slower than ymm there). The plugin is built with
// -ffp-contract=off, so no clone fuses a multiply-add: every clone performs
// the same IEEE operations in the same order and only the vector width
// differs, and results are bitwise identical on every machine
// (add/sub/mul/div/max/min and the functions below alike).
//
// The functions below are branch-free so the compiler vectorizes them
// inside those loops: every choice goes through select(), a bit blend, since
// a `?:` lets GCC move a possibly-trapping operation into a branch, which
// then blocks vectorization without AVX-512 masking (-ftrapping-math is on,
// as it must be without -ffast-math). They follow Cephes' expf,
// tanhf and logf (range reduction plus a minimax polynomial). Max error
// against double-precision libm, measured over every f32 bit pattern
// (tanh and log: the non-negative half; tanh is odd by construction and log
// is NaN below 0), denormals, +-0, +-inf and NaN included, all of which
// give libm's result (glibc's own f32 functions in brackets):
//   exp_f32 0.99 ulp (0.50), tanh_f32 1.33 ulp (2.16), log_f32 0.83 ulp
//   (0.82), sigmoid_f32 2.48 ulp (2.41, same formula with expf) where the
//   result is normal; below x = -88.7 both flush to 0 as e^-x overflows.
#pragma once

#include <bit>
#include <cstdint>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__ELF__)
#define OAR_CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#define OAR_CPU_CLONES_STREAM __attribute__((target_clones("avx2", "default")))
#else
#define OAR_CPU_CLONES  // clang < 16 rejects target_clones on templates
#define OAR_CPU_CLONES_STREAM
#endif

namespace oar_cpu::vmath {

#define OAR_VMATH_INLINE [[gnu::always_inline]] inline

OAR_VMATH_INLINE float from_bits(uint32_t b) { return std::bit_cast<float>(b); }
OAR_VMATH_INLINE uint32_t to_bits(float f) { return std::bit_cast<uint32_t>(f); }
/// c ? a : b as a bit blend (see the Note).
OAR_VMATH_INLINE float select(bool c, float a, float b) {
  const uint32_t m = 0u - static_cast<uint32_t>(c);
  return from_bits((to_bits(a) & m) | (to_bits(b) & ~m));
}

/// e^x. Overflows to inf above 88.72, gradual underflow down to -103.97.
OAR_VMATH_INLINE float exp_f32(float x) {
  // Clamp (a NaN passes both compares and propagates); x in [-104, 89]
  // keeps n in [-150, 128], so 2^n splits into two normal factors.
  float xc = select(x < -104.0f, -104.0f, x);
  xc = select(xc > 89.0f, 89.0f, xc);
  // n = round(x / ln 2) by the 1.5 * 2^23 trick; n's integer value sits in
  // the low mantissa bits of `shifted`.
  const float shifted = xc * 1.44269504088896341f + 12582912.0f;
  const float n = shifted - 12582912.0f;
  // r = x - n ln2 in two parts (n * 0.693359375 is exact).
  const float r = (xc - n * 0.693359375f) - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  // 2^n = 2^(n/2) * 2^(n - n/2): exact scaling, one rounding for denormals.
  const int32_t ni = static_cast<int32_t>(to_bits(shifted) - 0x4B400000u);
  const int32_t n1 = ni >> 1;
  const int32_t n2 = ni - n1;
  return p * from_bits(static_cast<uint32_t>(n1 + 127) << 23) *
         from_bits(static_cast<uint32_t>(n2 + 127) << 23);
}

/// tanh(x): odd polynomial below |x| = 0.625, 1 - 2 / (e^2|x| + 1) above.
OAR_VMATH_INLINE float tanh_f32(float x) {
  const uint32_t sign = to_bits(x) & 0x80000000u;
  const float ax = from_bits(to_bits(x) & 0x7FFFFFFFu);
  const float z = x * x;
  float ps = -5.70498872745e-3f;
  ps = ps * z + 2.06390887954e-2f;
  ps = ps * z - 5.37397155531e-2f;
  ps = ps * z + 1.33314422036e-1f;
  ps = ps * z - 3.33332819422e-1f;
  ps = ps * z * x + x;
  // tanh(10) rounds to 1; the clamp keeps e finite (inf |x| gives +-1).
  const float e = exp_f32(2.0f * select(ax > 10.0f, 10.0f, ax));
  const float pl = 1.0f - 2.0f / (e + 1.0f);
  // NaN takes pl, which is NaN; the sign bit makes tanh(-0) = -0.
  return from_bits(to_bits(select(ax < 0.625f, ps, pl)) | sign);
}

/// 1 / (1 + e^-x), as the loops computed it with libm's expf.
OAR_VMATH_INLINE float sigmoid_f32(float x) { return 1.0f / (1.0f + exp_f32(-x)); }

/// erf(x) = x P(x^2) / Q(x^2), a rational fit (degrees 6 and 4 in x^2) to
/// erf on [0, 3.92], fitted for this file (least squares on relative error,
/// Lawson weights) and checked in f32 arithmetic against double math.erf:
/// within 6.4 ulp (relative 3.8e-7; glibc's erff: 1 ulp) where erf is
/// normal. |x| >= 3.919206, where erf rounds to 1 in f32, gives +-1
/// exactly; erf(-0) = -0, erf(+-inf) = +-1, NaN stays NaN. Not monotone
/// in the last bits (near |x| = 3 a step back of up to 7 ulp). libm's erff is
/// a branchy scalar call: 30 ms for [4096, 768] on a Zen 3 against 1.7 ms
/// for exp_f32. The compiler plugin's prelude (oar_erff) evaluates the same
/// fit; GCC fuses its multiply-adds there, so the two agree within rounding.
OAR_VMATH_INLINE float erf_f32(float x) {
  const float ax = from_bits(to_bits(x) & 0x7FFFFFFFu);
  const float z = x * x;
  float p = 1.910763281e-08f;
  p = p * z - 1.942270956e-06f;
  p = p * z + 1.473159646e-04f;
  p = p * z + 3.992159385e-03f;
  p = p * z + 5.153047293e-02f;
  p = p * z + 2.071646303e-01f;
  p = p * z + 1.128379107e+00f;
  float q = 1.021463424e-03f;
  q = q * z + 1.496152300e-02f;
  q = q * z + 1.179873124e-01f;
  q = q * z + 5.169261098e-01f;
  q = q * z + 1.0f;
  float y = (x * p) / q;
  y = select(y > 1.0f, 1.0f, y);
  y = select(y < -1.0f, -1.0f, y);
  // Large |x| (inf included; a huge x makes z inf and y NaN): +-1.
  const float one = from_bits(to_bits(1.0f) | (to_bits(x) & 0x80000000u));
  return select(ax >= 3.919206f, one, y);
}

/// Natural log: NaN below 0 and for NaN, -inf at +-0, inf at inf.
OAR_VMATH_INLINE float log_f32(float x) {
  // Denormals: scale into the normal range first.
  const bool tiny = x < 1.17549435e-38f;
  const float xs = select(tiny, x * 8388608.0f, x);
  const uint32_t bits = to_bits(xs);
  // x = m * 2^e with m in [0.5, 1).
  float e = static_cast<float>(static_cast<int32_t>(bits >> 23) - 126) - select(tiny, 23.0f, 0.0f);
  float m = from_bits((bits & 0x007FFFFFu) | 0x3F000000u);
  const bool low = m < 0.707106781186547524f;  // then use 2m in [sqrt(.5), sqrt(2))
  e = select(low, e - 1.0f, e);
  const float f = select(low, (m + m) - 1.0f, m - 1.0f);
  const float z = f * f;
  float p = 7.0376836292e-2f;
  p = p * f - 1.1514610310e-1f;
  p = p * f + 1.1676998740e-1f;
  p = p * f - 1.2420140846e-1f;
  p = p * f + 1.4249322787e-1f;
  p = p * f - 1.6668057665e-1f;
  p = p * f + 2.0000714765e-1f;
  p = p * f - 2.4999993993e-1f;
  p = p * f + 3.3333331174e-1f;
  float y = p * f * z;
  y = y + e * -2.12194440e-4f;
  y = y - 0.5f * z;
  float r = (f + y) + e * 0.693359375f;
  // Special values as libm: log(+inf) = inf, log(NaN) = NaN, log(+-0) =
  // -inf, log(x < 0) = NaN.
  r = select(x == 0.0f, -__builtin_inff(), r);
  r = select(x < 0.0f, __builtin_nanf(""), r);
  r = select(x > 3.40282347e+38f, x, r);
  return select(x != x, x, r);
}

#undef OAR_VMATH_INLINE

}  // namespace oar_cpu::vmath
