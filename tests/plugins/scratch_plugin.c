/* A test plugin for ABI 1.1's kernel scratch memory and error codes
 * (tests/unit/test_abi_scratch.cpp, frontends/python/tests/test_abi_errors.py):
 * device "scratchdev", host memory with a hard capacity of 4 MiB, f32
 * kernels on inputs of the output's shape.
 *  - add: takes 2 n floats of scratch (copies of a and b), y = a + b; when
 *    scratch_alloc fails it returns OAR_ERROR_OUT_OF_MEMORY.
 *  - sub: the same with y = a - b, but when scratch_alloc fails it returns
 *    OAR_ERROR_INTERNAL without a message of its own: the host's
 *    out-of-memory code from scratch_alloc must still reach the user.
 *  - mul: set_error(INVALID_ARGUMENT, ...) and returns OAR_ERROR_DEVICE.
 *  - div: returns OAR_ERROR_OUT_OF_MEMORY without calling set_error.
 *  - neg: calls set_error, then succeeds: the stale message is dropped.
 *  - maximum: returns status 42, which the ABI does not define.
 * Calls come from one thread at a time in the tests (no locking). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oar/plugin_api.h"

#define SCRATCH_CAPACITY ((uint64_t)4 << 20)
#define SCRATCH_MAX_BLOCKS 1024

static const OarHostApi* g_host;
static struct {
  void* ptr;
  uint64_t bytes;
} g_blocks[SCRATCH_MAX_BLOCKS];
static uint64_t g_used;

static OarStatus fail(OarStatus code, const char* message) {
  g_host->set_error(g_host->host, code, message);
  return code;
}

static OarStatus count(void* impl, int32_t* n) {
  (void)impl;
  *n = 1;
  return OAR_OK;
}
static OarStatus props(void* impl, int32_t device, OarDeviceProperties* p) {
  (void)impl;
  (void)device;
  strcpy(p->name, "scratch test device");
  strcpy(p->isa, "none");
  p->total_memory = SCRATCH_CAPACITY;
  p->free_memory = SCRATCH_CAPACITY - g_used;
  p->compute_units = 1;
  p->flags = OAR_DEVICE_HOST_ADDRESSABLE;
  return OAR_OK;
}
static OarStatus sync_device(void* impl, int32_t device) {
  (void)impl;
  (void)device;
  return OAR_OK;
}
static OarStatus dev_malloc(void* impl, int32_t device, uint64_t bytes, uint64_t alignment, void** ptr) {
  char message[160];
  void* p = NULL;
  int i;
  (void)impl;
  (void)device;
  if (bytes > SCRATCH_CAPACITY - g_used) {
    snprintf(message, sizeof message, "scratchdev: %llu bytes requested, %llu of %llu in use",
             (unsigned long long)bytes, (unsigned long long)g_used, (unsigned long long)SCRATCH_CAPACITY);
    return fail(OAR_ERROR_OUT_OF_MEMORY, message);
  }
  for (i = 0; i < SCRATCH_MAX_BLOCKS && g_blocks[i].ptr; ++i) {
  }
  if (i == SCRATCH_MAX_BLOCKS) return fail(OAR_ERROR_OUT_OF_MEMORY, "scratchdev: too many blocks");
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  if (posix_memalign(&p, (size_t)alignment, bytes ? (size_t)bytes : 1) != 0)
    return fail(OAR_ERROR_OUT_OF_MEMORY, "scratchdev: posix_memalign failed");
  g_blocks[i].ptr = p;
  g_blocks[i].bytes = bytes;
  g_used += bytes;
  *ptr = p;
  return OAR_OK;
}
static OarStatus dev_free(void* impl, int32_t device, void* ptr) {
  int i;
  (void)impl;
  (void)device;
  for (i = 0; i < SCRATCH_MAX_BLOCKS; ++i) {
    if (ptr && g_blocks[i].ptr == ptr) {
      g_used -= g_blocks[i].bytes;
      g_blocks[i].ptr = NULL;
      free(ptr);
      return OAR_OK;
    }
  }
  return fail(OAR_ERROR_INVALID_ARGUMENT, "scratchdev: free of an unknown pointer");
}
static OarStatus copy(void* impl, int32_t device, void* dst, const void* src, uint64_t bytes) {
  (void)impl;
  (void)device;
  if (bytes) memmove(dst, src, (size_t)bytes);
  return OAR_OK;
}
static OarStatus sync_stream(void* impl, int32_t device, OarStream_t stream) {
  (void)impl;
  (void)device;
  (void)stream;
  return OAR_OK;
}

static int64_t numel(const OarTensorView* v) {
  int64_t n = 1;
  int32_t d;
  for (d = 0; d < v->ndim; ++d) n *= v->shape[d];
  return n;
}
static const float* in(const OarKernelContext* ctx, int i) {
  return (const float*)((const char*)ctx->inputs[i].data + ctx->inputs[i].byte_offset);
}
static float* out(const OarKernelContext* ctx) {
  return (float*)((char*)ctx->outputs[0].data + ctx->outputs[0].byte_offset);
}

/* y = a + sign * b through two scratch copies; `oom_status` is returned
 * when the scratch cannot be had. */
