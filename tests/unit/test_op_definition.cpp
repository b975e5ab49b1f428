// What an OpDef declares besides its rules (Note [One op definition] in
// core/src/ops/op_registry.cpp): the attribute schema, checked on eager
// calls and filled with defaults; the dtype promotion frontends use; the
// trivial SPMD rule; docs for every op and attribute.
#include <nlohmann/json.hpp>

#include "oar/ir/serialize.h"
#include "oar/ir/trace.h"
#include "oar/ir/verifier.h"
#include "test_util.h"

using oar::Attrs;
using oar::Device;
using oar::DType;
using oar::ScalarKind;
using oar::Tensor;
using oar_test::error_of;
using Json = nlohmann::json;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const oar::OpDef& op(const char* name) { return oar::OpRegistry::instance().get(name); }

// sum(x) over axis 0 with `attrs`, eagerly on the cpu.
Tensor sum_with(const Attrs& attrs) {
  std::array<Tensor, 1> in{Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2}, Device{"cpu", 0})};
  return oar::apply1(op("sum"), in, attrs);
}

DType promote(const char* name, std::vector<DType> dtypes, std::vector<ScalarKind> kinds,
              DType default_float = DType::f32) {
  return oar::promote(op(name), dtypes, kinds, default_float);
}

}  // namespace

TEST_CASE("an eager call with an unknown, mistyped or missing attribute is an error naming the op and the attribute") {
  const std::vector<int64_t> axis0{0};
  CHECK(sum_with(Attrs{{"axes", axis0}, {"keepdim", false}}).to_vector<float>() == std::vector<float>{4, 6});
  CHECK(error_of([&] { sum_with(Attrs{{"axes", axis0}, {"keepdim", false}, {"bogus", int64_t{1}}}); }) ==
        "sum: the call has an unknown attribute 'bogus'; sum takes only axes, keepdim");
  CHECK(error_of([&] { sum_with(Attrs{{"axes", 1.5}, {"keepdim", false}}); }) ==
        "sum: the call has attribute 'axes' of kind float but sum declares it int[]");
  CHECK(contains(error_of([&] { sum_with(Attrs{{"keepdim", true}}); }),
                 "sum: the call is missing the required attribute 'axes' (int[]: "));
  // What Attrs' getters convert is accepted: a bool where an int is declared.
  std::array<Tensor, 1> x{Tensor::from_vector(std::vector<float>{1.5f}, {1}, Device{"cpu", 0})};
  CHECK(oar::apply1(op("cast"), x, Attrs{{"dtype", int64_t{7}}}).dtype() == DType::i64);
  CHECK(contains(error_of([&] { oar::apply1(op("cast"), x, Attrs{{"dtype", std::string("int64")}}); }),
                 "cast: the call has attribute 'dtype' of kind string but cast declares it int"));
}

TEST_CASE("defaults fill missing optional attributes, in schema order") {
  Attrs filled = oar::with_defaults(op("var"), Attrs{{"axes", std::vector<int64_t>{1}}});
  REQUIRE(filled.items().size() == 3);
  CHECK(filled.items()[1].first == "keepdim");
  CHECK(filled.get_bool("keepdim") == false);
  CHECK(filled.get_bool("unbiased") == true);
  Attrs conv = oar::with_defaults(op("conv2d"), Attrs{{"strides", std::vector<int64_t>{1, 1}},
                                                      {"paddings", std::vector<int64_t>{0, 0}}});
  CHECK(conv.get_ints("dilations") == std::vector<int64_t>{1, 1});
  CHECK(conv.get_int("groups") == 1);
  // A given value is kept.
  CHECK(oar::with_defaults(op("var"), Attrs{{"axes", std::vector<int64_t>{}}, {"unbiased", false}})
            .get_bool("unbiased") == false);
  CHECK_THROWS(oar::with_defaults(op("var"), Attrs{{"unbiased", false}}));  // axes is required
}

TEST_CASE("a program op missing an optional attribute verifies with its default; a mistyped one is refused") {
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{oar::sum(in[0], {1}, false)}; };
  oar::ir::Program p = oar::ir::trace(fn, {{{2, 3}, DType::f32, "x"}}, {}, Device{"cpu", 0}).program;
  Json j = Json::parse(oar::ir::to_json(p));
  size_t sum = 0;
  while (j["ops"][sum]["op"] != "sum") ++sum;
  j["ops"][sum]["attrs"].erase("keepdim");  // the default, false, gives the stored result type [2]
  CHECK_NOTHROW(oar::ir::from_json(j.dump(), {}, "model.json"));
  j["ops"][sum]["attrs"]["axes"] = Json{{"ints", Json::array({0})}};  // now the stored type [2] is wrong: [3]
  std::string e = error_of([&] { oar::ir::from_json(j.dump(), {}, "model.json"); });
  INFO(e);
  CHECK(contains(e, "model.json"));
  CHECK_FALSE(contains(e, "attribute"));  // a type mismatch, not a schema error

  j = Json::parse(oar::ir::to_json(p));
  j["ops"][sum]["attrs"]["keepdim"] = Json{{"int", 1}};  // an int where a bool is declared
  CHECK(contains(error_of([&] { oar::ir::from_json(j.dump(), {}, "model.json"); }),
                 "(sum) has attribute 'keepdim' of kind int but sum declares it bool"));
  j = Json::parse(oar::ir::to_json(p));
  j["ops"][sum]["attrs"].erase("axes");
  CHECK(contains(error_of([&] { oar::ir::from_json(j.dump(), {}, "model.json"); }),
                 "(sum) is missing the required attribute 'axes'"));
}

