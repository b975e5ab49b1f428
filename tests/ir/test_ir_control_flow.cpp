// Control flow in the IR (Note [Control-flow ops] in control_flow.h):
// cond and while built by hand, accepted and rejected by the verifier,
// printed, carried by JSON (region arguments: version 2), run by the
// executor and the interpreter against hand-computed values, planned
// (captured values live until the op), folded, eliminated, and run from a
// saved file by oar-run.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "oar/ir/control_flow.h"
#include "oar/ir/executor.h"
#include "oar/ir/interpreter.h"
#include "oar/ir/pass.h"
#include "oar/ir/printer.h"
#include "oar/ir/safetensors.h"
#include "oar/ir/serialize.h"
#include "oar/ir/shape_inference.h"
#include "oar/ir/verifier.h"
#include "test_util.h"

namespace fs = std::filesystem;
namespace ir = oar::ir;
using oar::Attrs;
using oar::Device;
using oar::DType;
using oar::OpDef;
using oar::OpRegistry;
using oar::Shape;
using oar::Tensor;
using oar::TensorMeta;
using oar_test::check_close;
using oar_test::error_of;

namespace {

const OpDef& def(const char* name) { return OpRegistry::instance().get(name); }
ir::TensorType f32(Shape dims) { return {DType::f32, std::move(dims)}; }
ir::TensorType i64(Shape dims) { return {DType::i64, std::move(dims)}; }
ir::TensorType boolean(Shape dims) { return {DType::boolean, std::move(dims)}; }

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Appends `name` to `block` with result types from the op's meta rule.
ir::Value* emit(ir::Program& p, ir::Block& block, const char* name, std::vector<ir::Value*> operands,
                const Attrs& attrs = {}) {
  const OpDef& d = def(name);
  std::vector<TensorMeta> in;
  for (const ir::Value* v : operands) in.push_back({v->type().dtype, v->type().dims});
  std::vector<ir::TensorType> types;
  for (const TensorMeta& m : oar::infer_meta(d, in, attrs)) types.push_back({m.dtype, m.shape});
  return p.append(block, d, std::move(operands), attrs, types)->result(0);
}

void yield(ir::Program& p, ir::Block& block, std::vector<ir::Value*> values) {
  p.append(block, ir::yield_op(), std::move(values), {}, {});
}

// y = cond(pred) { x * x } else { -x }, for x: f32[3], pred: bool[].
struct CondProgram {
  ir::Program p;
  ir::Operation* cond = nullptr;
};
CondProgram cond_program() {
  CondProgram c;
  ir::Program& p = c.p;
  ir::Value* x = p.add_input("x", f32({3}));
  ir::Value* pred = p.add_input("pred", boolean({}));
  c.cond = p.append(ir::cond_op(), {pred}, {}, {f32({3})});
  ir::Block& then_r = c.cond->add_region();
  yield(p, then_r, {emit(p, then_r, "mul", {x, x})});
  ir::Block& else_r = c.cond->add_region();
  yield(p, else_r, {emit(p, else_r, "neg", {x})});
  p.add_output(c.cond->result(0), "y");
  return c;
}

// (i, s) = while (i < n) { i + 1, s * 2 } from (0, x), for n: i64[], x: f32[3].
struct WhileProgram {
  ir::Program p;
  ir::Operation* loop = nullptr;
};
WhileProgram while_program() {
  WhileProgram w;
  ir::Program& p = w.p;
  Device cpu{"cpu", 0};
  ir::Value* n = p.add_input("n", i64({}));
  ir::Value* x = p.add_input("x", f32({3}));
  ir::Value* zero = p.add_constant("zero", Tensor::from_vector<int64_t>({0}, {}, cpu));
  ir::Value* one = p.add_constant("one", Tensor::from_vector<int64_t>({1}, {}, cpu));
  ir::Value* two = p.add_constant("two", Tensor::from_vector<float>({2}, {}, cpu));
  w.loop = p.append(ir::while_op(), {zero, x}, {}, {i64({}), f32({3})});
  ir::Block& cond_r = w.loop->add_region();
  ir::Value* ci = p.add_argument(cond_r, i64({}));
  p.add_argument(cond_r, f32({3}));
  yield(p, cond_r, {emit(p, cond_r, "less", {ci, n})});
  ir::Block& body = w.loop->add_region();
  ir::Value* bi = p.add_argument(body, i64({}));
  ir::Value* bs = p.add_argument(body, f32({3}));
  yield(p, body, {emit(p, body, "add", {bi, one}), emit(p, body, "mul", {bs, two})});
  p.add_output(w.loop->result(0), "i");
  p.add_output(w.loop->result(1), "s");
  return w;
}

Tensor vec(std::vector<float> v) { return Tensor::from_vector<float>(v, {static_cast<int64_t>(v.size())}, Device{"cpu", 0}); }
Tensor flag(bool b) { return Tensor::from_vector<bool>({b}, {}, Device{"cpu", 0}); }
Tensor count(int64_t n) { return Tensor::from_vector<int64_t>({n}, {}, Device{"cpu", 0}); }

}  // namespace

