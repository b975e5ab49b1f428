// conv2d and pool2d with their backward ops (docs/kernels.md). f32 and bf16
// run through oneDNN: convolutions let oneDNN choose blocked layouts
// (format any) and reorder the caller's NCHW in and out; pooling runs on
// NCHW directly. Plans are cached by problem (Note [Cached plans]). f64, f16
// and any problem oneDNN rejects use direct OpenMP loops over independent
// output planes, accumulating in double.
#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "cpu_common.h"
#include "onednn_util.h"

namespace oar_cpu {
namespace {

using dims = dnnl::memory::dims;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

/// One conv or pool problem. Conv: x [N, C, H, W], weight [Cout, C / groups,
/// kh, kw], y [N, Cout, Ho, Wo]; pool: Cout = C, (kh, kw) the window.
struct Geometry {
  int64_t N = 0, C = 0, H = 0, W = 0, Cout = 0, Ho = 0, Wo = 0, kh = 0, kw = 0;
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, groups = 1;
  bool exclusive = true;
  int64_t in_h(int64_t oh, int64_t i) const { return oh * sh - ph + i * dh; }
  int64_t in_w(int64_t ow, int64_t j) const { return ow * sw - pw + j * dw; }
  bool inside(int64_t h, int64_t w) const { return h >= 0 && h < H && w >= 0 && w < W; }
  std::string key() const {
    return dims_key({N, C, H, W, Cout, Ho, Wo, kh, kw, sh, sw, ph, pw, dh, dw, groups, exclusive});
  }
};

bool read_pair(const OarKernelContext* ctx, Attrs& attrs, const char* name, int64_t* a, int64_t* b) {
  int64_t n = 0;
  const std::vector<int64_t> v_list = attrs.get_ints(name);
  const int64_t* v = v_list.data();
  n = static_cast<int64_t>(v_list.size());
  if (!attrs.ok()) return false;
  if (n != 2) return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "attribute %s must have 2 entries", name), false;
  *a = v[0];
  *b = v[1];
  return true;
}

bool check_views(const OarKernelContext* ctx, int num_inputs) {
  if (ctx->num_inputs != num_inputs || ctx->num_outputs != 1)
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "expected %d inputs and 1 output", num_inputs), false;
  const int32_t dtype = ctx->outputs[0].dtype;
  bool ok = ctx->outputs[0].ndim == 4;
  for (int i = 0; i < num_inputs; ++i) ok = ok && ctx->inputs[i].ndim == 4 && ctx->inputs[i].dtype == dtype;
  if (!ok) return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "every view must be 4-D (NCHW) of dtype %s", dtype_name(dtype)), false;
  return true;
}

/// x, weight and y views of a conv problem (for the grad ops: which views
/// play those roles). Checks y against the output-size formula.
bool conv_geometry(const OarKernelContext* ctx, const OarTensorView& x, const OarTensorView& w,
                   const OarTensorView& y, Geometry* g) {
  Attrs attrs(ctx);
  if (!read_pair(ctx, attrs, "strides", &g->sh, &g->sw) || !read_pair(ctx, attrs, "paddings", &g->ph, &g->pw) ||
      !read_pair(ctx, attrs, "dilations", &g->dh, &g->dw))
    return false;
  g->groups = attrs.get_int("groups");
  if (!attrs.ok()) return false;
  g->N = x.shape[0], g->C = x.shape[1], g->H = x.shape[2], g->W = x.shape[3];
  g->Cout = w.shape[0], g->kh = w.shape[2], g->kw = w.shape[3], g->Ho = y.shape[2], g->Wo = y.shape[3];
  bool ok = g->groups >= 1 && g->sh >= 1 && g->sw >= 1 && g->dh >= 1 && g->dw >= 1 && g->ph >= 0 && g->pw >= 0 &&
            g->C == w.shape[1] * g->groups && g->Cout % g->groups == 0 && y.shape[0] == g->N &&
            y.shape[1] == g->Cout && g->Ho == (g->H + 2 * g->ph - g->dh * (g->kh - 1) - 1) / g->sh + 1 &&
            g->Wo == (g->W + 2 * g->pw - g->dw * (g->kw - 1) - 1) / g->sw + 1;
  if (!ok) return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "x, weight and y do not fit the attributes"), false;
  return true;
}

