// The text form of a program (see printer.h).
#include "oar/ir/printer.h"

#include <sstream>
#include <unordered_map>

namespace oar::ir {

namespace {

class Printer {
 public:
  std::string print(const Program& program) {
    os_ << "program {\n";
    for (const Value* v : program.inputs()) {
      names_[v] = "%" + v->name();
      os_ << "  input " << names_[v] << ": " << v->type().str() << "\n";
    }
    for (const Value* v : program.parameters()) {
      names_[v] = "%" + v->name();
      os_ << "  param " << names_[v] << ": " << v->type().str() << "\n";
    }
    for (const Value* v : program.constants()) {
      names_[v] = "%" + v->name();
      os_ << "  const " << names_[v] << ": " << v->type().str() << "\n";
    }
    print_block(program.block(), "  ");
    for (const auto& o : program.outputs())
      os_ << "  output " << o.name << ": " << name_of(o.value) << "\n";
    for (const auto& u : program.updates())
      os_ << "  update %" << u.name << " <- " << name_of(u.value) << "\n";
    os_ << "}\n";
    return os_.str();
  }

 private:
  std::string name_of(const Value* v) const {
    auto it = names_.find(v);
    return it != names_.end() ? it->second : "%<undefined " + std::to_string(v->id()) + ">";
  }

  // An operation's results are numbered before the operations of its
  // regions, which print below it, indented, one "region {...}" each.
  void print_block(const Block& block, const std::string& indent) {
    for (const auto& op : block.ops()) {
      os_ << indent;
      for (size_t i = 0; i < op->results().size(); ++i) {
        const Value* r = op->result(i);
        names_[r] = "%" + std::to_string(next_++);
        os_ << (i ? ", " : "") << names_[r] << ": " << r->type().str();
      }
      os_ << (op->results().empty() ? "" : " = ") << op->name() << "(";  // yield has none
      for (size_t i = 0; i < op->operands().size(); ++i)
        os_ << (i ? ", " : "") << name_of(op->operand(i));
      os_ << ")";
      const auto& items = op->attrs().items();
      if (!items.empty()) {
        os_ << " {";
        for (size_t i = 0; i < items.size(); ++i) {
          os_ << (i ? ", " : "") << items[i].first << "=" << attribute_str(items[i].second);
        }
        os_ << "}";
      }
      os_ << "\n";
      for (size_t r = 0; r < op->num_regions(); ++r) {
        const Block& region = op->region(r);
        os_ << indent << "  region";
        if (!region.arguments().empty()) {
          os_ << "(";
          for (size_t a = 0; a < region.arguments().size(); ++a) {
            const Value* arg = region.argument(a);
            names_[arg] = "%" + std::to_string(next_++);
            os_ << (a ? ", " : "") << names_[arg] << ": " << arg->type().str();
          }
          os_ << ")";
        }
        os_ << " {\n";
        print_block(op->region(r), indent + "    ");
        os_ << indent << "  }\n";
      }
    }
  }

  std::unordered_map<const Value*, std::string> names_;
  int next_ = 0;
  std::ostringstream os_;
};

}  // namespace

std::string to_string(const Program& program) { return Printer().print(program); }

std::ostream& operator<<(std::ostream& os, const Program& program) {
  return os << to_string(program);
}

}  // namespace oar::ir
