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
// nodes is then an error. Each saved tensor's storage version is saved too;
// one written in place since is handed to the VJP marked `overwritten`
// (Note [Version counter] in core/src/tensor/inplace.cpp).
#include <algorithm>
#include <atomic>
#include <unordered_map>
#include <unordered_set>

#include "dist/dist_internal.h"
#include "oar/autograd.h"
#include "oar/builder.h"
#include "oar/ops.h"
#include "tensor/view.h"

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
  std::vector<uint64_t> input_versions, output_versions;  // their storages' versions when saved
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
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& in = inputs[i];
    const auto& meta = in.impl().autograd;
    bool rg = meta && meta->requires_grad;
    if (rg && meta->grad_fn && in.version() != in.impl().history_version) {  // Note [Version counter]
      throw Error(ErrorCode::invalid_argument,
                  op.name + ": input " + std::to_string(i) + " was made by '" + node_name(*meta->grad_fn) +
                      "', and its memory has since been written in place through another tensor sharing it (a "
                      "view of it or its base), so its recorded gradient history no longer matches its values; "
                      "take the tensor again after the write (redo the slice or view), or clone it before writing");
    }
    node->input_versions.push_back(in.version());
    node->input_requires_grad.push_back(rg);
    node->next_node.push_back(rg ? meta->grad_fn : nullptr);
    node->next_index.push_back(rg ? meta->output_index : 0);
    node->next_leaf.push_back(rg && !meta->grad_fn ? meta : nullptr);
  }
  node->output_hooks.resize(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    node->outputs.push_back(outputs[i].detach());
    node->output_versions.push_back(outputs[i].version());
    outputs[i].impl().history_version = outputs[i].version();
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

bool is_view_of_grad_leaf(const Tensor& t) {
  if (!t.defined() || !t.is_view()) return false;
  const auto& meta = t.impl().autograd;
  const Node* node = meta ? meta->grad_fn.get() : nullptr;
  while (node && !is_custom(*node) && eager_view_rule(*node->op) && !node->next_node.empty()) {
    if (node->next_leaf[0] && node->input_requires_grad[0]) return true;
    node = node->next_node[0].get();
  }
  return false;
}

Tensor view_base(const Tensor& t) {
  if (!t.defined() || !t.is_view()) return Tensor();
  const auto& meta = t.impl().autograd;
  Node* node = meta ? meta->grad_fn.get() : nullptr;
  Node* last = nullptr;  // the view node that saved the base
  while (node && !is_custom(*node) && eager_view_rule(*node->op) && !node->inputs.empty() &&
         node->input_requires_grad[0] && node->inputs[0].impl().storage == t.impl().storage) {
    last = node;
    node = node->next_node[0].get();
  }
  if (!last || last->inputs[0].is_leaf()) return Tensor();
  Tensor base = last->inputs[0];
  // The caller gives `base` a new history that leads back to this node; the
  // node keeps a handle of its own (same memory, the old history), so the
  // base does not end up holding itself.
  last->inputs[0] = Tensor(std::make_shared<TensorImpl>(base.impl()));
  return base;
}

Tensor with_history(const Tensor& data, const Tensor& history) {
  auto impl = std::make_shared<TensorImpl>(data.impl());
  impl->autograd = history.impl().autograd;
  impl->overwritten = nullptr;
  impl->history_version = data.version();
  return Tensor(std::move(impl));
}

// ---- the engine ----

namespace {

// The callbacks queued during the innermost backward pass on this thread
// (queue_backward_callback); null outside a pass. Thread-local: a pass and
// the hooks that queue into it run on one thread.
thread_local std::vector<std::function<void()>>* t_pass_callbacks = nullptr;

// Installs a pass's callback list for its lifetime (restoring the outer
// pass's on exit, also when the pass throws: its callbacks are then
// dropped); run() calls them in queue order after the pass's work, including
// those queued by earlier callbacks (a callback may start a new backward).
class EndOfPassCallbacks {
 public:
  EndOfPassCallbacks() : outer_(t_pass_callbacks) { t_pass_callbacks = &queued_; }
  ~EndOfPassCallbacks() { t_pass_callbacks = outer_; }
  EndOfPassCallbacks(const EndOfPassCallbacks&) = delete;
  EndOfPassCallbacks& operator=(const EndOfPassCallbacks&) = delete;
  void run() {
    for (size_t i = 0; i < queued_.size(); ++i) {
      std::function<void()> callback = std::move(queued_[i]);
      callback();
    }
    queued_.clear();
    t_pass_callbacks = outer_;
  }

 private:
  std::vector<std::function<void()>>* outer_;  // not owned
  std::vector<std::function<void()>> queued_;
};

Tensor accumulate(const Tensor& sum, const Tensor& g) { return sum.defined() ? add(sum, g) : g; }

// Note [Summing partial gradients]
// A distributed value used by several ops gets one gradient from each; some
// come Partial() (the input gradient of a column-parallel matmul) and
// others not (a residual connection's Replicate()). add(R, P) reduces its
// Partial operand (an all_reduce), so summing R + P1 + P2 in arrival order
// would reduce twice. The Partial gradients of a slot are summed apart
// (P1 + P2 stays Partial) and added to the rest once, when the slot is
// taken: one reduction. (Turning R into P instead would leave the whole
// upstream gradient Partial and cost more collectives further back.)
bool has_partial(const Tensor& g) {
  if (!dist::is_dist(g)) return false;
  for (const Placement& p : dist::dist_attr(g).placements) {
    if (p.is_partial()) return true;
  }
  return false;
}

// Note [Gradients of distributed tensors]
// Every distributed value is a global value whatever its placements, so the
// ops' VJPs are right unchanged (Note [Distributed dispatch]). The engine
// only decides placements where the tape meets something else: the seed of
// backward() on a distributed output is ones placed like the output, a
// Partial() dim made Replicate() (ones summed over ranks would be the mesh
// size); a gradient arriving at a distributed leaf is resharded to the
// leaf's placements (Partial -> Replicate is data parallel's all-reduce,
// Partial -> Shard a reduce-scatter), so .grad sits where the parameter
// does, or to AutogradMeta::grad_placements when set (ZeRO-2: a replicated
// parameter with a sharded gradient); a distributed gradient of a dense input (a dense tensor counts as
// Replicate() in an op with distributed inputs) is made whole and dense.
Tensor seed_ones(const Tensor& out) {
  if (!dist::is_dist(out)) return ones_like(out.detach());
  DistAttr attr = dist::dist_attr(out);
  for (auto& p : attr.placements) {
    if (p.is_partial()) p = Placement::Replicate();
  }
  Tensor local = dist::local_value(out);
  Shape shape = dist::local_shape(out.shape(), attr, dist::global_rank());
  return dist::make_dist(ones(shape, out.dtype(), local.device()), attr, out.shape());
}

Tensor placed_for(const Tensor& input, Tensor g, bool leaf) {
  bool in_dist = dist::is_dist(input), g_dist = dist::is_dist(g);
  if (!in_dist && !g_dist) return g;
  if (!in_dist) return dist::unshard(g);
  const DistAttr& want = dist::dist_attr(input);
  if (!g_dist) {
    g = dist::make_dist(g, {want.mesh, std::vector<Placement>(want.placements.size(), Placement::Replicate())},
                        g.shape());
  }
  if (!leaf) return g;
  const auto& meta = input.impl().autograd;
  const std::vector<Placement>& placements =
      meta && !meta->grad_placements.empty() ? meta->grad_placements : want.placements;
  if (!(dist::dist_attr(g) == DistAttr{want.mesh, placements})) g = dist::reshard(g, want.mesh, placements);
  return g;
}

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

// Note [Backward steps]
// run_backward is a sequence of named steps over one `Backward` (the state of
// one pass): seed the outputs' gradients, record grad()'s targets, order the
// graph (consumers before producers), mark the nodes that lead to a target,
// run each node's VJP in order, release the saved tensors, then hand the
// gradients out (grad()'s results, or every leaf's .grad for backward()).
class Backward {
 public:
  Backward(bool create_graph, const std::vector<Tensor>* targets)
      : create_graph_(create_graph), targets_(targets) {}

  // Seeds the gradient of each output (ones where none is given) and records the roots.
  void seed(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs);
  // Records grad()'s targets: leaves by meta, non-leaves by slot.
  void collect_targets();
  // Orders the nodes reachable from the roots, consumers before producers.
  void order_graph();
  // Marks the nodes through which a gradient reaches a target (all of them for backward()).
  void mark_useful();
  // Runs the VJPs of all ordered nodes, passing gradients to producers and leaves.
  void run_nodes();
  // Drops the saved tensors of every visited node (backward without retain_graph).
  void release_saved();
  // grad()'s results: one gradient per target (undefined only with allow_unused).
  std::vector<Tensor> target_grads(bool allow_unused);
  // Adds the leaves' gradients not handed out yet (hooks applied) into their .grad.
  void accumulate_into_leaves();

 private:
  // True when input `i` of `node` requires grad and leads to a target (or there are no targets).
  bool input_leads_to_target(const Node& node, size_t i);
  // Takes the node's pending output gradients (hooks applied, captured when targeted); false when none arrived.
  bool take_output_grads(Node& node, std::vector<Tensor>& grads);
  // Throws when the node's saved tensors are gone or its op has no VJP.
  static void check_differentiable(const Node& node);
  // The node's saved outputs, re-attached to it under create_graph (Note [Saved tensors]).
  std::vector<Tensor> saved_outputs(Node& node) const;
  // Runs one node's VJP and passes the input gradients on.
  void run_node(Node& node);
  // Adds the VJP's gradient for input `i` of `node` to its producer's slot or its leaf.
  void pass_on(const Node& node, size_t i, Tensor g);
  // Counts, per leaf, the ordered nodes that can pass it a gradient.
  void count_leaf_edges();
  // After `node` ran (or was skipped): a leaf it was the last contributor of is handed out now.
  void finish_leaf_edges(const Node& node);
  // Adds one leaf's gradient (hooks applied) into its .grad.
  void accumulate_leaf(AutogradMeta* meta, const Tensor& g);

  bool create_graph_;
  const std::vector<Tensor>* targets_;  // not owned; null for backward()
  std::unordered_map<Slot, Tensor, SlotHash> slot_grads_;  // pending, per node output
  std::unordered_map<Slot, Tensor, SlotHash> slot_partials_;  // pending Partial() ones (Note [Summing partial gradients])
  std::unordered_map<AutogradMeta*, Tensor> leaf_grads_;   // summed, per leaf
  std::unordered_map<AutogradMeta*, Tensor> leaf_inputs_;  // a distributed leaf, to place its gradient
  // Leaves whose Partial gradients wait to be reduced together (Note [Bucketed gradient reduction]).
  static constexpr int64_t kBucketBytes = 25 << 20;
  std::vector<std::pair<AutogradMeta*, Tensor>> bucket_;
  int64_t bucket_bytes_ = 0;
  bool bucketable(AutogradMeta* leaf, const Tensor& g) const;
  void flush_bucket();
  /// The summed gradient of `leaf`, placed like it when it is distributed.
  Tensor leaf_grad(AutogradMeta* leaf, Tensor g) {
    auto it = leaf_inputs_.find(leaf);
    return it == leaf_inputs_.end() ? g : placed_for(it->second, std::move(g), true);
  }
  std::vector<Node*> roots_;                               // not owned
  std::unordered_set<AutogradMeta*> target_leaves_;
  std::unordered_set<Slot, SlotHash> target_slots_;
  std::vector<Node*> order_;  // consumers before producers; not owned
  std::unordered_map<Node*, bool> useful_;
  std::unordered_map<Slot, Tensor, SlotHash> captured_;  // gradients of targeted slots
  std::unordered_map<AutogradMeta*, int> leaf_edges_left_;  // backward() only: nodes still to run, per leaf
};

void Backward::seed(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    OAR_CHECK_ARG(out.defined(), "grad: output " + std::to_string(i) + " is undefined");
    const auto& meta = out.impl().autograd;
    if (!meta || !meta->requires_grad) {
      throw Error(ErrorCode::invalid_argument, "grad: output " + std::to_string(i) +
                                                   " does not require grad (no input of the ops that made it "
                                                   "requires grad, or it was computed under no_grad)");
    }
    Tensor g = i < grad_outputs.size() && grad_outputs[i].defined() ? grad_outputs[i] : seed_ones(out);
    OAR_CHECK_ARG(g.shape() == out.shape(), "grad: grad_outputs[" + std::to_string(i) + "] has shape " +
                                            shape_str(g.shape()) + " but the output has shape " + shape_str(out.shape()));
    if (meta->grad_fn) {
      Slot s{meta->grad_fn.get(), meta->output_index};
      slot_grads_[s] = accumulate(slot_grads_[s], g);
      roots_.push_back(meta->grad_fn.get());
    } else {
      leaf_grads_[meta.get()] = accumulate(leaf_grads_[meta.get()], g);
    }
  }
}

void Backward::collect_targets() {
  if (!targets_) return;
  for (size_t i = 0; i < targets_->size(); ++i) {
    const Tensor& t = (*targets_)[i];
    OAR_CHECK_ARG(t.defined(), "grad: input " + std::to_string(i) + " is undefined");
    const auto& meta = t.impl().autograd;
    if (!meta || !meta->requires_grad) {
      throw Error(ErrorCode::invalid_argument,
                  "grad: input " + std::to_string(i) + " does not require grad; call set_requires_grad() on it");
    }
    if (meta->grad_fn) target_slots_.insert({meta->grad_fn.get(), meta->output_index});
    else target_leaves_.insert(meta.get());
  }
}

void Backward::order_graph() {
  std::unordered_set<Node*> visited;
  std::vector<std::pair<Node*, size_t>> stack;
  for (Node* r : roots_) {
    if (!visited.insert(r).second) continue;
    stack.push_back({r, 0});
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next < node->next_node.size()) {
        Node* child = node->next_node[next++].get();
        if (child && visited.insert(child).second) stack.push_back({child, 0});
      } else {
        order_.push_back(node);  // post-order: producers first
        stack.pop_back();
      }
    }
  }
  std::reverse(order_.begin(), order_.end());
}

