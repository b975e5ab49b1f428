/* A kernel-only plugin (ABI 1.1) with a planted fault for the strided.*
 * conformance rows: it registers an `exp` kernel for "cpu" f32, flagged
 * OAR_KERNEL_STRIDED and ahead of the cpu plugin's (priority 10), that reads
 * its input as if it were contiguous. It is right on every contiguous input,
 * so kernel.exp.f32 passes; only a strided view shows the fault. */
#include <math.h>
#include <string.h>

#include "oar/plugin_api.h"

static OarStatus exp_ignoring_strides(const OarKernelContext* ctx) {
  const OarTensorView* x = &ctx->inputs[0];
  const OarTensorView* y = &ctx->outputs[0];
  const float* src = (const float*)((const char*)x->data + x->byte_offset);
  float* dst = (float*)((char*)y->data + y->byte_offset);
  int64_t n = 1, i;
  int32_t d;
  for (d = 0; d < y->ndim; ++d) n *= y->shape[d];
  for (i = 0; i < n; ++i) dst[i] = expf(src[i]); /* the fault: x->strides are ignored */
  return OAR_OK;
}

OAR_PLUGIN_EXPORT OarStatus oar_plugin_init(const OarHostApi* host, OarPluginInfo* info);

OAR_PLUGIN_EXPORT OarStatus oar_plugin_init(const OarHostApi* host, OarPluginInfo* info) {
  static const int32_t f32[1] = {OAR_DTYPE_F32};
  OarKernelDesc desc;
  info->abi_major = OAR_ABI_VERSION_MAJOR;
  info->abi_minor = OAR_ABI_VERSION_MINOR;
  info->name = "strided-liar";
  memset(&desc, 0, sizeof desc);
  desc.struct_size = sizeof desc;
  desc.priority = 10;
  desc.num_input_dtypes = 1;
  desc.input_dtypes = f32;
  desc.num_output_dtypes = 1;
  desc.output_dtypes = f32;
  desc.flags = OAR_KERNEL_STRIDED;
  desc.fn = exp_ignoring_strides;
  return host->register_kernel(host->host, "cpu", "exp", &desc);
}
