// Program autodiff: the backward of a program, emitted through a Tracer
// with the op definitions' VJP rules (the rules eager mode runs).
#include "oar/ir/autodiff.h"

#include <functional>
#include <optional>
#include <unordered_set>

#include "oar/autograd.h"
#include "oar/error.h"
#include "oar/ir/control_flow.h"
#include "oar/ir/pass.h"
#include "oar/ir/shape_inference.h"
#include "oar/ir/trace.h"
#include "oar/ir/verifier.h"
#include "oar/ops.h"
#include "oar/runtime.h"
#include "runtime/runtime_state.h"

namespace oar::ir {

namespace {

std::string value_str(const Value* v) {
  return v->name().empty() ? "a result of " + (v->producer() ? v->producer()->name() : std::string("?")) : "'" + v->name() + "'";
}

using Lookup = std::function<Tensor(Value*)>;

Tracer& tracer_now() { return dynamic_cast<Tracer&>(current_builder()); }

// A composite op without a VJP rule, differentiated through its decomposition
// (not one that is not differentiable: stop_gradient stays itself).
bool decomposed_for_autodiff(const OpDef& def) {
  return def.kind == OpKind::composite && def.decompose != nullptr && !def.vjp && def.differentiable;
}

std::vector<Tensor> replay_op(const Operation& op, const std::vector<Tensor>& in, const Lookup& lookup,
                              bool decompose = false, bool save_iterations = false);

// Emits the operations of `region` again through the current builder (the
// tracer, inside the region it is tracing) with its arguments `args` and
// outer values from `lookup`; returns what its yield yields. With
// `decompose`, composite ops without a VJP rule are emitted decomposed.
std::vector<Tensor> replay_region(const Block& region, const std::vector<Tensor>& args, const Lookup& lookup,
                                  bool decompose = false) {
  std::unordered_map<const Value*, Tensor> local;
  for (size_t k = 0; k < args.size(); ++k) local[region.argument(k)] = args[k];
  Lookup value_of = [&](Value* v) {
    auto it = local.find(v);
    return it != local.end() ? it->second : lookup(v);
  };
  for (const Operation* op = region.front(); op != nullptr; op = op->next()) {
    std::vector<Tensor> in;
    for (Value* v : op->operands()) in.push_back(value_of(v));
    if (&op->def() == &yield_op()) return in;
    std::vector<Tensor> out = replay_op(*op, in, value_of, decompose);
    for (size_t r = 0; r < out.size() && r < op->results().size(); ++r) local[op->result(r)] = out[r];
  }
  throw Error(ErrorCode::invalid_argument, "append_backward: a region does not end in a yield");
}

// One operation emitted again: a plain op through the builder, a cond or a
// while traced again with its regions replayed (a while with
// `save_iterations` also returns its stacks: Note [VJP of while]).
std::vector<Tensor> replay_op(const Operation& op, const std::vector<Tensor>& in, const Lookup& lookup,
                              bool decompose, bool save_iterations) {
  if (&op.def() == &cond_op()) {
    auto branch = [&](size_t r) {
      return [&, r](const std::vector<Tensor>&) { return replay_region(op.region(r), {}, lookup, decompose); };
    };
    return tracer_now().trace_cond(in[0], branch(0), branch(1), "append_backward: a cond replayed");
  }
  if (&op.def() == &while_op()) {
    const size_t n = carried_count(op);
    std::vector<Tensor> init(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n));
    std::vector<Tensor> out = tracer_now().trace_while(
        [&](const std::vector<Tensor>& a) { return replay_region(op.region(0), a, lookup, decompose); },
        [&](const std::vector<Tensor>& a) { return replay_region(op.region(1), a, lookup, decompose); }, init,
        "append_backward: a while replayed", save_iterations);
    return out;
  }
  if (decompose && decomposed_for_autodiff(op.def())) {
    // Composites its decomposition emits are decomposed by the next round.
    return op.def().decompose(in, op.attrs());
  }
  return current_builder().apply(op.def(), in, op.attrs(), nullptr);
}

// True when a region of `op`, or of control flow nested in it, holds a
// composite op without a VJP rule.
bool regions_hold_composites(const Operation& op) {
  for (size_t r = 0; r < op.num_regions(); ++r) {
    for (const Operation* inner = op.region(r).front(); inner != nullptr; inner = inner->next()) {
      if (decomposed_for_autodiff(inner->def())) return true;
      if (is_control_flow(*inner) && regions_hold_composites(*inner)) return true;
    }
  }
  return false;
}

// Decomposes the composite ops without a VJP rule inside the regions of
// top-level control flow: each such cond or while is traced again in place
// with them decomposed (the decomposition pass works on the top level).
void decompose_in_regions(Program& program) {
  for (int round = 0;; ++round) {
    Operation* target = nullptr;
    size_t pos = 0;
    for (const auto& op : program.block().ops()) {
      if (is_control_flow(*op) && regions_hold_composites(*op)) {
        target = op.get();
        break;
      }
      ++pos;
    }
    if (target == nullptr) return;
    const std::string where = "append_backward: decomposing inside operation " + std::to_string(pos) + " (" +
                              target->name() + ")";
    if (round == 32) {
      throw Error(ErrorCode::invalid_argument, where + ": composite ops remain after 32 rounds of decomposition");
    }
    if (saves_iterations(*target)) {
      throw Error(ErrorCode::unsupported, where + ": the while already saves its iterations");
    }
    TypeInference types = infer_types(program);
    Tracer tracer(program, default_device(), pos, std::move(types.symbols));
    BuilderScope scope(tracer);
    std::unordered_map<const Value*, Tensor> outer;
    Lookup lookup = [&](Value* v) {
      auto it = outer.find(v);
      if (it == outer.end()) {
        const SymShape& shape = types.at(v);
        it = outer.emplace(v, tracer.symbolic(v, tracer.symbols().sample(shape, 0), shape)).first;
      }
      return it->second;
    };
    std::vector<Tensor> in;
    for (Value* v : target->operands()) in.push_back(lookup(v));
    std::vector<Tensor> out = replay_op(*target, in, lookup, /*decompose=*/true);
    OAR_CHECK_ARG(out.size() == target->results().size(), where + ": the traced op has a different result count");
    if (tracer.specialized()) {
      throw Error(ErrorCode::unsupported,
                  where + ": a decomposition there works only for fixed sizes of the dynamic dims");
    }
    for (size_t r = 0; r < out.size(); ++r) program.replace_all_uses(target->result(r), tracer.capture(out[r]));
    program.block().erase(target);
  }
}

// Decomposes the composite ops without a VJP rule (they are differentiated
// through their decomposition, as in eager mode). Values the caller holds
// are tracked through temporary outputs, since decomposition replaces them.
// An op differentiated through its decomposition (stop_gradient, not
// differentiable, stays: Note [detach in a trace] in core/src/ops/elementwise.cpp).
bool without_vjp(const OpDef& def) { return def.decompose && !def.vjp && def.differentiable; }

void decompose_ops_without_vjp(Program& program, std::vector<Value*>& held, const std::vector<Shape>& input_shapes) {
  bool any = false;
  for (const auto& op : program.block().ops()) {
    any = any || without_vjp(op->def()) || (is_control_flow(*op) && regions_hold_composites(*op));
  }
  if (!any) return;
  size_t first = program.outputs().size();
  for (Value* v : held) program.add_output(v, "__held_" + std::to_string(program.outputs().size()));
  auto pass = make_decomposition_pass(without_vjp);
  try {
    decompose_in_regions(program);
    pass->run(program);
  } catch (const Error& e) {
    // A decomposition that depends on a dynamic size needs concrete shapes:
    // given example shapes, specialize, then decompose.
    bool dynamic = false;
    for (const Value* v : program.inputs()) dynamic = dynamic || !v->type().is_static();
    if (!dynamic || input_shapes.empty()) throw;
    log_message(OAR_LOG_DEBUG, std::string("append_backward: specializing dynamic dims to decompose: ") + e.what());
    specialize_types(program, input_shapes);
    pass->run(program);
  }
  for (size_t i = 0; i < held.size(); ++i) held[i] = program.outputs()[first + i].value;
  std::vector<NamedValue> keep(program.outputs().begin(), program.outputs().begin() + static_cast<std::ptrdiff_t>(first));
  program.clear_outputs();
  for (auto& o : keep) program.add_output(o.value, o.name);
}

// Note [VJP of cond]
// The backward of %r... = cond(%p) {A} {B} is a cond on the same predicate.
// Each of its branches re-runs the forward branch (values made inside a
// region live only there), then the VJP rules of its operations in
// reverse, and yields one gradient per outside value the regions read that
// needs one (zeros where that branch does not use it). Control flow nested
// in a region is re-run by tracing it again (replay_op); a nested cond is
// differentiated the same way, one level down; a while nested in a region
// is replayed saving its iterations and differentiated as below, from
// those stacks (recomputed in each run of the enclosing backward, so the
// stacks of an inner loop never outlive one outer iteration).
//
// Note [VJP of while]
// The forward %r... = while(%x0...) {C} {B} is switched to save its
// iterations (Note [Control-flow ops]): it also returns %s_k, the stack of
// the values carried into each run of the body, [n, dims_k...]. Its
// backward is a while running the n iterations in reverse, carrying a
// counter i (n-1 down to 0), the gradient of each floating carried value
// (seeded with the gradient of %r) and an accumulator per outside value
// the body reads that needs a gradient (zeros at first). Iteration i reads
// x_i = %s[i] from the stacks, re-runs the body on it (as a cond branch is
// re-run), applies the VJP rules in reverse to get the gradients of x_i
// and of the outside values, adds the gradient of %s[i] when the stack
// itself has one (a second derivative differentiates through it) and
// steps i down. Its results are the gradients of %x0 and of the outside
// values. The condition region is not differentiated (it yields a bool).
// Control flow nested in the body is differentiated one level down (a
// nested while from the stacks of its replay, as in a cond's branch).

std::vector<Tensor> region_backward(const Block& region, const std::vector<Tensor>& args,
                                    const std::vector<bool>& arg_wanted, const std::vector<Value*>& wanted,
                                    const std::vector<Tensor>& result_grads,
                                    const std::function<Tensor(Value*)>& outside, const std::string& what);

// The backward loop of the while `op` (Note [VJP of while]) from `stacks`
// (the values carried into each run of its body, one stack per carried
// value), `results` (what the while gave), and the gradients reaching its
// results and its stacks (undefined: none). `wanted` are the values from
// outside its regions that need a gradient, `outside` gives their values.
// Returns the gradient of each carried operand (undefined for one that is
// not floating), then of each wanted value.
std::vector<Tensor> while_backward(const Operation& op, const std::vector<Tensor>& stacks,
                                   const std::vector<Tensor>& results, const std::vector<Tensor>& result_grads,
                                   const std::vector<Tensor>& stack_grads, const std::vector<Value*>& wanted,
                                   const Lookup& outside, const std::string& where) {
  const size_t n = carried_count(op);
  OAR_CHECK_ARG(stacks.size() == n && results.size() == n, where + ": expected " + std::to_string(n) +
                                                               " stacks and results, got " +
                                                               std::to_string(stacks.size()) + " and " +
                                                               std::to_string(results.size()));
  std::vector<size_t> floating;  // carried values that carry a gradient
  for (size_t k = 0; k < n; ++k) {
    if (is_floating(op.operand(k)->type().dtype)) floating.push_back(k);
  }
  std::vector<bool> arg_wanted(n, false);
  for (size_t k : floating) arg_wanted[k] = true;
  // Carried: the counter, the gradients of the floating carried values,
  // the accumulators of the outside values.
  Tensor count = reshape(slice(shape_of(stacks[0]), {0}, {0}, {1}), {});
  std::vector<Tensor> init{subtract(count, scalar_like(count, 1))};
  for (size_t k : floating) {
    init.push_back(k < result_grads.size() && result_grads[k].defined() ? result_grads[k] : zeros_like(results[k]));
  }
  for (Value* v : wanted) init.push_back(zeros_like(outside(v)));
  auto going = [&](const std::vector<Tensor>& args) -> std::vector<Tensor> {
    return {greater_equal(args[0], scalar_like(args[0], 0))};
  };
  auto step = [&](const std::vector<Tensor>& args) -> std::vector<Tensor> {
    Tensor index = reshape(args[0], {1});
    std::vector<Tensor> xs;
    for (size_t k = 0; k < n; ++k) xs.push_back(squeeze(gather(stacks[k], index, 0), {0}));
    std::vector<Tensor> body_grads(n);
    for (size_t f = 0; f < floating.size(); ++f) body_grads[floating[f]] = args[1 + f];
    std::vector<Tensor> g = region_backward(op.region(1), xs, arg_wanted, wanted, body_grads, outside,
                                            "the body of a while");
    std::vector<Tensor> next{subtract(args[0], scalar_like(args[0], 1))};
    for (size_t f = 0; f < floating.size(); ++f) {
      const size_t k = floating[f];
      Tensor gx = g[f].defined() ? g[f] : zeros_like(xs[k]);
      if (k < stack_grads.size() && stack_grads[k].defined()) {
        gx = add(gx, squeeze(gather(stack_grads[k], index, 0), {0}));
      }
      next.push_back(gx);
    }
    for (size_t j = 0; j < wanted.size(); ++j) {
      next.push_back(add(args[1 + floating.size() + j], g[floating.size() + j]));
    }
    return next;
  };
  std::vector<Tensor> out = tracer_now().trace_while(going, step, init, where);
  std::vector<Tensor> grads(n);
  for (size_t f = 0; f < floating.size(); ++f) grads[floating[f]] = out[1 + f];
  for (size_t j = 0; j < wanted.size(); ++j) grads.push_back(out[1 + floating.size() + j]);
  return grads;
}

// The backward of one region (a cond branch or a while body) at `args`
// (its arguments' values; none for a branch): re-runs its operations
// through the current builder, then their VJP rules in reverse from
// `result_grads` (one per yielded value; undefined: none). Returns the
// gradients of the arguments flagged in `arg_wanted` (undefined where not
// reached), then of the `wanted` outside values (zeros where not reached).
std::vector<Tensor> region_backward(const Block& region, const std::vector<Tensor>& args,
                                    const std::vector<bool>& arg_wanted, const std::vector<Value*>& wanted,
                                    const std::vector<Tensor>& result_grads,
                                    const std::function<Tensor(Value*)>& outside, const std::string& what) {
  std::unordered_map<const Value*, Tensor> local;
  for (size_t k = 0; k < args.size(); ++k) local[region.argument(k)] = args[k];
  Lookup value_of = [&](Value* v) {
    auto it = local.find(v);
    return it != local.end() ? it->second : outside(v);
  };
  std::unordered_set<const Value*> reached(wanted.begin(), wanted.end());
  for (size_t k = 0; k < args.size(); ++k) {
    if (arg_wanted[k]) reached.insert(region.argument(k));
  }
  const Operation* yield = terminator(region);
  std::vector<const Operation*> ops;
  std::unordered_map<const Operation*, std::vector<Tensor>> stacks_of;  // of the whiles replayed saving them
  for (const Operation* op = region.front(); op != nullptr && op != yield; op = op->next()) {
    std::vector<Tensor> in;
    bool any = false;
    for (Value* v : op->operands()) {
      in.push_back(value_of(v));
      any = any || reached.count(v);
    }
    const bool regions = is_control_flow(*op);
    if (regions) {
      for (Value* v : captured_values(*op)) any = any || reached.count(v);
    }
    // A while a gradient may flow through is replayed saving its iterations:
    // its backward (below) runs from these stacks, within this iteration or branch.
    const bool is_while = &op->def() == &while_op();
    const bool save = is_while && (any || saves_iterations(*op));
    std::vector<Tensor> out = replay_op(*op, in, value_of, false, save);
    for (size_t r = 0; r < out.size() && r < op->results().size(); ++r) local[op->result(r)] = out[r];
    if (is_while && any) {
      const size_t n = carried_count(*op);
      OAR_CHECK_ARG(out.size() == 2 * n, "append_backward: a while replayed inside " + what + " gave " +
                                             std::to_string(out.size()) + " values for " + std::to_string(n) +
                                             " carried values and their stacks");
      stacks_of[op].assign(out.begin() + static_cast<std::ptrdiff_t>(n), out.end());
    }
    if (any && (op->def().differentiable || regions)) reached.insert(op->results().begin(), op->results().end());
    ops.push_back(op);
  }
  std::unordered_map<const Value*, Tensor> grads;
  auto accumulate = [&](const Value* v, const Tensor& g) {
    auto it = grads.find(v);
    if (it == grads.end()) {
      grads.emplace(v, g);
    } else {
      it->second = add(it->second, g);
    }
  };
  for (size_t k = 0; yield && k < yield->operands().size(); ++k) {
    if (reached.count(yield->operand(k)) && result_grads[k].defined()) accumulate(yield->operand(k), result_grads[k]);
  }
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    const Operation& op = **it;
    std::vector<Tensor> in, out, g;
    bool has_grad = false;
    for (Value* r : op.results()) {
      auto found = grads.find(r);
      has_grad = has_grad || found != grads.end();
      out.push_back(local.at(r));
      g.push_back(found == grads.end() ? Tensor() : found->second);
    }
    std::unique_ptr<bool[]> needs(new bool[op.operands().size()]);
    bool any_need = false;
    for (size_t k = 0; k < op.operands().size(); ++k) {
      needs[k] = reached.count(op.operand(k)) > 0;
      any_need = any_need || needs[k];
      in.push_back(value_of(op.operand(k)));
    }
    if (!has_grad) continue;
    if (&op.def() == &cond_op()) {  // Note [VJP of cond], one level down
      std::vector<Value*> inner;
      for (Value* v : captured_values(op)) {
        if (reached.count(v)) inner.push_back(v);
      }
      if (inner.empty()) continue;
      std::vector<Tensor> inner_grads;
      for (size_t r = 0; r < op.results().size(); ++r) inner_grads.push_back(g[r].defined() ? g[r] : zeros_like(out[r]));
      auto branch = [&](size_t r) {
        return [&, r](const std::vector<Tensor>&) {
          return region_backward(op.region(r), {}, {}, inner, inner_grads, value_of, "a branch of a cond");
        };
      };
      std::vector<Tensor> gi = tracer_now().trace_cond(in[0], branch(0), branch(1),
                                                      "append_backward: the VJP of a cond inside " + what);
      for (size_t k = 0; k < inner.size(); ++k) accumulate(inner[k], gi[k]);
      continue;
    }
    if (&op.def() == &while_op()) {  // Note [VJP of while], one level down
      std::vector<Value*> inner;
      for (Value* v : captured_values(op)) {
        if (reached.count(v)) inner.push_back(v);
      }
      if (inner.empty() && !any_need) continue;
      auto st = stacks_of.find(&op);
      OAR_CHECK_ARG(st != stacks_of.end(), "append_backward: a while inside " + what + " was not replayed with its stacks");
      const size_t n = carried_count(op);
      std::vector<Tensor> results(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n));
      std::vector<Tensor> result_grads(g.begin(), g.begin() + static_cast<std::ptrdiff_t>(n));
      std::vector<Tensor> stack_grads(g.begin() + static_cast<std::ptrdiff_t>(n), g.end());
      std::vector<Tensor> gw = while_backward(op, st->second, results, result_grads, stack_grads, inner, value_of,
                                              "append_backward: the VJP of a while inside " + what);
      for (size_t k = 0; k < n; ++k) {
        if (needs[k] && gw[k].defined()) accumulate(op.operand(k), gw[k]);
      }
      for (size_t j = 0; j < inner.size(); ++j) accumulate(inner[j], gw[n + j]);
      continue;
    }
    if (!any_need) continue;
    const OpDef& def = op.def();
    if (is_control_flow(op)) {
      throw Error(ErrorCode::internal, "append_backward: operation " + def.name + " inside " + what +
                                           " is control flow without a VJP");
    }
    if (!def.differentiable || !def.vjp) {
      throw Error(ErrorCode::unsupported, "append_backward: " + def.name + " inside " + what + " has no VJP rule");
    }
    VjpContext ctx{in, out, g, op.attrs(), std::span<const bool>(needs.get(), op.operands().size())};
    std::vector<Tensor> input_grads = def.vjp(ctx);
    for (size_t k = 0; k < op.operands().size() && k < input_grads.size(); ++k) {
      if (needs[k] && input_grads[k].defined()) accumulate(op.operand(k), input_grads[k]);
    }
  }
  std::vector<Tensor> result;
  for (size_t k = 0; k < args.size(); ++k) {
    if (!arg_wanted[k]) continue;
    auto it = grads.find(region.argument(k));
    result.push_back(it != grads.end() ? it->second : Tensor());
  }
  for (Value* v : wanted) {
    auto it = grads.find(v);
    result.push_back(it != grads.end() ? it->second : zeros_like(outside(v)));
  }
  return result;
}

}  // namespace

