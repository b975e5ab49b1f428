// Element-wise reductions of the cpu plugin's collectives (Note [CPU
// collectives through Gloo] in cpu_collectives.cpp): Gloo's reduce
// functions per dtype, the f16/bf16 <-> f32 conversions and the local
// reduction of reduce_scatter.
#pragma once

#include <gloo/allreduce.h>

#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "oar/plugin_api.h"
#include "oar/plugin_util.h"

namespace oar_cpu {
namespace gloo_reduce {

template <typename T>
T apply(int32_t op, T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return op == OAR_REDUCE_SUM || op == OAR_REDUCE_MAX ? (a || b) : (a && b);
  } else if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case OAR_REDUCE_SUM:
        return a + b;
      case OAR_REDUCE_PROD:
        return a * b;
      case OAR_REDUCE_MAX:
        return std::isnan(a) || std::isnan(b) ? a + b : (a < b ? b : a);
      default:
        return std::isnan(a) || std::isnan(b) ? a + b : (b < a ? b : a);
    }
  } else {
    using U = std::make_unsigned_t<T>;  // two's complement wrap, never UB
    switch (op) {
      case OAR_REDUCE_SUM:
        return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
      case OAR_REDUCE_PROD:
        return static_cast<T>(static_cast<U>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)));
      case OAR_REDUCE_MAX:
        return a < b ? b : a;
      default:
        return b < a ? b : a;
    }
  }
}

// One loop per op (the op a compile-time constant), so float sums and
// products vectorize like Gloo's own gloo::sum.
template <typename T, int32_t Op>
void reduce_loop(T* out, const T* a, const T* b, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = apply<T>(Op, a[i], b[i]);
}

template <typename T>
void reduce_buffers(int32_t op, T* out, const T* a, const T* b, size_t n) {
  switch (op) {
    case OAR_REDUCE_SUM:
      return reduce_loop<T, OAR_REDUCE_SUM>(out, a, b, n);
    case OAR_REDUCE_PROD:
      return reduce_loop<T, OAR_REDUCE_PROD>(out, a, b, n);
    case OAR_REDUCE_MAX:
      return reduce_loop<T, OAR_REDUCE_MAX>(out, a, b, n);
    default:
      return reduce_loop<T, OAR_REDUCE_MIN>(out, a, b, n);
  }
}

/// Gloo's element-wise reduction for a non-half dtype.
inline gloo::AllreduceOptions::Func gloo_reduce_fn(int32_t dtype, int32_t op) {
  auto make = [op](auto tag) -> gloo::AllreduceOptions::Func {
    using T = decltype(tag);
    return [op](void* out, const void* a, const void* b, size_t n) {
      reduce_buffers<T>(op, static_cast<T*>(out), static_cast<const T*>(a),
                        static_cast<const T*>(b), n);
    };
  };
  switch (dtype) {
    case OAR_DTYPE_F32:
      return make(float{});
    case OAR_DTYPE_F64:
      return make(double{});
    case OAR_DTYPE_I8:
      return make(int8_t{});
    case OAR_DTYPE_U8:
      return make(uint8_t{});
    case OAR_DTYPE_I32:
      return make(int32_t{});
    case OAR_DTYPE_I64:
      return make(int64_t{});
    default:
      return make(bool{});  // OAR_DTYPE_BOOL: one byte, 0 or 1
  }
}

inline bool is_half(int32_t dtype) { return dtype == OAR_DTYPE_F16 || dtype == OAR_DTYPE_BF16; }

inline std::vector<float> half_to_f32(int32_t dtype, const void* src, size_t n) {
  std::vector<float> out(n);
  const auto* bits = static_cast<const uint16_t*>(src);
  for (size_t i = 0; i < n; ++i)
    out[i] = dtype == OAR_DTYPE_F16 ? oar_f16_to_f32(bits[i]) : oar_bf16_to_f32(bits[i]);
  return out;
}

inline void f32_to_half(int32_t dtype, const float* src, size_t n, void* dst) {
  auto* bits = static_cast<uint16_t*>(dst);
  for (size_t i = 0; i < n; ++i)
    bits[i] = dtype == OAR_DTYPE_F16 ? oar_f32_to_f16(src[i]) : oar_f32_to_bf16(src[i]);
}

/// dst = blocks[0] op blocks[1] op ... (rank order); halves accumulate in f32.
inline void local_reduce(int32_t dtype, int32_t op, const std::vector<const char*>& blocks,
                         size_t n, char* dst) {
  if (n == 0) return;
  if (is_half(dtype)) {
    std::vector<float> acc = half_to_f32(dtype, blocks[0], n);
    for (size_t r = 1; r < blocks.size(); ++r) {
      std::vector<float> v = half_to_f32(dtype, blocks[r], n);
      reduce_buffers<float>(op, acc.data(), acc.data(), v.data(), n);
    }
    f32_to_half(dtype, acc.data(), n, dst);
    return;
  }
  auto fn = gloo_reduce_fn(dtype, op);
  size_t bytes = n * oar_dtype_size(dtype);
  std::vector<char> acc(blocks[0], blocks[0] + bytes);
  for (size_t r = 1; r < blocks.size(); ++r) fn(acc.data(), acc.data(), blocks[r], n);
  std::memcpy(dst, acc.data(), bytes);
}

}  // namespace gloo_reduce
}  // namespace oar_cpu
