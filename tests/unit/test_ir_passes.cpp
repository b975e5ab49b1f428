// IR passes: dead code elimination, CSE, constant folding, decomposition
// of composite ops (checked against eager evaluation of the original), and
// the pass manager's verification and printing.
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <unordered_map>

#include "oar/autograd.h"
#include "oar/builder.h"
#include "oar/ir/pass.h"
#include "oar/ir/printer.h"
#include "oar/ir/verifier.h"
#include "test_util.h"

using oar::Attrs;
using oar::Device;
using oar::DType;
using oar::OpDef;
using oar::OpKind;
using oar::OpRegistry;
using oar::Shape;
using oar::Tensor;
using oar::TensorMeta;
using oar::ir::Operation;
using oar::ir::Program;
using oar::ir::TensorType;
using oar::ir::Value;
using oar::ir::ValueKind;
using oar_test::check_close;
using oar_test::error_of;
using oar_test::test_devices;
using oar_test::values;

namespace {

const OpDef& def(const char* name) { return OpRegistry::instance().get(name); }

// Appends `name` on `operands` with result types from the op's meta rule.
Operation* emit_op(Program& p, const char* name, std::vector<Value*> operands,
                   const Attrs& attrs = {}) {
  const OpDef& d = def(name);
  std::vector<TensorMeta> in;
  for (const Value* v : operands) in.push_back({v->type().dtype, v->type().dims});
  std::vector<TensorType> types;
  for (const TensorMeta& m : d.meta(d, in, attrs)) types.push_back({m.dtype, m.shape});
  return p.append(d, std::move(operands), attrs, types);
}

Value* emit(Program& p, const char* name, std::vector<Value*> operands, const Attrs& attrs = {}) {
  return emit_op(p, name, std::move(operands), attrs)->result(0);
}

TensorType f32(Shape dims) { return {DType::f32, std::move(dims)}; }

Attrs full_attrs(Shape shape, double value) {
  return {{"shape", shape}, {"dtype", static_cast<int64_t>(DType::f32)}, {"value", value}};
}

Attrs uniform_attrs(Shape shape) {
  return {{"shape", shape},     {"dtype", static_cast<int64_t>(DType::f32)},
          {"seed", int64_t{7}}, {"offset", int64_t{0}},
          {"low", 0.0},         {"high", 1.0}};
}

std::vector<std::string> op_names(const Program& p) {
  std::vector<std::string> names;
  for (const auto& op : p.block().ops()) names.push_back(op->name());
  return names;
}

size_t count_ops(const Program& p, const std::string& name) {
  size_t n = 0;
  for (const auto& op : p.block().ops()) n += op->name() == name;
  return n;
}

// A reference interpreter: every operation run eagerly, in block order.
std::vector<Tensor> interpret(const Program& p, const std::vector<Tensor>& inputs,
                              const oar::ir::ParamMap& params, const Device& device) {
  std::unordered_map<const Value*, Tensor> env;
  for (size_t i = 0; i < p.inputs().size(); ++i) env[p.inputs()[i]] = inputs.at(i).to(device);
  for (const Value* v : p.parameters()) env[v] = params.at(v->name()).to(device);
  for (const Value* v : p.constants()) env[v] = p.constant_value(v).to(device);
  oar::NoGrad no_grad;
  for (const auto& op : p.block().ops()) {
    std::vector<Tensor> in;
    for (const Value* v : op->operands()) in.push_back(env.at(v));
    auto out = oar::EagerBuilder::instance().apply(op->def(), in, op->attrs(), &device);
    for (size_t i = 0; i < out.size(); ++i) env[op->result(i)] = out[i];
  }
  std::vector<Tensor> outputs;
  for (const auto& o : p.outputs()) outputs.push_back(env.at(o.value));
  return outputs;
}

}  // namespace