bool pool_geometry(const OarKernelContext* ctx, const OarTensorView& x, const OarTensorView& y, Geometry* g) {
  Attrs attrs(ctx);
  if (!read_pair(ctx, attrs, "kernel_size", &g->kh, &g->kw) || !read_pair(ctx, attrs, "strides", &g->sh, &g->sw) ||
      !read_pair(ctx, attrs, "paddings", &g->ph, &g->pw))
    return false;
  g->exclusive = attrs.get_bool("exclusive", true);
  g->N = x.shape[0], g->C = g->Cout = x.shape[1], g->H = x.shape[2], g->W = x.shape[3];
  g->Ho = y.shape[2], g->Wo = y.shape[3];
  bool ok = g->kh >= 1 && g->kw >= 1 && g->sh >= 1 && g->sw >= 1 && g->ph >= 0 && g->pw >= 0 &&
            y.shape[0] == g->N && y.shape[1] == g->C && g->Ho == (g->H + 2 * g->ph - g->kh) / g->sh + 1 &&
            g->Wo == (g->W + 2 * g->pw - g->kw) / g->sw + 1;
  if (!ok) return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "x and y do not fit the window attributes"), false;
  return true;
}

template <class T>
const T* in_ptr(const OarKernelContext* ctx, int i) {
  return static_cast<const T*>(oar_view_ptr(&ctx->inputs[i]));
}
template <class T>
T* out_ptr(const OarKernelContext* ctx) {
  return static_cast<T*>(oar_view_ptr(&ctx->outputs[0]));
}
void* in_void(const OarKernelContext* ctx, int i) { return oar_view_ptr(&ctx->inputs[i]); }
void* out_void(const OarKernelContext* ctx) { return oar_view_ptr(&ctx->outputs[0]); }

// ------------------------------------------------------------- oneDNN ---

bool onednn_type(int32_t dtype, dt* out) {
  if (dtype == OAR_DTYPE_F32) return *out = dt::f32, true;
  if (dtype == OAR_DTYPE_BF16) return *out = dt::bf16, true;
  return false;
}

enum class ConvPass { forward, backward_data, backward_weights };

struct ConvMds {
  dims src, wei, dst, strides, dilates, pad;
  dnnl::memory::desc user_src, user_wei, user_dst;
  dnnl::memory::desc any_src, any_wei, any_dst;
};

ConvMds conv_mds(const Geometry& g, dt type) {
  ConvMds m;
  m.src = {g.N, g.C, g.H, g.W};
  m.dst = {g.N, g.Cout, g.Ho, g.Wo};
  m.wei = g.groups > 1 ? dims{g.groups, g.Cout / g.groups, g.C / g.groups, g.kh, g.kw}
                       : dims{g.Cout, g.C, g.kh, g.kw};
  m.strides = {g.sh, g.sw};
  m.dilates = {g.dh - 1, g.dw - 1};  // oneDNN counts the gaps
  m.pad = {g.ph, g.pw};
  m.user_src = {m.src, type, tag::nchw};
  m.user_dst = {m.dst, type, tag::nchw};
  m.user_wei = {m.wei, type, g.groups > 1 ? tag::goihw : tag::oihw};
  m.any_src = {m.src, type, tag::any};
  m.any_dst = {m.dst, type, tag::any};
  m.any_wei = {m.wei, type, tag::any};
  return m;
}

dnnl::convolution_forward::primitive_desc conv_forward_pd(const ConvMds& m, dnnl::prop_kind kind) {
  dnnl::convolution_forward::desc d(kind, dnnl::algorithm::convolution_direct, m.any_src, m.any_wei, m.any_dst,
                                    m.strides, m.dilates, m.pad, m.pad);
  return {d, onednn_attr(), onednn_engine()};
}

template <class PD>
std::function<dnnl::memory::desc(int)> md_query(const PD& pd) {
  return [pd](int arg) { return pd.query_md(dnnl::query::exec_arg_md, arg); };
}

