// cast, copy and the creation kernels: full, arange, uniform, normal.
// uniform/normal evaluate oar_uniform_at / oar_normal_at (plugin_util.h) per
// element, so they match every other device bit for bit.
#include <cmath>
#include <cstring>
#include <iterator>
#include <vector>

#include "cpu_common.h"

namespace oar_cpu {
namespace {

template <class S, class D>
void cast_row(void*, char* const* p, const int64_t* s, int64_t n) {
  D* y = reinterpret_cast<D*>(p[0]);
  const S* x = reinterpret_cast<const S*>(p[1]);
  if (s[0] == sizeof(D) && s[1] == sizeof(S)) {
    for (int64_t i = 0; i < n; ++i) y[i] = convert<D>(x[i]);
  } else {
    const int64_t sy = s[0] / static_cast<int64_t>(sizeof(D));
    const int64_t sx = s[1] / static_cast<int64_t>(sizeof(S));
    for (int64_t i = 0; i < n; ++i) y[i * sy] = convert<D>(x[i * sx]);
  }
}

OarStatus one_in_one_out(const OarKernelContext* ctx, int inputs) {
  if (ctx->num_inputs != inputs || ctx->num_outputs != 1) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "expected %d inputs and 1 output, got %d and %d",
                inputs, ctx->num_inputs, ctx->num_outputs);
  }
  return OAR_OK;
}

OarStatus cast_kernel(const OarKernelContext* ctx) {
  if (OarStatus s = one_in_one_out(ctx, 1)) return s;
  const OarTensorView& x = ctx->inputs[0];
  const OarTensorView& y = ctx->outputs[0];
  RowFn fn = nullptr;
  // Every pair of dtypes, complex included (Note [Complex casts] in plugin.hpp).
  auto visit_any = [](int32_t dtype, auto&& f) { return visit_all(dtype, f) || visit_complex(dtype, f); };
  visit_any(x.dtype, [&](auto src) {
    visit_any(y.dtype, [&](auto dst) { fn = &cast_row<decltype(src), decltype(dst)>; });
  });
  if (fn == nullptr) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "cast from dtype %d to dtype %d is not supported",
                x.dtype, y.dtype);
  }
  StridedIter it;
  if (!make_iter(ctx, &it, y, {&x})) return OAR_ERROR_INVALID_ARGUMENT;
  iter_run(it, fn, nullptr);
  return OAR_OK;
}

OarStatus copy_kernel(const OarKernelContext* ctx) {
  if (OarStatus s = one_in_one_out(ctx, 1)) return s;
  const OarTensorView& x = ctx->inputs[0];
  const OarTensorView& y = ctx->outputs[0];
  if (x.dtype != y.dtype) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "input dtype %s differs from output dtype %s",
                dtype_name(x.dtype), dtype_name(y.dtype));
  }
  return strided_copy(ctx, y, x) ? OAR_OK : OAR_ERROR_INVALID_ARGUMENT;
}

/// Contiguous output view check shared by the creation kernels.
OarStatus creation_output(const OarKernelContext* ctx, bool floats_only, int inputs = 0) {
  if (OarStatus s = one_in_one_out(ctx, inputs)) return s;
  const OarTensorView& y = ctx->outputs[0];
  if ((floats_only && !visit_float(y.dtype, [](auto) {})) || oar_dtype_size(y.dtype) == 0) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "dtype %s is not supported", dtype_name(y.dtype));
  }
  return OAR_OK;
}

template <class T>
void fill_value(const OarTensorView& y, T v) {
  T* out = static_cast<T*>(oar_view_ptr(&y));
  const int64_t n = oar_view_numel(&y);
  // Fill by bit pattern so f16/bf16 loops are plain integer stores.
  if constexpr (sizeof(T) == 1) {
    std::memset(out, *reinterpret_cast<const uint8_t*>(&v), static_cast<size_t>(n));
  } else {
    using Bits = std::conditional_t<
        sizeof(T) == 2, uint16_t,
        std::conditional_t<sizeof(T) == 4, uint32_t, std::conditional_t<sizeof(T) == 8, uint64_t, bytes16_t>>>;
    Bits bits;
    std::memcpy(&bits, &v, sizeof bits);
    Bits* o = reinterpret_cast<Bits*>(out);
    parallel_range(n, kParallelMin, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] = bits;
    });
  }
}