bool Backward::input_leads_to_target(const Node& node, size_t i) {
  if (!node.input_requires_grad[i]) return false;
  if (!targets_) return true;
  if (Node* child = node.next_node[i].get()) return useful_[child] || target_slots_.count({child, node.next_index[i]});
  return target_leaves_.count(node.next_leaf[i].get()) > 0;
}

void Backward::mark_useful() {
  // Usefulness flows from producers, which come last in order_.
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
    Node* n = *it;
    bool u = !targets_;
    for (size_t i = 0; !u && i < n->next_node.size(); ++i) u = input_leads_to_target(*n, i);
    useful_[n] = u;
  }
}

bool Backward::take_output_grads(Node& node, std::vector<Tensor>& grads) {
  bool any = false;
  for (size_t i = 0; i < grads.size(); ++i) {
    Slot s{&node, static_cast<int>(i)};
    auto it = slot_grads_.find(s);
    Tensor g;
    if (it != slot_grads_.end()) {
      g = std::move(it->second);
      slot_grads_.erase(it);
    }
    if (auto p = slot_partials_.find(s); p != slot_partials_.end()) {  // Note [Summing partial gradients]
      g = accumulate(g, p->second);
      slot_partials_.erase(p);
    }
    if (!g.defined()) continue;
    grads[i] = apply_hooks(node.output_hooks[i], g);
    if (target_slots_.count(s)) captured_[s] = grads[i];
    any = true;
  }
  return any;
}