TEST_CASE("dce removes a dead branch and keeps outputs, updates and random ops") {
  Program p;
  Value* x = p.add_input("x", f32({4}));
  Value* w = p.add_parameter("w", f32({4}));
  Value* unused_constant =
      p.add_constant("k", Tensor::from_vector<float>({1, 2, 3, 4}, {4}, Device{"cpu", 0}));
  Value* kept_constant =
      p.add_constant("lr", Tensor::from_vector<float>({0.5f}, {}, Device{"cpu", 0}));
  Value* a = emit(p, "add", {x, w});
  Value* dead = emit(p, "mul", {x, unused_constant});
  emit(p, "exp", {dead});
  emit(p, "uniform", {}, uniform_attrs({4}));
  Value* step = emit(p, "mul", {a, kept_constant});
  Value* updated = emit(p, "sub", {w, step});
  p.add_output(a, "a");
  p.add_update("w", updated);
  oar::ir::verify(p);

  auto dce = oar::ir::make_dce_pass();
  CHECK(dce->name() == "dce");
  CHECK(dce->run(p));
  oar::ir::verify(p);
  CHECK(op_names(p) == std::vector<std::string>{"add", "uniform", "mul", "sub"});
  REQUIRE(p.constants().size() == 1);
  CHECK(p.constants()[0]->name() == "lr");
  CHECK(p.find("k") == nullptr);
  CHECK(p.outputs()[0].value == a);
  CHECK(p.updates()[0].value == updated);
  CHECK_FALSE(dce->run(p));  // nothing left to remove
}

TEST_CASE("cse merges identical operations, chains of them, and nothing else") {
  Program p;
  Value* x = p.add_input("x", f32({3, 3}));
  Value* y = p.add_input("y", f32({3, 3}));
  Value* a1 = emit(p, "add", {x, y});
  Value* a2 = emit(p, "add", {x, y});
  Value* e1 = emit(p, "exp", {a1});
  Value* e2 = emit(p, "exp", {a2});         // a duplicate once a2 is merged into a1
  Value* swapped = emit(p, "add", {y, x});  // other operand order: not merged
  Value* m1 = emit(p, "matmul", {x, y}, {{"transpose_a", false}, {"transpose_b", false}});
  Value* m2 = emit(p, "matmul", {x, y},
                   {{"transpose_b", false}, {"transpose_a", false}});  // same attrs, other order
  Value* m3 =
      emit(p, "matmul", {x, y}, {{"transpose_a", true}, {"transpose_b", false}});  // other attrs
  Value* f1 = emit(p, "full", {}, full_attrs({3, 3}, 2.0));
  Value* f2 = emit(p, "full", {}, full_attrs({3, 3}, 2.0));
  Value* f3 = emit(p, "full", {}, full_attrs({3, 3}, 3.0));
  Value* u1 = emit(p, "uniform", {}, uniform_attrs({3, 3}));
  Value* u2 = emit(p, "uniform", {}, uniform_attrs({3, 3}));  // random: never merged
  Value* s1 = emit(p, "sum", {x}, {{"axes", std::vector<int64_t>{0}}, {"keepdim", false}});
  Value* s2 =
      emit(p, "sum", {x}, {{"axes", std::vector<int64_t>{0}}, {"keepdim", true}});  // other type
  for (Value* v : {e1, e2, swapped, m1, m2, m3, f1, f2, f3, u1, u2, s1, s2}) p.add_output(v);
  oar::ir::verify(p);

  auto cse = oar::ir::make_cse_pass();
  CHECK(cse->run(p));
  oar::ir::verify(p);
  CHECK(count_ops(p, "add") == 2);
  CHECK(count_ops(p, "exp") == 1);
  CHECK(count_ops(p, "matmul") == 2);
  CHECK(count_ops(p, "full") == 2);
  CHECK(count_ops(p, "uniform") == 2);
  CHECK(count_ops(p, "sum") == 2);
  const auto& out = p.outputs();
  CHECK(out[0].value == e1);
  CHECK(out[1].value == e1);
  CHECK(out[2].value == swapped);
  CHECK(out[3].value == m1);
  CHECK(out[4].value == m1);
  CHECK(out[5].value == m3);
  CHECK(out[6].value == f1);
  CHECK(out[7].value == f1);
  CHECK(out[8].value == f3);
  CHECK(out[9].value == u1);
  CHECK(out[10].value == u2);
  CHECK(out[11].value == s1);
  CHECK(out[12].value == s2);
  CHECK(e1->producer()->operand(0) == a1);
  CHECK_FALSE(cse->run(p));
}

