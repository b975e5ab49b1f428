// Helpers for decompositions and VJP rules that must not bake the sizes of
// dynamic dims into a traced program (Note [Shape from an operand] in
// shape_ops.cpp). Implemented in shape_ops.cpp.
#pragma once

#include <vector>

#include "oar/tensor.h"

namespace oar {

/// True when `x` is a symbolic tensor of a trace whose dims `axes` (every
/// dim when empty) include a dynamic one. An eager tensor has none.
bool has_dynamic_dims(const Tensor& x, const std::vector<int64_t>& axes = {});

/// A reshape spec taking a tensor of shape `from` to `to` that reads sizes
/// from the input where it can: 0 (copy the input's dim) where both have
/// the same size at the same index, -1 (inferred) for the first other dim
/// larger than 1, the sizes elsewhere. For an empty tensor, `to` itself.
std::vector<int64_t> reshape_spec(const Shape& from, const Shape& to);

/// x computed in f32 when it is f16 or bf16 (cast up), else x; `back`
/// casts a result to the dtype x had (Paddle's composite rules compute
/// half-precision softmax and norms this way).
Tensor upcast_half(const Tensor& x);
Tensor cast_back(const Tensor& y, DType dtype);

/// The number of elements of `x` per element of `reduced` (a reduction of
/// x), as a 0-D tensor of dtype `dtype`, computed when the program runs.
Tensor reduced_count(const Tensor& x, const Tensor& reduced, DType dtype);

}  // namespace oar
