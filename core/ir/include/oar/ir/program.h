/// \file program.h
/// A Program: the unit of static mode. It owns its values and one block of
/// operations, and names its interface:
///  - inputs      fed on every run, in order;
///  - parameters  named tensors bound when it runs (weights; saved beside
///                the program in safetensors);
///  - constants   tensors the program owns (captured or folded);
///  - outputs     named results returned by a run, in order;
///  - updates     parameter <- value assignments applied after a run (the
///                optimizer step of a training program).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "oar/ir/block.h"
#include "oar/tensor.h"

namespace oar::ir {

/// Parameter tensors by name (ordered, so saves are deterministic).
using ParamMap = std::map<std::string, Tensor>;

/// An output or update: a name and the value it reads (which counts it in
/// Value::interface_uses; change it through Program, not directly).
struct NamedValue {
  std::string name;
  Value* value = nullptr;  // not owned (the program's)
};

class Program {
 public:
  Program() = default;
  /// Erases the operations before the values they use go.
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  Program(Program&&) = default;
  Program& operator=(Program&& other) noexcept;

  /// A deep copy (constants share their tensors, which are never mutated).
  Program clone() const;

  Block& block() { return block_; }
  const Block& block() const { return block_; }

  /// Interface values. Names must be unique among inputs, parameters and
  /// constants (throws naming the duplicate).
  Value* add_input(const std::string& name, TensorType type);
  Value* add_parameter(const std::string& name, TensorType type);
  Value* add_constant(const std::string& name, const Tensor& value);
  /// Adds an argument of `type` to the region `block` (Note [Region
  /// arguments] in block.h); a top-level block takes none.
  Value* add_argument(Block& block, TensorType type);
  /// Appends an operation of `def` on `operands` with results of the given
  /// types (checked by verify(), not here).
  Operation* append(const OpDef& def, std::vector<Value*> operands, AttributeMap attrs,
                    const std::vector<TensorType>& result_types);
  /// Same, inserting at top-level block position `pos` (O(1) at the end;
  /// elsewhere see Note [Blocks as intrusive lists]).
  Operation* insert(size_t pos, const OpDef& def, std::vector<Value*> operands, AttributeMap attrs,
                    const std::vector<TensorType>& result_types);
  /// Same, appending to `block` (the top-level block or a region).
  Operation* append(Block& block, const OpDef& def, std::vector<Value*> operands,
                    AttributeMap attrs, const std::vector<TensorType>& result_types);
  /// Same, inserting just before `before` in its block, in O(1).
  Operation* insert_before(Operation* before, const OpDef& def, std::vector<Value*> operands,
                           AttributeMap attrs, const std::vector<TensorType>& result_types);
  /// Adds a result of `type` to `op`: for a region op whose results are
  /// known only once its regions are built (a traced cond).
  Value* add_result(Operation& op, TensorType type);

  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& parameters() const { return parameters_; }
  const std::vector<Value*>& constants() const { return constants_; }
  /// The tensor of a constant value.
  const Tensor& constant_value(const Value* value) const;
  /// Removes constants no operation, output or update uses (O(constants)).
  void drop_unused_constants();

  const std::vector<NamedValue>& outputs() const { return outputs_; }
  /// Adds a named output; "" names it output_<index>.
  void add_output(Value* value, std::string name = "");
  void set_output(size_t index, Value* value);
  void clear_outputs();

  const std::vector<NamedValue>& updates() const { return updates_; }
  /// After a run, parameter `name` takes the value of `value`.
  void add_update(const std::string& name, Value* value);
  void set_update(size_t index, Value* value);
  void clear_updates();

  /// The input, parameter or constant of that name, or nullptr (O(1)).
  Value* find(const std::string& name) const;
  /// All values ever created, by id (erased operations' results included:
  /// only values reachable from the block and interface are live).
  const std::vector<std::unique_ptr<Value>>& values() const { return values_; }
  Value* value(int id) const { return values_.at(static_cast<size_t>(id)).get(); }

  /// Replaces every use of `from` (operands in any block, outputs,
  /// updates) with `to`, in O(uses of from) (Note [Use lists] in value.h).
  void replace_all_uses(Value* from, Value* to);
  /// Operations of the top-level block using each value, in block order
  /// (computed on demand; Value::uses() is kept up to date instead).
  std::unordered_map<const Value*, std::vector<Operation*>> users() const;

 private:
  Value* new_value(ValueKind kind, TensorType type, std::string name);
  void check_new_name(const std::string& name) const;
  Operation* insert_into(Block& block, Operation* before, const OpDef& def,
                         std::vector<Value*> operands, AttributeMap attrs,
                         const std::vector<TensorType>& result_types);
  void copy_ops(const Block& from, Block& to, std::unordered_map<const Value*, Value*>& map);

  // Declared first so that they are destroyed last: operations point at them.
  std::vector<std::unique_ptr<Value>> values_;       // owned: every value ever made
  Block block_;                                      // owned: the operations
  std::vector<Value*> inputs_;                       // not owned (in values_)
  std::vector<Value*> parameters_;                   // not owned (in values_)
  std::vector<Value*> constants_;                    // not owned (in values_)
  std::unordered_map<std::string, Value*> by_name_;  // inputs, parameters, constants; not owned
  std::unordered_map<const Value*, Tensor> constant_values_;
  std::vector<NamedValue> outputs_;  // each counts in its value's interface_uses
  std::vector<NamedValue> updates_;  // each counts in its value's interface_uses
};

/// The TensorType of a tensor.
TensorType type_of(const Tensor& t);

}  // namespace oar::ir
