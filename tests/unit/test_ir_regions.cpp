// The IR's structure: use lists kept by every edit (Note [Use lists]),
// blocks as lists with parents and O(1) insertion (Note [Blocks as
// intrusive lists]), and regions (Note [Regions]): scoping checked by the
// verifier, carried by JSON, the printer and clone, respected by passes.
// Also the invalid programs of tests/data/ir/invalid, each with its error.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "oar/ir/pass.h"
#include "oar/ir/printer.h"
#include "oar/ir/serialize.h"
#include "oar/ir/verifier.h"
#include "test_util.h"

namespace fs = std::filesystem;
using oar::Attrs;
using oar::DType;
using oar::OpDef;
using oar::OpRegistry;
using oar::Tensor;
using oar::TensorMeta;
using oar::ir::Block;
using oar::ir::Operation;
using oar::ir::Program;
using oar::ir::TensorType;
using oar::ir::Use;
using oar::ir::Value;
using oar_test::error_of;

namespace {

// A test-only op that takes regions: any operands, one result typed like
// its first operand. No real op has regions yet (control flow comes later).
std::vector<TensorMeta> like_first(const OpDef& op, std::span<const TensorMeta> in, const Attrs&) {
  OAR_CHECK_ARG(!in.empty(), op.name + ": needs an operand");
  return {in[0]};
}
const OpDef& region_op() {
  static const OpDef& def =
      OpRegistry::instance().add({.name = "test_ir.region", .num_inputs = -1, .meta = like_first});
  return def;
}
// Registered before any JSON names it.
const bool registered = (region_op(), true);

const OpDef& def(const char* name) { return OpRegistry::instance().get(name); }
TensorType f32(oar::Shape dims) { return {DType::f32, std::move(dims)}; }

// Appends `name` to `block` with result types from the op's meta rule.
Operation* emit_op(Program& p, Block& block, const OpDef& d, std::vector<Value*> operands,
                   const Attrs& attrs = {}) {
  std::vector<TensorMeta> in;
  for (const Value* v : operands) in.push_back({v->type().dtype, v->type().dims});
  std::vector<TensorType> types;
  for (const TensorMeta& m : d.meta(d, in, attrs)) types.push_back({m.dtype, m.shape});
  return p.append(block, d, std::move(operands), attrs, types);
}
Value* emit(Program& p, const char* name, std::vector<Value*> operands) {
  return emit_op(p, p.block(), def(name), std::move(operands))->result(0);
}
Value* emit_in(Program& p, Block& block, const char* name, std::vector<Value*> operands) {
  return emit_op(p, block, def(name), std::move(operands))->result(0);
}

// The users of `v` as (op name, operand index), sorted.
std::vector<std::pair<std::string, uint32_t>> users_of(const Value* v) {
  std::vector<std::pair<std::string, uint32_t>> out;
  for (const Use& u : v->uses()) out.emplace_back(u.user->name(), u.operand);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> names(const Block& block) {
  std::vector<std::string> out;
  for (const auto& op : block.ops()) out.push_back(op->name());
  return out;
}

// input x; %r = region(x) { %a = exp(x); %b = add(%a, x) }; %s = neg(%r)
struct RegionProgram {
  Program p;
  Value* x = nullptr;
  Operation* region_op = nullptr;
  Value* a = nullptr;
  Value* b = nullptr;
  Value* s = nullptr;
};
RegionProgram region_program() {
  RegionProgram r;
  r.x = r.p.add_input("x", f32({2, 3}));
  r.region_op = emit_op(r.p, r.p.block(), region_op(), {r.x});
  Block& body = r.region_op->add_region();
  r.a = emit_in(r.p, body, "exp", {r.x});
  r.b = emit_in(r.p, body, "add", {r.a, r.x});
  r.s = emit(r.p, "neg", {r.region_op->result()});
  r.p.add_output(r.s, "s");
  return r;
}

}  // namespace

TEST_CASE("use lists follow append, set_operand, replace_all_uses, erase and the interface") {
  Program p;
  Value* x = p.add_input("x", f32({3}));
  Value* y = p.add_input("y", f32({3}));
  Operation* add = emit_op(p, p.block(), def("add"), {x, x});
  Operation* mul = emit_op(p, p.block(), def("mul"), {add->result(), y});
  CHECK(users_of(x) == std::vector<std::pair<std::string, uint32_t>>{{"add", 0}, {"add", 1}});
  CHECK(users_of(add->result()) == std::vector<std::pair<std::string, uint32_t>>{{"mul", 0}});
  CHECK_FALSE(mul->result()->has_uses());

  p.add_output(mul->result(), "out");
  CHECK(mul->result()->interface_uses() == 1);
  CHECK(mul->result()->has_uses());

  add->set_operand(0, y);  // x keeps one use (operand 1), y gains one
  CHECK(users_of(x) == std::vector<std::pair<std::string, uint32_t>>{{"add", 1}});
  CHECK(users_of(y) == std::vector<std::pair<std::string, uint32_t>>{{"add", 0}, {"mul", 1}});
  oar::ir::verify(p);

  p.replace_all_uses(y, x);
  CHECK(y->uses().empty());
  CHECK(users_of(x) ==
        std::vector<std::pair<std::string, uint32_t>>{{"add", 0}, {"add", 1}, {"mul", 1}});
  CHECK(add->operand(0) == x);
  CHECK(mul->operand(1) == x);

  // Outputs move too, and their count with them.
  Value* n = emit(p, "neg", {x});
  p.replace_all_uses(mul->result(), n);
  CHECK(p.outputs()[0].value == n);
  CHECK(n->interface_uses() == 1);
  CHECK(mul->result()->interface_uses() == 0);
  oar::ir::verify(p);

  // Erasing mul drops its uses of add's result and of x.
  p.block().erase(mul);
  CHECK(add->result()->uses().empty());
  CHECK(users_of(x) ==
        std::vector<std::pair<std::string, uint32_t>>{{"add", 0}, {"add", 1}, {"neg", 0}});
  p.clear_outputs();
  CHECK(n->interface_uses() == 0);
  oar::ir::verify(p);
}

TEST_CASE("blocks insert before any operation, erase, move ranges and index on demand") {
  Program p;
  Value* x = p.add_input("x", f32({3}));
  Operation* e = emit_op(p, p.block(), def("exp"), {x});
  Operation* n = emit_op(p, p.block(), def("neg"), {x});
  CHECK(p.block().op(1).name() == "neg");  // the index, built by this call
  Operation* a = p.insert_before(n, def("abs"), {x}, {}, {f32({3})});
  CHECK(names(p.block()) == std::vector<std::string>{"exp", "abs", "neg"});
  CHECK(p.block().size() == 3);
  CHECK(&p.block().op(1) == a);  // the index was rebuilt after the insertion
  CHECK(p.block().index_of(n) == 2);
  CHECK(a->prev() == e);
  CHECK(a->next() == n);
  CHECK(a->block() == &p.block());
  CHECK(a->parent_op() == nullptr);
  p.insert(0, def("sin"), {x}, {}, {f32({3})});
  CHECK(names(p.block()) == std::vector<std::string>{"sin", "exp", "abs", "neg"});

  p.block().move_before(e, a, nullptr);  // abs, neg go before exp
  CHECK(names(p.block()) == std::vector<std::string>{"sin", "abs", "neg", "exp"});
  CHECK(p.block().back() == e);
  p.block().erase_if([](const Operation& op) { return op.name() == "abs" || op.name() == "sin"; });
  CHECK(names(p.block()) == std::vector<std::string>{"neg", "exp"});
  CHECK(p.block().front() == n);
  CHECK(n->prev() == nullptr);
  // Reverse iteration from end().
  auto it = p.block().end();
  --it;
  CHECK(it->name() == "exp");
  CHECK(oar_test::error_of([&] {
          p.block().op(2);
        }).find("block: operation 2 asked of a block of 2") == 0);

  // A moved program's operations know their new block.
  Program q = std::move(p);
  for (const auto& op : q.block().ops()) CHECK(op->block() == &q.block());
  Program r;
  r = std::move(q);
  for (const auto& op : r.block().ops()) CHECK(op->block() == &r.block());
  oar::ir::verify(r);
}

TEST_CASE("the verifier checks the use lists against the operations") {
  Program p;
  Value* x = p.add_input("x", f32({3}));
  Operation* dead = emit_op(p, p.block(), def("exp"), {x});
  p.add_output(emit(p, "neg", {x}), "out");
  oar::ir::verify(p);
  // Unlinking keeps the operation's uses: x now lists a use no listed
  // operation has.
  std::unique_ptr<Operation> held = p.block().remove(dead);
  CHECK(error_of([&] { oar::ir::verify(p); }) ==
        "verify: the use lists hold 2 uses but the operations have 1 operands");
  p.block().insert(p.block().front(), std::move(held));
  oar::ir::verify(p);
}

TEST_CASE("regions: parents, visibility inside, and the verifier's scoping rules") {
  RegionProgram r = region_program();
  Block& body = r.region_op->region(0);
  CHECK(r.region_op->num_regions() == 1);
  CHECK(body.parent_op() == r.region_op);
  CHECK(body.front()->parent_op() == r.region_op);
  CHECK(r.region_op->is_ancestor_of(body.back()));
  CHECK_FALSE(body.back()->is_ancestor_of(r.region_op));
  CHECK(users_of(r.x) == std::vector<std::pair<std::string, uint32_t>>{
                             {"add", 1}, {"exp", 0}, {"test_ir.region", 0}});
  oar::ir::verify(r.p);

  SUBCASE("a value of a region used outside it") {
    Value* leaked = emit(r.p, "neg", {r.b});
    r.p.add_output(leaked, "leaked");
    CHECK(error_of([&] { oar::ir::verify(r.p); }) ==
          "verify: operation 2 (neg) uses operand 0, a value defined in region 0 of operation 0 "
          "(test_ir.region), "
          "which is visible only inside that region");
  }
  SUBCASE("an output naming a value of a region") {
    r.p.add_output(r.a, "inner");
    CHECK(error_of([&] { oar::ir::verify(r.p); }) ==
          "verify: output 'inner' refers to a value defined in region 0 of operation 0 "
          "(test_ir.region), "
          "which is visible only inside that region");
  }
  SUBCASE("a region using its parent's result") {
    emit_in(r.p, body, "neg", {r.region_op->result()});
    CHECK(error_of([&] { oar::ir::verify(r.p); }) ==
          "verify: operation 2 (neg) in region 0 of operation 0 (test_ir.region) uses operand 0 "
          "before it is defined");
  }
  SUBCASE("a region using a value of a sibling region") {
    Block& second = r.region_op->add_region();
    emit_in(r.p, second, "neg", {r.a});
    CHECK(error_of([&] { oar::ir::verify(r.p); }) ==
          "verify: operation 0 (neg) in region 1 of operation 0 (test_ir.region) uses operand 0, a "
          "value defined in "
          "region 0 of operation 0 (test_ir.region), which is visible only inside that region");
  }
  SUBCASE("a region using a value defined after its parent") {
    emit_in(r.p, body, "abs", {r.s});
    CHECK(error_of([&] { oar::ir::verify(r.p); }) ==
          "verify: operation 2 (abs) in region 0 of operation 0 (test_ir.region) uses operand 0 "
          "before it is defined");
  }
  SUBCASE("a nested region sees every enclosing scope") {
    Operation* inner = emit_op(r.p, body, region_op(), {r.a});
    Block& nested = inner->add_region();
    emit_in(r.p, nested, "add", {r.x, r.b});  // the outer input and the outer region's value
    oar::ir::verify(r.p);
    Value* deep = emit_in(r.p, nested, "neg", {r.x});
    emit_in(r.p, body, "abs", {deep});
    CHECK(error_of([&] { oar::ir::verify(r.p); }) ==
          "verify: operation 3 (abs) in region 0 of operation 0 (test_ir.region) uses operand 0, a "
          "value defined in "
          "region 0 of operation 2 (test_ir.region) in region 0 of operation 0 (test_ir.region), "
          "which is visible "
          "only inside that region");
  }
  SUBCASE("a region's operation with a wrong result type names its place") {
    r.p.append(body, def("exp"), {r.x}, {}, {f32({3})});
    CHECK(error_of([&] { oar::ir::verify(r.p); }) ==
          "verify: operation 2 (exp) in region 0 of operation 0 (test_ir.region) result 0 has type "
          "f32[3] but the "
          "op gives f32[2, 3]");
  }
  SUBCASE("a region's operation with an unknown attribute names its place") {
    r.p.append(body, def("exp"), {r.x}, Attrs{{"bogus", int64_t{1}}}, {f32({2, 3})});
    CHECK(error_of([&] { oar::ir::verify(r.p); })
              .starts_with("verify: operation 2 (exp) in region 0 of operation 0 (test_ir.region) "
                           "has an unknown attribute 'bogus'"));
  }
}

TEST_CASE("regions print indented, round-trip through JSON and clone") {
  RegionProgram r = region_program();
  const std::string text = oar::ir::to_string(r.p);
  CHECK(text ==
        "program {\n"
        "  input %x: f32[2, 3]\n"
        "  %0: f32[2, 3] = test_ir.region(%x)\n"
        "    region {\n"
        "      %1: f32[2, 3] = exp(%x)\n"
        "      %2: f32[2, 3] = add(%1, %x)\n"
        "    }\n"
        "  %3: f32[2, 3] = neg(%0)\n"
        "  output s: %3\n"
        "}\n");
  const std::string json = oar::ir::to_json(r.p, -1);
  CHECK(json.find(
            R"("regions":[{"ops":[{"op":"exp","operands":[0],"attrs":{},"results":[{"id":2,)") !=
        std::string::npos);
  Program back = oar::ir::from_json(json, {});
  CHECK(oar::ir::to_json(back, -1) == json);
  CHECK(oar::ir::to_string(back) == text);
  const Operation& op = *back.block().front();
  REQUIRE(op.num_regions() == 1);
  CHECK(op.region(0).parent_op() == &op);
  CHECK(op.region(0).size() == 2);

  Program copy = r.p.clone();
  CHECK(oar::ir::to_string(copy) == text);
  oar::ir::verify(copy);
  CHECK(copy.block().front()->region(0).front()->operand(0) == copy.inputs()[0]);

  // Files without "regions" (every file before them) still load: see the
  // other serialization tests; an empty list of regions is accepted too.
  std::string empty_regions = oar::ir::to_json(Program(), -1);
  CHECK(oar::ir::to_json(oar::ir::from_json(empty_regions, {}), -1) == empty_regions);
}

TEST_CASE("from_json refuses a value used outside the region defining it") {
  RegionProgram r = region_program();
  std::string json = oar::ir::to_json(r.p, -1);
  // neg reads %0 (the region op's result, id 1); make it read %2 (exp, in the region).
  const std::string from = R"("op":"neg","operands":[1])";
  REQUIRE(json.find(from) != std::string::npos);
  json.replace(json.find(from), from.size(), R"("op":"neg","operands":[2])");
  CHECK(error_of([&] { oar::ir::from_json(json, {}, "prog.json"); }) ==
        "prog.json: operation 1 (neg) operand 0 refers to value 2, which is defined in region 0 of "
        "operation 0 "
        "(test_ir.region) and visible only inside it");
}

TEST_CASE("passes see through regions: uses inside keep values alive and follow replacements") {
  RegionProgram r = region_program();
  Value* y = r.p.add_input("y", f32({2, 3}));
  Value* outer = emit(r.p, "abs", {y});  // used only inside the region below
  Operation* second = emit_op(r.p, r.p.block(), region_op(), {r.x});
  Block& body = second->add_region();
  Operation* user = emit_op(r.p, body, def("add"), {outer, outer});
  r.p.add_output(second->result(), "second");
  Value* dup = emit(r.p, "abs", {y});  // CSE merges it into `outer`
  r.p.add_output(dup, "dup");
  oar::ir::verify(r.p);

  CHECK(oar::ir::make_cse_pass()->run(r.p));
  CHECK(r.p.outputs()[2].value == outer);
  CHECK(oar::ir::make_dce_pass()->run(r.p) ==
        false);  // everything is used (abs through the region)
  CHECK(names(r.p.block()) ==
        std::vector<std::string>{"test_ir.region", "neg", "abs", "test_ir.region"});

  // replace_all_uses rewrites the uses inside the region too.
  r.p.replace_all_uses(outer, y);
  CHECK(user->operand(0) == y);
  CHECK(user->operand(1) == y);
  r.p.clear_outputs();
  r.p.add_output(second->result(), "second");
  CHECK(oar::ir::make_dce_pass()->run(
      r.p));  // abs and the first region op (with its region) are dead now
  CHECK(names(r.p.block()) == std::vector<std::string>{"test_ir.region"});
  CHECK(users_of(r.x) == std::vector<std::pair<std::string, uint32_t>>{{"test_ir.region", 0}});
  oar::ir::verify(r.p);
}

TEST_CASE("every program in tests/data/ir/invalid is refused with its expected error") {
  const fs::path dir = fs::path(OAR_TEST_DATA_DIR) / "ir" / "invalid";
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    fs::path expected = entry.path();
    expected.replace_extension(".expected.txt");
    std::ifstream in_json(entry.path()), in_expected(expected);
    REQUIRE_MESSAGE(in_expected.good(), (expected.string() + " is missing"));
    std::stringstream json, want;
    json << in_json.rdbuf();
    want << in_expected.rdbuf();
    std::string message = want.str();
    while (!message.empty() && message.back() == '\n') message.pop_back();
    INFO(entry.path().filename().string());
    CHECK(error_of([&] { oar::ir::from_json(json.str(), {}, entry.path().filename().string()); }) ==
          message);
    ++checked;
  }
  CHECK(checked >= 8);
}
