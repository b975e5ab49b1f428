// Constant folding: an operation whose operands are all constants (or that
// has none, like full and arange) is evaluated eagerly on the pass's device
// and its results become constants. Walking in block order folds chains.
// Each fold costs O(uses of its results) (Note [Use lists] in value.h), so
// the pass is linear in the program's size besides the evaluations.

#include "oar/autograd.h"
#include "oar/builder.h"
#include "oar/ir/control_flow.h"
#include "oar/ir/pass.h"

namespace oar::ir {

namespace {

class ConstantFoldingPass final : public Pass {
 public:
  ConstantFoldingPass(const Device& device, int64_t max_elements)
      : device_(device), max_elements_(max_elements) {}

  std::string name() const override { return "constant_folding"; }

  bool run(Program& program) override {
    bool changed = false;
    Block& block = program.block();
    for (Operation* next = block.front(); next != nullptr;) {
      Operation& op = *next;
      next = op.next();
      if (&op.def() == &cond_op() && op.operand(0)->kind() == ValueKind::constant) {
        inline_taken_branch(program, op);
        changed = true;
        continue;
      }
      if (!foldable(op)) continue;
      std::vector<Tensor> results;
      try {
        results = evaluate(program, op);
      } catch (const Error& e) {
        if (e.code() == ErrorCode::unsupported)
          continue;  // the device cannot run it: leave it to the executor
        throw;
      }
      for (size_t i = 0; i < results.size(); ++i) {
        Value* constant = program.add_constant(fresh_name(program), results[i]);
        program.replace_all_uses(op.result(i), constant);
      }
      block.erase(&op);
      changed = true;
    }
    if (!changed) return false;
    // Constants that only fed folded operations (including ones this pass made
    // for the inner links of a chain) are no longer needed.
    program.drop_unused_constants();
    return true;
  }

 private:
  // A cond on a constant predicate becomes the operations of the branch it
  // takes, moved before it (they read only what is visible at the cond),
  // its results the values that branch yields. The moved operations are
  // folded in turn when their operands are constants.
  static void inline_taken_branch(Program& program, Operation& op) {
    const bool taken = program.constant_value(op.operand(0)).item() != 0;
    Block& region = op.region(taken ? 0 : 1);
    const Operation* yield = terminator(region);
    std::vector<Value*> yielded = yield->operands();
    while (region.front() != yield) op.block()->insert(&op, region.remove(region.front()));
    for (size_t i = 0; i < yielded.size(); ++i) program.replace_all_uses(op.result(i), yielded[i]);
    op.block()->erase(&op);
  }

  bool foldable(const Operation& op) const {
    if (has_side_effects(op.def()) || op.num_regions() > 0) return false;
    for (const Value* operand : op.operands()) {
      if (operand->kind() != ValueKind::constant) return false;
    }
    for (const Value* result : op.results()) {
      const TensorType& type = result->type();
      if (!type.is_static() || shape_numel(type.dims) > max_elements_) return false;
    }
    return true;
  }

  std::vector<Tensor> evaluate(const Program& program, const Operation& op) const {
    std::vector<Tensor> inputs;
    inputs.reserve(op.operands().size());
    for (const Value* operand : op.operands())
      inputs.push_back(program.constant_value(operand).to(device_));
    std::vector<Tensor> results;
    {
      NoGrad no_grad;
      BuilderScope eager(
          EagerBuilder::instance());  // a composite op's decomposition must run eagerly too
      results = EagerBuilder::instance().apply(op.def(), inputs, op.attrs(), &device_);
    }
    if (results.size() != op.results().size()) {
      throw Error(ErrorCode::internal,
                  "constant_folding: " + op.name() + " returned " + std::to_string(results.size()) +
                      " results but the operation has " + std::to_string(op.results().size()));
    }
    for (size_t i = 0; i < results.size(); ++i) {
      results[i] = results[i].contiguous();
      TensorType got = type_of(results[i]);
      if (!(got == op.result(i)->type())) {
        throw Error(ErrorCode::internal, "constant_folding: " + op.name() + " evaluated to " +
                                             got.str() + " for result " + std::to_string(i) +
                                             " but the operation declares " +
                                             op.result(i)->type().str());
      }
    }
    return results;
  }

  std::string fresh_name(const Program& program) {
    std::string name;
    do {
      name = "folded_" + std::to_string(next_id_++);
    } while (program.find(name) != nullptr);
    return name;
  }

  Device device_;
  int64_t max_elements_;
  int next_id_ = 0;
};

}  // namespace

std::unique_ptr<Pass> make_constant_folding_pass(const Device& device, int64_t max_elements) {
  return std::make_unique<ConstantFoldingPass>(device, max_elements);
}

}  // namespace oar::ir
