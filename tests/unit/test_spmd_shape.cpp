// The SPMD rules of the shape and indexing ops (Note [SPMD rules of
// data-movement ops] in core/src/ops/manipulation.cpp, Note [Reshape of a
// sharded dim], Note [Vocab-parallel embedding] in layers.cpp): for one
// mesh dim of 2 ranks unless stated, each input placement combination and
// the placements the rule asks for and gives, written out by hand.
#include <limits>

#include "test_util.h"

using oar::Attrs;
using oar::DType;
using oar::Placement;
using oar::ReduceKind;
using oar::TensorMeta;
using oar_test::error_of;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const oar::OpDef& op(const char* name) { return oar::OpRegistry::instance().get(name); }

const Placement R = Placement::Replicate();
const Placement P = Placement::Partial(ReduceKind::sum);
const Placement Pmax = Placement::Partial(ReduceKind::max);
Placement S(int64_t d) { return Placement::Shard(d); }

std::string str(const std::vector<Placement>& ps) {
  std::string out = "[";
  for (size_t i = 0; i < ps.size(); ++i) out += (i ? ", " : "") + ps[i].str();
  return out + "]";
}

// "inputs -> outputs" of op `name`'s rule.
std::string rule(const char* name, const std::vector<TensorMeta>& metas, const std::vector<Placement>& placements,
                 const Attrs& attrs = {}, int64_t ranks = 2) {
  const oar::OpDef& def = op(name);
  REQUIRE(static_cast<bool>(def.spmd));
  const Attrs full = oar::with_defaults(def, attrs);
  const oar::SpmdResult r = def.spmd(oar::SpmdArgs{def, metas, placements, full, ranks});
  return str(r.inputs) + " -> " + str(r.outputs);
}

TensorMeta f32(oar::Shape shape) { return {DType::f32, std::move(shape)}; }
TensorMeta i64(oar::Shape shape) { return {DType::i64, std::move(shape)}; }

std::string reshape(oar::Shape from, std::vector<int64_t> to, Placement p, int64_t ranks = 2) {
  return rule("reshape", {f32(std::move(from))}, {p}, Attrs{{"shape", to}}, ranks);
}

constexpr int64_t kToEnd = std::numeric_limits<int64_t>::max();

}  // namespace

