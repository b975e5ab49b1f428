// What every mock kernel shares: launch validation, attribute readers,
// element stores with cast semantics, and kernel registration.
#include <cmath>
#include <limits>

#include "mock_internal.h"

namespace oar_mock {

const std::vector<int32_t> kFloatDtypes = {OAR_DTYPE_F32, OAR_DTYPE_F64, OAR_DTYPE_F16,
                                           OAR_DTYPE_BF16};
const std::vector<int32_t> kNumericDtypes = {OAR_DTYPE_F32,  OAR_DTYPE_F64, OAR_DTYPE_F16,
                                             OAR_DTYPE_BF16, OAR_DTYPE_I8,  OAR_DTYPE_U8,
                                             OAR_DTYPE_I32,  OAR_DTYPE_I64};
const std::vector<int32_t> kAllDtypes = {OAR_DTYPE_F32,  OAR_DTYPE_F64, OAR_DTYPE_F16,
                                         OAR_DTYPE_BF16, OAR_DTYPE_I8,  OAR_DTYPE_U8,
                                         OAR_DTYPE_I32,  OAR_DTYPE_I64, OAR_DTYPE_BOOL};

namespace {

// Translates one view; `role` is e.g. "input 1".
OarStatus translate_view(const char* op, const std::string& role, int32_t device,
                         const OarTensorView& src, View* dst) {
  if (src.dtype < 0 || src.dtype >= OAR_DTYPE_COUNT)
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                strf("%s: %s has unknown dtype %d", op, role.c_str(), src.dtype));
  if (src.ndim < 0 || src.ndim > OAR_MAX_NDIM)
    return fail(OAR_ERROR_INVALID_ARGUMENT, strf("%s: %s has ndim %d, outside [0, %d]", op,
                                                 role.c_str(), src.ndim, OAR_MAX_NDIM));
  dst->dtype = src.dtype;
  dst->ndim = src.ndim;
  int64_t lowest = 0, highest = 0;  // element offsets reached by the view
  for (int32_t d = 0; d < src.ndim; ++d) {
    if (src.shape[d] < 0)
      return fail(OAR_ERROR_INVALID_ARGUMENT,
                  strf("%s: %s has a negative dim in shape %s", op, role.c_str(),
                       shape_str(src.ndim, src.shape).c_str()));
    dst->shape[d] = src.shape[d];
    dst->strides[d] = src.strides[d];
    int64_t reach = (src.shape[d] - 1) * src.strides[d];
    (reach < 0 ? lowest : highest) += reach;
  }
  if (dst->numel() == 0) return OAR_OK;  // base stays null: never read
  int64_t es = static_cast<int64_t>(dst->elsize());
  const char* first = static_cast<const char*>(src.data) + src.byte_offset + lowest * es;
  std::string what = strf("%s (%s)", op, role.c_str());
  char* real =
      translate(device, first, static_cast<uint64_t>((highest - lowest + 1) * es), what.c_str());
  if (!real) return OAR_ERROR_INVALID_ARGUMENT;
  dst->base = real - lowest * es;
  return OAR_OK;
}

}  // namespace

OarStatus prepare(const OarKernelContext* ctx, const char* op, int32_t num_inputs,
                  int32_t num_outputs, Launch* launch) {
  if (!ctx || ctx->struct_size < OAR_STRUCT_SIZE(OarKernelContext, attrs))
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                strf("%s: the kernel context is null or too short", op));
  if ((num_inputs >= 0 && ctx->num_inputs != num_inputs) || ctx->num_inputs < 0 ||
      ctx->num_outputs != num_outputs)
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                strf("%s: expected %s%d inputs and %d outputs but got %d and %d", op,
                     num_inputs < 0 ? "any number of " : "", num_inputs < 0 ? 0 : num_inputs,
                     num_outputs, ctx->num_inputs, ctx->num_outputs));
  launch->ctx = ctx;
  launch->op = op;
  launch->stream = find_stream(ctx->device, ctx->stream, op);
  if (!launch->stream) return OAR_ERROR_INVALID_ARGUMENT;
  launch->in.resize(ctx->num_inputs);
  launch->out.resize(ctx->num_outputs);
  for (int32_t i = 0; i < ctx->num_inputs; ++i)
    if (OarStatus s =
            translate_view(op, strf("input %d", i), ctx->device, ctx->inputs[i], &launch->in[i]))
      return s;
  for (int32_t i = 0; i < ctx->num_outputs; ++i)
    if (OarStatus s =
            translate_view(op, strf("output %d", i), ctx->device, ctx->outputs[i], &launch->out[i]))
      return s;
  return OAR_OK;
}

OarStatus submit(const Launch& launch, Task body) {
  launch.stream->enqueue(std::move(body));
  return OAR_OK;
}

// ------------------------------------------------------------------------
// Attributes
// ------------------------------------------------------------------------

