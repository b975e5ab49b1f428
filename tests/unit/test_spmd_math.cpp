// The SPMD rules of the math ops (matmul, broadcasting elementwise ops,
// reductions, softmax, the norms, the fill-likes, uniform_like's localize),
// one mesh dim at a time, for every placement combination the rule
// distinguishes. Each expectation is written "inputs -> outputs" with
// R = Replicate(), S(d) = Shard(d), P(sum) = Partial(sum); the choice
// between several ways follows Note [Choosing among placements]
// (core/src/ops/spmd_util.cpp), and each comment gives the traffic that
// decides it, in elements.
#include <string>
#include <vector>

#include "oar/dist_tensor.h"
#include "oar/ops.h"
#include "oar/spmd.h"
#include "test_util.h"

using oar::Attrs;
using oar::DType;
using oar::Placement;
using oar::ReduceKind;
using oar::Shape;
using oar::Tensor;

namespace {

const Placement R = Placement::Replicate();
Placement S(int64_t d) { return Placement::Shard(d); }
const Placement P = Placement::Partial(ReduceKind::sum);
const Placement Pavg = Placement::Partial(ReduceKind::avg);
const Placement Pmax = Placement::Partial(ReduceKind::max);
const Placement Pmin = Placement::Partial(ReduceKind::min);

std::string name(const Placement& p) {
  if (p.is_replicate()) return "R";
  if (p.is_shard()) return "S(" + std::to_string(p.dim) + ")";
  std::string s = p.str();  // "Partial(sum)"
  return "P" + s.substr(s.find('('));
}

std::string list(const std::vector<Placement>& ps) {
  std::string s;
  for (const auto& p : ps) s += (s.empty() ? "" : " ") + name(p);
  return s;
}

// The rule of `op` for inputs of `shapes` placed as `placements` along a
// mesh dim of `ranks` ranks, as "inputs -> outputs".
std::string rule(const char* op, const std::vector<Shape>& shapes, const std::vector<Placement>& placements,
                 const Attrs& attrs = {}, int64_t ranks = 2, std::vector<DType> dtypes = {}) {
  const oar::OpDef& def = oar::OpRegistry::instance().get(op);
  REQUIRE(static_cast<bool>(def.spmd));
  std::vector<oar::TensorMeta> metas;
  for (size_t i = 0; i < shapes.size(); ++i) metas.push_back({i < dtypes.size() ? dtypes[i] : DType::f32, shapes[i]});
  Attrs full = oar::with_defaults(def, attrs);
  oar::SpmdResult r = def.spmd(oar::SpmdArgs{def, metas, placements, full, ranks});
  CHECK(r.inputs.size() == shapes.size());
  return list(r.inputs) + " -> " + list(r.outputs);
}

// This rank's local shape of a tensor of `shape` placed as `p` along a
// mesh dim of `ranks` ranks.
Shape local_shape(Shape shape, const Placement& p, int64_t ranks, int64_t rank) {
  if (p.is_shard()) shape[static_cast<size_t>(p.dim)] = oar::dist::shard_length(shape[p.dim], ranks, rank);
  return shape;
}

// Runs `op`'s rule for every combination of R, S(d) (each d) and P(sum) of
// its inputs, and checks on every rank that the pieces the rule asks for
// give, through the op's own meta rule, exactly the piece its output
// placement says: what the dispatcher checks after a local kernel ran.
// Returns how many combinations it checked.
int check_local_shapes_line_up(const char* op, const std::vector<Shape>& shapes, const Attrs& attrs = {},
                               int64_t ranks = 2, std::vector<DType> dtypes = {}) {
  const oar::OpDef& def = oar::OpRegistry::instance().get(op);
  std::vector<oar::TensorMeta> metas;
  for (size_t i = 0; i < shapes.size(); ++i) metas.push_back({i < dtypes.size() ? dtypes[i] : DType::f32, shapes[i]});
  Attrs full = oar::with_defaults(def, attrs);
  const Shape out = oar::infer_meta(def, metas, full)[0].shape;
  std::vector<std::vector<Placement>> choices;
  for (const Shape& s : shapes) {
    std::vector<Placement> c{R, P};
    for (size_t d = 0; d < s.size(); ++d) c.push_back(S(static_cast<int64_t>(d)));
    choices.push_back(c);
  }
  std::vector<size_t> pick(shapes.size(), 0);
  int count = 0;
  while (true) {
    std::vector<Placement> given;
    for (size_t i = 0; i < shapes.size(); ++i) given.push_back(choices[i][pick[i]]);
    oar::SpmdResult r = def.spmd(oar::SpmdArgs{def, metas, given, full, ranks});
    INFO(op << " given " << list(given) << " -> " << list(r.inputs) << " -> " << list(r.outputs));
    REQUIRE(r.inputs.size() == shapes.size());
    REQUIRE(r.outputs.size() == 1);
    for (int64_t rank = 0; rank < ranks; ++rank) {
      std::vector<oar::TensorMeta> local = metas;
      for (size_t i = 0; i < shapes.size(); ++i) {
        if (r.inputs[i].is_shard()) REQUIRE(r.inputs[i].dim < static_cast<int64_t>(shapes[i].size()));
        local[i].shape = local_shape(shapes[i], r.inputs[i], ranks, rank);
      }
      CHECK(oar::infer_meta(def, local, full)[0].shape == local_shape(out, r.outputs[0], ranks, rank));
    }
    ++count;
    size_t i = 0;
    while (i < pick.size() && ++pick[i] == choices[i].size()) pick[i++] = 0;
    if (i == pick.size()) break;
  }
  return count;
}

Attrs transposes(bool a, bool b) { return Attrs{{"transpose_a", a}, {"transpose_b", b}}; }
Attrs axes(std::vector<int64_t> a, bool keepdim = false) { return Attrs{{"axes", a}, {"keepdim", keepdim}}; }

}  // namespace

