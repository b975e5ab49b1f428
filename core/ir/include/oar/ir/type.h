/// \file type.h
/// The type of an IR value: a tensor type with a dtype and dims, where a dim
/// may be dynamic (kDynamic, printed and serialized as -1).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "oar/dtype.h"
#include "oar/tensor.h"

namespace oar::ir {

/// A dim whose size is known only when the program runs.
inline constexpr int64_t kDynamic = -1;

/// dtype and dims of a tensor value.
struct TensorType {
  DType dtype = DType::f32;
  std::vector<int64_t> dims;

  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  /// True when no dim is dynamic.
  bool is_static() const;
  /// The dims with every dynamic one set to `size`.
  Shape with_dynamic_dims(int64_t size) const;
  /// True when `shape` has this rank and every static dim equals its size.
  bool matches(const Shape& shape) const;
  /// "f32[-1, 4]" (short dtype names; a scalar is "f32[]").
  std::string str() const;
  bool operator==(const TensorType& other) const = default;
};

/// Short dtype name used by the printer and JSON: "f32", "bf16", "i64", "bool".
std::string short_dtype_name(DType dtype);

}  // namespace oar::ir
