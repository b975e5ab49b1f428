// Capture (static mode's Builder) and to_static. See Note [Dynamic dims] in
// oar/ir/trace.h and Note [Symbolic dims] in oar/ir/shape_inference.h.
#include "oar/ir/trace.h"

#include <list>

#include "oar/autograd.h"
#include "oar/dist_tensor.h"
#include "oar/error.h"
#include "oar/ir/compiled_function.h"
#include "oar/ir/control_flow.h"
#include "oar/ir/pass.h"
#include "oar/ir/shape_inference.h"
#include "oar/ir/verifier.h"
#include "oar/runtime.h"
#include "runtime/runtime_state.h"

namespace oar::ir {

namespace {

std::string type_str(const InputSpec& spec) { return TensorType{spec.dtype, spec.shape}.str(); }

std::string spec_str(const std::vector<InputSpec>& specs) {
  std::string out;
  for (size_t i = 0; i < specs.size(); ++i) {
    out += (i ? ", " : "") + type_str(specs[i]);
  }
  return out;
}

}  // namespace

Tracer::Tracer(Program& program, const Device& device, size_t insert_at, SymbolTable symbols)
    : program_(program),
      device_(device),
      cursor_(insert_at == kAppend ? program.block().size() : insert_at),
      symbols_(std::move(symbols)) {}

Tensor Tracer::symbolic(Value* value, const Shape& example, const SymShape& shape) {
  OAR_CHECK_ARG(value != nullptr, "trace: symbolic() needs a value");
  const TensorType& type = value->type();
  SymShape sym = shape.empty() && type.rank() > 0 ? symbols_.fresh_shape(type) : shape;
  OAR_CHECK_ARG(static_cast<int64_t>(sym.size()) == type.rank(),
                "trace: symbolic shape " + symbols_.str(sym) + " does not match type " + type.str());
  Shape ex = example.empty() && type.rank() > 0 ? symbols_.sample(sym, 0) : example;
  OAR_CHECK_ARG(type.matches(ex), "trace: example shape " + shape_str(ex) + " does not match type " + type.str());
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = ex;
  impl->strides = contiguous_strides(ex);
  impl->dtype = type.dtype;
  impl->device = device_;
  impl->symbol = std::make_shared<SymbolicInfo>(SymbolicInfo{value, this, sym});
  examples_[value] = ex;
  shapes_[value] = sym;
  return Tensor(std::move(impl));
}

const SymShape& Tracer::symbolic_shape(const Value* value) const {
  auto it = shapes_.find(value);
  OAR_CHECK_ARG(it != shapes_.end(), "trace: no symbolic shape is known for a value of type " + value->type().str());
  return it->second;
}

const Shape& Tracer::example_shape(const Value* value) const {
  auto it = examples_.find(value);
  if (it != examples_.end()) return it->second;
  OAR_CHECK_ARG(value->type().is_static(), "trace: no example shape is known for a value of type " +
                                               value->type().str());
  return value->type().dims;
}

Value* Tracer::value_of(const Tensor& t) const {
  if (!t.defined() || !t.impl().symbol || t.impl().symbol->owner != this) return nullptr;
  return t.impl().symbol->value;
}

void Tracer::name_parameter(const Tensor& t, const std::string& name) {
  OAR_CHECK_ARG(t.defined() && !t.is_symbolic(), "trace: parameter '" + name + "' needs a tensor with values");
  param_names_[t.impl_ptr().get()] = name;
  keep_alive_.push_back(t);
}

void Tracer::note_size_read(const Tensor& x, int64_t dim) {
  if (!x.defined() || !x.impl().symbol || x.impl().symbol->owner != this) return;  // a concrete size
  const SymShape& shape = symbolic_shape(x.impl().symbol->value);
  if (dim < 0 || static_cast<size_t>(dim) >= shape.size() || shape[static_cast<size_t>(dim)] >= 0) return;
  // A size the values decide (nonzero's count, a length a loop grows) has no example to fix:
  // an attribute made from the assumed one would be wrong in the runs that differ.
  OAR_CHECK_ARG(!symbols_.data_dependent(shape[static_cast<size_t>(dim)]),
                "to_static: an op took dim " + std::to_string(dim) + " of a tensor of shape " + symbols_.str(shape) +
                    " as a number (a slice or index counted from its end, say), but that size is decided when the "
                    "program runs (nonzero's count, or a length that grows in a loop); index from the start, or "
                    "select with a mask");
  specialized_ = true;  // a dynamic dim's example size became an attribute
}

Value* Tracer::capture(const Tensor& t) {
  OAR_CHECK_ARG(t.defined(), "trace: an operand is an undefined tensor");
  if (t.impl().symbol) {
    OAR_CHECK_ARG(t.impl().symbol->owner == this,
                  "trace: a symbolic tensor of another trace was used; tensors of one to_static trace "
                  "cannot flow into another");
    return t.impl().symbol->value;
  }
  const TensorImpl* key = t.impl_ptr().get();
  auto it = captured_.find(key);
  if (it != captured_.end()) return it->second;
  // The program must see the values at run time, not the views' storage:
  // a captured tensor is made contiguous once here.
  Tensor value = t.is_contiguous() ? t.detach() : t.contiguous().detach();
  Value* v = nullptr;
  auto named = param_names_.find(key);
  if (named != param_names_.end()) {
    v = program_.find(named->second);
    if (!v) v = program_.add_parameter(named->second, type_of(value));
    captured_params_[named->second] = t;
  } else if (t.requires_grad() && t.is_leaf()) {
    std::string name = "param_" + std::to_string(captured_params_.size());
    while (program_.find(name)) name += "_";
    v = program_.add_parameter(name, type_of(value));
    captured_params_[name] = t;
  } else {
    std::string name = "const_" + std::to_string(next_constant_++);
    while (program_.find(name)) name = "const_" + std::to_string(next_constant_++);
    v = program_.add_constant(name, value);
  }
  captured_[key] = v;
  keep_alive_.push_back(t);
  examples_[v] = v->type().dims;
  shapes_[v] = v->type().dims;
  return v;
}

// Note [Folding while tracing]
// An op whose inputs are all small constants of the trace (no symbolic
// tensor, no parameter or buffer, nothing requiring grad) runs eagerly
// while tracing, and its result is a constant too: so the shape of a
// tensor without dynamic dims (paddle.shape(x), a constant) can be indexed
// and read by Python (x.reshape([paddle.shape(x)[0], -1])), as eagerly.
// Random and host ops (print, assert) and control flow are recorded as
// always; so is an op on a large constant (the constant folding pass
// handles those without values growing the trace).
bool Tracer::foldable(const OpDef& op, std::span<const Tensor> inputs) const {
  constexpr int64_t kMaxFolded = 1024;  // elements, all inputs together
  if (op.random || op.host || op.num_outputs != 1 || is_control_flow(op)) return false;
  if (inputs.empty()) return false;  // creation ops stay ops (a program keeps its scalars as full())
  int64_t total = 0;
  for (const Tensor& t : inputs) {
    if (!t.defined() || t.is_symbolic() || t.requires_grad() || t.device() != inputs[0].device()) return false;
    if (param_names_.count(t.impl_ptr().get())) return false;
    total += shape_numel(t.shape());
    if (total > kMaxFolded) return false;
  }
  return true;
}

std::vector<Tensor> Tracer::apply(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs,
                                  const Device* /*device: programs run on the executor's device*/) {
  if (op.num_inputs >= 0 && inputs.size() != static_cast<size_t>(op.num_inputs)) {
    throw Error(ErrorCode::invalid_argument, op.name + ": expected " + std::to_string(op.num_inputs) +
                                                 " inputs but got " + std::to_string(inputs.size()));
  }
  // Distributed tensors (H1): the dispatch runs the op on their local
  // pieces through this tracer (Note [Distributed dispatch]).
  if (dist::any_dist(inputs)) return dist::dispatch(op, inputs, attrs, nullptr);
  if (foldable(op, inputs)) {
    BuilderScope eager(EagerBuilder::instance());
    return EagerBuilder::instance().apply(op, inputs, attrs, nullptr);
  }
  // Autograd inside a trace (oar::grad of a symbolic input, as a PINN
  // loss does) records the operations, and like eager mode differentiates a
  // composite op without a VJP rule through its decomposition. Captured
  // parameters that require grad do not count: their gradients come from
  // program autodiff (append_backward).
  bool record = false;
  if (grad_enabled()) {
    for (const auto& t : inputs) record = record || (t.defined() && t.is_symbolic() && t.requires_grad());
  }
  // The tape cannot see through a region (the cond's results would not
  // depend on what its branches read): the op is not recorded, and a grad
  // call later in this trace is refused (tape_gap) rather than a wrong
  // gradient; a to_static function that never calls grad traces on.
  if (record && !regions_.empty()) {
    record = false;
    if (tape_gap_.empty()) {
      tape_gap_ = op.name + ": an input requiring grad reaches an op inside a traced cond or while; oar.grad "
                            "inside to_static cannot differentiate through control flow (call it eagerly)";
    }
  }
  if (record && op.decompose && !op.vjp && op.differentiable) return op.decompose(inputs, attrs);

  std::vector<Value*> operands;
  std::vector<TensorMeta> example(inputs.size());
  std::vector<SymMeta> symbolic_in(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    OAR_CHECK_ARG(inputs[i].defined(), op.name + ": input " + std::to_string(i) + " is undefined");
    Value* v = capture(inputs[i]);
    operands.push_back(v);
    example[i] = {inputs[i].dtype(), inputs[i].shape()};
    symbolic_in[i] = {inputs[i].dtype(), symbolic_shape(v)};
  }
  std::vector<TensorMeta> out = infer_meta(op, example, attrs);
  std::vector<SymMeta> out_sym;
  try {
    out_sym = symbols_.infer(op, symbolic_in, attrs);
  } catch (const Error&) {
    specialized_ = true;  // Note [Dynamic dims]
  }
  if (out_sym.size() != out.size()) {
    out_sym.assign(out.size(), {});  // rejected: every result takes its example shape
    for (size_t r = 0; r < out.size(); ++r) out_sym[r].shape = out[r].shape;
  }
  std::vector<TensorType> types;
  for (size_t r = 0; r < out.size(); ++r) {
    SymShape& sym = out_sym[r].shape;
    if (sym.size() != out[r].shape.size()) {  // a rank that depends on the sizes
      specialized_ = true;
      sym = out[r].shape;
    }
    // A dim the symbols call static but the example does not follow (a
    // slice to 5 of an example of size 2) is dynamic: its size is unknown.
    for (size_t d = 0; d < sym.size(); ++d) {
      if (sym[d] >= 0 && sym[d] != out[r].shape[d]) sym[d] = symbols_.fresh();
    }
    types.push_back({out[r].dtype, SymbolTable::type_dims(sym)});
  }
  Operation* operation = emit(op, std::move(operands), attrs, types);
  std::vector<Tensor> outputs;
  outputs.reserve(out.size());
  for (size_t r = 0; r < out.size(); ++r) outputs.push_back(symbolic(operation->result(r), out[r].shape, out_sym[r].shape));
  if (record) record_op(op, inputs, outputs, attrs);
  return outputs;
}

Operation* Tracer::emit(const OpDef& op, std::vector<Value*> operands, const Attrs& attrs,
                        const std::vector<TensorType>& types) {
  if (!regions_.empty()) return program_.append(*regions_.back(), op, std::move(operands), attrs, types);
  return program_.insert(cursor_++, op, std::move(operands), attrs, types);
}

Trace trace(const TracedFunction& fn, const std::vector<InputSpec>& specs, const ParamMap& parameters,
            const Device& device, const std::vector<Shape>& examples) {
  OAR_CHECK_ARG(examples.empty() || examples.size() == specs.size(),
                "to_static: got " + std::to_string(examples.size()) + " example shapes for " +
                    std::to_string(specs.size()) + " input specs");
  Trace result;
  result.specs = specs;
  Program& program = result.program;
  Tracer tracer(program, device);
  for (const auto& [name, t] : parameters) tracer.name_parameter(t, name);

  std::vector<Tensor> inputs;
  std::vector<Shape> example_shapes;
  for (size_t i = 0; i < specs.size(); ++i) {
    InputSpec& spec = result.specs[i];
    if (spec.name.empty()) spec.name = "x" + std::to_string(i);
    for (int64_t d : spec.shape) {
      OAR_CHECK_ARG(d >= kDynamic, "to_static: input '" + spec.name + "' has spec " + type_str(spec) +
                                       " with a dim below -1");
    }
    TensorType type{spec.dtype, spec.shape};
    Shape example = examples.empty() ? type.with_dynamic_dims(2) : examples[i];
    OAR_CHECK_ARG(type.matches(example), "to_static: input '" + spec.name + "' of spec " + type.str() +
                                             " got shape " + shape_str(example));
    Value* v = program.add_input(spec.name, type);
    inputs.push_back(tracer.symbolic(v, example));
    example_shapes.push_back(example);
  }
  std::vector<Tensor> outputs;
  {
    BuilderScope scope(tracer);
    outputs = fn(inputs);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    OAR_CHECK_ARG(outputs[i].defined(), "to_static: output " + std::to_string(i) + " of the function is undefined");
    program.add_output(tracer.capture(outputs[i]));
  }
  result.parameters = tracer.captured_parameters();
  result.specialized = tracer.specialized();
  if (result.specialized) {
    if (has_data_dependent_shapes(program)) {
      try {
        specialize_input_types(program, example_shapes);
      } catch (const Error& e) {
        throw Error(e.code(), std::string("to_static: the trace has a size that depends on values (nonzero's "
                                          "count) and used that size as a number where it must stay symbolic: ") +
                                  e.what());
      }
    } else {
      specialize_types(program, example_shapes);
    }
    for (size_t i = 0; i < specs.size(); ++i) result.specs[i].shape = example_shapes[i];
  }
  verify(program);
  return result;
}

// ---- to_static ----

struct StaticFunction::Impl {
  struct Entry {
    Device device;
    Trace trace;
    std::unique_ptr<CompiledFunction> function;
  };
  TracedFunction fn;
  std::vector<InputSpec> specs;
  StaticOptions options;
  std::list<Entry> cache;  // most recently used first
  size_t traces = 0;

