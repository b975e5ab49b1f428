// The eager (and traced) dispatch of an op on distributed tensors.
//
// Note [Distributed dispatch]
// EagerBuilder::apply and Tracer::apply call dist::dispatch first when any
// input is distributed. It
//  1. finds the one mesh of the op: every distributed input must be on it
//     (two meshes are an error naming the op, both tensors and both meshes:
//     reshard one first); a dense input counts as Replicate() on it;
//  2. runs the op's meta rule on the GLOBAL metas, so shape errors are the
//     dense ones;
//  3. asks the SPMD rule (spmd.h) once per mesh dim what placements the op
//     needs its inputs in and what the outputs come out as. An op without a
//     rule runs its decomposition when it has one (its parts use their
//     rules), otherwise spmd::replicate_all (logged at OAR_LOG_LEVEL=debug,
//     as is every input the op reshards);
//     A composite op without a VJP whose inputs need grad decomposes too, as
//     in dense eager mode, so the tape has VJPs to run;
//  4. reshards each input that differs (reshard_local: not recorded), works
//     out the local metas and offsets of this rank's pieces, calls
//     op.localize for the local attributes, and runs the op on the local
//     pieces through current_builder() under NoGrad (eager: kernels; while
//     tracing: IR, so a symbolic local piece needs nothing else);
//  5. wraps the local outputs as distributed tensors with the rule's
//     placements and records ONE autograd node for the op at the
//     distributed level. Its VJP then runs on distributed tensors through
//     this same dispatch, so gradients come out placed by the rules (the
//     gradient of a Replicate() weight used with Shard(0) data is
//     Partial()); the engine reshards a gradient to its leaf's placements
//     when it accumulates it (core/src/autograd/engine.cpp).
// A rank outside the mesh runs nothing: its outputs have empty pieces.
// Every value is a global value whatever its placements, so the VJP rules
// of the dense ops are correct unchanged; the reshards inside the op are
// identities on the global value and need no node of their own.
#include <array>

#include "dist/dist_internal.h"
#include "oar/autograd.h"
#include "oar/builder.h"
#include "oar/ops.h"
#include "runtime/runtime_state.h"

namespace oar::dist {

bool any_dist(std::span<const Tensor> inputs) {
  for (const auto& t : inputs) {
    if (is_dist(t)) return true;
  }
  return false;
}

namespace {

std::string placements_str(const std::vector<Placement>& ps) {
  std::string s = "[";
  for (size_t i = 0; i < ps.size(); ++i) s += (i ? ", " : "") + ps[i].str();
  return s + "]";
}

std::string describe_input(const OpDef& op, size_t i, const Tensor& t) {
  std::string s = op.name + "'s input " + std::to_string(i) + " (shape " + shape_str(t.shape());
  if (is_dist(t)) s += ", placements " + placements_str(dist_attr(t).placements);
  return s + ")";
}

// The op's mesh: that of its distributed inputs, which must agree.
const ProcessMesh& op_mesh(const OpDef& op, std::span<const Tensor> inputs) {
  const ProcessMesh* mesh = nullptr;
  size_t first = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!is_dist(inputs[i])) continue;
    const ProcessMesh& m = dist_attr(inputs[i]).mesh;
    if (!mesh) {
      mesh = &m;
      first = i;
    } else if (!(m == *mesh)) {
      throw Error(
          ErrorCode::invalid_argument,
          op.name + ": " + describe_input(op, first, inputs[first]) + " is on " + mesh->str() +
              " but " + describe_input(op, i, inputs[i]) + " is on " + m.str() +
              "; an op's distributed inputs must share one mesh (reshard one of them first)");
    }
  }
  return *mesh;
}

// The placements of input `t` on `mesh` (a dense tensor: Replicate()).
DistAttr attr_of(const Tensor& t, const ProcessMesh& mesh) {
  if (is_dist(t)) return dist_attr(t);
  return {mesh, std::vector<Placement>(static_cast<size_t>(mesh.ndim()), Placement::Replicate())};
}

