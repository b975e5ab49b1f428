// The eager dispatcher: meta rule, kernel selection (or decomposition),
// output allocation and the kernel launch on the device's compute stream.
#include <array>
#include <boost/container/small_vector.hpp>

#include "dispatch/device_context.h"
#include "oar/autograd.h"
#include "oar/builder.h"
#include "oar/runtime.h"
#include "tensor/view.h"

namespace oar {

namespace {
thread_local Builder* t_builder = nullptr;
thread_local bool t_prefer_decomposition = false;

template <typename T, size_t N>
using SmallVec = boost::container::small_vector<T, N>;

// Input metas are rebuilt on every call; reusing one buffer per nesting
// depth (decompositions re-enter apply) keeps their shapes' memory.
thread_local std::vector<std::vector<TensorMeta>> t_meta_buffers;
thread_local size_t t_depth = 0;
struct DepthGuard {
  DepthGuard() {
    if (t_meta_buffers.size() <= t_depth) t_meta_buffers.resize(t_depth + 1);
    ++t_depth;
  }
  ~DepthGuard() { --t_depth; }
};

std::string dtype_list(std::span<const DType> dtypes) {
  std::string out;
  for (size_t i = 0; i < dtypes.size(); ++i) out += (i ? ", " : "") + std::string(dtype_name(dtypes[i]));
  return out;
}

}  // namespace

DecompositionScope::DecompositionScope() : previous_(t_prefer_decomposition) { t_prefer_decomposition = true; }
DecompositionScope::~DecompositionScope() { t_prefer_decomposition = previous_; }

Builder& current_builder() { return t_builder ? *t_builder : EagerBuilder::instance(); }

BuilderScope::BuilderScope(Builder& builder) : previous_(t_builder) { t_builder = &builder; }
BuilderScope::~BuilderScope() { t_builder = previous_; }

EagerBuilder& EagerBuilder::instance() {
  static EagerBuilder builder;
  return builder;
}

Tensor apply1(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs, const Device* device) {
  return current_builder().apply(op, inputs, attrs, device).at(0);
}

std::vector<Tensor> EagerBuilder::apply(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs,
                                        const Device* device) {
  if (op.num_inputs >= 0 && inputs.size() != static_cast<size_t>(op.num_inputs)) {
    throw Error(ErrorCode::invalid_argument, op.name + ": expected " + std::to_string(op.num_inputs) +
                                                 " inputs but got " + std::to_string(inputs.size()));
  }
  DepthGuard depth;
  std::vector<TensorMeta>& in_meta = t_meta_buffers[t_depth - 1];
  in_meta.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      throw Error(ErrorCode::invalid_argument, op.name + ": input " + std::to_string(i) + " is undefined");
    }
    if (inputs[i].impl().symbol) {
      throw Error(ErrorCode::invalid_argument, op.name + ": input " + std::to_string(i) +
                                                   " is a symbolic tensor of a to_static trace used outside it");
    }
    in_meta[i].dtype = inputs[i].dtype();
    in_meta[i].shape = inputs[i].shape();  // reuses the buffer's capacity
  }
  std::vector<TensorMeta> out_meta = infer_meta(op, in_meta, attrs);

  Device dev = inputs.empty() ? (device ? *device : default_device()) : inputs[0].device();
  for (size_t i = 1; i < inputs.size(); ++i) {
    if (!(inputs[i].device() == dev)) {
      throw Error(ErrorCode::invalid_argument, op.name + ": input 0 is on " + dev.str() + " but input " +
                                                   std::to_string(i) + " is on " + inputs[i].device().str() +
                                                   "; move them to one device with to()");
    }
  }
  // Views share their input's storage (Note [Views] in core/src/tensor/view.cpp).
  if (ViewRule view = eager_view_rule(op)) {
    if (Tensor out = view(inputs[0], attrs, out_meta[0]); out.defined()) {
      std::vector<Tensor> outputs{std::move(out)};
      record_op(op, inputs, outputs, attrs);
      return outputs;
    }
  }

  DeviceBackend& backend = backend_of(dev);
  SmallVec<DType, 8> in_dtypes, out_dtypes;
  for (const auto& m : in_meta) in_dtypes.push_back(m.dtype);
  for (const auto& m : out_meta) out_dtypes.push_back(m.dtype);
  const KernelEntry* kernel = backend.find_kernel(op.id, {in_dtypes.data(), in_dtypes.size()}, {out_dtypes.data(), out_dtypes.size()});
  // A fused kernel of a composite op without a VJP rule would end the tape:
  // differentiate its decomposition instead.
  if (kernel && op.decompose && ((!op.vjp && needs_recording(inputs)) || t_prefer_decomposition)) kernel = nullptr;
  if (!kernel) {
    if (op.decompose) return op.decompose(inputs, attrs);
    throw Error(ErrorCode::unsupported,
                op.name + ": device type '" + dev.type + "' has no kernel for dtypes (" + dtype_list({in_dtypes.data(), in_dtypes.size()}) +
                    ") -> (" + dtype_list({out_dtypes.data(), out_dtypes.size()}) + ")" +
                    (backend.has_kernel(op.id) ? "; it has kernels for other dtypes" : ""));
  }

  std::vector<Tensor> outputs;
  outputs.reserve(out_meta.size());
  bool any_elements = false;
  for (const auto& m : out_meta) {
    outputs.push_back(allocate_tensor(m.shape, m.dtype, dev));
    any_elements = any_elements || shape_numel(m.shape) > 0;
  }
  if (!any_elements) {
    record_op(op, inputs, outputs, attrs);
    return outputs;
  }

  int rank = op.layout == InputLayout::broadcast ? static_cast<int>(out_meta[0].shape.size()) : -1;
  SmallVec<OarTensorView, 4> in_views;
  SmallVec<OarTensorView, 2> out_views;
  SmallVec<Tensor, 2> copies;  // contiguous copies of views, alive until the launch
  for (const auto& t : inputs)
    in_views.push_back(make_view(kernel_takes_as_is(t, kernel->flags) ? t : copies.emplace_back(kernel_input(t, kernel->flags)), rank));
  for (const auto& t : outputs) out_views.push_back(make_view(t));

  OarKernelContext ctx{};
  ctx.struct_size = sizeof ctx;
  ctx.device = dev.index;
  ctx.stream = backend.slot(dev.index).stream;
  ctx.num_inputs = static_cast<int32_t>(in_views.size());
  ctx.inputs = in_views.data();
  ctx.num_outputs = static_cast<int32_t>(out_views.size());
  ctx.outputs = out_views.data();
  ctx.attrs = attrs_handle(attrs);
  ctx.op_name = op.name.c_str();
  host_clear_error();
  OarStatus status = kernel->fn(&ctx);
  if (status != OAR_OK) {
    std::string message = host_take_error();
    throw Error(static_cast<ErrorCode>(status),
                message.empty() ? op.name + ": the " + dev.type + " kernel failed with status " + std::to_string(status)
                                : message);
  }
  record_op(op, inputs, outputs, attrs);
  return outputs;
}

}  // namespace oar