TEST_CASE("constant folding evaluates full + arange chains and leaves random ops") {
  for (const auto& device : test_devices()) {
    CAPTURE(device.str());
    Program p;
    Value* x = p.add_input("x", f32({3}));
    Value* k =
        p.add_constant("k", Tensor::from_vector<float>({0.5f, 1.5f, 2.5f}, {3}, Device{"cpu", 0}));
    Value* twos = emit(p, "full", {}, full_attrs({3}, 2.0));
    Value* ramp = emit(p, "arange", {},
                       {{"shape", Shape{3}},
                        {"dtype", static_cast<int64_t>(DType::f32)},
                        {"start", 1.0},
                        {"step", 1.0}});
    Value* sum = emit(p, "add", {twos, ramp});  // [3, 4, 5]
    Value* scaled = emit(p, "mul", {sum, k});   // [1.5, 6, 12.5]
    Value* noise = emit(p, "uniform", {}, uniform_attrs({3}));
    Value* noisy = emit(p, "add", {scaled, noise});          // depends on a random op: not folded
    Value* big = emit(p, "full", {}, full_attrs({8}, 1.0));  // above max_elements below
    Value* with_x = emit(p, "mul", {scaled, x});
    p.add_output(sum, "sum");
    p.add_output(with_x, "with_x");
    p.add_output(noisy, "noisy");
    p.add_output(big, "big");

    auto fold = oar::ir::make_constant_folding_pass(device, /*max_elements=*/4);
    CHECK(fold->name() == "constant_folding");
    CHECK(fold->run(p));
    oar::ir::verify(p);
    CHECK(op_names(p) == std::vector<std::string>{"uniform", "add", "full", "mul"});

    const Value* folded_sum = p.outputs()[0].value;
    REQUIRE(folded_sum->kind() == ValueKind::constant);
    CHECK(folded_sum->name().rfind("folded_", 0) == 0);
    CHECK(p.constant_value(folded_sum).device() == device);
    CHECK(p.constant_value(folded_sum).to_vector<float>() == std::vector<float>{3, 4, 5});

    const Operation* mul = p.outputs()[1].value->producer();
    REQUIRE(mul != nullptr);
    REQUIRE(mul->operand(0)->kind() == ValueKind::constant);
    CHECK(mul->operand(1) == x);
    CHECK(p.constant_value(mul->operand(0)).to_vector<float>() ==
          std::vector<float>{1.5f, 6.0f, 12.5f});
    CHECK(p.outputs()[2].value->producer()->operand(1) == noise);
    // "k" and the chain's inner links are no longer used.
    CHECK(p.find("k") == nullptr);
    CHECK(p.constants().size() == 2);
    CHECK_FALSE(fold->run(p));

    // The folded program computes what the original would.
    auto got = interpret(p, {Tensor::from_vector<float>({1, 2, 3}, {3}, device)}, {}, device);
    check_close(got[1], {1.5, 12, 37.5});
  }
}

TEST_CASE("the default pipeline folds, merges and cleans up") {
  Device device{"cpu", 0};
  Program p;
  Value* x = p.add_input("x", f32({2}));
  Value* one = emit(p, "full", {}, full_attrs({2}, 1.0));
  Value* three = emit(p, "add", {one, emit(p, "full", {}, full_attrs({2}, 2.0))});
  Value* a = emit(p, "mul", {x, three});
  Value* b = emit(p, "mul", {x, three});
  emit(p, "exp", {a});  // dead
  p.add_output(emit(p, "add", {a, b}));

  oar::ir::PassManager pm = oar::ir::default_pipeline(device);
  CHECK(pm.pass_names() == std::vector<std::string>{"constant_folding", "cse", "dce"});
  CHECK(pm.run(p));
  CHECK(op_names(p) == std::vector<std::string>{"mul", "add"});
  REQUIRE(p.constants().size() == 1);
  CHECK(p.constant_value(p.constants()[0]).to_vector<float>() == std::vector<float>{3, 3});
  auto got = interpret(p, {Tensor::from_vector<float>({1, -2}, {2}, device)}, {}, device);
  check_close(got[0], {6, -12});
}

