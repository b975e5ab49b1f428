// What every mock kernel shares: launch validation and shape and dtype
// checks (attributes, dtypes, casts and registration are the SDK's).
#include "mock_internal.h"

namespace oar_mock {

namespace {

// Translates one view; `role` is e.g. "input 1".
OarStatus translate_view(const char* op, const std::string& role, int32_t device,
                         const OarTensorView& src, View* dst) {
  if (src.dtype < 0 || src.dtype >= OAR_DTYPE_COUNT)
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                format("%s: %s has unknown dtype %d", op, role.c_str(), src.dtype));
  if (src.ndim < 0 || src.ndim > OAR_MAX_NDIM)
    return fail(OAR_ERROR_INVALID_ARGUMENT, format("%s: %s has ndim %d, outside [0, %d]", op,
                                                 role.c_str(), src.ndim, OAR_MAX_NDIM));
  dst->dtype = src.dtype;
  dst->ndim = src.ndim;
  int64_t lowest = 0, highest = 0;  // element offsets reached by the view
  for (int32_t d = 0; d < src.ndim; ++d) {
    if (src.shape[d] < 0)
      return fail(OAR_ERROR_INVALID_ARGUMENT,
                  format("%s: %s has a negative dim in shape %s", op, role.c_str(),
                       shape_str(src.ndim, src.shape).c_str()));
    dst->shape[d] = src.shape[d];
    dst->strides[d] = src.strides[d];
    int64_t reach = (src.shape[d] - 1) * src.strides[d];
    (reach < 0 ? lowest : highest) += reach;
  }
  if (dst->numel() == 0) return OAR_OK;  // base stays null: never read
  int64_t es = static_cast<int64_t>(dst->elsize());
  const char* first = static_cast<const char*>(src.data) + src.byte_offset + lowest * es;
  std::string what = format("%s (%s)", op, role.c_str());
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
                format("%s: the kernel context is null or too short", op));
  if ((num_inputs >= 0 && ctx->num_inputs != num_inputs) || ctx->num_inputs < 0 ||
      ctx->num_outputs != num_outputs)
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                format("%s: expected %s%d inputs and %d outputs but got %d and %d", op,
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
            translate_view(op, format("input %d", i), ctx->device, ctx->inputs[i], &launch->in[i]))
      return s;
  for (int32_t i = 0; i < ctx->num_outputs; ++i)
    if (OarStatus s =
            translate_view(op, format("output %d", i), ctx->device, ctx->outputs[i], &launch->out[i]))
      return s;
  return OAR_OK;
}

OarStatus submit(const Launch& launch, Task body) {
  launch.stream->enqueue(std::move(body));
  return OAR_OK;
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
       format("%s: %s has shape %s but %s has shape %s; they must be equal", op, a_name,
            shape_str(a.ndim, a.shape).c_str(), b_name, shape_str(b.ndim, b.shape).c_str()));
  return false;
}

bool check_broadcastable(const char* op, const char* in_name, const View& in, const View& out) {
  bool ok = in.ndim == out.ndim;
  for (int32_t d = 0; ok && d < in.ndim; ++d) ok = in.shape[d] == out.shape[d] || in.shape[d] == 1;
  if (ok) return true;
  fail(OAR_ERROR_INVALID_ARGUMENT,
       format("%s: %s has shape %s, which does not broadcast to the output shape %s (the host "
            "passes inputs with the output's rank, dims equal or 1)",
            op, in_name, shape_str(in.ndim, in.shape).c_str(),
            shape_str(out.ndim, out.shape).c_str()));
  return false;
}

OarStatus bad_dtype(const char* op, const char* arg, int32_t dtype, const char* allowed) {
  return fail(OAR_ERROR_INVALID_ARGUMENT, format("%s: %s has dtype %s, but the mock supports %s here",
                                               op, arg, dtype_name(dtype), allowed));
}

}  // namespace oar_mock
