// Data-movement kernels of the mock: transpose, broadcast_to, slice, concat,
// pad, gather, scatter_add. All but scatter_add move whole elements as bytes,
// so one loop serves every dtype.
#include "mock_internal.h"
#include <iterator>
#include <vector>

namespace oar_mock {
namespace {

OarStatus same_dtype(const Launch& l, const View& x, const View& y) {
  if (x.dtype == y.dtype) return OAR_OK;
  return fail(OAR_ERROR_INVALID_ARGUMENT,
              format("%s: the input has dtype %s but the output has dtype %s", l.op,
                   dtype_name(x.dtype), dtype_name(y.dtype)));
}

// Reads an int array attribute that must hold one entry per dim.
bool per_dim_ints(const Launch& l, const char* name, int64_t count, std::vector<int64_t>* values) {
  op::Attrs attrs(l.ctx);
  *values = attrs.get_ints(name);
  if (!attrs.ok()) return false;
  if (static_cast<int64_t>(values->size()) == count) return true;
  fail(OAR_ERROR_INVALID_ARGUMENT, format("%s: attribute '%s' has %zu entries but %lld are needed",
                                        l.op, name, values->size(), static_cast<long long>(count)));
  return false;
}

OarStatus transpose_kernel(const OarKernelContext* ctx) {
  Launch l;
  if (OarStatus s = prepare(ctx, "transpose", 1, 1, &l)) return s;
  const View x = l.in[0], y = l.out[0];
  if (OarStatus s = same_dtype(l, x, y)) return s;
  std::vector<int64_t> perm;
  if (!per_dim_ints(l, "perm", x.ndim, &perm)) return OAR_ERROR_INVALID_ARGUMENT;
  bool seen[OAR_MAX_NDIM] = {};
  bool ok = y.ndim == x.ndim;
  for (int32_t d = 0; ok && d < x.ndim; ++d) {
    ok = perm[d] >= 0 && perm[d] < x.ndim && !seen[perm[d]] && y.shape[d] == x.shape[perm[d]];
    if (ok) seen[perm[d]] = true;
  }
  if (!ok)
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                format("transpose: perm %s is not a permutation taking shape %s to the output "
                     "shape %s",
                     shape_str(static_cast<int32_t>(perm.size()), perm.data()).c_str(),
                     shape_str(x.ndim, x.shape).c_str(), shape_str(y.ndim, y.shape).c_str()));
  return submit(l, [x, y, perm](std::string&) -> OarStatus {
    for_each_index(y.ndim, y.shape, [&](const int64_t* yi, int64_t) {
      int64_t xi[OAR_MAX_NDIM];
      for (int32_t d = 0; d < y.ndim; ++d) xi[perm[d]] = yi[d];  // y.shape[d] = x.shape[perm[d]]
      std::memcpy(y.at(yi), x.at(xi), y.elsize());
    });
    return OAR_OK;
  });
}

// broadcast_to, and broadcast_to_like (the shape of its second input, which
// is not read): x broadcast to the output's shape.
OarStatus broadcast_kernel(const OarKernelContext* ctx, const char* op, int32_t inputs) {
  Launch l;
  if (OarStatus s = prepare(ctx, op, inputs, 1, &l)) return s;
  const View x = l.in[0], y = l.out[0];
  if (OarStatus s = same_dtype(l, x, y)) return s;
  if (!check_broadcastable(l.op, "x", x, y)) return OAR_ERROR_INVALID_ARGUMENT;
  return submit(l, [x, y](std::string&) -> OarStatus {
    for_each_index(y.ndim, y.shape,
                   [&](const int64_t* i, int64_t) { std::memcpy(y.at(i), x.at(i), y.elsize()); });
    return OAR_OK;
  });
}

OarStatus broadcast_to_kernel(const OarKernelContext* ctx) { return broadcast_kernel(ctx, "broadcast_to", 1); }
OarStatus broadcast_to_like_kernel(const OarKernelContext* ctx) {
  return broadcast_kernel(ctx, "broadcast_to_like", 2);
}

// shape and numel: the input's dims or element count as i64; its values are not read.
OarStatus shape_value_kernel(const OarKernelContext* ctx, const char* op, bool count) {
  Launch l;
  if (OarStatus s = prepare(ctx, op, 1, 1, &l)) return s;
  const View x = l.in[0], y = l.out[0];
  const int64_t want = count ? 1 : x.ndim;
  if (y.dtype != OAR_DTYPE_I64 || y.numel() != want || y.ndim != (count ? 0 : 1))
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                format("%s: the output must be i64 of %s %lld but has shape %s", op,
                     count ? "rank 0, count" : "rank 1, size", static_cast<long long>(want),
                     shape_str(y.ndim, y.shape).c_str()));
  std::vector<int64_t> values = count ? std::vector<int64_t>{x.numel()}
                                      : std::vector<int64_t>(x.shape, x.shape + x.ndim);
  return submit(l, [y, values](std::string&) -> OarStatus {
    for (size_t i = 0; i < values.size(); ++i) {
      int64_t index = static_cast<int64_t>(i);
      std::memcpy(y.at(&index), &values[i], sizeof(int64_t));
    }
    return OAR_OK;
  });
}
OarStatus shape_kernel(const OarKernelContext* ctx) { return shape_value_kernel(ctx, "shape", false); }
OarStatus numel_kernel(const OarKernelContext* ctx) { return shape_value_kernel(ctx, "numel", true); }

