// Program verification (see verifier.h).
#include "oar/ir/verifier.h"

#include <algorithm>
#include <unordered_set>

#include "oar/error.h"

namespace oar::ir {

namespace {

// Representative sizes for dynamic dims while checking meta rules: a
// result dim equal at both is static and must match the type exactly.
constexpr int64_t kCheckSize = 3;
constexpr int64_t kCheckSize2 = 5;

[[noreturn]] void fail(const std::string& message) { throw Error(ErrorCode::invalid_argument, "verify: " + message); }

std::string at_op(size_t index, const Operation& op) {
  return "operation " + std::to_string(index) + " (" + op.name() + ")";
}

// The attribute schema (Note [Attribute schema] in core/src/ops/op_registry.cpp):
// every name known, every value of its kind, every required one present.
// infer_meta checks it too; here the sentence names the op's position.
void check_attribute_names(size_t index, const Operation& op) {
  std::string problem = attr_problem(op.def(), op.attrs());
  if (!problem.empty()) fail(at_op(index, op) + " " + problem);
}

}  // namespace

void verify(const Program& program) {
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
    }
  }
  for (const Value* c : program.constants()) {
    const Tensor& t = program.constant_value(c);
    if (!(type_of(t) == c->type())) {
      fail("constant '" + c->name() + "' has type " + c->type().str() + " but its tensor is " + type_of(t).str());
    }
  }
  std::vector<TensorMeta> metas;
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
    std::vector<TensorMeta> metas2;
    bool dynamic = false;
    for (size_t k = 0; k < op.operands().size(); ++k) {
      const Value* v = op.operand(k);
      if (!v || !defined.count(v)) {
        fail(at_op(i, op) + " uses operand " + std::to_string(k) + " before it is defined");
      }
      dynamic = dynamic || !v->type().is_static();
      metas.push_back({v->type().dtype, v->type().with_dynamic_dims(kCheckSize)});
      metas2.push_back({v->type().dtype, v->type().with_dynamic_dims(kCheckSize2)});
    }
    std::vector<TensorMeta> out, out2;
    try {
      out = infer_meta(def, metas, op.attrs());
      out2 = dynamic ? infer_meta(def, metas2, op.attrs()) : out;
    } catch (const Error& e) {
      fail(at_op(i, op) + ": its meta rule rejects the operand types: " + e.what());
    }
    if (out.size() != op.results().size()) {
      fail(at_op(i, op) + " has " + std::to_string(op.results().size()) + " results; the op gives " +
           std::to_string(out.size()));
    }
    for (size_t r = 0; r < out.size(); ++r) {
      const TensorType& t = op.result(r)->type();
      bool ok = t.dtype == out[r].dtype && t.dims.size() == out[r].shape.size() &&
                out2[r].shape.size() == out[r].shape.size();
      for (size_t d = 0; ok && d < t.dims.size(); ++d) {
        // A result dim that follows the dynamic sizes must be dynamic; one
        // that does not must equal the type's (or the type leaves it dynamic).
        bool follows = out[r].shape[d] != out2[r].shape[d];
        if (t.dims[d] == kDynamic) continue;
        if (t.dims[d] < 0 || follows || t.dims[d] != out[r].shape[d]) ok = false;
      }
      if (!ok) {
        TensorType want{out[r].dtype, out[r].shape};
        fail(at_op(i, op) + " result " + std::to_string(r) + " has type " + t.str() + " but the op gives " +
             want.str() + (dynamic ? " (dynamic dims checked at size " + std::to_string(kCheckSize) + ")" : ""));
      }
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