bool all_replicated(const std::vector<Placement>& ps) {
  for (const auto& p : ps) {
    if (!p.is_replicate()) return false;
  }
  return true;
}

// What the rules decided, over every mesh dim.
struct Plan {
  std::vector<DistAttr> inputs;   // the placements each input is needed in
  std::vector<DistAttr> outputs;  // the outputs' placements
};

// Runs the rule once per mesh dim; returns false when the op has no rule.
bool plan_of(const OpDef& op, const ProcessMesh& mesh, std::span<const TensorMeta> in_meta,
             const std::vector<DistAttr>& in_attr, size_t num_outputs, const Attrs& attrs,
             Plan& plan) {
  plan.inputs.assign(in_attr.size(), DistAttr{mesh, {}});
  plan.outputs.assign(num_outputs, DistAttr{mesh, {}});
  Attrs full = with_defaults(op, attrs);
  for (int m = 0; m < mesh.ndim(); ++m) {
    std::vector<Placement> along(in_attr.size());
    for (size_t i = 0; i < in_attr.size(); ++i)
      along[i] = in_attr[i].placements[static_cast<size_t>(m)];
    SpmdArgs args{op, in_meta, along, full, mesh.shape()[static_cast<size_t>(m)]};
    SpmdResult r;
    if (op.spmd) {
      r = op.spmd(args);
    } else {
      r.inputs.assign(in_attr.size(), Placement::Replicate());
      r.outputs.assign(num_outputs, Placement::Replicate());
    }
    if (r.inputs.size() != in_attr.size() || r.outputs.size() != num_outputs) {
      throw Error(ErrorCode::internal,
                  op.name + ": its SPMD rule answered " + std::to_string(r.inputs.size()) +
                      " input and " + std::to_string(r.outputs.size()) +
                      " output placements for an op with " + std::to_string(in_attr.size()) +
                      " inputs and " + std::to_string(num_outputs) + " outputs");
    }
    for (size_t i = 0; i < in_attr.size(); ++i) plan.inputs[i].placements.push_back(r.inputs[i]);
    for (size_t o = 0; o < num_outputs; ++o) plan.outputs[o].placements.push_back(r.outputs[o]);
  }
  return op.spmd != nullptr;
}

}  // namespace

Tensor local_as(const Tensor& local, const Shape& global_shape, const DistAttr& from,
                const DistAttr& to) {
  if (from == to) return local;
  if (from.mesh == to.mesh) {  // a placement along a mesh dim of one rank changes nothing
    bool same = true;
    for (size_t m = 0; m < from.placements.size(); ++m) {
      same = same && (from.placements[m] == to.placements[m] || from.mesh.shape()[m] == 1);
    }
    if (same) return local;
  }
  if (from.mesh == to.mesh && all_replicated(from.placements))
    return replicated_piece(local, to, global_rank());
  return reshard_local(local, global_shape, from, to);
}

