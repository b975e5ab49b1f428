/// \file value.h
/// An SSA value: defined once (a program input, a parameter, a constant, or
/// a result of an operation) and used by any number of operations.
#pragma once

#include <string>

#include "oar/ir/type.h"

namespace oar::ir {

class Operation;

/// Where a value comes from.
enum class ValueKind : uint8_t {
  input,      ///< fed by the caller on every run
  parameter,  ///< named state bound when the program runs (weights)
  constant,   ///< a tensor owned by the program (captured or folded)
  result,     ///< produced by an operation
};

/// One SSA value. Owned by its Program; referenced by raw pointer.
class Value {
 public:
  Value(int id, ValueKind kind, TensorType type, std::string name)
      : id_(id), kind_(kind), type_(std::move(type)), name_(std::move(name)) {}

  /// Unique within the program; the printer and JSON renumber densely.
  int id() const { return id_; }
  ValueKind kind() const { return kind_; }
  const TensorType& type() const { return type_; }
  void set_type(TensorType type) { type_ = std::move(type); }
  /// The name of an input, parameter or constant ("" for a result).
  const std::string& name() const { return name_; }

  /// The operation defining a result (nullptr otherwise) and which of its
  /// results this is.
  Operation* producer() const { return producer_; }
  int result_index() const { return result_index_; }
  void set_producer(Operation* op, int index) {
    producer_ = op;
    result_index_ = index;
  }

 private:
  int id_;
  ValueKind kind_;
  TensorType type_;
  std::string name_;
  Operation* producer_ = nullptr;
  int result_index_ = 0;
};

}  // namespace oar::ir
