// The planner and the lowering agree, on programs with rows over several
// dims ([B, 8, 16]) and whole training programs: every group plan_fusion
// makes for the programs of the plan tests (fusion_programs.h: norms,
// softmax, gelu, cross_entropy and a transformer block, forward and
// backward) is cut out as a sub-program, lowered by lower_group to the
// schedule its GroupKind names, compiled, and its kernel equals the
// interpreter on the sub-program at two batch sizes.
#include <doctest/doctest.h>

#include <unordered_map>

#include "fusion_programs.h"
#include "kernel_test_util.h"
#include "oar/ir/interpreter.h"
#include "oar_compiler/fusion.h"
#include "oar_compiler/loop_ir.h"

using namespace oar;

namespace {

// The group's operations as a program: its inputs in order, then its ops,
// then its outputs (what the compiler pass hands to lower_group).
ir::Program extract(const compiler::Group& g) {
  ir::Program sub;
  std::unordered_map<const ir::Value*, ir::Value*> map;
  for (size_t i = 0; i < g.inputs.size(); ++i)
    map[g.inputs[i]] = sub.add_input("in" + std::to_string(i), g.inputs[i]->type());
  for (const ir::Operation* op : g.ops) {
    std::vector<ir::Value*> operands;
    for (const ir::Value* v : op->operands()) operands.push_back(map.at(v));
    std::vector<ir::TensorType> types;
    for (const ir::Value* r : op->results()) types.push_back(r->type());
    ir::Operation* copy = sub.append(op->def(), operands, op->attrs(), types);
    for (size_t i = 0; i < op->results().size(); ++i) map[op->result(i)] = copy->result(i);
  }
  for (size_t i = 0; i < g.outputs.size(); ++i)
    sub.add_output(map.at(g.outputs[i]), "out" + std::to_string(i));
  return sub;
}

// A random input of the value's type with dynamic dims `batch`; integers
// are class labels in [0, 10).
Tensor input_for(const ir::Value* v, int64_t batch, uint32_t seed) {
  Shape s = v->type().with_dynamic_dims(batch);
  DType t = v->type().dtype;
  if (is_integer(t)) return cast(kernel_test::random_tensor(s, DType::f64, seed, 0, 9.99), t);
  return kernel_test::random_tensor(s, t, seed, -2, 2);
}

}  // namespace

TEST_CASE(
    "every planned group of the plan tests' programs lowers to its schedule and equals its "
    "sub-program") {
  for (const auto& [name, make] : oar_test::fusion_test_programs()) {
    ir::Program p = make();
    auto groups = compiler::plan_fusion(p.block(), {}, nullptr);
    CHECK_MESSAGE(!groups.empty(), name);
    std::vector<ir::Program> subs;
    std::vector<compiler::Kernel> kernels;
    std::vector<size_t> lowered;
    std::string source;
    for (size_t i = 0; i < groups.size(); ++i) {
      const compiler::Group& g = groups[i];
      subs.push_back(extract(g));
      std::string why;
      std::optional<compiler::Kernel> kernel = compiler::lower_group(subs.back(), &why);
      CHECK_MESSAGE(kernel.has_value(), name << ": " << g.name << " does not lower: " << why);
      if (!kernel) continue;
      const auto expected = g.kind == compiler::GroupKind::reduce
                                ? compiler::ScheduleKind::row_reduce
                                : compiler::ScheduleKind::elementwise;
      CHECK_MESSAGE(kernel->kind == expected, name << ": " << g.name);
      source += compiler::emit_cpu(*kernel, "k" + std::to_string(i));
      kernels.push_back(std::move(*kernel));
      lowered.push_back(i);
    }
    if (lowered.empty()) continue;
    kernel_test::Library lib(source);
    for (size_t j = 0; j < lowered.size(); ++j) {
      const size_t i = lowered[j];
      for (int64_t batch : {3, 5}) {
        std::vector<Tensor> in;
        for (size_t k = 0; k < groups[i].inputs.size(); ++k)
          in.push_back(
              input_for(groups[i].inputs[k], batch, static_cast<uint32_t>(31 * i + k + batch)));
        std::vector<Tensor> want = ir::interpret(subs[i], in);
        std::vector<Tensor> got =
            kernel_test::run_kernel(kernels[j], lib.get("k" + std::to_string(i)), in, 2);
        REQUIRE(got.size() == want.size());
        for (size_t o = 0; o < want.size(); ++o) {
          INFO(name << " " << groups[i].name << " batch " << batch << " output " << o);
          CHECK(got[o].shape() == want[o].shape());
          if (is_floating(want[o].dtype())) {
            const double tol = kernel_test::tolerance(want[o].dtype()) * 10;
            oar_test::check_close(oar_test::values(got[o]), oar_test::values(want[o]), tol, tol);
          } else {
            CHECK(oar_test::values(cast(got[o], DType::f64)) ==
                  oar_test::values(cast(want[o], DType::f64)));
          }
        }
      }
    }
  }
}
