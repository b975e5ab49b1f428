// Helpers shared by the SPMD rules of the op-family files (spmd.h): the
// broadcast alignment of an input's dims with the output's, the approximate
// cost of a reshard, and the choice of the cheapest of several ways to run
// an op on one mesh dim (Note [Choosing among placements] in spmd_util.cpp).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "oar/op.h"
#include "oar/spmd.h"

namespace oar::spmd_util {

/// One way to run an op along one mesh dim: how its inputs must be placed
/// and how its outputs then come out.
struct Candidate {
  std::vector<Placement> inputs;
  std::vector<Placement> outputs;
};

/// About how many elements a rank sends to reshard a tensor of `meta` from
/// `from` to `to` over a mesh dim of `ranks` ranks, plus a tiny charge for
/// any change (so that, at equal traffic, keeping a placement wins).
double reshard_cost(const TensorMeta& meta, const Placement& from, const Placement& to,
                    int64_t ranks);

/// The candidate whose input reshards cost least (the first of equals).
/// `candidates` must not be empty.
SpmdResult cheapest(const SpmdArgs& args, std::span<const Candidate> candidates);

/// The dim of the output `out` that dim `d` of an input of shape `in`
/// lines up with under right-aligned broadcasting.
int64_t output_dim_of(const Shape& in, const Shape& out, int64_t d);
/// Whether dim `d` of `in` is broadcast in `out` (size 1 there, larger in
/// the output): such a dim cannot stay sharded, its one element must reach
/// every rank.
bool is_broadcast_dim(const Shape& in, const Shape& out, int64_t d);
/// The placement an input of shape `in` needs when the output `out` is
/// sharded on `out_dim`: Shard of its matching dim when it has that dim at
/// the output's size, Replicate() when it lacks the dim or broadcasts it.
Placement input_for_output_shard(const Shape& in, const Shape& out, int64_t out_dim);

/// Whether a dim of `size` split over `ranks` ranks leaves some rank an
/// empty piece (chunks are ceil(size / ranks), dist_tensor.h).
bool has_empty_piece(int64_t size, int64_t ranks);

/// The rule of ops that read only their input's shape (full_like,
/// uniform_like): a sharded input gives an output sharded the same way
/// (each rank fills its piece); a replicated or Partial one gives a
/// replicated output, without reducing the input (its local piece has the
/// global shape already).
SpmdResult fill_like(const SpmdArgs& args);

/// `n` copies of Replicate().
std::vector<Placement> replicated(size_t n);

}  // namespace oar::spmd_util
