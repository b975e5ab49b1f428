// Kernel resolution and decomposition of unsupported ops (resolve.h).
#include "resolve.h"

#include "oar/ir/control_flow.h"
#include "oar/ir/pass.h"

namespace oar::ir {

std::vector<DType> operand_dtypes(const Operation& op) {
  std::vector<DType> out;
  for (const Value* v : op.operands()) out.push_back(v->type().dtype);
  return out;
}

std::vector<DType> result_dtypes(const Operation& op) {
  std::vector<DType> out;
  for (const Value* v : op.results()) out.push_back(v->type().dtype);
  return out;
}

const KernelEntry* kernel_for_dtypes(const DeviceBackend& backend, const Operation& op) {
  std::vector<DType> in = operand_dtypes(op), out = result_dtypes(op);
  return select_kernel(backend, op.def().id, in, out, nullptr);
}

Error no_kernel_error(const DeviceBackend& backend, const Operation& op, const OarKernelContext* problem) {
  std::vector<DType> in = operand_dtypes(op), out = result_dtypes(op);
  return oar::no_kernel_error(backend, op.name(), op.def().id, in, out, problem);
}

void decompose_unsupported(Program& program, const DeviceBackend& backend, const std::set<std::string>& forced) {
  std::set<std::string> names = forced;
  bool first = true;
  for (int round = 0; round < 16; ++round) {
    size_t before = names.size();
    for (const auto& op : program.block().ops()) {
      if (op->def().kind == OpKind::composite && !kernel_for_dtypes(backend, *op)) names.insert(op->name());
    }
    if (names.size() == before && !(first && !names.empty())) return;
    first = false;
    PassManager manager;
    manager.add(make_decomposition_pass(names));
    manager.run(program);
  }
}

std::vector<const KernelEntry*> resolve_kernels(const Program& program, const DeviceBackend& backend) {
  std::vector<const KernelEntry*> kernels;
  for (const auto& op : program.block().ops()) {
    const KernelEntry* kernel = nullptr;
    // Host ops: Note [Host ops]; cond and while: the region runner (Note [Control-flow ops]).
    if (op->def().kind != OpKind::view && !op->def().host && !is_control_flow(*op)) {
      kernel = kernel_for_dtypes(backend, *op);
      if (!kernel) throw no_kernel_error(backend, *op, nullptr);
    }
    kernels.push_back(kernel);
  }
  return kernels;
}

}  // namespace oar::ir
