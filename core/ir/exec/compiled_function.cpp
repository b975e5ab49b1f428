// Programs callable from eager code with gradients (compiled_function.h).
//
// Note [Training programs]
// For one set of differentiated inputs and input shapes, the program is
// specialized to the shapes, its composite ops without VJP rules are
// decomposed, and append_backward adds the backward. That program is then
// split in two:
//  - the training forward: the forward part, returning the outputs and
//    every forward result the backward part reads ("saved" values);
//  - the backward: the backward part, taking the forward's inputs, one
//    gradient per differentiable output and the saved values as inputs, and
//    returning the gradients of the differentiated inputs and parameters.
// So the backward does not recompute the forward, and the tape node holds
// exactly the saved values, like eager mode's saved tensors.
//
// Note [Trace cache]
// A to_static function holds several traces: one per (key, specs). The key
// is what the inputs' shapes cannot tell: the call's other arguments (fixed
// in the trace; the frontend turns them into an id, since only it can hash
// them), the Layer's train/eval modes and the device. A call uses the most
// recently used trace whose key matches and whose specs accept its tensors.
// On a miss the frontend traces with TraceCache::specs_for (the declared
// specs when they accept the call, so dynamic dims stay dynamic; else the
// exact shapes) and inserts the result; the cache keeps the most recently
// used `capacity` traces and counts every trace made.
//
// A program with dynamic dims is first differentiated without fixing them
// (Note [Dynamic dims] in trace.h): when every decomposition and VJP rule
// holds for every size, that one pair serves all input shapes. Only when
// one does not (it reads an example size) is a pair made per input shapes.
#include "oar/ir/compiled_function.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "oar/autograd.h"
#include "oar/error.h"
#include "oar/ir/autodiff.h"
#include "oar/ir/control_flow.h"
#include "oar/ir/pass.h"
#include "oar/ir/shape_inference.h"
#include "oar/ops.h"
#include "ops/op_util.h"
#include "runtime/runtime_state.h"

namespace oar::ir {

namespace {

struct TrainingPair {
  std::unique_ptr<Executor> forward;   // outputs, then the saved values
  std::unique_ptr<Executor> backward;  // inputs, grads, saved -> gradients
  size_t num_outputs = 0;
  std::vector<int> grad_output;        // per differentiated value: its backward output, -1 when unreachable
  std::string refused;                 // why there is no backward (control flow): raised when it runs
};

// Floating and complex values carry gradients (complex parameters: an FNO's spectral weights).
bool is_differentiable_dtype(DType d) { return is_floating(d) || is_complex(d); }

// (not one that is not differentiable: stop_gradient must reach autodiff, Note [detach in a trace])
bool decomposed_for_autodiff(const OpDef& def) { return def.decompose && !def.vjp && def.differentiable; }

// The forward as differentiated: specialized to `shapes` (none: kept
// dynamic), composite ops without VJP rules decomposed.
Program differentiable_forward(const Program& source, const std::vector<Shape>& shapes) {
  Program p = source.clone();
  // A while that saves its iterations (a tensor array, Note [Tensor arrays] in dy2static) has
  // shapes no input shapes fix: the program stays generic (and is interpreted).
  if (!shapes.empty() && !has_data_dependent_shapes(p)) specialize_types(p, shapes);
  make_decomposition_pass(decomposed_for_autodiff)->run(p);
  return p;
}

}  // namespace

struct CompiledFunction::Impl {
  Program program;
  Device device;
  ExecutorOptions options;
  PipelineOptions pipeline;  // the training forward and backward programs go through it
  Executor forward;
  std::mutex mutex;  // guards pairs and last_params (Note [Concurrent calls] in executor.h)
  std::map<std::string, std::shared_ptr<TrainingPair>> pairs;
  std::set<std::string> not_generic;  // masks whose pair needs fixed input shapes
  const ParamMap* last_params = nullptr;  // the executor that ran last

  Impl(const Program& p, const Device& d, ExecutorOptions o, PipelineOptions po)
      : program(p.clone()), device(d), options(o), pipeline(po), forward(p, d, o) {}

  // Outputs that carry gradients: floating dtypes.
  std::vector<size_t> differentiable_outputs() const {
    std::vector<size_t> out;
    for (size_t i = 0; i < program.outputs().size(); ++i) {
      if (is_differentiable_dtype(program.outputs()[i].value->type().dtype)) out.push_back(i);
    }
    return out;
  }