void Backward::check_differentiable(const Node& node) {
  if (node.released) {
    throw Error(ErrorCode::invalid_argument, "backward: trying to differentiate through '" + node_name(node) +
                                                 "' a second time after its saved tensors were freed; pass "
                                                 "retain_graph=true to the first backward");
  }
  if (!is_custom(node) && (!node.op->differentiable || !node.op->vjp)) {
    throw Error(ErrorCode::invalid_argument, node.op->name + ": this op is not differentiable, but a gradient "
                                                             "was requested through it");
  }
}

// `saved` as the VJP may see it: itself, or, when its memory was written in
// place after it was saved at `version`, a copy every op refuses (Note
// [Version counter] in core/src/tensor/inplace.cpp).
Tensor checked_saved(const Node& node, const Tensor& saved, uint64_t version, const char* role, size_t index) {
  const uint64_t now = saved.defined() ? saved.version() : version;
  if (now == version) return saved;
  auto stale = std::make_shared<TensorImpl>(saved.impl());
  stale->overwritten = std::make_shared<const std::string>(
      "one of the variables needed for gradient computation has been modified by an inplace operation: " +
      std::string(role) + " " + std::to_string(index) + " of '" + node_name(node) + "' (shape " +
      shape_str(saved.shape()) + ") was saved at version " + std::to_string(version) + " and is now at version " +
      std::to_string(now) + "; compute it again, or clone() it before the in-place write");
  return Tensor(std::move(stale));
}

