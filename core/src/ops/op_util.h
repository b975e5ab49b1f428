// Helpers shared by the op-family files: meta-rule building blocks and the
// lookup of an op definition by name (cached per call site).
#pragma once

#include <optional>
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
/// Throws unless input `index` has a dtype of op.dtypes.accepts, naming the
/// op, the input and what it takes ("a floating dtype is required").
void require_accepted(const OpDef& op, std::span<const TensorMeta> in, size_t index);
/// Throws unless every input has the dtype of input 0.
void require_same_dtype(const OpDef& op, std::span<const TensorMeta> in);
/// Output = input 0's dtype and shape.
std::vector<TensorMeta> same_as_input(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs);
/// Same, requiring a floating dtype.
std::vector<TensorMeta> same_as_float_input(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs);

}  // namespace meta

/// Note [Index values]: the index tensor of an eager op (gather and
/// scatter_add indices, embedding ids, cross_entropy's hard labels,
/// one_hot's classes) is read on the host and checked before the op
/// launches. An out-of-range value is then an error at the op, naming the
/// value and its position, on every device (an asynchronous device's kernel
/// could report it only at the next synchronize, and a decomposition such
/// as cross_entropy's one-hot compare would give a plausible wrong answer).
/// In a trace (a symbolic index) the check becomes the op `check_index`,
/// which the program runs on the device before the index is used (cpu and
/// mock kernels raise the same sentence, naming the op's user-facing name
/// and the flat position); gather and scatter_add kernels also check theirs.
struct IndexCheck {
  std::string op;                     ///< "gather"
  const char* what = "index";         ///< the value's name in the sentence: "index", "label"
  int64_t size = 0;                   ///< values must be in [0, size)
  std::string size_is;                ///< what `size` is: "the size of axis 0 of x [5, 3]"
  std::optional<int64_t> ignore = std::nullopt;  ///< a value allowed besides (ignore_index)
};
/// Throws oar::Error (invalid_argument) for the first value of `index`
/// (i32 or i64) outside the range of `check` and returns `index`; for a
/// symbolic tensor returns check_index(index), which the caller must use in
/// place of `index` so the check stays in the program.
Tensor check_index_values(const IndexCheck& check, const Tensor& index);

/// Takes the next `count` offsets of the global random generator
/// (oar::seed): its seed and the first of them.
std::pair<uint64_t, uint64_t> next_random_state(uint64_t count = 1);

/// Registers an op definition (shorthand used inside OAR_REGISTER_OPS).
inline const OpDef& add_op(OpDef def) { return OpRegistry::instance().add(std::move(def)); }

}  // namespace oar
