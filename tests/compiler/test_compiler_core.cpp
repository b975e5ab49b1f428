// The core side of the compiler (issue 15, item 1): the fusion_group op
// (meta rule, decomposition eagerly, in programs, through autodiff and
// serialization) and the pipeline pass registry with its switches. The
// compiler plugin is disabled here (OAR_COMPILER_DISABLE=1, set before the
// runtime loads), so only the core's behaviour is seen.
#include <cstdlib>
#include <string>

#include "env_var.h"
#include "oar/autograd.h"
#include "oar/builder.h"
#include "oar/ir/executor.h"
#include "oar/ir/fusion_group.h"
#include "oar/ir/interpreter.h"
#include "oar/ir/pass.h"
#include "oar/ir/serialize.h"
#include "oar/ir/trace.h"
#include "oar/ops.h"
#include "test_util.h"

namespace ir = oar::ir;
using oar::DType;
using oar::Tensor;

namespace {

const int kDisablePlugin = (setenv("OAR_COMPILER_DISABLE", "1", 1), 0);


// The group x * x + w as a sub-program: x f32[-1, 4], w f32[4].
std::string square_plus_program() {
  ir::TracedFunction fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{oar::add(oar::multiply(in[0], in[0]), in[1]), oar::exp(in[1])};
  };
  ir::Trace t = ir::trace(fn, {{{-1, 4}, DType::f32, "in0"}, {{4}, DType::f32, "in1"}}, {}, oar::Device{"cpu", 0});
  return ir::to_json(t.program, -1);
}

oar::Attrs group_attrs(const std::string& program) {
  return oar::Attrs{{"program", program}, {"key", std::string("test-key")}, {"name", std::string("g0_test")}};
}

const oar::OpDef& fusion_group() { return oar::OpRegistry::instance().get("fusion_group"); }

}  // namespace

TEST_CASE("fusion_group runs its sub-program eagerly: x * x + w and exp(w)") {
  (void)kDisablePlugin;
  for (const oar::Device& dev : oar_test::test_devices()) {
    Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, -1, -2, -3, -4, 0.5f, 0, 0, 0}, {3, 4}, dev);
    Tensor w = Tensor::from_vector<float>({10, 20, 30, 40}, {4}, dev);
    std::vector<Tensor> in{x, w};
    std::vector<Tensor> out = oar::current_builder().apply(fusion_group(), in, group_attrs(square_plus_program()), nullptr);
    REQUIRE(out.size() == 2);
    CHECK(out[0].shape() == oar::Shape{3, 4});
    oar_test::check_close(out[0], {11, 24, 39, 56, 11, 24, 39, 56, 10.25, 20, 30, 40});
    oar_test::check_close(out[1], {std::exp(10.0), std::exp(20.0), std::exp(30.0), std::exp(40.0)}, 1e-5, 1e-5);
  }
}

TEST_CASE("fusion_group's meta rule follows dynamic dims and names the group when operands do not fit") {
  std::string program = square_plus_program();
  std::vector<oar::TensorMeta> in{{DType::f32, {7, 4}}, {DType::f32, {4}}};
  auto out = oar::infer_meta(fusion_group(), in, group_attrs(program));
  REQUIRE(out.size() == 2);
  CHECK(out[0].shape == oar::Shape{7, 4});
  CHECK(out[1].shape == oar::Shape{4});
  std::vector<oar::TensorMeta> bad{{DType::f64, {7, 4}}, {DType::f32, {4}}};
  std::string msg = oar_test::error_of([&] { oar::infer_meta(fusion_group(), bad, group_attrs(program)); });
  CHECK(msg.find("fusion_group 'g0_test'") != std::string::npos);
  CHECK(msg.find("operand 0 is f64[7, 4]") != std::string::npos);
  std::vector<oar::TensorMeta> wrong_cols{{DType::f32, {7, 5}}, {DType::f32, {4}}};
  CHECK(oar_test::error_of([&] { oar::infer_meta(fusion_group(), wrong_cols, group_attrs(program)); })
            .find("f32[-1, 4]") != std::string::npos);
  CHECK(oar_test::error_of([&] { oar::infer_meta(fusion_group(), in, group_attrs("{not json")); })
            .find("fusion_group 'g0_test'") != std::string::npos);
}

