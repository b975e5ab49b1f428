// faulty_template_plugin.cpp — the template plugin with one planted fault,
// for oar's own tests of the conformance suite (never a starting point: copy
// sdk/template/template_plugin.cpp, which has no faults).
//
// tests/conformance/CMakeLists.txt builds this file once per fault macro and
// expects oar-conformance to fail the named check:
//   TEMPLATE_FAULT_KERNEL_OFF_BY_ONE  add leaves its last output element unwritten
//   TEMPLATE_FAULT_STREAM_ORDER       memcpy_d2h_async runs before queued work
//   TEMPLATE_FAULT_ABI_VERSION        reports ABI major + 1
//   TEMPLATE_FAULT_NO_OOM             malloc ignores the capacity
//   TEMPLATE_FAULT_BYTE_OFFSET        binary kernels ignore views' byte_offset
//
// Note [Faults around the template]
// The template source is compiled here unchanged, with its entry point
// renamed, so the fault plugins test the very code vendors copy. The faults
// sit between the template and the host: this file's oar_plugin_init hands
// the template a copy of the host table whose register_device and
// register_kernel swap a device-table entry or wrap a kernel before passing
// the registration on. Being in the template's translation unit, the
// wrappers may use its internals (g_state, wait_for_stream, dev_malloc).
#define oar_plugin_init template_plugin_init
#include "template_plugin.cpp"
#undef oar_plugin_init

#include <array>
#include <utility>

#if defined(TEMPLATE_FAULT_KERNEL_OFF_BY_ONE) + defined(TEMPLATE_FAULT_STREAM_ORDER) + \
        defined(TEMPLATE_FAULT_ABI_VERSION) + defined(TEMPLATE_FAULT_NO_OOM) +          \
        defined(TEMPLATE_FAULT_BYTE_OFFSET) !=                                          \
    1
#error "define exactly one TEMPLATE_FAULT_* macro"
#endif

