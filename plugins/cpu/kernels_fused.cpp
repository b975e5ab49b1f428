// Fused kernels for composite ops (docs/kernels.md, "Composite ops"): the
// dispatcher prefers them to the decomposition. f32 and f64; other dtypes
// run decomposed. softmax, log_softmax and layer_norm in f32 run through
// oneDNN (several times faster than the loops below, bench/RESULTS.md);
// the rest, and f64, are loops whose rows run in parallel. f32 loops use the
// vectorizable exp/tanh of cpu_vec_math.h in multiversioned functions (Note
// [Multiversioned loops]).
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cpu_common.h"
#include "cpu_vec_math.h"
#include "onednn_util.h"

namespace oar_cpu {
namespace {

template <class T>
T* out_ptr(const OarKernelContext* ctx, int i = 0) {
  return static_cast<T*>(oar_view_ptr(&ctx->outputs[i]));
}
template <class T>
const T* in_ptr(const OarKernelContext* ctx, int i) {
  return static_cast<const T*>(oar_view_ptr(&ctx->inputs[i]));
}

// outer x axis x inner decomposition of a view around `axis`.
void split_axis(const OarTensorView& v, int64_t axis, int64_t* outer, int64_t* n, int64_t* inner) {
  *outer = 1;
  *inner = 1;
  *n = v.ndim == 0 ? 1 : v.shape[axis];
  for (int64_t d = 0; d < axis; ++d) *outer *= v.shape[d];
  for (int64_t d = axis + 1; d < v.ndim; ++d) *inner *= v.shape[d];
}

/// One contiguous f32 row of softmax / log_softmax in three vectorized
/// passes: max, y = exp(x - max) with the sum of y in double (16 lanes in
/// a fixed order, so every clone gives the same bits), then the scaling.
/// The max may come out of the simd reduction in any order: a NaN anywhere
/// makes the whole row NaN through the sum anyway, as in the strided loop.
template <bool kLog>
OAR_CPU_CLONES void softmax_row_f32(const float* x, float* y, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : m)
  for (int64_t k = 0; k < n; ++k) m = x[k] > m ? x[k] : m;
  for (int64_t k = 0; k < n; ++k) y[k] = vmath::exp_f32(x[k] - m);
  constexpr int kLanes = 16;
  double lane_sum[kLanes] = {};
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes) {
    for (int j = 0; j < kLanes; ++j) lane_sum[j] += static_cast<double>(y[k + j]);
  }
  for (int j = 0; k < n; ++k, ++j) lane_sum[j] += static_cast<double>(y[k]);
  for (int w = kLanes / 2; w > 0; w /= 2) {
    for (int j = 0; j < w; ++j) lane_sum[j] += lane_sum[j + w];
  }
  if constexpr (kLog) {
    const float ls = static_cast<float>(std::log(lane_sum[0]));
    for (k = 0; k < n; ++k) y[k] = x[k] - m - ls;
  } else {
    const double inv = 1.0 / lane_sum[0];
    for (k = 0; k < n; ++k) y[k] = static_cast<float>(static_cast<double>(y[k]) * inv);
  }
}

