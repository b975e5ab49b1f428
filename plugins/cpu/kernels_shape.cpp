// Data-movement kernels: transpose, broadcast_to, slice, concat, pad (all a
// strided copy from a re-described input view, no intermediate copies),
// gather and scatter_add along one axis.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <type_traits>
#include <vector>

#include "cpu_common.h"

namespace oar_cpu {
namespace {

OarStatus arity(const OarKernelContext* ctx, int inputs) {
  if ((inputs >= 0 && ctx->num_inputs != inputs) || ctx->num_inputs < 1 || ctx->num_outputs != 1) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "unexpected %d inputs and %d outputs",
                ctx->num_inputs, ctx->num_outputs);
  }
  if (ctx->inputs[0].dtype != ctx->outputs[0].dtype) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "input dtype %s differs from output dtype %s",
                dtype_name(ctx->inputs[0].dtype), dtype_name(ctx->outputs[0].dtype));
  }
  return OAR_OK;
}

int64_t elem_size(const OarTensorView& v) { return static_cast<int64_t>(oar_dtype_size(v.dtype)); }

OarStatus copy_or_fail(const OarKernelContext* ctx, const OarTensorView& y,
                       const OarTensorView& v) {
  return strided_copy(ctx, y, v) ? OAR_OK : OAR_ERROR_INVALID_ARGUMENT;
}

OarStatus transpose_kernel(const OarKernelContext* ctx) {
  if (OarStatus s = arity(ctx, 1)) return s;
  const OarTensorView& x = ctx->inputs[0];
  const OarTensorView& y = ctx->outputs[0];
  Attrs attrs(ctx);
  int64_t n = 0;
  const std::vector<int64_t> perm_list = attrs.get_ints("perm");
  const int64_t* perm = perm_list.data();
  n = static_cast<int64_t>(perm_list.size());
  if (!attrs.ok()) return attrs.status();
  bool seen[OAR_MAX_NDIM] = {};
  if (n != x.ndim || y.ndim != x.ndim) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "perm has %lld entries for rank %d",
                static_cast<long long>(n), x.ndim);
  }
  OarTensorView v = x;
  for (int i = 0; i < x.ndim; ++i) {
    if (perm[i] < 0 || perm[i] >= x.ndim || seen[perm[i]]) {
      return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "perm is not a permutation of 0..%d",
                  x.ndim - 1);
    }
    seen[perm[i]] = true;
    v.shape[i] = x.shape[perm[i]];
    v.strides[i] = x.strides[perm[i]];
  }
  return copy_or_fail(ctx, y, v);
}

OarStatus broadcast_to_kernel(const OarKernelContext* ctx) {
  if (OarStatus s = arity(ctx, 1)) return s;
  return copy_or_fail(ctx, ctx->outputs[0], ctx->inputs[0]);
}

// broadcast_to_like: broadcast_to with the shape of its second input (not read).
OarStatus broadcast_to_like_kernel(const OarKernelContext* ctx) {
  if (OarStatus s = arity(ctx, 2)) return s;
  return copy_or_fail(ctx, ctx->outputs[0], ctx->inputs[0]);
}

// shape and numel: the input's dims or element count as i64; its values are not read.
OarStatus shape_value_kernel(const OarKernelContext* ctx, bool count) {
  if (ctx->num_inputs != 1 || ctx->num_outputs != 1) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "unexpected %d inputs and %d outputs", ctx->num_inputs,
                ctx->num_outputs);
  }
  const OarTensorView& x = ctx->inputs[0];
  const OarTensorView& y = ctx->outputs[0];
  const int64_t want = count ? 1 : x.ndim;
  if (y.dtype != OAR_DTYPE_I64 || oar_view_numel(&y) != want || y.ndim != (count ? 0 : 1)) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "the output must be i64 of %s %lld but is %s of rank %d",
                count ? "rank 0, count" : "rank 1, size", static_cast<long long>(want), dtype_name(y.dtype), y.ndim);
  }
  int64_t* out = static_cast<int64_t*>(oar_view_ptr(&y));
  if (count) {
    out[0] = oar_view_numel(&x);
  } else {
    for (int d = 0; d < x.ndim; ++d) out[d] = x.shape[d];
  }
  return OAR_OK;
}
OarStatus shape_kernel(const OarKernelContext* ctx) { return shape_value_kernel(ctx, false); }
OarStatus numel_kernel(const OarKernelContext* ctx) { return shape_value_kernel(ctx, true); }