OarStatus slice_kernel(const OarKernelContext* ctx) {
  Launch l;
  if (OarStatus s = prepare(ctx, "slice", 1, 1, &l)) return s;
  const View x = l.in[0], y = l.out[0];
  if (OarStatus s = same_dtype(l, x, y)) return s;
  std::vector<int64_t> starts, steps;
  if (!per_dim_ints(l, "starts", x.ndim, &starts) || !per_dim_ints(l, "steps", x.ndim, &steps))
    return OAR_ERROR_INVALID_ARGUMENT;
  if (y.ndim != x.ndim)
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                format("slice: the input %s and the output %s differ in rank",
                     shape_str(x.ndim, x.shape).c_str(), shape_str(y.ndim, y.shape).c_str()));
  for (int32_t d = 0; d < x.ndim; ++d) {
    int64_t first = starts[d], last = starts[d] + (y.shape[d] - 1) * steps[d];
    if (steps[d] == 0 ||
        (y.shape[d] > 0 && (first < 0 || first >= x.shape[d] || last < 0 || last >= x.shape[d])))
      return fail(OAR_ERROR_INVALID_ARGUMENT,
                  format("slice: dim %d takes %lld elements from %lld in steps of %lld, outside "
                       "the input's extent %lld",
                       d, static_cast<long long>(y.shape[d]), static_cast<long long>(first),
                       static_cast<long long>(steps[d]), static_cast<long long>(x.shape[d])));
  }
  return submit(l, [x, y, starts, steps](std::string&) -> OarStatus {
    for_each_index(y.ndim, y.shape, [&](const int64_t* yi, int64_t) {
      int64_t xi[OAR_MAX_NDIM];
      for (int32_t d = 0; d < y.ndim; ++d) xi[d] = starts[d] + yi[d] * steps[d];
      std::memcpy(y.at(yi), x.at(xi), y.elsize());
    });
    return OAR_OK;
  });
}

OarStatus concat_kernel(const OarKernelContext* ctx) {
  Launch l;
  if (OarStatus s = prepare(ctx, "concat", -1, 1, &l)) return s;
  const View y = l.out[0];
  op::Attrs attrs(l.ctx);
  int64_t axis = attrs.get_int("axis");
  if (!attrs.ok()) return attrs.status();
  if (axis < 0) axis += y.ndim;
  if (l.in.empty() || axis < 0 || axis >= y.ndim)
    return fail(
        OAR_ERROR_INVALID_ARGUMENT,
        format("concat: needs at least one input and an axis inside the output shape %s "
             "(got %zu inputs, axis %lld)",
             shape_str(y.ndim, y.shape).c_str(), l.in.size(), static_cast<long long>(axis)));
  int64_t total = 0;
  for (size_t i = 0; i < l.in.size(); ++i) {
    const View& x = l.in[i];
    if (OarStatus s = same_dtype(l, x, y)) return s;
    bool ok = x.ndim == y.ndim;
    for (int32_t d = 0; ok && d < y.ndim; ++d) ok = d == axis || x.shape[d] == y.shape[d];
    if (!ok)
      return fail(OAR_ERROR_INVALID_ARGUMENT,
                  format("concat: input %zu has shape %s, which differs from the output %s outside "
                       "axis %lld",
                       i, shape_str(x.ndim, x.shape).c_str(), shape_str(y.ndim, y.shape).c_str(),
                       static_cast<long long>(axis)));
    total += x.shape[axis];
  }
  if (total != y.shape[axis])
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                format("concat: the inputs sum to %lld along axis %lld but the output has %lld",
                     static_cast<long long>(total), static_cast<long long>(axis),
                     static_cast<long long>(y.shape[axis])));
  std::vector<View> inputs = l.in;
  return submit(l, [inputs, y, axis](std::string&) -> OarStatus {
    int64_t offset = 0;
    for (const View& x : inputs) {
      for_each_index(x.ndim, x.shape, [&](const int64_t* xi, int64_t) {
        int64_t yi[OAR_MAX_NDIM];
        for (int32_t d = 0; d < y.ndim; ++d) yi[d] = xi[d];
        yi[axis] += offset;
        std::memcpy(y.at(yi), x.at(xi), y.elsize());
      });
      offset += x.shape[axis];
    }
    return OAR_OK;
  });
}

