// The partition of a dense program into the program of one rank
// (dist.to_static). See oar/ir/dist_partition.h.
//
// Note [Distributed programs]
// dist.to_static(layer, loader, loss, optimizer) turns a model whose
// parameters (and inputs) are distributed into one program per rank. It
// works in three steps, and only the last knows about distribution:
//
//  1. The DENSE program: the layer's forward and the loss, traced with
//     global shapes (each distributed parameter stands in as a dense
//     parameter of its global shape and name), and in train mode the
//     appended backward (append_backward: the gradients of the loss with
//     respect to every trainable parameter). This is the program a single
//     process would run; OAR_LOG_LEVEL=info / print_program=True prints it.
//
//  2. The placements of its leaves: distributed parameters keep theirs;
//     inputs from the distributed loader are Shard(0) along the mesh's data
//     dim (the dim named "dp", "data" or "batch", if there is one), else
//     Replicate(); every other leaf is dense, the same on every rank.
//
//  3. partition() REPLAYS the dense program's operations, in order, under a
//     Tracer of a new program whose inputs and parameters are this rank's
//     LOCAL pieces (their local shapes), each wrapped as a distributed value
//     (dist::make_dist over the symbolic local piece, global shape and
//     placements). Each operation is applied through the current builder,
//     so dist::dispatch runs it exactly as in eager mode (Note [Distributed
//     dispatch] in core/src/dist/dispatch.cpp): the op's SPMD rule chooses
//     the placements, inputs that differ are resharded (the reshard's
//     collectives -- c_all_gather, c_all_reduce, ... -- are host ops, which
//     the Tracer records like any other), the op runs on the local pieces
//     (recorded), and its results are labelled with their placements. One
//     walk is placement propagation, reshard insertion and partition.
//
// The backward needs no special treatment: in the dense program it is
// ordinary operations (the VJP rules' ops), so its placements are
// propagated by the same rules. The gradient of a Replicate() parameter
// used with sharded activations comes out Partial(), which is why each
// output is resharded at the end to the placement the caller asks for:
// gradients to their parameter's placements (Partial -> Replicate is data
// parallelism's all_reduce), the loss to Replicate() (every rank returns the
// whole loss). Values the rules leave dense (ops on constants only) are the
// same on every rank.
//
// Because eager mode and the partition share dispatch and reshard, static
// and eager distributed results are the same computation: the per-rank
// program is what eager mode would run on that rank, captured once.
// Shapes are static (the dense program is traced per input shape).
#include "oar/ir/dist_partition.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>

#include "oar/autograd.h"
#include "oar/builder.h"
#include "oar/error.h"
#include "oar/ir/pass.h"
#include "oar/ir/trace.h"
#include "oar/ir/verifier.h"

