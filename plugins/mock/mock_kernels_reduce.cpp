// Reductions (sum, prod, max, min, argmax, argmin) and matmul of the mock.
// Sums and products accumulate in f64 for float dtypes and in wrapping i64
// for integers, and round once on store: the most accurate reference.
#include <cmath>

#include "mock_internal.h"

namespace oar_mock {
namespace {

// ------------------------------------------------------------------------
// sum, prod, max, min
// ------------------------------------------------------------------------

enum class Reduce { Sum, Prod, Max, Min };
const char* const kReduceNames[] = {"sum", "prod", "max", "min"};

// The reduced dims as a mask, from the `axes` attribute. A missing `axes`
// reduces every dim. An empty `axes` reduces nothing when the output keeps
// the input's shape, and every dim otherwise (the two agree on the values
// whenever both shapes fit).
bool reduced_dims(const Launch& l, const View& x, const View& y, bool mask[OAR_MAX_NDIM]) {
  op::Attrs attrs(l.ctx);
  const bool present = attrs.has("axes");
  const std::vector<int64_t> axes = attrs.get_ints("axes", {});
  if (!attrs.ok()) return false;
  bool same_shape = x.ndim == y.ndim;
  for (int32_t d = 0; same_shape && d < x.ndim; ++d) same_shape = x.shape[d] == y.shape[d];
  for (int32_t d = 0; d < OAR_MAX_NDIM; ++d) mask[d] = !present || (axes.empty() && !same_shape);
  for (int64_t axis : axes) {
    int64_t a = axis < 0 ? axis + x.ndim : axis;
    if (a < 0 || a >= x.ndim || mask[a]) {
      fail(OAR_ERROR_INVALID_ARGUMENT,
           format("%s: axis %lld is out of range or repeated for an input of shape %s", l.op,
                static_cast<long long>(axis), shape_str(x.ndim, x.shape).c_str()));
      return false;
    }
    mask[a] = true;
  }
  return true;
}

// Checks y's shape against x reduced over `mask`; builds the keep-dims view
// of y (rank of x, reduced dims of size 1) used to address outputs.
bool reduced_output(const Launch& l, const View& x, const View& y, const bool* mask, bool keepdim,
                    View* y_keep) {
  int64_t expected[OAR_MAX_NDIM];
  int32_t n = 0;
  *y_keep = y;
  y_keep->ndim = x.ndim;
  for (int32_t d = 0; d < x.ndim; ++d) {
    if (keepdim || !mask[d]) expected[n++] = mask[d] ? 1 : x.shape[d];
    y_keep->shape[d] = mask[d] ? 1 : x.shape[d];
  }
  bool ok = y.ndim == n;
  for (int32_t d = 0; ok && d < n; ++d) ok = y.shape[d] == expected[d];
  if (!ok) {
    fail(OAR_ERROR_INVALID_ARGUMENT,
         format("%s: reducing shape %s (keepdim=%s) gives %s but the output has shape %s", l.op,
              shape_str(x.ndim, x.shape).c_str(), keepdim ? "true" : "false",
              shape_str(n, expected).c_str(), shape_str(y.ndim, y.shape).c_str()));
    return false;
  }
  for (int32_t d = 0, j = 0; d < x.ndim; ++d)
    y_keep->strides[d] = (keepdim || !mask[d]) ? y.strides[j++] : 0;
  return true;
}

template <Reduce OP>
OarStatus reduce_kernel(const OarKernelContext* ctx) {
  Launch l;
  if (OarStatus s = prepare(ctx, kReduceNames[static_cast<int>(OP)], 1, 1, &l)) return s;
  const View x = l.in[0], y = l.out[0];
  bool mask[OAR_MAX_NDIM];
  View y_keep;
  if (!reduced_dims(l, x, y, mask)) return OAR_ERROR_INVALID_ARGUMENT;
  op::Attrs attrs(l.ctx);
  const bool keepdim = attrs.get_bool("keepdim", false);
  if (!attrs.ok() || !reduced_output(l, x, y, mask, keepdim, &y_keep))
    return OAR_ERROR_INVALID_ARGUMENT;
  bool is_float = visit_float(x.dtype, [](auto) {});
  bool sum_like = OP == Reduce::Sum || OP == Reduce::Prod;
  int32_t want = sum_like && !is_float ? OAR_DTYPE_I64 : x.dtype;
  if (y.dtype != want)
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                format("%s: an input of dtype %s needs an output of dtype %s, not %s", l.op,
                     dtype_name(x.dtype), dtype_name(want), dtype_name(y.dtype)));
  int64_t outer[OAR_MAX_NDIM], inner[OAR_MAX_NDIM];
  int64_t inner_count = 1;
  for (int32_t d = 0; d < x.ndim; ++d) {
    outer[d] = mask[d] ? 1 : x.shape[d];
    inner[d] = mask[d] ? x.shape[d] : 1;
    inner_count *= inner[d];
  }
  if (!sum_like && inner_count == 0 && y.numel() > 0)
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                format("%s: the reduced dims of shape %s are empty; %s has no identity", l.op,
                     shape_str(x.ndim, x.shape).c_str(), l.op));
  std::vector<int64_t> outer_shape(outer, outer + x.ndim), inner_shape(inner, inner + x.ndim);
  return submit(l, [x, y_keep, outer_shape, inner_shape](std::string&) -> OarStatus {
    int32_t nd = x.ndim;
    visit_all(x.dtype, [&](auto t) {
      using T = Element<decltype(t)>;
      using A = typename T::A;
      using C = typename T::C;
      for_each_index(nd, outer_shape.data(), [&](const int64_t* o, int64_t) {
        A acc = OP == Reduce::Prod ? A(1) : A(0);
        C extreme = C(0);
        bool first = true;
        for_each_index(nd, inner_shape.data(), [&](const int64_t* r, int64_t) {
          int64_t index[OAR_MAX_NDIM];
          for (int32_t d = 0; d < nd; ++d) index[d] = o[d] + r[d];
          C v = T::load(x.at(index));
          if constexpr (OP == Reduce::Sum) {
            if constexpr (T::is_float)
              acc += v;
            else
              acc = wrap_add(acc, v);
          } else if constexpr (OP == Reduce::Prod) {
            if constexpr (T::is_float)
              acc *= v;
            else
              acc = wrap_mul(acc, v);
          } else {
            bool better = OP == Reduce::Max ? v > extreme : v < extreme;
            if constexpr (T::is_float)  // NaN propagates: the first NaN sticks
              better = !std::isnan(extreme) && (better || std::isnan(v));
            if (first || better) extreme = v;
            first = false;
          }
        });
        char* dst = y_keep.at(o);
        if constexpr (OP == Reduce::Max || OP == Reduce::Min)
          T::store(dst, extreme);
        else if constexpr (T::is_float)
          T::store(dst, static_cast<C>(acc));
        else
          I64::store(dst, acc);
      });
    });
    return OAR_OK;
  });
}