/// Runs one conv pass through oneDNN; false when it has no implementation.
/// ptrs: forward (x, w, y), backward_data (dy, w, dx), backward_weights (x, dy, dw).
bool conv_onednn(ConvPass pass, const Geometry& g, dt type, const std::vector<void*>& ptrs) {
  std::string key = "conv" + std::to_string(static_cast<int>(pass)) + ":" + std::to_string(static_cast<int>(type)) +
                    ":" + g.key();
  auto plan = cached_plan(key, [&]() -> std::shared_ptr<Plan> {
    ConvMds m = conv_mds(g, type);
    auto& eng = onednn_engine();
    if (pass == ConvPass::forward) {
      auto pd = conv_forward_pd(m, dnnl::prop_kind::forward_inference);
      auto plan = std::make_shared<Plan>(dnnl::convolution_forward(pd), md_query(pd));
      plan->add_arg(DNNL_ARG_SRC, m.user_src, false);
      plan->add_arg(DNNL_ARG_WEIGHTS, m.user_wei, false);
      plan->add_arg(DNNL_ARG_DST, m.user_dst, true);
      return plan;
    }
    auto hint = conv_forward_pd(m, dnnl::prop_kind::forward_training);
    if (pass == ConvPass::backward_data) {
      dnnl::convolution_backward_data::desc d(dnnl::algorithm::convolution_direct, m.any_src, m.any_wei, m.any_dst,
                                              m.strides, m.dilates, m.pad, m.pad);
      dnnl::convolution_backward_data::primitive_desc pd(d, onednn_attr(), eng, hint);
      auto plan = std::make_shared<Plan>(dnnl::convolution_backward_data(pd), md_query(pd));
      plan->add_arg(DNNL_ARG_DIFF_DST, m.user_dst, false);
      plan->add_arg(DNNL_ARG_WEIGHTS, m.user_wei, false);
      plan->add_arg(DNNL_ARG_DIFF_SRC, m.user_src, true);
      return plan;
    }
    dnnl::convolution_backward_weights::desc d(dnnl::algorithm::convolution_direct, m.any_src, m.any_wei, m.any_dst,
                                               m.strides, m.dilates, m.pad, m.pad);
    dnnl::convolution_backward_weights::primitive_desc pd(d, onednn_attr(), eng, hint);
    auto plan = std::make_shared<Plan>(dnnl::convolution_backward_weights(pd), md_query(pd));
    plan->add_arg(DNNL_ARG_SRC, m.user_src, false);
    plan->add_arg(DNNL_ARG_DIFF_DST, m.user_dst, false);
    plan->add_arg(DNNL_ARG_DIFF_WEIGHTS, m.user_wei, true);
    return plan;
  });
  if (!plan) return false;
  plan->run(ptrs);
  return true;
}

dnnl::algorithm pool_algorithm(bool max, bool exclusive) {
  if (max) return dnnl::algorithm::pooling_max;
  return exclusive ? dnnl::algorithm::pooling_avg_exclude_padding : dnnl::algorithm::pooling_avg_include_padding;
}

dnnl::pooling_forward::primitive_desc pool_forward_pd(const Geometry& g, dt type, bool max, dnnl::prop_kind kind) {
  dnnl::memory::desc src({g.N, g.C, g.H, g.W}, type, tag::nchw), dst({g.N, g.C, g.Ho, g.Wo}, type, tag::nchw);
  dnnl::pooling_forward::desc d(kind, pool_algorithm(max, g.exclusive), src, dst, {g.sh, g.sw}, {g.kh, g.kw},
                                {g.ph, g.pw}, {g.ph, g.pw});
  return {d, onednn_attr(), onednn_engine()};
}

/// Pooling forward (x -> y) through oneDNN on NCHW.
bool pool_forward_onednn(const Geometry& g, dt type, bool max, void* x, void* y) {
  std::string key = std::string("pool_fwd") + (max ? "max:" : "avg:") + std::to_string(static_cast<int>(type)) + g.key();
  auto plan = cached_plan(key, [&]() -> std::shared_ptr<Plan> {
    auto pd = pool_forward_pd(g, type, max, dnnl::prop_kind::forward_inference);
    auto plan = std::make_shared<Plan>(dnnl::pooling_forward(pd), md_query(pd));
    plan->add_arg(DNNL_ARG_SRC, pd.src_desc(), false);
    plan->add_arg(DNNL_ARG_DST, pd.dst_desc(), true);
    return plan;
  });
  if (!plan) return false;
  plan->run({x, y});
  return true;
}

/// Max-pooling backward: the forward (training) fills the workspace, the
/// argmax of every window, that the backward reads. Both run on NCHW.
struct MaxPoolGradPlan {
  std::mutex mutex;
  dnnl::pooling_forward forward;
  dnnl::pooling_backward backward;
  dnnl::memory::desc src, dst;
  dnnl::memory workspace, scratch_dst;  // owned by the plan
};

