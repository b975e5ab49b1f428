// Common subexpression elimination: a later operation of the same op on the
// same operands with equal attributes and result types is replaced by the
// first one. Ops with side effects (random numbers) are never merged.
#include <functional>
#include <unordered_map>
#include <unordered_set>

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
    std::unordered_set<const Operation*> duplicates;
    for (const auto& owned : program.block().ops()) {
      const Operation& op = *owned;
      if (has_side_effects(op.def())) continue;
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
      duplicates.insert(&op);
    }
    if (duplicates.empty()) return false;
    program.block().erase_if([&](const Operation& op) { return duplicates.count(&op) > 0; });
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> make_cse_pass() { return std::make_unique<CsePass>(); }

}  // namespace oar::ir
