/// \file fusion.h
/// The fusion planner: which operations of a block the compiler turns into
/// one kernel. It only plans (the block is not changed); the compiler pass
/// cuts each group out as a sub-program and lowers it (lower_group).
/// Note [Fusion rules] in compiler/src/fusion.cpp says what fuses and why.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "oar/ir/block.h"

namespace oar::compiler {

/// What an operation does to the iteration space, for fusion.
enum class OpClass {
  elementwise,  ///< one output element from the operand elements at the same (broadcast) index
  broadcast,    ///< an operand repeated into a larger shape (broadcast_to, broadcast_to_like)
  reduce,       ///< sum, max, min, prod, mean over `axes`
  reshape,      ///< the same elements in row-major order under another shape
  transpose,    ///< the same elements with the axes permuted
  opaque,       ///< a group boundary: matmul, conv, gather, random, host, collective ops...
};

/// The class of `op`: a table by op name, then opaque for complex dtypes,
/// side effects, random ops and ops holding regions.
OpClass classify(const ir::Operation& op);
/// "elementwise", "broadcast", "reduce", "reshape", "transpose", "opaque".
const char* op_class_name(OpClass c);

/// The schedule a group needs (what C3's lower_group builds for it).
enum class GroupKind {
  elementwise,  ///< one flat iteration space; every output has its numel
  reduce,       ///< row_reduce: reductions over the trailing axes of the same rows, with
                ///< a prologue over [rows, cols] and a per-element/per-row epilogue
};

/// One planned kernel.
struct Group {
  std::vector<ir::Operation*> ops;  ///< in program order; not owned
  std::vector<ir::Value*> inputs;  ///< used, defined outside the group (operand order of first use)
  std::vector<ir::Value*> outputs;  ///< defined inside, used outside or program outputs
  std::string name;                 ///< "g<N>_<kind>_<first op>"
  GroupKind kind = GroupKind::elementwise;
};

/// Knobs of plan_fusion.
struct FusionOptions {
  /// Also merge independent groups over the same iteration space that read
  /// a common input (Note [Fusion rules]).
  bool horizontal = true;
  int max_ops = 64;  ///< no group grows past this many operations
};

/// Plans the fusion groups of the top-level operations of `block` (regions
/// are left alone). Groups come in program order of their first operation;
/// each operation is in at most one group, and opaque ones in none; the
/// graph with each group contracted to one node has no cycle. Groups holding
/// only reshapes, transposes, fills and broadcasts are not returned. Each
/// refused merge (once per pair and reason) and each boundary that is not
/// plainly opaque is written to `log` (when not null) with its reason, then
/// the plan, every line starting "oar compiler: fusion: ".
std::vector<Group> plan_fusion(ir::Block& block, const FusionOptions& options, std::ostream* log);

/// The plan as stable text: one block of lines per group (name, kind, ops
/// as "<position in block>:<op name>", inputs and outputs with their types).
/// Values are named by their interface name ("x") or as "op<position>" of
/// their producer ("op3", "op3.1" for its second result).
std::string plan_text(const std::vector<Group>& groups);

}  // namespace oar::compiler
