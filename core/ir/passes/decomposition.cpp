// Decomposition: a selected composite operation is replaced by the
// operations its DecomposeFn emits when run under a Tracer, so static mode
// decomposes exactly as eager mode. The tracer appends to the block (O(1)
// per operation) and the traced operations then move before the composite
// one (O(1) each), which is erased; the uses of its results move in
// O(uses) (Note [Use lists] in value.h). A round is linear in the block.

#include "oar/builder.h"
#include "oar/ir/pass.h"
#include "oar/ir/shape_inference.h"
#include "oar/ir/trace.h"
#include "oar/runtime.h"

namespace oar::ir {

namespace {

// Decompositions may emit composite ops, which the next round decomposes.
// A decomposition that (indirectly) emits its own op would never finish.
constexpr int kMaxRounds = 32;

// Operands trace with their symbolic shapes (Note [Symbolic dims] in
// shape_inference.h), their example shapes being sample A of the symbols;
// Note [Size-dependent decompositions] traces again at sample B.
constexpr int kExampleSample = 0;
constexpr int kOtherSample = 1;

std::string where(size_t pos, const Operation& op) {
  return "decomposition: operation " + std::to_string(pos) + " (" + op.name() + ")";
}

class DecompositionPass final : public Pass {
 public:
  explicit DecompositionPass(std::function<bool(const OpDef&)> select)
      : select_(std::move(select)) {}

  std::string name() const override { return "decomposition"; }

  bool run(Program& program) override {
    bool changed = false;
    for (int round = 0;; ++round) {
      std::vector<Operation*> selected;
      for (const auto& op : program.block().ops()) {
        if (wanted(op->def())) selected.push_back(op.get());
      }
      // Operations in regions are left alone (no real op has regions yet).
      if (selected.empty()) return changed;
      TypeInference types = infer_types(program);
      if (round == kMaxRounds) {
        throw Error(ErrorCode::invalid_argument,
                    "decomposition: " + selected.front()->name() + " is still present after " +
                        std::to_string(kMaxRounds) +
                        " rounds of decomposition; its decomposition keeps emitting "
                        "composite ops it cannot get rid of");
      }
      for (Operation* op : selected) decompose(program, op, types);
      changed = true;
    }
  }

 private:
  bool wanted(const OpDef& def) const {
    return def.kind == OpKind::composite && def.decompose != nullptr && select_(def);
  }

  static void decompose(Program& program, Operation* op, TypeInference& types) {
    Block& block = program.block();
    Operation* const last_before = block.back();  // the traced operations follow it
    auto first_traced = [&] { return last_before ? last_before->next() : block.front(); };
    std::vector<SymShape> operand_shapes;
    for (const Value* operand : op->operands()) operand_shapes.push_back(types.at(operand));
    Tracer tracer(program, default_device(), Tracer::kAppend, std::move(types.symbols));
    std::vector<Value*> replacements;
    std::string failure;
    try {
      std::vector<Tensor> results =
          trace_decomposition(tracer, *op, op->operands(), operand_shapes, kExampleSample);
      if (results.size() != op->results().size()) {
        failure = "its decomposition returned " + std::to_string(results.size()) + " tensors for " +
                  std::to_string(op->results().size()) + " results";
      } else if (tracer.specialized()) {
        failure =
            "its decomposition works only for fixed sizes of the dynamic dims of its operands";
      }
      for (size_t i = 0; failure.empty() && i < results.size(); ++i) {
        // A result may be an operand passed through or a concrete tensor the
        // decomposition made: capture() covers both.
        Value* value = tracer.capture(results[i]);
        if (!(value->type() == op->result(i)->type())) {
          failure = "its decomposition gives result " + std::to_string(i) + " the type " +
                    value->type().str() + " but the operation declares " +
                    op->result(i)->type().str();
        }
        replacements.push_back(value);
      }
      if (failure.empty())
        failure = size_dependence(*op, operand_shapes, tracer.symbols(), first_traced());
    } catch (const Error& e) {
      failure = e.what();
    }
    types.symbols = std::move(tracer.symbols());

    // The traced operations sit at the end of the block, after last_before.
    if (!failure.empty()) {
      while (block.back() != last_before)
        block.erase(block.back());  // the newest first: no uses left
      throw Error(ErrorCode::invalid_argument,
                  where(block.index_of(op), *op) + " cannot be decomposed: " + failure);
    }
    if (Operation* first = first_traced()) block.move_before(op, first, nullptr);
    for (size_t i = 0; i < replacements.size(); ++i) {
      types.shapes[replacements[i]] = tracer.symbolic_shape(replacements[i]);
      program.replace_all_uses(op->result(i), replacements[i]);
    }
    block.erase(op);
  }

