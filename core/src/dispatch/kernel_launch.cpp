// Kernel choice and launch shared by eager and static mode (Note [Kernel
// fall-through] in kernel_launch.h).
#include "dispatch/kernel_launch.h"

#include "dispatch/device_context.h"
#include "oar/profiler.h"
#include "tensor/view.h"

#include <algorithm>
#include <cstdint>

namespace oar {

std::string dtype_list(std::span<const DType> dtypes) {
  std::string out;
  for (size_t i = 0; i < dtypes.size(); ++i) out += (i ? ", " : "") + std::string(dtype_name(dtypes[i]));
  return out;
}

OarTensorView contiguous_view(const Shape& shape, DType dtype, int ndim) {
  int own = static_cast<int>(shape.size());
  if (ndim < own) ndim = own;
  OarTensorView v{};
  v.struct_size = sizeof v;
  v.dtype = static_cast<int32_t>(dtype);
  v.ndim = ndim;
  int pad = ndim - own;
  int64_t stride = 1;
  for (int i = own - 1; i >= 0; --i) {
    v.shape[pad + i] = shape[static_cast<size_t>(i)];
    v.strides[pad + i] = stride;
    // Saturates like contiguous_strides (only a tensor without elements can overflow).
    if (__builtin_mul_overflow(stride, std::max<int64_t>(shape[static_cast<size_t>(i)], 1), &stride))
      stride = INT64_MAX;
  }
  for (int i = 0; i < pad; ++i) {
    v.shape[i] = 1;
    v.strides[i] = std::max<int64_t>(shape_numel(shape), 1);
  }
  return v;
}

// Note [Kernel input views]
// Every eager kernel input passes through kernel_input_view once the
// kernel is chosen: a kernel flagged OAR_KERNEL_STRIDED receives the view
// itself (strides, byte offset, stride 0 for broadcasts: Note [Views] in
// core/src/tensor/view.cpp), any other a dense row-major copy made by the
// host. An `accepts` query runs before that choice and so sees the inputs
// as they are; a kernel not flagged strided gets the same shapes and dtypes
// contiguous. Static-mode operands are planned contiguous (contiguous_view).
OarTensorView kernel_input_view(const Tensor& t, int rank, uint32_t kernel_flags, Tensor& copy) {
  if (kernel_takes_as_is(t, kernel_flags)) return make_view(t, rank);
  copy = kernel_input(t, kernel_flags);
  return make_view(copy, rank);
}

OarKernelContext kernel_context(const DeviceBackend& backend, int device, OarStream_t stream,
                                OarTensorView* views, size_t num_inputs, size_t num_outputs,
                                const Attrs& attrs, const char* op_name) {
  OarKernelContext ctx{};
  ctx.struct_size = sizeof ctx;
  ctx.device = device;
  ctx.stream = stream;
  ctx.num_inputs = static_cast<int32_t>(num_inputs);
  ctx.inputs = views;
  ctx.num_outputs = static_cast<int32_t>(num_outputs);
  ctx.outputs = views + num_inputs;
  ctx.attrs = attrs_handle(attrs);
  ctx.op_name = op_name;
  ctx.device_type = backend.type.c_str();
  return ctx;
}

const KernelEntry* select_kernel(const DeviceBackend& backend, int op_id, std::span<const DType> inputs,
                                 std::span<const DType> outputs, const OarKernelContext* problem) {
  if (!backend.has_kernel(op_id)) return nullptr;
  for (const auto& k : backend.kernels_by_op[static_cast<size_t>(op_id)]) {
    if (!k.matches(inputs, outputs)) continue;
    if (problem && k.accepts && k.accepts(problem) == 0) continue;  // declined: try the next
    return &k;
  }
  return nullptr;
}

namespace {

std::string view_shape(const OarTensorView& v) {
  std::string out = "[";
  for (int32_t d = 0; d < v.ndim; ++d) out += (d ? ", " : "") + std::to_string(v.shape[d]);
  return out + "]";
}

std::string shape_list(const OarTensorView* views, int32_t n) {
  std::string out;
  for (int32_t i = 0; i < n; ++i) out += (i ? ", " : "") + view_shape(views[i]);
  return out;
}

std::string file_name(const std::string& path) { return path.substr(path.rfind('/') + 1); }

}  // namespace

Error no_kernel_error(const DeviceBackend& backend, const std::string& op_name, int op_id,
                      std::span<const DType> inputs, std::span<const DType> outputs,
                      const OarKernelContext* problem) {
  std::string head = op_name + ": device type '" + backend.type + "' has no kernel for dtypes (" +
                     dtype_list(inputs) + ") -> (" + dtype_list(outputs) + ")";
  std::vector<std::string> declined;
  if (backend.has_kernel(op_id)) {
    for (const auto& k : backend.kernels_by_op[static_cast<size_t>(op_id)]) {
      if (k.matches(inputs, outputs) && std::find(declined.begin(), declined.end(), k.provider) == declined.end())
        declined.push_back(k.provider);
    }
  }
  if (declined.empty()) {
    return Error(ErrorCode::unsupported,
                 head + (backend.has_kernel(op_id) ? "; it has kernels for other dtypes" : ""));
  }
  std::string who;
  for (const auto& p : declined) who += (who.empty() ? "'" : ", '") + file_name(p) + "'";
  std::string shapes = problem ? "shapes (" + shape_list(problem->inputs, problem->num_inputs) + ") -> (" +
                                     shape_list(problem->outputs, problem->num_outputs) + ")"
                               : "this problem";
  return Error(ErrorCode::unsupported, head + " that accepts " + shapes + ": the implementations of " + who +
                                           " declined it and the op has no decomposition");
}

void launch_kernel(DeviceBackend& backend, const KernelEntry& kernel, const OarKernelContext& ctx, int stream) {
  profiler::RecordEvent traced;  // Note [Trace recorder]
  if (profiler::recording())
    traced.begin(ctx.op_name, "Kernel", std::string(ctx.device_type) + ":" + std::to_string(ctx.device), stream);
  host_clear_error();
  OarStatus status;
  {
    LaunchScope scope(backend, ctx.device);  // Note [Kernel scratch memory]
    status = kernel.fn(&ctx);
  }
  if (status != OAR_OK) {
    PluginFailure failure = host_take_failure(status);  // Note [Error codes from plugins]
    throw Error(failure.code, failure.message.empty() ? std::string(ctx.op_name) + ": the " + ctx.device_type +
                                                            " kernel failed with status " + std::to_string(status)
                                                      : failure.message);
  }
}

}  // namespace oar
