/// \file autodiff.h
/// Program autodiff: appends the backward of a program using the VJP rules
/// of the op definitions (the same rules eager mode runs, emitted through a
/// Tracer), so gradients in static mode equal eager ones and applying it to
/// a program that already holds a backward gives higher derivatives.
#pragma once

#include <vector>

#include "oar/ir/program.h"

namespace oar::ir {

struct BackwardOptions {
  /// Example input shapes when inputs have dynamic dims (Note [Dynamic
  /// dims] in trace.h); default: the static input types.
  std::vector<Shape> input_shapes;
  /// An unreachable `wrt` value gets nullptr instead of an error.
  bool allow_unused = false;
};

/// Appends operations computing the gradients of sum(targets[i] *
/// target_grads[i]) with respect to each `wrt` value (inputs, parameters or
/// results); a missing target grad is ones (a scalar target's usual
/// seed). Returns one gradient value per `wrt`. Composite ops without a VJP
/// rule are decomposed first.
std::vector<Value*> append_backward(Program& program, const std::vector<Value*>& targets,
                                    const std::vector<Value*>& wrt,
                                    const std::vector<Value*>& target_grads = {},
                                    const BackwardOptions& options = {});

/// Makes a training program: appends the backward of scalar `loss` with
/// respect to every parameter, then updates p <- p - lr * grad(p). Returns
/// the gradient values by parameter name.
std::vector<NamedValue> append_sgd_step(Program& program, Value* loss, double learning_rate,
                                        const BackwardOptions& options = {});

}  // namespace oar::ir