/// Pooling backward (dy -> dx); x is read by max pooling only.
bool pool_backward_onednn(const Geometry& g, dt type, bool max, void* x, void* dy, void* dx) {
  std::string key = std::string("pool_bwd") + (max ? "max:" : "avg:") + std::to_string(static_cast<int>(type)) + g.key();
  auto make_backward_pd = [&](const dnnl::pooling_forward::primitive_desc& hint) {
    dnnl::pooling_backward::desc d(pool_algorithm(max, g.exclusive), hint.src_desc(), hint.dst_desc(), {g.sh, g.sw},
                                   {g.kh, g.kw}, {g.ph, g.pw}, {g.ph, g.pw});
    return dnnl::pooling_backward::primitive_desc(d, onednn_attr(), onednn_engine(), hint);
  };
  if (!max) {
    auto plan = cached_plan(key, [&]() -> std::shared_ptr<Plan> {
      auto pd = make_backward_pd(pool_forward_pd(g, type, false, dnnl::prop_kind::forward_training));
      auto plan = std::make_shared<Plan>(dnnl::pooling_backward(pd), md_query(pd));
      plan->add_arg(DNNL_ARG_DIFF_DST, pd.diff_dst_desc(), false);
      plan->add_arg(DNNL_ARG_DIFF_SRC, pd.diff_src_desc(), true);
      return plan;
    });
    if (!plan) return false;
    plan->run({dy, dx});
    return true;
  }
  static std::mutex cache_mutex;
  static auto* cache = new std::unordered_map<std::string, std::shared_ptr<MaxPoolGradPlan>>();  // lives with the process
  std::shared_ptr<MaxPoolGradPlan> plan;
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    auto it = cache->find(key);
    if (it != cache->end()) {
      plan = it->second;
    } else {
      try {
        auto hint = pool_forward_pd(g, type, true, dnnl::prop_kind::forward_training);
        auto pd = make_backward_pd(hint);
        plan = std::make_shared<MaxPoolGradPlan>();
        plan->forward = dnnl::pooling_forward(hint);
        plan->backward = dnnl::pooling_backward(pd);
        plan->src = hint.src_desc();
        plan->dst = hint.dst_desc();
        plan->workspace = dnnl::memory(hint.workspace_desc(), onednn_engine());
        plan->scratch_dst = dnnl::memory(hint.dst_desc(), onednn_engine());
      } catch (const dnnl::error&) {
        plan = nullptr;
      }
      cache->emplace(key, plan);
    }
  }
  if (!plan) return false;
  std::lock_guard<std::mutex> lock(plan->mutex);
  dnnl::stream& stream = onednn_stream();
  auto& eng = onednn_engine();
  dnnl::memory src(plan->src, eng, x), diff_dst(plan->dst, eng, dy), diff_src(plan->src, eng, dx);
  execute_primitive(plan->forward, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, plan->scratch_dst}, {DNNL_ARG_WORKSPACE, plan->workspace}});
  execute_primitive(plan->backward, {{DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_DIFF_SRC, diff_src}, {DNNL_ARG_WORKSPACE, plan->workspace}});
  stream.wait();
  return true;
}

// -------------------------------------------------------------- loops ---

template <class T>
double ld(const T* p, int64_t i) {
  return static_cast<double>(Num<T>::load(p[i]));
}

template <class T>
void conv_forward_loop(const Geometry& g, const T* x, const T* w, T* y) {
  const int64_t cin = g.C / g.groups, cout = g.Cout / g.groups;
#pragma omp parallel for collapse(2) num_threads(current_threads()) schedule(static)
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t oc = 0; oc < g.Cout; ++oc) {
      const int64_t c0 = (oc / cout) * cin;
      for (int64_t oh = 0; oh < g.Ho; ++oh)
        for (int64_t ow = 0; ow < g.Wo; ++ow) {
          double acc = 0;
          for (int64_t ic = 0; ic < cin; ++ic)
            for (int64_t i = 0; i < g.kh; ++i)
              for (int64_t j = 0; j < g.kw; ++j) {
                const int64_t h = g.in_h(oh, i), v = g.in_w(ow, j);
                if (g.inside(h, v))
                  acc += ld(x, ((n * g.C + c0 + ic) * g.H + h) * g.W + v) * ld(w, ((oc * cin + ic) * g.kh + i) * g.kw + j);
              }
          y[((n * g.Cout + oc) * g.Ho + oh) * g.Wo + ow] = cast_to<T>(acc);
        }
    }
}

