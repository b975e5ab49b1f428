/// \file value.h
/// An SSA value: defined once (a program input, a parameter, a constant, or
/// a result of an operation) and used by any number of operations.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "oar/ir/type.h"

namespace oar::ir {

class Operation;

/// Where a value comes from.
enum class ValueKind : uint8_t {
  input,      ///< fed by the caller on every run
  parameter,  ///< named state bound when the program runs (weights)
  constant,   ///< a tensor owned by the program (captured or folded)
  result,     ///< produced by an operation
  argument,   ///< an argument of a region, bound each time the region runs (Note [Region arguments] in block.h)
};

/// One use of a value: operand `operand` of operation `user`.
struct Use {
  Operation* user = nullptr;  // not owned
  uint32_t operand = 0;
  bool operator==(const Use&) const = default;
};

/// One SSA value. Owned by its Program; referenced by raw pointer.
///
/// Note [Use lists]
/// A value knows its uses: every (operation, operand index) reading it, kept
/// up to date by Operation's constructor, set_operand and destructor (which
/// Block::erase runs), so replace_all_uses and "is this still used?" cost
/// O(uses) instead of a walk over the program. The list is unordered: a use
/// is removed by moving the last one into its slot, and each operation
/// remembers the slot of each of its operands (Operation::use_slot) so the
/// removal is O(1). Outputs and updates of the Program reading the value are
/// counted apart (interface_uses), since they are few and named. The
/// verifier checks that the lists match the operations.
class Value {
 public:
  Value(int id, ValueKind kind, TensorType type, std::string name)
      : id_(id), kind_(kind), type_(std::move(type)), name_(std::move(name)) {}
  Value(const Value&) = delete;
  Value& operator=(const Value&) = delete;

  /// Unique within the program; the printer and JSON renumber densely.
  int id() const { return id_; }
  ValueKind kind() const { return kind_; }
  const TensorType& type() const { return type_; }
  void set_type(TensorType type) { type_ = std::move(type); }
  /// The name of an input, parameter or constant ("" for a result or argument).
  const std::string& name() const { return name_; }

  /// The operation defining a result (nullptr otherwise, and once that
  /// operation is erased) and which of its results this is.
  Operation* producer() const { return producer_; }
  int result_index() const { return result_index_; }
  void set_producer(Operation* op, int index) {
    producer_ = op;
    result_index_ = index;
  }

  /// The operations reading this value, in no particular order (Note [Use lists]).
  const std::vector<Use>& uses() const { return uses_; }
  /// How many outputs and updates of the program name this value.
  int interface_uses() const { return interface_uses_; }
  /// True when an operation, an output or an update reads the value.
  bool has_uses() const { return !uses_.empty() || interface_uses_ > 0; }

 private:
  friend class Operation;  // maintains uses_
  friend class Program;    // maintains interface_uses_

  int id_;
  ValueKind kind_;
  TensorType type_;
  std::string name_;
  Operation* producer_ = nullptr;  // not owned
  int result_index_ = 0;
  std::vector<Use> uses_;  // the users are not owned
  int interface_uses_ = 0;
};

}  // namespace oar::ir
