// Common subexpression elimination: a later operation of the same op on the
// same operands with equal attributes and result types is replaced by the
// first one. Ops with side effects (random numbers) and ops with regions
// are never merged. One walk of the block; each merge costs O(uses) (Note
// [Use lists] in value.h), so the pass is linear in the program's size.
#include <functional>
#include <unordered_map>

#include "oar/ir/pass.h"

namespace oar::ir {

namespace {

// Equal names with equal values, in any order.
bool same_attrs(const AttributeMap& a, const AttributeMap& b) {
  if (a.items().size() != b.items().size()) return false;
  for (const auto& [name, value] : a.items()) {
    const Attribute* other = b.find(name);
    if (other == nullptr || !(*other == value)) return false;
  }
  return true;
}

bool equivalent(const Operation& a, const Operation& b) {
  if (a.def().id != b.def().id || a.operands() != b.operands() ||
      a.results().size() != b.results().size()) {
    return false;
  }
  for (size_t i = 0; i < a.results().size(); ++i) {
    if (!(a.result(i)->type() == b.result(i)->type())) return false;
  }
  return same_attrs(a.attrs(), b.attrs());
}

size_t shallow_hash(const Operation& op) {
  size_t h = std::hash<int>()(op.def().id);
  for (const Value* v : op.operands()) h = h * 1000003u ^ std::hash<const Value*>()(v);
  return h;
}

class CsePass final : public Pass {
 public:
  std::string name() const override { return "cse"; }

  bool run(Program& program) override {
    // Operands are rewritten as duplicates are found, so walking in block
    // order also merges chains of duplicates.
    std::unordered_map<size_t, std::vector<const Operation*>> seen;
    seen.reserve(program.block().size());
    bool changed = false;
    Block& block = program.block();
    for (Operation* next = block.front(); next != nullptr;) {
      Operation& op = *next;
      next = op.next();
      if (has_side_effects(op.def()) || op.num_regions() > 0) continue;
      auto& candidates = seen[shallow_hash(op)];
      const Operation* first = nullptr;
      for (const Operation* c : candidates) {
        if (equivalent(*c, op)) {
          first = c;
          break;
        }
      }
      if (first == nullptr) {
        candidates.push_back(&op);
        continue;
      }
      for (size_t i = 0; i < op.results().size(); ++i)
        program.replace_all_uses(op.result(i), first->result(i));
      block.erase(&op);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_cse_pass() { return std::make_unique<CsePass>(); }

}  // namespace oar::ir