// ------------------------------------------------------------------------
// argmax, argmin
// ------------------------------------------------------------------------

template <bool kMax>
OarStatus arg_kernel(const OarKernelContext* ctx) {
  Launch l;
  if (OarStatus s = prepare(ctx, kMax ? "argmax" : "argmin", 1, 1, &l)) return s;
  const View x = l.in[0], y = l.out[0];
  op::Attrs attrs(l.ctx);
  int64_t axis = attrs.get_int("axis");
  const bool keepdim = attrs.get_bool("keepdim", false);
  if (!attrs.ok()) return attrs.status();
  if (y.dtype != OAR_DTYPE_I64) return bad_dtype(l.op, "the output", y.dtype, "i64");
  if (axis < 0) axis += x.ndim;
  if (x.ndim > 0 && (axis < 0 || axis >= x.ndim))
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                format("%s: axis %lld is out of range for an input of shape %s", l.op,
                     static_cast<long long>(axis), shape_str(x.ndim, x.shape).c_str()));
  bool mask[OAR_MAX_NDIM] = {};
  if (x.ndim > 0) mask[axis] = true;
  View y_keep;
  if (!reduced_output(l, x, y, mask, keepdim, &y_keep)) return OAR_ERROR_INVALID_ARGUMENT;
  int64_t extent = x.ndim > 0 ? x.shape[axis] : 1;
  if (extent == 0 && y.numel() > 0)
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                format("%s: axis %lld of shape %s is empty", l.op, static_cast<long long>(axis),
                     shape_str(x.ndim, x.shape).c_str()));
  return submit(l, [x, y_keep, axis, extent](std::string&) -> OarStatus {
    visit_all(x.dtype, [&](auto t) {
      using T = Element<decltype(t)>;
      using C = typename T::C;
      for_each_index(y_keep.ndim, y_keep.shape, [&](const int64_t* o, int64_t) {
        int64_t index[OAR_MAX_NDIM];
        for (int32_t d = 0; d < x.ndim; ++d) index[d] = o[d];
        int64_t best_at = 0;
        C best = T::load(x.at(index));
        for (int64_t j = 1; j < extent; ++j) {
          if constexpr (T::is_float)
            if (std::isnan(best)) break;  // the first NaN is the extreme
          index[axis] = j;
          C v = T::load(x.at(index));
          bool better = kMax ? v > best : v < best;
          if constexpr (T::is_float) better = better || std::isnan(v);
          if (better) {
            best = v;
            best_at = j;
          }
        }
        I64::store(y_keep.at(o), best_at);
      });
    });
    return OAR_OK;
  });
}