TEST_CASE("cond: verified, printed, round-tripped, and run on the taken branch") {
  CondProgram c = cond_program();
  ir::verify(c.p);
  std::string text = ir::to_string(c.p);
  INFO(text);
  CHECK(contains(text, "%0: f32[3] = cond(%pred)\n    region {\n      %1: f32[3] = mul(%x, %x)\n"
                       "      yield(%1)\n    }\n    region {\n      %2: f32[3] = neg(%x)\n"));
  std::string json = ir::to_json(c.p);
  CHECK(contains(json, "\"version\": 1"));  // no region arguments: still version 1
  CHECK(ir::to_json(ir::from_json(json, {})) == json);

  Device cpu{"cpu", 0};
  ir::Executor exec(c.p, cpu);
  std::vector<Tensor> in = {vec({1, -2, 3}), flag(true)};
  check_close(exec.run(in)[0], {1, 4, 9});
  in[1] = flag(false);
  check_close(exec.run(in)[0], {-1, 2, -3});
  check_close(ir::interpret(c.p, in, {})[0], {-1, 2, -3});
}

TEST_CASE("while: carried values through region arguments, run to a tensor bound") {
  WhileProgram w = while_program();
  ir::verify(w.p);
  std::string text = ir::to_string(w.p);
  INFO(text);
  CHECK(contains(text, "%0: i64[], %1: f32[3] = while(%zero, %x)\n    region(%2: i64[], %3: f32[3]) {\n"
                       "      %4: bool[] = less(%2, %n)\n      yield(%4)\n    }\n"
                       "    region(%5: i64[], %6: f32[3]) {\n"));
  std::string json = ir::to_json(w.p);
  CHECK(contains(json, "\"version\": 2"));
  CHECK(contains(json, "\"args\""));
  Device cpu{"cpu", 0};
  ir::Program back = ir::from_json(json, {{"zero", w.p.constant_value(w.p.find("zero"))},
                                          {"one", w.p.constant_value(w.p.find("one"))},
                                          {"two", w.p.constant_value(w.p.find("two"))}});
  CHECK(ir::to_json(back) == json);
  CHECK(ir::to_string(back) == text);
  CHECK(ir::to_string(back.clone()) == text);

  ir::Executor exec(back, cpu);
  // 3 iterations: s = x * 8.
  std::vector<Tensor> out = exec.run(std::vector<Tensor>{count(3), vec({1, 2, 3})});
  CHECK(out[0].item() == 3);
  check_close(out[1], {8, 16, 24});
  // No iteration: the initial values.
  out = exec.run(std::vector<Tensor>{count(-1), vec({1, 2, 3})});
  CHECK(out[0].item() == 0);
  check_close(out[1], {1, 2, 3});
  out = ir::interpret(w.p, std::vector<Tensor>{count(5), vec({1, 0, -1})}, {});
  CHECK(out[0].item() == 5);
  check_close(out[1], {32, 0, -32});
}