template <class T, bool kLog>
OarStatus softmax_kernel(const OarKernelContext* ctx) {
  Attrs attrs(ctx);
  int64_t axis = attrs.get_int("axis");
  if (!attrs.ok()) return attrs.status();
  int64_t outer, n, inner;
  split_axis(ctx->inputs[0], axis, &outer, &n, &inner);
  const T* x = in_ptr<T>(ctx, 0);
  T* y = out_ptr<T>(ctx);
  if (outer * n * inner == 0) return OAR_OK;
  const int64_t grain = std::max<int64_t>(1, kParallelMin / n);
  if constexpr (std::is_same_v<T, float>) {
    if (inner == 1) {
      parallel_range(outer, grain, [&](int64_t o0, int64_t o1) {
        for (int64_t o = o0; o < o1; ++o) softmax_row_f32<kLog>(x + o * n, y + o * n, n);
      });
      return OAR_OK;
    }
  }
  parallel_range(outer * inner, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t o = r / inner, i = r % inner;
      const T* xr = x + o * n * inner + i;
      T* yr = y + o * n * inner + i;
      T m = xr[0];
      for (int64_t k = 1; k < n; ++k) m = std::max(m, xr[k * inner]);
      // f32 takes expf (within an ulp, twice as fast as exp in double) and
      // sums in double.
      double s = 0;
      for (int64_t k = 0; k < n; ++k) s += static_cast<double>(std::exp(xr[k * inner] - m));
      if constexpr (kLog) {
        T ls = static_cast<T>(std::log(s));
        for (int64_t k = 0; k < n; ++k) yr[k * inner] = xr[k * inner] - m - ls;
      } else {
        double inv = 1.0 / s;
        for (int64_t k = 0; k < n; ++k) yr[k * inner] = static_cast<T>(std::exp(static_cast<double>(xr[k * inner] - m)) * inv);
      }
    }
  });
  return OAR_OK;
}

// ---- oneDNN (f32) ----