TEST_CASE("reshape keeps a shard that leads its group of dims and divides evenly") {
  // Merge [4, 6] -> [24]: rank r's 2 rows are 12 consecutive elements.
  CHECK(reshape({4, 6}, {24}, S(0)) == "[Shard(0)] -> [Shard(0)]");
  CHECK(reshape({4, 6}, {24}, S(1)) == "[Replicate()] -> [Replicate()]");  // columns are not contiguous
  CHECK(reshape({6, 4}, {24}, S(0), 4) == "[Replicate()] -> [Replicate()]");  // 6 rows over 4 ranks: uneven
  // Split [24] -> [4, 6]; [24] -> [3, 8] over 2 ranks splits 3 rows unevenly.
  CHECK(reshape({24}, {4, 6}, S(0)) == "[Shard(0)] -> [Shard(0)]");
  CHECK(reshape({24}, {3, 8}, S(0)) == "[Replicate()] -> [Replicate()]");
  // A dim that maps to one dim of the same size keeps its (uneven) chunks.
  CHECK(reshape({5, 6}, {5, 2, 3}, S(0)) == "[Shard(0)] -> [Shard(0)]");
  CHECK(reshape({5, 6}, {5, 2, 3}, S(1)) == "[Shard(1)] -> [Shard(1)]");
  CHECK(reshape({5, 6}, {5, 2, 3}, S(1), 3) == "[Replicate()] -> [Replicate()]");  // 2 rows over 3 ranks
  // Regrouped [6, 4] -> [4, 6]: both leading dims divide by 2, halves match.
  CHECK(reshape({6, 4}, {4, 6}, S(0)) == "[Shard(0)] -> [Shard(0)]");
  // flatten(1, 2) of [2, 3, 4]: dim 1 leads {3, 4} -> {12}; 3 is uneven over 2, even over 3.
  CHECK(reshape({2, 3, 4}, {2, 12}, S(1)) == "[Replicate()] -> [Replicate()]");
  CHECK(reshape({2, 3, 4}, {2, 12}, S(1), 3) == "[Shard(1)] -> [Shard(1)]");
  CHECK(reshape({2, 3, 4}, {2, 12}, S(2), 3) == "[Replicate()] -> [Replicate()]");
  // squeeze / unsqueeze: size-1 dims do not count; a shard on one is gathered.
  CHECK(reshape({2, 1, 6}, {2, 6}, S(2)) == "[Shard(2)] -> [Shard(1)]");
  CHECK(reshape({2, 1, 6}, {2, 6}, S(1)) == "[Replicate()] -> [Replicate()]");
  CHECK(reshape({4, 6}, {4, 1, 6}, S(1)) == "[Shard(1)] -> [Shard(2)]");
  // 0 copies a dim and -1 is inferred: [4, 6] -> {0, 2, -1} = [4, 2, 3].
  CHECK(reshape({4, 6}, {0, 2, -1}, S(0)) == "[Shard(0)] -> [Shard(0)]");
  CHECK(reshape({4, 6}, {0, 2, -1}, S(1)) == "[Shard(1)] -> [Shard(1)]");
  // Replicate and Partial pass: reshape moves elements, it does not combine them.
  CHECK(reshape({4, 6}, {24}, R) == "[Replicate()] -> [Replicate()]");
  CHECK(reshape({4, 6}, {24}, P) == "[Partial(sum)] -> [Partial(sum)]");
  CHECK(reshape({4, 6}, {24}, Pmax) == "[Partial(max)] -> [Partial(max)]");
  CHECK(reshape({0, 6}, {0, 3, 2}, S(1)) == "[Replicate()] -> [Replicate()]");  // nothing to split
}

TEST_CASE("reshape and broadcast_to run locally with the local target shape") {
  for (const char* name : {"reshape", "broadcast_to"}) {
    INFO(name);
    const oar::OpDef& def = op(name);
    REQUIRE(static_cast<bool>(def.localize));
    Attrs attrs{{"shape", std::vector<int64_t>{0, -1}}};
    std::vector<TensorMeta> local_in{f32({2, 6})}, local_out{f32({2, 3, 2})}, global_out{f32({4, 3, 2})};
    Attrs local = def.localize(oar::LocalizeArgs{def, attrs, local_in, local_out, global_out});
    CHECK(local.get_ints("shape") == std::vector<int64_t>{2, 3, 2});
  }
}

TEST_CASE("transpose moves the shard with the permutation") {
  const Attrs perm{{"perm", std::vector<int64_t>{2, 0, 1}}};  // y = [x2, x0, x1]
  const std::vector<TensorMeta> x{f32({2, 3, 4})};
  CHECK(rule("transpose", x, {S(0)}, perm) == "[Shard(0)] -> [Shard(1)]");
  CHECK(rule("transpose", x, {S(1)}, perm) == "[Shard(1)] -> [Shard(2)]");
  CHECK(rule("transpose", x, {S(2)}, perm) == "[Shard(2)] -> [Shard(0)]");
  CHECK(rule("transpose", x, {R}, perm) == "[Replicate()] -> [Replicate()]");
  CHECK(rule("transpose", x, {Pmax}, perm) == "[Partial(max)] -> [Partial(max)]");
}

TEST_CASE("broadcast_to shifts the shard by the new leading dims; a broadcast dim is gathered") {
  const Attrs to{{"shape", std::vector<int64_t>{2, 3, 4}}};
  CHECK(rule("broadcast_to", {f32({3, 1})}, {S(0)}, to) == "[Shard(0)] -> [Shard(1)]");
  CHECK(rule("broadcast_to", {f32({3, 1})}, {S(1)}, to) == "[Replicate()] -> [Replicate()]");
  CHECK(rule("broadcast_to", {f32({3, 4})}, {S(1)}, to) == "[Shard(1)] -> [Shard(2)]");
  CHECK(rule("broadcast_to", {f32({3, 4})}, {R}, to) == "[Replicate()] -> [Replicate()]");
  CHECK(rule("broadcast_to", {f32({3, 4})}, {P}, to) == "[Partial(sum)] -> [Partial(sum)]");
}

