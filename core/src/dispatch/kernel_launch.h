// The one place kernels are chosen and launched, for eager mode
// (eager_builder.cpp) and static mode (core/ir/exec/): the views a kernel
// sees, the context it gets, the fall-through over declining kernels and
// the error sentences when nothing runs a problem.
//
// Note [Kernel fall-through]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// The implementations of one op on one device type form an ordered list
// (Note [Kernel overrides]: priority first, the device owner's reference
// kernels last among equals), as oneDNN's primitive implementation lists.
// A problem goes to the first implementation whose dtype signature matches
// and whose optional OarKernelDesc.accepts takes it (ABI 1.1): a kernel may
// decline shapes, strides or attributes it has no code for. When every
// matching implementation declines (or none matches), the op's
// decomposition runs; an op without one is an error naming the op, the
// device type, the dtypes and the shapes. Eager mode asks per call, with
// the real views; static mode asks once per planned input shapes, with
// views whose data pointers are NULL (the ABI allows that).
#pragma once

#include <span>
#include <string>

#include "oar/op.h"
#include "oar/tensor.h"
#include "oar/error.h"
#include "runtime/runtime_state.h"

namespace oar {

/// "f32, i64": the dtypes of a signature, for error messages.
std::string dtype_list(std::span<const DType> dtypes);

/// A kernel view of a contiguous tensor of `shape` with data NULL (set
/// data and byte_offset before launching); `ndim` above the rank pads
/// leading 1s exactly like make_view.
OarTensorView contiguous_view(const Shape& shape, DType dtype, int ndim = -1);

/// The one spot where an eager input becomes a kernel view (Note [Kernel
/// input views] in kernel_launch.cpp) for a kernel with `kernel_flags`:
/// leading 1s padded up to `rank` for broadcasting ops (-1: none). A
/// non-contiguous tensor is copied into `copy` (which must outlive the
/// launch) unless the kernel is flagged OAR_KERNEL_STRIDED.
OarTensorView kernel_input_view(const Tensor& t, int rank, uint32_t kernel_flags, Tensor& copy);

/// The context of one launch on `device` of `backend` on `stream`:
/// `views` holds the inputs, then the outputs. `attrs` and `op_name` must
/// outlive the launch.
OarKernelContext kernel_context(const DeviceBackend& backend, int device, OarStream_t stream,
                                OarTensorView* views, size_t num_inputs, size_t num_outputs,
                                const Attrs& attrs, const char* op_name);

/// The kernel that runs `problem` (Note [Kernel fall-through]): the first
/// implementation of `op_id` whose dtypes match and whose accepts takes
/// `problem`; nullptr when none does. `problem` may be null: then accepts
/// is not asked (the dtype signature decides alone).
const KernelEntry* select_kernel(const DeviceBackend& backend, int op_id, std::span<const DType> inputs,
                                 std::span<const DType> outputs, const OarKernelContext* problem);

/// The error when no kernel runs a problem and the op has no decomposition:
/// "<op>: device type '<type>' has no kernel for dtypes (...) -> (...)"
/// with the reason (other dtypes only, or the implementations that
/// declined the shapes of `problem`).
Error no_kernel_error(const DeviceBackend& backend, const std::string& op_name, int op_id,
                      std::span<const DType> inputs, std::span<const DType> outputs,
                      const OarKernelContext* problem);

/// Runs `kernel` on `ctx` for a device of `backend` (named as the launch's
/// device for scratch memory: Note [Kernel scratch memory] in host_api.cpp);
/// throws the plugin's error with the code it set (Note [Error codes from
/// plugins]), or a sentence naming the op, the device type and the status.
/// `stream` is the index of ctx.stream on the device, for the trace
/// (Note [Trace recorder] in core/src/runtime/profiler.cpp).
void launch_kernel(DeviceBackend& backend, const KernelEntry& kernel, const OarKernelContext& ctx,
                   int stream = 0);

}  // namespace oar
