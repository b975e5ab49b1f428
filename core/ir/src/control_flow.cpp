// Control-flow ops in the IR (Note [Control-flow ops] in control_flow.h):
// type rules, result types, captured values, concrete shapes and the
// region runner.
#include "oar/ir/control_flow.h"

#include <unordered_set>
#include <variant>

#include "oar/autograd.h"
#include "oar/builder.h"
#include "oar/error.h"
#include "oar/ops.h"

namespace oar::ir {

const OpDef& cond_op() {
  static const OpDef& def = OpRegistry::instance().get("cond");
  return def;
}
const OpDef& while_op() {
  static const OpDef& def = OpRegistry::instance().get("while");
  return def;
}
const OpDef& yield_op() {
  static const OpDef& def = OpRegistry::instance().get("yield");
  return def;
}

bool is_control_flow(const OpDef& def) { return &def == &cond_op() || &def == &while_op(); }
bool is_control_flow(const Operation& op) { return is_control_flow(op.def()); }

size_t carried_count(const Operation& op) { return op.operands().size(); }

bool saves_iterations(const Operation& op) {
  if (&op.def() != &while_op()) return false;
  const AttrValue* a = op.attrs().find("save_iterations");
  return a && std::holds_alternative<bool>(*a) && std::get<bool>(*a);
}

namespace {
bool block_has_data_dependent_shapes(const Block& block) {
  for (const auto& op : block.ops()) {
    if (saves_iterations(*op) || op->def().data_dependent_shape) return true;
    if (const AttrValue* g = op->attrs().find("grows"); g && std::holds_alternative<bool>(*g) && std::get<bool>(*g))
      return true;  // Note [Growing loop values] in trace_control_flow.cpp
    for (size_t r = 0; r < op->num_regions(); ++r) {
      if (block_has_data_dependent_shapes(op->region(r))) return true;
    }
  }
  return false;
}
}  // namespace

bool has_data_dependent_shapes(const Program& program) { return block_has_data_dependent_shapes(program.block()); }

const Operation* terminator(const Block& region) {
  const Operation* last = region.back();
  return last && &last->def() == &yield_op() ? last : nullptr;
}

namespace {

[[noreturn]] void fail(const std::string& message) { throw Error(ErrorCode::invalid_argument, message); }

// A one-element bool type: shape [] or every dim 1.
bool is_predicate_type(const TensorType& t) {
  if (t.dtype != DType::boolean) return false;
  for (int64_t d : t.dims) {
    if (d != 1) return false;
  }
  return true;
}

std::string predicate_problem(const TensorType& t) {
  if (t.dtype != DType::boolean) return "a " + short_dtype_name(t.dtype) + " tensor (" + t.str() + ")";
  return "a bool tensor of shape " + t.str() + ", which is not one element";
}

// `value` fits `want` (a declared type): same dtype and rank, and each
// static dim of `want` equal. "" when it fits, else why not.
std::string fit_problem(const TensorType& value, const TensorType& want) {
  if (value.dtype != want.dtype) return "the dtype differs";
  if (value.rank() != want.rank()) return "the rank differs";
  for (size_t d = 0; d < want.dims.size(); ++d) {
    // A dynamic dim of the value may hold the static size: checked when it runs.
    if (want.dims[d] != kDynamic && value.dims[d] != kDynamic && value.dims[d] != want.dims[d])
      return "dim " + std::to_string(d) + " differs (a static dim of " + want.str() + ")";
  }
  return "";
}

const Operation& region_yield(const Operation& op, size_t r, const std::string& where,
                              const char* role) {
  const Operation* y = terminator(op.region(r));
  if (y == nullptr) {
    fail(where + ": its " + role + " region (region " + std::to_string(r) +
         ") does not end in a yield");
  }
  return *y;
}

void check_args(const Operation& op, size_t r, const std::string& where, const char* role) {
  const Block& region = op.region(r);
  const size_t n = carried_count(op);
  if (region.arguments().size() != n) {
    fail(where + ": its " + role + " region takes " + std::to_string(region.arguments().size()) +
         " arguments but the loop carries " + std::to_string(n) + " values");
  }
  for (size_t k = 0; k < n; ++k) {
    const TensorType& a = region.argument(k)->type();
    const TensorType& res = op.result(k)->type();
    if (!(a == res)) {
      fail(where + ": argument " + std::to_string(k) + " of its " + role + " region is " + a.str() +
           " but carried value " + std::to_string(k) + " (the result) is " + res.str());
    }
  }
}

void check_cond(const Operation& op, const std::string& where) {
  if (op.operands().size() != 1) {
    fail(where + ": takes one operand (the predicate) but has " +
         std::to_string(op.operands().size()));
  }
  const TensorType& pred = op.operand(0)->type();
  if (!is_predicate_type(pred)) {
    fail(where + ": the predicate must be a one-element bool tensor but is " +
         predicate_problem(pred));
  }
  if (op.num_regions() != 2) {
    fail(where + ": needs two regions (then, else) but has " + std::to_string(op.num_regions()));
  }
  const char* roles[2] = {"then", "else"};
  for (size_t r = 0; r < 2; ++r) {
    if (!op.region(r).arguments().empty()) {
      fail(where + ": its " + roles[r] + " region takes " +
           std::to_string(op.region(r).arguments().size()) + " arguments; a branch takes none");
    }
    const Operation& y = region_yield(op, r, where, roles[r]);
    if (y.operands().size() != op.results().size()) {
      fail(where + ": its " + roles[r] + " branch yields " + std::to_string(y.operands().size()) +
           " values but the cond has " + std::to_string(op.results().size()) + " results");
    }
    for (size_t k = 0; k < y.operands().size(); ++k) {
      const TensorType& got = y.operand(k)->type();
      const TensorType& want = op.result(k)->type();
      std::string why = fit_problem(got, want);
      if (!why.empty()) {
        // Name the other branch's type too when it is the dtype that differs.
        std::string other;
        if (const Operation* o = terminator(op.region(1 - r));
            o && k < o->operands().size() && o->operand(k)->type().dtype != got.dtype) {
          other = "; the " + std::string(roles[1 - r]) + " branch yields " + o->operand(k)->type().str();
        }
        fail(where + ": its " + roles[r] + " branch yields " + got.str() + " for result " +
             std::to_string(k) + " of type " + want.str() + " (" + why + ")" + other);
      }
    }
  }
}

void check_while(const Operation& op, const std::string& where) {
  if (op.operands().empty()) fail(where + ": carries no values; a while needs at least one");
  const size_t n = carried_count(op);
  const size_t want_results = saves_iterations(op) ? 2 * n : n;
  if (op.results().size() != want_results) {
    fail(where + ": has " + std::to_string(n) + " operands but " + std::to_string(op.results().size()) +
         " results; each carried value is both" +
         (saves_iterations(op) ? ", and has a stack of its iterations (save_iterations)" : ""));
  }
  for (size_t k = n; k < want_results; ++k) {
    const TensorType& carried = op.result(k - n)->type();
    TensorType want{carried.dtype, carried.dims};
    want.dims.insert(want.dims.begin(), kDynamic);
    if (!(op.result(k)->type() == want)) {
      fail(where + ": result " + std::to_string(k) + " is " + op.result(k)->type().str() +
           " but the stack of carried value " + std::to_string(k - n) + " is " + want.str());
    }
  }
  if (op.num_regions() != 2) {
    fail(where + ": needs two regions (condition, body) but has " +
         std::to_string(op.num_regions()));
  }
  for (size_t k = 0; k < op.operands().size(); ++k) {
    const TensorType& init = op.operand(k)->type();
    const TensorType& carried = op.result(k)->type();
    std::string why = fit_problem(init, carried);
    if (!why.empty()) {
      fail(where + ": the initial value " + std::to_string(k) + " is " + init.str() +
           " but the loop carries " + carried.str() + " (" + why + ")");
    }
  }
  check_args(op, 0, where, "condition");
  check_args(op, 1, where, "body");
  const Operation& c = region_yield(op, 0, where, "condition");
  if (c.operands().size() != 1) {
    fail(where + ": its condition region yields " + std::to_string(c.operands().size()) +
         " values; it must yield one one-element bool");
  }
  if (!is_predicate_type(c.operand(0)->type())) {
    fail(where + ": its condition must be a one-element bool tensor but is " +
         predicate_problem(c.operand(0)->type()));
  }
  const Operation& b = region_yield(op, 1, where, "body");
  if (b.operands().size() != n) {
    fail(where + ": its body yields " + std::to_string(b.operands().size()) +
         " values but the loop carries " + std::to_string(n));
  }
  for (size_t k = 0; k < b.operands().size(); ++k) {
    const TensorType& next = b.operand(k)->type();
    const TensorType& carried = op.result(k)->type();
    std::string why = fit_problem(next, carried);
    if (!why.empty()) {
      fail(where + ": its body yields " + next.str() + " for carried value " + std::to_string(k) +
           " of type " + carried.str() + " (" + why + ")");
    }
  }
}

}  // namespace

void check_control_flow(const Operation& op, const std::string& where) {
  if (&op.def() == &yield_op()) {
    const Block* block = op.block();
    if (!block || !block->parent_op() || !is_control_flow(*block->parent_op())) {
      fail(where + ": a yield ends a region of cond or while; this one is " +
           (block && block->parent_op() ? "in a region of " + block->parent_op()->name()
                                        : std::string("at the top level")));
    }
    if (block->back() != &op) fail(where + ": a yield must be the last operation of its region");
    return;
  }
  if (&op.def() == &cond_op()) return check_cond(op, where);
  if (&op.def() == &while_op()) return check_while(op, where);
}

std::vector<TensorType> cond_result_types(std::span<const TensorType> then_types,
                                          std::span<const TensorType> else_types,
                                          const std::string& where) {
  if (then_types.size() != else_types.size()) {
    fail(where + ": the then branch gives " + std::to_string(then_types.size()) +
         " values but the else branch gives " + std::to_string(else_types.size()));
  }
  std::vector<TensorType> out;
  for (size_t k = 0; k < then_types.size(); ++k) {
    const TensorType& a = then_types[k];
    const TensorType& b = else_types[k];
    if (a.dtype != b.dtype) {
      fail(where + ": the branches give different dtypes for value " + std::to_string(k) + ": " +
           a.str() + " (then) and " + b.str() + " (else)");
    }
    if (a.rank() != b.rank()) {
      fail(where + ": the branches give different ranks for value " + std::to_string(k) + ": " +
           a.str() + " (then) and " + b.str() + " (else)");
    }
    TensorType t = a;
    for (size_t d = 0; d < t.dims.size(); ++d) {
      if (a.dims[d] != b.dims[d]) t.dims[d] = kDynamic;
    }
    out.push_back(std::move(t));
  }
  return out;
}

namespace {

void collect_captured(const Block& block, std::unordered_set<const Value*>& inside,
                      std::unordered_set<const Value*>& seen, std::vector<Value*>& out) {
  for (Value* a : block.arguments()) inside.insert(a);
  for (const auto& ref : block.ops()) {
    const Operation& op = *ref;
    for (Value* v : op.operands()) {
      if (!inside.count(v) && seen.insert(v).second) out.push_back(v);
    }
    for (size_t r = 0; r < op.num_regions(); ++r) collect_captured(op.region(r), inside, seen, out);
    for (Value* res : op.results()) inside.insert(res);
  }
}

std::string op_label(const Operation& op) {
  return op.name() + (op.block() ? " (operation " + std::to_string(op.block()->index_of(&op)) + ")" : "");
}

void block_shapes(const Block& block, std::unordered_map<const Value*, Shape>& shapes) {
  std::vector<TensorMeta> metas;
  for (const auto& ref : block.ops()) {
    const Operation& op = *ref;
    if (&op.def() == &yield_op()) continue;
    std::vector<Shape> out;
    if (is_control_flow(op)) {
      out = control_flow_shapes(op, shapes);
    } else {
      metas.clear();
      for (const Value* v : op.operands()) metas.push_back({v->type().dtype, shapes.at(v)});
      std::vector<TensorMeta> m;
      try {
        m = infer_meta(op.def(), metas, op.attrs());
      } catch (const Error& e) {
        throw Error(e.code(), "program: " + op_label(op) + " in a region rejects these shapes: " + e.what());
      }
      for (auto& t : m) out.push_back(std::move(t.shape));
    }
    for (size_t r = 0; r < op.results().size() && r < out.size(); ++r) shapes[op.result(r)] = out[r];
  }
}

std::vector<Shape> yield_shapes(const Block& region, const std::unordered_map<const Value*, Shape>& shapes) {
  std::vector<Shape> out;
  for (const Value* v : terminator(region)->operands()) out.push_back(shapes.at(v));
  return out;
}

}  // namespace

std::vector<Value*> captured_values(const Operation& op) {
  std::unordered_set<const Value*> inside, seen;
  std::vector<Value*> out;
  for (size_t r = 0; r < op.num_regions(); ++r) collect_captured(op.region(r), inside, seen, out);
  return out;
}

std::vector<Shape> control_flow_shapes(const Operation& op, std::unordered_map<const Value*, Shape>& shapes) {
  if (&op.def() == &cond_op()) {
    block_shapes(op.region(0), shapes);
    block_shapes(op.region(1), shapes);
    std::vector<Shape> a = yield_shapes(op.region(0), shapes), b = yield_shapes(op.region(1), shapes);
    for (size_t k = 0; k < a.size(); ++k) {
      if (a[k] != b[k]) {
        throw Error(ErrorCode::unsupported,
                    "cond: result " + std::to_string(k) + " has shape " + shape_str(a[k]) +
                        " in the then branch and " + shape_str(b[k]) +
                        " in the else branch; a shape that depends on the predicate cannot be planned");
      }
    }
    return a;
  }
  if (saves_iterations(op)) {
    throw Error(ErrorCode::unsupported,
                "while: it saves its iterations (for its VJP), so the shape of its stacks depends on how often it "
                "runs; such a program is interpreted, not planned (Note [Data-dependent shapes])");
  }
  std::vector<Shape> carried;
  for (const Value* v : op.operands()) carried.push_back(shapes.at(v));
  for (size_t r = 0; r < 2; ++r) {
    for (size_t k = 0; k < carried.size(); ++k) shapes[op.region(r).argument(k)] = carried[k];
    block_shapes(op.region(r), shapes);
  }
  std::vector<Shape> next = yield_shapes(op.region(1), shapes);
  for (size_t k = 0; k < next.size(); ++k) {
    if (next[k] != carried[k]) {
      throw Error(ErrorCode::unsupported,
                  "while: the body turns carried value " + std::to_string(k) + " of shape " +
                      shape_str(carried[k]) + " into " + shape_str(next[k]) +
                      "; a shape that changes per iteration cannot be planned");
    }
  }
  return carried;
}

namespace {

// Interprets regions (Note [Control-flow ops]): one scope per region run,
// so a region's values are released when it ends.
class RegionRunner {
  struct Scope {
    std::unordered_map<const Value*, Tensor> values;
    const Scope* outer = nullptr;
  };