// a [4, 6] (m = 4, k = 6, 24 elements), b [6, 8] (k = 6, n = 8, 48 elements).
TEST_CASE("matmul: sharded m, n or k, and the cheaper reshard where the two sides disagree") {
  const std::vector<Shape> ab{{4, 6}, {6, 8}};
  CHECK(rule("matmul", ab, {R, R}) == "R R -> R");
  CHECK(rule("matmul", ab, {S(0), R}) == "S(0) R -> S(0)");  // row-split a: row-split y
  CHECK(rule("matmul", ab, {R, S(1)}) == "R S(1) -> S(1)");  // column-split b (Megatron column)
  CHECK(rule("matmul", ab, {S(1), S(0)}) == "S(1) S(0) -> P(sum)");  // both split k (Megatron row)
  // k split on one side only: slicing the replicated other side is free.
  CHECK(rule("matmul", ab, {S(1), R}) == "S(1) S(0) -> P(sum)");
  CHECK(rule("matmul", ab, {R, S(0)}) == "S(1) S(0) -> P(sum)");
  // m and n both split: gather a (24) rather than b (48).
  CHECK(rule("matmul", ab, {S(0), S(1)}) == "R S(1) -> S(1)");
  // a split on m, b on k: all_to_all a to k (24 / 2 = 12) beats gathering b (48).
  CHECK(rule("matmul", ab, {S(0), S(0)}) == "S(1) S(0) -> P(sum)");
  // a split on k, b on n: all_to_all b to k (48 / 2 = 24) ties gathering a (24): the earlier way (n) wins.
  CHECK(rule("matmul", ab, {S(1), S(1)}) == "R S(1) -> S(1)");
}

TEST_CASE("matmul: a Partial operand times a replicated one stays Partial; other partials are reduced") {
  const std::vector<Shape> ab{{4, 6}, {6, 8}};
  CHECK(rule("matmul", ab, {P, R}) == "P(sum) R -> P(sum)");
  CHECK(rule("matmul", ab, {R, P}) == "R P(sum) -> P(sum)");
  CHECK(rule("matmul", ab, {Pavg, R}) == "P(avg) R -> P(avg)");
  // Both partial: all_reduce a (2 * 24) beats all_reduce b (96) and reduce_scatter both (72).
  CHECK(rule("matmul", ab, {P, P}) == "R P(sum) -> P(sum)");
  // Partial(max) is not linear: reduce_scatter a to rows (24) is the cheapest reduction.
  CHECK(rule("matmul", ab, {Pmax, R}) == "S(0) R -> S(0)");
  // A partial b beside a row-split a: gathering a (24) and keeping b Partial beats
  // all_to_all a to k (12) plus reduce_scatter b to k (48).
  CHECK(rule("matmul", ab, {S(0), P}) == "R P(sum) -> P(sum)");
}