std::vector<Tensor> Backward::saved_outputs(Node& node) const {
  std::vector<Tensor> outs;
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    Tensor o = checked_saved(node, node.outputs[i], node.output_versions[i], "output", i).detach();
    if (create_graph_) {
      auto meta = std::make_shared<AutogradMeta>();
      meta->requires_grad = true;
      meta->grad_fn = node.shared_from_this();
      meta->output_index = static_cast<int>(i);
      o.impl().autograd = std::move(meta);
    }
    outs.push_back(o);
  }
  return outs;
}

void Backward::pass_on(const Node& node, size_t i, Tensor g) {
  if (g.shape() != node.inputs[i].shape()) {
    throw Error(ErrorCode::internal, node_name(node) + ": its VJP returned a gradient of shape " +
                                         shape_str(g.shape()) + " for input " + std::to_string(i) + " of shape " +
                                         shape_str(node.inputs[i].shape()));
  }
  if (g.dtype() != node.inputs[i].dtype()) g = cast(g, node.inputs[i].dtype());
  // Note [Gradients of distributed tensors]: a leaf's gradient is placed
  // like the leaf once its contributions are summed (Note [Summing partial
  // gradients]), when it is handed out (leaf_grad).
  g = placed_for(node.inputs[i], std::move(g), false);
  if (!node.next_node[i] && node.next_leaf[i] && dist::is_dist(node.inputs[i]))
    leaf_inputs_.emplace(node.next_leaf[i].get(), node.inputs[i]);
  if (node.next_node[i]) {
    Slot s{node.next_node[i].get(), node.next_index[i]};
    if (has_partial(g)) slot_partials_[s] = accumulate(slot_partials_[s], g);  // Note [Summing partial gradients]
    else slot_grads_[s] = accumulate(slot_grads_[s], g);
  } else if (node.next_leaf[i]) {
    AutogradMeta* leaf = node.next_leaf[i].get();
    leaf_grads_[leaf] = accumulate(leaf_grads_[leaf], g);
  }
}