TEST_CASE("control flow: the verifier rejects bad predicates, types and terminators") {
  {  // a predicate that is not bool
    ir::Program p;
    ir::Value* x = p.add_input("x", f32({3}));
    ir::Operation* op = p.append(ir::cond_op(), {x}, {}, {f32({3})});
    for (int r = 0; r < 2; ++r) yield(p, op->add_region(), {x});
    CHECK(contains(error_of([&] { ir::verify(p); }),
                   "operation 0 (cond): the predicate must be a one-element bool tensor but is a f32 "
                   "tensor (f32[3])"));
  }
  {  // a predicate of several elements
    ir::Program p;
    ir::Value* x = p.add_input("x", f32({3}));
    ir::Value* pr = p.add_input("pr", boolean({2}));
    ir::Operation* op = p.append(ir::cond_op(), {pr}, {}, {f32({3})});
    for (int r = 0; r < 2; ++r) yield(p, op->add_region(), {x});
    CHECK(contains(error_of([&] { ir::verify(p); }), "bool tensor of shape bool[2], which is not one element"));
  }
  {  // branches of different dtypes: both types named
    ir::Program p;
    ir::Value* x = p.add_input("x", f32({3}));
    ir::Value* k = p.add_input("k", i64({3}));
    ir::Value* pr = p.add_input("pr", boolean({1}));
    ir::Operation* op = p.append(ir::cond_op(), {pr}, {}, {f32({3})});
    yield(p, op->add_region(), {x});
    yield(p, op->add_region(), {k});
    std::string e = error_of([&] { ir::verify(p); });
    CHECK(contains(e, "operation 0 (cond): its else branch yields i64[3] for result 0 of type f32[3] "
                      "(the dtype differs); the then branch yields f32[3]"));
  }
  {  // a branch of another shape
    ir::Program p;
    ir::Value* x = p.add_input("x", f32({3}));
    ir::Value* y = p.add_input("y", f32({4}));
    ir::Value* pr = p.add_input("pr", boolean({}));
    ir::Operation* op = p.append(ir::cond_op(), {pr}, {}, {f32({3})});
    yield(p, op->add_region(), {x});
    yield(p, op->add_region(), {y});
    CHECK(contains(error_of([&] { ir::verify(p); }), "its else branch yields f32[4] for result 0 of type f32[3] "
                                                     "(dim 0 differs"));
  }
  {  // a region without a yield; a yield at the top level
    ir::Program p;
    ir::Value* x = p.add_input("x", f32({3}));
    ir::Value* pr = p.add_input("pr", boolean({}));
    ir::Operation* op = p.append(ir::cond_op(), {pr}, {}, {f32({3})});
    yield(p, op->add_region(), {x});
    emit(p, op->add_region(), "neg", {x});
    CHECK(contains(error_of([&] { ir::verify(p); }), "its else region (region 1) does not end in a yield"));
    ir::Program q;
    ir::Value* z = q.add_input("z", f32({3}));
    yield(q, q.block(), {z});
    CHECK(contains(error_of([&] { ir::verify(q); }), "a yield ends a region of cond or while; this one is at the top level"));
  }
  {  // a loop whose body changes a carried value's dtype: both types named
    ir::Program p;
    ir::Value* x = p.add_input("x", f32({3}));
    ir::Value* pr = p.add_input("pr", boolean({}));
    ir::Operation* op = p.append(ir::while_op(), {x}, {}, {f32({3})});
    ir::Block& c = op->add_region();
    p.add_argument(c, f32({3}));
    yield(p, c, {pr});
    ir::Block& b = op->add_region();
    ir::Value* a = p.add_argument(b, f32({3}));
    yield(p, b, {emit(p, b, "cast", {a}, {{"dtype", static_cast<int64_t>(DType::f64)}})});
    CHECK(contains(error_of([&] { ir::verify(p); }),
                   "operation 0 (while): its body yields f64[3] for carried value 0 of type f32[3] (the dtype differs)"));
  }
  {  // region values stay in their region
    CondProgram c = cond_program();
    ir::Value* inner = c.cond->region(0).front()->result(0);
    c.p.add_output(inner, "leak");
    CHECK(contains(error_of([&] { ir::verify(c.p); }), "visible only inside that region"));
  }
  // Result types of a cond from its branches: differing dims become dynamic.
  std::vector<ir::TensorType> a = {f32({2, 3})}, b = {f32({2, 5})};
  CHECK(ir::cond_result_types(a, b) == std::vector<ir::TensorType>{f32({2, -1})});
  std::vector<ir::TensorType> c = {i64({2, 3})};
  CHECK(contains(error_of([&] { ir::cond_result_types(a, c); }),
                 "cond: the branches give different dtypes for value 0: f32[2, 3] (then) and i64[2, 3] (else)"));
}

