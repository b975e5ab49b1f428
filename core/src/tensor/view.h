// Eager strided views (Note [Views] in view.cpp): the rules that make
// transpose, slice, broadcast_to, diagonal and reshape outputs share their
// input's storage, and the host-side copy that makes a view contiguous.
#pragma once

#include <cstdint>
#include <vector>

#include "oar/op.h"
#include "oar/tensor.h"

namespace oar {

struct DeviceBackend;
struct KernelEntry;

/// Makes `op`'s output a view of `x` in eager mode: returns a tensor over
/// x's storage with the shape `out` (from the meta rule), or an undefined
/// Tensor when the op cannot be a view for these attributes (a negative
/// slice step): the dispatcher then runs the op's kernel.
using ViewRule = Tensor (*)(const Tensor& x, const Attrs& attrs, const TensorMeta& out);

/// The view rule of `op`, or nullptr when `op` always runs a kernel.
ViewRule eager_view_rule(const OpDef& op);

/// What a kernel with `kernel_flags` receives for the input `t`: `t` itself
/// when the kernel is flagged OAR_KERNEL_STRIDED, else a contiguous tensor
/// with row-major strides (a copy when `t` is a strided view).
Tensor kernel_input(const Tensor& t, uint32_t kernel_flags);
/// True when kernel_input(t, kernel_flags) is `t` itself (the common case,
/// checked without allocating).
bool kernel_takes_as_is(const Tensor& t, uint32_t kernel_flags);

/// A contiguous copy of a non-contiguous `t` on its device, made with the
/// device's `copy` kernel when it is flagged OAR_KERNEL_STRIDED, else staged
/// through host memory. No autograd history.
Tensor materialize_contiguous(const Tensor& t);

/// Runs the device's `copy` kernel from `src` to `dst`, each passed with its
/// own strides and byte offset (the kernel must be flagged for them:
/// OAR_KERNEL_STRIDED for a strided `src`, OAR_KERNEL_STRIDED_OUTPUT for a
/// strided `dst`). Throws naming the device when the kernel fails.
void launch_copy(DeviceBackend& backend, const KernelEntry& kernel, const Tensor& src, const Tensor& dst);

/// The block of storage a strided view reaches, as a 1-D contiguous tensor
/// over the same memory (no history, not a view), and the element offset of
/// the view's element 0 in it: what the host-side copies move.
struct ViewSpan {
  Tensor block;
  int64_t first;
};
ViewSpan view_span(const Tensor& view);

/// Calls fn(i, at) for the elements of a view with `shape` and `strides` in
/// row-major order: i counts them, `at` is the element offset from the
/// view's element 0 (an odometer over the index).
template <typename Fn>
void for_each_view_offset(const Shape& shape, const Shape& strides, Fn&& fn) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<int64_t> index(shape.size(), 0);
  int64_t at = 0;
  for (int64_t i = 0; i < n; ++i) {
    fn(i, at);
    for (size_t d = shape.size(); d-- > 0;) {
      at += strides[d];
      if (++index[d] < shape[d]) break;
      at -= index[d] * strides[d];
      index[d] = 0;
    }
  }
}

}  // namespace oar
