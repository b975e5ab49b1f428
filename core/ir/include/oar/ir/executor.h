/// \file executor.h
/// The executor of static mode. Compiling a program for a device
/// decomposes the composite ops the device has no kernel for and resolves
/// every operation's kernel; per input shapes it asks the kernels whether
/// they accept the shapes (a declining kernel falls through to the next
/// implementation, then to the decomposition), plans memory and turns the
/// block into an instruction list (schedule.h): kernel, prebuilt tensor
/// views into the arena, stream, and the events to wait for. Independent
/// branches may run on separate streams (ExecutorOptions::num_streams) on
/// devices with streams and events; results equal eager mode.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "oar/device.h"
#include "oar/ir/memory_planner.h"
#include "oar/ir/program.h"
#include "oar/ir/schedule.h"

namespace oar::ir {

struct ExecutorOptions {
  /// Streams to spread independent operations over (1: the device's
  /// compute stream only). Devices without streams and events (their
  /// table's entries NULL) use one in-order stream.
  int num_streams = 1;
  /// Print the instruction list when it is (re)built.
  bool print_schedule = false;
};

/// Note [Concurrent calls]: an Executor (and so a CompiledFunction, a
/// Predictor's program, a layer from oar.jit.load) may be called from
/// several threads at once, but the calls are serialized by a lock per
/// executor: a run owns the executor's one arena and prebuilt launches.
/// For parallel throughput give each thread its own executor (one
/// Predictor per thread). parameters(), program() and the other accessors
/// return references that another thread's run or set_parameters may change;
/// read them from one thread at a time.

class Executor {
 public:
  /// Compiles `program` (copied) for `device`. Throws naming the op when
  /// the device can run neither it nor its decomposition.
  Executor(const Program& program, const Device& device, ExecutorOptions options = {});
  ~Executor();
  Executor(Executor&&) noexcept;
  Executor& operator=(Executor&&) noexcept;

  /// Binds parameters by name (moved to the device when elsewhere). Every
  /// parameter of the program must be bound before run(). set_parameters
  /// skips names the program does not have (a state dict may hold tensors
  /// dead-code elimination removed); set_parameter throws for them.
  void set_parameters(const ParamMap& params);
  void set_parameter(const std::string& name, const Tensor& value);
  /// The current parameter tensors (after updates of a training program).
  const ParamMap& parameters() const;

  /// Runs the program on `inputs` (one per program input, checked against
  /// the input types: dtype, rank, static dims; a mismatch is an error
  /// naming the input). Returns the outputs in order; applies updates.
  /// Random ops draw new numbers on every run from the global generator
  /// (oar::seed), like eager calls (Note [Random ops in programs]).
  std::vector<Tensor> run(std::span<const Tensor> inputs);
  /// Same, with the random ops' (seed, offset) given: equal states give equal
  /// numbers (a recomputation of an earlier run).
  std::vector<Tensor> run(std::span<const Tensor> inputs, std::pair<uint64_t, uint64_t> random_state);
  /// Binds `params` (as set_parameters) and runs, as one step under the
  /// executor's lock (Note [Concurrent calls]): no other thread's
  /// parameters can slip in between.
  std::vector<Tensor> run_with(std::span<const Tensor> inputs, const ParamMap& params);
  /// Same, with the random ops' (seed, offset) given.
  std::vector<Tensor> run_with(std::span<const Tensor> inputs, const ParamMap& params,
                               std::pair<uint64_t, uint64_t> random_state);

  /// The compiled program (after device decompositions).
  const Program& program() const;
  const Device& device() const;
  /// The plan and instructions of the last run (built on first run and
  /// whenever input shapes change).
  const MemoryPlan& memory_plan() const;
  const std::vector<Instruction>& instructions() const;
  /// Number of streams the schedule uses.
  int num_streams() const;
  /// The instruction list as text: one line per instruction.
  std::string schedule_str() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace oar::ir
