/// \file memory_planner.h
/// Liveness analysis and buffer reuse. Every intermediate result gets a
/// byte offset in one arena; two values share bytes only when their
/// lifetimes do not overlap. Results of view ops (reshape) alias their
/// operand's buffer, which then lives until the last use of either.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <unordered_map>
#include <vector>

#include "oar/ir/program.h"

namespace oar::ir {

/// Where each value lives during a run.
enum class Placement : uint8_t {
  external,  ///< input, parameter or constant: memory owned elsewhere
  arena,     ///< bytes [offset, offset + bytes) of the arena
  output,    ///< allocated fresh on each run (returned to the caller, or an update)
  alias,     ///< a view of another value (alias_of)
};

struct BufferAssignment {
  Placement placement = Placement::external;
  int64_t offset = 0;  ///< arena only
  int64_t bytes = 0;
  const Value* alias_of = nullptr;  ///< alias only: the value whose memory it views
};

struct MemoryPlan {
  std::unordered_map<const Value*, BufferAssignment> buffers;
  int64_t arena_bytes = 0;  ///< the planned peak of intermediates
  int64_t naive_bytes = 0;  ///< every intermediate in its own buffer
  int64_t output_bytes = 0;
  /// For each operation (block index): values whose arena bytes it
  /// overwrites were last read by these earlier operations (block indices).
  /// With several streams the executor must order the writer after them.
  std::vector<std::vector<int>> reuse_after;
  /// Index (in block order) of the last operation reading each value
  /// directly (reads through a view count for the view). A result nobody
  /// reads maps to its producing operation; an unread input, parameter or
  /// constant is absent.
  std::unordered_map<const Value*, int> last_use;
};

/// Whether two arena values (results of non-view ops) may share bytes
/// when their lifetimes do not overlap; symmetric.
using MayShare = std::function<bool(const Value* a, const Value* b)>;

/// Plans the memory of `program` for concrete `shapes` (from
/// infer_shapes). Offsets are aligned to `alignment` bytes. With
/// `may_share`, values it refuses never share bytes even when their
/// lifetimes are disjoint (the executor keeps streams apart: Note
/// [Per-stream arena] in core/ir/exec/schedule.cpp); null lets every pair
/// share.
MemoryPlan plan_memory(const Program& program, const std::unordered_map<const Value*, Shape>& shapes,
                       int64_t alignment = 64, const MayShare& may_share = nullptr);

/// "memory plan: peak 1.2 MiB (arena), naive 3.4 MiB, outputs 16 KiB (reuse saves 65%)".
std::string memory_summary(const MemoryPlan& plan);

}  // namespace oar::ir

namespace oar::ir {
class Pass;
/// A pass that changes nothing and prints memory_summary() for the
/// program's static input shapes to `os` (stderr when null); a program
/// with dynamic inputs prints that the plan needs concrete shapes.
std::unique_ptr<Pass> make_memory_planning_pass(std::ostream* os = nullptr);
}  // namespace oar::ir
