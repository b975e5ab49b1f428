// Decomposition: a selected composite operation is replaced by the
// operations its DecomposeFn emits when run under a Tracer inserting at the
// operation's position, so static mode decomposes exactly as eager mode.
#include <unordered_set>

#include "oar/builder.h"
#include "oar/ir/pass.h"
#include "oar/ir/trace.h"
#include "oar/runtime.h"

namespace oar::ir {

namespace {

// Decompositions may emit composite ops, which the next round decomposes.
// A decomposition that (indirectly) emits its own op would never finish.
constexpr int kMaxRounds = 32;

// Dynamic dims trace with these sizes (Note [Dynamic dims] in trace.h).
constexpr int64_t kExampleDim = 2;
constexpr int64_t kProbeDim = 3;

Shape with_dynamic_dims(const TensorType& type, int64_t size) {
  Shape shape = type.dims;
  for (int64_t& d : shape) {
    if (d == kDynamic) d = size;
  }
  return shape;
}

size_t position_of(const Block& block, const Operation* op) {
  for (size_t i = 0; i < block.size(); ++i) {
    if (&block.op(i) == op) return i;
  }
  throw Error(ErrorCode::internal,
              "decomposition: operation " + op->name() + " is no longer in the block");
}

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
    const size_t pos = position_of(block, op);
    Tracer tracer(program, default_device(), pos);
    std::vector<Tensor> operands;
    operands.reserve(op->operands().size());
    for (Value* operand : op->operands()) {
      operands.push_back(tracer.symbolic(operand, with_dynamic_dims(operand->type(), kExampleDim),
                                         with_dynamic_dims(operand->type(), kProbeDim)));
    }

    std::vector<Value*> replacements;
    std::string failure;
    try {
      std::vector<Tensor> results;
      {
        BuilderScope scope(tracer);
        results = op->def().decompose(operands, op->attrs());
      }
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
    } catch (const Error& e) {
      failure = e.what();
    }

    // The traced operations sit at [pos, cursor); the composite one after them.
    const size_t end = tracer.cursor();
    if (!failure.empty()) {
      std::unordered_set<const Operation*> traced;
      for (size_t i = pos; i < end && i < block.size(); ++i) traced.insert(&block.op(i));
      block.erase_if([&](const Operation& o) { return traced.count(&o) > 0; });
      throw Error(ErrorCode::invalid_argument,
                  where(pos, *op) + " cannot be decomposed: " + failure);
    }
    for (size_t i = 0; i < replacements.size(); ++i)
      program.replace_all_uses(op->result(i), replacements[i]);
    block.erase_if([&](const Operation& o) { return &o == op; });
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
