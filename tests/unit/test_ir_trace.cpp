// Capture: tracing eager code into a program (dynamic dims, specialization,
// parameters and constants, autograd inside a trace), the printer and the
// verifier. Programs are checked by running them with the reference
// interpreter against eager mode.
#include "oar/ir/interpreter.h"
#include "oar/ir/printer.h"
#include "oar/ir/trace.h"
#include "oar/ir/verifier.h"
#include "test_util.h"

using namespace oar;
using oar_test::check_close;
using oar_test::error_of;
using oar_test::values;

namespace {
Tensor range_tensor(const Shape& shape, double scale, const Device& d) {
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(scale * (static_cast<double>(i % 7) - 3.0));
  return Tensor::from_vector(v, shape, d);
}
}  // namespace

TEST_CASE("a traced layer has dynamic batch dims and equals eager mode at every batch size") {
  for (const Device& d : oar_test::test_devices()) {
    Tensor w = range_tensor({4, 3}, 0.1, d), b = range_tensor({3}, 0.05, d);
    auto f = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{tanh(matmul(in[0], w) + b)}; };
    ir::Trace t = ir::trace(f, {{{-1, 4}, DType::f32, "x"}}, {{"fc.weight", w}, {"fc.bias", b}}, d);
    CHECK_FALSE(t.specialized);
    REQUIRE(t.program.inputs().size() == 1);
    CHECK(t.program.inputs()[0]->type().str() == "f32[-1, 4]");
    CHECK(t.program.outputs()[0].value->type().str() == "f32[-1, 3]");
    CHECK(t.parameters.size() == 2);
    for (int64_t batch : {1, 3, 5}) {
      Tensor x = range_tensor({batch, 4}, 0.3, d);
      std::vector<Tensor> got = ir::interpret(t.program, std::vector<Tensor>{x}, t.parameters);
      check_close(got[0], values(f({x})[0]));
    }
  }
}

TEST_CASE("the printer shows a traced program exactly") {
  Device d{"cpu", 0};
  Tensor w = range_tensor({4, 3}, 0.1, d);
  auto f = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{relu(matmul(in[0], w)) * 2.0}; };
  ir::Trace t = ir::trace(f, {{{-1, 4}, DType::f32, "x"}}, {{"w", w}}, d);
  CHECK(ir::to_string(t.program) ==
        "program {\n"
        "  input %x: f32[-1, 4]\n"
        "  param %w: f32[4, 3]\n"
        "  %0: f32[-1, 3] = matmul(%x, %w) {transpose_a=false, transpose_b=false}\n"
        "  %1: f32[-1, 3] = relu(%0)\n"
        "  %2: f32[] = full() {shape=[], dtype=0, value=2.0}\n"
        "  %3: f32[-1, 3] = mul(%1, %2)\n"
        "  output output_0: %3\n"
        "}\n");
}

TEST_CASE("a shape computed from x.shape() specializes the trace") {
  Device d{"cpu", 0};
  auto f = [](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    return std::vector<Tensor>{reshape(x, {x.shape()[0] * x.shape()[1]})};
  };
  ir::Trace t = ir::trace(f, {{{-1, 4}, DType::f32, "x"}}, {}, d, {{3, 4}});
  CHECK(t.specialized);
  CHECK(t.specs[0].shape == Shape{3, 4});
  CHECK(t.program.inputs()[0]->type().str() == "f32[3, 4]");
  CHECK(t.program.outputs()[0].value->type().str() == "f32[12]");
  // reshape with -1 keeps the batch dynamic.
  auto g = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{reshape(in[0], {-1, 2})}; };
  ir::Trace t2 = ir::trace(g, {{{-1, 4}, DType::f32, "x"}}, {}, d);
  CHECK_FALSE(t2.specialized);
  CHECK(t2.program.outputs()[0].value->type().str() == "f32[-1, 2]");
  // flatten keeps the batch dynamic too; an empty tensor still flattens.
  auto fl = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{flatten(in[0], 1)}; };
  ir::Trace t3 = ir::trace(fl, {{{-1, 2, 3}, DType::f32, "x"}}, {}, d);
  CHECK_FALSE(t3.specialized);
  CHECK(t3.program.outputs()[0].value->type().str() == "f32[-1, 6]");
  CHECK(flatten(zeros({0, 2, 3}, DType::f32, d), 1).shape() == Shape{0, 6});
}

TEST_CASE("captured tensors become constants, or parameters when named or requiring grad") {
  Device d{"cpu", 0};
  Tensor c = Tensor::from_vector<float>({1, 2}, {2}, d);
  Tensor p = Tensor::from_vector<float>({3, 4}, {2}, d).set_requires_grad(true);
  auto f = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * c + p}; };
  ir::Trace t = ir::trace(f, {{{2}, DType::f32, "x"}}, {}, d);
  REQUIRE(t.program.constants().size() == 1);
  REQUIRE(t.program.parameters().size() == 1);
  CHECK(t.program.parameters()[0]->name() == "param_0");
  CHECK(t.parameters.count("param_0") == 1);
  Tensor x = Tensor::from_vector<float>({10, 20}, {2}, d);
  check_close(ir::interpret(t.program, std::vector<Tensor>{x}, t.parameters)[0], {13, 44});
  // An input returned unchanged is an output too.
  auto id = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0]}; };
  ir::Trace t2 = ir::trace(id, {{{2}, DType::f32, "x"}}, {}, d);
  CHECK(t2.program.outputs()[0].value == t2.program.inputs()[0]);
}