OarStatus slice_kernel(const OarKernelContext* ctx) {
  if (OarStatus s = arity(ctx, 1)) return s;
  const OarTensorView& x = ctx->inputs[0];
  const OarTensorView& y = ctx->outputs[0];
  Attrs attrs(ctx);
  int64_t ns = 0, nt = 0;
  const std::vector<int64_t> starts_list = attrs.get_ints("starts");
  const int64_t* starts = starts_list.data();
  ns = static_cast<int64_t>(starts_list.size());
  const std::vector<int64_t> steps_list = attrs.get_ints("steps");
  const int64_t* steps = steps_list.data();
  nt = static_cast<int64_t>(steps_list.size());
  if (!attrs.ok()) return attrs.status();
  if (ns != x.ndim || nt != x.ndim || y.ndim != x.ndim) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "starts/steps have %lld/%lld entries for rank %d",
                static_cast<long long>(ns), static_cast<long long>(nt), x.ndim);
  }
  OarTensorView v = x;
  for (int d = 0; d < x.ndim; ++d) {
    v.shape[d] = y.shape[d];
    if (y.shape[d] == 0) continue;
    const int64_t last = starts[d] + (y.shape[d] - 1) * steps[d];
    if (steps[d] == 0 || starts[d] < 0 || starts[d] >= x.shape[d] || last < 0 ||
        last >= x.shape[d]) {
      return fail(ctx, OAR_ERROR_INVALID_ARGUMENT,
                  "dim %d: start %lld, step %lld and size %lld leave the input's size %lld", d,
                  static_cast<long long>(starts[d]), static_cast<long long>(steps[d]),
                  static_cast<long long>(y.shape[d]), static_cast<long long>(x.shape[d]));
    }
    v.byte_offset += starts[d] * x.strides[d] * elem_size(x);
    v.strides[d] = x.strides[d] * steps[d];
  }
  if (oar_view_numel(&y) == 0) return OAR_OK;
  return copy_or_fail(ctx, y, v);
}

OarStatus concat_kernel(const OarKernelContext* ctx) {
  if (OarStatus s = arity(ctx, -1)) return s;
  const OarTensorView& y = ctx->outputs[0];
  Attrs attrs(ctx);
  const int64_t axis = attrs.get_int("axis");
  if (!attrs.ok()) return attrs.status();
  if (axis < 0 || axis >= y.ndim) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "axis %lld is out of range for rank %d",
                static_cast<long long>(axis), y.ndim);
  }
  int64_t offset = 0;
  for (int i = 0; i < ctx->num_inputs; ++i) {
    const OarTensorView& x = ctx->inputs[i];
    bool fits = x.ndim == y.ndim && x.dtype == y.dtype;
    for (int d = 0; fits && d < y.ndim; ++d) fits = d == axis || x.shape[d] == y.shape[d];
    if (!fits || offset + x.shape[axis] > y.shape[axis]) {
      return fail(ctx, OAR_ERROR_INVALID_ARGUMENT,
                  "input %d does not fit the output along axis %lld", i,
                  static_cast<long long>(axis));
    }
    OarTensorView part = y;  // the output's window for input i
    part.shape[axis] = x.shape[axis];
    part.byte_offset += offset * y.strides[axis] * elem_size(y);
    offset += x.shape[axis];
    if (oar_view_numel(&x) == 0) continue;
    if (OarStatus s = copy_or_fail(ctx, part, x)) return s;
  }
  return OAR_OK;
}

/// y <- value everywhere (any strides), by broadcasting a one-element view.
template <class T>
bool fill_view(const OarKernelContext* ctx, const OarTensorView& y, T v) {
  OarTensorView scalar = y;
  scalar.data = &v;
  scalar.byte_offset = 0;
  for (int d = 0; d < y.ndim; ++d) {
    scalar.shape[d] = 1;
    scalar.strides[d] = 0;
  }
  return strided_copy(ctx, y, scalar);
}

