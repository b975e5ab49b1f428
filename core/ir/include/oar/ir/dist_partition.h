/// \file dist_partition.h
/// Static semi-auto parallelism (dist.to_static): from the dense program of
/// a model (global shapes), with the placements of its annotated inputs
/// and parameters, the program ONE rank runs: placements propagated
/// through every op by its SPMD rule, reshard collectives inserted where
/// the rules ask, every op on this rank's local pieces (Note [Distributed
/// programs] in core/ir/passes/dist_partition.cpp).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "oar/device.h"
#include "oar/dist_tensor.h"
#include "oar/ir/program.h"

namespace oar::ir {

/// What partition() is told about the dense program.
struct PartitionSpec {
  /// The rank whose program is built (its local shapes, its groups).
  int rank = 0;
  /// One per dense input: how the input is placed (nullopt: a dense value,
  /// the same on every rank).
  std::vector<std::optional<DistAttr>> inputs;
  /// Dense parameters that are distributed, by name (others are dense and
  /// the same on every rank).
  std::map<std::string, DistAttr> parameters;
  /// One per dense output: the placement the local program returns it in
  /// (resharded at the end; nullopt: as the rules leave it).
  std::vector<std::optional<DistAttr>> outputs;
  /// Dense outputs that are not results but marks (dist.reshard in the
  /// traced forward, by output index): the value is resharded to the given
  /// placement as soon as it is computed, and the output is dropped.
  std::map<size_t, DistAttr> marks;
  /// When an op's distributed inputs lie on different meshes (pipeline
  /// stages, and their backward): move the later-defined ones to the mesh
  /// of the input defined first (leaves first), Replicate(), instead of the
  /// dispatcher's error.
  bool join_meshes = false;
  /// How many of the dense program's operations are its forward (the rest
  /// is its backward); when set, Partition::forward and ::backward hold the
  /// local program split there (pipeline schedules run them separately).
  std::optional<size_t> forward_ops;
};

/// The per-rank program and how its outputs are placed.
struct Partition {
  Program program;  ///< inputs, parameters (same names) and outputs are local pieces
  /// One per output of the local program (the dense outputs less the marks):
  /// its placement (nullopt: a dense value).
  std::vector<std::optional<DistAttr>> outputs;
  /// The global shape of each output.
  std::vector<Shape> output_shapes;
  /// With PartitionSpec::forward_ops: `program` in two. `forward` takes the
  /// inputs and parameters and returns the values the backward reads
  /// ("carry_<i>"); `backward` takes the inputs, then those values, and
  /// returns the outputs. Running one after the other equals `program`.
  std::optional<Program> forward, backward;
};

/// Builds rank `spec.rank`'s program from `dense` (static shapes only):
/// replays its operations, in order, on distributed symbolic values
/// through dist::dispatch under a Tracer of the new program. Throws
/// oar::Error naming the op when an op or a placement cannot be
/// partitioned.
Partition partition(const Program& dense, const PartitionSpec& spec, const Device& device);

}  // namespace oar::ir