OarStatus pad_kernel(const OarKernelContext* ctx) {
  Launch l;
  if (OarStatus s = prepare(ctx, "pad", 1, 1, &l)) return s;
  const View x = l.in[0], y = l.out[0];
  if (OarStatus s = same_dtype(l, x, y)) return s;
  std::vector<int64_t> pads;
  std::vector<unsigned char> value(y.elsize());
  const double zero = 0.0;
  if (!per_dim_ints(l, "pads", 2 * x.ndim, &pads) ||
      !op::Attrs(l.ctx).element_into("value", y.dtype, &zero, value.data()))
    return OAR_ERROR_INVALID_ARGUMENT;
  bool ok = y.ndim == x.ndim;
  for (int32_t d = 0; ok && d < x.ndim; ++d)
    ok = pads[2 * d] >= 0 && pads[2 * d + 1] >= 0 &&
         y.shape[d] == x.shape[d] + pads[2 * d] + pads[2 * d + 1];
  if (!ok)
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                format("pad: pads %s (before, after per dim, >= 0) do not take shape %s to the "
                     "output shape %s",
                     shape_str(static_cast<int32_t>(pads.size()), pads.data()).c_str(),
                     shape_str(x.ndim, x.shape).c_str(), shape_str(y.ndim, y.shape).c_str()));
  return submit(l, [x, y, pads, value](std::string&) -> OarStatus {
    for_each_index(y.ndim, y.shape, [&](const int64_t* yi, int64_t) {
      int64_t xi[OAR_MAX_NDIM];
      bool inside = true;
      for (int32_t d = 0; d < y.ndim; ++d) {
        xi[d] = yi[d] - pads[2 * d];
        inside = inside && xi[d] >= 0 && xi[d] < x.shape[d];
      }
      const void* src = inside ? static_cast<const void*>(x.at(xi)) : value.data();
      std::memcpy(y.at(yi), src, y.elsize());
    });
    return OAR_OK;
  });
}

// ------------------------------------------------------------------------
// gather, scatter_add
// ------------------------------------------------------------------------

int64_t load_index(const View& index, int64_t i) {
  const char* p = index.base + i * index.strides[0] * static_cast<int64_t>(index.elsize());
  return index.dtype == OAR_DTYPE_I32 ? I32::load(p) : I64::load(p);
}

// Runs on the stream: every index must lie in [0, extent).
OarStatus check_indices(const char* op, const View& index, int64_t extent, int64_t axis,
                        std::string& error) {
  for (int64_t i = 0; i < index.shape[0]; ++i) {
    int64_t v = load_index(index, i);
    if (v < 0 || v >= extent) {
      error = format("%s: index[%lld] = %lld is out of range for axis %lld of size %lld", op,
                   static_cast<long long>(i), static_cast<long long>(v),
                   static_cast<long long>(axis), static_cast<long long>(extent));
      return OAR_ERROR_INVALID_ARGUMENT;
    }
  }
  return OAR_OK;
}

