// Program autodiff: the backward of a program, emitted through a Tracer
// with the op definitions' VJP rules (the rules eager mode runs).
#include "oar/ir/autodiff.h"

#include <functional>
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

// Decomposes the composite ops without a VJP rule (they are differentiated
// through their decomposition, as in eager mode). Values the caller holds
// are tracked through temporary outputs, since decomposition replaces them.
void decompose_ops_without_vjp(Program& program, std::vector<Value*>& held, const std::vector<Shape>& input_shapes) {
  bool any = false;
  for (const auto& op : program.block().ops()) any = any || (op->def().decompose && !op->def().vjp);
  if (!any) return;
  size_t first = program.outputs().size();
  for (Value* v : held) program.add_output(v, "__held_" + std::to_string(program.outputs().size()));
  auto pass = make_decomposition_pass([](const OpDef& def) { return def.decompose && !def.vjp; });
  try {
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
// needs one (zeros where that branch does not use it). A while, or control
// flow nested in a branch, is refused.
std::vector<Tensor> branch_backward(const Block& region, const std::vector<Value*>& wanted,
                                    const std::vector<Tensor>& result_grads,
                                    const std::function<Tensor(Value*)>& outside) {
  std::unordered_map<const Value*, Tensor> local;
  auto value_of = [&](Value* v) {
    auto it = local.find(v);
    return it != local.end() ? it->second : outside(v);
  };
  std::unordered_set<const Value*> reached(wanted.begin(), wanted.end());
  const Operation* yield = terminator(region);
  std::vector<const Operation*> ops;
  for (const Operation* op = region.front(); op != nullptr && op != yield; op = op->next()) {
    if (is_control_flow(*op)) {
      throw Error(ErrorCode::unsupported, "append_backward: a " + op->name() + " inside a branch of a cond is not "
                                          "differentiable yet (program autodiff handles one level of cond)");
    }
    std::vector<Tensor> in;
    bool any = false;
    for (Value* v : op->operands()) {
      in.push_back(value_of(v));
      any = any || reached.count(v);
    }
    std::vector<Tensor> out = current_builder().apply(op->def(), in, op->attrs(), nullptr);
    for (size_t r = 0; r < out.size(); ++r) local[op->result(r)] = out[r];
    if (any && op->def().differentiable) reached.insert(op->results().begin(), op->results().end());
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
    if (reached.count(yield->operand(k))) accumulate(yield->operand(k), result_grads[k]);
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
    if (!has_grad || !any_need) continue;
    const OpDef& def = op.def();
    if (!def.differentiable || !def.vjp) {
      throw Error(ErrorCode::unsupported, "append_backward: " + def.name + " inside a branch of a cond has no VJP rule");
    }
    VjpContext ctx{in, out, g, op.attrs(), std::span<const bool>(needs.get(), op.operands().size())};
    std::vector<Tensor> input_grads = def.vjp(ctx);
    for (size_t k = 0; k < op.operands().size() && k < input_grads.size(); ++k) {
      if (needs[k] && input_grads[k].defined()) accumulate(op.operand(k), input_grads[k]);
    }
  }
  std::vector<Tensor> result;
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
  if (inputs.empty() && !dynamic) inputs = static_input_shapes(program);
  decompose_ops_without_vjp(program, held, inputs);
  std::vector<Value*> tgt(held.begin(), held.begin() + static_cast<std::ptrdiff_t>(targets.size()));
  std::vector<Value*> wrt_v(held.begin() + static_cast<std::ptrdiff_t>(targets.size()),
                            held.begin() + static_cast<std::ptrdiff_t>(targets.size() + wrt.size()));
  std::vector<Value*> seeds(held.begin() + static_cast<std::ptrdiff_t>(targets.size() + wrt.size()), held.end());

  // Symbolic shapes of every value (Note [Symbolic dims]); the examples the
  // VJP rules see are the given input shapes' or sample A of the symbols.
  TypeInference types = infer_types(program);
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
          return branch_backward(op.region(region), wanted, result_grads, sym);
        };
      };
      std::vector<Tensor> g = tracer.trace_cond(sym(op.operand(0)), branch(0), branch(1),
                                                "append_backward: the VJP of operation " + std::to_string(i) + " (cond)");
      for (size_t k = 0; k < wanted.size(); ++k) accumulate(wanted[k], g[k]);
      continue;
    }
    // Results in from_wrt with a gradient: the targets depend on the
    // differentiated values through this op's regions.
    if (is_control_flow(op)) {
      throw Error(ErrorCode::unsupported,
                  "append_backward: operation " + std::to_string(i) + " (" + op.def().name +
                      ") lies between the differentiated values and the targets; program autodiff through while "
                      "is not implemented yet (train through the function eagerly)");
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
        if (w < 0 && tracer.symbols().resolve(got[d]) != w) example_bound = true;
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