// full, and full_like (the shape of its input, whose values are not read).
template <int Inputs>
OarStatus full_kernel(const OarKernelContext* ctx) {
  if (OarStatus s = creation_output(ctx, false, Inputs)) return s;
  Attrs attrs(ctx);
  const OarTensorView& y = ctx->outputs[0];
  // A complex value's imaginary part is the attribute value_imag (element_into).
  visit_by_size(y.dtype, [&](auto tag) {
    using T = decltype(tag);
    T v;
    if (attrs.element_into("value", y.dtype, nullptr, &v)) fill_value<T>(y, v);
  });
  return attrs.status();
}

OarStatus arange_kernel(const OarKernelContext* ctx) {
  if (OarStatus s = creation_output(ctx, false)) return s;
  Attrs attrs(ctx);
  const double start = attrs.get_float("start");
  const double step = attrs.has("step") ? attrs.get_float("step") : 1.0;
  if (!attrs.ok()) return attrs.status();
  const OarTensorView& y = ctx->outputs[0];
  if (y.ndim != 1)
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "the output must be 1-D (rank %d)", y.ndim);
  const int64_t n = oar_view_numel(&y);
  visit_numeric(y.dtype, [&](auto tag) {
    using T = decltype(tag);
    T* out = static_cast<T*>(oar_view_ptr(&y));
    parallel_range(n, kParallelMin, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) out[i] = cast_to<T>(start + static_cast<double>(i) * step);
    });
  });
  return OAR_OK;
}

// Note [Sharded random numbers] (core/src/ops/creation.cpp): a sharded
// piece (attributes global_shape and global_offset) numbers its elements by
// their row-major position in the whole result, so it draws the dense
// result's slice. Without them an element's number is its own position.
struct GlobalPosition {
  int ndim = 0;  // 0: the piece is the whole result
  int64_t local[OAR_MAX_NDIM] = {}, start[OAR_MAX_NDIM] = {}, stride[OAR_MAX_NDIM] = {};
  uint64_t operator()(int64_t i) const {
    int64_t g = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t q = i / local[d];
      g += (i - q * local[d] + start[d]) * stride[d];
      i = q;
    }
    return static_cast<uint64_t>(g);
  }
};

// Reads the piece's place from `attrs`; fails the launch when it does not fit y.
OarStatus read_global_position(const OarKernelContext* ctx, Attrs& attrs, const OarTensorView& y,
                               GlobalPosition* pos) {
  if (!attrs.has("global_shape")) return OAR_OK;
  const std::vector<int64_t> global = attrs.get_ints("global_shape");
  const std::vector<int64_t> start =
      attrs.has("global_offset") ? attrs.get_ints("global_offset") : std::vector<int64_t>{};
  if (!attrs.ok()) return attrs.status();
  if (global.empty()) return OAR_OK;
  bool ok = static_cast<int32_t>(global.size()) == y.ndim && start.size() == global.size();
  int64_t stride = 1;
  for (int d = y.ndim - 1; ok && d >= 0; --d) {
    ok = start[d] >= 0 && start[d] + y.shape[d] <= global[d];
    pos->local[d] = y.shape[d], pos->start[d] = start[d], pos->stride[d] = stride;
    stride *= global[d];
  }
  if (!ok) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT,
                "global_shape and global_offset (%zu and %zu dims) do not place the output piece of %d dims",
                global.size(), start.size(), y.ndim);
  }
  pos->ndim = y.ndim;
  return OAR_OK;
}

