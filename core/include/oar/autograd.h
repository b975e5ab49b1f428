/// \file autograd.h
/// Eager autograd: every op whose inputs require grad records a node holding
/// its saved tensors and its OpDef (whose VJP rule computes the backward).
/// `grad` follows paddle.grad; with create_graph the backward is recorded
/// too, so derivatives of any order come from applying it again.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "oar/op.h"
#include "oar/spmd.h"
#include "oar/tensor.h"

namespace oar {

/// One recorded op application (Note [Saved tensors] in autograd.cpp).
struct Node;

/// Per-tensor autograd state.
struct AutogradMeta {
  bool requires_grad = false;
  std::shared_ptr<Node> grad_fn;  ///< null for a leaf
  int output_index = 0;
  Tensor grad;                    ///< accumulated by backward() (leaves)
  std::vector<std::function<Tensor(const Tensor&)>> hooks;
  /// A distributed leaf's gradient is resharded to these placements when it
  /// arrives (empty: the leaf's own; ZeRO-2 keeps a replicated parameter's
  /// gradient Shard(0)). Note [Gradients of distributed tensors].
  std::vector<Placement> grad_placements;
};

/// Gradients of `outputs` with respect to `inputs` (paddle.grad).
/// grad_outputs: one per output, undefined = ones. retain_graph defaults to
/// create_graph. An input not reached is an error unless allow_unused, then
/// its gradient is an undefined Tensor.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, bool create_graph = false,
                         std::optional<bool> retain_graph = std::nullopt, bool allow_unused = false);

/// True unless a NoGrad scope is active on this thread.
bool grad_enabled();

/// Disables recording on this thread for its lifetime (paddle.no_grad).
class NoGrad {
 public:
  NoGrad();
  ~NoGrad();
  NoGrad(const NoGrad&) = delete;
  NoGrad& operator=(const NoGrad&) = delete;

 private:
  bool previous_;
};

/// Sets grad mode for a scope (used by the engine for create_graph).
class GradMode {
 public:
  explicit GradMode(bool enabled);
  ~GradMode();
  GradMode(const GradMode&) = delete;
  GradMode& operator=(const GradMode&) = delete;

 private:
  bool previous_;
};

/// Called by the eager builder after an op ran: records a node when grad
/// mode is on and an input requires grad. Returns whether it recorded.
bool record_op(const OpDef& op, std::span<const Tensor> inputs, std::span<Tensor> outputs, const Attrs& attrs);
/// True when grad mode is on and some input requires grad.
bool needs_recording(std::span<const Tensor> inputs);

/// The backward of a custom function: the context holds the function's
/// inputs and outputs as recorded, the output gradients (undefined: zero)
/// and which inputs want one; it returns one gradient per input (undefined:
/// none). It runs in grad mode exactly when the backward was asked to
/// create a graph (create_graph), so a rule written in ops stays
/// differentiable; one that is not must throw in that case.
using CustomVjp = std::function<std::vector<Tensor>(const VjpContext& ctx)>;

/// Records `outputs` as computed from `inputs` by a function named `name`
/// with a hand-written backward (Paddle's PyLayer, torch.autograd.Function;
/// static programs called from eager code). Like record_op it records only
/// when grad mode is on and an input requires grad; returns whether it did.
bool record_custom(const std::string& name, std::span<const Tensor> inputs, std::span<Tensor> outputs,
                   CustomVjp vjp);

/// Queues `callback` to run once when the backward pass running on this
/// thread finishes (after every leaf's .grad is written), in queue order;
/// callbacks queued by a callback run too. Called from a gradient hook
/// (DataParallel waits for its all-reduces here). Outside a pass: an error.
/// A pass that throws drops its callbacks.
void queue_backward_callback(std::function<void()> callback);
/// True while a backward pass (backward() or grad()) runs on this thread.
bool backward_running();

/// True when `t` was made from a leaf that requires grad by view ops only
/// (slice, transpose, reshape, ...): an in-place write through it would
/// change the leaf (Note [In-place writes] in core/src/tensor/inplace.cpp).
bool is_view_of_grad_leaf(const Tensor& t);
/// The tensor `t` was made from by view ops only, as autograd recorded it
/// (the same handle state the caller holds), or an undefined Tensor when `t`
/// is not a recorded view of a tensor with history. A write through `t`
/// rebases this tensor's history (Note [In-place writes]).
Tensor view_base(const Tensor& t);
/// `data`'s memory (storage, shape, strides) with the autograd history of
/// `history`: the handle an in-place write leaves behind (Note [In-place
/// writes]). The history is stamped with the storage's current version.
Tensor with_history(const Tensor& data, const Tensor& history);

/// Number of live recorded nodes (for tests of memory release).
int64_t live_autograd_nodes();

/// g summed over the dims broadcast from `shape` (the VJP of broadcasting).
Tensor sum_to(const Tensor& g, const Shape& shape);

}  // namespace oar
