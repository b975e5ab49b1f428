/// \file block.h
/// A block: operations in execution order. A program has one top-level
/// block; control-flow regions (later) will hold blocks of their own.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "oar/ir/operation.h"

namespace oar::ir {

class Block {
 public:
  using OpList = std::vector<std::unique_ptr<Operation>>;

  const OpList& ops() const { return ops_; }
  size_t size() const { return ops_.size(); }
  Operation& op(size_t i) const { return *ops_.at(i); }

  Operation* push_back(std::unique_ptr<Operation> op);
  /// Inserts before position `pos` (pos == size() appends).
  Operation* insert(size_t pos, std::unique_ptr<Operation> op);
  /// Removes the operations for which `pred` is true. Their results must
  /// have no remaining uses (the caller checks).
  void erase_if(const std::function<bool(const Operation&)>& pred);
  /// Replaces the whole list (passes that rebuild the order).
  void set_ops(OpList ops) { ops_ = std::move(ops); }
  OpList take_ops() { return std::move(ops_); }

 private:
  OpList ops_;
};

}  // namespace oar::ir