namespace {

std::vector<TensorMeta> same_meta(const OpDef&, std::span<const TensorMeta> in, const Attrs&) {
  return {in[0]};
}

// Test-only composite ops for the edges of decomposition.
const OpDef& passthrough_op() {
  static const OpDef& d =
      OpRegistry::instance().add({.name = "test_passthrough",
                                  .kind = OpKind::composite,
                                  .meta = same_meta,
                                  .decompose = [](std::span<const Tensor> in, const Attrs&) {
                                    return std::vector<Tensor>{in[0]};
                                  }});
  return d;
}

std::vector<TensorMeta> constant_meta(const OpDef&, std::span<const TensorMeta>, const Attrs&) {
  return {{DType::f32, {2}}};
}
const OpDef& concrete_result_op() {
  static const OpDef& d = OpRegistry::instance().add(
      {.name = "test_concrete_result",
       .kind = OpKind::composite,
       .meta = constant_meta,
       .decompose = [](std::span<const Tensor>, const Attrs&) {
         return std::vector<Tensor>{Tensor::from_vector<float>({4, 5}, {2}, Device{"cpu", 0})};
       }});
  return d;
}

const OpDef& forever_op() {
  static const OpDef& d =
      OpRegistry::instance().add({.name = "test_forever",
                                  .kind = OpKind::composite,
                                  .meta = same_meta,
                                  .decompose = [](std::span<const Tensor> in, const Attrs& attrs) {
                                    return std::vector<Tensor>{oar::apply1(
                                        OpRegistry::instance().get("test_forever"), in, attrs)};
                                  }});
  return d;
}

}  // namespace

TEST_CASE("decomposition leaves no composite op and computes what the composites did") {
  Program p;
  Value* x = p.add_input("x", f32({2, 5}));
  Value* w = p.add_parameter("w", f32({5}));
  Value* b = p.add_parameter("b", f32({5}));
  Value* sm = emit(p, "softmax", {x}, {{"axis", int64_t{1}}});
  Value* lsm = emit(p, "log_softmax", {x}, {{"axis", int64_t{0}}});
  Value* ln = emit(p, "layer_norm", {x, w, b}, {{"epsilon", 1e-5}, {"begin_axis", int64_t{1}}});
  Value* act = emit(p, "gelu", {ln}, {{"approximate", true}});
  p.add_output(sm, "softmax");
  p.add_output(lsm, "log_softmax");
  p.add_output(act, "gelu");
  oar::ir::verify(p);
  Program original = p.clone();

  auto is_composite = [](const OpDef& d) { return d.kind == OpKind::composite; };
  auto pass = oar::ir::make_decomposition_pass(is_composite);
  CHECK(pass->name() == "decomposition");
  CHECK(pass->run(p));
  oar::ir::verify(p);
  for (const auto& op : p.block().ops()) {
    INFO(op->name());
    CHECK(op->def().kind != OpKind::composite);
  }
  CHECK(count_ops(p, "exp") >= 2);
  CHECK(count_ops(p, "sum") >= 3);  // softmax, log_softmax, and layer_norm's means
  CHECK_FALSE(pass->run(p));

  for (const auto& device : test_devices()) {
    CAPTURE(device.str());
    std::vector<Tensor> in{
        Tensor::from_vector<float>({1, 2, 3, 4, 5, -1, 0, 2, 0.5f, 3}, {2, 5}, device)};
    oar::ir::ParamMap params{
        {"w", Tensor::from_vector<float>({1, 2, 0.5f, -1, 1}, {5}, device)},
        {"b", Tensor::from_vector<float>({0, 0.1f, 0.2f, 0.3f, 0.4f}, {5}, device)}};
    auto want = interpret(original, in, params, device);
    auto got = interpret(p, in, params, device);
    REQUIRE(got.size() == 3);
    for (size_t i = 0; i < got.size(); ++i)
      check_close(values(got[i]), values(want[i]), 1e-5, 1e-5);
    // Row 0 of the softmax, by hand: exp(i - 5) / sum_j exp(j - 5) for i = 1..5.
    double total = 0;
    for (int j = 1; j <= 5; ++j) total += std::exp(j - 5.0);
    std::vector<double> row0 = values(got[0]);
    row0.resize(5);
    check_close(row0, {std::exp(-4.0) / total, std::exp(-3.0) / total, std::exp(-2.0) / total,
                       std::exp(-1.0) / total, 1.0 / total});
  }
}

