// The reference interpreter (see interpreter.h).
#include "oar/ir/interpreter.h"

#include <unordered_map>

#include "oar/autograd.h"
#include "oar/builder.h"
#include "oar/error.h"
#include "oar/ir/control_flow.h"
#include "oar/runtime.h"

namespace oar::ir {

std::vector<Tensor> interpret(const Program& program, std::span<const Tensor> inputs, const ParamMap& params,
                              const Device* device) {
  OAR_CHECK_ARG(inputs.size() == program.inputs().size(),
                "interpret: the program takes " + std::to_string(program.inputs().size()) + " inputs but got " +
                    std::to_string(inputs.size()));
  Device dev = !inputs.empty() ? inputs[0].device() : (device ? *device : default_device());
  std::unordered_map<const Value*, Tensor> env;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value* v = program.inputs()[i];
    OAR_CHECK_ARG(inputs[i].dtype() == v->type().dtype && v->type().matches(inputs[i].shape()),
                  "interpret: input '" + v->name() + "' expects " + v->type().str() + " but got " +
                      type_of(inputs[i]).str());
    env[v] = inputs[i];
  }
  for (const Value* v : program.parameters()) {
    auto it = params.find(v->name());
    OAR_CHECK_ARG(it != params.end(), "interpret: parameter '" + v->name() + "' is not bound");
    OAR_CHECK_ARG(type_of(it->second) == v->type(), "interpret: parameter '" + v->name() + "' expects " +
                                                        v->type().str() + " but got " + type_of(it->second).str());
    env[v] = it->second.to(dev);
  }
  for (const Value* v : program.constants()) env[v] = program.constant_value(v).to(dev);
  NoGrad no_grad;
  EagerBuilder& eager = EagerBuilder::instance();
  std::vector<Tensor> operands;
  for (const auto& op : program.block().ops()) {
    operands.clear();
    for (const Value* v : op->operands()) operands.push_back(env.at(v));
    std::vector<Tensor> results =
        is_control_flow(*op)
            ? run_control_flow(*op, operands, [&](const Value* v) { return env.at(v); }, dev)
            : eager.apply(op->def(), operands, op->attrs(), &dev);
    OAR_CHECK_ARG(results.size() == op->results().size(), "interpret: " + op->name() + " gave " +
                                                              std::to_string(results.size()) + " results, expected " +
                                                              std::to_string(op->results().size()));
    for (size_t r = 0; r < results.size(); ++r) env[op->result(r)] = results[r];
  }
  std::vector<Tensor> out;
  for (const auto& o : program.outputs()) out.push_back(env.at(o.value));
  for (const auto& u : program.updates()) out.push_back(env.at(u.value));
  return out;
}

}  // namespace oar::ir