static OarStatus through_scratch(const OarKernelContext* ctx, float sign, OarStatus oom_status) {
  int64_t n = numel(&ctx->outputs[0]), i;
  float* t = (float*)g_host->scratch_alloc(g_host->host, ctx, (uint64_t)(2 * n) * sizeof(float));
  float* u;
  if (!t) return oom_status; /* the host has set the error (out of memory) */
  u = t + n;
  memcpy(t, in(ctx, 0), (size_t)n * sizeof(float));
  memcpy(u, in(ctx, 1), (size_t)n * sizeof(float));
  for (i = 0; i < n; ++i) out(ctx)[i] = t[i] + sign * u[i];
  g_host->scratch_free(g_host->host, ctx, t);
  return OAR_OK;
}

static OarStatus k_add(const OarKernelContext* ctx) { return through_scratch(ctx, 1.0f, OAR_ERROR_OUT_OF_MEMORY); }
static OarStatus k_sub(const OarKernelContext* ctx) { return through_scratch(ctx, -1.0f, OAR_ERROR_INTERNAL); }
static OarStatus k_mul(const OarKernelContext* ctx) {
  (void)ctx;
  g_host->set_error(g_host->host, OAR_ERROR_INVALID_ARGUMENT, "scratchdev mul: refuses its inputs on purpose");
  return OAR_ERROR_DEVICE;
}
static OarStatus k_div(const OarKernelContext* ctx) {
  (void)ctx;
  return OAR_ERROR_OUT_OF_MEMORY;
}
static OarStatus k_neg(const OarKernelContext* ctx) {
  int64_t n = numel(&ctx->outputs[0]), i;
  g_host->set_error(g_host->host, OAR_ERROR_DEVICE, "scratchdev neg: a message from a call that succeeds");
  for (i = 0; i < n; ++i) out(ctx)[i] = -in(ctx, 0)[i];
  return OAR_OK;
}
static OarStatus k_maximum(const OarKernelContext* ctx) {
  (void)ctx;
  g_host->set_error(g_host->host, OAR_OK, "scratchdev maximum: fails with a status the ABI lacks");
  return 42;
}

static OarStatus register_f32(const char* op, int32_t num_inputs, OarKernelFn fn) {
  static const int32_t f32[2] = {OAR_DTYPE_F32, OAR_DTYPE_F32};
  OarKernelDesc k;
  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  k.num_input_dtypes = num_inputs;
  k.input_dtypes = f32;
  k.num_output_dtypes = 1;
  k.output_dtypes = f32;
  k.fn = fn;
  return g_host->register_kernel(g_host->host, "scratchdev", op, &k);
}

OAR_PLUGIN_EXPORT OarStatus oar_plugin_init(const OarHostApi* host, OarPluginInfo* info);

OAR_PLUGIN_EXPORT OarStatus oar_plugin_init(const OarHostApi* host, OarPluginInfo* info) {
  static OarDeviceApi api;
  OarStatus s;
  info->abi_major = OAR_ABI_VERSION_MAJOR;
  info->abi_minor = OAR_ABI_VERSION_MINOR;
  info->name = "scratch-test";
  g_host = host;
  if (host->struct_size < OAR_STRUCT_SIZE(OarHostApi, scratch_free) || !host->scratch_alloc) {
    return fail(OAR_ERROR_UNSUPPORTED, "scratchdev: the host has no scratch_alloc (ABI 1.0)");
  }
  memset(&api, 0, sizeof api);
  api.struct_size = sizeof api;
  api.device_type = "scratchdev";
  api.plugin_version = "0.0.1";
  api.priority = -5; /* never the default device */
  api.device_count = count;
  api.device_properties = props;
  api.synchronize_device = sync_device;
  api.malloc = dev_malloc;
  api.free = dev_free;
  api.memcpy_h2d = copy;
  api.memcpy_d2h = copy;
  api.memcpy_d2d = copy;
  api.stream_synchronize = sync_stream;
  if ((s = host->register_device(host->host, &api)) != OAR_OK) return s;
  if ((s = register_f32("add", 2, k_add)) != OAR_OK) return s;
  if ((s = register_f32("sub", 2, k_sub)) != OAR_OK) return s;
  if ((s = register_f32("mul", 2, k_mul)) != OAR_OK) return s;
  if ((s = register_f32("div", 2, k_div)) != OAR_OK) return s;
  if ((s = register_f32("neg", 1, k_neg)) != OAR_OK) return s;
  return register_f32("maximum", 2, k_maximum);
}
