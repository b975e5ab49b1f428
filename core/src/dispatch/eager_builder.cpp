// The eager dispatcher: meta rule, kernel selection (or decomposition),
// output allocation and the kernel launch on the device's compute stream,
// through the launch functions static mode uses too (kernel_launch.h).
#include <algorithm>
#include <array>
#include <boost/container/small_vector.hpp>

#include "dispatch/device_context.h"
#include "dispatch/kernel_launch.h"
#include "dispatch/op_profile.h"
#include "dist/dist_internal.h"
#include "oar/autograd.h"
#include "oar/builder.h"
#include "oar/profiler.h"
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

// "[[2, 3], [3]]" and "[float32, float32]" of an op's inputs, for the trace (record_shapes).
std::string meta_shapes(const std::vector<TensorMeta>& metas) {
  std::string out = "[";
  for (size_t i = 0; i < metas.size(); ++i) out += (i ? ", " : "") + shape_str(metas[i].shape);
  return out + "]";
}

std::string meta_dtypes(const std::vector<TensorMeta>& metas) {
  std::string out = "[";
  for (size_t i = 0; i < metas.size(); ++i) out += (i ? ", " : "") + std::string(dtype_name(metas[i].dtype));
  return out + "]";
}

}  // namespace

DecompositionScope::DecompositionScope() : previous_(t_prefer_decomposition) { t_prefer_decomposition = true; }
DecompositionScope::~DecompositionScope() { t_prefer_decomposition = previous_; }

Builder& current_builder() { return t_builder ? *t_builder : EagerBuilder::instance(); }

BuilderScope::BuilderScope(Builder& builder) : previous_(t_builder) { t_builder = &builder; }
BuilderScope::~BuilderScope() { t_builder = previous_; }

namespace {
// True when `op` reads only the shape and dtype of its input `i` (a saved
// tensor overwritten in place may still serve there: Note [Version counter]).
bool reads_only_shape(const OpDef& op, size_t i) {
  static const std::array<std::string_view, 4> any_input{"full_like", "uniform_like", "shape", "numel"};
  static const std::array<std::string_view, 2> second_input{"sum_to_like", "broadcast_to_like"};
  if (std::find(any_input.begin(), any_input.end(), op.name) != any_input.end()) return true;
  return i == 1 && std::find(second_input.begin(), second_input.end(), op.name) != second_input.end();
}

}  // namespace

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
  // ---- distributed tensors (H1): Note [Distributed dispatch] in core/src/dist/dispatch.cpp.
  if (dist::any_dist(inputs)) return dist::dispatch(op, inputs, attrs, device);
  OpProfileScope timed(op, t_depth == 0);  // Note [Op profile]
  profiler::RecordEvent traced;            // Note [Trace recorder]
  if (profiler::recording()) {
    Device at = inputs.empty() ? (device ? *device : default_device()) : inputs[0].device();
    traced.begin(op.name, "Operator", at.str(), 0);
  }
  DepthGuard depth;
  std::vector<TensorMeta>& in_meta = t_meta_buffers[t_depth - 1];
  in_meta.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      throw Error(ErrorCode::invalid_argument, op.name + ": input " + std::to_string(i) + " is undefined");
    }
    if (const auto& overwritten = inputs[i].impl().overwritten; overwritten && !reads_only_shape(op, i)) {
      throw Error(ErrorCode::invalid_argument, *overwritten);  // Note [Version counter] in inplace.cpp
    }
    if (inputs[i].impl().symbol) {
      throw Error(ErrorCode::invalid_argument, op.name + ": input " + std::to_string(i) +
                                                   " is a symbolic tensor of a to_static trace used outside it");
    }
    in_meta[i].dtype = inputs[i].dtype();
    in_meta[i].shape = inputs[i].shape();  // reuses the buffer's capacity
  }
  if (profiler::recording_shapes()) traced.set_inputs(meta_shapes(in_meta), meta_dtypes(in_meta));
  std::vector<TensorMeta> out_meta = infer_meta(op, in_meta, attrs);

  Device dev = inputs.empty() ? (device ? *device : default_device()) : inputs[0].device();
  for (size_t i = 1; i < inputs.size(); ++i) {
    if (!(inputs[i].device() == dev)) {
      throw Error(ErrorCode::invalid_argument, op.name + ": input 0 is on " + dev.str() + " but input " +
                                                   std::to_string(i) + " is on " + inputs[i].device().str() +
                                                   "; move them to one device with to()");
    }
  }
  // ---- host ops (H2): collectives run in the core, no kernel (Note [Host ops] in
  // core/src/dist/collective_ops.cpp); outputs checked against the meta rule.
  if (op.host) {
    std::vector<Tensor> outputs = dist::run_host_op(op, inputs, attrs, out_meta);
    record_op(op, inputs, outputs, attrs);
    return outputs;
  }
  // ---- end host ops
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
  std::span<const DType> in_span{in_dtypes.data(), in_dtypes.size()};
  std::span<const DType> out_span{out_dtypes.data(), out_dtypes.size()};
  // A fused kernel of a composite op without a VJP rule would end the tape:
  // differentiate its decomposition instead.
  if (op.decompose && ((!op.vjp && needs_recording(inputs)) || t_prefer_decomposition))
    return op.decompose(inputs, attrs);
  if (!backend.has_kernel(op.id)) {
    if (op.decompose) return op.decompose(inputs, attrs);
    throw no_kernel_error(backend, op.name, op.id, in_span, out_span, nullptr);
  }

  // The problem the kernels are asked about (Note [Kernel fall-through]):
  // input views, and output views whose data is set once allocated.
  int rank = op.layout == InputLayout::broadcast ? static_cast<int>(out_meta[0].shape.size()) : -1;
  SmallVec<Tensor, 4> copies(inputs.size());  // contiguous copies for kernels not flagged strided
  SmallVec<OarTensorView, 6> views;
  for (const auto& t : inputs) views.push_back(make_view(t, rank));
  for (const auto& m : out_meta) views.push_back(contiguous_view(m.shape, m.dtype));
  OarKernelContext ctx = kernel_context(backend, dev.index, backend.slot(dev.index).stream, views.data(),
                                        inputs.size(), out_meta.size(), attrs, op.name.c_str());
  const KernelEntry* kernel = select_kernel(backend, op.id, in_span, out_span, &ctx);
  if (!kernel) {
    if (op.decompose) return op.decompose(inputs, attrs);
    throw no_kernel_error(backend, op.name, op.id, in_span, out_span, &ctx);
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!kernel_takes_as_is(inputs[i], kernel->flags)) views[i] = kernel_input_view(inputs[i], rank, kernel->flags, copies[i]);
  }

  std::vector<Tensor> outputs;
  outputs.reserve(out_meta.size());
  bool any_elements = false;
  for (size_t i = 0; i < out_meta.size(); ++i) {
    outputs.push_back(allocate_tensor(out_meta[i].shape, out_meta[i].dtype, dev));
    any_elements = any_elements || shape_numel(out_meta[i].shape) > 0;
    const TensorImpl& impl = outputs.back().impl();
    OarTensorView& view = views[inputs.size() + i];
    view.data = impl.storage ? impl.storage->data() : nullptr;
    view.byte_offset = impl.byte_offset;
  }
  if (any_elements) launch_kernel(backend, *kernel, ctx);
  record_op(op, inputs, outputs, attrs);
  return outputs;
}

}  // namespace oar
