// Decomposition: a selected composite operation is replaced by the
// operations its DecomposeFn emits when run under a Tracer, so static mode
// decomposes exactly as eager mode. The tracer appends to the block (O(1)
// per operation) and the traced operations then move before the composite
// one (O(1) each), which is erased; the uses of its results move in
// O(uses) (Note [Use lists] in value.h). A round is linear in the block.

#include "oar/builder.h"
#include "oar/ir/pass.h"
#include "oar/ir/trace.h"
#include "oar/runtime.h"

namespace oar::ir {

namespace {

// Decompositions may emit composite ops, which the next round decomposes.
// A decomposition that (indirectly) emits its own op would never finish.
constexpr int kMaxRounds = 32;

// Dynamic dims trace with this size, and one more in the probe shapes
// (Note [Dynamic dims] in trace.h).
constexpr int64_t kExampleDim = 2;

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
      if (round == kMaxRounds) {
        throw Error(ErrorCode::invalid_argument,
                    "decomposition: " + selected.front()->name() + " is still present after " +
                        std::to_string(kMaxRounds) +
                        " rounds of decomposition; its decomposition keeps emitting "
                        "composite ops it cannot get rid of");
      }
      for (Operation* op : selected) decompose(program, op);
      changed = true;
    }
  }

 private:
  bool wanted(const OpDef& def) const {
    return def.kind == OpKind::composite && def.decompose != nullptr && select_(def);
  }

  static void decompose(Program& program, Operation* op) {
    Block& block = program.block();
    Operation* const last_before = block.back();  // the traced operations follow it
    auto first_traced = [&] { return last_before ? last_before->next() : block.front(); };
    Tracer tracer(program, default_device());
    std::vector<Value*> replacements;
    std::string failure;
    try {
      std::vector<Tensor> results = trace_decomposition(tracer, *op, op->operands(), kExampleDim);
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
      if (failure.empty()) failure = size_dependence(*op, first_traced());
    } catch (const Error& e) {
      failure = e.what();
    }

    // The traced operations sit at the end of the block, after last_before.
    if (!failure.empty()) {
      while (block.back() != last_before)
        block.erase(block.back());  // the newest first: no uses left
      throw Error(ErrorCode::invalid_argument,
                  where(block.index_of(op), *op) + " cannot be decomposed: " + failure);
    }
    if (Operation* first = first_traced()) block.move_before(op, first, nullptr);
    for (size_t i = 0; i < replacements.size(); ++i)
      program.replace_all_uses(op->result(i), replacements[i]);
    block.erase(op);
  }

  // Runs the decomposition of `op` on symbolic stand-ins for `operands`
  // whose dynamic dims are `example` (and one more in the probe shape).
  static std::vector<Tensor> trace_decomposition(Tracer& tracer, const Operation& op,
                                                 const std::vector<Value*>& operands,
                                                 int64_t example) {
    std::vector<Tensor> inputs;
    inputs.reserve(operands.size());
    for (Value* operand : operands) {
      inputs.push_back(tracer.symbolic(operand, operand->type().with_dynamic_dims(example),
                                       operand->type().with_dynamic_dims(example + 1)));
    }
    BuilderScope scope(tracer);
    return op.def().decompose(inputs, op.attrs());
  }

  // Note [Size-dependent decompositions]
  // A decomposition may compute attributes from its inputs' shapes (mean
  // divides by the reduced count): traced with one size of a dynamic dim it
  // would be wrong for every other size, and the result types cannot show
  // it. So when an operand has dynamic dims, the decomposition is traced a
  // second time with other sizes; the operations must come out the same.
  // Returns "" when they do, else the reason.
  static std::string size_dependence(const Operation& op, const Operation* traced) {
    bool dynamic = false;
    for (const Value* operand : op.operands()) dynamic = dynamic || !operand->type().is_static();
    if (!dynamic) return "";
    Program scratch;
    std::vector<Value*> stand_ins;
    for (size_t i = 0; i < op.operands().size(); ++i) {
      stand_ins.push_back(scratch.add_input("operand" + std::to_string(i), op.operand(i)->type()));
    }
    Tracer tracer(scratch, default_device());
    trace_decomposition(tracer, op, stand_ins, kExampleDim + 2);
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
    if (traced != nullptr || other != nullptr) return reason;  // not as many operations
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