TEST_CASE("matmul: transpose_a and transpose_b move which dims are m, k and n") {
  // a^T with a [6, 4]: dim 0 is k, dim 1 is m.
  CHECK(rule("matmul", {{6, 4}, {6, 8}}, {S(1), R}, transposes(true, false)) == "S(1) R -> S(0)");
  CHECK(rule("matmul", {{6, 4}, {6, 8}}, {S(0), R}, transposes(true, false)) == "S(0) S(0) -> P(sum)");
  // b^T with b [8, 6]: dim 0 is n, dim 1 is k.
  CHECK(rule("matmul", {{4, 6}, {8, 6}}, {R, S(0)}, transposes(false, true)) == "R S(0) -> S(1)");
  CHECK(rule("matmul", {{4, 6}, {8, 6}}, {R, S(1)}, transposes(false, true)) == "S(1) S(1) -> P(sum)");
  // Both: a [6, 4] (k, m), b [8, 6] (n, k).
  CHECK(rule("matmul", {{6, 4}, {8, 6}}, {S(0), S(1)}, transposes(true, true)) == "S(0) S(1) -> P(sum)");
  CHECK(rule("matmul", {{6, 4}, {8, 6}}, {S(1), R}, transposes(true, true)) == "S(1) R -> S(0)");
  CHECK(rule("matmul", {{6, 4}, {8, 6}}, {R, S(0)}, transposes(true, true)) == "R S(0) -> S(1)");
}

TEST_CASE("matmul: batch dims shard on both sides; a broadcast or missing batch dim stays replicated") {
  const std::vector<Shape> batched{{2, 4, 6}, {2, 6, 8}};
  CHECK(rule("matmul", batched, {S(0), S(0)}) == "S(0) S(0) -> S(0)");
  CHECK(rule("matmul", batched, {S(0), R}) == "S(0) S(0) -> S(0)");  // slicing b's batch is free
  CHECK(rule("matmul", batched, {R, S(0)}) == "S(0) S(0) -> S(0)");
  CHECK(rule("matmul", batched, {S(1), R}) == "S(1) R -> S(1)");
  CHECK(rule("matmul", batched, {R, S(2)}) == "R S(2) -> S(2)");
  CHECK(rule("matmul", batched, {S(2), S(1)}) == "S(2) S(1) -> P(sum)");
  // b without batch dims (rank 2), or with a batch dim of 1: b replicated.
  CHECK(rule("matmul", {{2, 4, 6}, {6, 8}}, {S(0), R}) == "S(0) R -> S(0)");
  CHECK(rule("matmul", {{2, 4, 6}, {1, 6, 8}}, {S(0), R}) == "S(0) R -> S(0)");
  // a without batch dims, b [3, 6, 8] batch-split: y [3, 4, 8] batch-split.
  CHECK(rule("matmul", {{4, 6}, {3, 6, 8}}, {R, S(0)}) == "R S(0) -> S(0)");
  // Uneven: m = 5 over 2 ranks (pieces of 3 and 2) shards the same way.
  CHECK(rule("matmul", {{5, 6}, {6, 8}}, {S(0), R}) == "S(0) R -> S(0)");
}