void Backward::run_node(Node& node) {
  std::vector<Tensor> grads(node.output_meta.size());
  if (!take_output_grads(node, grads) || !useful_[&node]) return;
  check_differentiable(node);
  const size_t nin = node.inputs.size();
  std::unique_ptr<bool[]> needs(new bool[nin]);
  for (size_t i = 0; i < nin; ++i) needs[i] = input_leads_to_target(node, i);
  std::vector<Tensor> outs = saved_outputs(node);
  std::vector<Tensor> ins;
  for (size_t i = 0; i < nin; ++i) ins.push_back(checked_saved(node, node.inputs[i], node.input_versions[i], "input", i));
  VjpContext ctx{ins, outs, grads, node.attrs, std::span<const bool>(needs.get(), nin)};
  std::vector<Tensor> input_grads = is_custom(node) ? node.custom_vjp(ctx) : node.op->vjp(ctx);
  for (size_t i = 0; i < nin && i < input_grads.size(); ++i) {
    if (needs[i] && input_grads[i].defined()) pass_on(node, i, std::move(input_grads[i]));
  }
}

// Note [Leaf gradients when ready]
// backward() hands a leaf its gradient (hooks, then .grad) as soon as the
// last node that can add to it has run, not after the whole pass: a hook on
// a parameter then fires while the rest of the backward still runs, which
// is what DataParallel needs to start a bucket's all-reduce early
// (oar/distributed/data_parallel.py). The sum a hook sees is the same as at
// the end of the pass. grad() keeps handing out at the end.
void Backward::count_leaf_edges() {
  if (targets_) return;
  for (Node* node : order_) {
    for (size_t i = 0; i < node->next_leaf.size(); ++i) {
      if (node->next_leaf[i] && node->input_requires_grad[i]) ++leaf_edges_left_[node->next_leaf[i].get()];
    }
  }
}

