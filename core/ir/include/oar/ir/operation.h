/// \file operation.h
/// An operation: an application of a registered op (its OpDef) to operand
/// values, with typed attributes, defining result values. An operation sits
/// in one Block (a node of its intrusive list) and may own regions: blocks
/// of their own, for control flow (Note [Regions] in block.h).
#pragma once

#include <memory>
#include <vector>

#include "oar/ir/attribute.h"
#include "oar/ir/value.h"
#include "oar/op.h"

namespace oar::ir {

class Block;

class Operation {
 public:
  /// Registers a use of each operand (Note [Use lists] in value.h).
  Operation(const OpDef& def, std::vector<Value*> operands, AttributeMap attrs);
  /// Drops its uses of its operands, and its regions (with their operations).
  ~Operation();
  Operation(const Operation&) = delete;
  Operation& operator=(const Operation&) = delete;

  const OpDef& def() const { return *def_; }
  const std::string& name() const { return def_->name; }
  const std::vector<Value*>& operands() const { return operands_; }
  Value* operand(size_t i) const { return operands_.at(i); }
  /// Makes operand `i` read `value`, moving the use from the old value's
  /// use list to the new one's in O(1).
  void set_operand(size_t i, Value* value);
  /// Where operand `i`'s Use sits in operand(i)->uses() (for the verifier).
  uint32_t use_slot(size_t i) const { return use_slots_.at(i); }
  const std::vector<Value*>& results() const { return results_; }
  Value* result(size_t i = 0) const { return results_.at(i); }
  const AttributeMap& attrs() const { return attrs_; }
  AttributeMap& mutable_attrs() { return attrs_; }

  /// Used by Program::append.
  void add_result(Value* value) { results_.push_back(value); }

  /// The block holding this operation (nullptr before it is inserted).
  Block* block() const { return block_; }
  /// The operation whose region holds this one (nullptr at top level).
  Operation* parent_op() const;
  /// The neighbours in the block (nullptr at the ends).
  Operation* prev() const { return prev_; }
  Operation* next() const { return next_; }

  /// Regions: blocks owned by this operation, whose parent_op() is this.
  size_t num_regions() const { return regions_.size(); }
  Block& region(size_t i) const;
  /// Adds an empty region and returns it.
  Block& add_region();
  /// True when `other` is this operation or sits (at any depth) in one of its regions.
  bool is_ancestor_of(const Operation* other) const;

 private:
  friend class Block;  // links and unlinks the list nodes

  void add_use(size_t i);
  void drop_use(size_t i);

  const OpDef* def_;                 // not owned (the registry's)
  std::vector<Value*> operands_;     // not owned (the program's)
  std::vector<uint32_t> use_slots_;  // use_slots_[i]: index in operands_[i]->uses_
  std::vector<Value*> results_;      // not owned (the program's)
  AttributeMap attrs_;
  std::vector<std::unique_ptr<Block>> regions_;  // owned
  Block* block_ = nullptr;                       // not owned: the block listing this op
  Operation* prev_ = nullptr;                    // not owned (the block owns its ops)
  Operation* next_ = nullptr;                    // not owned (the block owns its ops)
};

/// True for ops whose results depend on more than their operands and
/// attributes, or that must never be merged or folded (random numbers).
bool has_side_effects(const OpDef& def);
/// has_side_effects of the op or of any operation in its regions.
bool has_side_effects(const Operation& op);

}  // namespace oar::ir