// Checks index (1-D i32/i64), axis, and that `indexed` is `x` with dim `axis`
// replaced by the index length.
bool check_indexed(const Launch& l, const View& x, const View& index, const char* indexed_name,
                   const View& indexed, int64_t* axis) {
  op::Attrs attrs(l.ctx);
  *axis = attrs.get_int("axis");
  if (!attrs.ok()) return false;
  if (*axis < 0) *axis += x.ndim;
  if (index.dtype != OAR_DTYPE_I32 && index.dtype != OAR_DTYPE_I64) {
    bad_dtype(l.op, "index", index.dtype, "i32 and i64");
    return false;
  }
  bool ok = index.ndim == 1 && *axis >= 0 && *axis < x.ndim && indexed.ndim == x.ndim;
  for (int32_t d = 0; ok && d < x.ndim; ++d)
    ok = indexed.shape[d] == (d == *axis ? index.shape[0] : x.shape[d]);
  if (ok) return true;
  fail(OAR_ERROR_INVALID_ARGUMENT,
       format("%s: x %s, index %s (must be 1-D) and %s %s do not agree along axis %lld", l.op,
            shape_str(x.ndim, x.shape).c_str(), shape_str(index.ndim, index.shape).c_str(),
            indexed_name, shape_str(indexed.ndim, indexed.shape).c_str(),
            static_cast<long long>(*axis)));
  return false;
}

// check_index (Note [Index values] in core/src/ops/op_util.h): the index
// passes through; the first value outside [0, size) other than ignore_index
// is an error in the words of the op that asked for the check.
OarStatus check_index_kernel(const OarKernelContext* ctx) {
  Launch l;
  if (OarStatus s = prepare(ctx, "check_index", 1, 1, &l)) return s;
  const View x = l.in[0], y = l.out[0];
  if (OarStatus s = same_dtype(l, x, y)) return s;
  op::Attrs attrs(l.ctx);
  const int64_t size = attrs.get_int("size"), ignore = attrs.get_int("ignore_index");
  const bool has_ignore = attrs.get_bool("has_ignore", false);
  if (!attrs.ok()) return attrs.status();
  std::string op_name = attrs.get_string("op", "check_index"), what_name = attrs.get_string("what", "index");
  return submit(l, [x, y, size, ignore, has_ignore, op_name, what_name](std::string& error) -> OarStatus {
    OarStatus status = OAR_OK;
    for_each_index(x.ndim, x.shape, [&](const int64_t* xi, int64_t flat) {
      const char* p = x.at(xi);
      const int64_t v = x.dtype == OAR_DTYPE_I32 ? I32::load(p) : I64::load(p);
      if (status == OAR_OK && !((v >= 0 && v < size) || (has_ignore && v == ignore))) {
        error = format("%s: %s %lld at flat position %lld of %s tensor %s is out of range; expected 0 <= %s < %lld",
                     op_name.c_str(), what_name.c_str(), static_cast<long long>(v), static_cast<long long>(flat),
                     what_name.c_str(), shape_str(x.ndim, x.shape).c_str(), what_name.c_str(),
                     static_cast<long long>(size));
        status = OAR_ERROR_INVALID_ARGUMENT;
      }
      std::memcpy(y.at(xi), p, y.elsize());
    });
    return status;
  });
}

OarStatus gather_kernel(const OarKernelContext* ctx) {
  Launch l;
  if (OarStatus s = prepare(ctx, "gather", 2, 1, &l)) return s;
  const View x = l.in[0], index = l.in[1], y = l.out[0];
  if (OarStatus s = same_dtype(l, x, y)) return s;
  int64_t axis = 0;
  if (!check_indexed(l, x, index, "the output", y, &axis)) return OAR_ERROR_INVALID_ARGUMENT;
  return submit(l, [x, index, y, axis](std::string& error) -> OarStatus {
    if (OarStatus s = check_indices("gather", index, x.shape[axis], axis, error)) return s;
    for_each_index(y.ndim, y.shape, [&](const int64_t* yi, int64_t) {
      int64_t xi[OAR_MAX_NDIM];
      for (int32_t d = 0; d < y.ndim; ++d) xi[d] = yi[d];
      xi[axis] = load_index(index, yi[axis]);
      std::memcpy(y.at(yi), x.at(xi), y.elsize());
    });
    return OAR_OK;
  });
}