  // Runs the decomposition of `op` on symbolic stand-ins for `operands`
  // of symbolic shapes `shapes`, their examples being sample `example`.
  static std::vector<Tensor> trace_decomposition(Tracer& tracer, const Operation& op,
                                                 const std::vector<Value*>& operands,
                                                 const std::vector<SymShape>& shapes, int example) {
    std::vector<Tensor> inputs;
    inputs.reserve(operands.size());
    for (size_t i = 0; i < operands.size(); ++i) {
      inputs.push_back(tracer.symbolic(operands[i], tracer.symbols().sample(shapes[i], example), shapes[i]));
    }
    BuilderScope scope(tracer);
    return op.def().decompose(inputs, op.attrs());
  }

  // Note [Size-dependent decompositions]
  // A decomposition may compute attributes from its inputs' shapes (mean
  // divides by the reduced count): traced with one size of a dynamic dim it
  // would be wrong for every other size, and the result types cannot show
  // it. So when an operand has dynamic dims, the decomposition is traced a
  // second time with other sizes (sample B of the symbols); the operations
  // must come out the same. Returns "" when they do, else the reason.
  static std::string size_dependence(const Operation& op, const std::vector<SymShape>& shapes,
                                     const SymbolTable& symbols, const Operation* traced) {
    bool dynamic = false;
    for (const Value* operand : op.operands()) dynamic = dynamic || !operand->type().is_static();
    if (!dynamic) return "";
    Program scratch;
    std::vector<Value*> stand_ins;
    for (size_t i = 0; i < op.operands().size(); ++i) {
      stand_ins.push_back(scratch.add_input("operand" + std::to_string(i), op.operand(i)->type()));
    }
    Tracer tracer(scratch, default_device(), Tracer::kAppend, symbols);
    trace_decomposition(tracer, op, stand_ins, shapes, kOtherSample);
    const std::string reason =
        "its decomposition depends on the sizes of the dynamic dims of its operands";
    if (tracer.specialized()) return reason;
    const Operation* other = scratch.block().front();
    for (; traced != nullptr && other != nullptr; traced = traced->next(), other = other->next()) {
      const Operation& a = *traced;
      const Operation& b = *other;
      if (a.def().id != b.def().id) return reason;
      for (const auto& [name, value] : a.attrs().items()) {
        const Attribute* other = b.attrs().find(name);
        if (other == nullptr || !(*other == value)) {
          return reason + " (" + a.name() + " gets " + name + "=" + attribute_str(value) +
                 " for one size and " + (other ? attribute_str(*other) : std::string("no value")) +
                 " for another)";
        }
      }
      if (a.attrs().items().size() != b.attrs().items().size()) return reason;
      for (size_t r = 0; r < a.results().size(); ++r) {
        if (!(a.result(r)->type() == b.result(r)->type())) return reason;
      }
    }
    return "";
  }

  std::function<bool(const OpDef&)> select_;
};

}  // namespace

std::unique_ptr<Pass> make_decomposition_pass(std::function<bool(const OpDef&)> select) {
  OAR_CHECK_ARG(select != nullptr, "make_decomposition_pass: the selection function is empty");
  return std::make_unique<DecompositionPass>(std::move(select));
}

std::unique_ptr<Pass> make_decomposition_pass(std::set<std::string> op_names) {
  for (const auto& name : op_names)
    OpRegistry::instance().get(name);  // throws naming an unknown op
  return make_decomposition_pass(
      [names = std::move(op_names)](const OpDef& def) { return names.count(def.name) > 0; });
}

}  // namespace oar::ir
