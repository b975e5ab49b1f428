/// \file schedule.h
/// Stream assignment and event scheduling of static mode as pure
/// functions: from a Block (and, for the waits, its memory plan) to
/// instructions. No device is involved, so they are unit-tested alone
/// (tests/unit/test_ir_schedule.cpp); the Executor runs what they return.
#pragma once

#include <vector>

#include "oar/ir/memory_planner.h"
#include "oar/ir/program.h"

namespace oar::ir {

/// One scheduled operation.
struct Instruction {
  int op_index = 0;           ///< position in the program's block
  int stream = 0;             ///< index into the executor's streams
  std::vector<int> wait_for;  ///< instructions (on other streams) to wait for
};

/// The stream of each block op (Note [Executor streams] in schedule.cpp)
/// among `num_streams` (<= 1: all on stream 0). A view op takes its
/// operand's producer's stream, -1 for a view of an input, parameter or
/// constant.
std::vector<int> assign_streams(const Block& block, int num_streams);

/// The predicate plan_memory takes so that only values made on one stream
/// share arena bytes (Note [Per-stream arena] in schedule.cpp); null when
/// there is one stream. `stream_of` (from assign_streams) must outlive it.
MayShare same_stream_sharing(const Block& block, const std::vector<int>& stream_of);

/// Instructions and the events between them.
struct Schedule {
  std::vector<Instruction> instructions;
  /// Per instruction: another stream waits for it (an event is recorded after it).
  std::vector<bool> recorded;
  /// Per block op: the earlier ops that touched arena bytes it overwrites
  /// (MemoryPlan::reuse_after, exact for the final layout).
  std::vector<std::vector<int>> reuse_after;
  int streams_used = 1;
};

/// Schedules the block ops at `launched` (block indices, ascending: the
/// ops that run a kernel) on the streams of `stream_of`: each instruction
/// waits for the producers of its operands on other streams and for the
/// earlier readers and writers of the arena bytes it overwrites, with the
/// waits implied by earlier waits left out.
Schedule schedule_block(const Block& block, const MemoryPlan& plan, const std::vector<int>& launched,
                        const std::vector<int>& stream_of, int num_streams);

}  // namespace oar::ir
