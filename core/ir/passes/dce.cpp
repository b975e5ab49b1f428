// Dead code elimination: an operation is live when one of its results
// reaches an output or an update, or when it has side effects.
#include <unordered_set>

#include "oar/ir/pass.h"

namespace oar::ir {

namespace {

class DcePass final : public Pass {
 public:
  std::string name() const override { return "dce"; }

  bool run(Program& program) override {
    std::unordered_set<const Value*> live;
    for (const auto& out : program.outputs()) live.insert(out.value);
    for (const auto& update : program.updates()) live.insert(update.value);

    std::unordered_set<const Operation*> dead;
    const Block& block = program.block();
    for (size_t i = block.size(); i-- > 0;) {
      const Operation& op = block.op(i);
      bool keep = has_side_effects(op.def());
      for (const Value* result : op.results()) keep = keep || live.count(result) > 0;
      if (!keep) {
        dead.insert(&op);
        continue;
      }
      for (const Value* operand : op.operands()) live.insert(operand);
    }
    if (!dead.empty())
      program.block().erase_if([&](const Operation& op) { return dead.count(&op) > 0; });

    size_t constants_before = program.constants().size();
    program.drop_unused_constants();
    return !dead.empty() || program.constants().size() != constants_before;
  }
};

}  // namespace

std::unique_ptr<Pass> make_dce_pass() { return std::make_unique<DcePass>(); }

}  // namespace oar::ir