template <class T>
void conv_backward_data_loop(const Geometry& g, const T* dy, const T* w, T* dx) {
  const int64_t cin = g.C / g.groups, cout = g.Cout / g.groups;
#pragma omp parallel for collapse(2) num_threads(current_threads()) schedule(static)
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t c = 0; c < g.C; ++c) {
      const int64_t group = c / cin;
      for (int64_t h = 0; h < g.H; ++h)
        for (int64_t v = 0; v < g.W; ++v) {
          double acc = 0;
          for (int64_t oc = group * cout; oc < (group + 1) * cout; ++oc)
            for (int64_t i = 0; i < g.kh; ++i) {
              const int64_t th = h + g.ph - i * g.dh;
              if (th < 0 || th % g.sh != 0 || th / g.sh >= g.Ho) continue;
              for (int64_t j = 0; j < g.kw; ++j) {
                const int64_t tw = v + g.pw - j * g.dw;
                if (tw < 0 || tw % g.sw != 0 || tw / g.sw >= g.Wo) continue;
                acc += ld(dy, ((n * g.Cout + oc) * g.Ho + th / g.sh) * g.Wo + tw / g.sw) *
                       ld(w, ((oc * cin + c - group * cin) * g.kh + i) * g.kw + j);
              }
            }
          dx[((n * g.C + c) * g.H + h) * g.W + v] = cast_to<T>(acc);
        }
    }
}

template <class T>
void conv_backward_weights_loop(const Geometry& g, const T* x, const T* dy, T* dw) {
  const int64_t cin = g.C / g.groups, cout = g.Cout / g.groups;
#pragma omp parallel for collapse(2) num_threads(current_threads()) schedule(static)
  for (int64_t oc = 0; oc < g.Cout; ++oc)
    for (int64_t ic = 0; ic < cin; ++ic) {
      const int64_t c = (oc / cout) * cin + ic;
      for (int64_t i = 0; i < g.kh; ++i)
        for (int64_t j = 0; j < g.kw; ++j) {
          double acc = 0;
          for (int64_t n = 0; n < g.N; ++n)
            for (int64_t oh = 0; oh < g.Ho; ++oh)
              for (int64_t ow = 0; ow < g.Wo; ++ow) {
                const int64_t h = g.in_h(oh, i), v = g.in_w(ow, j);
                if (g.inside(h, v))
                  acc += ld(dy, ((n * g.Cout + oc) * g.Ho + oh) * g.Wo + ow) * ld(x, ((n * g.C + c) * g.H + h) * g.W + v);
              }
          dw[((oc * cin + ic) * g.kh + i) * g.kw + j] = cast_to<T>(acc);
        }
    }
}

/// Index (h * W + w) of the first maximum of a window in one plane; -1 when
/// the window holds no element of x. NaN wins.
template <class T>
int64_t window_argmax(const Geometry& g, const T* plane, int64_t oh, int64_t ow) {
  int64_t best = -1;
  double best_v = 0;
  for (int64_t i = 0; i < g.kh; ++i)
    for (int64_t j = 0; j < g.kw; ++j) {
      const int64_t h = g.in_h(oh, i), v = g.in_w(ow, j);
      if (!g.inside(h, v)) continue;
      const double val = ld(plane, h * g.W + v);
      if (best < 0 || val > best_v || (val != val && best_v == best_v)) best = h * g.W + v, best_v = val;
    }
  return best;
}

int64_t window_count(const Geometry& g, int64_t oh, int64_t ow) {
  if (!g.exclusive) return g.kh * g.kw;
  const int64_t h0 = std::max<int64_t>(g.in_h(oh, 0), 0), h1 = std::min(g.in_h(oh, g.kh - 1), g.H - 1);
  const int64_t w0 = std::max<int64_t>(g.in_w(ow, 0), 0), w1 = std::min(g.in_w(ow, g.kw - 1), g.W - 1);
  return std::max<int64_t>(h1 - h0 + 1, 0) * std::max<int64_t>(w1 - w0 + 1, 0);
}

