// Optimizer kernels: adam_update, the fused multi-tensor Adam / AdamW step
// (Note [Fused Adam] in core/src/ops/optimizer_ops.cpp). One pass over
// memory per tensor: every element reads param, grad and the moments once
// and writes the new ones once. The tensors are cut into chunks that run in
// parallel, so a model of many small tensors fills the threads as well as
// one large tensor does. The arithmetic is the decomposition's, operation
// for operation in the moments' dtype with the scalars rounded to it, so
// the fused step gives the op-by-op step's bits (-ffp-contract=off).
#include <cmath>
#include <cstring>
#include <vector>

#include "cpu_common.h"
#include "cpu_vec_math.h"

namespace oar_cpu {
namespace {

// Elements per chunk: large enough that a chunk costs more than handing it
// to a thread, small enough that a few tensors split across two threads.
constexpr int64_t kChunk = 16384;

/// The scalars of one step, rounded to the compute type C.
template <class C>
struct AdamScalars {
  C b1, one_minus_b1, b2, one_minus_b2, eps_t, lr_t, decay;
};

/// Pointers of one tensor's operands (any may be null when unused).
struct AdamOperands {
  const void* p = nullptr;
  const void* g = nullptr;
  const void* m = nullptr;
  const void* v = nullptr;
  const void* vmax = nullptr;
  const void* master = nullptr;
  void* p_out = nullptr;
  void* m_out = nullptr;
  void* v_out = nullptr;
  void* vmax_out = nullptr;
  void* master_out = nullptr;
};

template <class T>
auto load(T x) {
  if constexpr (kIsHalf<T>)
    return Num<T>::load(x);
  else
    return x;
}

/// Elements [b, e) of one tensor. P: the param's storage type, G: the
/// gradient's, C: the moments' (and the compute type).
template <class P, class G, class C, bool kAms, bool kMaster>
OAR_CPU_CLONES_STREAM void adam_span(const AdamOperands& o, const AdamScalars<C>& s, int64_t b, int64_t e) {
  // Outputs are fresh tensors: nothing aliases.
  const P* __restrict p = static_cast<const P*>(o.p);
  const G* __restrict g = static_cast<const G*>(o.g);
  const C* __restrict m = static_cast<const C*>(o.m);
  const C* __restrict v = static_cast<const C*>(o.v);
  const C* __restrict vmax = static_cast<const C*>(o.vmax);
  const C* __restrict master = static_cast<const C*>(o.master);
  P* __restrict p_out = static_cast<P*>(o.p_out);
  C* __restrict m_out = static_cast<C*>(o.m_out);
  C* __restrict v_out = static_cast<C*>(o.v_out);
  C* __restrict vmax_out = static_cast<C*>(o.vmax_out);
  C* __restrict master_out = static_cast<C*>(o.master_out);
  const AdamScalars<C> sc = s;
#pragma omp simd
  for (int64_t k = b; k < e; ++k) {
    const C gk = static_cast<C>(load(g[k]));
    const C mk = m[k] * sc.b1 + gk * sc.one_minus_b1;
    C vk = v[k] * sc.b2 + (gk * gk) * sc.one_minus_b2;
    m_out[k] = mk;
    v_out[k] = vk;
    if constexpr (kAms) {
      const C a = vmax[k];  // the maximum op's rule: a NaN propagates
      vk = (a > vk || a != a) ? a : vk;
      vmax_out[k] = vk;
    }
    C w;
    if constexpr (kMaster)
      w = master[k];
    else
      w = static_cast<C>(load(p[k]));
    const C w_new = w * sc.decay - (mk / (std::sqrt(vk) + sc.eps_t)) * sc.lr_t;
    if constexpr (kMaster) master_out[k] = w_new;
    if constexpr (std::is_same_v<P, C>)
      p_out[k] = w_new;
    else
      p_out[k] = cast_to<P>(w_new);
  }
}

using AdamSpanF32 = void (*)(const AdamOperands&, const AdamScalars<float>&, int64_t, int64_t);
using AdamSpanF64 = void (*)(const AdamOperands&, const AdamScalars<double>&, int64_t, int64_t);

template <class P, class G, class C>
auto pick_span(bool ams, bool master) {
  if constexpr (std::is_same_v<P, C>) {
    (void)master;
    return ams ? &adam_span<P, G, C, true, false> : &adam_span<P, G, C, false, false>;
  } else {
    if (ams) return master ? &adam_span<P, G, C, true, true> : &adam_span<P, G, C, true, false>;
    return master ? &adam_span<P, G, C, false, true> : &adam_span<P, G, C, false, false>;
  }
}

/// One piece of work: elements [begin, end) of tensor `index`.
struct Chunk {
  int64_t index, begin, end;
};

OarStatus adam_update_kernel(const OarKernelContext* ctx) {
  Attrs attrs(ctx);
  const double lr = attrs.get_float("lr"), b1 = attrs.get_float("beta1"), b2 = attrs.get_float("beta2");
  const double eps = attrs.get_float("epsilon"), wd = attrs.get_float("weight_decay", 0.0);
  const int64_t step = attrs.get_int("step");
  const bool ams = attrs.get_bool("amsgrad", false), master = attrs.get_bool("master_weights", false);
  if (!attrs.ok()) return attrs.status();
  const int64_t groups = 4 + (ams ? 1 : 0) + (master ? 1 : 0);
  if (ctx->num_inputs % groups != 0 || ctx->num_outputs != ctx->num_inputs - ctx->num_inputs / groups)
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT,
                "expected %lld inputs per parameter and one output less per parameter, got %d inputs and %d "
                "outputs",
                static_cast<long long>(groups), ctx->num_inputs, ctx->num_outputs);
  const int64_t n = ctx->num_inputs / groups;
  const double b1p = std::pow(b1, static_cast<double>(step)), b2p = std::pow(b2, static_cast<double>(step));
  const double lr_t = lr * std::sqrt(1.0 - b2p) / (1.0 - b1p), eps_t = eps * std::sqrt(1.0 - b2p);
  const double decay = wd != 0.0 ? 1.0 - lr * wd : 1.0;
  const AdamScalars<float> s32{static_cast<float>(b1),    static_cast<float>(1.0 - b1), static_cast<float>(b2),
                               static_cast<float>(1.0 - b2), static_cast<float>(eps_t), static_cast<float>(lr_t),
                               static_cast<float>(decay)};
  const AdamScalars<double> s64{b1, 1.0 - b1, b2, 1.0 - b2, eps_t, lr_t, decay};