OarStatus scatter_add_kernel(const OarKernelContext* ctx) {
  Launch l;
  if (OarStatus s = prepare(ctx, "scatter_add", 3, 1, &l)) return s;
  const View x = l.in[0], index = l.in[1], updates = l.in[2], y = l.out[0];
  if (OarStatus s = same_dtype(l, x, y)) return s;
  if (OarStatus s = same_dtype(l, updates, y)) return s;
  const bool complex = x.dtype == OAR_DTYPE_C64 || x.dtype == OAR_DTYPE_C128;
  if (!complex && !visit_numeric(x.dtype, [](auto) {})) return bad_dtype(l.op, "x", x.dtype, "numeric dtypes");
  if (!check_same_shape(l.op, "x", x, "the output", y)) return OAR_ERROR_INVALID_ARGUMENT;
  int64_t axis = 0;
  if (!check_indexed(l, x, index, "updates", updates, &axis)) return OAR_ERROR_INVALID_ARGUMENT;
  return submit(l, [x, index, updates, y, axis](std::string& error) -> OarStatus {
    if (OarStatus s = check_indices("scatter_add", index, x.shape[axis], axis, error)) return s;
    for_each_index(y.ndim, y.shape, [&](const int64_t* i, int64_t) {
      std::memmove(y.at(i), x.at(i), y.elsize());  // y = x (may alias)
    });
    // Updates are added in row-major order of `updates`, one rounding per add.
    if (y.dtype == OAR_DTYPE_C64 || y.dtype == OAR_DTYPE_C128) {
      // Complex: the real and imaginary parts add separately.
      for_each_index(updates.ndim, updates.shape, [&](const int64_t* ui, int64_t) {
        int64_t yi[OAR_MAX_NDIM];
        for (int32_t d = 0; d < y.ndim; ++d) yi[d] = ui[d];
        yi[axis] = load_index(index, ui[axis]);
        if (y.dtype == OAR_DTYPE_C64) {
          float a[2], b[2];
          std::memcpy(a, y.at(yi), sizeof a);
          std::memcpy(b, updates.at(ui), sizeof b);
          a[0] += b[0], a[1] += b[1];
          std::memcpy(y.at(yi), a, sizeof a);
        } else {
          double a[2], b[2];
          std::memcpy(a, y.at(yi), sizeof a);
          std::memcpy(b, updates.at(ui), sizeof b);
          a[0] += b[0], a[1] += b[1];
          std::memcpy(y.at(yi), a, sizeof a);
        }
      });
      return OAR_OK;
    }
    visit_numeric(y.dtype, [&](auto t) {
      using T = Element<decltype(t)>;
      for_each_index(updates.ndim, updates.shape, [&](const int64_t* ui, int64_t) {
        int64_t yi[OAR_MAX_NDIM];
        for (int32_t d = 0; d < y.ndim; ++d) yi[d] = ui[d];
        yi[axis] = load_index(index, ui[axis]);
        auto sum = T::load(y.at(yi));
        auto add = T::load(updates.at(ui));
        if constexpr (T::is_float)
          sum += add;
        else
          sum = wrap_add(sum, add);
        T::store(y.at(yi), sum);
      });
    });
    return OAR_OK;
  });
}

}  // namespace

void register_shape_kernels(op::KernelTable& t) {
  const int32_t index_dtypes[] = {OAR_DTYPE_I32, OAR_DTYPE_I64};
  // Data movement copies bytes: every dtype, complex included.
  std::vector<int32_t> every(std::begin(kAllDtypes), std::end(kAllDtypes));
  every.insert(every.end(), std::begin(kComplexDtypes), std::end(kComplexDtypes));
  for (int32_t dt : every) {
    t.add("transpose", {dt}, {dt}, transpose_kernel);
    t.add("broadcast_to", {dt}, {dt}, broadcast_to_kernel);
    t.add("broadcast_to_like", {}, {dt}, broadcast_to_like_kernel);
    t.add("slice", {dt}, {dt}, slice_kernel);
    t.add("pad", {dt}, {dt}, pad_kernel);
    // concat takes any number of inputs: no input signature (any), the
    // kernel checks that every input has the output's dtype.
    t.add("concat", {}, {dt}, concat_kernel);
    for (int32_t it : index_dtypes) t.add("gather", {dt, it}, {dt}, gather_kernel);
  }
  for (int32_t it : index_dtypes) t.add("check_index", {it}, {it}, check_index_kernel);
  t.add("shape", {}, {OAR_DTYPE_I64}, shape_kernel);
  t.add("numel", {}, {OAR_DTYPE_I64}, numel_kernel);
  std::vector<int32_t> addable(std::begin(kNumericDtypes), std::end(kNumericDtypes));
  addable.insert(addable.end(), std::begin(kComplexDtypes), std::end(kComplexDtypes));
  for (int32_t dt : addable)
    for (int32_t it : index_dtypes) t.add("scatter_add", {dt, it, dt}, {dt}, scatter_add_kernel);
}

}  // namespace oar_mock