void Backward::finish_leaf_edges(const Node& node) {
  if (targets_) return;
  for (size_t i = 0; i < node.next_leaf.size(); ++i) {
    AutogradMeta* leaf = node.next_leaf[i].get();
    if (!leaf || !node.input_requires_grad[i] || --leaf_edges_left_[leaf] > 0) continue;
    auto it = leaf_grads_.find(leaf);
    if (it == leaf_grads_.end()) continue;
    Tensor g = std::move(it->second);
    leaf_grads_.erase(it);
    if (bucketable(leaf, g)) {  // Note [Bucketed gradient reduction]
      if (!bucket_.empty() && !(dist::dist_attr(bucket_[0].second) == dist::dist_attr(g))) flush_bucket();
      bucket_bytes_ += dist::local_value(g).numel() * static_cast<int64_t>(dtype_size(g.dtype()));
      bucket_.emplace_back(leaf, std::move(g));
      if (bucket_bytes_ >= kBucketBytes) flush_bucket();
      continue;
    }
    accumulate_leaf(leaf, leaf_grad(leaf, std::move(g)));
  }
}

void Backward::run_nodes() {
  count_leaf_edges();
  for (Node* node : order_) {
    run_node(*node);
    finish_leaf_edges(*node);
  }
  flush_bucket();
}

// Note [Bucketed gradient reduction]
// Data parallel by placements makes every replicated parameter's gradient
// Partial(sum); resharding each to its parameter's Replicate() is one
// all_reduce per parameter, and on a small model their latency is the
// step. Like DDP's buckets, backward() collects the leaves whose gradient
// needs only Partial(sum) -> Replicate() (same mesh and placements), and
// reduces up to kBucketBytes of them with one all_reduce of their pieces
// flattened together (dist::reduce_partials), then hands them out. Every
// rank runs the same backward, so the buckets match. Not under
// create_graph (the reduction is not recorded).
bool Backward::bucketable(AutogradMeta* leaf, const Tensor& g) const {
  if (create_graph_ || !dist::is_dist(g)) return false;
  auto it = leaf_inputs_.find(leaf);
  if (it == leaf_inputs_.end()) return false;
  const DistAttr& want = dist::dist_attr(it->second);
  const DistAttr& have = dist::dist_attr(g);
  if (!(want.mesh == have.mesh) || want.placements.size() != have.placements.size()) return false;
  const std::vector<Placement>& target =
      !leaf->grad_placements.empty() ? leaf->grad_placements : want.placements;
  bool any = false;
  for (size_t m = 0; m < target.size(); ++m) {
    if (have.placements[m] == target[m]) continue;
    if (!(have.placements[m] == Placement::Partial(ReduceKind::sum) && target[m].is_replicate())) return false;
    any = true;
  }
  return any;
}