TEST_CASE("reading values while tracing, or leaking a symbolic tensor, is a clear error") {
  Device d{"cpu", 0};
  auto reads = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * sum(in[0]).item()}; };
  CHECK(error_of([&] { ir::trace(reads, {{{2}, DType::f32, "x"}}, {}, d); }).find("symbolic tensor") !=
        std::string::npos);
  Tensor leaked;
  auto leak = [&](const std::vector<Tensor>& in) {
    leaked = in[0] + 1.0;
    return std::vector<Tensor>{leaked};
  };
  ir::trace(leak, {{{2}, DType::f32, "x"}}, {}, d);
  CHECK(error_of([&] { (void)(leaked + 1.0); }).find("symbolic tensor of a to_static trace used outside it") !=
        std::string::npos);
  CHECK(error_of([&] { (void)leaked.to_vector<float>(); }).find("symbolic") != std::string::npos);
}

TEST_CASE("oar::grad inside a traced function emits the backward (a PINN-style derivative)") {
  for (const Device& d : oar_test::test_devices()) {
    auto f = [](const std::vector<Tensor>& in) {
      Tensor x = in[0].detach().set_requires_grad(true);
      Tensor u = sin(x) * x;
      Tensor du = grad({sum(u)}, {x}, {}, /*create_graph=*/true)[0];
      Tensor ddu = grad({sum(du)}, {x}, {}, true)[0];
      return std::vector<Tensor>{du, ddu};
    };
    // The backward takes its shapes from its operands (sum's gradient is
    // broadcast_to_like x), so the trace stays dynamic: one trace serves
    // every size.
    ir::Trace t = ir::trace(f, {{{-1}, DType::f64, "x"}}, {}, d, {{3}});
    CHECK_FALSE(t.specialized);
    CHECK(t.program.inputs()[0]->type().str() == "f64[-1]");
    for (std::vector<double> xs : {std::vector<double>{-1.0, 0.25, 2.0}, std::vector<double>{0.5, -3.0, 1.5, 4.0, 0.0}}) {
      Tensor x = Tensor::from_vector(xs, {static_cast<int64_t>(xs.size())}, d);
      std::vector<Tensor> got = ir::interpret(t.program, std::vector<Tensor>{x}, {});
      std::vector<double> du, ddu;
      for (double v : xs) {
        du.push_back(std::cos(v) * v + std::sin(v));
        ddu.push_back(-std::sin(v) * v + 2 * std::cos(v));
      }
      check_close(got[0], du, 1e-12, 1e-12);
      check_close(got[1], ddu, 1e-12, 1e-12);
    }
  }
}

TEST_CASE("the verifier names the operation that is wrong") {
  ir::Program p;
  ir::Value* x = p.add_input("x", {DType::f32, {2, 3}});
  const OpDef& add_def = OpRegistry::instance().get("add");
  ir::Operation* op = p.append(add_def, {x, x}, {}, {{DType::f32, {2, 4}}});
  p.add_output(op->result());
  CHECK(error_of([&] { ir::verify(p); }).find("operation 0 (add) result 0 has type f32[2, 4] but the op gives f32[2, 3]") !=
        std::string::npos);

  ir::Program q;
  ir::Value* y = q.add_input("y", {DType::f32, {2}});
  ir::Operation* first = q.append(add_def, {y, y}, {}, {{DType::f32, {2}}});
  ir::Operation* second = q.append(add_def, {y, y}, {}, {{DType::f32, {2}}});
  first->set_operand(1, second->result());
  q.add_output(first->result());
  CHECK(error_of([&] { ir::verify(q); }).find("operation 0 (add) uses operand 1 before it is defined") !=
        std::string::npos);
  CHECK(error_of([&] { q.add_input("y", {DType::f32, {1}}); }).find("'y' is already used") != std::string::npos);

  // With dynamic dims: static result dims are still checked, and a dim that
  // follows the batch must be dynamic.
  const OpDef& matmul_def = OpRegistry::instance().get("matmul");
  Attrs mm{{"transpose_a", false}, {"transpose_b", false}};
  for (const auto& [dims, ok] : std::vector<std::pair<Shape, bool>>{{{-1, 3}, true}, {{-1, 5}, false}, {{2, 3}, false}}) {
    ir::Program r;
    ir::Value* a = r.add_input("a", {DType::f32, {-1, 4}});
    ir::Value* w = r.add_parameter("w", {DType::f32, {4, 3}});
    r.add_output(r.append(matmul_def, {a, w}, mm, {{DType::f32, dims}})->result());
    INFO(shape_str(dims));
    CHECK(error_of([&] { ir::verify(r); }).empty() == ok);
  }
}