namespace {

const OarHostApi* g_real_host = nullptr;  // not owned
OarHostApi g_fault_host;                  // what the template registers through

// ---------------------------------------------------------------------------
// Kernel faults: `faulty_kernel` runs around the template's kernel `real`.
// ---------------------------------------------------------------------------

#if defined(TEMPLATE_FAULT_KERNEL_OFF_BY_ONE)
bool fault_applies(const char* op) { return std::strcmp(op, "add") == 0; }
// Runs add, then puts back what the last output element held before: the
// element is left unwritten.
OarStatus faulty_kernel(OarKernelFn real, const OarKernelContext* ctx) {
  wait_for_stream(*ctx);  // what is queued first may write the output too
  const OarTensorView& y = ctx->outputs[0];
  const int64_t n = op::numel(y);
  const size_t size = oar_dtype_size(y.dtype);
  unsigned char last[8];
  char* p = op::data<char>(y) + (n - 1) * static_cast<int64_t>(size);
  if (n > 0) std::memcpy(last, p, size);
  OarStatus status = real(ctx);
  if (n > 0) std::memcpy(p, last, size);
  return status;
}
#elif defined(TEMPLATE_FAULT_BYTE_OFFSET)
bool fault_applies(const char* op) {
  for (const char* name : {"add", "sub", "mul", "div", "matmul"})
    if (std::strcmp(op, name) == 0) return true;
  return false;
}
// Runs the kernel on views whose byte_offset is dropped: a view that starts
// inside its block (static mode's arena) is read and written at the block's
// start.
OarStatus faulty_kernel(OarKernelFn real, const OarKernelContext* ctx) {
  OarKernelContext c;
  std::memset(&c, 0, sizeof c);
  std::memcpy(&c, ctx, std::min(ctx->struct_size, sizeof c));
  std::vector<OarTensorView> in(ctx->inputs, ctx->inputs + ctx->num_inputs);
  std::vector<OarTensorView> out(ctx->outputs, ctx->outputs + ctx->num_outputs);
  for (auto& v : in) v.byte_offset = 0;
  for (auto& v : out) v.byte_offset = 0;
  c.inputs = in.data();
  c.outputs = out.data();
  return real(&c);
}
#else
bool fault_applies(const char*) { return false; }
OarStatus faulty_kernel(OarKernelFn real, const OarKernelContext* ctx) { return real(ctx); }
#endif

// One wrapper per registration slot, each calling faulty_kernel with the
// template kernel registered in its slot.
constexpr int kSlots = 32;
OarKernelFn g_real_kernels[kSlots];
int g_used_slots = 0;
template <int I>
OarStatus slot_kernel(const OarKernelContext* ctx) {
  return faulty_kernel(g_real_kernels[I], ctx);
}
template <int... I>
constexpr std::array<OarKernelFn, kSlots> make_slots(std::integer_sequence<int, I...>) {
  return {&slot_kernel<I>...};
}
constexpr std::array<OarKernelFn, kSlots> kSlotKernels =
    make_slots(std::make_integer_sequence<int, kSlots>{});

OarStatus register_kernel_with_fault(void* host, const char* device_type, const char* op_name,
                                     const OarKernelDesc* desc) {
  if (!fault_applies(op_name))
    return g_real_host->register_kernel(host, device_type, op_name, desc);
  if (g_used_slots == kSlots)
    return fail(OAR_ERROR_INTERNAL, "faulty template: more faulty kernels than slots");
  OarKernelDesc wrapped = *desc;
  g_real_kernels[g_used_slots] = desc->fn;
  wrapped.fn = kSlotKernels[static_cast<size_t>(g_used_slots++)];
  return g_real_host->register_kernel(host, device_type, op_name, &wrapped);
}

// ---------------------------------------------------------------------------
// Device-table faults
// ---------------------------------------------------------------------------

#if defined(TEMPLATE_FAULT_STREAM_ORDER)
// Copies at once, ignoring the work queued on the stream before it.
OarStatus d2h_now(void*, int32_t device, void* dst, const void* src, uint64_t bytes,
                  OarStream_t) {
  CHECK_DEVICE(device, "memcpy_d2h_async");
  std::memmove(dst, src, bytes);
  return OAR_OK;
}
#elif defined(TEMPLATE_FAULT_NO_OOM)
// Grows the device instead of reporting OUT_OF_MEMORY past the capacity.
OarStatus malloc_past_capacity(void* impl, int32_t device, uint64_t bytes, uint64_t alignment,
                               void** ptr) {
  if (valid_device(device)) {
    std::lock_guard<std::recursive_mutex> lock(g_state->mu);
    Device& dev = g_state->devices[device];
    if (bytes > dev.capacity - dev.used) dev.capacity = dev.used + bytes;
  }
  return dev_malloc(impl, device, bytes, alignment, ptr);
}
#endif

OarStatus register_device_with_fault(void* host, const OarDeviceApi* api) {
  OarDeviceApi faulty = *api;
#if defined(TEMPLATE_FAULT_STREAM_ORDER)
  faulty.memcpy_d2h_async = d2h_now;
#elif defined(TEMPLATE_FAULT_NO_OOM)
  faulty.malloc = malloc_past_capacity;
#endif
  return g_real_host->register_device(host, &faulty);
}

}  // namespace

extern "C" OAR_PLUGIN_EXPORT OarStatus oar_plugin_init(const OarHostApi* host,
                                                       OarPluginInfo* info) {
  if (!host) return OAR_ERROR_INVALID_ARGUMENT;
  g_real_host = host;
  std::memset(&g_fault_host, 0, sizeof g_fault_host);
  std::memcpy(&g_fault_host, host, std::min(host->struct_size, sizeof g_fault_host));
  g_fault_host.register_device = register_device_with_fault;
  g_fault_host.register_kernel = register_kernel_with_fault;
  g_used_slots = 0;
  OarStatus status = template_plugin_init(&g_fault_host, info);
#if defined(TEMPLATE_FAULT_ABI_VERSION)
  if (info) info->abi_major = OAR_ABI_VERSION_MAJOR + 1;  // claims an ABI it was not built for
#endif
  return status;
}