TEST_CASE("broadcast_to_like is placed along the dims its reference is sharded on") {
  const std::vector<TensorMeta> bias_like{f32({4}), f32({3, 4})};
  // A bias broadcast to a row-sharded reference: the bias stays whole.
  CHECK(rule("broadcast_to_like", bias_like, {R, S(0)}) == "[Replicate(), Shard(0)] -> [Shard(0)]");
  // A sharded x with a whole reference: the reference is sliced (free), not x gathered.
  CHECK(rule("broadcast_to_like", bias_like, {S(0), R}) == "[Shard(0), Shard(1)] -> [Shard(1)]");
  CHECK(rule("broadcast_to_like", bias_like, {P, R}) == "[Partial(sum), Replicate()] -> [Partial(sum)]");
  CHECK(rule("broadcast_to_like", bias_like, {R, R}) == "[Replicate(), Replicate()] -> [Replicate()]");
  // Both sharded on different dims: gathering x (4 elements) beats moving
  // the reference's 12 between dims (6 per rank).
  CHECK(rule("broadcast_to_like", bias_like, {S(0), S(0)}) == "[Replicate(), Shard(0)] -> [Shard(0)]");
  // The reference's values are not read: a Partial one counts as whole.
  CHECK(rule("broadcast_to_like", bias_like, {R, P}) == "[Replicate(), Partial(sum)] -> [Replicate()]");
}

TEST_CASE("slice keeps a shard on a dim it does not slice") {
  const std::vector<TensorMeta> x{f32({4, 6})};
  const Attrs cols{{"starts", std::vector<int64_t>{0, 1}},
                   {"ends", std::vector<int64_t>{kToEnd, 4}},
                   {"steps", std::vector<int64_t>{1, 1}}};
  CHECK(rule("slice", x, {S(0)}, cols) == "[Shard(0)] -> [Shard(0)]");
  CHECK(rule("slice", x, {S(1)}, cols) == "[Replicate()] -> [Replicate()]");
  CHECK(rule("slice", x, {R}, cols) == "[Replicate()] -> [Replicate()]");
  CHECK(rule("slice", x, {P}, cols) == "[Partial(sum)] -> [Partial(sum)]");
  // An end written as the size is the whole dim too; a step of 2 slices it.
  const Attrs whole_rows{{"starts", std::vector<int64_t>{0, 0}},
                         {"ends", std::vector<int64_t>{4, 6}},
                         {"steps", std::vector<int64_t>{1, 2}}};
  CHECK(rule("slice", x, {S(0)}, whole_rows) == "[Shard(0)] -> [Shard(0)]");
  CHECK(rule("slice", x, {S(1)}, whole_rows) == "[Replicate()] -> [Replicate()]");
}

TEST_CASE("pad keeps a shard on an unpadded dim; Partial(sum) passes only a zero padding") {
  const std::vector<TensorMeta> x{f32({4, 6})};
  const Attrs zero{{"pads", std::vector<int64_t>{0, 0, 1, 1}}, {"value", 0.0}};
  const Attrs one{{"pads", std::vector<int64_t>{0, 0, 1, 1}}, {"value", 1.0}};
  CHECK(rule("pad", x, {S(0)}, zero) == "[Shard(0)] -> [Shard(0)]");
  CHECK(rule("pad", x, {S(1)}, zero) == "[Replicate()] -> [Replicate()]");
  CHECK(rule("pad", x, {P}, zero) == "[Partial(sum)] -> [Partial(sum)]");
  CHECK(rule("pad", x, {P}, one) == "[Replicate()] -> [Replicate()]");  // 1 + 1 on the pads
  CHECK(rule("pad", x, {Pmax}, one) == "[Partial(max)] -> [Partial(max)]");
}