TEST_CASE("decomposition of selected ops only, with dynamic dims") {
  Program p;
  Value* x = p.add_input("x", f32({oar::ir::kDynamic, 4}));
  Value* sm = emit(p, "softmax", {x}, {{"axis", int64_t{1}}});  // f32[-1, 4]
  Value* lsm = emit(p, "log_softmax", {x}, {{"axis", int64_t{1}}});
  p.add_output(sm);
  p.add_output(lsm);

  auto pass = oar::ir::make_decomposition_pass(std::set<std::string>{"softmax"});
  CHECK(pass->run(p));
  oar::ir::verify(p);
  CHECK(count_ops(p, "softmax") == 0);
  CHECK(count_ops(p, "log_softmax") == 1);
  CHECK(p.outputs()[0].value->type() == f32({oar::ir::kDynamic, 4}));

  for (const auto& device : test_devices()) {
    CAPTURE(device.str());
    Tensor in = Tensor::from_vector<float>({0, 1, 2, 3, 1, 1, 1, 1, -1, 0, 0, 5}, {3, 4}, device);
    auto got = interpret(p, {in}, {}, device);
    check_close(got[0], values(oar::softmax(in, 1)));
    check_close(got[1], values(oar::log_softmax(in, 1)));
  }

  CHECK(error_of([] {
          oar::ir::make_decomposition_pass(std::set<std::string>{"no_such_op"});
        }).find("no_such_op") != std::string::npos);
}

namespace {

// Test-only composites whose decompositions read x.shape(), as relu's and
// mean's did before they took their shapes from their operands.
const OpDef& baked_relu_op() {
  static const OpDef& d = OpRegistry::instance().add(
      {.name = "test_baked_relu",
       .kind = OpKind::composite,
       .meta = same_meta,
       .decompose = [](std::span<const Tensor> in, const Attrs&) {
         return std::vector<Tensor>{oar::maximum(in[0], oar::zeros(in[0].shape(), in[0].dtype(), in[0].device()))};
       }});
  return d;
}

std::vector<TensorMeta> scalar_meta(const OpDef&, std::span<const TensorMeta> in, const Attrs&) {
  return {{in[0].dtype, {}}};
}
const OpDef& baked_mean_op() {
  static const OpDef& d = OpRegistry::instance().add(
      {.name = "test_baked_mean",
       .kind = OpKind::composite,
       .meta = scalar_meta,
       .decompose = [](std::span<const Tensor> in, const Attrs&) {
         return std::vector<Tensor>{oar::sum(in[0]) / static_cast<double>(in[0].numel())};
       }});
  return d;
}

}  // namespace

