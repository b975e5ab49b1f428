/* A device plugin built against the frozen ABI 1.0 header (oar/plugin_api.h
 * in this directory, not plugin_api/include): device "abi10", host memory,
 * no streams, events or collectives, and f32 kernels for add, sub, mul, div,
 * neg and exp. Hosts of later minors must load it and pass conformance with
 * it (tests/abi_1_0/CMakeLists.txt).
 *
 * Its kernel descriptors sit in a larger block whose bytes after the 1.0
 * descriptor are 0xFF: a host that read the 1.1 fields (priority, accepts)
 * of a descriptor whose struct_size does not cover them would see priority
 * -1 and call a garbage accepts pointer. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "oar/plugin_api.h"

#if OAR_ABI_VERSION_MINOR != 0
#error "abi10_plugin.c must be compiled against the frozen 1.0 header in tests/abi_1_0"
#endif

#define ABI10_CAPACITY ((uint64_t)256 << 20) /* bytes the device reports and enforces */
#define ABI10_MAX_BLOCKS 4096

static const OarHostApi* g_host;

/* Live blocks, to enforce the capacity and report memory stats. The host
 * serializes calls into a plugin's memory functions only per stream, so a
 * real plugin would lock here; the conformance runner calls from one thread. */
static struct {
  void* ptr;
  uint64_t bytes;
} g_blocks[ABI10_MAX_BLOCKS];
static uint64_t g_used;

static OarStatus fail(OarStatus code, const char* message) {
  g_host->set_error(g_host->host, code, message);
  return code;
}

static OarStatus check_device(int32_t device) {
  return device == 0 ? OAR_OK : fail(OAR_ERROR_INVALID_ARGUMENT, "abi10: only device 0 exists");
}

static OarStatus count(void* impl, int32_t* n) {
  (void)impl;
  *n = 1;
  return OAR_OK;
}

static OarStatus props(void* impl, int32_t device, OarDeviceProperties* p) {
  (void)impl;
  if (check_device(device)) return OAR_ERROR_INVALID_ARGUMENT;
  /* Every field of 1.0's OarDeviceProperties, only where the host's
   * struct_size covers it. */
  if (p->struct_size >= OAR_STRUCT_SIZE(OarDeviceProperties, name)) strcpy(p->name, "ABI 1.0 test device");
  if (p->struct_size >= OAR_STRUCT_SIZE(OarDeviceProperties, isa)) strcpy(p->isa, "c99");
  if (p->struct_size >= OAR_STRUCT_SIZE(OarDeviceProperties, total_memory)) p->total_memory = ABI10_CAPACITY;
  if (p->struct_size >= OAR_STRUCT_SIZE(OarDeviceProperties, free_memory))
    p->free_memory = ABI10_CAPACITY - g_used;
  if (p->struct_size >= OAR_STRUCT_SIZE(OarDeviceProperties, compute_units)) p->compute_units = 1;
  if (p->struct_size >= OAR_STRUCT_SIZE(OarDeviceProperties, flags)) p->flags = OAR_DEVICE_HOST_ADDRESSABLE;
  return OAR_OK;
}

static OarStatus sync_device(void* impl, int32_t device) {
  (void)impl;
  return check_device(device);
}

static OarStatus dev_malloc(void* impl, int32_t device, uint64_t bytes, uint64_t alignment, void** ptr) {
  int i;
  void* p = NULL;
  (void)impl;
  if (check_device(device)) return OAR_ERROR_INVALID_ARGUMENT;
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  if (bytes > ABI10_CAPACITY - g_used) return fail(OAR_ERROR_OUT_OF_MEMORY, "abi10: malloc exceeds the 256 MiB capacity");
  for (i = 0; i < ABI10_MAX_BLOCKS && g_blocks[i].ptr; ++i) {
  }
  if (i == ABI10_MAX_BLOCKS) return fail(OAR_ERROR_OUT_OF_MEMORY, "abi10: too many live blocks");
  if (posix_memalign(&p, (size_t)alignment, bytes ? (size_t)bytes : 1) != 0)
    return fail(OAR_ERROR_OUT_OF_MEMORY, "abi10: posix_memalign failed");
  g_blocks[i].ptr = p;
  g_blocks[i].bytes = bytes;
  g_used += bytes;
  *ptr = p;
  return OAR_OK;
}