TEST_CASE("concat: a shard off the axis passes, a shard on the axis is gathered") {
  const std::vector<TensorMeta> two{f32({2, 6}), f32({3, 6})};
  const Attrs axis0{{"axis", int64_t{0}}};
  CHECK(rule("concat", two, {S(1), S(1)}, axis0) == "[Shard(1), Shard(1)] -> [Shard(1)]");
  CHECK(rule("concat", two, {S(1), R}, axis0) == "[Shard(1), Shard(1)] -> [Shard(1)]");  // R sliced locally
  CHECK(rule("concat", two, {S(0), S(0)}, axis0) == "[Replicate(), Replicate()] -> [Replicate()]");
  CHECK(rule("concat", two, {S(0), R}, axis0) == "[Replicate(), Replicate()] -> [Replicate()]");
  CHECK(rule("concat", two, {R, R}, axis0) == "[Replicate(), Replicate()] -> [Replicate()]");
  CHECK(rule("concat", two, {P, P}, axis0) == "[Partial(sum), Partial(sum)] -> [Partial(sum)]");
  CHECK(rule("concat", two, {P, R}, axis0) == "[Partial(sum), Partial(sum)] -> [Partial(sum)]");
  CHECK(rule("concat", two, {Pmax, R}, axis0) == "[Replicate(), Replicate()] -> [Replicate()]");
  CHECK(rule("concat", two, {Pmax, Pmax}, axis0) == "[Partial(max), Partial(max)] -> [Partial(max)]");
  const std::vector<TensorMeta> three{f32({2, 6}), f32({2, 6}), f32({2, 6})};
  CHECK(rule("concat", three, {S(0), R, S(0)}, Attrs{{"axis", int64_t{1}}}) ==
        "[Shard(0), Shard(0), Shard(0)] -> [Shard(0)]");
}

TEST_CASE("gather (index_select): x sharded off the axis or the index sharded pass") {
  const std::vector<TensorMeta> x_index{f32({5, 4}), i64({3})};
  const Attrs axis0{{"axis", int64_t{0}}};
  CHECK(rule("gather", x_index, {S(1), R}, axis0) == "[Shard(1), Replicate()] -> [Shard(1)]");
  CHECK(rule("gather", x_index, {R, S(0)}, axis0) == "[Replicate(), Shard(0)] -> [Shard(0)]");
  CHECK(rule("gather", x_index, {R, R}, axis0) == "[Replicate(), Replicate()] -> [Replicate()]");
  CHECK(rule("gather", x_index, {P, R}, axis0) == "[Partial(sum), Replicate()] -> [Partial(sum)]");
  CHECK(rule("gather", x_index, {Pmax, S(0)}, axis0) == "[Partial(max), Replicate()] -> [Partial(max)]");
  // Both sharded on this mesh dim: x keeps its shard, the (small) index is gathered.
  CHECK(rule("gather", x_index, {S(1), S(0)}, axis0) == "[Shard(1), Replicate()] -> [Shard(1)]");
  // x sharded on the axis: moving it to dim 1 (10 elements per rank) beats gathering it (20).
  CHECK(rule("gather", x_index, {S(0), R}, axis0) == "[Shard(1), Replicate()] -> [Shard(1)]");
}