namespace oar::ir {

namespace {

// Whether `from` becomes `to` only by reducing Partial(sum) mesh dims to Replicate().
bool only_partial_sum_to_replicate(const DistAttr& from, const DistAttr& to) {
  if (!(from.mesh == to.mesh) || from.placements.size() != to.placements.size()) return false;
  bool any = false;
  for (size_t m = 0; m < from.placements.size(); ++m) {
    if (from.placements[m] == to.placements[m]) continue;
    if (!(from.placements[m] == oar::Placement::Partial(oar::ReduceKind::sum) && to.placements[m].is_replicate()))
      return false;
    any = true;
  }
  return any;
}

// A leaf of the dense program (input or parameter) as this rank sees it:
// a new local value of `local_program`, wrapped as a distributed tensor
// when `attr` is set.
Tensor local_leaf(Tracer& tracer, Program& local_program, const Value* dense, const std::optional<DistAttr>& attr,
                  int rank, bool is_parameter) {
  const TensorType& type = dense->type();
  OAR_CHECK_ARG(type.is_static(), "dist.to_static: '" + dense->name() + "' has the dynamic type " + type.str() +
                                      "; the partition needs static shapes");
  Shape global = type.dims;
  Shape local = global;
  if (attr) {
    dist::check_placements("dist.to_static: '" + dense->name() + "'", attr->mesh, attr->placements,
                           static_cast<int64_t>(global.size()));
    local = dist::local_shape(global, *attr, rank);
  }
  TensorType local_type{type.dtype, local};
  Value* v = is_parameter ? local_program.add_parameter(dense->name(), local_type)
                          : local_program.add_input(dense->name(), local_type);
  Tensor piece = tracer.symbolic(v, local);
  return attr ? dist::make_dist(piece, *attr, global) : piece;
}

// Note [Joining meshes]: with pipeline stages the dense program's ops
// read values of two meshes: the first op of a stage reads the previous
// stage's output (unless the forward resharded it), and the backward of a
// stage reads the next stage's gradient. Such an op runs on the mesh of a
// distributed LEAF among its inputs (a parameter: a forward op runs on its
// parameters' stage), else on the EARLIEST stage among its inputs' meshes
// (stages are numbered by the order their meshes first appear among the
// leaves, which is the forward's order): a backward op runs where the
// forward values it differentiates live, so gradients flow back stage by
// stage. The other inputs move there whole (Replicate(); between meshes a
// send/recv). Every rank replays the same ops, so all emit the same
// transfers in the same order and none waits on a later one.
void join_meshes(std::vector<Tensor>& operands, const std::vector<bool>& is_leaf,
                 std::vector<ProcessMesh>& stages) {
  auto stage_of = [&](const ProcessMesh& mesh) {
    for (size_t s = 0; s < stages.size(); ++s) {
      if (stages[s] == mesh) return s;
    }
    stages.push_back(mesh);
    return stages.size() - 1;
  };
  const ProcessMesh* first = nullptr;
  const ProcessMesh* target = nullptr;
  size_t best = SIZE_MAX;
  bool mixed = false, by_leaf = false;
  for (size_t i = 0; i < operands.size(); ++i) {
    if (!dist::is_dist(operands[i])) continue;
    const ProcessMesh& mesh = dist::dist_attr(operands[i]).mesh;
    if (first && !(mesh == *first)) mixed = true;
    if (!first) first = &mesh;
    if (by_leaf) continue;
    if (is_leaf[i]) {  // a parameter decides
      target = &mesh;
      by_leaf = true;
      continue;
    }
    const size_t s = stage_of(mesh);
    if (s < best) best = s, target = &mesh;
  }
  if (!mixed || !target) return;
  const ProcessMesh mesh = *target;
  for (auto& t : operands) {
    if (!dist::is_dist(t) || dist::dist_attr(t).mesh == mesh) continue;
    t = dist::reshard(t, mesh, std::vector<oar::Placement>(mesh.ndim(), oar::Placement::Replicate()));
  }
}

// `program` split before its operation `boundary` (see Partition::forward).
std::pair<Program, Program> split_program(const Program& program, size_t boundary) {
  Program fwd, bwd;
  std::unordered_map<const Value*, Value*> fmap, bmap;
  for (const Value* v : program.inputs()) {
    fmap[v] = fwd.add_input(v->name(), v->type());
    bmap[v] = bwd.add_input(v->name(), v->type());
  }
  for (const Value* v : program.parameters()) {
    fmap[v] = fwd.add_parameter(v->name(), v->type());
    bmap[v] = bwd.add_parameter(v->name(), v->type());
  }
  for (const Value* v : program.constants()) {
    fmap[v] = fwd.add_constant(v->name(), program.constant_value(v));
    bmap[v] = bwd.add_constant(v->name(), program.constant_value(v));
  }
  std::vector<const Value*> carried;
  auto in_backward = [&](const Value* v) {
    auto it = bmap.find(v);
    if (it != bmap.end()) return it->second;
    Value* input = bwd.add_input("carry_" + std::to_string(carried.size()), v->type());
    carried.push_back(v);
    return bmap[v] = input;
  };
  size_t index = 0;
  for (const auto& op : program.block().ops()) {
    const bool forward = index++ < boundary;
    std::vector<Value*> operands;
    for (const Value* v : op->operands()) operands.push_back(forward ? fmap.at(v) : in_backward(v));
    std::vector<TensorType> types;
    for (const Value* r : op->results()) types.push_back(r->type());
    Operation* copy = (forward ? fwd : bwd).append(op->def(), std::move(operands), op->attrs(), types);
    for (size_t r = 0; r < op->results().size(); ++r) (forward ? fmap : bmap)[op->result(r)] = copy->result(r);
  }
  for (const auto& out : program.outputs()) bwd.add_output(in_backward(out.value), out.name);
  for (size_t i = 0; i < carried.size(); ++i) fwd.add_output(fmap.at(carried[i]), "carry_" + std::to_string(i));
  return {std::move(fwd), std::move(bwd)};
}

void clean_up(Program& program) {
  // Dispatch may emit a piece twice (a decomposition's parts); the
  // collectives are side effects, never merged or dropped.
  PassManager cleanup;
  cleanup.add(make_cse_pass());
  cleanup.add(make_dce_pass());
  cleanup.run(program);
}

}  // namespace

Partition partition(const Program& dense, const PartitionSpec& spec, const Device& device) {
  OAR_CHECK_ARG(spec.inputs.empty() || spec.inputs.size() == dense.inputs().size(),
                "dist.to_static: " + std::to_string(spec.inputs.size()) + " input placements for a program of " +
                    std::to_string(dense.inputs().size()) + " inputs");
  OAR_CHECK_ARG(spec.outputs.empty() || spec.outputs.size() == dense.outputs().size(),
                "dist.to_static: " + std::to_string(spec.outputs.size()) + " output placements for a program of " +
                    std::to_string(dense.outputs().size()) + " outputs");
  OAR_CHECK_ARG(dense.updates().empty(), "dist.to_static: the program reassigns parameters (" +
                                             dense.updates()[0].name +
                                             ", ...); buffers updated in forward are not supported in "
                                             "distributed programs");
  Partition result;
  Program& local = result.program;
  Tracer tracer(local, device);
  std::unordered_map<const Value*, Tensor> env;
  for (size_t i = 0; i < dense.inputs().size(); ++i) {
    const Value* v = dense.inputs()[i];
    env[v] = local_leaf(tracer, local, v, spec.inputs.empty() ? std::nullopt : spec.inputs[i], spec.rank, false);
  }
  for (const Value* v : dense.parameters()) {
    auto it = spec.parameters.find(v->name());
    std::optional<DistAttr> attr;
    if (it != spec.parameters.end()) attr = it->second;
    env[v] = local_leaf(tracer, local, v, attr, spec.rank, true);
  }
  for (const Value* v : dense.constants()) env[v] = dense.constant_value(v).to(device);
  std::unordered_map<const Value*, DistAttr> marks;
  for (const auto& [index, attr] : spec.marks) {
    OAR_CHECK_ARG(index < dense.outputs().size(), "dist.to_static: mark " + std::to_string(index) +
                                                      " names no output of the program");
    marks.emplace(dense.outputs()[index].value, attr);
  }
  std::vector<ProcessMesh> stages;  // Note [Joining meshes]
  for (const Value* v : dense.parameters()) {
    const Tensor& t = env.at(v);
    if (dist::is_dist(t) && std::find(stages.begin(), stages.end(), dist::dist_attr(t).mesh) == stages.end())
      stages.push_back(dist::dist_attr(t).mesh);
  }
  std::vector<bool> operand_is_leaf;

  std::optional<size_t> forward_end;  // how many local ops the forward emitted (spec.forward_ops)
  NoGrad no_grad;  // the dense program holds its backward already
  {
    BuilderScope scope(tracer);
    for (const auto& [value, attr] : marks) {  // a mark on an input or parameter
      auto it = env.find(value);
      if (it == env.end()) continue;
      Tensor& t = it->second;
      if (!dist::is_dist(t)) {
        t = dist::make_dist(t, {attr.mesh, std::vector<oar::Placement>(attr.mesh.ndim(), oar::Placement::Replicate())},
                            t.shape());
      }
      if (!(dist::dist_attr(t) == attr)) t = dist::reshard(t, attr.mesh, attr.placements);
    }
    std::vector<Tensor> operands;
    size_t dense_index = 0;
    for (const auto& op : dense.block().ops()) {
      if (spec.forward_ops && dense_index++ == *spec.forward_ops) forward_end = local.block().size();
      OAR_CHECK_ARG(op->num_regions() == 0, "dist.to_static: " + op->name() +
                                                " has regions (control flow), which the partition does not "
                                                "support");
      operands.clear();
      operand_is_leaf.clear();
      for (const Value* v : op->operands()) {
        operands.push_back(env.at(v));
        operand_is_leaf.push_back(v->kind() == ValueKind::parameter);
      }
      if (spec.join_meshes) join_meshes(operands, operand_is_leaf, stages);
      std::vector<Tensor> results = current_builder().apply(op->def(), operands, op->attrs(), &device);
      OAR_CHECK_ARG(results.size() == op->results().size(),
                    "dist.to_static: " + op->name() + " gave " + std::to_string(results.size()) +
                        " results while partitioned, expected " + std::to_string(op->results().size()));
      for (size_t r = 0; r < results.size(); ++r) {
        const Value* v = op->result(r);
        auto mark = marks.find(v);
        if (mark != marks.end()) {  // dist.reshard in the forward
          Tensor& t = results[r];
          if (!dist::is_dist(t)) {
            DistAttr replicated{mark->second.mesh,
                                std::vector<oar::Placement>(mark->second.mesh.ndim(), oar::Placement::Replicate())};
            t = dist::make_dist(t, replicated, t.shape());
          }
          if (!(dist::dist_attr(t) == mark->second)) t = dist::reshard(t, mark->second.mesh, mark->second.placements);
        }
        env[v] = results[r];
      }
    }
    // Note [Bucketed gradient reduction] (core/src/autograd/engine.cpp), as
    // in eager mode: outputs (gradients) that need only Partial(sum) ->
    // Replicate() and are placed alike are reduced by one all_reduce of
    // their pieces together, up to 25 MB a bucket, in output order.
    std::vector<Tensor> reduced(dense.outputs().size());
    {
      std::vector<size_t> bucket;
      int64_t bytes = 0;
      auto flush = [&] {
        if (bucket.size() > 1) {
          std::vector<Tensor> ts;
          for (size_t i : bucket) ts.push_back(env.at(dense.outputs()[i].value));
          std::vector<Tensor> rs = dist::reduce_partials(ts);
          for (size_t k = 0; k < bucket.size(); ++k) reduced[bucket[k]] = rs[k];
        }
        bucket.clear();
        bytes = 0;
      };
      for (size_t i = 0; i < dense.outputs().size() && !spec.outputs.empty(); ++i) {
        if (spec.marks.count(i) || !spec.outputs[i]) continue;
        const Tensor& t = env.at(dense.outputs()[i].value);
        if (!dist::is_dist(t) || !only_partial_sum_to_replicate(dist::dist_attr(t), *spec.outputs[i])) continue;
        const Shape& local_shape = dist::local_value(t).shape();
        if (std::any_of(local_shape.begin(), local_shape.end(), [](int64_t d) { return d < 0; })) continue;
        if (!bucket.empty() && !(dist::dist_attr(env.at(dense.outputs()[bucket[0]].value)) == dist::dist_attr(t)))
          flush();
        bucket.push_back(i);
        bytes += shape_numel(local_shape) * static_cast<int64_t>(dtype_size(t.dtype()));
        if (bytes >= (int64_t{25} << 20)) flush();
      }
      flush();
    }
    for (size_t i = 0; i < dense.outputs().size(); ++i) {
      if (spec.marks.count(i)) continue;
      const NamedValue& out = dense.outputs()[i];
      Tensor t = reduced[i].defined() ? reduced[i] : env.at(out.value);
      std::optional<DistAttr> want = spec.outputs.empty() ? std::nullopt : spec.outputs[i];
      if (dist::is_dist(t) && want && !(dist::dist_attr(t) == *want)) {
        t = dist::reshard(t, want->mesh, want->placements);
      } else if (!dist::is_dist(t) && want) {
        // A dense value is the same on every rank: Replicate(), then as asked.
        DistAttr replicated{want->mesh, std::vector<oar::Placement>(want->mesh.ndim(), oar::Placement::Replicate())};
        t = dist::make_dist(t, replicated, t.shape());
        if (!(replicated == *want)) t = dist::reshard(t, want->mesh, want->placements);
      }
      result.output_shapes.push_back(out.value->type().dims);
      if (dist::is_dist(t)) {
        result.outputs.push_back(dist::dist_attr(t));
        local.add_output(tracer.capture(dist::local_value(t)), out.name);
      } else {
        result.outputs.push_back(std::nullopt);
        local.add_output(tracer.capture(t), out.name);
      }
    }
  }
  verify(local);
  if (spec.forward_ops) {
    auto [fwd, bwd] = split_program(local, forward_end.value_or(local.block().size()));
    verify(fwd);
    verify(bwd);
    clean_up(fwd);
    clean_up(bwd);
    result.forward.emplace(std::move(fwd));
    result.backward.emplace(std::move(bwd));
  }
  clean_up(local);
  return result;
}

}  // namespace oar::ir