// Note [Random blocks]: element i of uniform/normal is a function of
// Philox block i / 4 (docs/kernels.md): uniform takes word i % 4, normal's
// Box-Muller pair i / 2 takes words 2 (i / 2 % 2) and 2 (i / 2 % 2) + 1.
// A dense output computes each block once and writes its four elements,
// instead of one block per element (four times the Philox rounds, which
// made dropout's mask the largest cost of a small transformer's training
// step). The values are the per-element formulas', bit for bit.
template <bool kNormal, class T>
void random_blocks(T* out, int64_t n, uint64_t seed, uint64_t offset, double a, double b) {
  const int64_t blocks = (n + 3) / 4;
  auto one_block = [&](int64_t k) {
    uint32_t w[4];
    oar_philox_block(seed, offset, static_cast<uint64_t>(k), w);
    double v[4];
    if constexpr (kNormal) {
      for (int pair = 0; pair < 2; ++pair) {
        const double u1 = static_cast<double>((w[2 * pair] >> 8) + 1) * (1.0 / 16777216.0);
        const double u2 = static_cast<double>(w[2 * pair + 1] >> 8) * (1.0 / 16777216.0);
        const double r = std::sqrt(-2.0 * std::log(u1));
        v[2 * pair] = a + b * (r * std::cos(6.283185307179586 * u2));
        v[2 * pair + 1] = a + b * (r * std::sin(6.283185307179586 * u2));
      }
    } else {
      for (int j = 0; j < 4; ++j) v[j] = a + (b - a) * (static_cast<double>(w[j] >> 8) * (1.0 / 16777216.0));
    }
    const int64_t i0 = 4 * k;
    for (int j = 0; j < 4 && i0 + j < n; ++j) out[i0 + j] = cast_to<T>(v[j]);
  };
  if (n >= 16384) refresh_num_threads();  // Note [Threads on a busy machine]
#pragma omp parallel for num_threads(current_threads()) schedule(static) if (n >= 16384)
  for (int64_t k = 0; k < blocks; ++k) one_block(k);
}

// kInputs: 1 for uniform_like, whose input gives only the shape (its values are not read).
template <bool kNormal, int kInputs = 0>
OarStatus random_kernel(const OarKernelContext* ctx) {
  if (OarStatus s = creation_output(ctx, true, kInputs)) return s;
  Attrs attrs(ctx);
  const uint64_t seed = static_cast<uint64_t>(attrs.get_int("seed"));
  const uint64_t offset = static_cast<uint64_t>(attrs.get_int("offset", 0));
  const double a = attrs.get_float(kNormal ? "mean" : "low");
  const double b = attrs.get_float(kNormal ? "std" : "high");
  if (!attrs.ok()) return attrs.status();
  const OarTensorView& y = ctx->outputs[0];
  GlobalPosition pos;
  if (OarStatus s = read_global_position(ctx, attrs, y, &pos)) return s;
  const int64_t n = oar_view_numel(&y);
  auto fill = [&](auto position) {
    visit_float(y.dtype, [&](auto tag) {
      using T = decltype(tag);
      T* out = static_cast<T*>(oar_view_ptr(&y));
#pragma omp parallel for num_threads(current_threads()) schedule(static) if (n >= 4096)
      for (int64_t i = 0; i < n; ++i) {
        const uint64_t u = position(i);
        const double v = kNormal ? a + b * oar_normal_at(seed, offset, u)
                                 : a + (b - a) * oar_uniform_at(seed, offset, u);
        out[i] = cast_to<T>(v);
      }
    });
  };
  if (pos.ndim == 0) {
    visit_float(y.dtype, [&](auto tag) {
      using T = decltype(tag);
      random_blocks<kNormal>(static_cast<T*>(oar_view_ptr(&y)), n, seed, offset, a, b);
    });
  } else {
    fill(pos);
  }
  return OAR_OK;
}

}  // namespace

void register_cast_kernels(op::KernelTable& r) {
  std::vector<int32_t> every(std::begin(kAllDtypes), std::end(kAllDtypes));
  every.insert(every.end(), std::begin(kComplexDtypes), std::end(kComplexDtypes));
  for (int32_t src : every) {
    for (int32_t dst : every) {
      r.add("cast", {src}, {dst}, &guarded<&cast_kernel>, OAR_KERNEL_STRIDED);
    }
  }
  for (int32_t dt : every) {
    r.add("copy", {dt}, {dt}, &guarded<&copy_kernel>, OAR_KERNEL_STRIDED | OAR_KERNEL_STRIDED_OUTPUT);
    r.add("full", {}, {dt}, &guarded<&full_kernel<0>>);
    r.add_any_inputs("full_like", {dt}, &guarded<&full_kernel<1>>);
  }
  for (int32_t dt : kNumericDtypes) r.add("arange", {}, {dt}, &guarded<&arange_kernel>);
  for (int32_t dt : kFloatDtypes) {
    r.add("uniform", {}, {dt}, &guarded<&random_kernel<false>>);
    r.add("normal", {}, {dt}, &guarded<&random_kernel<true>>);
    r.add_any_inputs("uniform_like", {dt}, &guarded<&random_kernel<false, 1>>);
  }
}

}  // namespace oar_cpu