OarStatus pad_kernel(const OarKernelContext* ctx) {
  if (OarStatus s = arity(ctx, 1)) return s;
  const OarTensorView& x = ctx->inputs[0];
  const OarTensorView& y = ctx->outputs[0];
  Attrs attrs(ctx);
  int64_t n = 0;
  const std::vector<int64_t> pads_list = attrs.get_ints("pads");
  const int64_t* pads = pads_list.data();
  n = static_cast<int64_t>(pads_list.size());
  if (!attrs.ok()) return attrs.status();
  if (n != 2 * x.ndim || y.ndim != x.ndim) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "pads has %lld entries for rank %d",
                static_cast<long long>(n), x.ndim);
  }
  OarTensorView inner = y;  // the window of y that receives x
  for (int d = 0; d < x.ndim; ++d) {
    if (pads[2 * d] < 0 || pads[2 * d + 1] < 0 ||
        x.shape[d] + pads[2 * d] + pads[2 * d + 1] != y.shape[d]) {
      return fail(ctx, OAR_ERROR_INVALID_ARGUMENT,
                  "dim %d: %lld + pads (%lld, %lld) != output size %lld", d,
                  static_cast<long long>(x.shape[d]), static_cast<long long>(pads[2 * d]),
                  static_cast<long long>(pads[2 * d + 1]), static_cast<long long>(y.shape[d]));
    }
    inner.shape[d] = x.shape[d];
    inner.byte_offset += pads[2 * d] * y.strides[d] * elem_size(y);
  }
  if (oar_view_numel(&y) == 0) return OAR_OK;
  bool ok = false;
  const double zero = 0.0;
  visit_by_size(y.dtype, [&](auto tag) {  // complex too (element_into's value_imag)
    using T = decltype(tag);
    T value;
    ok = attrs.element_into("value", y.dtype, &zero, &value) && fill_view<T>(ctx, y, value);
  });
  if (!attrs.ok()) return attrs.status();
  if (!ok)
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "dtype %s is not supported", dtype_name(y.dtype));
  if (oar_view_numel(&x) == 0) return OAR_OK;
  return copy_or_fail(ctx, inner, x);
}

// ---------------------------------------------------- gather / scatter ---

/// x viewed as [pre, n, post] around `axis`.
struct AxisSplit {
  int64_t pre = 1, n = 1, post = 1;
};

AxisSplit split_at(const OarTensorView& v, int64_t axis) {
  AxisSplit s;
  for (int d = 0; d < v.ndim; ++d) {
    if (d < axis)
      s.pre *= v.shape[d];
    else if (d == axis)
      s.n = v.shape[d];
    else
      s.post *= v.shape[d];
  }
  return s;
}

/// Reads the 1-D index into int64 and checks every entry lies in [0, n).
OarStatus read_index(const OarKernelContext* ctx, const OarTensorView& index, int64_t n,
                     std::vector<int64_t>* out) {
  if (index.ndim != 1 || (index.dtype != OAR_DTYPE_I32 && index.dtype != OAR_DTYPE_I64)) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT,
                "index must be a 1-D i32 or i64 tensor (got rank %d, %s)", index.ndim,
                dtype_name(index.dtype));
  }
  out->resize(static_cast<size_t>(index.shape[0]));
  const void* p = oar_view_ptr(&index);
  for (int64_t i = 0; i < index.shape[0]; ++i) {
    const int64_t v = index.dtype == OAR_DTYPE_I32 ? static_cast<const int32_t*>(p)[i]
                                                   : static_cast<const int64_t*>(p)[i];
    if (v < 0 || v >= n) {
      return fail(ctx, OAR_ERROR_INVALID_ARGUMENT,
                  "index[%lld] = %lld is out of range for an axis of size %lld",
                  static_cast<long long>(i), static_cast<long long>(v), static_cast<long long>(n));
    }
    (*out)[static_cast<size_t>(i)] = v;
  }
  return OAR_OK;
}