/// Plain row-major descriptor of a view (rank 0 as [1]).
dnnl::memory::desc plain_md(const OarTensorView& v) {
  dnnl::memory::dims dims(v.shape, v.shape + v.ndim), strides(static_cast<size_t>(v.ndim));
  if (dims.empty()) return dnnl::memory::desc({1}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
  int64_t stride = 1;
  for (int d = v.ndim - 1; d >= 0; --d) strides[static_cast<size_t>(d)] = stride, stride *= v.shape[d];
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

template <bool kLog>
OarStatus softmax_onednn_kernel(const OarKernelContext* ctx) {
  Attrs attrs(ctx);
  int64_t axis = attrs.get_int("axis");
  if (!attrs.ok()) return attrs.status();
  const OarTensorView& xv = ctx->inputs[0];
  // oneDNN's softmax does not follow numpy on rows holding NaN or +-inf
  // (its max skips NaN, its exp clamps); the loop does, so such inputs
  // take it (the scan costs a fraction of the softmax itself).
  if (!all_finite(xv)) {
    return softmax_kernel<float, kLog>(ctx);
  }
  if (xv.ndim == 0) axis = 0;
  std::string key = std::string(kLog ? "logsoftmax:" : "softmax:") + std::to_string(axis) + ":" +
                    dims_key(dnnl::memory::dims(xv.shape, xv.shape + xv.ndim));
  auto plan = cached_plan(key, [&]() -> std::shared_ptr<Plan> {
    const auto md = plain_md(xv);
    const auto kind = dnnl::prop_kind::forward_inference;
    std::shared_ptr<Plan> plan;
    if constexpr (kLog) {
      dnnl::logsoftmax_forward::primitive_desc pd({kind, md, static_cast<int>(axis)}, onednn_attr(), onednn_engine());
      plan = std::make_shared<Plan>(dnnl::logsoftmax_forward(pd), [pd](int a) { return pd.query_md(dnnl::query::exec_arg_md, a); });
    } else {
      dnnl::softmax_forward::primitive_desc pd({kind, md, static_cast<int>(axis)}, onednn_attr(), onednn_engine());
      plan = std::make_shared<Plan>(dnnl::softmax_forward(pd), [pd](int a) { return pd.query_md(dnnl::query::exec_arg_md, a); });
    }
    plan->add_arg(DNNL_ARG_SRC, md, false);
    plan->add_arg(DNNL_ARG_DST, md, true);
    return plan;
  });
  if (!plan) return softmax_kernel<float, kLog>(ctx);
  plan->run({oar_view_ptr(&ctx->inputs[0]), oar_view_ptr(&ctx->outputs[0])});
  return OAR_OK;
}

// The *_any helpers are always inlined: an out-of-line call from the
// cloned loops ran the scalar default build (gelu tanh: 53 ms for
// [4096, 768]). gelu_tanh: gelu with approximate=True, its own loop (a `?:` between the
// two forms inside the loop kept it scalar: 28 ms for [4096, 768]).
enum class Act { relu, sigmoid, silu, gelu, gelu_tanh };

template <class T>
[[gnu::always_inline]] inline T exp_any(T v) {
  if constexpr (std::is_same_v<T, float>)
    return vmath::exp_f32(v);
  else
    return std::exp(v);
}
template <class T>
[[gnu::always_inline]] inline T erf_any(T v) {
  if constexpr (std::is_same_v<T, float>)
    return vmath::erf_f32(v);
  else
    return std::erf(v);
}
template <class T>
[[gnu::always_inline]] inline T tanh_any(T v) {
  if constexpr (std::is_same_v<T, float>)
    return vmath::tanh_f32(v);
  else
    return std::tanh(v);
}

template <class T, Act kAct>
OAR_CPU_CLONES void activation_span(const T* x, T* y, int64_t n) {
  const T k0 = static_cast<T>(0.7978845608028654), k1 = static_cast<T>(0.044715), half = static_cast<T>(0.5);
  for (int64_t i = 0; i < n; ++i) {
    T v = x[i];
    if constexpr (kAct == Act::relu) {
      y[i] = v < T(0) ? T(0) : v;  // NaN stays NaN, as maximum(x, 0) gives
    } else if constexpr (kAct == Act::sigmoid) {
      y[i] = T(1) / (T(1) + exp_any(-v));
    } else if constexpr (kAct == Act::silu) {
      y[i] = v / (T(1) + exp_any(-v));
    } else if constexpr (kAct == Act::gelu_tanh) {
      y[i] = half * v * (T(1) + tanh_any(k0 * (v + k1 * v * v * v)));
    } else {
      y[i] = half * v * (T(1) + erf_any(v * static_cast<T>(M_SQRT1_2)));
    }
  }
}

template <class T, Act kAct>
OarStatus activation_kernel(const OarKernelContext* ctx) {
  bool approximate = false;
  if constexpr (kAct == Act::gelu) {
    Attrs attrs(ctx);
    approximate = attrs.get_bool("approximate", false);
  }
  const T* x = in_ptr<T>(ctx, 0);
  T* y = out_ptr<T>(ctx);
  parallel_range(oar_view_numel(&ctx->outputs[0]), kParallelMin, [&](int64_t b, int64_t e) {
    if (approximate) {
      activation_span<T, Act::gelu_tanh>(x + b, y + b, e - b);
    } else {
      activation_span<T, kAct>(x + b, y + b, e - b);
    }
  });
  return OAR_OK;
}

// The rows and columns of a norm over the dims from begin_axis on, and its
// epsilon (layer_norm, rms_norm and layer_norm_grad read them alike).
OarStatus norm_shape(const OarKernelContext* ctx, int64_t* rows, int64_t* cols, double* eps) {
  Attrs attrs(ctx);
  int64_t begin = attrs.get_int("begin_axis");
  *eps = attrs.get_float("epsilon");
  if (!attrs.ok()) return attrs.status();
  const OarTensorView& xv = ctx->inputs[0];
  *rows = 1, *cols = 1;
  for (int64_t d = 0; d < xv.ndim; ++d) (d < begin ? *rows : *cols) *= xv.shape[d];
  return OAR_OK;
}

// layer_norm (kRms = false: inputs x, weight, bias) and rms_norm (kRms:
// inputs x, weight), normalizing over the dims from begin_axis on.
template <class T, bool kRms>
OarStatus norm_kernel(const OarKernelContext* ctx) {
  int64_t rows = 1, cols = 1;
  double eps = 0;
  if (OarStatus s = norm_shape(ctx, &rows, &cols, &eps)) return s;
  const T* x = in_ptr<T>(ctx, 0);
  const T* w = in_ptr<T>(ctx, 1);
  const T* b = kRms ? nullptr : in_ptr<T>(ctx, 2);
  T* y = out_ptr<T>(ctx);
#pragma omp parallel for num_threads(current_threads()) if (rows * cols > kParallelMin)
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    double mean = 0, sq = 0;
    if constexpr (!kRms) {
      for (int64_t c = 0; c < cols; ++c) mean += xr[c];
      mean /= static_cast<double>(cols);
    }
    for (int64_t c = 0; c < cols; ++c) {
      double d = xr[c] - mean;
      sq += d * d;
    }
    auto scale = static_cast<T>(1.0 / std::sqrt(sq / static_cast<double>(cols) + eps));
    auto m = static_cast<T>(mean);
    for (int64_t c = 0; c < cols; ++c) {
      T v = (xr[c] - m) * scale * w[c];
      if constexpr (!kRms) v += b[c];
      yr[c] = v;
    }
  }
  return OAR_OK;
}

// layer_norm_grad (inputs x, weight, g; outputs dx, dweight, dbias): the
// formula of layer_norm_vjp in core/src/ops/nn.cpp. Rows in parallel give
// dx and each row's mean and rstd; columns in parallel then sum dweight and
// dbias over the rows (no per-thread partial sums to merge).
template <class T>
OarStatus layer_norm_grad_kernel(const OarKernelContext* ctx) {
  int64_t rows = 1, cols = 1;
  double eps = 0;
  if (OarStatus s = norm_shape(ctx, &rows, &cols, &eps)) return s;
  const T* x = in_ptr<T>(ctx, 0);
  const T* w = in_ptr<T>(ctx, 1);
  const T* g = in_ptr<T>(ctx, 2);
  T* dx = out_ptr<T>(ctx, 0);
  T* dw = out_ptr<T>(ctx, 1);
  T* db = out_ptr<T>(ctx, 2);
  std::vector<T> mean_of(static_cast<size_t>(rows)), rstd_of(static_cast<size_t>(rows));
  const auto n = static_cast<double>(cols);
  if (rows * cols > kParallelMin) refresh_num_threads();  // Note [Threads on a busy machine]
#pragma omp parallel for num_threads(current_threads()) if (rows * cols > kParallelMin)
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    const T* gr = g + r * cols;
    T* dxr = dx + r * cols;
    double mean = 0, sq = 0;
    for (int64_t c = 0; c < cols; ++c) mean += xr[c];
    mean /= n;
    for (int64_t c = 0; c < cols; ++c) {
      const double d = xr[c] - mean;
      sq += d * d;
    }
    const double rstd = 1.0 / std::sqrt(sq / n + eps);
    double sum_gw = 0, sum_gw_xhat = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const double gw = static_cast<double>(gr[c]) * w[c];
      sum_gw += gw;
      sum_gw_xhat += gw * ((xr[c] - mean) * rstd);
    }
    const auto m = static_cast<T>(mean), s = static_cast<T>(rstd);
    const auto a = static_cast<T>(sum_gw / n), b = static_cast<T>(sum_gw_xhat / n);
    for (int64_t c = 0; c < cols; ++c) {
      const T xhat = (xr[c] - m) * s;
      dxr[c] = s * (gr[c] * w[c] - a - xhat * b);
    }
    mean_of[static_cast<size_t>(r)] = m;
    rstd_of[static_cast<size_t>(r)] = s;
  }
