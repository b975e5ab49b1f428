// Shared SPMD rule helpers (spmd_util.h).
//
// Note [Choosing among placements]
// Where an op can run sharded in several ways along one mesh dim (matmul:
// on a batch dim, on m, on n, or contracting a sharded k into a Partial;
// a broadcasting binary op: on any output dim), its rule lists the ways as
// candidates and takes the one whose input reshards move the fewest
// elements, the first listed among equals. The traffic per rank, for a
// tensor of N elements, is about (factors of (m - 1) / m dropped):
//   R -> S, R -> P: 0 (a local slice, or zeros off coordinate 0)
//   S -> R, S -> P: N (all_gather); S(i) -> S(j): N / m (all_to_all)
//   P -> S: N (reduce_scatter); P -> R: 2N (all_reduce)
//   P(a) -> P(b): 3N (through Replicate)
// and every change costs a further 1e-3, so that at equal traffic the
// placement the input already has wins (Replicate inputs stay Replicate
// rather than being sliced for nothing). The cost of a Partial output is
// not charged: the rule does not know whether a later op consumes it as
// Partial (an add of two partial sums, a multiply by a replicated value)
// or reduces it, and contracting two sharded k's into a Partial is the
// Megatron row-parallel step Paddle takes too.
#include "ops/spmd_util.h"

#include <limits>

#include "oar/tensor.h"

namespace oar::spmd_util {

double reshard_cost(const TensorMeta& meta, const Placement& from, const Placement& to,
                    int64_t ranks) {
  if (from == to) return 0;
  const double n = static_cast<double>(shape_numel(meta.shape));
  const double m = static_cast<double>(std::max<int64_t>(ranks, 1));
  double traffic = 0;
  if (from.is_shard())
    traffic = to.is_shard() ? n / m : n;
  else if (from.is_partial())
    traffic = to.is_shard() ? n : to.is_replicate() ? 2 * n : 3 * n;
  return traffic + 1e-3;
}

SpmdResult cheapest(const SpmdArgs& args, std::span<const Candidate> candidates) {
  const Candidate* best = nullptr;
  double best_cost = std::numeric_limits<double>::infinity();
  for (const Candidate& c : candidates) {
    double cost = 0;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      cost += reshard_cost(args.inputs[i], args.placements[i], c.inputs[i], args.mesh_dim_size);
    }
    if (cost < best_cost) best = &c, best_cost = cost;
  }
  return {best->inputs, best->outputs};
}

int64_t output_dim_of(const Shape& in, const Shape& out, int64_t d) {
  return d + static_cast<int64_t>(out.size()) - static_cast<int64_t>(in.size());
}

bool is_broadcast_dim(const Shape& in, const Shape& out, int64_t d) {
  return in[static_cast<size_t>(d)] == 1 &&
         out[static_cast<size_t>(output_dim_of(in, out, d))] != 1;
}

Placement input_for_output_shard(const Shape& in, const Shape& out, int64_t out_dim) {
  int64_t d = out_dim - (static_cast<int64_t>(out.size()) - static_cast<int64_t>(in.size()));
  if (d < 0 || is_broadcast_dim(in, out, d)) return Placement::Replicate();
  return Placement::Shard(d);
}

bool has_empty_piece(int64_t size, int64_t ranks) {
  if (ranks <= 1) return false;
  int64_t chunk = (size + ranks - 1) / ranks;
  return chunk * (ranks - 1) >= size;
}

SpmdResult fill_like(const SpmdArgs& args) {
  const Placement& p = args.placements[0];
  return {{p}, {p.is_shard() ? p : Placement::Replicate()}};
}

std::vector<Placement> replicated(size_t n) {
  return std::vector<Placement>(n, Placement::Replicate());
}

}  // namespace oar::spmd_util
