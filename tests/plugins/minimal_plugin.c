/* A minimal device plugin in plain C99, built in several variants for the
 * loader tests (see CMakeLists.txt): a working one, one per way of failing,
 * and duplicates. DEVICE_TYPE, PRIORITY, NUM_DEVICES and one MODE_* macro
 * select the variant. Its memory is ordinary host memory. The hostile
 * variants (MODE_SEGV, MODE_ABORT, MODE_EXIT, MODE_HANG, MODE_THREAD_FAILS,
 * MODE_NEEDS_LIB) are what the plugin probe must survive. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#ifdef MODE_THREAD_FAILS
#include <pthread.h>
#include <time.h>
#endif

#include "oar/plugin_api.h"

#ifndef DEVICE_TYPE
#define DEVICE_TYPE "minimal"
#endif
#ifndef PRIORITY
#define PRIORITY 1
#endif
#ifndef NUM_DEVICES
#define NUM_DEVICES 1
#endif

static OarStatus count(void* impl, int32_t* n) {
  (void)impl;
  *n = NUM_DEVICES;
  return OAR_OK;
}
static OarStatus props(void* impl, int32_t device, OarDeviceProperties* p) {
  (void)impl;
  (void)device;
  strcpy(p->name, "minimal test device");
  strcpy(p->isa, "none");
  p->total_memory = 1 << 20;
  p->free_memory = 1 << 20;
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
  (void)impl;
  (void)device;
  (void)alignment;
  *ptr = malloc(bytes);
  return *ptr ? OAR_OK : OAR_ERROR_OUT_OF_MEMORY;
}
static OarStatus dev_free(void* impl, int32_t device, void* ptr) {
  (void)impl;
  (void)device;
  free(ptr);
  return OAR_OK;
}
static OarStatus copy(void* impl, int32_t device, void* dst, const void* src, uint64_t bytes) {
  (void)impl;
  (void)device;
  memcpy(dst, src, bytes);
  return OAR_OK;
}
static OarStatus sync_stream(void* impl, int32_t device, OarStream_t stream) {
  (void)impl;
  (void)device;
  (void)stream;
  return OAR_OK;
}

/* add for f32, contiguous inputs of the output's shape only. */
static OarStatus add_f32(const OarKernelContext* ctx) {
  int64_t n = 1, i;
  int32_t d;
  const float* a = (const float*)((const char*)ctx->inputs[0].data + ctx->inputs[0].byte_offset);
  const float* b = (const float*)((const char*)ctx->inputs[1].data + ctx->inputs[1].byte_offset);
  float* y = (float*)((char*)ctx->outputs[0].data + ctx->outputs[0].byte_offset);
  for (d = 0; d < ctx->outputs[0].ndim; ++d) n *= ctx->outputs[0].shape[d];
  for (i = 0; i < n; ++i) y[i] = a[i] + b[i];
  return OAR_OK;
}

#ifdef MODE_THREAD_FAILS
/* Keeps running the plugin's code after init failed: the host must not
 * unload the library under it. */
static volatile long ticks;
static void* keep_ticking(void* arg) {
  struct timespec ms = {0, 1000000};
  (void)arg;
  for (;;) {
    ++ticks;
    nanosleep(&ms, NULL);
  }
  return NULL;
}
#endif
#ifdef MODE_NEEDS_LIB
int oar_test_dep_answer(void); /* in liboar_test_dep.so, absent at run time */
#endif

#ifdef MODE_NO_ENTRY
#define ENTRY_NAME oar_plugin_init_misspelled
#else
#define ENTRY_NAME oar_plugin_init
#endif

OAR_PLUGIN_EXPORT OarStatus ENTRY_NAME(const OarHostApi* host, OarPluginInfo* info);

#ifdef MODE_SEGV
/* A real SIGSEGV also in sanitizer builds (scripts/run_sanitizers.sh), where
 * UBSan would otherwise report the null store and exit with status 1. */
__attribute__((no_sanitize("undefined"), no_sanitize_address)) static void crash_with_segv(void) {
  *(volatile int*)0 = 1;
}
#endif

OAR_PLUGIN_EXPORT OarStatus ENTRY_NAME(const OarHostApi* host, OarPluginInfo* info) {
  static OarDeviceApi api;
  static const int32_t f32x2[2] = {OAR_DTYPE_F32, OAR_DTYPE_F32};
  static const int32_t f32x1[1] = {OAR_DTYPE_F32};
  OarKernelDesc add;
  info->abi_major = OAR_ABI_VERSION_MAJOR;
  info->abi_minor = OAR_ABI_VERSION_MINOR;
  info->name = "minimal-" DEVICE_TYPE;
#ifdef MODE_WRONG_MAJOR
  info->abi_major = OAR_ABI_VERSION_MAJOR + 1;
#endif
#ifdef MODE_SEGV
  crash_with_segv();
#endif
#ifdef MODE_ABORT
  abort();
#endif
#ifdef MODE_EXIT
  exit(3);
#endif
#ifdef MODE_HANG
  {
    volatile int spin = 1;
    while (spin) {
    }
  }
#endif
#ifdef MODE_THREAD_FAILS
  {
    pthread_t thread;
    pthread_create(&thread, NULL, keep_ticking, NULL);
    pthread_detach(thread);
    host->set_error(host->host, OAR_ERROR_DEVICE, "minimal: init started a thread, then failed");
    return OAR_ERROR_DEVICE;
  }
#endif
#ifdef MODE_NEEDS_LIB
  if (oar_test_dep_answer() != 42) return OAR_ERROR_INTERNAL;
#endif
#ifdef MODE_INIT_FAILS
  host->set_error(host->host, OAR_ERROR_DEVICE, "minimal: init failed on purpose");
  return OAR_ERROR_DEVICE;
#endif
  memset(&api, 0, sizeof api);
  api.struct_size = sizeof api;
  api.device_type = DEVICE_TYPE;
  api.plugin_version = "0.0.1";
  api.priority = PRIORITY;
  api.device_count = count;
  api.device_properties = props;
  api.synchronize_device = sync_device;
  api.malloc = dev_malloc;
  api.free = dev_free;
  api.memcpy_h2d = copy;
  api.memcpy_d2h = copy;
  api.memcpy_d2d = copy;
  api.stream_synchronize = sync_stream;
  if (host->register_device(host->host, &api) != OAR_OK) return OAR_ERROR_INTERNAL;
  memset(&add, 0, sizeof add);
  add.struct_size = sizeof add;
  add.num_input_dtypes = 2;
  add.input_dtypes = f32x2;
  add.num_output_dtypes = 1;
  add.output_dtypes = f32x1;
  add.fn = add_f32;
  return host->register_kernel(host->host, DEVICE_TYPE, "add", &add);
}