  std::vector<AdamOperands> ops(static_cast<size_t>(n));
  std::vector<AdamSpanF32> f32(static_cast<size_t>(n), nullptr);
  std::vector<AdamSpanF64> f64(static_cast<size_t>(n), nullptr);
  std::vector<Chunk> chunks;
  for (int64_t i = 0; i < n; ++i) {
    auto in = [&](int64_t grp) { return oar_view_ptr(&ctx->inputs[grp * n + i]); };
    auto out = [&](int64_t grp) { return oar_view_ptr(&ctx->outputs[grp * n + i]); };
    for (int64_t grp = 0; grp < groups; ++grp) {
      const OarTensorView& t = ctx->inputs[grp * n + i];
      if (!is_contiguous(t))
        return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "input %lld is not contiguous",
                    static_cast<long long>(grp * n + i));
    }
    AdamOperands& o = ops[static_cast<size_t>(i)];
    o.p = in(0), o.g = in(1), o.m = in(2), o.v = in(3);
    o.p_out = out(0), o.m_out = out(1), o.v_out = out(2);
    if (ams) o.vmax = in(4), o.vmax_out = out(3);
    if (master) o.master = in(ams ? 5 : 4), o.master_out = out(ams ? 4 : 3);
    const int32_t pd = ctx->inputs[i].dtype, gd = ctx->inputs[n + i].dtype, cd = ctx->inputs[2 * n + i].dtype;
    const bool g_own = gd == pd;
    auto& f = f32[static_cast<size_t>(i)];
    if (cd == OAR_DTYPE_F32 && pd == OAR_DTYPE_F32 && g_own) f = pick_span<float, float, float>(ams, false);
    else if (cd == OAR_DTYPE_F32 && pd == OAR_DTYPE_BF16)
      f = g_own ? pick_span<bf16_t, bf16_t, float>(ams, master) : pick_span<bf16_t, float, float>(ams, master);
    else if (cd == OAR_DTYPE_F32 && pd == OAR_DTYPE_F16)
      f = g_own ? pick_span<f16_t, f16_t, float>(ams, master) : pick_span<f16_t, float, float>(ams, master);
    else if (cd == OAR_DTYPE_F64 && pd == OAR_DTYPE_F64 && g_own)
      f64[static_cast<size_t>(i)] = pick_span<double, double, double>(ams, false);
    if (!f && !f64[static_cast<size_t>(i)])
      return fail(ctx, OAR_ERROR_UNSUPPORTED,
                  "parameter %lld: no kernel for a %s parameter with a %s gradient and %s moments",
                  static_cast<long long>(i), dtype_name(pd), dtype_name(gd), dtype_name(cd));
    const int64_t numel = oar_view_numel(&ctx->inputs[i]);
    for (int64_t b = 0; b < numel; b += kChunk) chunks.push_back({i, b, std::min(numel, b + kChunk)});
  }
  int64_t total = 0;
  for (const Chunk& c : chunks) total += c.end - c.begin;
  auto run = [&](const Chunk& c) {
    const auto i = static_cast<size_t>(c.index);
    if (f32[i])
      f32[i](ops[i], s32, c.begin, c.end);
    else
      f64[i](ops[i], s64, c.begin, c.end);
  };
  const auto count = static_cast<int64_t>(chunks.size());
  if (total >= kParallelMin) refresh_num_threads();  // Note [Threads on a busy machine]
#pragma omp parallel for num_threads(current_threads()) schedule(static) if (g_num_threads > 1 && count > 1 && total >= kParallelMin)
  for (int64_t c = 0; c < count; ++c) run(chunks[static_cast<size_t>(c)]);
  return OAR_OK;
}

}  // namespace

void register_optimizer_kernels(op::KernelTable& r) {
  // Any number of operands: the kernel checks the dtypes per parameter.
  r.add("adam_update", std::vector<int32_t>{}, std::vector<int32_t>{}, guarded<adam_update_kernel>);
}

}  // namespace oar_cpu