TEST_CASE("a decomposition that needs fixed sizes of dynamic dims is refused and undone") {
  // zeros(x.shape()) reads x's example shape, so the traced decomposition
  // holds only for that size.
  Program p;
  Value* x = p.add_input("x", f32({oar::ir::kDynamic, 4}));
  Value* y = emit(p, "exp", {x});
  p.add_output(p.append(baked_relu_op(), {y}, {}, {f32({oar::ir::kDynamic, 4})})->result(0));
  std::string before = oar::ir::to_string(p);
  std::string message =
      error_of([&] { oar::ir::make_decomposition_pass(std::set<std::string>{"test_baked_relu"})->run(p); });
  CHECK(message.find("decomposition: operation 1 (test_baked_relu) cannot be decomposed") == 0);
  CHECK(message.find("dynamic dims") != std::string::npos);
  oar::ir::verify(p);
  CHECK(oar::ir::to_string(p) == before);

  // relu is max(x, 0) with a 0-D zero (scalar broadcasting): it holds for
  // every batch size.
  Program q;
  Value* s = q.add_input("x", f32({oar::ir::kDynamic, 4}));
  q.add_output(emit(q, "relu", {s}));
  CHECK(oar::ir::make_decomposition_pass(std::set<std::string>{"relu"})->run(q));
  oar::ir::verify(q);
  CHECK(count_ops(q, "relu") == 0);
  CHECK(count_ops(q, "maximum") == 1);
  CHECK(q.outputs()[0].value->type() == f32({oar::ir::kDynamic, 4}));
  for (const auto& device : test_devices()) {
    for (int64_t batch : {1, 3}) {
      std::vector<float> v(static_cast<size_t>(batch * 4));
      std::vector<double> want;
      for (size_t i = 0; i < v.size(); ++i) {
        v[i] = static_cast<float>(i) - 5.0f;
        want.push_back(std::max(0.0, static_cast<double>(v[i])));
      }
      check_close(interpret(q, {Tensor::from_vector(v, {batch, 4}, device)}, {}, device)[0], want);
    }
  }
}

TEST_CASE("a decomposition whose attributes depend on dynamic sizes is refused") {
  // Dividing by x.numel() read while tracing bakes in the count of one size.
  // The decomposition is traced at both samples of the batch symbol (11 and
  // 13 rows of 4), so the constants differ.
  Program p;
  Value* x = p.add_input("x", f32({oar::ir::kDynamic, 4}));
  p.add_output(p.append(baked_mean_op(), {x}, {}, {f32({})})->result(0));
  std::string before = oar::ir::to_string(p);
  std::string message =
      error_of([&] { oar::ir::make_decomposition_pass(std::set<std::string>{"test_baked_mean"})->run(p); });
  CHECK(message.find("decomposition: operation 0 (test_baked_mean) cannot be decomposed: its decomposition "
                     "depends on the sizes of the dynamic dims of its operands (full gets value=44.0 for one "
                     "size and 52.0 for another)") == 0);
  CHECK(oar::ir::to_string(p) == before);

  // mean counts the reduced elements when the program runs (numel), so it
  // decomposes over a dynamic dim too.
  Attrs all_axes{{"axes", std::vector<int64_t>{0, 1}}, {"keepdim", false}};
  Program m;
  Value* z = m.add_input("x", f32({oar::ir::kDynamic, 4}));
  m.add_output(emit(m, "mean", {z}, all_axes));
  CHECK(oar::ir::make_decomposition_pass(std::set<std::string>{"mean"})->run(m));
  oar::ir::verify(m);
  CHECK(count_ops(m, "mean") == 0);
  CHECK(count_ops(m, "numel") == 2);
  for (const auto& device : test_devices()) {
    CAPTURE(device.str());
    check_close(interpret(m, {Tensor::from_vector<float>({1, 2, 3, 4, 0, 0, 0, 8}, {2, 4}, device)}, {}, device)[0],
                {18.0 / 8});
    check_close(interpret(m, {Tensor::from_vector<float>({1, 2, 3, 4, 0, 0, 0, 8, -4, 4, 2, 2}, {3, 4}, device)},
                          {}, device)[0],
                {22.0 / 12});
  }

  // Over the static dim only, the count is the constant 4 for every batch size.
  Program q;
  Value* y = q.add_input("x", f32({oar::ir::kDynamic, 4}));
  q.add_output(emit(q, "mean", {y}, {{"axes", std::vector<int64_t>{1}}, {"keepdim", false}}));
  CHECK(oar::ir::make_decomposition_pass(std::set<std::string>{"mean"})->run(q));
  oar::ir::verify(q);
  CHECK(count_ops(q, "mean") == 0);
  CHECK(count_ops(q, "numel") == 0);
  CHECK(q.outputs()[0].value->type() == f32({oar::ir::kDynamic}));
  for (const auto& device : test_devices()) {
    CAPTURE(device.str());
    Tensor in = Tensor::from_vector<float>({1, 2, 3, 4, 0, 0, 0, 8, -4, 4, 2, 2}, {3, 4}, device);
    check_close(interpret(q, {in}, {}, device)[0], {2.5, 2, 1});
  }
}