static OarStatus dev_free(void* impl, int32_t device, void* ptr) {
  int i;
  (void)impl;
  if (check_device(device)) return OAR_ERROR_INVALID_ARGUMENT;
  if (!ptr) return OAR_OK;
  for (i = 0; i < ABI10_MAX_BLOCKS; ++i) {
    if (g_blocks[i].ptr == ptr) {
      g_used -= g_blocks[i].bytes;
      g_blocks[i].ptr = NULL;
      free(ptr);
      return OAR_OK;
    }
  }
  return fail(OAR_ERROR_INVALID_ARGUMENT, "abi10: free of a pointer this device did not allocate");
}

static OarStatus copy(void* impl, int32_t device, void* dst, const void* src, uint64_t bytes) {
  (void)impl;
  if (check_device(device)) return OAR_ERROR_INVALID_ARGUMENT;
  if (bytes) memmove(dst, src, (size_t)bytes);
  return OAR_OK;
}

static OarStatus sync_stream(void* impl, int32_t device, OarStream_t stream) {
  (void)impl;
  (void)stream;
  return check_device(device);
}

static OarStatus stats(void* impl, int32_t device, OarMemoryStats* s) {
  (void)impl;
  if (check_device(device)) return OAR_ERROR_INVALID_ARGUMENT;
  if (s->struct_size >= OAR_STRUCT_SIZE(OarMemoryStats, used)) s->used = g_used;
  if (s->struct_size >= OAR_STRUCT_SIZE(OarMemoryStats, free)) s->free = ABI10_CAPACITY - g_used;
  if (s->struct_size >= OAR_STRUCT_SIZE(OarMemoryStats, total)) s->total = ABI10_CAPACITY;
  return OAR_OK;
}

/* ---- kernels: f32, any strides, inputs broadcast to the output ---- */

/* Element offset of `v` at the output index `index` (a dim of size 1 in the
 * input broadcasts; the host pads inputs to the output's rank). */
static int64_t offset_of(const OarTensorView* v, const int64_t* index, int32_t out_ndim) {
  int64_t off = 0;
  int32_t d, pad = out_ndim - v->ndim;
  for (d = 0; d < v->ndim; ++d) {
    if (v->shape[d] != 1) off += index[d + pad] * v->strides[d];
  }
  return off;
}

static const float* data_in(const OarTensorView* v) { return (const float*)((const char*)v->data + v->byte_offset); }
static float* data_out(const OarTensorView* v) { return (float*)((char*)v->data + v->byte_offset); }

/* Calls `f` per element of output 0 with the inputs' values. */
static OarStatus elementwise(const OarKernelContext* ctx, float (*f)(const float* args)) {
  const OarTensorView* y = &ctx->outputs[0];
  int64_t index[OAR_MAX_NDIM] = {0};
  int64_t n = 1, i;
  int32_t d, k;
  float args[2];
  if (ctx->num_inputs < 1 || ctx->num_inputs > 2 || ctx->num_outputs != 1)
    return fail(OAR_ERROR_INVALID_ARGUMENT, "abi10: kernels take 1 or 2 inputs and 1 output");
  for (d = 0; d < y->ndim; ++d) n *= y->shape[d];
  for (i = 0; i < n; ++i) {
    for (k = 0; k < ctx->num_inputs; ++k)
      args[k] = data_in(&ctx->inputs[k])[offset_of(&ctx->inputs[k], index, y->ndim)];
    data_out(y)[offset_of(y, index, y->ndim)] = f(args);
    for (d = y->ndim - 1; d >= 0; --d) { /* next index, last dim fastest */
      if (++index[d] < y->shape[d]) break;
      index[d] = 0;
    }
  }
  return OAR_OK;
}