void Backward::flush_bucket() {
  if (bucket_.empty()) return;
  std::vector<Tensor> grads;
  for (auto& [leaf, g] : bucket_) grads.push_back(g);
  std::vector<Tensor> reduced = dist::reduce_partials(grads);
  for (size_t i = 0; i < bucket_.size(); ++i) accumulate_leaf(bucket_[i].first, reduced[i]);
  bucket_.clear();
  bucket_bytes_ = 0;
}

void Backward::release_saved() {
  for (Node* node : order_) {
    node->inputs.clear();
    node->outputs.clear();
    node->custom_vjp = nullptr;  // what a custom backward captured
    node->released = true;
  }
}

std::vector<Tensor> Backward::target_grads(bool allow_unused) {
  std::vector<Tensor> results;
  for (size_t i = 0; i < targets_->size(); ++i) {
    const auto& meta = (*targets_)[i].impl().autograd;
    Tensor g;
    if (meta->grad_fn) {
      auto it = captured_.find({meta->grad_fn.get(), meta->output_index});
      if (it != captured_.end()) g = it->second;
    } else {
      auto it = leaf_grads_.find(meta.get());
      if (it != leaf_grads_.end()) g = apply_hooks(meta->hooks, leaf_grad(meta.get(), it->second));
    }
    if (!g.defined() && !allow_unused) {
      throw Error(ErrorCode::invalid_argument, "grad: input " + std::to_string(i) +
                                                   " is not reachable from the outputs (pass allow_unused=true "
                                                   "to get an undefined gradient instead)");
    }
    if (g.defined() && !create_graph_) g = g.detach();
    results.push_back(g);
  }
  return results;
}

void Backward::accumulate_leaf(AutogradMeta* meta, const Tensor& g) {
  Tensor hooked = apply_hooks(meta->hooks, g);
  if (!create_graph_) hooked = hooked.detach();
  meta->grad = meta->grad.defined() ? (create_graph_ ? add(meta->grad, hooked) : add(meta->grad, hooked).detach())
                                    : hooked;
}

void Backward::accumulate_into_leaves() {
  for (auto& [meta, g] : leaf_grads_) accumulate_leaf(meta, leaf_grad(meta, g));
  leaf_grads_.clear();
}

}  // namespace

// Computes gradients of `outputs`. With `targets` (grad()), returns one
// gradient per target in `results`; without (backward()), accumulates into
// every leaf's .grad. The steps: Note [Backward steps].
void run_backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs, bool retain_graph,
                  bool create_graph, const std::vector<Tensor>* targets, std::vector<Tensor>* results,
                  bool allow_unused) {
  EndOfPassCallbacks callbacks;
  GradMode mode(create_graph);
  Backward pass(create_graph, targets);
  pass.seed(outputs, grad_outputs);
  pass.collect_targets();
  pass.order_graph();
  pass.mark_useful();
  pass.run_nodes();
  if (!retain_graph) pass.release_saved();
  if (targets) *results = pass.target_grads(allow_unused);
  else pass.accumulate_into_leaves();
  callbacks.run();
}

void queue_backward_callback(std::function<void()> callback) {
  OAR_CHECK_ARG(callback != nullptr, "queue_backward_callback: the callback is empty");
  if (!t_pass_callbacks) {
    throw Error(ErrorCode::invalid_argument, "queue_backward_callback: no backward pass is running on this thread; "
                                             "queue callbacks from a gradient hook");
  }
  t_pass_callbacks->push_back(std::move(callback));
}

bool backward_running() { return t_pass_callbacks != nullptr; }

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