TEST_CASE("control flow: planning, constant folding and dead code elimination through regions") {
  CondProgram c = cond_program();
  ir::Value* x = c.p.inputs()[0];
  // x is read only inside the regions: the cond counts as its reader.
  auto shapes = ir::infer_shapes(c.p, {{3}, {}});
  ir::MemoryPlan plan = ir::plan_memory(c.p, shapes);
  CHECK(plan.last_use.at(x) == 0);
  CHECK(ir::captured_values(*c.cond) == std::vector<ir::Value*>{x});

  // A constant predicate: the cond becomes the branch it takes.
  Device cpu{"cpu", 0};
  ir::Program p;
  ir::Value* y = p.add_input("y", f32({3}));
  ir::Value* t = p.add_constant("t", Tensor::from_vector<bool>({false}, {}, cpu));
  ir::Operation* op = p.append(ir::cond_op(), {t}, {}, {f32({3})});
  ir::Block& then_r = op->add_region();
  yield(p, then_r, {emit(p, then_r, "mul", {y, y})});
  ir::Block& else_r = op->add_region();
  yield(p, else_r, {emit(p, else_r, "neg", {y})});
  p.add_output(op->result(0));
  ir::PassManager fold;
  fold.add(ir::make_constant_folding_pass(cpu));
  fold.add(ir::make_dce_pass());
  fold.run(p);
  ir::verify(p);
  CHECK(p.block().size() == 1);
  CHECK(p.block().front()->name() == "neg");
  check_close(ir::Executor(p, cpu).run(std::vector<Tensor>{vec({1, 2, 3})})[0], {-1, -2, -3});

  // An unused cond without side effects goes; a used one stays.
  CondProgram unused = cond_program();
  unused.p.clear_outputs();
  unused.p.add_output(unused.p.inputs()[0], "x");
  ir::PassManager dce;
  dce.add(ir::make_dce_pass());
  dce.run(unused.p);
  CHECK(unused.p.block().empty());
  CondProgram used = cond_program();
  ir::PassManager all;
  all.add(ir::make_cse_pass());
  all.add(ir::make_dce_pass());
  all.run(used.p);
  ir::verify(used.p);
  CHECK(used.p.block().size() == 1);
  CHECK(used.p.block().front()->region(0).size() == 2);
}

TEST_CASE("oar-run: a saved program with a while loop gives the executor's outputs") {
  const char* bin = std::getenv("OAR_BIN_DIR");
  REQUIRE(bin != nullptr);
  fs::path dir = fs::temp_directory_path() / ("oar_cf_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  WhileProgram w = while_program();
  std::string model = (dir / "loop").string();
  ir::save(w.p, {}, model);
  Device cpu{"cpu", 0};
  fs::path inputs = dir / "in.safetensors";
  ir::save_safetensors(inputs.string(), {{"n", count(4)}, {"x", vec({1, 2, 3})}});
  fs::path outputs = dir / "out.safetensors";
  std::string command = std::string(bin) + "/oar-run " + model + " --device cpu --inputs " +
                        inputs.string() + " --output " + outputs.string() + " >" +
                        (dir / "log.txt").string() + " 2>&1";
  int raw = std::system(command.c_str());
  std::ifstream log(dir / "log.txt");
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  INFO(text);
  REQUIRE(WIFEXITED(raw));
  REQUIRE(WEXITSTATUS(raw) == 0);
  std::map<std::string, Tensor> got = ir::load_safetensors(outputs.string(), cpu);
  CHECK(got.at("i").item() == 4);
  check_close(got.at("s"), {16, 32, 48});
  fs::remove_all(dir);
}
