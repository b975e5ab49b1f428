// conv2d and pool2d of the mock, with their backward ops (docs/kernels.md):
// direct loops over NCHW, every output element computed once as a sum in the
// dtype's accumulator (f64 for floats), rounded once on store.
#include <cmath>
#include <limits>

#include "mock_internal.h"

namespace oar_mock {
namespace {

/// The problem of one conv or pool call. Conv: x [N, C, H, W], weight
/// [Cout, C / groups, kh, kw], y [N, Cout, Ho, Wo]; pool: Cout = C.
struct Geometry {
  int64_t N = 0, C = 0, H = 0, W = 0, Cout = 0, Ho = 0, Wo = 0, kh = 0, kw = 0;
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, groups = 1;
  int64_t in_h(int64_t oh, int64_t i) const { return oh * sh - ph + i * dh; }
  int64_t in_w(int64_t ow, int64_t j) const { return ow * sw - pw + j * dw; }
  bool inside(int64_t h, int64_t w) const { return h >= 0 && h < H && w >= 0 && w < W; }
};

bool read_pair(const Launch& l, const char* name, int64_t* a, int64_t* b) {
  op::Attrs attrs(l.ctx);
  const std::vector<int64_t> v = attrs.get_ints(name);
  if (!attrs.ok()) return false;
  if (v.size() != 2) {
    fail(OAR_ERROR_INVALID_ARGUMENT, format("%s: attribute %s must have 2 entries", l.op, name));
    return false;
  }
  *a = v[0];
  *b = v[1];
  return true;
}

bool check_4d(const char* op, const char* name, const View& v) {
  if (v.ndim == 4) return true;
  fail(OAR_ERROR_INVALID_ARGUMENT,
       format("%s: %s must be 4-D (NCHW) but has shape %s", op, name, shape_str(v.ndim, v.shape).c_str()));
  return false;
}

/// Fills g from x's, weight's (or the window's) and y's shapes and the
/// attributes, and checks that y has the shape the formula gives.
bool conv_geometry(const Launch& l, const View& x, const View& w, const View& y, Geometry* g) {
  if (!check_4d(l.op, "x", x) || !check_4d(l.op, "weight", w) || !check_4d(l.op, "y", y)) return false;
  if (!read_pair(l, "strides", &g->sh, &g->sw) || !read_pair(l, "paddings", &g->ph, &g->pw) ||
      !read_pair(l, "dilations", &g->dh, &g->dw))
    return false;
  op::Attrs attrs(l.ctx);
  g->groups = attrs.get_int("groups");
  if (!attrs.ok()) return false;
  g->N = x.shape[0], g->C = x.shape[1], g->H = x.shape[2], g->W = x.shape[3];
  g->Cout = w.shape[0], g->kh = w.shape[2], g->kw = w.shape[3];
  g->Ho = y.shape[2], g->Wo = y.shape[3];
  bool ok = g->groups >= 1 && g->sh >= 1 && g->sw >= 1 && g->dh >= 1 && g->dw >= 1 && g->ph >= 0 &&
            g->pw >= 0 && g->C == w.shape[1] * g->groups && g->Cout % g->groups == 0 && y.shape[0] == g->N &&
            y.shape[1] == g->Cout && g->Ho == (g->H + 2 * g->ph - g->dh * (g->kh - 1) - 1) / g->sh + 1 &&
            g->Wo == (g->W + 2 * g->pw - g->dw * (g->kw - 1) - 1) / g->sw + 1;
  if (!ok)
    fail(OAR_ERROR_INVALID_ARGUMENT,
         format("%s: x %s, weight %s and y %s do not fit the attributes (groups %lld)", l.op,
              shape_str(x.ndim, x.shape).c_str(), shape_str(w.ndim, w.shape).c_str(),
              shape_str(y.ndim, y.shape).c_str(), static_cast<long long>(g->groups)));
  return ok;
}

bool pool_geometry(const Launch& l, const View& x, const View& y, Geometry* g) {
  if (!check_4d(l.op, "x", x) || !check_4d(l.op, "y", y)) return false;
  if (!read_pair(l, "kernel_size", &g->kh, &g->kw) || !read_pair(l, "strides", &g->sh, &g->sw) ||
      !read_pair(l, "paddings", &g->ph, &g->pw))
    return false;
  g->N = x.shape[0], g->C = g->Cout = x.shape[1], g->H = x.shape[2], g->W = x.shape[3];
  g->Ho = y.shape[2], g->Wo = y.shape[3];
  bool ok = g->kh >= 1 && g->kw >= 1 && g->sh >= 1 && g->sw >= 1 && g->ph >= 0 && g->pw >= 0 &&
            y.shape[0] == g->N && y.shape[1] == g->C && g->Ho == (g->H + 2 * g->ph - g->kh) / g->sh + 1 &&
            g->Wo == (g->W + 2 * g->pw - g->kw) / g->sw + 1;
  if (!ok)
    fail(OAR_ERROR_INVALID_ARGUMENT,
         format("%s: x %s and y %s do not fit the window attributes", l.op, shape_str(x.ndim, x.shape).c_str(),
              shape_str(y.ndim, y.shape).c_str()));
  return ok;
}

bool same_float_dtype(const Launch& l) {
  int32_t dt = l.out[0].dtype;
  if (!visit_float(dt, [](auto) {})) return bad_dtype(l.op, "y", dt, "float dtypes"), false;
  for (const View& v : l.in)
    if (v.dtype != dt) return bad_dtype(l.op, "an input", v.dtype, dtype_name(dt)), false;
  return true;
}

char* at4(const View& v, int64_t a, int64_t b, int64_t c, int64_t d) {
  const int64_t index[4] = {a, b, c, d};
  return v.at(index);
}

// ---------------------------------------------------------------- conv2d ---

OarStatus conv2d_kernel(const OarKernelContext* ctx) {
  Launch l;
  if (OarStatus s = prepare(ctx, "conv2d", 2, 1, &l)) return s;
  const View x = l.in[0], w = l.in[1], y = l.out[0];
  Geometry g;
  if (!same_float_dtype(l) || !conv_geometry(l, x, w, y, &g)) return OAR_ERROR_INVALID_ARGUMENT;
  return submit(l, [x, w, y, g](std::string&) -> OarStatus {
    visit_float(y.dtype, [&](auto t) {
      using T = Element<decltype(t)>;
      const int64_t cin = g.C / g.groups, cout = g.Cout / g.groups;
      for_each_index(4, y.shape, [&](const int64_t* o, int64_t) {
        const int64_t n = o[0], oc = o[1], base = (oc / cout) * cin;
        typename T::A acc = 0;
        for (int64_t ic = 0; ic < cin; ++ic)
          for (int64_t i = 0; i < g.kh; ++i)
            for (int64_t j = 0; j < g.kw; ++j) {
              const int64_t h = g.in_h(o[2], i), v = g.in_w(o[3], j);
              if (g.inside(h, v))
                acc += T::load(at4(x, n, base + ic, h, v)) * static_cast<typename T::A>(T::load(at4(w, oc, ic, i, j)));
            }
        T::store(y.at(o), static_cast<typename T::C>(acc));
      });
    });
    return OAR_OK;
  });
}

// Inputs grad [N, Cout, Ho, Wo], weight; output dx [N, C, H, W].
OarStatus conv2d_grad_input_kernel(const OarKernelContext* ctx) {
  Launch l;
  if (OarStatus s = prepare(ctx, "conv2d_grad_input", 2, 1, &l)) return s;
  const View gy = l.in[0], w = l.in[1], dx = l.out[0];
  Geometry g;
  if (!same_float_dtype(l) || !conv_geometry(l, dx, w, gy, &g)) return OAR_ERROR_INVALID_ARGUMENT;
  return submit(l, [gy, w, dx, g](std::string&) -> OarStatus {
    visit_float(dx.dtype, [&](auto t) {
      using T = Element<decltype(t)>;
      const int64_t cin = g.C / g.groups, cout = g.Cout / g.groups;
      // dx[n, c, h, v] = sum of gy[n, oc, oh, ow] * w[oc, c % cin, i, j] over
      // the (oc, i, j) whose window position (oh, ow) lands on (h, v).
      for_each_index(4, dx.shape, [&](const int64_t* p, int64_t) {
        const int64_t n = p[0], c = p[1], group = c / cin;
        typename T::A acc = 0;
        for (int64_t oc = group * cout; oc < (group + 1) * cout; ++oc)
          for (int64_t i = 0; i < g.kh; ++i) {
            const int64_t th = p[2] + g.ph - i * g.dh;
            if (th < 0 || th % g.sh != 0 || th / g.sh >= g.Ho) continue;
            for (int64_t j = 0; j < g.kw; ++j) {
              const int64_t tw = p[3] + g.pw - j * g.dw;
              if (tw < 0 || tw % g.sw != 0 || tw / g.sw >= g.Wo) continue;
              acc += T::load(at4(gy, n, oc, th / g.sh, tw / g.sw)) *
                     static_cast<typename T::A>(T::load(at4(w, oc, c - group * cin, i, j)));
            }
          }
        T::store(dx.at(p), static_cast<typename T::C>(acc));
      });
    });
    return OAR_OK;
  });
}

// Inputs x, grad [N, Cout, Ho, Wo]; output dw [Cout, C / groups, kh, kw].
OarStatus conv2d_grad_weight_kernel(const OarKernelContext* ctx) {
  Launch l;
  if (OarStatus s = prepare(ctx, "conv2d_grad_weight", 2, 1, &l)) return s;
  const View x = l.in[0], gy = l.in[1], dw = l.out[0];
  Geometry g;
  if (!same_float_dtype(l) || !conv_geometry(l, x, dw, gy, &g)) return OAR_ERROR_INVALID_ARGUMENT;
  return submit(l, [x, gy, dw, g](std::string&) -> OarStatus {
    visit_float(dw.dtype, [&](auto t) {
      using T = Element<decltype(t)>;
      const int64_t cin = g.C / g.groups, cout = g.Cout / g.groups;
      for_each_index(4, dw.shape, [&](const int64_t* p, int64_t) {
        const int64_t oc = p[0], c = (oc / cout) * cin + p[1];
        typename T::A acc = 0;
        for (int64_t n = 0; n < g.N; ++n)
          for (int64_t oh = 0; oh < g.Ho; ++oh)
            for (int64_t ow = 0; ow < g.Wo; ++ow) {
              const int64_t h = g.in_h(oh, p[2]), v = g.in_w(ow, p[3]);
              if (g.inside(h, v))
                acc += T::load(at4(gy, n, oc, oh, ow)) * static_cast<typename T::A>(T::load(at4(x, n, c, h, v)));
            }
        T::store(dw.at(p), static_cast<typename T::C>(acc));
      });
    });
    return OAR_OK;
  });
}

// ----------------------------------------------------------------- pools ---

/// Position (h, w) of the first maximum in the window of output (oh, ow)
/// (row-major scan; padding never wins).
template <class T>
void window_argmax(const View& x, const Geometry& g, int64_t n, int64_t c, int64_t oh, int64_t ow, int64_t* bh,
                   int64_t* bw) {
  double best = -std::numeric_limits<double>::infinity();
  *bh = *bw = -1;
  for (int64_t i = 0; i < g.kh; ++i)
    for (int64_t j = 0; j < g.kw; ++j) {
      const int64_t h = g.in_h(oh, i), v = g.in_w(ow, j);
      if (!g.inside(h, v)) continue;
      const double val = T::load(at4(x, n, c, h, v));
      if (*bh < 0 || val > best || (std::isnan(val) && !std::isnan(best))) best = val, *bh = h, *bw = v;
    }
}

/// Divisor of window (oh, ow) of avg_pool2d.
int64_t window_count(const Geometry& g, int64_t oh, int64_t ow, bool exclusive) {
  if (!exclusive) return g.kh * g.kw;
  int64_t count = 0;
  for (int64_t i = 0; i < g.kh; ++i)
    for (int64_t j = 0; j < g.kw; ++j) count += g.inside(g.in_h(oh, i), g.in_w(ow, j));
  return count;
}

template <bool kMax>
OarStatus pool_kernel(const OarKernelContext* ctx) {
  Launch l;
  if (OarStatus s = prepare(ctx, kMax ? "max_pool2d" : "avg_pool2d", 1, 1, &l)) return s;
  const View x = l.in[0], y = l.out[0];
  Geometry g;
  if (!same_float_dtype(l) || !pool_geometry(l, x, y, &g)) return OAR_ERROR_INVALID_ARGUMENT;
  op::Attrs attrs(l.ctx);
  const bool exclusive = attrs.get_bool("exclusive", true);
  if (!attrs.ok()) return attrs.status();
  return submit(l, [x, y, g, exclusive](std::string&) -> OarStatus {
    visit_float(y.dtype, [&](auto t) {
      using T = Element<decltype(t)>;
      for_each_index(4, y.shape, [&](const int64_t* o, int64_t) {
        if constexpr (kMax) {
          int64_t h, v;
          window_argmax<T>(x, g, o[0], o[1], o[2], o[3], &h, &v);
          T::store(y.at(o), h < 0 ? -std::numeric_limits<typename T::C>::infinity() : T::load(at4(x, o[0], o[1], h, v)));
        } else {
          typename T::A acc = 0;
          for (int64_t i = 0; i < g.kh; ++i)
            for (int64_t j = 0; j < g.kw; ++j) {
              const int64_t h = g.in_h(o[2], i), v = g.in_w(o[3], j);
              if (g.inside(h, v)) acc += T::load(at4(x, o[0], o[1], h, v));
            }
          const int64_t count = window_count(g, o[2], o[3], exclusive);
          T::store(y.at(o), static_cast<typename T::C>(count ? acc / count : 0));
        }
      });
    });
    return OAR_OK;
  });
}

// max_pool2d_grad: inputs x, grad; the grad of each window goes to its first maximum.
OarStatus max_pool_grad_kernel(const OarKernelContext* ctx) {
  Launch l;
  if (OarStatus s = prepare(ctx, "max_pool2d_grad", 2, 1, &l)) return s;
  const View x = l.in[0], gy = l.in[1], dx = l.out[0];
  Geometry g;
  if (!same_float_dtype(l) || !pool_geometry(l, x, gy, &g) || !check_same_shape(l.op, "x", x, "dx", dx))
    return OAR_ERROR_INVALID_ARGUMENT;
  return submit(l, [x, gy, dx, g](std::string&) -> OarStatus {
    visit_float(dx.dtype, [&](auto t) {
      using T = Element<decltype(t)>;
      // Accumulate in f64 per element of dx, then round once.
      std::vector<double> acc(static_cast<size_t>(dx.numel()), 0.0);
      for_each_index(4, gy.shape, [&](const int64_t* o, int64_t) {
        int64_t h, v;
        window_argmax<T>(x, g, o[0], o[1], o[2], o[3], &h, &v);
        if (h >= 0) acc[static_cast<size_t>(((o[0] * g.C + o[1]) * g.H + h) * g.W + v)] += T::load(gy.at(o));
      });
      for_each_index(4, dx.shape, [&](const int64_t* p, int64_t i) {
        T::store(dx.at(p), static_cast<typename T::C>(acc[static_cast<size_t>(i)]));
      });
    });
    return OAR_OK;
  });
}

// avg_pool2d_grad: input grad; output dx of attribute input_shape.
OarStatus avg_pool_grad_kernel(const OarKernelContext* ctx) {
  Launch l;
  if (OarStatus s = prepare(ctx, "avg_pool2d_grad", 1, 1, &l)) return s;
  const View gy = l.in[0], dx = l.out[0];
  Geometry g;
  if (!same_float_dtype(l) || !pool_geometry(l, dx, gy, &g)) return OAR_ERROR_INVALID_ARGUMENT;
  op::Attrs attrs(l.ctx);
  const bool exclusive = attrs.get_bool("exclusive", true);
  if (!attrs.ok()) return attrs.status();
  return submit(l, [gy, dx, g, exclusive](std::string&) -> OarStatus {
    visit_float(dx.dtype, [&](auto t) {
      using T = Element<decltype(t)>;
      std::vector<double> acc(static_cast<size_t>(dx.numel()), 0.0);
      for_each_index(4, gy.shape, [&](const int64_t* o, int64_t) {
        const int64_t count = window_count(g, o[2], o[3], exclusive);
        if (count == 0) return;
        const double share = T::load(gy.at(o)) / static_cast<double>(count);
        for (int64_t i = 0; i < g.kh; ++i)
          for (int64_t j = 0; j < g.kw; ++j) {
            const int64_t h = g.in_h(o[2], i), v = g.in_w(o[3], j);
            if (g.inside(h, v)) acc[static_cast<size_t>(((o[0] * g.C + o[1]) * g.H + h) * g.W + v)] += share;
          }
      });
      for_each_index(4, dx.shape, [&](const int64_t* p, int64_t i) {
        T::store(dx.at(p), static_cast<typename T::C>(acc[static_cast<size_t>(i)]));
      });
    });
    return OAR_OK;
  });
}

}  // namespace

void register_conv_kernels(op::KernelTable& t) {
  for (int32_t dt : kFloatDtypes) {
    t.add("conv2d", {dt, dt}, {dt}, conv2d_kernel);
    t.add("conv2d_grad_input", {dt, dt}, {dt}, conv2d_grad_input_kernel);
    t.add("conv2d_grad_weight", {dt, dt}, {dt}, conv2d_grad_weight_kernel);
    t.add("max_pool2d", {dt}, {dt}, pool_kernel<true>);
    t.add("avg_pool2d", {dt}, {dt}, pool_kernel<false>);
    t.add("max_pool2d_grad", {dt, dt}, {dt}, max_pool_grad_kernel);
    t.add("avg_pool2d_grad", {dt}, {dt}, avg_pool_grad_kernel);
  }
}

}  // namespace oar_mock