// check_index (Note [Index values] in core/src/ops/op_util.h): copies the
// index through; the first value outside [0, size) other than ignore_index
// is an error in the words of the op that asked for the check.
OarStatus check_index_kernel(const OarKernelContext* ctx) {
  if (OarStatus s = arity(ctx, 1)) return s;
  const OarTensorView& x = ctx->inputs[0];
  const OarTensorView& y = ctx->outputs[0];
  Attrs attrs(ctx);
  const int64_t size = attrs.get_int("size");
  const int64_t ignore = attrs.get_int("ignore_index", 0);
  const bool has_ignore = attrs.get_bool("has_ignore", false);
  if (!attrs.ok()) return attrs.status();
  const char* op = "check_index";
  const char* what = "index";
  g_host->attr_string(ctx->attrs, "op", &op);
  g_host->attr_string(ctx->attrs, "what", &what);
  const int64_t n = oar_view_numel(&x);
  const void* p = oar_view_ptr(&x);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = x.dtype == OAR_DTYPE_I32 ? static_cast<const int32_t*>(p)[i] : static_cast<const int64_t*>(p)[i];
    if ((v >= 0 && v < size) || (has_ignore && v == ignore)) continue;
    std::string shape = "[";
    for (int32_t d = 0; d < x.ndim; ++d) shape += (d ? ", " : "") + std::to_string(x.shape[d]);
    shape += "]";
    char message[640];
    std::snprintf(message, sizeof message,
                  "%s: %s %lld at flat position %lld of %s tensor %s is out of range; expected 0 <= %s < %lld", op,
                  what, static_cast<long long>(v), static_cast<long long>(i), what, shape.c_str(), what,
                  static_cast<long long>(size));
    g_host->set_error(g_host->host, OAR_ERROR_INVALID_ARGUMENT, message);
    return OAR_ERROR_INVALID_ARGUMENT;
  }
  if (n > 0) std::memcpy(oar_view_ptr(&y), p, static_cast<size_t>(n) * oar_dtype_size(x.dtype));
  return OAR_OK;
}

OarStatus gather_kernel(const OarKernelContext* ctx) {
  if (OarStatus s = arity(ctx, 2)) return s;
  const OarTensorView& x = ctx->inputs[0];
  const OarTensorView& y = ctx->outputs[0];
  Attrs attrs(ctx);
  const int64_t axis = attrs.get_int("axis", 0);
  if (!attrs.ok()) return attrs.status();
  if (axis < 0 || axis >= x.ndim || y.ndim != x.ndim) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "axis %lld is out of range for rank %d",
                static_cast<long long>(axis), x.ndim);
  }
  const AxisSplit xs = split_at(x, axis);
  std::vector<int64_t> index;
  if (OarStatus s = read_index(ctx, ctx->inputs[1], xs.n, &index)) return s;
  const int64_t count = static_cast<int64_t>(index.size());
  if (y.shape[axis] != count || oar_view_numel(&y) != xs.pre * count * xs.post) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "output size %lld along axis %lld, expected %lld",
                static_cast<long long>(y.shape[axis]), static_cast<long long>(axis),
                static_cast<long long>(count));
  }
  visit_by_size(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* src = static_cast<const T*>(oar_view_ptr(&x));
    T* dst = static_cast<T*>(oar_view_ptr(&y));
    const int64_t rows = xs.pre * count;
    const int64_t post = xs.post;
#pragma omp parallel for num_threads(current_threads()) \
    schedule(static) if (rows * post >= kParallelMin)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t p = r / count;
      const T* from = src + (p * xs.n + index[static_cast<size_t>(r % count)]) * post;
      T* to_row = dst + r * post;
      for (int64_t j = 0; j < post; ++j) to_row[j] = from[j];
    }
  });
  return OAR_OK;
}

template <class T>
T add_values(T a, T b) {
  if constexpr (kIsHalf<T> || std::is_floating_point_v<T>) {
    return cast_to<T>(Num<T>::load(a) + Num<T>::load(b));
  } else {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  }
}

