/// \file operation.h
/// An operation: an application of a registered op (its OpDef) to operand
/// values, with typed attributes, defining result values.
#pragma once

#include <vector>

#include "oar/ir/attribute.h"
#include "oar/ir/value.h"
#include "oar/op.h"

namespace oar::ir {

class Operation {
 public:
  Operation(const OpDef& def, std::vector<Value*> operands, AttributeMap attrs)
      : def_(&def), operands_(std::move(operands)), attrs_(std::move(attrs)) {}

  const OpDef& def() const { return *def_; }
  const std::string& name() const { return def_->name; }
  const std::vector<Value*>& operands() const { return operands_; }
  Value* operand(size_t i) const { return operands_.at(i); }
  void set_operand(size_t i, Value* value) { operands_.at(i) = value; }
  const std::vector<Value*>& results() const { return results_; }
  Value* result(size_t i = 0) const { return results_.at(i); }
  const AttributeMap& attrs() const { return attrs_; }
  AttributeMap& mutable_attrs() { return attrs_; }

  /// Used by Program::append.
  void add_result(Value* value) { results_.push_back(value); }

 private:
  const OpDef* def_;
  std::vector<Value*> operands_;
  std::vector<Value*> results_;
  AttributeMap attrs_;
};

/// True for ops whose results depend on more than their operands and
/// attributes, or that must never be merged or folded (random numbers).
bool has_side_effects(const OpDef& def);

}  // namespace oar::ir
