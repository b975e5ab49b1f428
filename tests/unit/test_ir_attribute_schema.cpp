// Attribute names are checked against each op's schema (issue 19, item 10;
// Note [Attribute schema] in core/src/ops/op_registry.cpp).
#include <nlohmann/json.hpp>

#include "oar/ir/serialize.h"
#include "oar/ir/trace.h"
#include "oar/ir/verifier.h"
#include "test_util.h"

using oar::Device;
using oar::Tensor;
using oar_test::error_of;
using Json = nlohmann::json;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// conv2d(x, w) -> sum as a program.
oar::ir::Program conv_program() {
  Tensor w = oar::ones({2, 1, 3, 3}, oar::DType::f32, Device{"cpu", 0});
  auto fn = [w](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{oar::sum(oar::conv2d(in[0], w, Tensor(), {1}, {1}, {1}, 1))};
  };
  return oar::ir::trace(fn, {{{1, 1, 4, 4}, oar::DType::f32, "x"}}, {}, Device{"cpu", 0}).program;
}

// The program's constants by name (from_json wants their tensors).
oar::ir::ParamMap constants_of(const oar::ir::Program& p) {
  oar::ir::ParamMap out;
  for (const oar::ir::Value* c : p.constants()) out[c->name()] = p.constant_value(c);
  return out;
}

// Index of the first op named `name` in the JSON program.
size_t op_index(const Json& j, const std::string& name) {
  for (size_t i = 0; i < j["ops"].size(); ++i) {
    if (j["ops"][i]["op"] == name) return i;
  }
  FAIL("no op " << name);
  return 0;
}

}  // namespace

TEST_CASE("every op of a traced program passes the attribute schema") {
  oar::ir::Program p = conv_program();
  CHECK_NOTHROW(oar::ir::verify(p));
}

TEST_CASE("a program op with an unknown attribute is refused, naming the op and the attribute") {
  oar::ir::Program p = conv_program();
  Json j = Json::parse(oar::ir::to_json(p));
  const size_t conv = op_index(j, "conv2d");
  j["ops"][conv]["attrs"]["bogus"] = Json{{"int", 1}};
  const oar::ir::ParamMap constants = constants_of(p);
  CHECK_NOTHROW(oar::ir::from_json(oar::ir::to_json(p), constants, "model.json"));
  std::string e = error_of([&] { oar::ir::from_json(j.dump(), constants, "model.json"); });
  INFO("error: " << e);
  CHECK(contains(e, "model.json"));
  CHECK(contains(e, "(conv2d) has an unknown attribute 'bogus'; conv2d takes only strides, paddings, dilations, groups"));

  // A misspelt name is caught the same way; an op without attributes says so.
  j = Json::parse(oar::ir::to_json(p));
  Json attrs = j["ops"][conv]["attrs"];
  attrs["stride"] = attrs["strides"];
  attrs.erase("strides");
  j["ops"][conv]["attrs"] = attrs;
  CHECK(contains(error_of([&] { oar::ir::from_json(j.dump(), constants, "model.json"); }),
                 "unknown attribute 'stride'"));
}

TEST_CASE("ops without attributes refuse any") {
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{oar::tanh(in[0])}; };
  oar::ir::Program p = oar::ir::trace(fn, {{{3}, oar::DType::f32, "x"}}, {}, Device{"cpu", 0}).program;
  Json j = Json::parse(oar::ir::to_json(p));
  j["ops"][op_index(j, "tanh")]["attrs"]["axis"] = Json{{"int", 0}};
  CHECK(contains(error_of([&] { oar::ir::from_json(j.dump(), {}, "model.json"); }),
                 "(tanh) has an unknown attribute 'axis'; tanh takes no attributes"));
}