// a, b [4, 3] (12 elements each).
TEST_CASE("broadcasting binary ops: sharded dims line up, a broadcast or missing dim stays replicated") {
  const std::vector<Shape> same{{4, 3}, {4, 3}};
  for (const char* op : {"add", "sub", "mul", "div", "pow", "maximum", "minimum", "equal", "less", "greater_equal"}) {
    INFO(op);
    CHECK(rule(op, same, {R, R}) == "R R -> R");
    CHECK(rule(op, same, {S(0), S(0)}) == "S(0) S(0) -> S(0)");
    CHECK(rule(op, same, {S(0), R}) == "S(0) S(0) -> S(0)");  // slicing b is free
    CHECK(rule(op, same, {R, S(1)}) == "S(1) S(1) -> S(1)");
    // Disagreeing dims: all_to_all either side (6); the first output dim wins.
    CHECK(rule(op, same, {S(0), S(1)}) == "S(0) S(0) -> S(0)");
  }
  // b [3] lacks dim 0; on dim 1 it is b's dim 0.
  CHECK(rule("add", {{4, 3}, {3}}, {S(0), R}) == "S(0) R -> S(0)");
  CHECK(rule("add", {{4, 3}, {3}}, {S(1), R}) == "S(1) S(0) -> S(1)");
  CHECK(rule("add", {{4, 3}, {3}}, {R, S(0)}) == "S(1) S(0) -> S(1)");
  // b [1, 3] sharded on its broadcast dim 0: b is gathered (3) and a keeps its rows.
  CHECK(rule("add", {{4, 3}, {1, 3}}, {S(0), S(0)}) == "S(0) R -> S(0)");
  CHECK(rule("mul", {{4, 1}, {1, 3}}, {S(0), R}) == "S(0) R -> S(0)");
  CHECK(rule("mul", {{4, 1}, {1, 3}}, {R, S(1)}) == "R S(1) -> S(1)");
  // A 0-D scalar is replicated with any sharding of the other side.
  CHECK(rule("mul", {{4, 3}, {}}, {S(1), R}) == "S(1) R -> S(1)");
  // Uneven rows (5 over 2 ranks) line up as long as both sides hold the dim.
  CHECK(rule("add", {{5, 3}, {5, 3}}, {S(0), R}) == "S(0) S(0) -> S(0)");
  // where: the condition, x and y line up the same way.
  CHECK(rule("where", {{4, 3}, {4, 3}, {3}}, {S(0), R, R}, {}, 2, {DType::boolean}) == "S(0) S(0) R -> S(0)");
  CHECK(rule("where", {{4, 3}, {1, 3}, {4, 3}}, {R, R, S(1)}, {}, 2, {DType::boolean}) == "S(1) S(1) S(1) -> S(1)");
  CHECK(rule("logical_and", same, {S(1), S(1)}, {}, 2, {DType::boolean, DType::boolean}) == "S(1) S(1) -> S(1)");
}

TEST_CASE("broadcasting binary ops: Partial stays Partial where the op is linear in it, else it is reduced") {
  const std::vector<Shape> same{{4, 3}, {4, 3}};
  // add, sub: P + P = P.
  CHECK(rule("add", same, {P, P}) == "P(sum) P(sum) -> P(sum)");
  CHECK(rule("sub", same, {P, P}) == "P(sum) P(sum) -> P(sum)");
  CHECK(rule("add", same, {Pavg, Pavg}) == "P(avg) P(avg) -> P(avg)");
  // P + R would count b once per rank: a is all_reduced (Paddle's choice; no operand is
  // sharded to reduce_scatter to, Note [Elementwise SPMD rules]).
  CHECK(rule("add", same, {P, R}) == "R R -> R");
  CHECK(rule("add", same, {R, P}) == "R R -> R");
  CHECK(rule("add", {{}, {}}, {P, R}) == "R R -> R");
  CHECK(rule("add", same, {P, Pmax}) == "R R -> R");
  // Beside an operand sharded already, reduce_scatter the Partial one (12) rather than
  // all_reduce it (24) and gather the other (12).
  CHECK(rule("add", same, {P, S(1)}) == "S(1) S(1) -> S(1)");
  // mul: one P operand times replicated ones.
  CHECK(rule("mul", same, {P, R}) == "P(sum) R -> P(sum)");
  CHECK(rule("mul", same, {R, P}) == "R P(sum) -> P(sum)");
  CHECK(rule("mul", {{4, 3}, {}}, {P, R}) == "P(sum) R -> P(sum)");
  // P * P: all_reduce one side (24); no operand is sharded to scatter to.
  CHECK(rule("mul", same, {P, P}) == "P(sum) R -> P(sum)");
  // P * S: keeping a Partial needs b gathered (12), sharding needs a reduce_scattered (12): a tie,
  // and the Partial way is listed first.
  CHECK(rule("mul", same, {P, S(0)}) == "P(sum) R -> P(sum)");
  // div: only the dividend may be partial.
  CHECK(rule("div", same, {P, R}) == "P(sum) R -> P(sum)");
  CHECK(rule("div", same, {R, P}) == "R R -> R");
  CHECK(rule("div", same, {P, R}, {}, 2, {DType::i64, DType::i64}) == "R R -> R");  // 3 / 2 + 3 / 2 != 6 / 2
  CHECK(rule("mul", same, {P, R}, {}, 2, {DType::i64, DType::i64}) == "P(sum) R -> P(sum)");
  // maximum of P(max) (or minimum of P(min)) with replicated or equally partial operands.
  CHECK(rule("maximum", same, {Pmax, R}) == "P(max) R -> P(max)");
  CHECK(rule("maximum", same, {Pmax, Pmax}) == "P(max) P(max) -> P(max)");
  CHECK(rule("minimum", same, {R, Pmin}) == "R P(min) -> P(min)");
  CHECK(rule("maximum", same, {Pmin, R}) == "R R -> R");
  CHECK(rule("maximum", same, {P, R}) == "R R -> R");
  // pow and the comparisons are not linear.
  CHECK(rule("pow", same, {P, R}) == "R R -> R");
  CHECK(rule("equal", same, {P, P}) == "R R -> R");
  CHECK(rule("pow", same, {S(0), P}) == "S(0) S(0) -> S(0)");
}

