// Program verification (see verifier.h).
#include "oar/ir/verifier.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "oar/error.h"
#include "oar/ir/shape_inference.h"

namespace oar::ir {

namespace {

// Sizes for dynamic dims in the byte-size check of a declared type.
constexpr int64_t kCheckSize = 3;

[[noreturn]] void fail(const std::string& message) { throw Error(ErrorCode::invalid_argument, "verify: " + message); }

std::string at_op(size_t index, const Operation& op) {
  return "operation " + std::to_string(index) + " (" + op.name() + ")";
}

// Note [Attribute schema]: each OpDef lists the attribute names it takes
// (OpDef::attrs, next to its meta rule). A program op carrying any other
// name, say a made-up `bogus` on conv2d or a misspelt `stride` for
// `strides`, is refused here, so a hostile or stale program file cannot
// smuggle in attributes that every reader would silently ignore. Eager
// calls build their attributes in the op's own C++ function, so the check
// is the verifier's (every loaded or traced program passes through it).
void check_attribute_names(size_t index, const Operation& op) {
  const std::vector<std::string>& known = op.def().attrs;
  for (const auto& [name, value] : op.attrs().items()) {
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    std::string takes;
    for (const std::string& k : known) takes += (takes.empty() ? "" : ", ") + k;
    fail(at_op(index, op) + " has an unknown attribute '" + name + "'; " + op.name() + " takes " +
         (known.empty() ? "no attributes" : "only " + takes));
  }
}

}  // namespace

void verify(const Program& program) {
  // Meta rules run on symbolic shapes (Note [Symbolic dims] in
  // shape_inference.h): each dynamic dim of an input its own symbol.
  SymbolTable symbols;
  std::unordered_map<const Value*, SymShape> shapes;
  std::unordered_set<const Value*> defined;
  for (const auto* list : {&program.inputs(), &program.parameters(), &program.constants()}) {
    for (const Value* v : *list) {
      for (int64_t d : v->type().dims) {
        if (d < kDynamic) fail("'" + v->name() + "' has type " + v->type().str() + " with a negative dim");
      }
      try {
        checked_shape_bytes("'" + v->name() + "'", v->type().with_dynamic_dims(kCheckSize), v->type().dtype);
      } catch (const Error& e) {
        fail(e.what());  // Note [Checked shapes]: too many dims, or a size that overflows
      }
      defined.insert(v);
      shapes[v] = symbols.fresh_shape(v->type());
    }
  }
  for (const Value* c : program.constants()) {
    const Tensor& t = program.constant_value(c);
    if (!(type_of(t) == c->type())) {
      fail("constant '" + c->name() + "' has type " + c->type().str() + " but its tensor is " + type_of(t).str());
    }
  }
  std::vector<SymMeta> metas;
  const auto& ops = program.block().ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    const Operation& op = *ops[i];
    const OpDef& def = op.def();
    if (def.num_inputs >= 0 && op.operands().size() != static_cast<size_t>(def.num_inputs)) {
      fail(at_op(i, op) + " has " + std::to_string(op.operands().size()) + " operands; the op takes " +
           std::to_string(def.num_inputs));
    }
    check_attribute_names(i, op);
    metas.clear();
    bool dynamic = false;
    for (size_t k = 0; k < op.operands().size(); ++k) {
      const Value* v = op.operand(k);
      if (!v || !defined.count(v)) {
        fail(at_op(i, op) + " uses operand " + std::to_string(k) + " before it is defined");
      }
      dynamic = dynamic || !v->type().is_static();
      metas.push_back({v->type().dtype, shapes.at(v)});
    }
    std::vector<SymMeta> out;
    try {
      out = symbols.infer(def, metas, op.attrs());
    } catch (const Error& e) {
      fail(at_op(i, op) + ": its meta rule rejects the operand types: " + e.what());
    }
    if (out.size() != op.results().size()) {
      fail(at_op(i, op) + " has " + std::to_string(op.results().size()) + " results; the op gives " +
           std::to_string(out.size()));
    }
    for (size_t r = 0; r < out.size(); ++r) {
      const TensorType& t = op.result(r)->type();
      bool ok = t.dtype == out[r].dtype && t.dims.size() == out[r].shape.size();
      for (size_t d = 0; ok && d < t.dims.size(); ++d) {
        // A result dim that is a symbol must be dynamic; a static one must
        // equal the type's (or the type leaves it dynamic).
        int64_t want = symbols.resolve(out[r].shape[d]);
        if (t.dims[d] == kDynamic) continue;
        if (t.dims[d] < 0 || want < 0 || t.dims[d] != want) ok = false;
      }
      if (!ok) {
        TensorType want{out[r].dtype, SymbolTable::type_dims(out[r].shape)};
        fail(at_op(i, op) + " result " + std::to_string(r) + " has type " + t.str() + " but the op gives " +
             want.str() + (dynamic ? " (symbolic shape " + symbols.str(out[r].shape) + ")" : ""));
      }
      // A type that declares a dim dynamic where the rule knows its size
      // keeps it dynamic for the ops after it.
      SymShape shape = out[r].shape;
      for (size_t d = 0; d < shape.size(); ++d) {
        if (t.dims[d] == kDynamic && shape[d] >= 0) shape[d] = symbols.fresh();
      }
      shapes[op.result(r)] = std::move(shape);
      defined.insert(op.result(r));
    }
  }
  for (const auto& o : program.outputs()) {
    if (!o.value || !defined.count(o.value)) fail("output '" + o.name + "' refers to an undefined value");
  }
  for (const auto& u : program.updates()) {
    const Value* p = program.find(u.name);
    if (!p || p->kind() != ValueKind::parameter) fail("update '" + u.name + "' names no parameter");
    if (!u.value || !defined.count(u.value)) fail("update of '" + u.name + "' refers to an undefined value");
    if (!(u.value->type() == p->type())) {
      fail("update of '" + u.name + "' has type " + u.value->type().str() + " but the parameter is " + p->type().str());
    }
  }
}

}  // namespace oar::ir