TEST_CASE("scatter_add: x and updates sharded alike off the axis, or both Partial(sum)") {
  const std::vector<TensorMeta> in{f32({5, 4}), i64({3}), f32({3, 4})};
  const Attrs axis0{{"axis", int64_t{0}}};
  CHECK(rule("scatter_add", in, {S(1), R, S(1)}, axis0) == "[Shard(1), Replicate(), Shard(1)] -> [Shard(1)]");
  CHECK(rule("scatter_add", in, {R, R, S(1)}, axis0) == "[Shard(1), Replicate(), Shard(1)] -> [Shard(1)]");
  CHECK(rule("scatter_add", in, {P, R, P}, axis0) ==
        "[Partial(sum), Replicate(), Partial(sum)] -> [Partial(sum)]");
  // A whole x joins Partial updates as coordinate 0's piece (no communication).
  CHECK(rule("scatter_add", in, {R, R, P}, axis0) ==
        "[Partial(sum), Replicate(), Partial(sum)] -> [Partial(sum)]");
  // A Partial(max) x is not summed into: it is reduced (to Replicate or, by
  // a reduce_scatter, to Shard(1): the cost model's choice), never kept.
  CHECK_FALSE(contains(rule("scatter_add", in, {Pmax, R, R}, axis0), "Partial"));
  CHECK(rule("scatter_add", in, {R, R, R}, axis0) == "[Replicate(), Replicate(), Replicate()] -> [Replicate()]");
  CHECK(rule("scatter_add", in, {R, S(0), R}, axis0) == "[Replicate(), Replicate(), Replicate()] -> [Replicate()]");
}

TEST_CASE("embedding: a row-sharded table gives Partial(sum), a column-sharded one Shard(last)") {
  const std::vector<TensorMeta> in{i64({2, 3}), f32({8, 4})};
  CHECK(rule("embedding", in, {R, S(0)}) == "[Replicate(), Shard(0)] -> [Partial(sum)]");
  CHECK(rule("embedding", in, {S(0), S(0)}) == "[Replicate(), Shard(0)] -> [Partial(sum)]");
  CHECK(rule("embedding", in, {R, S(1)}) == "[Replicate(), Shard(1)] -> [Shard(2)]");
  CHECK(rule("embedding", in, {S(1), S(1)}) == "[Replicate(), Shard(1)] -> [Shard(2)]");
  CHECK(rule("embedding", in, {S(0), R}) == "[Shard(0), Replicate()] -> [Shard(0)]");
  CHECK(rule("embedding", in, {S(1), R}) == "[Shard(1), Replicate()] -> [Shard(1)]");
  CHECK(rule("embedding", in, {R, R}) == "[Replicate(), Replicate()] -> [Replicate()]");
  CHECK(rule("embedding", in, {S(0), P}) == "[Replicate(), Partial(sum)] -> [Partial(sum)]");
}

TEST_CASE("embedding_grad comes out placed like a sharded table, else Partial(sum) over sharded ids") {
  const std::vector<TensorMeta> in{i64({2, 3}), f32({2, 3, 4}), f32({8, 4})};
  CHECK(rule("embedding_grad", in, {R, R, S(0)}) == "[Replicate(), Replicate(), Shard(0)] -> [Shard(0)]");
  CHECK(rule("embedding_grad", in, {R, P, S(0)}) == "[Replicate(), Replicate(), Shard(0)] -> [Shard(0)]");
  CHECK(rule("embedding_grad", in, {R, S(2), S(1)}) == "[Replicate(), Shard(2), Shard(1)] -> [Shard(1)]");
  CHECK(rule("embedding_grad", in, {R, S(2), R}) == "[Replicate(), Shard(2), Shard(1)] -> [Shard(1)]");
  CHECK(rule("embedding_grad", in, {S(0), S(0), R}) ==
        "[Shard(0), Shard(0), Replicate()] -> [Partial(sum)]");
  CHECK(rule("embedding_grad", in, {S(1), R, R}) == "[Shard(1), Shard(1), Replicate()] -> [Partial(sum)]");
  CHECK(rule("embedding_grad", in, {R, S(0), R}) == "[Shard(0), Shard(0), Replicate()] -> [Partial(sum)]");
  CHECK(rule("embedding_grad", in, {R, P, R}) == "[Replicate(), Partial(sum), Replicate()] -> [Partial(sum)]");
  CHECK(rule("embedding_grad", in, {R, R, R}) == "[Replicate(), Replicate(), Replicate()] -> [Replicate()]");
}