TEST_CASE("elementwise unary ops keep a sharding; neg, copy and float casts keep a Partial") {
  for (const char* op : {"relu", "gelu", "silu", "sigmoid", "exp", "tanh", "neg", "copy"}) {
    INFO(op);
    CHECK(rule(op, {{4, 3}}, {S(1)}) == "S(1) -> S(1)");
    CHECK(rule(op, {{4, 3}}, {R}) == "R -> R");
  }
  for (const char* op : {"relu", "gelu", "silu", "exp"}) {
    INFO(op);
    CHECK(rule(op, {{4, 3}}, {P}) == "R -> R");
  }
  CHECK(rule("neg", {{4, 3}}, {P}) == "P(sum) -> P(sum)");
  CHECK(rule("copy", {{4, 3}}, {Pavg}) == "P(avg) -> P(avg)");
  CHECK(rule("neg", {{4, 3}}, {Pmax}) == "P(max) -> P(min)");  // -max(a, b) = min(-a, -b)
  CHECK(rule("copy", {{4, 3}}, {Pmax}) == "R -> R");
  const Attrs to_f64{{"dtype", static_cast<int64_t>(DType::f64)}};
  const Attrs to_i32{{"dtype", static_cast<int64_t>(DType::i32)}};
  CHECK(rule("cast", {{4, 3}}, {S(0)}, to_i32) == "S(0) -> S(0)");
  CHECK(rule("cast", {{4, 3}}, {P}, to_f64) == "P(sum) -> P(sum)");
  CHECK(rule("cast", {{4, 3}}, {Pmax}, to_f64) == "P(max) -> P(max)");
  CHECK(rule("cast", {{4, 3}}, {P}, to_i32) == "R -> R");
  CHECK(rule("cast", {{4, 3}}, {P}, to_f64, 2, {DType::i64}) == "R -> R");
}

// x [4, 6].
TEST_CASE("reductions: a kept sharded dim passes through, a reduced one becomes Partial") {
  CHECK(rule("sum", {{4, 6}}, {S(0)}, axes({1})) == "S(0) -> S(0)");
  CHECK(rule("sum", {{4, 6}}, {S(1)}, axes({0})) == "S(1) -> S(0)");  // renumbered without keepdim
  CHECK(rule("sum", {{4, 6}}, {S(1)}, axes({0}, true)) == "S(1) -> S(1)");
  CHECK(rule("sum", {{4, 6}}, {S(0)}, axes({0})) == "S(0) -> P(sum)");
  CHECK(rule("sum", {{4, 6}}, {S(1)}, axes({0, 1})) == "S(1) -> P(sum)");
  CHECK(rule("max", {{4, 6}}, {S(0)}, axes({0})) == "S(0) -> P(max)");
  CHECK(rule("min", {{4, 6}}, {S(1)}, axes({1}, true)) == "S(1) -> P(min)");
  CHECK(rule("prod", {{4, 6}}, {S(0)}, axes({0})) == "R -> R");  // no Partial(prod)
  CHECK(rule("prod", {{4, 6}}, {S(0)}, axes({1})) == "S(0) -> S(0)");
  CHECK(rule("sum", {{4, 6}}, {R}, axes({0})) == "R -> R");
  // Some rank's slice is empty (1 row over 2 ranks, 3 over 4): max over nothing is an error, sum is 0.
  CHECK(rule("max", {{1, 6}}, {S(0)}, axes({0})) == "R -> R");
  CHECK(rule("min", {{3, 6}}, {S(0)}, axes({0}), 4) == "R -> R");
  CHECK(rule("max", {{3, 6}}, {S(0)}, axes({0}), 2) == "S(0) -> P(max)");
  CHECK(rule("sum", {{1, 6}}, {S(0)}, axes({0})) == "S(0) -> P(sum)");
}

