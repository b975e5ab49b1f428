// Programs callable from eager code with gradients (compiled_function.h).
#include "oar/ir/compiled_function.h"

#include <map>

#include "oar/autograd.h"
#include "oar/error.h"
#include "oar/ir/autodiff.h"
#include "oar/ir/pass.h"
#include "oar/ops.h"
#include "ops/op_util.h"

namespace oar::ir {

namespace {

// The backward of one set of differentiated inputs and shapes: a program
// taking the forward's inputs then one gradient per differentiable output,
// returning the gradients of the differentiated inputs/parameters.
struct Backward {
  std::unique_ptr<Executor> executor;
  std::vector<int> grad_output;  // per differentiated value: its output index, -1 when unreachable
};

}  // namespace

struct CompiledFunction::Impl {
  Program program;
  Device device;
  ExecutorOptions options;
  Executor forward;
  std::map<std::string, std::shared_ptr<Backward>> backwards;

  Impl(const Program& p, const Device& d, ExecutorOptions o) : program(p.clone()), device(d), options(o), forward(p, d, o) {}

  // Outputs that carry gradients: floating dtypes.
  std::vector<size_t> differentiable_outputs() const {
    std::vector<size_t> out;
    for (size_t i = 0; i < program.outputs().size(); ++i) {
      if (is_floating(program.outputs()[i].value->type().dtype)) out.push_back(i);
    }
    return out;
  }

  std::shared_ptr<Backward> backward_for(const std::vector<bool>& input_mask,
                                         const std::vector<bool>& param_mask, const std::vector<Shape>& input_shapes,
                                         const std::vector<Tensor>& outputs) {
    std::string key;
    for (bool b : input_mask) key += b ? '1' : '0';
    key += '|';
    for (bool b : param_mask) key += b ? '1' : '0';
    for (const Shape& s : input_shapes) key += shape_str(s);
    auto it = backwards.find(key);
    if (it != backwards.end()) return it->second;

    Program p = program.clone();
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
      shapes.push_back(outputs[o].shape());
    }
    std::vector<Value*> grads = append_backward(p, targets, wrt, seeds, {.input_shapes = shapes, .allow_unused = true});
    p.clear_outputs();
    auto bw = std::make_shared<Backward>();
    for (Value* g : grads) {
      bw->grad_output.push_back(g ? static_cast<int>(p.outputs().size()) : -1);
      if (g) p.add_output(g, "grad_" + std::to_string(p.outputs().size()));
    }
    p.clear_updates();  // updates belong to the forward run only
    default_pipeline(device).run(p);
    bw->executor = std::make_unique<Executor>(p, device, options);
    backwards.emplace(key, bw);
    return bw;
  }
};

CompiledFunction::CompiledFunction(const Program& program, const Device& device, ExecutorOptions options)
    : impl_(std::make_shared<Impl>(program, device, options)) {}
CompiledFunction::~CompiledFunction() = default;
CompiledFunction::CompiledFunction(CompiledFunction&&) noexcept = default;

const Executor& CompiledFunction::forward() const { return impl_->forward; }
size_t CompiledFunction::backward_count() const { return impl_->backwards.size(); }

std::vector<Tensor> CompiledFunction::operator()(std::span<const Tensor> inputs, const ParamMap& params) {
  Impl& im = *impl_;
  im.forward.set_parameters(params);
  // The backward recomputes the forward: with the same random numbers.
  std::pair<uint64_t, uint64_t> random_state = next_random_state();
  std::vector<Tensor> outputs = im.forward.run(inputs, random_state);
  if (!grad_enabled()) return outputs;

  std::vector<bool> input_mask, param_mask;
  std::vector<Tensor> diff_inputs;  // what the tape node's inputs are
  for (const Tensor& t : inputs) {
    bool rg = t.requires_grad() && is_floating(t.dtype());
    input_mask.push_back(rg);
    if (rg) diff_inputs.push_back(t);
  }
  ParamMap bound;
  for (const Value* p : im.program.parameters()) {
    auto it = params.find(p->name());
    const Tensor& t = it != params.end() ? it->second : im.forward.parameters().at(p->name());
    bound[p->name()] = t;
    bool rg = t.requires_grad() && is_floating(t.dtype());
    param_mask.push_back(rg);
    if (rg) diff_inputs.push_back(t);
  }
  if (diff_inputs.empty()) return outputs;

  std::vector<size_t> diff_out = im.differentiable_outputs();
  if (diff_out.empty()) return outputs;
  std::vector<Shape> input_shapes;
  for (const Tensor& t : inputs) input_shapes.push_back(t.shape());
  std::shared_ptr<Backward> bw = im.backward_for(input_mask, param_mask, input_shapes, outputs);

  // The node's outputs: the differentiable outputs (fresh tensors each run).
  std::vector<Tensor> recorded;
  for (size_t o : diff_out) recorded.push_back(outputs[o]);
  std::vector<Tensor> saved_inputs(inputs.begin(), inputs.end());
  for (auto& t : saved_inputs) t = t.detach();
  ParamMap saved_params;
  for (auto& [name, t] : bound) saved_params[name] = t.detach();
  CustomVjp vjp = [bw, saved_inputs, saved_params, random_state](const VjpContext& ctx) {
    OAR_CHECK_ARG(!grad_enabled(), "to_static: gradients of gradients (create_graph) through a static program are "
                                   "not supported; call the function eagerly for higher derivatives");
    std::vector<Tensor> feed = saved_inputs;
    for (size_t i = 0; i < ctx.grads.size(); ++i) {
      feed.push_back(ctx.grads[i].defined() ? ctx.grads[i] : zeros_like(ctx.outputs[i]));
    }
    bw->executor->set_parameters(saved_params);
    std::vector<Tensor> grads = bw->executor->run(feed, random_state);
    std::vector<Tensor> result;
    for (int index : bw->grad_output) result.push_back(index >= 0 ? grads[static_cast<size_t>(index)] : Tensor());
    return result;
  };
  record_custom("to_static", diff_inputs, recorded, std::move(vjp));
  for (size_t k = 0; k < diff_out.size(); ++k) outputs[diff_out[k]] = recorded[k];
  return outputs;
}

}  // namespace oar::ir