TEST_CASE("a program holding a fusion_group verifies, round-trips through JSON and runs on any device") {
  std::string sub = square_plus_program();
  ir::Program p;
  ir::Value* x = p.add_input("x", {DType::f32, {-1, 4}});
  ir::Value* w = p.add_input("w", {DType::f32, {4}});
  ir::Operation* g = p.append(fusion_group(), {x, w}, group_attrs(sub), {{DType::f32, {-1, 4}}, {DType::f32, {4}}});
  p.add_output(g->result(0), "y");
  p.add_output(g->result(1), "e");
  ir::Program back = ir::from_json(ir::to_json(p), {});
  CHECK(ir::to_json(back) == ir::to_json(p));
  for (const oar::Device& dev : oar_test::test_devices()) {
    ir::Executor exec(back, dev);
    for (int64_t rows : {1, 5}) {  // two sizes of the dynamic dim, one compilation
      std::vector<float> xs(static_cast<size_t>(rows * 4));
      std::vector<double> want;
      for (size_t i = 0; i < xs.size(); ++i) {
        xs[i] = static_cast<float>(i) * 0.5f - 1;
        want.push_back(double(xs[i]) * xs[i] + 10.0 * double(i % 4 + 1));
      }
      std::vector<Tensor> in{Tensor::from_vector(xs, {rows, 4}, dev), Tensor::from_vector<float>({10, 20, 30, 40}, {4}, dev)};
      std::vector<Tensor> got = exec.run(in);
      oar_test::check_close(got[0], want);
    }
  }
}

TEST_CASE("autodiff differentiates a fusion_group through its decomposition") {
  Tensor x = Tensor::from_vector<float>({1, -2, 3, 0.5f}, {1, 4}).set_requires_grad();
  Tensor w = Tensor::from_vector<float>({1, 2, 3, 4}, {4}).set_requires_grad();
  std::vector<Tensor> in{x, w};
  std::vector<Tensor> out = oar::current_builder().apply(fusion_group(), in, group_attrs(square_plus_program()), nullptr);
  Tensor loss = oar::add(oar::sum(out[0]), oar::sum(out[1]));
  std::vector<Tensor> grads = oar::grad({loss}, {x, w});
  oar_test::check_close(grads[0], {2, -4, 6, 1});  // d(x*x)/dx
  oar_test::check_close(grads[1], {1 + std::exp(1.0), 1 + std::exp(2.0), 1 + std::exp(3.0), 1 + std::exp(4.0)}, 1e-4,
                        1e-5);
}

TEST_CASE("a fusion_group whose program has constants or no outputs is refused with a sentence") {
  ir::Program none;
  none.add_input("in0", {DType::f32, {4}});
  std::string msg = oar_test::error_of([&] { ir::fusion_group_program(ir::to_json(none), "g9_empty"); });
  CHECK(msg.find("fusion_group 'g9_empty'") != std::string::npos);
  CHECK(msg.find("no outputs") != std::string::npos);
}

namespace {
int g_marker_runs = 0;
struct MarkerPass final : ir::Pass {
  std::string name() const override { return "test_marker"; }
  bool run(ir::Program&) override {
    ++g_marker_runs;
    return false;
  }
};
struct ThrowingPass final : ir::Pass {
  std::string name() const override { return "test_throwing"; }
  bool run(ir::Program& p) override {
    p.clear_outputs();  // half-done damage the pipeline must undo
    throw oar::Error(oar::ErrorCode::internal, "test_throwing: planted failure");
  }
};
}  // namespace

