// Kernel resolution of static mode (private to core/ir/exec): which ops
// the device runs by a kernel and which by their decomposition.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "dispatch/kernel_launch.h"
#include "oar/ir/program.h"

namespace oar::ir {

std::vector<DType> operand_dtypes(const Operation& op);
std::vector<DType> result_dtypes(const Operation& op);

/// The first kernel of `op` on `backend` whose dtypes match (accepts is
/// asked later, per input shapes), or nullptr.
const KernelEntry* kernel_for_dtypes(const DeviceBackend& backend, const Operation& op);

/// The no-kernel error of dispatch/kernel_launch.h for an IR op;
/// `problem` (or null) gives the shapes its kernels declined.
Error no_kernel_error(const DeviceBackend& backend, const Operation& op, const OarKernelContext* problem);

/// Decomposes the composite ops of `program` that have no kernel for their
/// dtypes on `backend`, and every op named in `forced` (composites whose
/// kernels declined the planned shapes: Note [Kernel fall-through]); again
/// for the composites the decompositions bring (repeat).
void decompose_unsupported(Program& program, const DeviceBackend& backend, const std::set<std::string>& forced);

/// Per block op of `program`: its kernel by dtypes, nullptr for view ops.
/// Throws the no-kernel error for any other op without one.
std::vector<const KernelEntry*> resolve_kernels(const Program& program, const DeviceBackend& backend);

}  // namespace oar::ir
