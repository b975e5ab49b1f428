// Meta-rule building blocks.
#include "ops/op_util.h"

#include <algorithm>

namespace oar::meta {

int64_t normalize_axis(const std::string& op, int64_t axis, int64_t rank) {
  int64_t lo = rank == 0 ? -1 : -rank, hi = rank == 0 ? 0 : rank - 1;
  if (axis < lo || axis > hi) {
    throw Error(ErrorCode::invalid_argument, op + ": axis " + std::to_string(axis) +
                                                 " is out of range for a tensor of rank " + std::to_string(rank) +
                                                 " (expected " + std::to_string(lo) + ".." + std::to_string(hi) + ")");
  }
  return axis < 0 ? axis + std::max<int64_t>(rank, 1) : axis;
}

std::vector<int64_t> normalize_axes(const std::string& op, std::vector<int64_t> axes, int64_t rank) {
  if (axes.empty()) {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
    return axes;
  }
  for (auto& a : axes) a = normalize_axis(op, a, rank);
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  if (rank == 0) axes.clear();
  return axes;
}

Shape broadcast_shapes(const std::string& op, const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw Error(ErrorCode::invalid_argument,
                  op + ": shapes " + shape_str(a) + " and " + shape_str(b) + " cannot be broadcast together (dim " +
                      std::to_string(i) + " of the result: " + std::to_string(da) + " vs " + std::to_string(db) + ")");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

void require_float(const OpDef& op, std::span<const TensorMeta> in, size_t index) {
  if (!is_floating(in[index].dtype)) {
    throw Error(ErrorCode::invalid_argument, op.name + ": input " + std::to_string(index) + " has dtype " +
                                                 std::string(dtype_name(in[index].dtype)) +
                                                 " but a floating dtype is required; cast it first");
  }
}

void require_accepted(const OpDef& op, std::span<const TensorMeta> in, size_t index) {
  DType d = in[index].dtype;
  if (op.dtypes.accepts & dtype_bit(d)) return;
  if ((op.dtypes.accepts & ~kFloatDTypes) == 0) require_float(op, in, index);
  std::string takes = op.dtypes.accepts == kNumericDTypes ? "a numeric dtype" : dtype_set_str(op.dtypes.accepts);
  throw Error(ErrorCode::invalid_argument, op.name + ": input " + std::to_string(index) + " has dtype " +
                                               std::string(dtype_name(d)) + " but " + takes + " is required");
}

void require_same_dtype(const OpDef& op, std::span<const TensorMeta> in) {
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i].dtype != in[0].dtype) {
      throw Error(ErrorCode::invalid_argument, op.name + ": input 0 has dtype " +
                                                   std::string(dtype_name(in[0].dtype)) + " but input " +
                                                   std::to_string(i) + " has dtype " +
                                                   std::string(dtype_name(in[i].dtype)));
    }
  }
}

std::vector<TensorMeta> same_as_input(const OpDef&, std::span<const TensorMeta> in, const Attrs&) {
  return {in[0]};
}

std::vector<TensorMeta> same_as_float_input(const OpDef& op, std::span<const TensorMeta> in, const Attrs&) {
  require_float(op, in, 0);
  return {in[0]};
}

}  // namespace oar::meta