 public:
  RegionRunner(const ValueLookup& lookup, const Device& device) : lookup_(lookup), device_(device) {}

  std::vector<Tensor> run_op(const Operation& op, std::span<const Tensor> operands, const Scope* outer) {
    if (&op.def() == &cond_op()) {
      bool taken = predicate(op, operands[0], "the predicate");
      std::vector<Tensor> out = run_region(op.region(taken ? 0 : 1), {}, outer);
      for (size_t k = 0; k < out.size(); ++k) {
        const TensorType& want = op.result(k)->type();
        if (out[k].dtype() != want.dtype || !want.matches(out[k].shape())) {
          throw Error(ErrorCode::invalid_argument,
                      std::string("cond: the ") + (taken ? "then" : "else") + " branch gave a " +
                          type_of(out[k]).str() + " tensor for result " + std::to_string(k) +
                          " of type " + want.str());
        }
      }
      return out;
    }
    std::vector<Tensor> carried(operands.begin(), operands.end());
    const bool save = saves_iterations(op);
    std::vector<std::vector<Tensor>> saved(save ? carried.size() : 0);
    for (;;) {
      std::vector<Tensor> c = run_region(op.region(0), carried, outer);
      if (!predicate(op, c.at(0), "the condition")) break;
      for (size_t k = 0; k < saved.size(); ++k) saved[k].push_back(unsqueeze(carried[k], {0}));
      carried = run_region(op.region(1), carried, outer);
      for (size_t k = 0; k < carried.size(); ++k) {
        const TensorType& want = op.result(k)->type();
        if (carried[k].dtype() != want.dtype || !want.matches(carried[k].shape())) {
          throw Error(ErrorCode::invalid_argument,
                      "while: the body made carried value " + std::to_string(k) + " a " +
                          type_of(carried[k]).str() + " tensor but the loop carries " + want.str());
        }
      }
    }
    for (size_t k = 0; k < saved.size(); ++k) {
      // The stack of the values carried into each iteration: [iterations, dims...].
      if (saved[k].empty()) {
        Shape empty = carried[k].shape();
        empty.insert(empty.begin(), 0);
        carried.push_back(zeros(empty, carried[k].dtype(), device_));
      } else {
        carried.push_back(concat(saved[k], 0));
      }
    }
    return carried;
  }

