/* oar plugin utilities — optional, header-only C99 helpers for plugin
 * authors: dtype sizes, f16/bf16 conversion, and the Philox counter-based
 * generator every device must reproduce bit for bit (docs/kernels.md).
 * Depends only on plugin_api.h and libm. */
#ifndef OAR_PLUGIN_UTIL_H
#define OAR_PLUGIN_UTIL_H

#include <math.h>
#include <string.h>

#include "oar/plugin_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Bytes of one element of `dtype`; 0 for an unknown dtype. */
static inline size_t oar_dtype_size(int32_t dtype) {
  switch (dtype) {
    case OAR_DTYPE_F32: case OAR_DTYPE_I32: return 4;
    case OAR_DTYPE_F64: case OAR_DTYPE_I64: case OAR_DTYPE_C64: return 8;
    case OAR_DTYPE_C128: return 16;
    case OAR_DTYPE_F16: case OAR_DTYPE_BF16: return 2;
    case OAR_DTYPE_I8: case OAR_DTYPE_U8: case OAR_DTYPE_BOOL: return 1;
    default: return 0;
  }
}

/** Number of elements of a view. */
static inline int64_t oar_view_numel(const OarTensorView* v) {
  int64_t n = 1;
  int32_t i;
  for (i = 0; i < v->ndim; ++i) n *= v->shape[i];
  return n;
}

/** Address of a view's first element. */
static inline void* oar_view_ptr(const OarTensorView* v) {
  return (char*)v->data + v->byte_offset;
}

/** bf16 bits to float. */
static inline float oar_bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/** float to bf16 bits, round to nearest even; NaN stays NaN. */
static inline uint16_t oar_f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

/** IEEE half bits to float. */
static inline float oar_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  uint32_t u;
  float f;
  if (exp == 0) {
    if (man == 0) {
      u = sign;
    } else { /* subnormal */
      exp = 127 - 15 + 1;
      while ((man & 0x400u) == 0) { man <<= 1; exp--; }
      man &= 0x3ffu;
      u = sign | (exp << 23) | (man << 13);
    }
  } else if (exp == 31) {
    u = sign | 0x7f800000u | (man << 13);
  } else {
    u = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  memcpy(&f, &u, 4);
  return f;
}

/** float to IEEE half bits, round to nearest even, overflow to inf. */
static inline uint16_t oar_f32_to_f16(float f) {
  uint32_t u, sign, man;
  int32_t exp;
  memcpy(&u, &f, 4);
  sign = (u >> 16) & 0x8000u;
  exp = (int32_t)((u >> 23) & 0xffu) - 127 + 15;
  man = u & 0x7fffffu;
  if (((u >> 23) & 0xffu) == 0xffu) return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0u));
  if (exp >= 31) return (uint16_t)(sign | 0x7c00u);
  if (exp <= 0) {
    uint32_t shift, half_bits, rounded;
    if (exp < -10) return (uint16_t)sign;
    man |= 0x800000u;
    shift = (uint32_t)(14 - exp);
    half_bits = man >> shift;
    rounded = man & ((1u << shift) - 1u);
    if (rounded > (1u << (shift - 1)) || (rounded == (1u << (shift - 1)) && (half_bits & 1u))) half_bits++;
    return (uint16_t)(sign | half_bits);
  }
  {
    uint32_t h = sign | ((uint32_t)exp << 10) | (man >> 13);
    uint32_t rest = man & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++; /* may carry into exp: correct */
    return (uint16_t)h;
  }
}

/** Philox4x32-10: encrypt `ctr` under `key` in place. */
static inline void oar_philox4x32_10(uint32_t ctr[4], uint32_t key0, uint32_t key1) {
  int round;
  for (round = 0; round < 10; ++round) {
    uint64_t p0 = (uint64_t)0xD2511F53u * ctr[0];
    uint64_t p1 = (uint64_t)0xCD9E8D57u * ctr[2];
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    uint32_t n0 = hi1 ^ ctr[1] ^ key0;
    uint32_t n2 = hi0 ^ ctr[3] ^ key1;
    ctr[0] = n0;
    ctr[1] = lo1;
    ctr[2] = n2;
    ctr[3] = lo0;
    key0 += 0x9E3779B9u;
    key1 += 0xBB67AE85u;
  }
}

/** The four Philox words of block `block` for (seed, offset). */
static inline void oar_philox_block(uint64_t seed, uint64_t offset, uint64_t block, uint32_t out[4]) {
  out[0] = (uint32_t)block;
  out[1] = (uint32_t)(block >> 32);
  out[2] = (uint32_t)offset;
  out[3] = (uint32_t)(offset >> 32);
  oar_philox4x32_10(out, (uint32_t)seed, (uint32_t)(seed >> 32));
}

/** Uniform [0, 1) value of element i, in double (docs/kernels.md). */
static inline double oar_uniform_at(uint64_t seed, uint64_t offset, uint64_t i) {
  uint32_t w[4];
  oar_philox_block(seed, offset, i / 4, w);
  return (double)(w[i % 4] >> 8) * (1.0 / 16777216.0);
}

/** Standard normal value of element i, in double (docs/kernels.md). */
static inline double oar_normal_at(uint64_t seed, uint64_t offset, uint64_t i) {
  uint32_t w[4];
  uint64_t j = i / 2;
  int pair = (int)(j % 2);
  double u1, u2, r;
  oar_philox_block(seed, offset, j / 2, w);
  u1 = (double)((w[2 * pair] >> 8) + 1) * (1.0 / 16777216.0);
  u2 = (double)(w[2 * pair + 1] >> 8) * (1.0 / 16777216.0);
  r = sqrt(-2.0 * log(u1));
  return (i % 2 == 0) ? r * cos(6.283185307179586 * u2) : r * sin(6.283185307179586 * u2);
}

#ifdef __cplusplus
}
#endif

#endif /* OAR_PLUGIN_UTIL_H */