#pragma omp parallel for num_threads(current_threads()) if (rows * cols > kParallelMin)
  for (int64_t c = 0; c < cols; ++c) {
    double sw = 0, sb = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const T gv = g[r * cols + c];
      sw += static_cast<double>(gv * ((x[r * cols + c] - mean_of[static_cast<size_t>(r)]) * rstd_of[static_cast<size_t>(r)]));
      sb += gv;
    }
    dw[c] = static_cast<T>(sw);
    db[c] = static_cast<T>(sb);
  }
  return OAR_OK;
}

OarStatus layer_norm_onednn_kernel(const OarKernelContext* ctx) {
  int64_t rows = 1, cols = 1;
  double eps = 0;
  if (OarStatus s = norm_shape(ctx, &rows, &cols, &eps)) return s;
  std::string key = "layer_norm:" + dims_key({rows, cols}) + std::to_string(eps);
  auto plan = cached_plan(key, [&]() -> std::shared_ptr<Plan> {
    using tag = dnnl::memory::format_tag;
    const dnnl::memory::desc md({rows, cols}, dnnl::memory::data_type::f32, tag::ab);
    const dnnl::memory::desc ch({cols}, dnnl::memory::data_type::f32, tag::a);
    dnnl::layer_normalization_forward::primitive_desc pd(
        {dnnl::prop_kind::forward_inference, md, static_cast<float>(eps),
         dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift},
        onednn_attr(), onednn_engine());
    auto plan = std::make_shared<Plan>(dnnl::layer_normalization_forward(pd),
                                       [pd](int a) { return pd.query_md(dnnl::query::exec_arg_md, a); });
    plan->add_arg(DNNL_ARG_SRC, md, false);
    plan->add_arg(DNNL_ARG_SCALE, ch, false);
    plan->add_arg(DNNL_ARG_SHIFT, ch, false);
    plan->add_arg(DNNL_ARG_DST, md, true);
    return plan;
  });
  if (!plan) return norm_kernel<float, false>(ctx);
  plan->run({oar_view_ptr(&ctx->inputs[0]), oar_view_ptr(&ctx->inputs[1]), oar_view_ptr(&ctx->inputs[2]),
             oar_view_ptr(&ctx->outputs[0])});
  return OAR_OK;
}

