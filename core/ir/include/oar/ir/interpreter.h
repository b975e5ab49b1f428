/// \file interpreter.h
/// The reference semantics of a program: run it operation by operation
/// through the eager dispatcher (no planning, no streams). Tests compare
/// the executor against it; constant folding evaluates with it.
#pragma once

#include <span>
#include <vector>

#include "oar/ir/program.h"

namespace oar::ir {

/// Outputs of `program` on `inputs` with parameters `params` (by name), on
/// the inputs' device (or `device` when there are no inputs). Updates are
/// not applied; their values are returned after the outputs.
std::vector<Tensor> interpret(const Program& program, std::span<const Tensor> inputs, const ParamMap& params = {},
                              const Device* device = nullptr);

}  // namespace oar::ir
