// The op fusion_group: a group of operations fused by the compiler plugin.
//
// Note [Fusion groups]
// ~~~~~~~~~~~~~~~~~~~~
// The compiler plugin (compiler/, liboar_compiler.so) replaces a group of
// operations by one `fusion_group` operation. Its attributes carry all
// that is needed to run it anywhere:
//  - `program`: the group as a JSON sub-program (ir::to_json): its inputs
//    are the group's inputs in operand order, its outputs the group's
//    results in result order; no parameters, no constants;
//  - `key`: the content hash naming the compiled kernel (the plugin's
//    kernel cache is keyed by it);
//  - `name`: the group's name for logs and warnings ("g3_reduce_rms").
// The core knows nothing of the compiled kernel. The meta rule is the
// sub-program's shape inference on the operands' shapes (dynamic dims flow
// through as in any program), and the op is composite: its decomposition
// replays the sub-program's operations through the current builder. So a
// program holding fusion groups runs eagerly, traces, differentiates
// (autodiff differentiates the decomposition) and runs in `oar-run`
// without the plugin; with it, the plugin's cpu kernel runs the group, and
// when that kernel declines (no compiler, a compile that failed or timed
// out) the executor falls back to the decomposition (Note [Kernel
// fall-through]). The JSON is parsed once per distinct text
// (fusion_group_program).
#include "oar/ir/fusion_group.h"

#include <mutex>
#include <unordered_map>

#include "oar/ir/serialize.h"
#include "oar/ir/shape_inference.h"
#include "ops/op_util.h"

namespace oar {

namespace {

struct ParsedGroups {
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<const ir::Program>> by_text;
};

ParsedGroups& parsed_groups() {
  static ParsedGroups* groups = new ParsedGroups;  // never destroyed: kernels may run during exit
  return *groups;
}

std::string group_name(const Attrs& attrs) {
  const AttrValue* name = attrs.find("name");
  return name && std::holds_alternative<std::string>(*name) ? std::get<std::string>(*name) : std::string("?");
}

std::shared_ptr<const ir::Program> group_program(const Attrs& attrs) {
  return ir::fusion_group_program(attrs.get_string("program"), group_name(attrs));
}

std::vector<TensorMeta> fusion_group_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs& attrs) {
  std::shared_ptr<const ir::Program> sub = group_program(attrs);
  const std::string where = op.name + " '" + group_name(attrs) + "'";
  const auto& inputs = sub->inputs();
  if (in.size() != inputs.size()) {
    throw Error(ErrorCode::invalid_argument, where + ": its program takes " + std::to_string(inputs.size()) +
                                                 " inputs but the operation has " + std::to_string(in.size()) +
                                                 " operands");
  }
  std::vector<Shape> shapes;
  for (size_t i = 0; i < in.size(); ++i) {
    const ir::TensorType& type = inputs[i]->type();
    if (in[i].dtype != type.dtype || !type.matches(in[i].shape)) {
      throw Error(ErrorCode::invalid_argument,
                  where + ": operand " + std::to_string(i) + " is " + ir::short_dtype_name(in[i].dtype) +
                      shape_str(in[i].shape) + " but its program's input '" + inputs[i]->name() + "' is " +
                      type.str());
    }
    shapes.push_back(in[i].shape);
  }
  std::unordered_map<const ir::Value*, Shape> inferred;
  try {
    inferred = ir::infer_shapes(*sub, shapes);
  } catch (const Error& e) {
    throw Error(ErrorCode::invalid_argument, where + ": " + e.what());
  }
  std::vector<TensorMeta> out;
  for (const ir::NamedValue& o : sub->outputs()) out.push_back({o.value->type().dtype, inferred.at(o.value)});
  return out;
}

std::vector<Tensor> fusion_group_decompose(std::span<const Tensor> in, const Attrs& attrs) {
  std::shared_ptr<const ir::Program> sub = group_program(attrs);
  OAR_CHECK_ARG(in.size() == sub->inputs().size(),
                "fusion_group '" + group_name(attrs) + "': its program takes " +
                    std::to_string(sub->inputs().size()) + " inputs but got " + std::to_string(in.size()));
  std::unordered_map<const ir::Value*, Tensor> env;
  for (size_t i = 0; i < in.size(); ++i) env[sub->inputs()[i]] = in[i];
  Builder& builder = current_builder();
  const Device* device = in.empty() ? nullptr : &in[0].device();
  std::vector<Tensor> operands;
  for (const auto& op : sub->block().ops()) {
    operands.clear();
    for (const ir::Value* v : op->operands()) operands.push_back(env.at(v));
    std::vector<Tensor> results = builder.apply(op->def(), operands, op->attrs(), device);
    for (size_t r = 0; r < results.size() && r < op->results().size(); ++r) env[op->result(r)] = results[r];
  }
  std::vector<Tensor> out;
  for (const ir::NamedValue& o : sub->outputs()) out.push_back(env.at(o.value));
  return out;
}

}  // namespace

namespace ir {

std::shared_ptr<const Program> fusion_group_program(const std::string& program_json, const std::string& name) {
  ParsedGroups& groups = parsed_groups();
  {
    std::lock_guard lock(groups.mutex);
    auto it = groups.by_text.find(program_json);
    if (it != groups.by_text.end()) return it->second;
  }
  // Parsed outside the lock: a second thread parsing the same text keeps the first result.
  auto program = std::make_shared<Program>(from_json(program_json, {}, "fusion_group '" + name + "'"));
  if (!program->parameters().empty() || !program->constants().empty() || !program->updates().empty()) {
    throw Error(ErrorCode::invalid_argument, "fusion_group '" + name +
                                                 "': its program has parameters, constants or updates; a "
                                                 "group's program takes everything it reads as inputs");
  }
  if (program->outputs().empty()) {
    throw Error(ErrorCode::invalid_argument, "fusion_group '" + name + "': its program has no outputs");
  }
  std::lock_guard lock(groups.mutex);
  return groups.by_text.emplace(program_json, std::move(program)).first->second;
}

}  // namespace ir

OAR_REGISTER_OPS(fusion_group) {
  add_op({.name = "fusion_group",
          .kind = OpKind::composite,
          .num_inputs = -1,
          .num_outputs = -1,
          .meta = fusion_group_meta,
          .decompose = fusion_group_decompose,
          .attrs = {attr("program", AttrKind::string, "the group as a JSON sub-program (ir::to_json)"),
                    attr("key", std::string(), "content hash naming the compiled kernel"),
                    attr("name", std::string("fusion_group"), "the group's name in logs")},
          .doc = "operations fused by the compiler plugin; runs its sub-program when no kernel takes it"});
}

}  // namespace oar
