// Eager strided views: transpose, slice, broadcast_to, diagonal and reshape
// as metadata over their input's storage, and the copy that makes a view
// contiguous for kernels that need it.
#include "tensor/view.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "dispatch/device_context.h"
#include "oar/runtime.h"

namespace oar {

// Note [Views]
// In eager mode transpose, slice (every step > 0), broadcast_to (and so
// expand) and diagonal return views: a new TensorImpl sharing the input's
// Storage with its own shape, strides (in elements) and byte_offset, as
// PyTorch and Paddle 3 do. reshape (squeeze, unsqueeze, flatten) is a view
// whenever the strides allow one (the rule of PyTorch's computeStride) and
// copies otherwise. The view rules below run in EagerBuilder::apply where
// OpKind::view ops used to get contiguous strides; the op is still recorded
// for autograd as itself, so the VJPs are the ops' own: transpose for
// transpose, a scatter into zeros for slice, sum_to for broadcast_to, a
// diag-embed (scatter into the flattened matrix) for diagonal.
//
// Kernels: a kernel registered with OAR_KERNEL_STRIDED receives a view as
// is (shape, strides, byte_offset; broadcast dims have stride 0); any other
// kernel receives a contiguous copy made by materialize_contiguous
// (kernel_input). A contiguous tensor may still have a byte_offset (a slice
// along dim 0): every kernel honours byte_offset (the executor's arena
// needs it too). is_contiguous ignores the strides of size-1 dims, so
// kernel_input hands non-strided kernels canonical row-major strides.
//
// Writes: Tensor::assign_ writes into a tensor's own memory through its
// strides, so a view and its base see each other's writes (Note [In-place
// writes] in inplace.cpp); every view is marked with the op that made it
// (Tensor::view_op(), reshape included).
//
// Static mode (IR programs, to_static) keeps materializing: these ops are
// ordinary kernels there (diagonal a decomposition into transpose, reshape
// and gather), the memory planner aliases only OpKind::view ops (reshape),
// and the executor makes program inputs and parameters contiguous.
//
// Reading: copy_to_host and to() of a view go through
// materialize_contiguous; on cpu, numpy() and DLPack export share the view's
// memory with its strides (Note [numpy views] in
// frontends/python/src/tensor.cpp), and DLPack import takes any
// non-negative strides. Collectives (distributed.cpp) need flat memory and
// refuse a strided view with a sentence. A gradient may itself be a view
// (the VJP of transpose is a transpose): nothing writes gradients in place.

namespace {

// A tensor over x's storage; `byte_offset` is absolute.
Tensor view_of(const Tensor& x, const TensorMeta& out, Shape strides, int64_t byte_offset, const char* op) {
  auto impl = std::make_shared<TensorImpl>(x.impl());
  impl->autograd = nullptr;
  impl->shape = out.shape;
  impl->strides = std::move(strides);
  impl->byte_offset = byte_offset;
  if (op) impl->view_op = op;
  return Tensor(std::move(impl));
}

// Strides that let `shape` view memory laid out as (old_shape, old_strides)
// in the same row-major order, or nullopt when no such strides exist
// (PyTorch's computeStride): dims are grouped into chunks that are
// contiguous among themselves, and each chunk must be re-split exactly.
std::optional<Shape> reshape_strides(const Shape& old_shape, const Shape& old_strides, const Shape& shape) {
  if (shape_numel(old_shape) == 0 || old_shape.empty()) return contiguous_strides(shape);
  Shape strides(shape.size());
  auto view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (auto tensor_d = static_cast<int64_t>(old_shape.size()) - 1; tensor_d >= 0; --tensor_d) {
    auto td = static_cast<size_t>(tensor_d);
    tensor_numel *= old_shape[td];
    bool chunk_ends = tensor_d == 0 || (old_shape[td - 1] != 1 && old_strides[td - 1] != tensor_numel * chunk_base_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || shape[static_cast<size_t>(view_d)] == 1)) {
      strides[static_cast<size_t>(view_d)] = view_numel * chunk_base_stride;
      view_numel *= shape[static_cast<size_t>(view_d)];
      --view_d;
    }
    if (view_numel != tensor_numel) return std::nullopt;
    if (tensor_d > 0) {
      chunk_base_stride = old_strides[td - 1];
      tensor_numel = 1;
      view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return strides;
}

Tensor reshape_view(const Tensor& x, const Attrs&, const TensorMeta& out) {
  if (x.is_contiguous()) return view_of(x, out, contiguous_strides(out.shape), x.impl().byte_offset, "reshape");
  if (auto strides = reshape_strides(x.shape(), x.strides(), out.shape))
    return view_of(x, out, std::move(*strides), x.impl().byte_offset, "reshape");
  Tensor dense = materialize_contiguous(x);  // a copy: not a view of x
  return view_of(dense, out, contiguous_strides(out.shape), dense.impl().byte_offset, nullptr);
}

Tensor transpose_view(const Tensor& x, const Attrs& attrs, const TensorMeta& out) {
  const auto& perm = attrs.get_ints("perm");
  Shape strides;
  for (int64_t p : perm) strides.push_back(x.strides()[static_cast<size_t>(p)]);
  return view_of(x, out, std::move(strides), x.impl().byte_offset, "transpose");
}

Tensor slice_view(const Tensor& x, const Attrs& attrs, const TensorMeta& out) {
  const auto& starts = attrs.get_ints("starts");
  const auto& steps = attrs.get_ints("steps");
  if (std::any_of(steps.begin(), steps.end(), [](int64_t s) { return s <= 0; })) return Tensor();
  Shape strides = x.strides();
  int64_t offset = x.impl().byte_offset;
  const auto elem = static_cast<int64_t>(dtype_size(x.dtype()));
  for (size_t d = 0; d < strides.size(); ++d) {
    if (out.shape[d] > 0) offset += starts[d] * strides[d] * elem;  // an empty dim selects no element
    strides[d] *= steps[d];
  }
  return view_of(x, out, std::move(strides), offset, "slice");
}

Tensor broadcast_to_view(const Tensor& x, const Attrs&, const TensorMeta& out) {
  const size_t pad = out.shape.size() - x.shape().size();
  Shape strides(out.shape.size(), 0);
  for (size_t d = 0; d < x.shape().size(); ++d)
    strides[pad + d] = x.shape()[d] == out.shape[pad + d] ? x.strides()[d] : 0;
  return view_of(x, out, std::move(strides), x.impl().byte_offset, "broadcast_to");
}

Tensor diagonal_view(const Tensor& x, const Attrs& attrs, const TensorMeta& out) {
  const int64_t offset = attrs.get_int("offset");
  const auto a1 = static_cast<size_t>(attrs.get_int("axis1"));
  const auto a2 = static_cast<size_t>(attrs.get_int("axis2"));
  Shape strides;
  for (size_t d = 0; d < x.shape().size(); ++d)
    if (d != a1 && d != a2) strides.push_back(x.strides()[d]);
  strides.push_back(x.strides()[a1] + x.strides()[a2]);
  int64_t first = offset >= 0 ? offset * x.strides()[a2] : -offset * x.strides()[a1];
  if (out.shape.back() == 0) first = 0;  // no element: the start may lie past the end
  int64_t bytes = x.impl().byte_offset + first * static_cast<int64_t>(dtype_size(x.dtype()));
  return view_of(x, out, std::move(strides), bytes, "diagonal");
}

struct RuleTable {
  std::vector<ViewRule> by_id;
  RuleTable() {
    const OpRegistry& reg = OpRegistry::instance();
    by_id.assign(reg.size(), nullptr);
    auto set = [&](const char* name, ViewRule rule) {
      if (const OpDef* op = reg.find(name)) by_id[static_cast<size_t>(op->id)] = rule;
    };
    set("reshape", reshape_view);
    set("transpose", transpose_view);
    set("slice", slice_view);
    set("broadcast_to", broadcast_to_view);
    set("diagonal", diagonal_view);
  }
};

// A contiguous copy of `src` (any strides) made through host
// memory: the block of storage the view reaches goes down, is gathered in
// row-major order on the host and goes back up.
Tensor copy_through_host(const Tensor& src) {
  const TensorImpl& im = src.impl();
  const auto elem = static_cast<size_t>(dtype_size(im.dtype));
  ViewSpan span = view_span(src);
  std::vector<char> block(static_cast<size_t>(span.block.numel()) * elem);
  span.block.copy_to_host(block.data());
  std::vector<char> dense(static_cast<size_t>(src.numel()) * elem);
  for_each_view_offset(im.shape, im.strides, [&](int64_t i, int64_t at) {
    std::memcpy(dense.data() + static_cast<size_t>(i) * elem, block.data() + static_cast<size_t>(span.first + at) * elem,
                elem);
  });
  return Tensor::from_host(dense.data(), im.shape, im.dtype, im.device);
}

}  // namespace

ViewSpan view_span(const Tensor& view) {
  const TensorImpl& im = view.impl();
  int64_t lowest = 0, highest = 0;
  for (size_t d = 0; d < im.shape.size(); ++d) {
    int64_t reach = (im.shape[d] - 1) * im.strides[d];
    (reach < 0 ? lowest : highest) += reach;
  }
  auto span = std::make_shared<TensorImpl>(im);
  span->autograd = nullptr;
  span->view_op = nullptr;
  span->shape = {highest - lowest + 1};
  span->strides = {1};
  span->byte_offset = im.byte_offset + lowest * static_cast<int64_t>(dtype_size(im.dtype));
  return {Tensor(std::move(span)), -lowest};
}

void launch_copy(DeviceBackend& backend, const KernelEntry& kernel, const Tensor& src, const Tensor& dst) {
  static const Attrs no_attrs;
  OarTensorView in = make_view(src), out = make_view(dst);
  OarKernelContext ctx{};
  ctx.struct_size = sizeof ctx;
  ctx.device = dst.device().index;
  ctx.stream = backend.slot(ctx.device).stream;
  ctx.num_inputs = 1;
  ctx.inputs = &in;
  ctx.num_outputs = 1;
  ctx.outputs = &out;
  ctx.attrs = attrs_handle(no_attrs);
  ctx.op_name = "copy";
  ctx.device_type = backend.type.c_str();
  host_clear_error();
  OarStatus status = kernel.fn(&ctx);
  if (status != OAR_OK) {
    std::string message = host_take_error();
    throw Error(static_cast<ErrorCode>(status),
                "contiguous: the " + backend.type + " copy kernel failed to copy a strided tensor of shape " +
                    shape_str(src.shape()) + (message.empty() ? "" : ": " + message));
  }
}

ViewRule eager_view_rule(const OpDef& op) {
  static const RuleTable table;
  auto id = static_cast<size_t>(op.id);
  return id < table.by_id.size() ? table.by_id[id] : nullptr;
}

bool kernel_takes_as_is(const Tensor& t, uint32_t kernel_flags) {
  if (kernel_flags & OAR_KERNEL_STRIDED) return true;
  const TensorImpl& im = t.impl();
  int64_t expected = 1;
  for (size_t d = im.shape.size(); d-- > 0;) {
    if (im.strides[d] != expected) return false;
    expected *= std::max<int64_t>(im.shape[d], 1);
  }
  return true;
}

Tensor kernel_input(const Tensor& t, uint32_t kernel_flags) {
  if (kernel_takes_as_is(t, kernel_flags)) return t;
  if (!t.is_contiguous()) return materialize_contiguous(t);
  // Contiguous but for the strides of size-1 dims: give them their row-major values.
  auto impl = std::make_shared<TensorImpl>(t.impl());
  impl->strides = contiguous_strides(impl->shape);
  return Tensor(std::move(impl));
}

Tensor materialize_contiguous(const Tensor& t) {
  const TensorImpl& im = t.impl();
  OAR_CHECK_ARG(!im.symbol, "contiguous: this is a symbolic tensor of a to_static trace; it has no memory to copy");
  if (t.numel() == 0) return allocate_tensor(im.shape, im.dtype, im.device);
  DeviceBackend& backend = backend_of(im.device);
  static const int copy_id = OpRegistry::instance().get("copy").id;
  const DType dtype = im.dtype;
  const KernelEntry* kernel = backend.find_kernel(copy_id, {&dtype, 1}, {&dtype, 1});
  if (!kernel || !(kernel->flags & OAR_KERNEL_STRIDED)) return copy_through_host(t);
  Tensor out = allocate_tensor(im.shape, im.dtype, im.device);
  launch_copy(backend, *kernel, t, out);
  return out;
}

}  // namespace oar
