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

std::string short_dtype_name(DType dtype) { return std::string(dtype_short_name(dtype)); }

std::string TensorType::str() const { return short_dtype_name(dtype) + shape_str(dims); }

}  // namespace oar::ir