TEST_CASE("decomposition handles pass-through and concrete results and stops runaway recursion") {
  Program p;
  Value* x = p.add_input("x", f32({2}));
  Value* same = p.append(passthrough_op(), {x}, {}, {f32({2})})->result(0);
  Value* fixed = p.append(concrete_result_op(), {}, {}, {f32({2})})->result(0);
  Value* y = emit(p, "add", {same, fixed});
  p.add_output(same, "same");
  p.add_output(y, "y");

  auto pass = oar::ir::make_decomposition_pass(
      [](const OpDef& d) { return d.name.rfind("test_", 0) == 0; });
  CHECK(pass->run(p));
  oar::ir::verify(p);
  CHECK(op_names(p) == std::vector<std::string>{"add"});
  CHECK(p.outputs()[0].value == x);
  const Value* captured = p.block().op(0).operand(1);
  REQUIRE(captured->kind() == ValueKind::constant);
  CHECK(p.constant_value(captured).to_vector<float>() == std::vector<float>{4, 5});

  Program q;
  Value* z = q.add_input("z", f32({2}));
  q.append(forever_op(), {z}, {}, {f32({2})});
  q.add_output(q.block().op(0).result(0));
  std::string message = error_of(
      [&] { oar::ir::make_decomposition_pass(std::set<std::string>{"test_forever"})->run(q); });
  CHECK(message.find("test_forever") != std::string::npos);
  CHECK(message.find("rounds") != std::string::npos);
}

namespace {
// Points an operation at a value defined after it.
class BreakingPass final : public oar::ir::Pass {
 public:
  std::string name() const override { return "breaker"; }
  bool run(Program& p) override {
    p.block().op(0).set_operand(0, p.block().op(1).result(0));
    return true;
  }
};
}  // namespace

TEST_CASE("the pass manager verifies and prints after each pass") {
  auto make = [] {
    Program p;
    Value* x = p.add_input("x", f32({2}));
    Value* a = emit(p, "exp", {x});
    Value* b = emit(p, "exp", {x});
    emit(p, "neg", {a});  // dead
    p.add_output(emit(p, "add", {a, b}), "out");
    return p;
  };

  Program p = make();
  std::ostringstream os;
  oar::ir::PassManager pm;
  pm.add(oar::ir::make_cse_pass()).add(oar::ir::make_dce_pass());
  pm.set_print_after_each(true, &os);
  CHECK(pm.run(p));
  std::string text = os.str();
  size_t cse_at = text.find("// IR after cse\nprogram {");
  size_t dce_at = text.find("// IR after dce\nprogram {");
  REQUIRE(cse_at != std::string::npos);
  REQUIRE(dce_at != std::string::npos);
  CHECK(cse_at < dce_at);
  CHECK(text.substr(dce_at + std::string("// IR after dce\n").size()) == oar::ir::to_string(p));
  // After CSE the dead neg is still there; after DCE it is gone.
  CHECK(text.substr(cse_at, dce_at - cse_at).find("neg(") != std::string::npos);
  CHECK(text.substr(dce_at).find("neg(") == std::string::npos);

  // Nothing is printed unless asked, or asked through the environment.
  Program q = make();
  std::ostringstream quiet;
  oar::ir::PassManager silent;
  silent.add(oar::ir::make_dce_pass());
  silent.set_print_after_each(false, &quiet);
  silent.run(q);
  CHECK(quiet.str().empty());
  setenv("OAR_PRINT_IR_AFTER_PASS", "1", 1);
  Program r = make();
  silent.run(r);
  unsetenv("OAR_PRINT_IR_AFTER_PASS");
  CHECK(quiet.str().find("// IR after dce\n") == 0);

  Program s = make();
  oar::ir::PassManager broken;
  broken.add(std::make_unique<BreakingPass>());
  std::string message = error_of([&] { broken.run(s); });
  CHECK(message.find("pass 'breaker' left an invalid program") == 0);
}
