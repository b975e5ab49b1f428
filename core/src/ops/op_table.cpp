// The op table of docs/kernels.md, generated from the registry (Note [One
// op definition] in op_registry.cpp; `oar ops --markdown`).
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "oar/op.h"

namespace oar {

namespace {

std::string value_str(const AttrValue& v) {
  struct Visit {
    std::string operator()(int64_t x) const { return std::to_string(x); }
    std::string operator()(double x) const {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", x);
      return buf;
    }
    std::string operator()(bool x) const { return x ? "true" : "false"; }
    std::string operator()(const std::string& x) const { return "\"" + x + "\""; }
    std::string operator()(const std::vector<int64_t>& x) const {
      std::string out = "[";
      for (size_t i = 0; i < x.size(); ++i) out += (i ? ", " : "") + std::to_string(x[i]);
      return out + "]";
    }
    std::string operator()(const std::vector<double>& x) const {
      std::string out = "[";
      for (size_t i = 0; i < x.size(); ++i) out += (i ? ", " : "") + (*this)(x[i]);
      return out + "]";
    }
  };
  return std::visit(Visit{}, v);
}

const char* kind_str(OpKind kind) {
  switch (kind) {
    case OpKind::primitive:
      return "primitive";
    case OpKind::composite:
      return "composite";
    case OpKind::view:
      return "view";
  }
  return "?";
}

std::string attrs_cell(const OpDef& op) {
  if (op.attrs.empty()) return "—";
  std::string out;
  for (const AttrSpec& a : op.attrs) {
    out += (out.empty() ? "" : "; ") + ("`" + a.name + "` " + attr_kind_name(a.kind));
    if (a.default_value) out += " = " + value_str(*a.default_value);
    out += ": " + a.doc;
  }
  return out;
}

std::string escape(std::string text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

}  // namespace

std::string op_table_markdown() {
  std::ostringstream out;
  out << "| op | kind | inputs | dtypes | attributes | semantics |\n";
  out << "| --- | --- | --- | --- | --- | --- |\n";
  // Primitives, then views, then composites, each by name: the order does
  // not depend on which family file the linker initialized first.
  std::vector<const OpDef*> ops = OpRegistry::instance().all();
  std::sort(ops.begin(), ops.end(), [](const OpDef* a, const OpDef* b) {
    int ka = a->kind == OpKind::primitive ? 0 : a->kind == OpKind::view ? 1 : 2;
    int kb = b->kind == OpKind::primitive ? 0 : b->kind == OpKind::view ? 1 : 2;
    return ka != kb ? ka < kb : a->name < b->name;
  });
  for (const OpDef* op : ops) {
    std::string inputs = op->num_inputs < 0 ? "any number" : std::to_string(op->num_inputs);
    if (op->layout == InputLayout::broadcast) inputs += ", broadcast";
    out << "| " << op->name << " | " << kind_str(op->kind) << " | " << inputs << " | "
        << (op->num_inputs == 0 ? std::string("—") : dtype_set_str(op->dtypes.accepts)) << " | "
        << escape(attrs_cell(*op)) << " | "
        << escape(op->doc.empty() ? "see core/src/ops" : op->doc) << " |\n";
  }
  return out.str();
}

}  // namespace oar
