/// \file spmd.h
/// Placements of a distributed tensor and the SPMD rule slot of an op
/// (OpDef::spmd, Note [SPMD rules] in core/src/dist/dispatch.cpp).
///
/// A rule is a pure function over ONE mesh dimension: given the inputs'
/// global metas and how each is placed along that mesh dimension, it says
/// how the op needs its inputs placed (the dispatcher reshards the ones
/// that differ) and how the outputs then come out. On an N-d mesh the
/// dispatcher calls the rule once per mesh dimension. A rule never fails
/// for a placement it does not handle: it asks for Replicate() instead.
///
/// Where a sharded op's local computation needs attributes other than the
/// global ones (reshape's target shape, say), OpDef::localize rewrites them
/// from the local shapes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "oar/dtype.h"

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
    shard,      ///< rank r holds the r-th chunk along `dim` (chunk sizes: dist::shard_length)
    partial,    ///< every rank holds a piece; the tensor is their `reduce`
  };
  Kind kind = Kind::replicate;
  int64_t dim = -1;                    ///< shard: the tensor dim split over the mesh dim (non-negative)
  ReduceKind reduce = ReduceKind::sum;  ///< partial: how the pieces combine

  /// Every rank holds the whole tensor.
  static Placement Replicate() { return {}; }
  /// Split along tensor dim `dim`.
  static Placement Shard(int64_t dim) { return {Kind::shard, dim, ReduceKind::sum}; }
  /// Pieces that combine with `reduce`.
  static Placement Partial(ReduceKind reduce = ReduceKind::sum) { return {Kind::partial, -1, reduce}; }

  bool is_replicate() const { return kind == Kind::replicate; }
  bool is_shard() const { return kind == Kind::shard; }
  bool is_shard(int64_t d) const { return kind == Kind::shard && dim == d; }
  bool is_partial() const { return kind == Kind::partial; }
  bool operator==(const Placement&) const = default;
  /// "Replicate()", "Shard(1)", "Partial(sum)".
  std::string str() const;
};

/// The global dtype and shape of one of an op's inputs or outputs.
struct TensorMeta;

/// What an SPMD rule is given, for one mesh dimension.
struct SpmdArgs {
  const OpDef& op;
  std::span<const TensorMeta> inputs;     ///< the inputs' GLOBAL metas
  std::span<const Placement> placements;  ///< one per input, along this mesh dimension
  const Attrs& attrs;                     ///< the op's (global) attributes, defaults filled in
  int64_t mesh_dim_size = 1;              ///< how many ranks this mesh dimension has
};

/// What an SPMD rule answers.
struct SpmdResult {
  /// The placement the op needs each input in (one per input). Where one
  /// differs from SpmdArgs::placements the dispatcher reshards that input
  /// first. A rule only asks for placements it can compute from.
  std::vector<Placement> inputs;
  /// The outputs' placements (one per output) when the inputs are placed
  /// as `inputs` says and the local kernel runs on the local pieces.
  std::vector<Placement> outputs;
};

/// SPMD rule (pure: no communication, no tensors).
using SpmdFn = SpmdResult (*)(const SpmdArgs& args);

/// What OpDef::localize is given: the global attributes and the local
/// (this rank's) input and output metas the dispatcher computed from the
/// placements the rule chose.
struct LocalizeArgs {
  const OpDef& op;
  const Attrs& attrs;                        ///< global attributes, defaults filled in
  std::span<const TensorMeta> local_inputs;  ///< after the inputs were resharded
  std::span<const TensorMeta> local_outputs;
  std::span<const TensorMeta> global_outputs;
  /// Per output: where this rank's piece starts in the global output, one
  /// index per dim (all zeros for a replicated or partial output). Random
  /// ops use it to draw the numbers of their global positions (Note
  /// [Sharded random numbers] in core/src/ops/creation.cpp). Empty when
  /// the caller does not know them (then every offset counts as 0).
  std::span<const std::vector<int64_t>> output_offsets = {};
  /// Per input: the same for this rank's piece of each input, after the
  /// reshard (a vocab-parallel embedding reads its weight's row range
  /// from it). Empty when the caller does not know them.
  std::span<const std::vector<int64_t>> input_offsets = {};
  /// The inputs' GLOBAL metas (a row-sharded embedding compares its
  /// weight's local rows with the global ones). Empty when not known.
  std::span<const TensorMeta> global_inputs = {};
};

/// The attributes the local kernel runs with (reshape: the local target
/// shape). Ops whose attributes do not depend on shapes need none.
using LocalizeFn = Attrs (*)(const LocalizeArgs& args);

namespace spmd {
/// Elementwise unary ops: a replicated or sharded input gives an output
/// placed the same way; a partial input is reduced first (f(a + b) is not
/// f(a) + f(b) in general), so the rule asks for Replicate().
SpmdResult elementwise_unary(const SpmdArgs& args);
/// The default for ops without a rule: every input Replicate(), every
/// output Replicate() (the dispatcher logs it at OAR_LOG_LEVEL=debug).
SpmdResult replicate_all(const SpmdArgs& args);
}  // namespace spmd

}  // namespace oar