  std::shared_ptr<TrainingPair> pair_for(const std::vector<bool>& input_mask, const std::vector<bool>& param_mask,
                                         const std::vector<Shape>& input_shapes) {
    std::string key;
    for (bool b : input_mask) key += b ? '1' : '0';
    key += '|';
    for (bool b : param_mask) key += b ? '1' : '0';
    auto generic = pairs.find(key);
    if (generic != pairs.end()) return generic->second;
    bool dynamic = false;
    for (const Value* v : program.inputs()) dynamic = dynamic || !v->type().is_static();
    dynamic = dynamic || has_data_dependent_shapes(program);
    if (dynamic && !not_generic.count(key)) {
      try {
        auto pair = make_pair(input_mask, param_mask, {});
        pairs.emplace(key, pair);
        return pair;
      } catch (const Error& e) {
        log_message(OAR_LOG_DEBUG, std::string("to_static: the backward needs fixed input shapes: ") + e.what());
        not_generic.insert(key);
      }
    }
    for (const Shape& s : input_shapes) key += shape_str(s);
    auto it = pairs.find(key);
    if (it != pairs.end()) return it->second;
    auto pair = make_pair(input_mask, param_mask, input_shapes);
    pairs.emplace(key, pair);
    return pair;
  }

  // The training pair for `input_shapes`, or for every shape when empty.
  std::shared_ptr<TrainingPair> make_pair(const std::vector<bool>& input_mask, const std::vector<bool>& param_mask,
                                          const std::vector<Shape>& input_shapes) {
    // Forward + backward in one program (Note [Training programs]).
    Program p = differentiable_forward(program, input_shapes);
    Program f = p.clone();  // the training forward: operations correspond one to one
    const size_t forward_ops = p.block().size();
    std::vector<Value*> wrt;
    for (size_t i = 0; i < input_mask.size(); ++i) {
      if (input_mask[i]) wrt.push_back(p.inputs()[i]);
    }
    for (size_t i = 0; i < param_mask.size(); ++i) {
      if (param_mask[i]) wrt.push_back(p.parameters()[i]);
    }
    std::vector<Value*> targets, seeds;
    std::vector<Shape> shapes = input_shapes;
    for (size_t o : differentiable_outputs()) {
      const NamedValue& out = p.outputs()[o];
      targets.push_back(out.value);
      seeds.push_back(p.add_input("grad:" + out.name, out.value->type()));
      if (!shapes.empty()) shapes.push_back(out.value->type().dims);
    }
    std::vector<Value*> grads;
    try {
      grads = append_backward(p, targets, wrt, seeds, {.input_shapes = shapes, .allow_unused = true});
    } catch (const Error& e) {
      if (e.code() != ErrorCode::unsupported) throw;
      // The forward still runs (inference in grad mode); only a backward
      // through this program fails, with the reason.
      auto refused = std::make_shared<TrainingPair>();
      refused->forward = std::make_unique<Executor>(program, device, options);
      refused->num_outputs = program.outputs().size();
      refused->refused = e.what();
      return refused;
    }

    // append_backward switched the forward whiles it differentiates to save
    // their iterations (Note [VJP of while]): the training forward does too.
    for (size_t i = 0; i < forward_ops; ++i) {
      const Operation& op = p.block().op(i);
      Operation& twin = f.block().op(i);
      if (saves_iterations(op) && !saves_iterations(twin)) {
        twin.mutable_attrs().set("save_iterations", true);
        for (size_t r = twin.results().size(); r < op.results().size(); ++r) f.add_result(twin, op.result(r)->type());
      }
    }
    // Forward results the backward part reads, by (operation, result) position.
    std::unordered_map<const Value*, std::pair<size_t, size_t>> position;
    for (size_t i = 0; i < forward_ops; ++i) {
      const Operation& op = p.block().op(i);
      for (size_t r = 0; r < op.results().size(); ++r) position[op.result(r)] = {i, r};
    }
    std::vector<Value*> saved;
    std::unordered_map<const Value*, size_t> saved_index;
    auto save = [&](Value* v) {
      if (position.count(v) && !saved_index.count(v)) {
        saved_index[v] = saved.size();
        saved.push_back(v);
      }
    };
    for (size_t i = forward_ops; i < p.block().size(); ++i) {
      const Operation& op = p.block().op(i);
      for (Value* v : op.operands()) save(v);
      if (is_control_flow(op)) {  // a backward cond reads forward values inside its regions too
        for (Value* v : captured_values(op)) save(v);
      }
    }
    for (Value* g : grads) {
      if (g) save(g);  // a gradient that is a forward result
    }

    auto pair = std::make_shared<TrainingPair>();
    // The training forward returns the saved values too.
    pair->num_outputs = f.outputs().size();
    for (size_t k = 0; k < saved.size(); ++k) {
      auto [i, r] = position.at(saved[k]);
      f.add_output(f.block().op(i).result(r), "saved_" + std::to_string(k));
    }
    default_pipeline(device, pipeline).run(f);
    pair->forward = std::make_unique<Executor>(f, device, options);

    // The backward: saved values become inputs; the forward part is dead.
    p.clear_outputs();
    p.clear_updates();  // updates belong to the forward run
    for (Value* g : grads) {
      pair->grad_output.push_back(g ? static_cast<int>(p.outputs().size()) : -1);
      if (g) p.add_output(g, "grad_" + std::to_string(p.outputs().size()));
    }
    for (size_t k = 0; k < saved.size(); ++k) {
      Value* input = p.add_input("saved_" + std::to_string(k), saved[k]->type());
      p.replace_all_uses(saved[k], input);
    }
    // Nothing reads the forward part now: drop it, random ops included
    // (dead-code elimination keeps those).
    std::unordered_set<const Operation*> forward_part;
    for (size_t i = 0; i < forward_ops; ++i) forward_part.insert(&p.block().op(i));
    p.block().erase_if([&](const Operation& op) { return forward_part.count(&op) > 0; });
    p.drop_unused_constants();
    default_pipeline(device, pipeline).run(p);
    pair->backward = std::make_unique<Executor>(p, device, options);
    return pair;
  }
};

CompiledFunction::CompiledFunction(const Program& program, const Device& device, ExecutorOptions options,
                                   PipelineOptions pipeline)
    : impl_(std::make_shared<Impl>(program, device, options, pipeline)) {}
CompiledFunction::~CompiledFunction() = default;
CompiledFunction::CompiledFunction(CompiledFunction&&) noexcept = default;

const Executor& CompiledFunction::forward() const { return impl_->forward; }
size_t CompiledFunction::backward_count() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->pairs.size();
}
const ParamMap& CompiledFunction::parameters() const {
  return impl_->last_params ? *impl_->last_params : impl_->forward.parameters();
}