TEST_CASE("reductions: a Partial input passes through where the reduction commutes with it") {
  CHECK(rule("sum", {{4, 6}}, {P}, axes({1})) == "P(sum) -> P(sum)");
  CHECK(rule("sum", {{4, 6}}, {Pavg}, axes({0, 1})) == "P(avg) -> P(avg)");
  CHECK(rule("max", {{4, 6}}, {Pmax}, axes({0})) == "P(max) -> P(max)");
  CHECK(rule("min", {{4, 6}}, {Pmin}, axes({0})) == "P(min) -> P(min)");
  CHECK(rule("max", {{4, 6}}, {P}, axes({0})) == "R -> R");
  CHECK(rule("sum", {{4, 6}}, {Pmax}, axes({0})) == "R -> R");
  CHECK(rule("prod", {{4, 6}}, {P}, axes({0})) == "R -> R");
}

TEST_CASE("argmax and argmin gather a sharded searched axis and keep the other dims' sharding") {
  const Attrs axis1{{"axis", int64_t{1}}, {"keepdim", false}};
  const Attrs axis0{{"axis", int64_t{0}}, {"keepdim", false}};
  const Attrs axis0_kept{{"axis", int64_t{0}}, {"keepdim", true}};
  for (const char* op : {"argmax", "argmin"}) {
    INFO(op);
    CHECK(rule(op, {{4, 6}}, {S(0)}, axis1) == "S(0) -> S(0)");
    CHECK(rule(op, {{4, 6}}, {S(1)}, axis0) == "S(1) -> S(0)");
    CHECK(rule(op, {{4, 6}}, {S(1)}, axis0_kept) == "S(1) -> S(1)");
    CHECK(rule(op, {{4, 6}}, {S(1)}, axis1) == "R -> R");
    CHECK(rule(op, {{4, 6}}, {Pmax}, axis1) == "R -> R");
  }
}

TEST_CASE("softmax and log_softmax gather a sharded axis; the norms gather a sharded normalized dim") {
  const Attrs axis1{{"axis", int64_t{1}}};
  for (const char* op : {"softmax", "log_softmax"}) {
    INFO(op);
    CHECK(rule(op, {{4, 6}}, {S(0)}, axis1) == "S(0) -> S(0)");
    CHECK(rule(op, {{4, 6}}, {S(1)}, axis1) == "R -> R");
    CHECK(rule(op, {{4, 6}}, {P}, axis1) == "R -> R");
    CHECK(rule(op, {{4, 6}}, {R}, axis1) == "R -> R");
  }
  // x [2, 3, 4] normalized over its last dim; weight and bias [4].
  const Attrs last{{"begin_axis", int64_t{2}}};
  const std::vector<Shape> ln{{2, 3, 4}, {4}, {4}};
  CHECK(rule("layer_norm", ln, {S(0), R, R}, last) == "S(0) R R -> S(0)");
  CHECK(rule("layer_norm", ln, {S(1), R, R}, last) == "S(1) R R -> S(1)");  // sequence parallel
  CHECK(rule("layer_norm", ln, {S(2), R, R}, last) == "R R R -> R");
  CHECK(rule("layer_norm", ln, {S(0), S(0), R}, last) == "S(0) R R -> S(0)");  // a sharded weight is gathered
  CHECK(rule("layer_norm", ln, {P, R, R}, last) == "R R R -> R");
  // Over dims 1.. (weight [3, 4]): a sharded dim 1 is normalized.
  CHECK(rule("layer_norm", {{2, 3, 4}, {3, 4}, {3, 4}}, {S(1), R, R}, Attrs{{"begin_axis", int64_t{1}}}) ==
        "R R R -> R");
  CHECK(rule("rms_norm", {{2, 3, 4}, {4}}, {S(1), R}, last) == "S(1) R -> S(1)");
  CHECK(rule("rms_norm", {{2, 3, 4}, {4}}, {S(2), R}, last) == "R R -> R");
  CHECK(rule("rms_norm", {{2, 3, 4}, {4}}, {R, S(0)}, last) == "R R -> R");
}

