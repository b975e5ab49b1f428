// The op table of the fusion planner (fusion.h): what each op does to the
// iteration space. One row per op; anything not listed is opaque.
#include <string_view>
#include <unordered_map>

#include "oar_compiler/fusion.h"

namespace oar::compiler {

namespace {

const std::unordered_map<std::string_view, OpClass>& op_table() {
  using enum OpClass;
  static const std::unordered_map<std::string_view, OpClass> table = {
      // Unary math.
      {"abs", elementwise},
      {"neg", elementwise},
      {"exp", elementwise},
      {"expm1", elementwise},
      {"log", elementwise},
      {"sqrt", elementwise},
      {"rsqrt", elementwise},
      {"sin", elementwise},
      {"cos", elementwise},
      {"tanh", elementwise},
      {"erf", elementwise},
      {"sign", elementwise},
      {"floor", elementwise},
      {"ceil", elementwise},
      {"cast", elementwise},
      {"copy", elementwise},
      {"logical_not", elementwise},
      // Binary and ternary, numpy broadcasting of the operands.
      {"add", elementwise},
      {"sub", elementwise},
      {"mul", elementwise},
      {"div", elementwise},
      {"pow", elementwise},
      {"maximum", elementwise},
      {"minimum", elementwise},
      {"equal", elementwise},
      {"not_equal", elementwise},
      {"greater", elementwise},
      {"greater_equal", elementwise},
      {"less", elementwise},
      {"less_equal", elementwise},
      {"logical_and", elementwise},
      {"logical_or", elementwise},
      {"where", elementwise},
      // Composites that are elementwise, when a pipeline leaves them whole.
      {"relu", elementwise},
      {"sigmoid", elementwise},
      {"silu", elementwise},
      {"gelu", elementwise},
      // A constant (a scalar, mostly: decompositions make them after
      // constant folding ran), and x's shape filled with one (x is not read).
      {"full", elementwise},
      {"full_like", elementwise},
      // An integer range, and x's element count (x's shape is read, not its data).
      {"arange", elementwise},
      {"numel", elementwise},
      {"broadcast_to", broadcast},
      {"broadcast_to_like", broadcast},
      {"sum", reduce},
      {"max", reduce},
      {"min", reduce},
      {"prod", reduce},
      {"mean", reduce},
      {"reshape", reshape},
      {"transpose", transpose},
  };
  return table;
}

bool complex_value(const ir::Value* v) { return is_complex(v->type().dtype); }

}  // namespace

OpClass classify(const ir::Operation& op) {
  if (op.num_regions() > 0 || op.def().random || op.def().host != nullptr ||
      ir::has_side_effects(op.def()))
    return OpClass::opaque;
  auto it = op_table().find(op.name());
  if (it == op_table().end()) return OpClass::opaque;
  for (const ir::Value* v : op.operands())
    if (complex_value(v)) return OpClass::opaque;
  for (const ir::Value* v : op.results())
    if (complex_value(v)) return OpClass::opaque;
  return it->second;
}

const char* op_class_name(OpClass c) {
  switch (c) {
    case OpClass::elementwise:
      return "elementwise";
    case OpClass::broadcast:
      return "broadcast";
    case OpClass::reduce:
      return "reduce";
    case OpClass::reshape:
      return "reshape";
    case OpClass::transpose:
      return "transpose";
    case OpClass::opaque:
      return "opaque";
  }
  return "?";
}

}  // namespace oar::compiler
