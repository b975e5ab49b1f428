/// \file spmd.h
/// Placements of a distributed tensor and the SPMD rule slot of an op
/// (OpDef::spmd): given how each input is laid out over a mesh dimension,
/// how the outputs are. The semi-auto-parallel work fills the rules; today
/// only the trivial ones exist (an elementwise unary op keeps its input's
/// placement).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace oar {

class Attrs;
struct OpDef;

/// How a partial value's pieces combine into the full value.
enum class ReduceKind : uint8_t { sum, avg, max, min };

/// How one tensor is laid out along one mesh dimension.
struct Placement {
  /// What kind of placement.
  enum class Kind : uint8_t {
    replicate,  ///< every rank holds the whole tensor
    shard,      ///< rank r holds the r-th slice along `dim`
    partial,    ///< every rank holds a piece; the tensor is their `reduce`
  };
  Kind kind = Kind::replicate;
  int64_t dim = -1;                    ///< shard: the tensor dim split over the mesh dim
  ReduceKind reduce = ReduceKind::sum;  ///< partial: how the pieces combine

  /// Every rank holds the whole tensor.
  static Placement Replicate() { return {}; }
  /// Split along tensor dim `dim`.
  static Placement Shard(int64_t dim) { return {Kind::shard, dim, ReduceKind::sum}; }
  /// Pieces that combine with `reduce`.
  static Placement Partial(ReduceKind reduce = ReduceKind::sum) { return {Kind::partial, -1, reduce}; }

  bool operator==(const Placement&) const = default;
  /// "Replicate()", "Shard(1)", "Partial(sum)".
  std::string str() const;
};

/// SPMD rule: the outputs' placements from the inputs' (one entry per input
/// and output, along one mesh dimension), or nullopt when the rule cannot
/// place the outputs without a reshard of the inputs first.
using SpmdFn = std::optional<std::vector<Placement>> (*)(const OpDef& op, std::span<const Placement> inputs,
                                                         const Attrs& attrs);

namespace spmd {
/// Elementwise unary ops: a replicated or sharded input gives an output
/// placed the same way; a partial input gives nullopt (f(a + b) is not
/// f(a) + f(b) in general, so the pieces must be reduced first).
std::optional<std::vector<Placement>> elementwise_unary(const OpDef& op, std::span<const Placement> inputs,
                                                        const Attrs& attrs);
}  // namespace spmd

}  // namespace oar