TEST_CASE("a row-sharded embedding looks up from its piece's row offset") {
  for (const char* name : {"embedding", "embedding_grad"}) {
    INFO(name);
    const oar::OpDef& def = op(name);
    const bool grad = std::string(name) == "embedding_grad";
    const Attrs attrs = oar::with_defaults(def, {});
    std::vector<TensorMeta> global_in{i64({2, 3}), f32({8, 4})}, local_in{i64({2, 3}), f32({4, 4})};
    std::vector<std::vector<int64_t>> offsets{{0, 0}, {4, 0}};
    if (grad) {
      global_in.insert(global_in.begin() + 1, f32({2, 3, 4}));
      local_in.insert(local_in.begin() + 1, f32({2, 3, 4}));
      offsets.insert(offsets.begin() + 1, {0, 0, 0});
    }
    std::vector<TensorMeta> out{grad ? f32({4, 4}) : f32({2, 3, 4})};
    auto localize = [&](std::span<const TensorMeta> local, std::span<const std::vector<int64_t>> offs) {
      return def.localize(oar::LocalizeArgs{.op = def, .attrs = attrs, .local_inputs = local, .local_outputs = out,
                                            .global_outputs = out, .input_offsets = offs, .global_inputs = global_in});
    };
    CHECK(localize(local_in, offsets).get_int("start_index") == 4);     // rank 1 of 2: rows [4, 8)
    CHECK(localize(global_in, offsets).get_int("start_index") == -1);   // the whole table: the dense op
    CHECK(contains(error_of([&] { localize(local_in, {}); }), std::string(name) + ": a row-sharded weight needs"));
  }
}

TEST_CASE("the masked lookup gives zero rows outside the piece; its gradient scatters only inside") {
  const oar::Device cpu{"cpu", 0};
  // Rows 2..3 of a 4-row table, as rank 1 of 2 holds them.
  auto piece = oar::Tensor::from_vector(std::vector<float>{20, 21, 30, 31}, {2, 2}, cpu);
  auto ids = oar::Tensor::from_vector(std::vector<int64_t>{3, 0, 2}, {3}, cpu);
  std::array<oar::Tensor, 2> in{ids, piece};
  auto out = oar::apply1(op("embedding"), in, Attrs{{"start_index", int64_t{2}}});
  CHECK(out.to_vector<float>() == std::vector<float>{30, 31, 0, 0, 20, 21});
  auto g = oar::Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {3, 2}, cpu);
  std::array<oar::Tensor, 3> grad_in{ids, g, piece};
  auto dw = oar::apply1(op("embedding_grad"), grad_in, Attrs{{"start_index", int64_t{2}}});
  CHECK(dw.to_vector<float>() == std::vector<float>{5, 6, 1, 2});  // id 2 -> row 0, id 3 -> row 1, id 0 dropped
  // The dense op (start_index -1) and its gradient, for comparison.
  auto table = oar::Tensor::from_vector(std::vector<float>{0, 1, 10, 11, 20, 21, 30, 31}, {4, 2}, cpu);
  std::array<oar::Tensor, 2> dense_in{ids, table};
  CHECK(oar::apply1(op("embedding"), dense_in).to_vector<float>() == std::vector<float>{30, 31, 0, 1, 20, 21});
  std::array<oar::Tensor, 3> dense_grad_in{ids, g, table};
  CHECK(oar::apply1(op("embedding_grad"), dense_grad_in).to_vector<float>() ==
        std::vector<float>{3, 4, 0, 0, 5, 6, 1, 2});
}

TEST_CASE("check_index keeps the index's placement") {
  const Attrs attrs{{"size", int64_t{8}}, {"op", std::string("embedding")}};
  CHECK(rule("check_index", {i64({2, 3})}, {S(1)}, attrs) == "[Shard(1)] -> [Shard(1)]");
  CHECK(rule("check_index", {i64({2, 3})}, {R}, attrs) == "[Replicate()] -> [Replicate()]");
}
