// Every group the fusion planner makes of the forward and backward programs
// of RMSNorm, softmax, log_softmax, layer_norm, bias + gelu and
// cross_entropy lowers (lower_group), and its generated CPU kernel equals
// the group's sub-program run by the interpreter at two batch sizes.
#include <doctest/doctest.h>

#include <unordered_map>

#include "kernel_test_util.h"
#include "oar/ir/autodiff.h"
#include "oar/ops.h"
#include "oar_compiler/fusion.h"

using namespace kernel_test;
namespace ir = oar::ir;
namespace cc = oar::compiler;

namespace {

// The group's operations as a program of their own: inputs are the group's
// inputs, outputs its outputs (what the compiler pass cuts out).
ir::Program extract(const ir::Program& program, const cc::Group& g) {
  ir::Program sub;
  std::unordered_map<const ir::Value*, ir::Value*> map;
  for (size_t i = 0; i < g.inputs.size(); ++i) map[g.inputs[i]] = sub.add_input("in" + std::to_string(i), g.inputs[i]->type());
  for (ir::Operation* op : g.ops) {
    std::vector<ir::Value*> operands;
    for (ir::Value* v : op->operands()) {
      auto it = map.find(v);
      if (it == map.end()) {
        REQUIRE(v->kind() == ir::ValueKind::constant);
        it = map.emplace(v, sub.add_constant(v->name(), program.constant_value(v))).first;
      }
      operands.push_back(it->second);
    }
    std::vector<ir::TensorType> types;
    for (ir::Value* r : op->results()) types.push_back(r->type());
    ir::Operation* copy = sub.append(op->def(), operands, op->attrs(), types);
    for (size_t i = 0; i < op->results().size(); ++i) map[op->result(i)] = copy->result(i);
  }
  for (ir::Value* v : g.outputs) sub.add_output(map.at(v));
  return sub;
}

// An input of `type` with every dynamic dim `batch`: labels for integer
// dtypes, the program's tensor for constants.
Tensor input_for(const ir::Program& program, const ir::Value* v, int64_t batch, uint32_t seed, int64_t classes) {
  if (v->kind() == ir::ValueKind::constant) return program.constant_value(v);
  Shape s = v->type().with_dynamic_dims(batch);
  DType t = v->type().dtype;
  if (oar::is_integer(t)) return oar::cast(random_tensor(s, DType::f64, seed, 0, static_cast<double>(classes) - 0.01), t);
  if (t == DType::boolean) return oar::greater_than(random_tensor(s, DType::f32, seed), oar::scalar_like(random_tensor({}, DType::f32, 1), 0.0));
  return random_tensor(s, t, seed, -2, 2);
}

struct Model {
  std::string name;
  ir::TracedFunction fn;
  std::vector<ir::InputSpec> specs;
  int64_t classes = 8;  // integer inputs take values in [0, classes)
};

// Forward + backward of sum(fn(inputs) * upstream), decomposed as the pipeline does.
ir::Program training_program(const Model& m) {
  std::vector<ir::InputSpec> specs = m.specs;
  ir::Trace t = ir::trace(m.fn, specs);
  ir::Program& p = t.program;
  std::vector<ir::Value*> wrt;
  std::vector<Shape> shapes;
  for (ir::Value* in : p.inputs()) {
    shapes.push_back(in->type().with_dynamic_dims(4));
    if (oar::is_floating(in->type().dtype)) wrt.push_back(in);
  }
  ir::Value* out = p.outputs()[0].value;
  ir::Value* upstream = p.add_input("upstream", out->type());
  shapes.push_back(out->type().with_dynamic_dims(4));
  ir::BackwardOptions options;
  options.input_shapes = shapes;
  std::vector<ir::Value*> grads = ir::append_backward(p, {out}, wrt, {upstream}, options);
  for (ir::Value* g : grads) p.add_output(g);
  auto composite = [](const oar::OpDef& d) {
    static const std::set<std::string> kept = {"full_like", "broadcast_to_like", "sum_to_like", "shape", "numel", "fusion_group"};
    return d.kind == oar::OpKind::composite && !kept.count(d.name);
  };
  ir::make_decomposition_pass(composite)->run(p);
  ir::make_cse_pass()->run(p);
  ir::make_dce_pass()->run(p);
  return std::move(t.program);
}

void check_model(const Model& m) {
  ir::Program p = training_program(m);
  std::vector<cc::Group> groups = cc::plan_fusion(p.block(), {}, nullptr);
  INFO(m.name << " plan:\n" << cc::plan_text(groups));
  REQUIRE(!groups.empty());
  if (std::getenv("OAR_TEST_SHOW_PLAN")) MESSAGE(m.name << " plan:\n" << cc::plan_text(groups));
  std::vector<ir::Program> subs;
  std::vector<cc::Kernel> kernels;
  std::string source;
  for (size_t i = 0; i < groups.size(); ++i) {
    subs.push_back(extract(p, groups[i]));
    std::string why;
    auto k = cc::lower_group(subs.back(), &why);
    INFO(groups[i].name << ": " << why);
    REQUIRE(k.has_value());
    kernels.push_back(std::move(*k));
    source += cc::emit_cpu(kernels.back(), "k" + std::to_string(i));
  }
  Library lib(source);
  for (size_t i = 0; i < groups.size(); ++i) {
    for (int64_t batch : {3, 17}) {
      std::vector<Tensor> in;
      for (size_t j = 0; j < groups[i].inputs.size(); ++j) {
        in.push_back(input_for(p, groups[i].inputs[j], batch, static_cast<uint32_t>(100 * i + j + batch), m.classes));
      }
      std::vector<Tensor> want = ir::interpret(subs[i], in);
      std::vector<Tensor> got = run_kernel(kernels[i], lib.get("k" + std::to_string(i)), in, 2);
      for (size_t o = 0; o < want.size(); ++o) {
        INFO(m.name << " " << groups[i].name << " batch " << batch << " output " << o << "\n" << cc::to_string(kernels[i]));
        CHECK(got[o].shape() == want[o].shape());
        double tol = tolerance(want[o].dtype()) * 10;
        if (oar::is_floating(want[o].dtype())) {
          check_values(got[o], want[o], tol);
        } else {
          CHECK(oar_test::values(oar::cast(got[o], DType::f64)) == oar_test::values(oar::cast(want[o], DType::f64)));
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("the planner's groups of normalization programs and their backward lower and run") {
  check_model({"rms_norm", [](const std::vector<Tensor>& in) { return std::vector<Tensor>{oar::rms_norm(in[0], in[1], 1e-6)}; },
               {{{-1, 64}, DType::f32, "x"}, {{64}, DType::f32, "w"}}});
  check_model({"layer_norm",
               [](const std::vector<Tensor>& in) { return std::vector<Tensor>{oar::layer_norm(in[0], in[1], in[2], 1e-5, 1)}; },
               {{{-1, 48}, DType::f32, "x"}, {{48}, DType::f32, "w"}, {{48}, DType::f32, "b"}}});
}

TEST_CASE("the planner's groups of softmax, log_softmax and bias + gelu programs lower and run") {
  check_model({"softmax", [](const std::vector<Tensor>& in) { return std::vector<Tensor>{oar::softmax(in[0], -1)}; },
               {{{-1, 40}, DType::f32, "x"}}});
  check_model({"log_softmax", [](const std::vector<Tensor>& in) { return std::vector<Tensor>{oar::log_softmax(in[0], -1)}; },
               {{{-1, 40}, DType::f64, "x"}}});
  check_model({"bias_gelu", [](const std::vector<Tensor>& in) { return std::vector<Tensor>{oar::gelu(in[0] + in[1], true)}; },
               {{{-1, 32}, DType::f32, "x"}, {{32}, DType::f32, "b"}}});
}

TEST_CASE("the planner's groups of cross_entropy forward and backward lower and run") {
  check_model({"cross_entropy",
               [](const std::vector<Tensor>& in) {
                 return std::vector<Tensor>{oar::cross_entropy(in[0], in[1], false, -1, "none", -100)};
               },
               {{{-1, 10}, DType::f32, "logits"}, {{-1}, DType::i64, "label"}},
               10});
}