OarStatus scatter_add_kernel(const OarKernelContext* ctx) {
  if (OarStatus s = arity(ctx, 3)) return s;
  const OarTensorView& x = ctx->inputs[0];
  const OarTensorView& upd = ctx->inputs[2];
  const OarTensorView& y = ctx->outputs[0];
  Attrs attrs(ctx);
  const int64_t axis = attrs.get_int("axis", 0);
  if (!attrs.ok()) return attrs.status();
  if (axis < 0 || axis >= x.ndim || upd.ndim != x.ndim || upd.dtype != x.dtype) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT,
                "axis %lld, updates rank %d and dtype %s do not fit x",
                static_cast<long long>(axis), upd.ndim, dtype_name(upd.dtype));
  }
  const AxisSplit xs = split_at(x, axis);
  std::vector<int64_t> index;
  if (OarStatus s = read_index(ctx, ctx->inputs[1], xs.n, &index)) return s;
  const int64_t count = static_cast<int64_t>(index.size());
  if (oar_view_numel(&upd) != xs.pre * count * xs.post || upd.shape[axis] != count) {
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "updates size %lld along axis %lld, expected %lld",
                static_cast<long long>(upd.shape[axis]), static_cast<long long>(axis),
                static_cast<long long>(count));
  }
  if (oar_view_ptr(&y) != oar_view_ptr(&x)) {
    if (OarStatus s = copy_or_fail(ctx, y, x)) return s;
  }
  // A complex element adds as its (real, imaginary) pair of reals: `lanes`
  // reals per element.
  auto run = [&](auto tag, int64_t lanes) {
    using T = decltype(tag);
    const T* u = static_cast<const T*>(oar_view_ptr(&upd));
    T* dst = static_cast<T*>(oar_view_ptr(&y));
    const int64_t post = xs.post * lanes;
    // Threads own disjoint ranges of destination rows (and of `pre`), and
    // every destination row takes its updates in index order: deterministic.
    const int threads = current_threads();
    const int64_t ranges = xs.pre >= threads ? 1 : std::min<int64_t>(threads, xs.n);
    const int64_t units = xs.pre * ranges;
    const bool parallel = xs.pre * count * post >= kParallelMin;
#pragma omp parallel for num_threads(current_threads()) schedule(static) if (parallel)
    for (int64_t unit = 0; unit < units; ++unit) {
      const int64_t p = unit / ranges;
      const int64_t r = unit % ranges;
      const int64_t n0 = xs.n * r / ranges, n1 = xs.n * (r + 1) / ranges;
      for (int64_t i = 0; i < count; ++i) {
        const int64_t k = index[static_cast<size_t>(i)];
        if (k < n0 || k >= n1) continue;
        T* row = dst + (p * xs.n + k) * post;
        const T* from = u + (p * count + i) * post;
        for (int64_t j = 0; j < post; ++j) row[j] = add_values(row[j], from[j]);
      }
    }
  };
  bool ok = visit_numeric(x.dtype, [&](auto tag) { run(tag, 1); });
  if (!ok && x.dtype == OAR_DTYPE_C64) ok = (run(float{}, 2), true);
  if (!ok && x.dtype == OAR_DTYPE_C128) ok = (run(double{}, 2), true);
  if (!ok)
    return fail(ctx, OAR_ERROR_INVALID_ARGUMENT, "dtype %s is not supported", dtype_name(x.dtype));
  return OAR_OK;
}

}  // namespace

void register_shape_kernels(op::KernelTable& r) {
  for (int32_t index : {OAR_DTYPE_I32, OAR_DTYPE_I64}) r.add("check_index", {index}, {index}, &guarded<&check_index_kernel>);
  // Data movement moves bytes (visit_by_size): every dtype, complex included.
  std::vector<int32_t> every(std::begin(kAllDtypes), std::end(kAllDtypes));
  every.insert(every.end(), std::begin(kComplexDtypes), std::end(kComplexDtypes));
  for (int32_t dt : every) {
    r.add("transpose", {dt}, {dt}, &guarded<&transpose_kernel>, OAR_KERNEL_STRIDED);
    r.add("broadcast_to", {dt}, {dt}, &guarded<&broadcast_to_kernel>, OAR_KERNEL_STRIDED);
    r.add_any_inputs("broadcast_to_like", {dt}, &guarded<&broadcast_to_like_kernel>, OAR_KERNEL_STRIDED);
    r.add("slice", {dt}, {dt}, &guarded<&slice_kernel>, OAR_KERNEL_STRIDED);
    r.add("pad", {dt}, {dt}, &guarded<&pad_kernel>, OAR_KERNEL_STRIDED);
    for (int32_t index : {OAR_DTYPE_I32, OAR_DTYPE_I64}) {
      r.add("gather", {dt, index}, {dt}, &guarded<&gather_kernel>);
      if (dt != OAR_DTYPE_BOOL) {
        r.add("scatter_add", {dt, index, dt}, {dt}, &guarded<&scatter_add_kernel>, OAR_KERNEL_INPLACE);
      }
    }
  }
  // concat is variadic: its input list is left open (null array = any
  // dtypes); the output dtype selects the registration and the kernel checks
  // that every input has it.
  for (int32_t dt : every)
    r.add_any_inputs("concat", {dt}, &guarded<&concat_kernel>, OAR_KERNEL_STRIDED);
  r.add_any_inputs("shape", {OAR_DTYPE_I64}, &guarded<&shape_kernel>);
  r.add_any_inputs("numel", {OAR_DTYPE_I64}, &guarded<&numel_kernel>);
}

}  // namespace oar_cpu
