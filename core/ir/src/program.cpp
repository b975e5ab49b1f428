// Programs: values, the block, and the named interface.
#include "oar/ir/program.h"

#include <unordered_set>

#include "oar/error.h"

namespace oar::ir {

TensorType type_of(const Tensor& t) { return TensorType{t.dtype(), t.shape()}; }

Value* Program::new_value(ValueKind kind, TensorType type, std::string name) {
  values_.push_back(std::make_unique<Value>(static_cast<int>(values_.size()), kind, std::move(type), std::move(name)));
  return values_.back().get();
}

void Program::check_new_name(const std::string& name) const {
  OAR_CHECK_ARG(!name.empty(), "program: inputs, parameters and constants need a name");
  OAR_CHECK_ARG(find(name) == nullptr, "program: the name '" + name + "' is already used by another input, "
                                       "parameter or constant");
}

Value* Program::add_input(const std::string& name, TensorType type) {
  check_new_name(name);
  Value* v = new_value(ValueKind::input, std::move(type), name);
  inputs_.push_back(v);
  return v;
}

Value* Program::add_parameter(const std::string& name, TensorType type) {
  check_new_name(name);
  OAR_CHECK_ARG(type.is_static(), "program: parameter '" + name + "' has dynamic type " + type.str() +
                                      "; parameters need static shapes");
  Value* v = new_value(ValueKind::parameter, std::move(type), name);
  parameters_.push_back(v);
  return v;
}

Value* Program::add_constant(const std::string& name, const Tensor& value) {
  check_new_name(name);
  OAR_CHECK_ARG(value.defined() && !value.is_symbolic(),
                "program: constant '" + name + "' needs a tensor with values");
  Value* v = new_value(ValueKind::constant, type_of(value), name);
  constants_.push_back(v);
  constant_values_[v] = value;
  return v;
}

const Tensor& Program::constant_value(const Value* value) const {
  auto it = constant_values_.find(value);
  OAR_CHECK_ARG(it != constant_values_.end(), "program: value %" + std::to_string(value->id()) + " is not a constant");
  return it->second;
}

void Program::drop_unused_constants() {
  std::unordered_set<const Value*> used;
  for (const auto& op : block_.ops()) used.insert(op->operands().begin(), op->operands().end());
  for (const auto& o : outputs_) used.insert(o.value);
  for (const auto& u : updates_) used.insert(u.value);
  std::erase_if(constants_, [&](Value* c) {
    if (used.count(c)) return false;
    constant_values_.erase(c);
    return true;
  });
}

Operation* Program::append(const OpDef& def, std::vector<Value*> operands, AttributeMap attrs,
                           const std::vector<TensorType>& result_types) {
  return insert(block_.size(), def, std::move(operands), std::move(attrs), result_types);
}

Operation* Program::insert(size_t pos, const OpDef& def, std::vector<Value*> operands, AttributeMap attrs,
                           const std::vector<TensorType>& result_types) {
  for (size_t i = 0; i < operands.size(); ++i) {
    OAR_CHECK_ARG(operands[i] != nullptr, def.name + ": operand " + std::to_string(i) + " is null");
  }
  auto op = std::make_unique<Operation>(def, std::move(operands), std::move(attrs));
  for (size_t i = 0; i < result_types.size(); ++i) {
    Value* v = new_value(ValueKind::result, result_types[i], "");
    v->set_producer(op.get(), static_cast<int>(i));
    op->add_result(v);
  }
  return block_.insert(pos, std::move(op));
}

void Program::add_output(Value* value, std::string name) {
  OAR_CHECK_ARG(value != nullptr, "program: output value is null");
  if (name.empty()) name = "output_" + std::to_string(outputs_.size());
  for (const auto& o : outputs_) {
    OAR_CHECK_ARG(o.name != name, "program: an output is already named '" + name + "'");
  }
  outputs_.push_back({std::move(name), value});
}

void Program::add_update(const std::string& name, Value* value) {
  Value* param = find(name);
  OAR_CHECK_ARG(param && param->kind() == ValueKind::parameter,
                "program: update of '" + name + "' names no parameter of the program");
  OAR_CHECK_ARG(value != nullptr, "program: update of '" + name + "' has a null value");
  OAR_CHECK_ARG(value->type() == param->type(), "program: update of parameter '" + name + "' of type " +
                                                    param->type().str() + " has type " + value->type().str());
  for (const auto& u : updates_) OAR_CHECK_ARG(u.name != name, "program: parameter '" + name + "' is updated twice");
  updates_.push_back({name, value});
}

Value* Program::find(const std::string& name) const {
  for (const auto* list : {&inputs_, &parameters_, &constants_}) {
    for (Value* v : *list) {
      if (v->name() == name) return v;
    }
  }
  return nullptr;
}

void Program::replace_all_uses(Value* from, Value* to) {
  for (const auto& op : block_.ops()) {
    for (size_t i = 0; i < op->operands().size(); ++i) {
      if (op->operand(i) == from) op->set_operand(i, to);
    }
  }
  for (auto& o : outputs_) {
    if (o.value == from) o.value = to;
  }
  for (auto& u : updates_) {
    if (u.value == from) u.value = to;
  }
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
  for (const auto& op : block_.ops()) {
    std::vector<Value*> operands;
    for (Value* v : op->operands()) {
      auto it = map.find(v);
      OAR_CHECK_ARG(it != map.end(), "program: clone found operation '" + op->name() +
                                         "' using a value defined after it or nowhere");
      operands.push_back(it->second);
    }
    std::vector<TensorType> types;
    for (Value* r : op->results()) types.push_back(r->type());
    Operation* copy = p.append(op->def(), std::move(operands), op->attrs(), types);
    for (size_t i = 0; i < types.size(); ++i) map[op->result(i)] = copy->result(i);
  }
  for (const auto& o : outputs_) p.outputs_.push_back({o.name, map.at(o.value)});
  for (const auto& u : updates_) p.updates_.push_back({u.name, map.at(u.value)});
  return p;
}

}  // namespace oar::ir
