/* A kernel-only plugin (ABI 1.1) whose kernels decline some problems
 * through OarKernelDesc.accepts (Note [Kernel fall-through] in
 * core/src/dispatch/kernel_launch.h). For the device type "cpu", with
 * priority 20 (tried before cpu's own kernels), f32 only:
 *  - add: takes two inputs of the output's element count when that count is
 *    even and writes a + b + 1000 (identifiable); declines odd counts and
 *    broadcasts, which fall through to cpu's add;
 *  - mse_loss (composite; cpu has no kernel): takes inputs of an even
 *    element count and writes 777; odd counts fall to the decomposition;
 *  - fallthrough_probe (a primitive op the test registers; no other kernel
 *    and no decomposition): takes even counts and writes 2 x; odd counts
 *    are the error naming op, device and shapes.
 * Each accepts checks ctx->device_type is "cpu" and never reads data (the
 * host may ask ahead of time with NULL data). */
#include <string.h>

#include "oar/plugin_api.h"

static int64_t numel(const OarTensorView* v) {
  int64_t n = 1;
  int32_t d;
  for (d = 0; d < v->ndim; ++d) n *= v->shape[d];
  return n;
}

static float* f32_data(const OarTensorView* v) { return (float*)((char*)v->data + v->byte_offset); }

static int32_t on_cpu(const OarKernelContext* ctx) {
  return ctx->struct_size >= OAR_STRUCT_SIZE(OarKernelContext, device_type) && ctx->device_type &&
         strcmp(ctx->device_type, "cpu") == 0;
}

static int32_t even_outputs(const OarKernelContext* ctx) {
  return on_cpu(ctx) && numel(&ctx->outputs[0]) % 2 == 0;
}

static int32_t add_accepts(const OarKernelContext* ctx) {
  int64_t n = numel(&ctx->outputs[0]);
  return even_outputs(ctx) && numel(&ctx->inputs[0]) == n && numel(&ctx->inputs[1]) == n;
}

static OarStatus add_plus_1000(const OarKernelContext* ctx) {
  const float* a = f32_data(&ctx->inputs[0]);
  const float* b = f32_data(&ctx->inputs[1]);
  float* y = f32_data(&ctx->outputs[0]);
  int64_t i, n = numel(&ctx->outputs[0]);
  for (i = 0; i < n; ++i) y[i] = a[i] + b[i] + 1000.0f;
  return OAR_OK;
}

static int32_t mse_accepts(const OarKernelContext* ctx) {
  return on_cpu(ctx) && numel(&ctx->inputs[0]) % 2 == 0;
}

static OarStatus write_777(const OarKernelContext* ctx) {
  float* y = f32_data(&ctx->outputs[0]);
  int64_t i, n = numel(&ctx->outputs[0]);
  for (i = 0; i < n; ++i) y[i] = 777.0f;
  return OAR_OK;
}

static OarStatus twice(const OarKernelContext* ctx) {
  const float* x = f32_data(&ctx->inputs[0]);
  float* y = f32_data(&ctx->outputs[0]);
  int64_t i, n = numel(&ctx->outputs[0]);
  for (i = 0; i < n; ++i) y[i] = 2.0f * x[i];
  return OAR_OK;
}

OAR_PLUGIN_EXPORT OarStatus oar_plugin_init(const OarHostApi* host, OarPluginInfo* info);

OAR_PLUGIN_EXPORT OarStatus oar_plugin_init(const OarHostApi* host, OarPluginInfo* info) {
  static const int32_t f32x2[2] = {OAR_DTYPE_F32, OAR_DTYPE_F32};
  static const int32_t f32x1[1] = {OAR_DTYPE_F32};
  OarKernelDesc desc;
  OarStatus s;
  info->abi_major = OAR_ABI_VERSION_MAJOR;
  info->abi_minor = OAR_ABI_VERSION_MINOR;
  info->name = "declining-kernels";
  memset(&desc, 0, sizeof desc);
  desc.struct_size = sizeof desc;
  desc.priority = 20;
  desc.num_input_dtypes = 2;
  desc.input_dtypes = f32x2;
  desc.num_output_dtypes = 1;
  desc.output_dtypes = f32x1;

  desc.fn = add_plus_1000;
  desc.accepts = add_accepts;
  if ((s = host->register_kernel(host->host, "cpu", "add", &desc)) != OAR_OK) return s;
  desc.fn = write_777;
  desc.accepts = mse_accepts;
  if ((s = host->register_kernel(host->host, "cpu", "mse_loss", &desc)) != OAR_OK) return s;
  desc.num_input_dtypes = 1;
  desc.input_dtypes = f32x1;
  desc.fn = twice;
  desc.accepts = even_outputs;
  return host->register_kernel(host->host, "cpu", "fallthrough_probe", &desc);
}