TEST_CASE("full_like and uniform_like read only the shape: a Partial input is not reduced") {
  const Attrs fill{{"value", 1.0}, {"dtype", static_cast<int64_t>(DType::f32)}};
  CHECK(rule("full_like", {{4, 6}}, {S(1)}, fill) == "S(1) -> S(1)");
  CHECK(rule("full_like", {{4, 6}}, {R}, fill) == "R -> R");
  CHECK(rule("full_like", {{4, 6}}, {P}, fill) == "P(sum) -> R");
  CHECK(rule("full_like", {{4, 6}}, {Pmax}, fill) == "P(max) -> R");
  const Attrs draw{{"dtype", static_cast<int64_t>(DType::f32)}, {"seed", int64_t{7}}, {"offset", int64_t{3}}};
  CHECK(rule("uniform_like", {{4, 6}}, {S(0)}, draw) == "S(0) -> S(0)");
  CHECK(rule("uniform_like", {{4, 6}}, {P}, draw) == "P(sum) -> R");
}

// The localize of uniform_like tells the kernel where the piece lies; the
// piece then draws exactly the dense numbers of its slice, on every device.
TEST_CASE("a uniform_like piece with global_shape and global_offset draws the dense result's slice") {
  const oar::OpDef& def = oar::OpRegistry::instance().get("uniform_like");
  REQUIRE(static_cast<bool>(def.localize));
  const Attrs draw = oar::with_defaults(
      def, Attrs{{"dtype", static_cast<int64_t>(DType::f32)}, {"seed", int64_t{11}}, {"offset", int64_t{5}}});
  const std::vector<oar::TensorMeta> global{{DType::f32, {5, 6}}};
  const std::vector<oar::TensorMeta> piece{{DType::f32, {5, 3}}};
  const std::vector<std::vector<int64_t>> offsets{{0, 3}};
  Attrs local = def.localize(oar::LocalizeArgs{def, draw, piece, piece, global, offsets});
  CHECK(local.get_ints("global_shape") == std::vector<int64_t>{5, 6});
  CHECK(local.get_ints("global_offset") == std::vector<int64_t>{0, 3});
  // A piece that is the whole tensor keeps the dense attributes.
  CHECK(def.localize(oar::LocalizeArgs{def, draw, global, global, global, {}}).get_ints("global_shape").empty());

  for (const char* device : {"cpu", "mock"}) {
    INFO(device);
    const oar::Device dev{device, 0};
    std::array<Tensor, 1> whole{oar::zeros({5, 6}, DType::f32, dev)};
    std::vector<float> dense = oar::apply1(def, whole, draw).to_vector<float>();
    // Columns 3..5 of the dense draw.
    std::array<Tensor, 1> cols{oar::zeros({5, 3}, DType::f32, dev)};
    std::vector<float> right = oar::apply1(def, cols, local).to_vector<float>();
    REQUIRE(right.size() == 15);
    for (int r = 0; r < 5; ++r) {
      for (int c = 0; c < 3; ++c) CHECK(right[r * 3 + c] == dense[r * 6 + 3 + c]);
    }
    // Rows 3..4 (a row split: a contiguous run of the dense numbers).
    Attrs rows = draw;
    rows.set("global_shape", std::vector<int64_t>{5, 6});
    rows.set("global_offset", std::vector<int64_t>{3, 0});
    std::array<Tensor, 1> tail{oar::zeros({2, 6}, DType::f32, dev)};
    std::vector<float> bottom = oar::apply1(def, tail, rows).to_vector<float>();
    for (int i = 0; i < 12; ++i) CHECK(bottom[i] == dense[18 + i]);
    // A piece that does not fit the global shape is an error naming the op.
    Attrs bad = rows;
    bad.set("global_offset", std::vector<int64_t>{4, 0});
    CHECK(oar_test::error_of([&] { oar::apply1(def, tail, bad).to_vector<float>(); }).find("uniform_like") !=
          std::string::npos);
  }
}