 private:
  Tensor find(const Value* v, const Scope* scope) const {
    for (; scope; scope = scope->outer) {
      auto it = scope->values.find(v);
      if (it != scope->values.end()) return it->second;
    }
    return lookup_(v);
  }

  bool predicate(const Operation& op, const Tensor& t, const char* what) const {
    if (t.dtype() != DType::boolean || t.numel() != 1) {
      throw Error(ErrorCode::invalid_argument, op.name() + ": " + what +
                                                   " must be a one-element bool tensor but is a " +
                                                   type_of(t).str() + " tensor");
    }
    return t.item() != 0;
  }

  std::vector<Tensor> run_region(const Block& region, std::span<const Tensor> args, const Scope* outer) {
    Scope scope;
    scope.outer = outer;
    for (size_t k = 0; k < args.size(); ++k) scope.values[region.argument(k)] = args[k];
    EagerBuilder& eager = EagerBuilder::instance();
    std::vector<Tensor> operands;
    for (const auto& ref : region.ops()) {
      const Operation& op = *ref;
      operands.clear();
      for (const Value* v : op.operands()) operands.push_back(find(v, &scope));
      if (&op.def() == &yield_op()) return operands;
      std::vector<Tensor> results = is_control_flow(op)
                                        ? run_op(op, operands, &scope)
                                        : eager.apply(op.def(), operands, op.attrs(), &device_);
      if (results.size() != op.results().size()) {
        throw Error(ErrorCode::internal, "run_control_flow: " + op.name() + " gave " +
                                             std::to_string(results.size()) + " results, expected " +
                                             std::to_string(op.results().size()));
      }
      for (size_t r = 0; r < results.size(); ++r) scope.values[op.result(r)] = std::move(results[r]);
    }
    throw Error(ErrorCode::invalid_argument, "run_control_flow: a region of " +
                                                 (region.parent_op() ? region.parent_op()->name() : std::string("?")) +
                                                 " does not end in a yield");
  }

  const ValueLookup& lookup_;
  Device device_;
};

}  // namespace

std::vector<Tensor> run_control_flow(const Operation& op, std::span<const Tensor> operands,
                                     const ValueLookup& lookup, const Device& device) {
  OAR_CHECK_ARG(is_control_flow(op), "run_control_flow: " + op.name() + " is not cond or while");
  NoGrad no_grad;
  BuilderScope eager(EagerBuilder::instance());  // a composite op's decomposition runs eagerly too
  RegionRunner runner(lookup, device);
  return runner.run_op(op, operands, nullptr);
}

}  // namespace oar::ir