TEST_CASE("default_pipeline runs the registered passes only with the compiler on, after decomposing composites") {
  EnvVar c("OAR_COMPILER", nullptr), cinn("FLAGS_use_cinn", nullptr), prim("FLAGS_prim_all", nullptr);
  CHECK_FALSE(ir::PipelineOptions{}.compiler);
  {
    EnvVar on("OAR_COMPILER", "1");
    CHECK(ir::PipelineOptions{}.compiler);
    CHECK(ir::PipelineOptions{}.decompose_composites);
  }
  {
    EnvVar on("FLAGS_use_cinn", "true");
    CHECK(ir::PipelineOptions{}.compiler);
    CHECK_FALSE(ir::PipelineOptions{}.decompose_composites);  // FLAGS_prim_all decides, as in Paddle
    EnvVar off("OAR_COMPILER", "0");
    CHECK_FALSE(ir::PipelineOptions{}.compiler);
  }
  ir::register_pipeline_pass("test_marker", [](const oar::Device&) { return std::make_unique<MarkerPass>(); });
  auto names = ir::registered_pipeline_passes();
  CHECK(std::find(names.begin(), names.end(), "test_marker") != names.end());
  CHECK(std::find(names.begin(), names.end(), "compiler") == names.end());  // the plugin is disabled here

  ir::TracedFunction fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{oar::rms_norm(in[0], in[1])}; };
  oar::Device cpu{"cpu", 0};
  ir::Trace t = ir::trace(fn, {{{-1, 8}, DType::f32, "x"}, {{8}, DType::f32, "w"}}, {}, cpu);
  auto count = [](const ir::Program& p, const std::string& op) {
    int n = 0;
    for (const auto& o : p.block().ops()) n += o->name() == op;
    return n;
  };
  ir::Program off = t.program.clone();
  g_marker_runs = 0;
  ir::default_pipeline(cpu, {.compiler = false, .decompose_composites = true}).run(off);
  CHECK(g_marker_runs == 0);
  CHECK(count(off, "rms_norm") == 1);
  ir::Program on = t.program.clone();
  ir::default_pipeline(cpu, {.compiler = true, .decompose_composites = true}).run(on);
  CHECK(g_marker_runs == 1);
  CHECK(count(on, "rms_norm") == 0);  // the compiler sees the primitives
  CHECK(count(on, "rsqrt") == 1);
  ir::Program kept = t.program.clone();
  ir::default_pipeline(cpu, {.compiler = true, .decompose_composites = false}).run(kept);
  CHECK(count(kept, "rms_norm") == 1);
  // Decomposed or not, the results are the uncompiled program's.
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8, -1, -2, -3, -4, -5, -6, -7, 0}, {2, 8}, cpu);
  Tensor w = Tensor::from_vector<float>({1, 1, 2, 2, 0.5f, 0.5f, 1, 3}, {8}, cpu);
  std::vector<Tensor> in{x, w};
  oar_test::check_close(ir::interpret(on, in)[0], oar_test::values(ir::interpret(off, in)[0]), 1e-5, 1e-5);
}

TEST_CASE("a registered pass that throws leaves the program as it was, with a warning") {
  ir::register_pipeline_pass("test_throwing", [](const oar::Device&) { return std::make_unique<ThrowingPass>(); });
  ir::TracedFunction fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{oar::exp(in[0])}; };
  oar::Device cpu{"cpu", 0};
  ir::Trace t = ir::trace(fn, {{{3}, DType::f32, "x"}}, {}, cpu);
  ir::default_pipeline(cpu, {.compiler = true, .decompose_composites = true}).run(t.program);
  REQUIRE(t.program.outputs().size() == 1);
  Tensor x = Tensor::from_vector<float>({0, 1, 2}, {3}, cpu);
  std::vector<Tensor> in{x};
  oar_test::check_close(ir::interpret(t.program, in)[0], {1, std::exp(1.0), std::exp(2.0)}, 1e-5, 1e-5);
  // Replace it by a harmless one so later pipelines in this process are clean.
  ir::register_pipeline_pass("test_throwing", [](const oar::Device&) { return std::make_unique<MarkerPass>(); });
}