// ------------------------------------------------------------------------
// matmul
// ------------------------------------------------------------------------

OarStatus matmul_kernel(const OarKernelContext* ctx) {
  Launch l;
  if (OarStatus s = prepare(ctx, "matmul", 2, 1, &l)) return s;
  const View a = l.in[0], b = l.in[1], y = l.out[0];
  op::Attrs attrs(l.ctx);
  const bool ta = attrs.get_bool("transpose_a", false), tb = attrs.get_bool("transpose_b", false);
  if (!attrs.ok()) return attrs.status();
  if (a.dtype != b.dtype || y.dtype != a.dtype)
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                format("matmul: a, b and the output must share a dtype but are %s, %s and %s",
                     dtype_name(a.dtype), dtype_name(b.dtype), dtype_name(y.dtype)));
  if (!visit_numeric(a.dtype, [](auto) {}))
    return bad_dtype("matmul", "a", a.dtype, "numeric dtypes");
  int32_t nd = y.ndim;
  if (nd < 2 || a.ndim != nd || b.ndim != nd)
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                format("matmul: a %s, b %s and the output %s must have one rank >= 2",
                     shape_str(a.ndim, a.shape).c_str(), shape_str(b.ndim, b.shape).c_str(),
                     shape_str(y.ndim, y.shape).c_str()));
  int64_t m = a.shape[nd - (ta ? 1 : 2)], k = a.shape[nd - (ta ? 2 : 1)];
  int64_t kb = b.shape[nd - (tb ? 1 : 2)], n = b.shape[nd - (tb ? 2 : 1)];
  if (k != kb)
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                format("matmul: a has shape %s but b has shape %s (transpose_a=%d, transpose_b=%d); "
                     "the contracted dims %lld and %lld differ",
                     shape_str(a.ndim, a.shape).c_str(), shape_str(b.ndim, b.shape).c_str(), ta, tb,
                     static_cast<long long>(k), static_cast<long long>(kb)));
  bool ok = y.shape[nd - 2] == m && y.shape[nd - 1] == n;
  for (int32_t d = 0; ok && d < nd - 2; ++d)
    ok = (a.shape[d] == y.shape[d] || a.shape[d] == 1) &&
         (b.shape[d] == y.shape[d] || b.shape[d] == 1);
  if (!ok)
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                format("matmul: a %s and b %s do not give the output shape %s",
                     shape_str(a.ndim, a.shape).c_str(), shape_str(b.ndim, b.shape).c_str(),
                     shape_str(y.ndim, y.shape).c_str()));
  return submit(l, [a, b, y, ta, tb, k](std::string&) -> OarStatus {
    int32_t nd = y.ndim;
    visit_numeric(a.dtype, [&](auto t) {
      using T = Element<decltype(t)>;
      using A = typename T::A;
      // y[..., i, j] = sum_p op(a)[..., i, p] * op(b)[..., p, j]
      for_each_index(nd, y.shape, [&](const int64_t* yi, int64_t) {
        int64_t ai[OAR_MAX_NDIM], bi[OAR_MAX_NDIM];
        for (int32_t d = 0; d < nd - 2; ++d) ai[d] = bi[d] = yi[d];
        int64_t i = yi[nd - 2], j = yi[nd - 1];
        A acc = A(0);
        for (int64_t p = 0; p < k; ++p) {
          ai[nd - 2] = ta ? p : i;
          ai[nd - 1] = ta ? i : p;
          bi[nd - 2] = tb ? j : p;
          bi[nd - 1] = tb ? p : j;
          A va = T::load(a.at(ai)), vb = T::load(b.at(bi));
          if constexpr (T::is_float)
            acc += va * vb;
          else
            acc = wrap_add(acc, wrap_mul(va, vb));
        }
        T::store(y.at(yi), static_cast<typename T::C>(acc));
      });
    });
    return OAR_OK;
  });
}

}  // namespace

void register_reduce_kernels(op::KernelTable& t) {
  for (int32_t dt : kAllDtypes) {
    bool is_float = visit_float(dt, [](auto) {});
    int32_t wide = is_float ? dt : OAR_DTYPE_I64;
    t.add("sum", {dt}, {wide}, reduce_kernel<Reduce::Sum>);
    t.add("prod", {dt}, {wide}, reduce_kernel<Reduce::Prod>);
    t.add("max", {dt}, {dt}, reduce_kernel<Reduce::Max>);
    t.add("min", {dt}, {dt}, reduce_kernel<Reduce::Min>);
    t.add("argmax", {dt}, {OAR_DTYPE_I64}, arg_kernel<true>);
    t.add("argmin", {dt}, {OAR_DTYPE_I64}, arg_kernel<false>);
  }
  for (int32_t dt : kNumericDtypes) t.add("matmul", {dt, dt}, {dt}, matmul_kernel);
}

}  // namespace oar_mock