std::vector<Tensor> dispatch(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs,
                             const Device* device) {
  const ProcessMesh& mesh = op_mesh(op, inputs);
  std::vector<TensorMeta> in_meta(inputs.size());
  std::vector<DistAttr> in_attr;
  for (size_t i = 0; i < inputs.size(); ++i) {
    OAR_CHECK_ARG(inputs[i].defined(), op.name + ": input " + std::to_string(i) + " is undefined");
    in_meta[i] = {inputs[i].dtype(), inputs[i].shape()};
    in_attr.push_back(attr_of(inputs[i], mesh));
    // (make_dist checked every distributed input's placements when it was made)
  }
  std::vector<TensorMeta> out_meta = infer_meta(op, in_meta, attrs);

  // A composite without a rule, or without a VJP when gradients are wanted,
  // runs its parts (each through this dispatch).
  if (op.decompose && (!op.spmd || (!op.vjp && needs_recording(inputs)))) {
    if (log_enabled(OAR_LOG_DEBUG))
      log_message(OAR_LOG_DEBUG, "dist: " + op.name + " runs its decomposition (" +
                                     (op.spmd ? "no VJP" : "no SPMD rule") + ")");
    return op.decompose(inputs, attrs);
  }
  Plan plan;
  if (!plan_of(op, mesh, in_meta, in_attr, out_meta.size(), attrs, plan)) {
    log_message(OAR_LOG_DEBUG, "dist: " + op.name +
                                   " has no SPMD rule; its inputs are replicated on " + mesh.str());
  }

  int rank = global_rank();
  bool member = mesh.contains(rank);
  std::vector<Tensor> outputs;
  {
    NoGrad no_grad;
    std::vector<Tensor> local_in(inputs.size());
    std::vector<TensorMeta> local_in_meta(inputs.size()), local_out_meta(out_meta.size());
    std::vector<std::vector<int64_t>> in_offsets(inputs.size()), out_offsets(out_meta.size());
    for (size_t i = 0; i < inputs.size() && member; ++i) {
      Tensor piece = is_dist(inputs[i]) ? local_value(inputs[i]) : inputs[i];
      if (!(in_attr[i] == plan.inputs[i]) && log_enabled(OAR_LOG_DEBUG)) {
        log_message(OAR_LOG_DEBUG, "dist: " + op.name + " reshards input " + std::to_string(i) + " " +
                                       shape_str(inputs[i].shape()) + " from " +
                                       placements_str(in_attr[i].placements) + " to " +
                                       placements_str(plan.inputs[i].placements));
      }
      local_in[i] = local_as(piece, inputs[i].shape(), in_attr[i], plan.inputs[i]);
      local_in_meta[i] = {local_in[i].dtype(), local_in[i].shape()};
      in_offsets[i] = local_begin(inputs[i].shape(), plan.inputs[i], rank);
    }
    for (size_t o = 0; o < out_meta.size(); ++o) {
      Shape local;
      out_offsets[o] = local_begin(out_meta[o].shape, plan.outputs[o], rank, &local);
      local_out_meta[o] = {out_meta[o].dtype, local};
    }
    std::vector<Tensor> local_out;
    if (member) {
      Attrs local_attrs = attrs;
      if (op.localize) {
        Attrs full = with_defaults(op, attrs);
        LocalizeArgs args{op,       full,        local_in_meta, local_out_meta,
                          out_meta, out_offsets, in_offsets,    in_meta};
        local_attrs = op.localize(args);
      }
      local_out = current_builder().apply(op, local_in, local_attrs, device);
      for (size_t o = 0; o < local_out.size() && o < local_out_meta.size(); ++o) {
        if (local_out[o].shape() != local_out_meta[o].shape) {
          throw Error(ErrorCode::internal,
                      op.name + ": output " + std::to_string(o) +
                          " of the local kernel has shape " + shape_str(local_out[o].shape()) +
                          " but its placements " + plan.outputs[o].str() + " give this rank (" +
                          std::to_string(rank) + ") a piece of shape " +
                          shape_str(local_out_meta[o].shape) + " of the global " +
                          shape_str(out_meta[o].shape) + " (the SPMD rule or localize of " +
                          op.name + " is wrong)");
        }
      }
    } else {
      Device dev = inputs.empty() ? (device ? *device : default_device()) : inputs[0].device();
      for (const auto& m : local_out_meta) local_out.push_back(zeros(m.shape, m.dtype, dev));
    }
    for (size_t o = 0; o < out_meta.size(); ++o) {
      outputs.push_back(make_dist(local_out[o], plan.outputs[o], out_meta[o].shape));
    }
  }
  record_op(op, inputs, outputs, attrs);
  return outputs;
}

}  // namespace oar::dist
