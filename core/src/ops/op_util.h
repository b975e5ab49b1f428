// Helpers shared by the op-family files: meta-rule building blocks and the
// lookup of an op definition by name (cached per call site).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "oar/builder.h"
#include "oar/error.h"
#include "oar/op.h"
#include "oar/tensor.h"

namespace oar {

/// The definition of op `name`, looked up once per call site.
#define OAR_OP(name)                                                          \
  ([]() -> const ::oar::OpDef& {                                             \
    static const ::oar::OpDef& def = ::oar::OpRegistry::instance().get(name); \
    return def;                                                               \
  }())

namespace meta {

/// `axis` in [-rank, rank) made non-negative; throws naming the op.
int64_t normalize_axis(const std::string& op, int64_t axis, int64_t rank);
/// Normalized, sorted, unique axes; empty means all axes.
std::vector<int64_t> normalize_axes(const std::string& op, std::vector<int64_t> axes, int64_t rank);
/// numpy broadcast of two shapes; throws naming the op and both shapes.
Shape broadcast_shapes(const std::string& op, const Shape& a, const Shape& b);
/// Throws unless input `index` has a floating dtype.
void require_float(const OpDef& op, std::span<const TensorMeta> in, size_t index);
/// Throws unless every input has the dtype of input 0.
void require_same_dtype(const OpDef& op, std::span<const TensorMeta> in);
/// Output = input 0's dtype and shape.
std::vector<TensorMeta> same_as_input(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs);
/// Same, requiring a floating dtype.
std::vector<TensorMeta> same_as_float_input(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs);

}  // namespace meta

/// Takes the next (seed, offset) of the global random generator (oar::seed).
std::pair<uint64_t, uint64_t> next_random_state();

/// Registers an op definition (shorthand used inside OAR_REGISTER_OPS).
inline const OpDef& add_op(OpDef def) { return OpRegistry::instance().add(std::move(def)); }

}  // namespace oar