std::vector<Tensor> CompiledFunction::operator()(std::span<const Tensor> inputs, const ParamMap& params,
                                                 bool strict_backward) {
  Impl& im = *impl_;
  std::vector<bool> input_mask, param_mask;
  std::vector<Tensor> diff_inputs;  // the tape node's inputs
  bool recording = grad_enabled();
  for (const Tensor& t : inputs) {
    bool rg = recording && t.requires_grad() && is_differentiable_dtype(t.dtype());
    input_mask.push_back(rg);
    if (rg) diff_inputs.push_back(t);
  }
  for (const Value* p : im.program.parameters()) {
    auto it = params.find(p->name());
    bool rg = recording && it != params.end() && it->second.requires_grad() && is_differentiable_dtype(it->second.dtype());
    param_mask.push_back(rg);
    if (rg) diff_inputs.push_back(it->second);
  }
  std::vector<size_t> diff_out = im.differentiable_outputs();
  if (diff_inputs.empty() || diff_out.empty()) {
    {
      std::lock_guard lock(im.mutex);
      im.last_params = &im.forward.parameters();
    }
    return im.forward.run_with(inputs, params);
  }

  std::vector<Shape> input_shapes;
  for (const Tensor& t : inputs) input_shapes.push_back(t.shape());
  std::shared_ptr<TrainingPair> pair;
  {
    std::lock_guard lock(im.mutex);
    pair = im.pair_for(input_mask, param_mask, input_shapes);
    im.last_params = &pair->forward->parameters();
  }
  if (strict_backward && !pair->refused.empty()) throw Error(ErrorCode::unsupported, "to_static: " + pair->refused);
  std::vector<Tensor> results = pair->forward->run_with(inputs, params);
  std::vector<Tensor> outputs(results.begin(), results.begin() + static_cast<std::ptrdiff_t>(pair->num_outputs));
  std::vector<Tensor> saved(results.begin() + static_cast<std::ptrdiff_t>(pair->num_outputs), results.end());

  std::vector<Tensor> recorded;
  for (size_t o : diff_out) recorded.push_back(outputs[o]);
  std::vector<Tensor> saved_inputs(inputs.begin(), inputs.end());
  for (auto& t : saved_inputs) t = t.detach();
  ParamMap saved_params;
  for (const auto& [name, t] : params) saved_params[name] = t.detach();
  CustomVjp vjp = [pair, saved_inputs, saved_params, saved](const VjpContext& ctx) {
    OAR_CHECK_ARG(!grad_enabled(), "to_static: gradients of gradients (create_graph) through a static program are "
                                   "not supported; call the function eagerly for higher derivatives");
    if (!pair->refused.empty()) throw Error(ErrorCode::unsupported, "to_static: " + pair->refused);
    std::vector<Tensor> feed = saved_inputs;
    for (size_t i = 0; i < ctx.grads.size(); ++i) {
      feed.push_back(ctx.grads[i].defined() ? ctx.grads[i] : zeros_like(ctx.outputs[i]));
    }
    feed.insert(feed.end(), saved.begin(), saved.end());
    std::vector<Tensor> grads = pair->backward->run_with(feed, saved_params);
    std::vector<Tensor> result;
    for (int index : pair->grad_output) result.push_back(index >= 0 ? grads[static_cast<size_t>(index)] : Tensor());
    return result;
  };
  record_custom("to_static", diff_inputs, recorded, std::move(vjp));
  for (size_t k = 0; k < diff_out.size(); ++k) outputs[diff_out[k]] = recorded[k];
  return outputs;
}

