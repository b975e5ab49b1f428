// Dead code elimination: an operation is live when one of its results
// reaches an output or an update, or when it has side effects (in its
// regions too).
#include "oar/ir/pass.h"

namespace oar::ir {

namespace {

class DcePass final : public Pass {
 public:
  std::string name() const override { return "dce"; }

  // One walk from the back: every user of an operation comes after it (in
  // the block, or in a region of a later operation), so when the walk
  // reaches it the dead users are already gone and its use lists say
  // whether anything live still reads it (Note [Use lists] in value.h).
  // Erasing drops the operation's own uses, which may make earlier ones
  // dead in turn. Linear in the size of the program.
  bool run(Program& program) override {
    Block& block = program.block();
    bool erased = false;
    for (Operation* op = block.back(); op != nullptr;) {
      Operation* prev = op->prev();
      bool used = false;
      for (const Value* result : op->results()) used = used || result->has_uses();
      if (!used && !has_side_effects(*op)) {
        block.erase(op);
        erased = true;
      }
      op = prev;
    }
    size_t constants_before = program.constants().size();
    program.drop_unused_constants();
    return erased || program.constants().size() != constants_before;
  }
};

}  // namespace

std::unique_ptr<Pass> make_dce_pass() { return std::make_unique<DcePass>(); }

}  // namespace oar::ir
