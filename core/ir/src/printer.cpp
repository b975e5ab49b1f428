// The text form of a program (see printer.h).
#include "oar/ir/printer.h"

#include <sstream>
#include <unordered_map>

namespace oar::ir {

std::string to_string(const Program& program) {
  std::unordered_map<const Value*, std::string> names;
  int next = 0;
  auto name_of = [&](const Value* v) -> std::string {
    auto it = names.find(v);
    return it != names.end() ? it->second : "%<undefined " + std::to_string(v->id()) + ">";
  };
  std::ostringstream os;
  os << "program {\n";
  for (const Value* v : program.inputs()) {
    names[v] = "%" + v->name();
    os << "  input " << names[v] << ": " << v->type().str() << "\n";
  }
  for (const Value* v : program.parameters()) {
    names[v] = "%" + v->name();
    os << "  param " << names[v] << ": " << v->type().str() << "\n";
  }
  for (const Value* v : program.constants()) {
    names[v] = "%" + v->name();
    os << "  const " << names[v] << ": " << v->type().str() << "\n";
  }
  for (const auto& op : program.block().ops()) {
    os << "  ";
    for (size_t i = 0; i < op->results().size(); ++i) {
      const Value* r = op->result(i);
      names[r] = "%" + std::to_string(next++);
      os << (i ? ", " : "") << names[r] << ": " << r->type().str();
    }
    os << " = " << op->name() << "(";
    for (size_t i = 0; i < op->operands().size(); ++i) os << (i ? ", " : "") << name_of(op->operand(i));
    os << ")";
    const auto& items = op->attrs().items();
    if (!items.empty()) {
      os << " {";
      for (size_t i = 0; i < items.size(); ++i) {
        os << (i ? ", " : "") << items[i].first << "=" << attribute_str(items[i].second);
      }
      os << "}";
    }
    os << "\n";
  }
  for (const auto& o : program.outputs()) os << "  output " << o.name << ": " << name_of(o.value) << "\n";
  for (const auto& u : program.updates()) os << "  update %" << u.name << " <- " << name_of(u.value) << "\n";
  os << "}\n";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Program& program) { return os << to_string(program); }

}  // namespace oar::ir