std::vector<Value*> append_backward(Program& program, const std::vector<Value*>& targets,
                                    const std::vector<Value*>& wrt, const std::vector<Value*>& target_grads,
                                    const BackwardOptions& options) {
  OAR_CHECK_ARG(!targets.empty(), "append_backward: no targets given");
  OAR_CHECK_ARG(target_grads.empty() || target_grads.size() == targets.size(),
                "append_backward: got " + std::to_string(target_grads.size()) + " target grads for " +
                    std::to_string(targets.size()) + " targets");
  std::vector<Value*> held = targets;
  held.insert(held.end(), wrt.begin(), wrt.end());
  held.insert(held.end(), target_grads.begin(), target_grads.end());
  for (Value* v : held) OAR_CHECK_ARG(v != nullptr, "append_backward: a target or wrt value is null");
  // With no example shapes a dynamic program is differentiated for every
  // size of its dynamic dims (Note [Dynamic dims] in trace.h).
  bool dynamic = false;
  for (const Value* v : program.inputs()) dynamic = dynamic || !v->type().is_static();
  std::vector<Shape> inputs = options.input_shapes;
  // A program that already holds a loop's stacks (Note [VJP of while]) has
  // no concrete shapes before it runs: its symbols' samples are the examples.
  const bool data_dependent = has_data_dependent_shapes(program);
  if (data_dependent) inputs.clear();
  if (inputs.empty() && !dynamic && !data_dependent) inputs = static_input_shapes(program);
  decompose_ops_without_vjp(program, held, inputs);
  std::vector<Value*> tgt(held.begin(), held.begin() + static_cast<std::ptrdiff_t>(targets.size()));
  std::vector<Value*> wrt_v(held.begin() + static_cast<std::ptrdiff_t>(targets.size()),
                            held.begin() + static_cast<std::ptrdiff_t>(targets.size() + wrt.size()));
  std::vector<Value*> seeds(held.begin() + static_cast<std::ptrdiff_t>(targets.size() + wrt.size()), held.end());

  // Symbolic shapes of every value (Note [Symbolic dims]); the examples the
  // VJP rules see are the given input shapes' or sample A of the symbols.
  TypeInference types = infer_types(program);
  // A seed has its target's shape: the same symbols (a dynamic output's gradient input would
  // otherwise get dims of its own, and a VJP mixing the two would not see they are equal).
  for (size_t i = 0; i < seeds.size() && i < tgt.size(); ++i) {
    if (!seeds[i]) continue;
    if (types.at(seeds[i]).size() == types.at(tgt[i]).size()) types.shapes[seeds[i]] = types.at(tgt[i]);
  }
  std::unordered_map<const Value*, Shape> example;
  if (!inputs.empty()) example = infer_shapes(program, inputs);

  // Operations between the wrt values and the targets.
  const size_t forward_ops = program.block().size();
  std::unordered_set<const Value*> from_wrt(wrt_v.begin(), wrt_v.end());
  for (size_t i = 0; i < forward_ops; ++i) {
    const Operation& op = program.block().op(i);
    bool reached = false;
    for (Value* v : op.operands()) reached = reached || from_wrt.count(v);
    // A cond or while also depends on what its regions read.
    if (is_control_flow(op)) {
      for (Value* v : captured_values(op)) reached = reached || from_wrt.count(v);
    }
    if (reached && (op.def().differentiable || is_control_flow(op)))
      from_wrt.insert(op.results().begin(), op.results().end());
  }

  Tracer tracer(program, default_device(), Tracer::kAppend, std::move(types.symbols));
  std::unordered_map<const Value*, Tensor> symbols;
  auto sym = [&](Value* v) -> Tensor {
    auto it = symbols.find(v);
    if (it != symbols.end()) return it->second;
    const SymShape& shape = types.at(v);
    Tensor t = tracer.symbolic(v, inputs.empty() ? tracer.symbols().sample(shape, 0) : example.at(v), shape);
    symbols.emplace(v, t);
    return t;
  };
  std::unordered_map<const Value*, Tensor> grads;
  bool example_bound = false;  // a gradient took a dynamic dim's example size
  NoGrad no_grad;  // the emitted ops are plain operations: no eager tape
  BuilderScope scope(tracer);
  auto accumulate = [&](const Value* v, const Tensor& g) {
    auto it = grads.find(v);
    if (it == grads.end()) {
      grads.emplace(v, g);
    } else {
      it->second = add(it->second, g);
    }
  };
  for (size_t i = 0; i < tgt.size(); ++i) {
    if (!from_wrt.count(tgt[i])) continue;
    accumulate(tgt[i], seeds.empty() ? ones_like(sym(tgt[i])) : sym(seeds[i]));
  }

  for (size_t i = forward_ops; i-- > 0;) {
    Operation& op = program.block().op(i);
    bool has_grad = false;
    for (Value* r : op.results()) has_grad = has_grad || grads.count(r);
    if (!has_grad) continue;
    if (&op.def() == &cond_op()) {  // Note [VJP of cond]
      std::vector<Value*> wanted;
      for (Value* v : captured_values(op)) {
        if (from_wrt.count(v)) wanted.push_back(v);
      }
      if (wanted.empty()) continue;
      std::vector<Tensor> result_grads;
      for (Value* r : op.results()) {
        auto it = grads.find(r);
        result_grads.push_back(it != grads.end() ? it->second : zeros_like(sym(r)));
      }
      auto branch = [&](size_t region) {
        return [&, region](const std::vector<Tensor>&) {
          return region_backward(op.region(region), {}, {}, wanted, result_grads, sym, "a branch of a cond");
        };
      };
      std::vector<Tensor> g = tracer.trace_cond(sym(op.operand(0)), branch(0), branch(1),
                                                "append_backward: the VJP of operation " + std::to_string(i) + " (cond)");
      for (size_t k = 0; k < wanted.size(); ++k) accumulate(wanted[k], g[k]);
      continue;
    }
    if (&op.def() == &while_op()) {  // Note [VJP of while]
      const size_t n = carried_count(op);
      const std::string where = "append_backward: the VJP of operation " + std::to_string(i) + " (while)";
      if (!saves_iterations(op)) {
        op.mutable_attrs().set("save_iterations", true);
        for (size_t k = 0; k < n; ++k) {
          TensorType t = op.result(k)->type();
          t.dims.insert(t.dims.begin(), kDynamic);
          program.add_result(op, t);
        }
      }
      std::vector<Tensor> stacks;
      std::optional<int64_t> iterations;  // one count for every stack of the loop
      for (size_t k = 0; k < n; ++k) {
        Value* sv = op.result(n + k);
        auto found = symbols.find(sv);
        if (found != symbols.end()) {
          stacks.push_back(found->second);
          continue;
        }
        Tensor carried = sym(op.result(k));
        SymShape shape = tracer.symbolic_shape(tracer.value_of(carried));
        if (!iterations) iterations = tracer.symbols().fresh();
        shape.insert(shape.begin(), *iterations);
        Shape ex = carried.shape();
        ex.insert(ex.begin(), tracer.symbols().sample({*iterations}, 0)[0]);
        Tensor t = tracer.symbolic(sv, ex, shape);
        symbols.emplace(sv, t);
        stacks.push_back(t);
      }
      std::vector<Value*> wanted;
      for (Value* v : captured_values(op)) {
        if (from_wrt.count(v)) wanted.push_back(v);
      }
      std::vector<Tensor> results, result_grads, stack_grads;
      for (size_t k = 0; k < n; ++k) {
        results.push_back(sym(op.result(k)));
        auto g = grads.find(op.result(k));
        result_grads.push_back(g != grads.end() ? g->second : Tensor());
        auto sg = grads.find(op.result(n + k));
        stack_grads.push_back(sg != grads.end() ? sg->second : Tensor());
      }
      std::vector<Tensor> g = while_backward(op, stacks, results, result_grads, stack_grads, wanted, sym, where);
      for (size_t k = 0; k < n; ++k) {
        if (g[k].defined() && from_wrt.count(op.operand(k))) accumulate(op.operand(k), g[k]);
      }
      for (size_t j = 0; j < wanted.size(); ++j) accumulate(wanted[j], g[n + j]);
      continue;
    }
    if (is_control_flow(op)) {
      throw Error(ErrorCode::internal, "append_backward: operation " + std::to_string(i) + " (" + op.def().name +
                                           ") is control flow without a VJP");
    }
    std::vector<bool> needs_storage;
    bool any_need = false;
    for (Value* v : op.operands()) {
      bool need = from_wrt.count(v) > 0;
      needs_storage.push_back(need);
      any_need = any_need || need;
    }
    if (!any_need) continue;
    const OpDef& def = op.def();
    OAR_CHECK_ARG(def.differentiable && def.vjp,
                  "append_backward: operation " + std::to_string(i) + " (" + def.name + ") is not differentiable");
    std::vector<Tensor> in, out, g;
    for (Value* v : op.operands()) in.push_back(sym(v));
    for (Value* r : op.results()) {
      out.push_back(sym(r));
      auto it = grads.find(r);
      g.push_back(it == grads.end() ? Tensor() : it->second);
    }
    std::unique_ptr<bool[]> needs(new bool[needs_storage.size()]);
    for (size_t k = 0; k < needs_storage.size(); ++k) needs[k] = needs_storage[k];
    VjpContext ctx{in, out, g, op.attrs(), std::span<const bool>(needs.get(), needs_storage.size())};
    std::vector<Tensor> input_grads = def.vjp(ctx);
    // A gradient whose dim is not its operand's dynamic dim came from the
    // example's size (a VJP that sliced along a dynamic dim, say): it holds
    // for that size only.
    for (size_t k = 0; inputs.empty() && k < op.operands().size() && k < input_grads.size(); ++k) {
      const Value* gv = needs_storage[k] && input_grads[k].defined() ? tracer.value_of(input_grads[k]) : nullptr;
      if (!gv) continue;
      const SymShape& want = types.at(op.operand(k));
      const SymShape& got = tracer.symbolic_shape(gv);
      for (size_t d = 0; d < want.size() && got.size() == want.size(); ++d) {
        const int64_t w = tracer.symbols().resolve(want[d]);
        // In a program with data-dependent shapes (a tensor array) no shapes can specialize
        // it, and a gradient dim that is another symbol was computed when it runs (a pad or a
        // slice from the end along the dim): only a static dim is the example's.
        const int64_t gd = tracer.symbols().resolve(got[d]);
        if (w < 0 && gd != w && (gd >= 0 || !data_dependent)) example_bound = true;
      }
    }
    for (size_t k = 0; k < op.operands().size() && k < input_grads.size(); ++k) {
      if (needs_storage[k] && input_grads[k].defined()) accumulate(op.operand(k), input_grads[k]);
    }
  }

  std::vector<Value*> result;
  for (Value* w : wrt_v) {
    auto it = grads.find(w);
    if (it == grads.end()) {
      OAR_CHECK_ARG(options.allow_unused, "append_backward: " + value_str(w) +
                                              " does not reach the targets; pass allow_unused to get no gradient");
      result.push_back(nullptr);
      continue;
    }
    result.push_back(tracer.capture(it->second));
  }
  if (tracer.specialized() || example_bound) {
    OAR_CHECK_ARG(!inputs.empty(), "append_backward: a VJP rule computed a shape from the example sizes of the "
                                   "dynamic dims, so the backward holds only for those sizes; pass input_shapes to "
                                   "specialize the program to them");
    specialize_types(program, inputs);
  }
  verify(program);
  return result;
}

std::vector<NamedValue> append_sgd_step(Program& program, Value* loss, double learning_rate,
                                        const BackwardOptions& options) {
  OAR_CHECK_ARG(loss && loss->type().rank() == 0, "append_sgd_step: the loss must be a scalar value");
  std::vector<Value*> params = program.parameters();
  OAR_CHECK_ARG(!params.empty(), "append_sgd_step: the program has no parameters to train");
  BackwardOptions opts = options;
  opts.allow_unused = true;
  std::vector<Value*> g = append_backward(program, {loss}, params, {}, opts);
  std::vector<NamedValue> result;
  Tracer tracer(program, default_device());
  NoGrad no_grad;
  BuilderScope scope(tracer);
  for (size_t i = 0; i < params.size(); ++i) {
    if (!g[i]) continue;
    Tensor p = tracer.symbolic(params[i]);
    Tensor grad = tracer.symbolic(g[i], g[i]->type().is_static() ? g[i]->type().dims : params[i]->type().dims);
    Tensor updated = p - grad * learning_rate;
    program.add_update(params[i]->name(), tracer.value_of(updated));
    result.push_back({params[i]->name(), g[i]});
  }
  verify(program);
  return result;
}

}  // namespace oar::ir
