// Operations: operands with use lists (Note [Use lists]) and regions.
#include "oar/ir/operation.h"

#include "oar/error.h"
#include "oar/ir/block.h"

namespace oar::ir {

Operation::Operation(const OpDef& def, std::vector<Value*> operands, AttributeMap attrs)
    : def_(&def), operands_(std::move(operands)), attrs_(std::move(attrs)) {
  use_slots_.resize(operands_.size());
  for (size_t i = 0; i < operands_.size(); ++i) {
    OAR_CHECK_ARG(operands_[i] != nullptr,
                  def.name + ": operand " + std::to_string(i) + " is null");
  }
  for (size_t i = 0; i < operands_.size(); ++i) add_use(i);
}

Operation::~Operation() {
  regions_.clear();  // their operations drop their uses first
  for (size_t i = operands_.size(); i-- > 0;) drop_use(i);
}

void Operation::add_use(size_t i) {
  Value* v = operands_[i];
  use_slots_[i] = static_cast<uint32_t>(v->uses_.size());
  v->uses_.push_back(Use{this, static_cast<uint32_t>(i)});
}

void Operation::drop_use(size_t i) {
  std::vector<Use>& uses = operands_[i]->uses_;
  const uint32_t slot = use_slots_[i];
  if (slot + 1 != uses.size()) {
    uses[slot] = uses.back();
    uses[slot].user->use_slots_[uses[slot].operand] = slot;
  }
  uses.pop_back();
}

void Operation::set_operand(size_t i, Value* value) {
  OAR_CHECK_ARG(i < operands_.size(), name() + ": set_operand(" + std::to_string(i) +
                                          ") on an operation with " +
                                          std::to_string(operands_.size()) + " operands");
  OAR_CHECK_ARG(value != nullptr, name() + ": operand " + std::to_string(i) + " set to null");
  if (operands_[i] == value) return;
  drop_use(i);
  operands_[i] = value;
  add_use(i);
}

Operation* Operation::parent_op() const { return block_ ? block_->parent_op() : nullptr; }

Block& Operation::region(size_t i) const {
  OAR_CHECK_ARG(i < regions_.size(), name() + ": region " + std::to_string(i) +
                                         " asked of an operation with " +
                                         std::to_string(regions_.size()) + " regions");
  return *regions_[i];
}

Block& Operation::add_region() {
  regions_.push_back(std::make_unique<Block>(this));
  return *regions_.back();
}

bool Operation::is_ancestor_of(const Operation* other) const {
  for (; other; other = other->parent_op()) {
    if (other == this) return true;
  }
  return false;
}

// Host ops (collectives, Note [Host ops] in core/src/dist/collective_ops.cpp)
// talk to other ranks, which wait for them: never merged, folded or dropped.
bool has_side_effects(const OpDef& def) { return def.random || def.host != nullptr; }

bool has_side_effects(const Operation& op) {
  if (has_side_effects(op.def())) return true;
  for (size_t r = 0; r < op.num_regions(); ++r) {
    for (const auto& inner : op.region(r).ops()) {
      if (has_side_effects(*inner)) return true;
    }
  }
  return false;
}

}  // namespace oar::ir
