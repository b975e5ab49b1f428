// Internal interfaces between the parts of core/src/dist/ (not installed):
// dispatch.cpp and dist_tensor.cpp (the distributed tensor, its eager
// dispatch and autograd) call reshard.cpp (how one placement becomes
// another) which emits the host collective ops of collective_ops.cpp
// through the current builder, so the same code runs eagerly and records
// IR while tracing.
#pragma once

#include <memory>
#include <vector>

#include "oar/dist_tensor.h"
#include "oar/distributed.h"

namespace oar::dist {

/// This rank's piece of the same global value (of `global_shape`) placed
/// as `to`, from its piece `local` placed as `from`. Works one mesh dim at
/// a time on N-d meshes, handles uneven chunks, and moves data between two
/// meshes by send/recv. Emits the collective host ops (c_all_reduce, ...)
/// through current_builder(). Not recorded for autograd: dist::reshard
/// records the distributed-level node. A rank in neither mesh returns an
/// empty piece.
Tensor reshard_local(const Tensor& local, const Shape& global_shape, const DistAttr& from, const DistAttr& to);

/// The communicator among global `ranks` (in this order; the caller must
/// be one of them), created on first use and cached for the process. Only
/// the members create it (the store keys derive from the rank list), so
/// groups of different meshes need no global creation order. Throws
/// naming the ranks when the default group is not initialised.
std::shared_ptr<distributed::Communicator> group_communicator(const std::vector<int>& ranks);

/// This process's global rank (0 when not initialised: one process).
int global_rank();

}  // namespace oar::dist