template <class T, bool kMax>
void pool_forward_loop(const Geometry& g, const T* x, T* y) {
#pragma omp parallel for num_threads(current_threads()) schedule(static)
  for (int64_t p = 0; p < g.N * g.C; ++p) {
    const T* plane = x + p * g.H * g.W;
    for (int64_t oh = 0; oh < g.Ho; ++oh)
      for (int64_t ow = 0; ow < g.Wo; ++ow) {
        double out;
        if constexpr (kMax) {
          const int64_t at = window_argmax(g, plane, oh, ow);
          out = at < 0 ? -std::numeric_limits<double>::infinity() : ld(plane, at);
        } else {
          double acc = 0;
          for (int64_t i = 0; i < g.kh; ++i)
            for (int64_t j = 0; j < g.kw; ++j) {
              const int64_t h = g.in_h(oh, i), v = g.in_w(ow, j);
              if (g.inside(h, v)) acc += ld(plane, h * g.W + v);
            }
          const int64_t count = window_count(g, oh, ow);
          out = count ? acc / static_cast<double>(count) : 0.0;
        }
        y[(p * g.Ho + oh) * g.Wo + ow] = cast_to<T>(out);
      }
  }
}

/// Backward of pooling; x is used by max pooling only.
template <class T, bool kMax>
void pool_backward_loop(const Geometry& g, const T* x, const T* dy, T* dx) {
#pragma omp parallel num_threads(current_threads())
  {
    std::vector<double> acc(static_cast<size_t>(g.H * g.W));
#pragma omp for schedule(static)
    for (int64_t p = 0; p < g.N * g.C; ++p) {
      std::fill(acc.begin(), acc.end(), 0.0);
      const T* dplane = dy + p * g.Ho * g.Wo;
      for (int64_t oh = 0; oh < g.Ho; ++oh)
        for (int64_t ow = 0; ow < g.Wo; ++ow) {
          const double d = ld(dplane, oh * g.Wo + ow);
          if constexpr (kMax) {
            const int64_t at = window_argmax(g, x + p * g.H * g.W, oh, ow);
            if (at >= 0) acc[static_cast<size_t>(at)] += d;
          } else {
            const int64_t count = window_count(g, oh, ow);
            if (count == 0) continue;
            for (int64_t i = 0; i < g.kh; ++i)
              for (int64_t j = 0; j < g.kw; ++j) {
                const int64_t h = g.in_h(oh, i), v = g.in_w(ow, j);
                if (g.inside(h, v)) acc[static_cast<size_t>(h * g.W + v)] += d / static_cast<double>(count);
              }
          }
        }
      T* out = dx + p * g.H * g.W;
      for (int64_t i = 0; i < g.H * g.W; ++i) out[i] = cast_to<T>(acc[static_cast<size_t>(i)]);
    }
  }
}

// ------------------------------------------------------------ kernels ---

int32_t g_dtype(const OarKernelContext* ctx) { return ctx->outputs[0].dtype; }

OarStatus unsupported_dtype(const OarKernelContext* ctx) {
  return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "dtype %s is not a float dtype", dtype_name(ctx->outputs[0].dtype));
}

OarStatus conv2d_kernel(const OarKernelContext* ctx) {
  Geometry g;
  if (!check_views(ctx, 2) || !conv_geometry(ctx, ctx->inputs[0], ctx->inputs[1], ctx->outputs[0], &g))
    return OAR_ERROR_INVALID_ARGUMENT;
  dt type;
  if (onednn_type(g_dtype(ctx), &type) &&
      conv_onednn(ConvPass::forward, g, type, {in_void(ctx, 0), in_void(ctx, 1), out_void(ctx)}))
    return OAR_OK;
  bool ok = visit_float(ctx->outputs[0].dtype, [&](auto t) {
    using T = decltype(t);
    conv_forward_loop<T>(g, in_ptr<T>(ctx, 0), in_ptr<T>(ctx, 1), out_ptr<T>(ctx));
  });
  return ok ? OAR_OK : unsupported_dtype(ctx);
}

// Inputs grad [N, Cout, Ho, Wo], weight; output dx.
OarStatus conv2d_grad_input_kernel(const OarKernelContext* ctx) {
  Geometry g;
  if (!check_views(ctx, 2) || !conv_geometry(ctx, ctx->outputs[0], ctx->inputs[1], ctx->inputs[0], &g))
    return OAR_ERROR_INVALID_ARGUMENT;
  dt type;
  if (onednn_type(g_dtype(ctx), &type) &&
      conv_onednn(ConvPass::backward_data, g, type, {in_void(ctx, 0), in_void(ctx, 1), out_void(ctx)}))
    return OAR_OK;
  bool ok = visit_float(ctx->outputs[0].dtype, [&](auto t) {
    using T = decltype(t);
    conv_backward_data_loop<T>(g, in_ptr<T>(ctx, 0), in_ptr<T>(ctx, 1), out_ptr<T>(ctx));
  });
  return ok ? OAR_OK : unsupported_dtype(ctx);
}

