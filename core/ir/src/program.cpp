// Programs: values, the block, and the named interface.
#include "oar/ir/program.h"

#include "oar/error.h"

namespace oar::ir {

TensorType type_of(const Tensor& t) { return TensorType{t.dtype(), t.shape()}; }

Program::~Program() { block_.clear(); }

Program& Program::operator=(Program&& other) noexcept {
  if (this == &other) return *this;
  block_.clear();  // the operations go before the values they use
  values_ = std::move(other.values_);
  block_ = std::move(other.block_);
  inputs_ = std::move(other.inputs_);
  parameters_ = std::move(other.parameters_);
  constants_ = std::move(other.constants_);
  by_name_ = std::move(other.by_name_);
  constant_values_ = std::move(other.constant_values_);
  outputs_ = std::move(other.outputs_);
  updates_ = std::move(other.updates_);
  return *this;
}

Value* Program::new_value(ValueKind kind, TensorType type, std::string name) {
  values_.push_back(std::make_unique<Value>(static_cast<int>(values_.size()), kind, std::move(type),
                                            std::move(name)));
  return values_.back().get();
}

void Program::check_new_name(const std::string& name) const {
  OAR_CHECK_ARG(!name.empty(), "program: inputs, parameters and constants need a name");
  OAR_CHECK_ARG(find(name) == nullptr, "program: the name '" + name +
                                           "' is already used by another input, "
                                           "parameter or constant");
}

Value* Program::add_input(const std::string& name, TensorType type) {
  check_new_name(name);
  Value* v = new_value(ValueKind::input, std::move(type), name);
  inputs_.push_back(v);
  by_name_.emplace(name, v);
  return v;
}

Value* Program::add_parameter(const std::string& name, TensorType type) {
  check_new_name(name);
  OAR_CHECK_ARG(type.is_static(), "program: parameter '" + name + "' has dynamic type " +
                                      type.str() + "; parameters need static shapes");
  Value* v = new_value(ValueKind::parameter, std::move(type), name);
  parameters_.push_back(v);
  by_name_.emplace(name, v);
  return v;
}

Value* Program::add_constant(const std::string& name, const Tensor& value) {
  check_new_name(name);
  OAR_CHECK_ARG(value.defined() && !value.is_symbolic(),
                "program: constant '" + name + "' needs a tensor with values");
  Value* v = new_value(ValueKind::constant, type_of(value), name);
  constants_.push_back(v);
  by_name_.emplace(name, v);
  constant_values_[v] = value;
  return v;
}

const Tensor& Program::constant_value(const Value* value) const {
  auto it = constant_values_.find(value);
  OAR_CHECK_ARG(it != constant_values_.end(),
                "program: value %" + std::to_string(value->id()) + " is not a constant");
  return it->second;
}

void Program::drop_unused_constants() {
  std::erase_if(constants_, [&](Value* c) {
    if (c->has_uses()) return false;
    constant_values_.erase(c);
    by_name_.erase(c->name());
    return true;
  });
}

Value* Program::add_argument(Block& block, TensorType type) {
  OAR_CHECK_ARG(block.parent_op() != nullptr,
                "program: the top-level block takes no arguments; only a region does");
  Value* v = new_value(ValueKind::argument, std::move(type), "");
  block.args_.push_back(v);
  return v;
}

Operation* Program::append(const OpDef& def, std::vector<Value*> operands, AttributeMap attrs,
                           const std::vector<TensorType>& result_types) {
  return insert_into(block_, nullptr, def, std::move(operands), std::move(attrs), result_types);
}

Operation* Program::insert(size_t pos, const OpDef& def, std::vector<Value*> operands,
                           AttributeMap attrs, const std::vector<TensorType>& result_types) {
  Operation* before = pos >= block_.size() ? nullptr : &block_.op(pos);
  return insert_into(block_, before, def, std::move(operands), std::move(attrs), result_types);
}

Operation* Program::append(Block& block, const OpDef& def, std::vector<Value*> operands,
                           AttributeMap attrs, const std::vector<TensorType>& result_types) {
  return insert_into(block, nullptr, def, std::move(operands), std::move(attrs), result_types);
}

Operation* Program::insert_before(Operation* before, const OpDef& def, std::vector<Value*> operands,
                                  AttributeMap attrs, const std::vector<TensorType>& result_types) {
  OAR_CHECK_ARG(before != nullptr && before->block() != nullptr,
                def.name + ": insert_before needs an operation that is in a block");
  return insert_into(*before->block(), before, def, std::move(operands), std::move(attrs),
                     result_types);
}

Value* Program::add_result(Operation& op, TensorType type) {
  Value* v = new_value(ValueKind::result, std::move(type), "");
  v->set_producer(&op, static_cast<int>(op.results().size()));
  op.add_result(v);
  return v;
}

Operation* Program::insert_into(Block& block, Operation* before, const OpDef& def,
                                std::vector<Value*> operands, AttributeMap attrs,
                                const std::vector<TensorType>& result_types) {
  auto op = std::make_unique<Operation>(def, std::move(operands),
                                        std::move(attrs));  // checks for null operands
  for (size_t i = 0; i < result_types.size(); ++i) {
    Value* v = new_value(ValueKind::result, result_types[i], "");
    v->set_producer(op.get(), static_cast<int>(i));
    op->add_result(v);
  }
  return block.insert(before, std::move(op));
}

void Program::add_output(Value* value, std::string name) {
  OAR_CHECK_ARG(value != nullptr, "program: output value is null");
  if (name.empty()) name = "output_" + std::to_string(outputs_.size());
  for (const auto& o : outputs_) {
    OAR_CHECK_ARG(o.name != name, "program: an output is already named '" + name + "'");
  }
  outputs_.push_back({std::move(name), value});
  ++value->interface_uses_;
}

void Program::set_output(size_t index, Value* value) {
  OAR_CHECK_ARG(value != nullptr, "program: output value is null");
  NamedValue& o = outputs_.at(index);
  --o.value->interface_uses_;
  o.value = value;
  ++value->interface_uses_;
}

void Program::clear_outputs() {
  for (const auto& o : outputs_) --o.value->interface_uses_;
  outputs_.clear();
}

void Program::set_update(size_t index, Value* value) {
  OAR_CHECK_ARG(value != nullptr, "program: update value is null");
  NamedValue& u = updates_.at(index);
  --u.value->interface_uses_;
  u.value = value;
  ++value->interface_uses_;
}

void Program::clear_updates() {
  for (const auto& u : updates_) --u.value->interface_uses_;
  updates_.clear();
}

void Program::add_update(const std::string& name, Value* value) {
  Value* param = find(name);
  OAR_CHECK_ARG(param && param->kind() == ValueKind::parameter,
                "program: update of '" + name + "' names no parameter of the program");
  OAR_CHECK_ARG(value != nullptr, "program: update of '" + name + "' has a null value");
  OAR_CHECK_ARG(value->type() == param->type(), "program: update of parameter '" + name +
                                                    "' of type " + param->type().str() +
                                                    " has type " + value->type().str());
  for (const auto& u : updates_)
    OAR_CHECK_ARG(u.name != name, "program: parameter '" + name + "' is updated twice");
  updates_.push_back({name, value});
  ++value->interface_uses_;
}

Value* Program::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

void Program::replace_all_uses(Value* from, Value* to) {
  OAR_CHECK_ARG(from != nullptr && to != nullptr,
                "program: replace_all_uses was given a null value");
  if (from == to) return;
  // set_operand moves the use off from's list; the last one goes in O(1).
  while (!from->uses_.empty()) {
    const Use use = from->uses_.back();
    use.user->set_operand(use.operand, to);
  }
  if (from->interface_uses_ == 0) return;
  for (auto& o : outputs_) {
    if (o.value == from) o.value = to;
  }
  for (auto& u : updates_) {
    if (u.value == from) u.value = to;
  }
  to->interface_uses_ += from->interface_uses_;
  from->interface_uses_ = 0;
}

std::unordered_map<const Value*, std::vector<Operation*>> Program::users() const {
  std::unordered_map<const Value*, std::vector<Operation*>> out;
  for (const auto& op : block_.ops()) {
    for (Value* v : op->operands()) {
      auto& list = out[v];
      if (list.empty() || list.back() != op.get()) list.push_back(op.get());
    }
  }
  return out;
}

Program Program::clone() const {
  Program p;
  std::unordered_map<const Value*, Value*> map;
  for (Value* v : inputs_) map[v] = p.add_input(v->name(), v->type());
  for (Value* v : parameters_) map[v] = p.add_parameter(v->name(), v->type());
  for (Value* v : constants_) map[v] = p.add_constant(v->name(), constant_value(v));
  p.copy_ops(block_, p.block_, map);
  for (const auto& o : outputs_) {
    p.outputs_.push_back({o.name, map.at(o.value)});
    ++p.outputs_.back().value->interface_uses_;
  }
  for (const auto& u : updates_) {
    p.updates_.push_back({u.name, map.at(u.value)});
    ++p.updates_.back().value->interface_uses_;
  }
  return p;
}

// Copies the operations of `from` (of another program) into `to`, a block
// of this program, regions included, translating values through `map`.
// Values a region defines stay in `map`, which is harmless: the original
// verified, so nothing outside the region refers to them.
void Program::copy_ops(const Block& from, Block& to,
                       std::unordered_map<const Value*, Value*>& map) {
  for (const auto& op : from.ops()) {
    std::vector<Value*> operands;
    for (Value* v : op->operands()) {
      auto it = map.find(v);
      OAR_CHECK_ARG(it != map.end(), "program: clone found operation '" + op->name() +
                                         "' using a value defined after it or nowhere");
      operands.push_back(it->second);
    }
    std::vector<TensorType> types;
    for (Value* r : op->results()) types.push_back(r->type());
    Operation* copy = append(to, op->def(), std::move(operands), op->attrs(), types);
    for (size_t i = 0; i < types.size(); ++i) map[op->result(i)] = copy->result(i);
    for (size_t r = 0; r < op->num_regions(); ++r) {
      Block& region = copy->add_region();
      for (Value* a : op->region(r).arguments()) map[a] = add_argument(region, a->type());
      copy_ops(op->region(r), region, map);
    }
  }
}

}  // namespace oar::ir
