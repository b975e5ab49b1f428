// Vectorizable f64 exp and tanh for the CPU plugin's multiversioned loops
// (Note [Multiversioned loops] in cpu_vec_math.h: branch-free, every choice a
// bit blend, no FMA contraction, so every clone gives the same bits).
//
// They follow Cephes' exp and tanh (double): range reduction plus the
// Pade-type rational approximations of Moshier's library. Max error
// against glibc's exp/tanh measured by tests/unit/test_blas_matmul.cpp
// ("f64 exp and tanh") on 2e5 points over [-40, 40] plus the special values:
// exp_f64 < 2 ulp, tanh_f64 < 2 ulp; inf, -inf, NaN, +-0 and the overflow
// and underflow ends give libm's result.
#pragma once

#include <bit>
#include <cstdint>

namespace oar_cpu::vmath {

#define OAR_VMATH_INLINE [[gnu::always_inline]] inline

OAR_VMATH_INLINE double from_bits64(uint64_t b) { return std::bit_cast<double>(b); }
OAR_VMATH_INLINE uint64_t to_bits64(double f) { return std::bit_cast<uint64_t>(f); }
/// c ? a : b as a bit blend.
OAR_VMATH_INLINE double select64(bool c, double a, double b) {
  const uint64_t m = uint64_t{0} - static_cast<uint64_t>(c);
  return from_bits64((to_bits64(a) & m) | (to_bits64(b) & ~m));
}

/// 2^n for an integer-valued n in [-1022, 1023], by its bits.
OAR_VMATH_INLINE double pow2_f64(double n) {
  // n + 1.5 * 2^52 holds n in its low mantissa bits (n's integer value).
  const double shifted = n + 6755399441055744.0;
  const uint64_t ni = to_bits64(shifted) - 0x4338000000000000ull;  // n as two's complement
  return from_bits64((ni + 1023u) << 52);
}

/// e^x. Overflows to inf above 709.78, gradual underflow to 0 below -745.13.
OAR_VMATH_INLINE double exp_f64(double x) {
  // Clamp (a NaN fails both compares and propagates); [-746, 710] keeps n
  // in [-1077, 1025], split below into two factors in the normal range.
  double xc = select64(x < -746.0, -746.0, x);
  xc = select64(xc > 710.0, 710.0, xc);
  // n = round(x / ln 2) by the 1.5 * 2^52 trick.
  const double n = (xc * 1.4426950408889634073599 + 6755399441055744.0) - 6755399441055744.0;
  // r = x - n ln2 in two parts (n * C1 is exact for |n| < 2^11).
  const double r = (xc - n * 6.93145751953125E-1) - n * 1.42860682030941723212E-6;
  const double rr = r * r;
  double p = 1.26177193074810590878E-4;
  p = p * rr + 3.02994407707441961300E-2;
  p = p * rr + 9.99999999999999999910E-1;
  p = p * r;
  double q = 3.00198505138664455042E-6;
  q = q * rr + 2.52448340349684104192E-3;
  q = q * rr + 2.27265548208155028766E-1;
  q = q * rr + 2.00000000000000000009E0;
  const double e = 1.0 + 2.0 * (p / (q - p));
  // 2^n = 2^n1 * 2^n2 with n1 = round(n / 2): exact scaling, one rounding
  // for results in the denormal range.
  const double n1 = (n * 0.5 + 6755399441055744.0) - 6755399441055744.0;
  return e * pow2_f64(n1) * pow2_f64(n - n1);
}

/// tanh(x): x + x^3 P(x^2) / Q(x^2) below |x| = 0.625, 1 - 2 / (e^2|x| + 1)
/// above.
OAR_VMATH_INLINE double tanh_f64(double x) {
  const uint64_t sign = to_bits64(x) & 0x8000000000000000ull;
  const double ax = from_bits64(to_bits64(x) & 0x7FFFFFFFFFFFFFFFull);
  const double z = x * x;
  double p = -9.64399179425052238628E-1;
  p = p * z - 9.92877231001918586564E1;
  p = p * z - 1.61468768441708447952E3;
  double q = z + 1.12811678491632931402E2;
  q = q * z + 2.23548839060100448583E3;
  q = q * z + 4.84406305325125486048E3;
  const double ps = x + x * (z * p / q);
  // tanh(22) rounds to 1; the clamp keeps e finite (inf |x| gives +-1).
  const double e = exp_f64(2.0 * select64(ax > 22.0, 22.0, ax));
  const double pl = 1.0 - 2.0 / (e + 1.0);
  // NaN takes pl, which is NaN; the sign bit makes tanh(-0) = -0.
  return from_bits64(to_bits64(select64(ax < 0.625, ps, pl)) | sign);
}

#undef OAR_VMATH_INLINE

}  // namespace oar_cpu::vmath
