// Program verification (see verifier.h).
#include "oar/ir/verifier.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "oar/error.h"
#include "oar/ir/control_flow.h"
#include "oar/ir/shape_inference.h"

namespace oar::ir {

namespace {

// Sizes for dynamic dims in the byte-size check of a declared type.
constexpr int64_t kCheckSize = 3;

[[noreturn]] void fail(const std::string& message) {
  throw Error(ErrorCode::invalid_argument, "verify: " + message);
}

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

// Walks the blocks in order, keeping the set of values visible at each
// operation (Note [Regions] in block.h): a region sees what its parent op
// sees, and what it defines leaves the set (into `hidden`) when it ends.
class Verifier {
 public:
  explicit Verifier(const Program& program) : program_(program) {}

  void run() {
    defined_.reserve(program_.values().size());
    reached_.reserve(program_.values().size());
    for (const auto* list : {&program_.inputs(), &program_.parameters(), &program_.constants()}) {
      for (const Value* v : *list) {
        for (int64_t d : v->type().dims) {
          if (d < kDynamic)
            fail("'" + v->name() + "' has type " + v->type().str() + " with a negative dim");
        }
        try {
          checked_shape_bytes("'" + v->name() + "'", v->type().with_dynamic_dims(kCheckSize),
                              v->type().dtype);
        } catch (const Error& e) {
          fail(e.what());  // Note [Checked shapes]: too many dims, or a size that overflows
        }
        defined_.insert(v);
        reached_.push_back(v);
        shapes_[v] = symbols_.fresh_shape(v->type());
      }
    }
    for (const Value* c : program_.constants()) {
      const Tensor& t = program_.constant_value(c);
      if (!(type_of(t) == c->type())) {
        fail("constant '" + c->name() + "' has type " + c->type().str() + " but its tensor is " +
             type_of(t).str());
      }
    }
    if (program_.block().parent_op() != nullptr)
      fail("the program's block claims to be a region of an operation");
    if (!program_.block().arguments().empty()) fail("the program's block has arguments; only a region takes them");
    check_block(program_.block(), "");
    std::unordered_map<const Value*, int> interface;
    for (const auto& o : program_.outputs()) {
      if (!o.value || !defined_.count(o.value))
        fail("output '" + o.name + "' refers to " + undefined(o.value));
      ++interface[o.value];
    }
    for (const auto& u : program_.updates()) {
      const Value* p = program_.find(u.name);
      if (!p || p->kind() != ValueKind::parameter)
        fail("update '" + u.name + "' names no parameter");
      if (!u.value || !defined_.count(u.value))
        fail("update of '" + u.name + "' refers to " + undefined(u.value));
      if (!(u.value->type() == p->type())) {
        fail("update of '" + u.name + "' has type " + u.value->type().str() +
             " but the parameter is " + p->type().str());
      }
      ++interface[u.value];
    }
    check_use_lists(interface);
  }

 private:
  // "operation 3 (add)", or "operation 1 (add) in region 0 of operation 3 (cond)".
  static std::string where(const std::string& scope, size_t index, const Operation& op) {
    return at_op(index, op) + scope;
  }

  std::string undefined(const Value* v) const {
    if (v == nullptr) return "a null value";
    auto it = hidden_.find(v);
    if (it != hidden_.end())
      return "a value defined" + it->second + ", which is visible only inside that region";
    return "an undefined value";
  }

  void check_block(const Block& block, const std::string& scope) {
    size_t i = 0;
    for (const auto& ref : block.ops()) {
      const Operation& op = *ref;
      if (op.block() != &block) fail(where(scope, i, op) + " does not know the block it is in");
      check_op(op, i, scope);
      ++i;
    }
    if (i != block.size()) {
      fail("a block" + scope + " lists " + std::to_string(i) + " operations but counts " +
           std::to_string(block.size()));
    }
  }