namespace {
const OarHostApi& host() { return *g_plugin->host; }
bool missing(const Launch& l, const char* name, const char* kind) {
  fail(OAR_ERROR_INVALID_ARGUMENT,
       strf("%s: attribute '%s' is missing or not %s", l.op, name, kind));
  return false;
}
}  // namespace

bool attr_int(const Launch& l, const char* name, int64_t* value) {
  if (host().attr_int(l.ctx->attrs, name, value) == OAR_OK) return true;
  return missing(l, name, "an int");
}

bool attr_number(const Launch& l, const char* name, double* value) {
  switch (host().attr_kind(l.ctx->attrs, name)) {
    case OAR_ATTR_FLOAT:
      return host().attr_float(l.ctx->attrs, name, value) == OAR_OK || missing(l, name, "a float");
    case OAR_ATTR_INT: {
      int64_t v = 0;
      if (host().attr_int(l.ctx->attrs, name, &v) != OAR_OK) return missing(l, name, "a number");
      *value = static_cast<double>(v);
      return true;
    }
    case OAR_ATTR_BOOL: {
      int32_t v = 0;
      if (host().attr_bool(l.ctx->attrs, name, &v) != OAR_OK) return missing(l, name, "a number");
      *value = v ? 1.0 : 0.0;
      return true;
    }
    default:
      return missing(l, name, "a number");
  }
}

bool attr_number_or(const Launch& l, const char* name, double fallback, double* value) {
  if (host().attr_kind(l.ctx->attrs, name) == OAR_ATTR_MISSING) {
    *value = fallback;
    return true;
  }
  return attr_number(l, name, value);
}

const char* attr_string_or(const Launch& l, const char* name, const char* fallback) {
  const char* value = nullptr;
  return host().attr_string(l.ctx->attrs, name, &value) == OAR_OK && value ? value : fallback;
}

bool attr_bool_or(const Launch& l, const char* name, bool fallback, bool* value) {
  switch (host().attr_kind(l.ctx->attrs, name)) {
    case OAR_ATTR_MISSING:
      *value = fallback;
      return true;
    case OAR_ATTR_INT: {  // tolerate 0/1 given as an int
      int64_t v = 0;
      if (host().attr_int(l.ctx->attrs, name, &v) != OAR_OK) return missing(l, name, "a bool");
      *value = v != 0;
      return true;
    }
    default: {
      int32_t v = 0;
      if (host().attr_bool(l.ctx->attrs, name, &v) != OAR_OK) return missing(l, name, "a bool");
      *value = v != 0;
      return true;
    }
  }
}

bool attr_ints(const Launch& l, const char* name, std::vector<int64_t>* values, bool* present) {
  values->clear();
  int32_t kind = host().attr_kind(l.ctx->attrs, name);
  if (present) *present = kind != OAR_ATTR_MISSING;
  if (kind == OAR_ATTR_MISSING && present) return true;
  if (kind == OAR_ATTR_INT) {  // a single int where a list is expected
    int64_t v = 0;
    if (host().attr_int(l.ctx->attrs, name, &v) != OAR_OK) return missing(l, name, "an int array");
    values->push_back(v);
    return true;
  }
  const int64_t* data = nullptr;
  int64_t count = 0;
  if (host().attr_int_array(l.ctx->attrs, name, &data, &count) != OAR_OK)
    return missing(l, name, "an int array");
  values->assign(data, data + count);  // the host's array lives only during the call
  return true;
}

bool attr_element(const Launch& l, const char* name, int32_t dtype, const double* fallback,
                  std::vector<unsigned char>* bytes) {
  bytes->assign(oar_dtype_size(dtype), 0);
  int32_t kind = host().attr_kind(l.ctx->attrs, name);
  if (kind == OAR_ATTR_MISSING && fallback) {
    store_double(dtype, bytes->data(), *fallback);
    return true;
  }
  if (kind == OAR_ATTR_INT) {
    int64_t exact = 0;
    if (!attr_int(l, name, &exact)) return false;
    store_int(dtype, bytes->data(), exact);
    return true;
  }
  double value = 0;
  if (!attr_number(l, name, &value)) return false;
  store_double(dtype, bytes->data(), value);
  return true;
}

// ------------------------------------------------------------------------
// Shape and dtype checks
// ------------------------------------------------------------------------

bool check_same_shape(const char* op, const char* a_name, const View& a, const char* b_name,
                      const View& b) {
  bool same = a.ndim == b.ndim;
  for (int32_t d = 0; same && d < a.ndim; ++d) same = a.shape[d] == b.shape[d];
  if (same) return true;
  fail(OAR_ERROR_INVALID_ARGUMENT,
       strf("%s: %s has shape %s but %s has shape %s; they must be equal", op, a_name,
            shape_str(a.ndim, a.shape).c_str(), b_name, shape_str(b.ndim, b.shape).c_str()));
  return false;
}

