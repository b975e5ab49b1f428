// Printing of typed attributes.
#include "oar/ir/attribute.h"

#include <cmath>
#include <cstdio>

namespace oar::ir {

namespace {
std::string float_str(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  // The shortest form that reads back to the same double.
  for (int precision = 1; precision <= 17; ++precision) {
    char shorter[32];
    std::snprintf(shorter, sizeof shorter, "%.*g", precision, v);
    if (std::strtod(shorter, nullptr) == v) {
      std::snprintf(buf, sizeof buf, "%s", shorter);
      break;
    }
  }
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}
}  // namespace

std::string attribute_str(const Attribute& attr) {
  struct Visitor {
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return float_str(v); }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(const std::string& v) const { return quoted(v); }
    std::string operator()(const std::vector<int64_t>& v) const {
      std::string out = "[";
      for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
      return out + "]";
    }
    std::string operator()(const std::vector<double>& v) const {
      std::string out = "[";
      for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + float_str(v[i]);
      return out + "]";
    }
  };
  return std::visit(Visitor{}, attr);
}

const char* attribute_kind(const Attribute& attr) {
  static const char* kinds[] = {"int", "float", "bool", "str", "ints", "floats"};
  return kinds[attr.index()];
}

}  // namespace oar::ir