  void check_op(const Operation& op, size_t i, const std::string& scope) {
    const OpDef& def = op.def();
    if (def.num_inputs >= 0 && op.operands().size() != static_cast<size_t>(def.num_inputs)) {
      fail(where(scope, i, op) + " has " + std::to_string(op.operands().size()) +
           " operands; the op takes " + std::to_string(def.num_inputs));
    }
    try {
      check_attribute_names(i, op);
    } catch (const Error& e) {
      if (scope.empty()) throw;
      // Name the region too: "operation 0 (add) in region 0 of ...".
      std::string message = e.what();
      const std::string head = "verify: " + at_op(i, op);
      if (message.starts_with(head)) message = message.substr(head.size());
      fail(where(scope, i, op) + message);
    }
    // Meta rules run on symbolic shapes (Note [Symbolic dims] in
    // shape_inference.h): each dynamic dim of an input its own symbol.
    std::vector<SymMeta> metas;
    bool dynamic = false;
    for (size_t k = 0; k < op.operands().size(); ++k) {
      const Value* v = op.operand(k);
      if (!v || !defined_.count(v)) {
        if (v && hidden_.count(v)) {
          fail(where(scope, i, op) + " uses operand " + std::to_string(k) + ", " + undefined(v));
        }
        fail(where(scope, i, op) + " uses operand " + std::to_string(k) + " before it is defined");
      }
      dynamic = dynamic || !v->type().is_static();
      metas.push_back({v->type().dtype, shapes_.at(v)});
      ++operand_count_;
    }
    std::vector<SymMeta> out;
    if (is_control_flow(op)) {
      // Note [Control-flow ops]: the results are as declared (each dynamic
      // dim a symbol of its own); the regions are checked below.
      for (const Value* r : op.results()) out.push_back({r->type().dtype, symbols_.fresh_shape(r->type())});
    } else {
      try {
        out = symbols_.infer(def, metas, op.attrs());
      } catch (const Error& e) {
        fail(where(scope, i, op) + ": its meta rule rejects the operand types: " + e.what());
      }
    }
    if (&def == &yield_op()) check_rules(op, i, scope);
    if (out.size() != op.results().size()) {
      fail(where(scope, i, op) + " has " + std::to_string(op.results().size()) +
           " results; the op gives " + std::to_string(out.size()));
    }
    for (size_t r = 0; r < out.size(); ++r) {
      const Value* result = op.result(r);
      const TensorType& t = result->type();
      bool ok = t.dtype == out[r].dtype && t.dims.size() == out[r].shape.size();
      for (size_t d = 0; ok && d < t.dims.size(); ++d) {
        // A result dim that is a symbol must be dynamic; a static one must
        // equal the type's (or the type leaves it dynamic).
        int64_t want = symbols_.resolve(out[r].shape[d]);
        if (t.dims[d] == kDynamic) continue;
        if (t.dims[d] < 0 || want < 0 || t.dims[d] != want) ok = false;
      }
      if (!ok) {
        TensorType want{out[r].dtype, SymbolTable::type_dims(out[r].shape)};
        fail(where(scope, i, op) + " result " + std::to_string(r) + " has type " + t.str() +
             " but the op gives " + want.str() +
             (dynamic ? " (symbolic shape " + symbols_.str(out[r].shape) + ")" : ""));
      }
      // A type that declares a dim dynamic where the rule knows its size
      // keeps it dynamic for the ops after it.
      if (t.dims.size() == out[r].shape.size()) {
        SymShape shape = out[r].shape;
        for (size_t d = 0; d < shape.size(); ++d) {
          if (t.dims[d] == kDynamic && shape[d] >= 0) shape[d] = symbols_.fresh();
        }
        shapes_[op.result(r)] = std::move(shape);
      }
      if (result->producer() != &op || result->result_index() != static_cast<int>(r)) {
        fail(where(scope, i, op) + " result " + std::to_string(r) + " names another producer");
      }
      if (defined_.count(result) || hidden_.count(result)) {
        fail(where(scope, i, op) + " result " + std::to_string(r) + " is defined twice");
      }
    }
    // The regions see what the op sees, but not its results.
    for (size_t g = 0; g < op.num_regions(); ++g) {
      const Block& region = op.region(g);
      if (region.parent_op() != &op) {
        fail(where(scope, i, op) + " region " + std::to_string(g) +
             " does not name the operation as its parent");
      }
      const std::string inner = " in region " + std::to_string(g) + " of " + where(scope, i, op);
      const size_t first = reached_.size();
      // Note [Region arguments]: defined at the region's start.
      for (const Value* a : region.arguments()) {
        if (a == nullptr || a->kind() != ValueKind::argument) {
          fail(where(scope, i, op) + " region " + std::to_string(g) +
               " has an argument that is not an argument value");
        }
        if (defined_.count(a) || hidden_.count(a)) {
          fail(where(scope, i, op) + " region " + std::to_string(g) + " argument is defined twice");
        }
        defined_.insert(a);
        reached_.push_back(a);
        shapes_[a] = symbols_.fresh_shape(a->type());
      }
      check_block(region, inner);
      for (size_t k = first; k < reached_.size(); ++k) {
        const ValueKind kind = reached_[k]->kind();
        if (kind != ValueKind::result && kind != ValueKind::argument) continue;
        defined_.erase(reached_[k]);
        hidden_.emplace(reached_[k], inner);
      }
    }
    if (is_control_flow(op)) check_rules(op, i, scope);
    for (const Value* result : op.results()) {
      defined_.insert(result);
      reached_.push_back(result);
    }
  }