template <class T>
void register_for(op::KernelTable& r, int32_t dt) {
  if constexpr (std::is_same_v<T, float>) {
    r.add("softmax", {dt}, {dt}, guarded<softmax_onednn_kernel<false>>);
    // oneDNN's logsoftmax is off by ~30 ulp (bench/RESULTS.md); the loop
    // (softmax_row_f32) is within a few ulp and, vectorized, faster too.
    // For softmax oneDNN stays faster than that loop (12-15 vs 15-16 ms at
    // 4096x4096, 1 thread).
    r.add("log_softmax", {dt}, {dt}, guarded<softmax_kernel<T, true>>);
    r.add("layer_norm", {dt, dt, dt}, {dt}, guarded<layer_norm_onednn_kernel>);
  } else {
    r.add("softmax", {dt}, {dt}, guarded<softmax_kernel<T, false>>);
    r.add("log_softmax", {dt}, {dt}, guarded<softmax_kernel<T, true>>);
    r.add("layer_norm", {dt, dt, dt}, {dt}, guarded<norm_kernel<T, false>>);
  }
  r.add("relu", {dt}, {dt}, guarded<activation_kernel<T, Act::relu>>);
  r.add("sigmoid", {dt}, {dt}, guarded<activation_kernel<T, Act::sigmoid>>);
  r.add("silu", {dt}, {dt}, guarded<activation_kernel<T, Act::silu>>);
  r.add("gelu", {dt}, {dt}, guarded<activation_kernel<T, Act::gelu>>);
  r.add("rms_norm", {dt, dt}, {dt}, guarded<norm_kernel<T, true>>);
  r.add("layer_norm_grad", {dt, dt, dt}, {dt, dt, dt}, guarded<layer_norm_grad_kernel<T>>);
}

}  // namespace

void register_fused_kernels(op::KernelTable& r) {
  register_for<float>(r, OAR_DTYPE_F32);
  register_for<double>(r, OAR_DTYPE_F64);
}

}  // namespace oar_cpu
