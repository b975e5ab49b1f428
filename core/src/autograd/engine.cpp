// Eager autograd: recording nodes and the backward engine.
//
// Note [Saved tensors]
// A node saves its op's inputs (with their own autograd history, so a VJP
// run under create_graph differentiates through them) and its outputs
// *without* autograd state: an output pointing back at its own node would be
// a reference cycle. When the VJP runs, the outputs are re-attached to the
// node (the node is alive then), so rules may use them and stay
// differentiable. After a backward without retain_graph the saved tensors
// are dropped, releasing their memory; a second backward through the same
// nodes is then an error.
#include <algorithm>
#include <atomic>
#include <unordered_map>
#include <unordered_set>

#include "oar/autograd.h"
#include "oar/builder.h"
#include "oar/ops.h"

namespace oar {

namespace {
std::atomic<int64_t> g_live_nodes{0};
thread_local bool t_grad_enabled = true;
}  // namespace

struct Node : std::enable_shared_from_this<Node> {
  const OpDef* op = nullptr;        // the op, or custom_function_def() for record_custom
  CustomVjp custom_vjp;             // record_custom only
  std::string custom_name;
  Attrs attrs;
  std::vector<Tensor> inputs;       // saved, with history
  std::vector<Tensor> outputs;      // saved, without autograd state
  std::vector<TensorMeta> output_meta;
  std::vector<bool> input_requires_grad;
  // Per input: where its gradient goes (the producer node and output, or the
  // leaf's meta). Kept after release so the graph can still be walked.
  std::vector<std::shared_ptr<Node>> next_node;
  std::vector<int> next_index;
  std::vector<std::shared_ptr<AutogradMeta>> next_leaf;
  std::vector<std::vector<std::function<Tensor(const Tensor&)>>> output_hooks;
  bool released = false;

