// In-place writes: Tensor::assign_ (copy into a tensor's own, possibly
// strided, memory) and the storage version counter autograd checks.
#include <algorithm>
#include <array>
#include <cstring>

#include "dispatch/device_context.h"
#include "oar/autograd.h"
#include "oar/ops.h"
#include "oar/runtime.h"
#include "tensor/view.h"

namespace oar {

// Note [In-place writes]
// Tensor::assign_(src) is the one core primitive that writes into an
// existing tensor: src is broadcast to the destination's shape (a stride-0
// view, no copy) and cast to its dtype, then the device's `copy` kernel runs
// with the destination's own view (strides, byte offset) as its output. A
// kernel flagged OAR_KERNEL_STRIDED_OUTPUT (mock, cpu) writes a strided
// destination directly; for other kernels a contiguous destination is an
// ordinary output, and a strided one is written through host memory: the
// block of storage the destination reaches goes down, the values are placed
// in it, and the block goes back up through the copy kernel (contiguous
// output). A source sharing the destination's storage (x[1:] = x[:-1]) is
// copied first, so no element is read after it was overwritten.
//
// Everything else that writes in place is composed in the frontend: x[idx]
// = v computes the written tensor out of place (where/scatter over the flat
// positions, differentiable in x and v) and assigns it, and each `*_`
// method assigns the result of its out-of-place op. Autograd then takes
// the new history: the written handle becomes `with_history(x, result)`,
// x's memory with the result's node (frontends/python/oar/inplace.py).
//
// Note [Version counter]
// Each Storage counts the writes into it (assign_ bumps it). A node saves
// the version of every tensor it saves (Note [Saved tensors] in
// engine.cpp); when its VJP runs, a saved tensor whose storage moved on is
// replaced by a copy marked `overwritten`, and any op given such a tensor
// throws the sentence PyTorch and Paddle use ("one of the variables needed
// for gradient computation has been modified by an inplace operation: exp
// saved version 0, now 1"): a rule that reads only shapes still runs, one
// that reads the values fails instead of giving a wrong gradient. A
// non-leaf's history is stamped with its storage's version when attached
// (TensorImpl::history_version); a tensor whose memory was written through
// another handle since (its base or a view of it) no longer matches its
// history, and recording an op on it is an error naming the op that made
// it (the handle that was written carries the new history and is fine).

uint64_t Tensor::version() const {
  const auto& storage = impl().storage;
  return storage ? storage->version() : 0;
}

namespace {

// The host-side write for a device whose copy kernel cannot write a strided
// destination, or that has no copy kernel: `src` has dst's shape and dtype.
void assign_through_host(DeviceBackend& backend, const Tensor& dst, const Tensor& src) {
  const TensorImpl& im = dst.impl();
  const auto elem = static_cast<size_t>(dtype_size(im.dtype));
  const ViewSpan span = view_span(dst);
  const Tensor& block = span.block;
  std::vector<char> host(static_cast<size_t>(block.numel()) * elem);
  block.copy_to_host(host.data());
  std::vector<char> dense(static_cast<size_t>(src.numel()) * elem);
  src.copy_to_host(dense.data());
  for_each_view_offset(im.shape, im.strides, [&](int64_t i, int64_t at) {
    std::memcpy(host.data() + static_cast<size_t>(span.first + at) * elem, dense.data() + static_cast<size_t>(i) * elem,
                elem);
  });
  // The span goes back with the device's host-to-device copy (every plugin
  // has one), so a device without a copy kernel writes views too.
  void* at_device = static_cast<char*>(im.storage->data()) + block.byte_offset();
  const uint64_t bytes = host.size();
  host_clear_error();
  sync_compute_stream(backend, im.device.index);  // queued kernels may still use the span
  backend.check(backend.api.memcpy_h2d(backend.api.impl, im.device.index, at_device, host.data(), bytes),
                "memcpy_h2d");
}

// True when every dim of `shape_from` broadcasts to `shape_to`.
bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const size_t pad = to.size() - from.size();
  for (size_t d = 0; d < from.size(); ++d)
    if (from[d] != 1 && from[d] != to[pad + d]) return false;
  return true;
}

}  // namespace

void Tensor::assign_(const Tensor& value) const {
  const TensorImpl& im = impl();
  OAR_CHECK_ARG(value.defined(), "assign_: the value to write is undefined");
  OAR_CHECK_ARG(!im.symbol && !value.is_symbolic(),
                "assign_: in-place writes run eagerly; a symbolic tensor of a to_static trace has no memory");
  OAR_CHECK_ARG(!im.dist && !value.impl().dist,
                "assign_: in-place writes into distributed tensors are not supported; write the local piece");
  OAR_CHECK_ARG(broadcasts_to(value.shape(), im.shape),
                "assign_: the value has shape " + shape_str(value.shape()) +
                    ", which does not broadcast to the destination's shape " + shape_str(im.shape));
  for (size_t d = 0; d < im.shape.size(); ++d)
    OAR_CHECK_ARG(im.strides[d] != 0 || im.shape[d] <= 1,
                  "assign_: the destination is a broadcast view (a dim of stride 0, made by expand or "
                  "broadcast_to): several of its elements share one memory location; write a copy instead");
  Tensor src = value.detach();
  {
    NoGrad no_grad;
    if (!(src.device() == im.device)) src = src.to(im.device);
    if (src.dtype() != im.dtype) src = cast(src, im.dtype);
    if (src.shape() != im.shape) src = broadcast_to(src, im.shape);
  }
  if (numel() == 0 || !im.storage) return;
  // A source over the destination's memory is copied before any element is written.
  if (src.impl().storage == im.storage) src = materialize_contiguous(src);
  DeviceBackend& backend = backend_of(im.device);
  static const int copy_id = OpRegistry::instance().get("copy").id;
  const DType dtype = im.dtype;
  const KernelEntry* kernel = backend.find_kernel(copy_id, {&dtype, 1}, {&dtype, 1});
  if (kernel == nullptr) {  // no copy kernel (an ABI 1.0 plugin, say): the host writes the span
    assign_through_host(backend, *this, src);
    im.storage->bump_version();
    return;
  }
  src = kernel_input(src, kernel->flags);
  if (kernel_takes_as_is(*this, kernel->flags & OAR_KERNEL_STRIDED_OUTPUT ? OAR_KERNEL_STRIDED : 0)) {
    launch_copy(backend, *kernel, src, *this);
  } else if (is_contiguous()) {  // contiguous but for the strides of size-1 dims
    auto dense = std::make_shared<TensorImpl>(im);
    dense->strides = contiguous_strides(im.shape);
    launch_copy(backend, *kernel, src, Tensor(std::move(dense)));
  } else {
    assign_through_host(backend, *this, src);
  }
  im.storage->bump_version();
}

}  // namespace oar
