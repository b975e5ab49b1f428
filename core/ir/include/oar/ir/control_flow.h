/// \file control_flow.h
/// Control flow in the IR: the region ops `cond` and `while` and the
/// terminator `yield` (Note [Control-flow ops]), their type rules (what the
/// verifier checks), builders, concrete shapes, and the region runner the
/// executor, the interpreter and constant folding use.
///
/// Note [Control-flow ops]
///   %r... = cond(%pred)            region 0 (then), region 1 (else)
///     Operand 0 is a one-element bool tensor (shape [] or all dims 1).
///     Each region takes no arguments and ends in yield(%v...), one value
///     per result: the same dtype and rank as the result, and each static
///     result dim equal in both branches (a dim the branches disagree on
///     is dynamic, -1, in the result: cond_result_types). The results are
///     the yields of the branch the predicate takes. Regions read the
///     values visible at the cond (Note [Regions] in block.h).
///   %r... = while(%init...)        region 0 (condition), region 1 (body)
///     Both regions take one argument per operand (the loop-carried
///     values), of the results' types; an operand has its argument's dtype
///     and rank, and each static dim of the argument. The condition yields
///     one one-element bool; the body yields the next carried values, each
///     with its argument's dtype and rank and each static dim (a body may
///     change only dims the carried type leaves dynamic). The results are
///     the carried values when the condition first yields false.
///     With attribute save_iterations = true (set by program autodiff, Note
///     [VJP of while] in autodiff.cpp) the while has a second result per
///     carried value: the stack of the values it carried into each run of
///     the body, of type [-1, dims...] (dim 0: the number of iterations,
///     known only when the loop has run). A program holding such a while
///     has data-dependent shapes: the executor interprets it (Note
///     [Data-dependent shapes] in executor.cpp) instead of planning it.
///   yield(%v...)                   the last operation of each such region.
/// The ops have no kernels: the region runner interprets the regions op by
/// op through the eager builder on the run's device, each region's values
/// living until the region ends (one iteration of a body). The executor
/// runs a control-flow op of its block as one step of its schedule (after
/// the work queued before it), with its results in planned memory; the
/// memory planner counts the values its regions read as read by it.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "oar/device.h"
#include "oar/ir/program.h"

namespace oar::ir {

/// The op definitions (registered in core/src/ops/control_flow.cpp).
const OpDef& cond_op();
const OpDef& while_op();
const OpDef& yield_op();

/// True for cond and while (ops whose meaning is in their regions).
bool is_control_flow(const OpDef& def);
bool is_control_flow(const Operation& op);

/// The number of values a while carries (its operands); a while that saves
/// its iterations has twice as many results (Note [Control-flow ops]).
size_t carried_count(const Operation& op);
/// True for a while with save_iterations set.
bool saves_iterations(const Operation& op);
/// True when an operation of `program` (at any depth) is a while that saves
/// its iterations: result shapes known only when it runs.
bool has_data_dependent_shapes(const Program& program);

/// The yield ending a region, or nullptr when the region does not end in one.
const Operation* terminator(const Block& region);

/// Checks the rules of Note [Control-flow ops] for `op` (a cond, a while or
/// a yield); throws oar::Error (invalid_argument) with a sentence naming
/// the op and both types. The verifier calls it with where = "operation 3
/// (cond)" and region scope.
void check_control_flow(const Operation& op, const std::string& where);

/// The result types of a cond whose branches yield `then_types` and
/// `else_types`: equal dims stay, differing dims become dynamic. Throws
/// naming `where` and both types when the counts, dtypes or ranks differ.
std::vector<TensorType> cond_result_types(std::span<const TensorType> then_types,
                                          std::span<const TensorType> else_types,
                                          const std::string& where = "cond");

/// Values the regions of `op` read (at any depth) that are defined outside
/// `op`: what a control-flow op reads besides its operands. In order of
/// first use, without repeats.
std::vector<Value*> captured_values(const Operation& op);

/// Concrete shapes of the results of control-flow op `op` given `shapes`
/// (every value visible at it); shapes of the values in its regions are
/// added to `shapes`. A cond whose branches give different shapes, or a
/// while whose body changes a carried shape, has data-dependent result
/// shapes: an error (unsupported) naming the op, since planning needs them.
std::vector<Shape> control_flow_shapes(const Operation& op,
                                       std::unordered_map<const Value*, Shape>& shapes);

/// Looks up the tensor of a value defined outside the region being run.
using ValueLookup = std::function<Tensor(const Value*)>;

/// Runs control-flow op `op` on `operands` (its operand tensors) on
/// `device`: values its regions capture come from `lookup`. Ops in regions
/// run through the eager builder without autograd. Returns the results.
/// A predicate that is not a one-element bool tensor is an error naming
/// the op.
std::vector<Tensor> run_control_flow(const Operation& op, std::span<const Tensor> operands,
                                     const ValueLookup& lookup, const Device& device);

}  // namespace oar::ir