// ---- the trace cache (Note [Trace cache]) ----

bool spec_accepts(const InputSpec& spec, const Tensor& t) {
  if (t.dtype() != spec.dtype || t.shape().size() != spec.shape.size()) return false;
  for (size_t d = 0; d < spec.shape.size(); ++d) {
    if (spec.shape[d] != -1 && spec.shape[d] != t.shape()[d]) return false;
  }
  return true;
}

bool specs_accept(std::span<const InputSpec> specs, std::span<const Tensor> inputs) {
  if (specs.size() != inputs.size()) return false;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!spec_accepts(specs[i], inputs[i])) return false;
  }
  return true;
}

TraceCache::TraceCache(size_t capacity) : capacity_(std::max<size_t>(capacity, 1)) {}

std::shared_ptr<const CachedTrace> TraceCache::lookup(const TraceKey& key, std::span<const Tensor> inputs) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if ((*it)->key == key && specs_accept((*it)->specs, inputs)) {
      entries_.splice(entries_.begin(), entries_, it);
      return entries_.front();
    }
  }
  return nullptr;
}

std::vector<InputSpec> TraceCache::specs_for(const std::vector<InputSpec>& declared, std::span<const Tensor> inputs,
                                             const std::string& what) {
  OAR_CHECK_ARG(declared.size() == inputs.size(), what + ": input_spec has " + std::to_string(declared.size()) +
                                                      " specs but the call passes " + std::to_string(inputs.size()) +
                                                      " tensors");
  if (specs_accept(declared, inputs)) return declared;
  std::vector<InputSpec> exact;
  for (size_t i = 0; i < inputs.size(); ++i) exact.push_back({inputs[i].shape(), inputs[i].dtype(), declared[i].name});
  return exact;
}

std::shared_ptr<const CachedTrace> TraceCache::insert(CachedTrace entry) {
  OAR_CHECK_ARG(entry.function != nullptr, "TraceCache::insert: the trace has no compiled function");
  entry.id = next_id_++;
  ++traces_;
  entries_.push_front(std::make_shared<const CachedTrace>(std::move(entry)));
  while (entries_.size() > capacity_) entries_.pop_back();
  return entries_.front();
}

std::shared_ptr<const CachedTrace> TraceCache::latest() const {
  return entries_.empty() ? nullptr : entries_.front();
}

std::vector<std::shared_ptr<const CachedTrace>> TraceCache::entries() const {
  return {entries_.begin(), entries_.end()};
}

}  // namespace oar::ir