  Node() { ++g_live_nodes; }
  ~Node() { --g_live_nodes; }
};

int64_t live_autograd_nodes() { return g_live_nodes.load(); }

bool grad_enabled() { return t_grad_enabled; }
NoGrad::NoGrad() : previous_(t_grad_enabled) { t_grad_enabled = false; }
NoGrad::~NoGrad() { t_grad_enabled = previous_; }
GradMode::GradMode(bool enabled) : previous_(t_grad_enabled) { t_grad_enabled = enabled; }
GradMode::~GradMode() { t_grad_enabled = previous_; }

bool needs_recording(std::span<const Tensor> inputs) {
  if (!t_grad_enabled) return false;
  for (const auto& t : inputs) {
    if (t.defined() && t.requires_grad()) return true;
  }
  return false;
}

namespace {
// Stands for every custom function in nodes (not in the registry: no
// kernels, no meta rule). Its name is the node's custom_name.
const OpDef& custom_function_def() {
  static const OpDef def{.name = "custom_function", .num_inputs = -1, .num_outputs = -1};
  return def;
}

bool is_custom(const Node& node) { return node.op == &custom_function_def(); }
const std::string& node_name(const Node& node) { return is_custom(node) ? node.custom_name : node.op->name; }

std::shared_ptr<Node> make_node(const OpDef& op, std::span<const Tensor> inputs, std::span<Tensor> outputs,
                                const Attrs& attrs);
}  // namespace

bool record_op(const OpDef& op, std::span<const Tensor> inputs, std::span<Tensor> outputs, const Attrs& attrs) {
  if (!needs_recording(inputs)) return false;
  make_node(op, inputs, outputs, attrs);
  return true;
}

bool record_custom(const std::string& name, std::span<const Tensor> inputs, std::span<Tensor> outputs,
                   CustomVjp vjp) {
  OAR_CHECK_ARG(vjp != nullptr, "record_custom: '" + name + "' has no backward function");
  if (!needs_recording(inputs)) return false;
  std::shared_ptr<Node> node = make_node(custom_function_def(), inputs, outputs, {});
  node->custom_vjp = std::move(vjp);
  node->custom_name = name;
  return true;
}

namespace {
std::shared_ptr<Node> make_node(const OpDef& op, std::span<const Tensor> inputs, std::span<Tensor> outputs,
                                const Attrs& attrs) {
  auto node = std::make_shared<Node>();
  node->op = &op;
  node->attrs = attrs;
  node->inputs.assign(inputs.begin(), inputs.end());
  for (const auto& in : inputs) {
    const auto& meta = in.impl().autograd;
    bool rg = meta && meta->requires_grad;
    node->input_requires_grad.push_back(rg);
    node->next_node.push_back(rg ? meta->grad_fn : nullptr);
    node->next_index.push_back(rg ? meta->output_index : 0);
    node->next_leaf.push_back(rg && !meta->grad_fn ? meta : nullptr);
  }
  node->output_hooks.resize(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    node->outputs.push_back(outputs[i].detach());
    node->output_meta.push_back({outputs[i].dtype(), outputs[i].shape()});
    auto meta = std::make_shared<AutogradMeta>();
    meta->requires_grad = true;
    meta->grad_fn = node;
    meta->output_index = static_cast<int>(i);
    outputs[i].impl().autograd = std::move(meta);
  }
  return node;
}
}  // namespace

// ---- Tensor's autograd methods ----

bool Tensor::requires_grad() const {
  const auto& m = impl().autograd;
  return m && m->requires_grad;
}

Tensor& Tensor::set_requires_grad(bool requires_grad) {
  auto& m = impl().autograd;
  if (m && m->grad_fn) {
    if (!requires_grad) {
      throw Error(ErrorCode::invalid_argument, "set_requires_grad: this tensor was produced by '" + grad_fn_name() +
                                                   "'; use detach() to stop gradients through it");
    }
    return *this;
  }
  if (!m) m = std::make_shared<AutogradMeta>();
  m->requires_grad = requires_grad;
  return *this;
}

bool Tensor::is_leaf() const {
  const auto& m = impl().autograd;
  return !m || !m->grad_fn;
}

Tensor Tensor::grad() const {
  const auto& m = impl().autograd;
  return m ? m->grad : Tensor();
}

void Tensor::clear_grad() {
  if (auto& m = impl().autograd) m->grad = Tensor();
}

Tensor Tensor::detach() const {
  auto copy = std::make_shared<TensorImpl>(impl());
  copy->autograd = nullptr;
  return Tensor(std::move(copy));
}

void Tensor::register_hook(std::function<Tensor(const Tensor&)> hook) {
  auto& m = impl().autograd;
  if (!m || !m->requires_grad) {
    throw Error(ErrorCode::invalid_argument, "register_hook: the tensor does not require grad");
  }
  if (m->grad_fn) m->grad_fn->output_hooks[static_cast<size_t>(m->output_index)].push_back(std::move(hook));
  else m->hooks.push_back(std::move(hook));
}

std::string Tensor::grad_fn_name() const {
  const auto& m = impl().autograd;
  return m && m->grad_fn ? node_name(*m->grad_fn) : std::string();
}

void Tensor::backward(const Tensor& grad_output, bool retain_graph, bool create_graph) const {
  extern void run_backward(const std::vector<Tensor>&, const std::vector<Tensor>&, bool, bool,
                           const std::vector<Tensor>*, std::vector<Tensor>*, bool);
  if (!grad_output.defined()) {
    OAR_CHECK_ARG(numel() == 1, "backward: the tensor has shape " + shape_str(shape()) +
                                "; backward() without a gradient needs a single element (pass grad for others)");
  }
  run_backward({*this}, {grad_output}, retain_graph, create_graph, nullptr, nullptr, false);
}

// ---- the engine ----

namespace {

Tensor accumulate(const Tensor& sum, const Tensor& g) { return sum.defined() ? add(sum, g) : g; }

Tensor apply_hooks(const std::vector<std::function<Tensor(const Tensor&)>>& hooks, Tensor g) {
  for (const auto& hook : hooks) {
    Tensor replaced = hook(g);
    if (replaced.defined()) g = replaced;
  }
  return g;
}

// A node's output slot, the unit gradients accumulate in.
struct Slot {
  Node* node;
  int index;
  bool operator==(const Slot&) const = default;
};
struct SlotHash {
  size_t operator()(const Slot& s) const { return std::hash<Node*>()(s.node) * 31 + static_cast<size_t>(s.index); }
};

}  // namespace

// Computes gradients of `outputs`. With `targets` (grad()), returns one
// gradient per target in `results`; without (backward()), accumulates into
// every leaf's .grad.
void run_backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs, bool retain_graph,
                  bool create_graph, const std::vector<Tensor>* targets, std::vector<Tensor>* results,
                  bool allow_unused) {
  GradMode mode(create_graph);
  std::unordered_map<Slot, Tensor, SlotHash> slot_grads;
  std::unordered_map<AutogradMeta*, Tensor> leaf_grads;
  std::vector<Node*> roots;

  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    OAR_CHECK_ARG(out.defined(), "grad: output " + std::to_string(i) + " is undefined");
    const auto& meta = out.impl().autograd;
    if (!meta || !meta->requires_grad) {
      throw Error(ErrorCode::invalid_argument, "grad: output " + std::to_string(i) +
                                                   " does not require grad (no input of the ops that made it "
                                                   "requires grad, or it was computed under no_grad)");
    }
    Tensor g = i < grad_outputs.size() && grad_outputs[i].defined() ? grad_outputs[i] : ones_like(out.detach());
    OAR_CHECK_ARG(g.shape() == out.shape(), "grad: grad_outputs[" + std::to_string(i) + "] has shape " +
                                            shape_str(g.shape()) + " but the output has shape " + shape_str(out.shape()));
    if (meta->grad_fn) {
      Slot s{meta->grad_fn.get(), meta->output_index};
      slot_grads[s] = accumulate(slot_grads[s], g);
      roots.push_back(meta->grad_fn.get());
    } else {
      leaf_grads[meta.get()] = accumulate(leaf_grads[meta.get()], g);
    }
  }

  // Targets of grad(): leaves by meta, non-leaves by slot.
  std::unordered_set<AutogradMeta*> target_leaves;
  std::unordered_set<Slot, SlotHash> target_slots;
  if (targets) {
    for (size_t i = 0; i < targets->size(); ++i) {
      const Tensor& t = (*targets)[i];
      OAR_CHECK_ARG(t.defined(), "grad: input " + std::to_string(i) + " is undefined");
      const auto& meta = t.impl().autograd;
      if (!meta || !meta->requires_grad) {
        throw Error(ErrorCode::invalid_argument,
                    "grad: input " + std::to_string(i) + " does not require grad; call set_requires_grad() on it");
      }
      if (meta->grad_fn) target_slots.insert({meta->grad_fn.get(), meta->output_index});
      else target_leaves.insert(meta.get());
    }
  }

  // Topological order (consumers before producers) and which nodes lead to
  // a target.
  std::vector<Node*> order;
  std::unordered_map<Node*, bool> useful;
  {
    std::unordered_set<Node*> visited;
    std::vector<std::pair<Node*, size_t>> stack;
    for (Node* r : roots) {
      if (!visited.insert(r).second) continue;
      stack.push_back({r, 0});
      while (!stack.empty()) {
        auto& [node, next] = stack.back();
        if (next < node->next_node.size()) {
          Node* child = node->next_node[next++].get();
          if (child && visited.insert(child).second) stack.push_back({child, 0});
        } else {
          order.push_back(node);
          stack.pop_back();
        }
      }
    }
    // `order` is post-order: producers first. Usefulness flows from producers.
    for (Node* n : order) {
      bool u = !targets;
      for (size_t i = 0; !u && i < n->next_node.size(); ++i) {
        if (!n->input_requires_grad[i]) continue;
        if (n->next_node[i]) {
          Node* child = n->next_node[i].get();
          u = useful[child] || target_slots.count({child, n->next_index[i]});
        } else {
          u = target_leaves.count(n->next_leaf[i].get()) > 0;
        }
      }
      useful[n] = u;
    }
    std::reverse(order.begin(), order.end());
  }

  std::unordered_map<Slot, Tensor, SlotHash> captured;
  for (Node* node : order) {
    size_t nout = node->output_meta.size();
    std::vector<Tensor> grads(nout);
    bool any = false;
    for (size_t i = 0; i < nout; ++i) {
      Slot s{node, static_cast<int>(i)};
      auto it = slot_grads.find(s);
      if (it == slot_grads.end()) continue;
      grads[i] = apply_hooks(node->output_hooks[i], it->second);
      if (target_slots.count(s)) captured[s] = grads[i];
      slot_grads.erase(it);
      any = true;
    }
    if (!any || !useful[node]) continue;
    if (node->released) {
      throw Error(ErrorCode::invalid_argument, "backward: trying to differentiate through '" + node_name(*node) +
                                                   "' a second time after its saved tensors were freed; pass "
                                                   "retain_graph=true to the first backward");
    }
    if (!is_custom(*node) && (!node->op->differentiable || !node->op->vjp)) {
      throw Error(ErrorCode::invalid_argument, node->op->name + ": this op is not differentiable, but a gradient "
                                                                "was requested through it");
    }
    // Which inputs want a gradient.
    std::unique_ptr<bool[]> needs(new bool[node->inputs.size()]);
    for (size_t i = 0; i < node->inputs.size(); ++i) {
      bool want = node->input_requires_grad[i];
      if (want && targets) {
        want = node->next_node[i] ? (useful[node->next_node[i].get()] ||
                                     target_slots.count({node->next_node[i].get(), node->next_index[i]}))
                                  : target_leaves.count(node->next_leaf[i].get()) > 0;
      }
      needs[i] = want;
    }
    // Re-attach the saved outputs to this node (Note [Saved tensors]).
    std::vector<Tensor> outs;
    for (size_t i = 0; i < node->outputs.size(); ++i) {
      Tensor o = node->outputs[i].detach();
      if (create_graph) {
        auto meta = std::make_shared<AutogradMeta>();
        meta->requires_grad = true;
        meta->grad_fn = node->shared_from_this();
        meta->output_index = static_cast<int>(i);
        o.impl().autograd = std::move(meta);
      }
      outs.push_back(o);
    }
    VjpContext ctx{node->inputs, outs, grads, node->attrs,
                   std::span<const bool>(needs.get(), node->inputs.size())};
    std::vector<Tensor> input_grads = is_custom(*node) ? node->custom_vjp(ctx) : node->op->vjp(ctx);
    for (size_t i = 0; i < node->inputs.size() && i < input_grads.size(); ++i) {
      Tensor& g = input_grads[i];
      if (!needs[i] || !g.defined()) continue;
      if (g.shape() != node->inputs[i].shape()) {
        throw Error(ErrorCode::internal, node_name(*node) + ": its VJP returned a gradient of shape " +
                                             shape_str(g.shape()) + " for input " + std::to_string(i) + " of shape " +
                                             shape_str(node->inputs[i].shape()));
      }
      if (g.dtype() != node->inputs[i].dtype()) g = cast(g, node->inputs[i].dtype());
      if (node->next_node[i]) {
        Slot s{node->next_node[i].get(), node->next_index[i]};
        slot_grads[s] = accumulate(slot_grads[s], g);
      } else if (node->next_leaf[i]) {
        AutogradMeta* leaf = node->next_leaf[i].get();
        leaf_grads[leaf] = accumulate(leaf_grads[leaf], g);
      }
    }
  }

  if (!retain_graph) {
    for (Node* node : order) {
      node->inputs.clear();
      node->outputs.clear();
      node->custom_vjp = nullptr;  // what a custom backward captured
      node->released = true;
    }
  }

  if (targets) {
    results->clear();
    for (size_t i = 0; i < targets->size(); ++i) {
      const auto& meta = (*targets)[i].impl().autograd;
      Tensor g;
      if (meta->grad_fn) {
        auto it = captured.find({meta->grad_fn.get(), meta->output_index});
        if (it != captured.end()) g = it->second;
      } else {
        auto it = leaf_grads.find(meta.get());
        if (it != leaf_grads.end()) g = apply_hooks(meta->hooks, it->second);
      }
      if (!g.defined() && !allow_unused) {
        throw Error(ErrorCode::invalid_argument, "grad: input " + std::to_string(i) +
                                                     " is not reachable from the outputs (pass allow_unused=true "
                                                     "to get an undefined gradient instead)");
      }
      if (g.defined() && !create_graph) g = g.detach();
      results->push_back(g);
    }
    return;
  }
  for (auto& [meta, g] : leaf_grads) {
    Tensor hooked = apply_hooks(meta->hooks, g);
    if (!create_graph) hooked = hooked.detach();
    meta->grad = meta->grad.defined() ? (create_graph ? add(meta->grad, hooked) : add(meta->grad, hooked).detach())
                                      : hooked;
  }
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, bool create_graph, std::optional<bool> retain_graph,
                         bool allow_unused) {
  std::vector<Tensor> results;
  run_backward(outputs, grad_outputs, retain_graph.value_or(create_graph), create_graph, &inputs, &results,
               allow_unused);
  return results;
}

Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  size_t lead = g.shape().size() - shape.size();
  std::vector<int64_t> axes;
  for (size_t i = 0; i < g.shape().size(); ++i) {
    if (i < lead || (shape[i - lead] == 1 && g.shape()[i] != 1)) axes.push_back(static_cast<int64_t>(i));
  }
  Tensor s = axes.empty() ? g : sum(g, axes, true);
  return reshape(s, shape);
}

}  // namespace oar
