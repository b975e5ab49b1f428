// Tensor types of IR values.
#include "oar/ir/type.h"

namespace oar::ir {

bool TensorType::is_static() const {
  for (int64_t d : dims) {
    if (d == kDynamic) return false;
  }
  return true;
}

Shape TensorType::with_dynamic_dims(int64_t size) const {
  Shape shape = dims;
  for (int64_t& d : shape) {
    if (d == kDynamic) d = size;
  }
  return shape;
}

bool TensorType::matches(const Shape& shape) const {
  if (shape.size() != dims.size()) return false;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] != kDynamic && dims[i] != shape[i]) return false;
  }
  return true;
}

std::string short_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::i8: return "i8";
    case DType::u8: return "u8";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::boolean: return "bool";
  }
  return "dtype(" + std::to_string(static_cast<int>(dtype)) + ")";
}

std::string TensorType::str() const { return short_dtype_name(dtype) + shape_str(dims); }

}  // namespace oar::ir
