/// \file builder.h
/// Note [Builder]
/// Every op call goes through the current Builder. Rules that are written in
/// ops (decompositions, and VJPs with autodiff) therefore run in whatever
/// mode is active: the EagerBuilder dispatches kernels (and records the
/// autograd tape), a static-capture builder appends IR operations. A rule is
/// written once and serves both modes; grad-of-grad falls out of recording
/// the backward itself. Tensors are the builder's opaque values.
#pragma once

#include <span>
#include <vector>

#include "oar/op.h"
#include "oar/tensor.h"

namespace oar {

/// The interface every execution mode implements.
class Builder {
 public:
  virtual ~Builder() = default;
  /// Applies `op` to `inputs`. `device` matters only for ops without
  /// inputs (creation ops); nullptr means the default device.
  virtual std::vector<Tensor> apply(const OpDef& op, std::span<const Tensor> inputs,
                                    const Attrs& attrs, const Device* device) = 0;
  /// An op's C++ wrapper computed an attribute from the size of dim `dim`
  /// of `x` (a negative slice index, say). Eager mode ignores it; a tracer
  /// whose `x` has a dynamic dim there fixes the trace to the example's
  /// sizes (Note [Dynamic dims] in oar/ir/trace.h), so no program silently
  /// keeps one size's index for every size.
  virtual void note_size_read(const Tensor& x, int64_t dim) {
    (void)x;
    (void)dim;
  }
};

/// The builder of the calling thread (the eager builder unless a scope
/// installed another).
Builder& current_builder();

/// Installs a builder for the calling thread for the scope's lifetime.
class BuilderScope {
 public:
  explicit BuilderScope(Builder& builder);
  ~BuilderScope();
  BuilderScope(const BuilderScope&) = delete;
  BuilderScope& operator=(const BuilderScope&) = delete;

 private:
  Builder* previous_;
};

/// While alive on a thread, composite ops run their decomposition even on a
/// device with a fused kernel (to compare the two paths, or to debug).
class DecompositionScope {
 public:
  DecompositionScope();
  ~DecompositionScope();
  DecompositionScope(const DecompositionScope&) = delete;
  DecompositionScope& operator=(const DecompositionScope&) = delete;

 private:
  bool previous_;
};

/// The eager builder: runs the meta rule, picks the device's kernel (or the
/// decomposition of a composite op without one), allocates the outputs and
/// launches the kernel on the device's stream.
class EagerBuilder final : public Builder {
 public:
  static EagerBuilder& instance();
  std::vector<Tensor> apply(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs,
                            const Device* device) override;
};

/// Shorthand: current_builder().apply(...) for a single-output op.
Tensor apply1(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs = {},
              const Device* device = nullptr);

}  // namespace oar
