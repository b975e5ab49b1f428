/// \file shape_inference.h
/// Concrete shapes of every value for given input shapes (running each
/// op's meta rule), used by the executor and the memory planner.
#pragma once

#include <unordered_map>
#include <vector>

#include "oar/ir/program.h"

namespace oar::ir {

/// Shape of every live value. Parameters and constants take their static
/// types. Throws naming the input when a shape does not match its type, and
/// the operation when its meta rule rejects the shapes.
std::unordered_map<const Value*, Shape> infer_shapes(const Program& program,
                                                     const std::vector<Shape>& input_shapes);

/// Fixes every dynamic dim: input types become `input_shapes` and every
/// result type the shape inferred from them (Note [Dynamic dims]).
void specialize_types(Program& program, const std::vector<Shape>& input_shapes);

/// The input shapes of a program whose inputs all have static types;
/// throws naming the first input with a dynamic dim otherwise.
std::vector<Shape> static_input_shapes(const Program& program);

}  // namespace oar::ir
