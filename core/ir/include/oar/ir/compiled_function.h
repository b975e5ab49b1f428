/// \file compiled_function.h
/// A program callable from eager code, with gradients: the bridge that lets
/// a to_static function train (Paddle's run_program).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "oar/ir/executor.h"

namespace oar::ir {

/// Runs a program's forward with an Executor and, when autograd records
/// (grad mode on and an input or a parameter requiring grad), runs a
/// training forward that also returns the values the backward needs, and
/// records one tape node ("to_static") whose backward runs the program's
/// appended backward (append_backward: the same VJP rules as eager mode)
/// on them (Note [Training programs] in compiled_function.cpp). The pair
/// is compiled once per set of differentiated inputs and input shapes.
/// Gradients of gradients through it (create_graph) are an error naming
/// it; call the function eagerly for those.
class CompiledFunction {
 public:
  CompiledFunction(const Program& program, const Device& device, ExecutorOptions options = {});
  ~CompiledFunction();
  CompiledFunction(CompiledFunction&&) noexcept;

  /// Outputs of the program on `inputs` with `params` bound by name
  /// (parameters the program does not use are ignored).
  std::vector<Tensor> operator()(std::span<const Tensor> inputs, const ParamMap& params);

  /// The inference forward executor.
  const Executor& forward() const;
  /// The parameters of the executor that ran last (updated values after a
  /// run of a program with updates).
  const ParamMap& parameters() const;
  /// Training forward/backward pairs compiled so far.
  size_t backward_count() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace oar::ir