  // Note [Control-flow ops]: the sentence names the operation's position.
  static void check_rules(const Operation& op, size_t i, const std::string& scope) {
    try {
      check_control_flow(op, where(scope, i, op));
    } catch (const Error& e) {
      fail(e.what());
    }
  }

  // Note [Use lists] in value.h: each operand's use sits where its
  // operation says, and no value has other uses (so the lists and the
  // operands are the same relation); interface uses match the outputs and
  // updates.
  void check_use_lists(const std::unordered_map<const Value*, int>& interface) const {
    size_t uses = 0;
    for (const Value* v : reached_) {
      uses += v->uses().size();
      auto it = interface.find(v);
      const int want = it == interface.end() ? 0 : it->second;
      if (v->interface_uses() != want) {
        fail("value %" + std::to_string(v->id()) + " counts " +
             std::to_string(v->interface_uses()) + " output and update uses but " +
             std::to_string(want) + " outputs and updates name it");
      }
      for (const Use& use : v->uses()) {
        if (use.user == nullptr || use.operand >= use.user->operands().size() ||
            use.user->operand(use.operand) != v) {
          fail("value %" + std::to_string(v->id()) +
               " lists a use by an operation that does not read it");
        }
        const size_t slot = use.user->use_slot(use.operand);
        if (slot >= v->uses().size() || v->uses()[slot] != use) {
          fail("value %" + std::to_string(v->id()) + " lists a use of " + use.user->name() +
               " in the wrong slot");
        }
      }
    }
    if (uses != operand_count_) {
      fail("the use lists hold " + std::to_string(uses) + " uses but the operations have " +
           std::to_string(operand_count_) + " operands");
    }
  }

  const Program& program_;
  std::unordered_set<const Value*> defined_;
  SymbolTable symbols_;                                // the dynamic dims' symbols
  std::unordered_map<const Value*, SymShape> shapes_;  // symbolic shape of each defined value
  std::unordered_map<const Value*, std::string>
      hidden_;                         // region values, with where they are defined
  std::vector<const Value*> reached_;  // every value defined, in order
  size_t operand_count_ = 0;
};

}  // namespace

void verify(const Program& program) { Verifier(program).run(); }

}  // namespace oar::ir
