// Host checks of index values at eager ops (Note [Index values] in op_util.h).
#include <cstdint>

#include "ops/op_util.h"

namespace oar {

namespace {

// "[1, 0]": the position of flat element `flat` in a tensor of `shape`.
std::string position_str(const Shape& shape, int64_t flat) {
  std::vector<int64_t> at(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    const int64_t n = shape[d] > 0 ? shape[d] : 1;
    at[d] = flat % n;
    flat /= n;
  }
  return shape_str(at);
}

template <class T>
void check_values(const IndexCheck& c, const Tensor& index) {
  const std::vector<T> values = index.to_vector<T>();
  for (size_t i = 0; i < values.size(); ++i) {
    const int64_t v = static_cast<int64_t>(values[i]);
    if ((v >= 0 && v < c.size) || (c.ignore && v == *c.ignore)) continue;
    std::string allowed = "expected 0 <= " + std::string(c.what) + " < " + std::to_string(c.size) + " (" +
                          c.size_is + ")";
    if (c.ignore) allowed += " or " + std::string(c.what) + " == ignore_index " + std::to_string(*c.ignore);
    throw Error(ErrorCode::invalid_argument,
                c.op + ": " + c.what + " " + std::to_string(v) + " at position " +
                    position_str(index.shape(), static_cast<int64_t>(i)) + " of " + c.what + " tensor " +
                    shape_str(index.shape()) + " is out of range; " + allowed);
  }
}

}  // namespace

void check_index_values(const IndexCheck& check, const Tensor& index) {
  if (!index.defined() || index.is_symbolic()) return;
  if (index.dtype() == DType::i64) {
    check_values<int64_t>(check, index);
  } else if (index.dtype() == DType::i32) {
    check_values<int32_t>(check, index);
  }
  // Other dtypes: the op's meta rule names the dtype it expects.
}

}  // namespace oar