// Inputs x, grad; output dw.
OarStatus conv2d_grad_weight_kernel(const OarKernelContext* ctx) {
  Geometry g;
  if (!check_views(ctx, 2) || !conv_geometry(ctx, ctx->inputs[0], ctx->outputs[0], ctx->inputs[1], &g))
    return OAR_ERROR_INVALID_ARGUMENT;
  dt type;
  if (onednn_type(g_dtype(ctx), &type) &&
      conv_onednn(ConvPass::backward_weights, g, type, {in_void(ctx, 0), in_void(ctx, 1), out_void(ctx)}))
    return OAR_OK;
  bool ok = visit_float(ctx->outputs[0].dtype, [&](auto t) {
    using T = decltype(t);
    conv_backward_weights_loop<T>(g, in_ptr<T>(ctx, 0), in_ptr<T>(ctx, 1), out_ptr<T>(ctx));
  });
  return ok ? OAR_OK : unsupported_dtype(ctx);
}

template <bool kMax>
OarStatus pool_kernel(const OarKernelContext* ctx) {
  Geometry g;
  if (!check_views(ctx, 1) || !pool_geometry(ctx, ctx->inputs[0], ctx->outputs[0], &g))
    return OAR_ERROR_INVALID_ARGUMENT;
  dt type;
  // oneDNN's max pooling drops a NaN in a window; the loop keeps it (numpy's max).
  const bool onednn_ok = !kMax || all_finite(ctx->inputs[0]);
  if (onednn_ok && onednn_type(g_dtype(ctx), &type) &&
      pool_forward_onednn(g, type, kMax, in_void(ctx, 0), out_void(ctx)))
    return OAR_OK;
  bool ok = visit_float(ctx->outputs[0].dtype, [&](auto t) {
    using T = decltype(t);
    pool_forward_loop<T, kMax>(g, in_ptr<T>(ctx, 0), out_ptr<T>(ctx));
  });
  return ok ? OAR_OK : unsupported_dtype(ctx);
}

// max: inputs x, grad; avg: input grad (dx's shape is the output's).
template <bool kMax>
OarStatus pool_grad_kernel(const OarKernelContext* ctx) {
  Geometry g;
  const int dy_index = kMax ? 1 : 0;
  if (!check_views(ctx, kMax ? 2 : 1) || !pool_geometry(ctx, ctx->outputs[0], ctx->inputs[dy_index], &g))
    return OAR_ERROR_INVALID_ARGUMENT;
  void* x = kMax ? in_void(ctx, 0) : nullptr;
  dt type;
  if (onednn_type(g_dtype(ctx), &type) && pool_backward_onednn(g, type, kMax, x, in_void(ctx, dy_index), out_void(ctx)))
    return OAR_OK;
  bool ok = visit_float(ctx->outputs[0].dtype, [&](auto t) {
    using T = decltype(t);
    pool_backward_loop<T, kMax>(g, static_cast<const T*>(x), in_ptr<T>(ctx, dy_index), out_ptr<T>(ctx));
  });
  return ok ? OAR_OK : unsupported_dtype(ctx);
}

}  // namespace

void register_conv_kernels(op::KernelTable& r) {
  for (int32_t d : kFloatDtypes) {
    r.add("conv2d", {d, d}, {d}, &guarded<&conv2d_kernel>);
    r.add("conv2d_grad_input", {d, d}, {d}, &guarded<&conv2d_grad_input_kernel>);
    r.add("conv2d_grad_weight", {d, d}, {d}, &guarded<&conv2d_grad_weight_kernel>);
    r.add("max_pool2d", {d}, {d}, &guarded<&pool_kernel<true>>);
    r.add("avg_pool2d", {d}, {d}, &guarded<&pool_kernel<false>>);
    r.add("max_pool2d_grad", {d, d}, {d}, &guarded<&pool_grad_kernel<true>>);
    r.add("avg_pool2d_grad", {d}, {d}, &guarded<&pool_grad_kernel<false>>);
  }
}

}  // namespace oar_cpu