static float f_add(const float* a) { return a[0] + a[1]; }
static float f_sub(const float* a) { return a[0] - a[1]; }
static float f_mul(const float* a) { return a[0] * a[1]; }
static float f_div(const float* a) { return a[0] / a[1]; }
static float f_neg(const float* a) { return -a[0]; }
static float f_exp(const float* a) { return expf(a[0]); }
static OarStatus k_add(const OarKernelContext* c) { return elementwise(c, f_add); }
static OarStatus k_sub(const OarKernelContext* c) { return elementwise(c, f_sub); }
static OarStatus k_mul(const OarKernelContext* c) { return elementwise(c, f_mul); }
static OarStatus k_div(const OarKernelContext* c) { return elementwise(c, f_div); }
static OarStatus k_neg(const OarKernelContext* c) { return elementwise(c, f_neg); }
static OarStatus k_exp(const OarKernelContext* c) { return elementwise(c, f_exp); }

/* A 1.0 descriptor followed by bytes a 1.0 host never reads. */
typedef struct {
  OarKernelDesc desc;
  unsigned char poison[64];
} PoisonedDesc;

static OarStatus register_f32(const char* op, int32_t num_inputs, OarKernelFn fn) {
  static const int32_t f32[2] = {OAR_DTYPE_F32, OAR_DTYPE_F32};
  PoisonedDesc k;
  memset(&k, 0xFF, sizeof k);
  k.desc.struct_size = OAR_STRUCT_SIZE(OarKernelDesc, fn); /* == sizeof(OarKernelDesc) in 1.0 */
  k.desc.num_input_dtypes = num_inputs;
  k.desc.input_dtypes = f32;
  k.desc.num_output_dtypes = 1;
  k.desc.output_dtypes = f32;
  k.desc.flags = OAR_KERNEL_STRIDED;
  k.desc.fn = fn;
  return g_host->register_kernel(g_host->host, "abi10", op, &k.desc);
}

OAR_PLUGIN_EXPORT OarStatus oar_plugin_init(const OarHostApi* host, OarPluginInfo* info);

OAR_PLUGIN_EXPORT OarStatus oar_plugin_init(const OarHostApi* host, OarPluginInfo* info) {
  static OarDeviceApi api;
  OarStatus s;
  info->abi_major = OAR_ABI_VERSION_MAJOR;
  info->abi_minor = OAR_ABI_VERSION_MINOR;
  info->name = "abi10-test";
  if (host->abi_major != OAR_ABI_VERSION_MAJOR) return OAR_ERROR_UNSUPPORTED;
  g_host = host;
  memset(&api, 0, sizeof api);
  api.struct_size = OAR_STRUCT_SIZE(OarDeviceApi, shutdown);
  api.device_type = "abi10";
  api.plugin_version = "1.0.0";
  api.priority = -10; /* never the default device */
  api.device_count = count;
  api.device_properties = props;
  api.synchronize_device = sync_device;
  api.malloc = dev_malloc;
  api.free = dev_free;
  api.memcpy_h2d = copy;
  api.memcpy_d2h = copy;
  api.memcpy_d2d = copy;
  api.stream_synchronize = sync_stream;
  api.memory_stats = stats;
  if ((s = host->register_device(host->host, &api)) != OAR_OK) return s;
  if ((s = register_f32("add", 2, k_add)) != OAR_OK) return s;
  if ((s = register_f32("sub", 2, k_sub)) != OAR_OK) return s;
  if ((s = register_f32("mul", 2, k_mul)) != OAR_OK) return s;
  if ((s = register_f32("div", 2, k_div)) != OAR_OK) return s;
  if ((s = register_f32("neg", 1, k_neg)) != OAR_OK) return s;
  return register_f32("exp", 1, k_exp);
}