TEST_CASE("promotion: tensors by promote_types, scalars adapt, Paddle's widenings, true division") {
  const ScalarKind T = ScalarKind::tensor, I = ScalarKind::integer, F = ScalarKind::floating, B = ScalarKind::boolean;
  // Tensors with tensors.
  CHECK(promote("add", {DType::i32, DType::i64}, {T, T}) == DType::i64);
  CHECK(promote("add", {DType::f16, DType::bf16}, {T, T}) == DType::f32);
  // A scalar takes the tensor's dtype ...
  CHECK(promote("mul", {DType::f16, DType::boolean}, {T, F}) == DType::f16);
  CHECK(promote("add", {DType::i32, DType::boolean}, {T, I}) == DType::i32);
  CHECK(promote("add", {DType::i32, DType::boolean}, {T, B}) == DType::i32);
  // ... except a float scalar with an integer or bool tensor (the default float) ...
  CHECK(promote("add", {DType::i64, DType::boolean}, {T, F}) == DType::f32);
  CHECK(promote("sub", {DType::boolean, DType::boolean}, {F, T}, DType::f64) == DType::f64);
  // ... and an integer scalar with a bool tensor (int64).
  CHECK(promote("add", {DType::boolean, DType::boolean}, {T, I}) == DType::i64);
  CHECK(promote("greater", {DType::boolean, DType::boolean}, {T, I}) == DType::i64);
  // div of integers is true division: computed in the default float dtype.
  CHECK(promote("div", {DType::i32, DType::i32}, {T, T}) == DType::f32);
  CHECK(promote("div", {DType::i32, DType::boolean}, {T, I}, DType::f64) == DType::f64);
  CHECK(promote("div", {DType::f16, DType::boolean}, {T, I}) == DType::f16);
  CHECK(promote("mul", {DType::i32, DType::i32}, {T, T}) == DType::i32);
  // Unary: float-only ops compute integers in float; abs keeps them; floor refuses them (meta rule).
  CHECK(promote("exp", {DType::i64}, {T}) == DType::f32);
  CHECK(promote("expm1", {DType::i32}, {T}, DType::f64) == DType::f64);
  CHECK(promote("abs", {DType::i64}, {T}) == DType::i64);
  CHECK(promote("floor", {DType::i64}, {T}) == DType::i64);
  CHECK(contains(error_of([] { promote("add", {DType::f32}, {T, T}); }), "add: promote got 1 dtypes but 2"));
}

TEST_CASE("the SPMD rule of an elementwise unary op keeps the placement; partial values need a reduction") {
  using oar::Placement;
  const oar::OpDef& neg = op("neg");
  REQUIRE(static_cast<bool>(neg.spmd));
  std::vector<oar::TensorMeta> metas{{oar::DType::f32, {4, 6}}};
  auto rule = [&](const oar::OpDef& def, Placement p) {
    std::vector<Placement> in{p};
    Attrs attrs;
    return def.spmd(oar::SpmdArgs{def, metas, in, attrs, 2});
  };
  auto out = rule(neg, Placement::Shard(1));
  CHECK(out.inputs == std::vector<Placement>{Placement::Shard(1)});
  CHECK(out.outputs == std::vector<Placement>{Placement::Shard(1)});
  CHECK(rule(op("expm1"), Placement::Replicate()).outputs == std::vector<Placement>{Placement::Replicate()});
  auto partial = rule(op("exp"), Placement::Partial(oar::ReduceKind::sum));
  CHECK(partial.inputs == std::vector<Placement>{Placement::Replicate()});  // reduced first
  CHECK(partial.outputs == std::vector<Placement>{Placement::Replicate()});
  CHECK(Placement::Shard(0).str() == "Shard(0)");
  CHECK(Placement::Partial(oar::ReduceKind::max).str() == "Partial(max)");
}

TEST_CASE("every op and every attribute has a doc; every test domain is a non-empty range") {
  for (const oar::OpDef* def : oar::OpRegistry::instance().all()) {
    INFO(def->name);
    CHECK_FALSE(def->doc.empty());
    for (const oar::AttrSpec& a : def->attrs) {
      INFO(a.name);
      CHECK_FALSE(a.doc.empty());
      if (a.default_value) CHECK(oar::attr_kind_of(*a.default_value) == a.kind);
    }
    if (def->domain) CHECK(def->domain->low < def->domain->high);
  }
  CHECK(op("log").domain->low > 0);  // log is drawn where it is defined
}

TEST_CASE("the op table of docs/kernels.md has one row per op, with the schema") {
  std::string table = oar::op_table_markdown();
  CHECK(contains(table, "| expm1 | primitive | 1 | float dtypes | — | y = e^x - 1, exact near 0 |\n"));
  CHECK(contains(table, "`keepdim` bool = false: keep each reduced axis as a dim of 1"));
  size_t rows = 0;
  for (char c : table) rows += c == '\n';
  CHECK(rows == oar::OpRegistry::instance().size() + 2);  // header and rule
}