TEST_CASE("every placement combination gives pieces whose local result is the output's piece") {
  // Uneven sizes (5 and 3 over 2 ranks; 3 over 4 leaves a rank empty) and broadcast dims.
  for (const char* op : {"add", "mul", "div", "maximum", "pow", "less"}) {
    CHECK(check_local_shapes_line_up(op, {{5, 3}, {5, 3}}) == 16);
    CHECK(check_local_shapes_line_up(op, {{5, 3}, {3}}) == 12);
    CHECK(check_local_shapes_line_up(op, {{5, 1}, {1, 3}}) == 16);
    CHECK(check_local_shapes_line_up(op, {{2, 5, 3}, {5, 1}}, {}, 4) == 20);
  }
  CHECK(check_local_shapes_line_up("where", {{5, 3}, {1, 3}, {5, 1}}, {}, 2, {DType::boolean}) == 64);
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Shape a = ta ? Shape{6, 5} : Shape{5, 6}, b = tb ? Shape{3, 6} : Shape{6, 3};
      CHECK(check_local_shapes_line_up("matmul", {a, b}, transposes(ta, tb)) == 16);
      CHECK(check_local_shapes_line_up("matmul", {{2, a[0], a[1]}, {1, b[0], b[1]}}, transposes(ta, tb), 4) == 25);
      CHECK(check_local_shapes_line_up("matmul", {{3, a[0], a[1]}, b}, transposes(ta, tb)) == 20);
    }
  }
  for (const char* op : {"sum", "max", "prod"}) {
    for (bool keepdim : {false, true}) {
      CHECK(check_local_shapes_line_up(op, {{5, 3, 2}}, axes({1}, keepdim)) == 5);
      CHECK(check_local_shapes_line_up(op, {{5, 3, 2}}, axes({0, 2}, keepdim), 4) == 5);
    }
  }
  CHECK(check_local_shapes_line_up("argmax", {{5, 3}}, Attrs{{"axis", int64_t{0}}, {"keepdim", false}}) == 4);
  CHECK(check_local_shapes_line_up("softmax", {{5, 3}}, Attrs{{"axis", int64_t{1}}}) == 4);
  CHECK(check_local_shapes_line_up("layer_norm", {{5, 3, 2}, {2}, {2}}, Attrs{{"begin_axis", int64_t{2}}}) == 5 * 3 * 3);
  CHECK(check_local_shapes_line_up("rms_norm", {{5, 3, 2}, {3, 2}}, Attrs{{"begin_axis", int64_t{1}}}) == 5 * 4);
  CHECK(check_local_shapes_line_up("full_like", {{5, 3}}, Attrs{{"value", 0.0}, {"dtype", int64_t{0}}}) == 4);
  // linear (Note [linear SPMD rule]) and sum_to_like: every placement of every input, 4 x 4 x 3 and 5 x 4.
  CHECK(check_local_shapes_line_up("linear", {{5, 3}, {3, 4}, {4}}) == 4 * 4 * 3);
  CHECK(check_local_shapes_line_up("linear", {{2, 5, 3}, {3, 4}, {}}) == 5 * 4 * 2);
  CHECK(check_local_shapes_line_up("sum_to_like", {{5, 3, 4}, {3, 1}}) == 5 * 4);
}

TEST_CASE("the linear rule shards like matmul and makes the bias Partial where the product is") {
  const oar::OpDef& def = oar::OpRegistry::instance().get("linear");
  std::vector<oar::TensorMeta> metas{{DType::f32, {8, 6}}, {DType::f32, {6, 4}}, {DType::f32, {4}}};
  Attrs full = oar::with_defaults(def, {});
  auto rule = [&](std::vector<Placement> given) { return def.spmd(oar::SpmdArgs{def, metas, given, full, 2}); };
  auto r = rule({S(0), R, R});  // data parallel
  CHECK(list(r.inputs) == list({S(0), R, R}));
  CHECK(list(r.outputs) == list({S(0)}));
  r = rule({R, S(1), S(0)});  // column parallel
  CHECK(list(r.outputs) == list({S(1)}));
  r = rule({S(1), S(0), R});  // row parallel: the bias is added on one rank only
  CHECK(list(r.inputs) == list({S(1), S(0), P}));
  CHECK(list(r.outputs) == list({P}));
}

TEST_CASE("ops with a decomposition whose parts have rules get no rule of their own") {
  for (const char* op : {"mean", "var", "dropout"}) {
    INFO(op);
    CHECK_FALSE(static_cast<bool>(oar::OpRegistry::instance().get(op).spmd));
  }
}