bool check_broadcastable(const char* op, const char* in_name, const View& in, const View& out) {
  bool ok = in.ndim == out.ndim;
  for (int32_t d = 0; ok && d < in.ndim; ++d) ok = in.shape[d] == out.shape[d] || in.shape[d] == 1;
  if (ok) return true;
  fail(OAR_ERROR_INVALID_ARGUMENT,
       strf("%s: %s has shape %s, which does not broadcast to the output shape %s (the host "
            "passes inputs with the output's rank, dims equal or 1)",
            op, in_name, shape_str(in.ndim, in.shape).c_str(),
            shape_str(out.ndim, out.shape).c_str()));
  return false;
}

OarStatus bad_dtype(const char* op, const char* arg, int32_t dtype, const char* allowed) {
  return fail(OAR_ERROR_INVALID_ARGUMENT, strf("%s: %s has dtype %s, but the mock supports %s here",
                                               op, arg, dtype_name(dtype), allowed));
}

// ------------------------------------------------------------------------
// Element stores with cast semantics
// ------------------------------------------------------------------------

namespace {
template <typename S>
S saturate(double v) {
  if (std::isnan(v)) return 0;
  v = std::trunc(v);
  // Compare in double: the limits of i8/u8/i32 are exact; for i64 the max
  // rounds up to 2^63, so >= sends it to the max.
  if (v <= static_cast<double>(std::numeric_limits<S>::min())) return std::numeric_limits<S>::min();
  if (v >= static_cast<double>(std::numeric_limits<S>::max())) return std::numeric_limits<S>::max();
  return static_cast<S>(v);
}
template <typename S>
void put(void* p, S s) {
  std::memcpy(p, &s, sizeof s);
}
}  // namespace

void store_double(int32_t dtype, void* p, double v) {
  switch (dtype) {
    case OAR_DTYPE_F32:
      put(p, static_cast<float>(v));
      break;
    case OAR_DTYPE_F64:
      put(p, v);
      break;
    case OAR_DTYPE_F16:
      put(p, oar_f32_to_f16(static_cast<float>(v)));
      break;
    case OAR_DTYPE_BF16:
      put(p, oar_f32_to_bf16(static_cast<float>(v)));
      break;
    case OAR_DTYPE_I8:
      put(p, saturate<int8_t>(v));
      break;
    case OAR_DTYPE_U8:
      put(p, saturate<uint8_t>(v));
      break;
    case OAR_DTYPE_I32:
      put(p, saturate<int32_t>(v));
      break;
    case OAR_DTYPE_I64:
      put(p, saturate<int64_t>(v));
      break;
    case OAR_DTYPE_BOOL:
      put(p, static_cast<uint8_t>(v != 0));
      break;  // NaN is true
    default:
      break;
  }
}

void store_int(int32_t dtype, void* p, int64_t v) {
  switch (dtype) {
    case OAR_DTYPE_F32:
      put(p, static_cast<float>(v));
      break;
    case OAR_DTYPE_F64:
      put(p, static_cast<double>(v));
      break;
    case OAR_DTYPE_F16:
      put(p, oar_f32_to_f16(static_cast<float>(v)));
      break;
    case OAR_DTYPE_BF16:
      put(p, oar_f32_to_bf16(static_cast<float>(v)));
      break;
    case OAR_DTYPE_I8:
      put(p, static_cast<int8_t>(v));
      break;  // wraps
    case OAR_DTYPE_U8:
      put(p, static_cast<uint8_t>(v));
      break;
    case OAR_DTYPE_I32:
      put(p, static_cast<int32_t>(v));
      break;
    case OAR_DTYPE_I64:
      put(p, v);
      break;
    case OAR_DTYPE_BOOL:
      put(p, static_cast<uint8_t>(v != 0));
      break;
    default:
      break;
  }
}

// ------------------------------------------------------------------------
// Registration
// ------------------------------------------------------------------------

OarStatus register_kernel(const char* op, OarKernelFn fn, std::vector<int32_t> inputs,
                          std::vector<int32_t> outputs) {
  OarKernelDesc desc{};
  desc.struct_size = OAR_STRUCT_SIZE(OarKernelDesc, fn);
  desc.num_input_dtypes = static_cast<int32_t>(inputs.size());
  desc.input_dtypes = inputs.empty() ? nullptr : inputs.data();
  desc.num_output_dtypes = static_cast<int32_t>(outputs.size());
  desc.output_dtypes = outputs.empty() ? nullptr : outputs.data();
  desc.flags = OAR_KERNEL_STRIDED;  // every kernel reads through View::at (strides, byte offset); strided.* checks
  desc.fn = fn;
  OarStatus status = g_plugin->host->register_kernel(g_plugin->host->host, "mock", op, &desc);
  if (status != OAR_OK && g_plugin->host->log)
    g_plugin->host->log(g_plugin->host->host, OAR_LOG_ERROR,
                        strf("mock: registering kernel %s failed (status %d)", op, status).c_str());
  return status;
}

}  // namespace oar_mock
