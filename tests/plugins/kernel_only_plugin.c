/* A kernel-only plugin (ABI 1.1): it registers no device, only kernels for
 * the device type "cpu", which another plugin provides. Its kernels write
 * 666 into every output element, so a test can see which kernel ran.
 * KERNEL_PRIORITY declares OarKernelDesc.priority; MODE_V10_DESCRIPTOR
 * registers with a 1.0-sized descriptor (no priority), which the host
 * refuses for a device type the plugin does not own. */
#include <string.h>

#include "oar/plugin_api.h"

#ifndef KERNEL_PRIORITY
#define KERNEL_PRIORITY 10
#endif

static OarStatus write_666(const OarKernelContext* ctx) {
  int32_t o, d;
  for (o = 0; o < ctx->num_outputs; ++o) {
    const OarTensorView* y = &ctx->outputs[o];
    float* data = (float*)((char*)y->data + y->byte_offset);
    int64_t n = 1, i;
    for (d = 0; d < y->ndim; ++d) n *= y->shape[d];
    for (i = 0; i < n; ++i) data[i] = 666.0f;
  }
  return OAR_OK;
}

OAR_PLUGIN_EXPORT OarStatus oar_plugin_init(const OarHostApi* host, OarPluginInfo* info);

OAR_PLUGIN_EXPORT OarStatus oar_plugin_init(const OarHostApi* host, OarPluginInfo* info) {
  static const int32_t f32x2[2] = {OAR_DTYPE_F32, OAR_DTYPE_F32};
  static const int32_t f32x1[1] = {OAR_DTYPE_F32};
  static const char* const ops[] = {"mse_loss", "add"};
  OarKernelDesc desc;
  size_t i;
  info->abi_major = OAR_ABI_VERSION_MAJOR;
  info->abi_minor = OAR_ABI_VERSION_MINOR;
  info->name = "kernel-only-666";
  memset(&desc, 0, sizeof desc);
#ifdef MODE_V10_DESCRIPTOR
  desc.struct_size = OAR_STRUCT_SIZE(OarKernelDesc, fn);
#else
  desc.struct_size = sizeof desc;
  desc.priority = KERNEL_PRIORITY;
#endif
  desc.num_input_dtypes = 2;
  desc.input_dtypes = f32x2;
  desc.num_output_dtypes = 1;
  desc.output_dtypes = f32x1;
  desc.fn = write_666;
  for (i = 0; i < sizeof ops / sizeof ops[0]; ++i) {
    OarStatus s = host->register_kernel(host->host, "cpu", ops[i], &desc);
    if (s != OAR_OK) return s;
  }
  return OAR_OK;
}
