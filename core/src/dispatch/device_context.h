// Helpers the tensor and dispatcher code share: the backend and compute
// stream of a device, allocation, and stream synchronization.
#pragma once

#include "oar/tensor.h"
#include "runtime/runtime_state.h"

namespace oar {

/// The backend of a device of the global runtime; throws when absent.
DeviceBackend& backend_of(const Device& device);
/// A new contiguous tensor with uninitialized memory.
Tensor allocate_tensor(const Shape& shape, DType dtype, const Device& device);
/// Waits for the device's compute stream.
void sync_compute_stream(DeviceBackend& backend, int device);
/// A kernel view of a contiguous tensor; `ndim` > dim() pads leading 1s.
OarTensorView make_view(const Tensor& t, int ndim = -1);

}  // namespace oar