  static bool accepts(const std::vector<InputSpec>& specs, const std::vector<Tensor>& inputs) {
    for (size_t i = 0; i < specs.size(); ++i) {
      if (inputs[i].dtype() != specs[i].dtype) return false;
      if (!TensorType{specs[i].dtype, specs[i].shape}.matches(inputs[i].shape())) return false;
    }
    return true;
  }

  Entry& lookup(const std::vector<Tensor>& inputs) {
    const Device& device = inputs.empty() ? default_device() : inputs[0].device();
    for (auto it = cache.begin(); it != cache.end(); ++it) {
      if (it->device == device && accepts(it->trace.specs, inputs)) {
        cache.splice(cache.begin(), cache, it);
        return cache.front();
      }
    }
    // Inputs the declared specs accept trace with those specs (dynamic dims
    // stay dynamic); any other shapes trace for exactly these shapes.
    std::vector<InputSpec> trace_specs = specs;
    std::vector<Shape> examples;
    bool declared = accepts(specs, inputs);
    for (size_t i = 0; i < inputs.size(); ++i) {
      examples.push_back(inputs[i].shape());
      if (!declared) trace_specs[i] = {inputs[i].shape(), inputs[i].dtype(), specs[i].name};
    }
    if (traces > 0) {
      std::string shapes, cached;
      for (size_t i = 0; i < inputs.size(); ++i) shapes += (i ? ", " : "") + type_of(inputs[i]).str();
      for (const Entry& e : cache) cached += (cached.empty() ? "(" : "; (") + spec_str(e.trace.specs) + ")";
      log_message(OAR_LOG_DEBUG, "to_static: re-tracing for inputs (" + shapes + "); cached traces: " +
                                     (cached.empty() ? std::string("none") : cached) + "; " +
                                     std::to_string(traces + 1) + " traces so far");
    }
    Trace t = trace(fn, trace_specs, options.parameters, device, examples);
    ++traces;
    if (options.optimize) {
      PassManager pm = default_pipeline(device, options.pipeline);
      pm.set_print_after_each(options.print_ir_after_each_pass);
      pm.run(t.program);
    }
    auto function = std::make_unique<CompiledFunction>(t.program, device, options.executor, options.pipeline);
    cache.push_front(Entry{device, std::move(t), std::move(function)});
    while (cache.size() > std::max<size_t>(options.max_traces, 1)) cache.pop_back();
    return cache.front();
  }
};

StaticFunction::StaticFunction(TracedFunction fn, std::vector<InputSpec> specs, StaticOptions options)
    : impl_(std::make_unique<Impl>()) {
  OAR_CHECK_ARG(fn != nullptr, "to_static: the function is empty");
  impl_->fn = std::move(fn);
  impl_->specs = std::move(specs);
  impl_->options = std::move(options);
}
StaticFunction::~StaticFunction() = default;
StaticFunction::StaticFunction(StaticFunction&&) noexcept = default;

std::vector<Tensor> StaticFunction::operator()(const std::vector<Tensor>& inputs) {
  OAR_CHECK_ARG(inputs.size() == impl_->specs.size(), "to_static: the function takes " +
                                                          std::to_string(impl_->specs.size()) + " inputs but got " +
                                                          std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    OAR_CHECK_ARG(inputs[i].defined() && !inputs[i].is_symbolic(),
                  "to_static: input " + std::to_string(i) + " needs a tensor with values");
  }
  Impl::Entry& entry = impl_->lookup(inputs);
  ParamMap params = entry.trace.parameters;
  for (auto& [name, t] : params) {
    auto it = impl_->options.parameters.find(name);
    if (it != impl_->options.parameters.end()) t = it->second;
  }
  return (*entry.function)(inputs, params);
}

void StaticFunction::set_parameter(const std::string& name, const Tensor& value) {
  auto it = impl_->options.parameters.find(name);
  OAR_CHECK_ARG(it != impl_->options.parameters.end(), "to_static: no parameter is named '" + name + "'");
  OAR_CHECK_ARG(value.dtype() == it->second.dtype() && value.shape() == it->second.shape(),
                "to_static: parameter '" + name + "' is " + type_of(it->second).str() + " but the new tensor is " +
                    type_of(value).str());
  it->second = value;
}

size_t StaticFunction::cached_traces() const { return impl_->cache.size(); }
size_t StaticFunction::trace_count() const { return impl_->traces; }

const Program& StaticFunction::program() const {
  OAR_CHECK_ARG(!impl_->cache.empty(), "to_static: the function has not been called yet, so nothing is traced");
  return impl_->cache.front().function->forward().program();
}

StaticFunction to_static(TracedFunction fn, std::vector<InputSpec> specs, StaticOptions options) {
  return StaticFunction(std::move(fn), std::move(specs), std::move(options));
}

}  // namespace oar::ir
