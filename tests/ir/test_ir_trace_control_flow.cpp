// Tracing cond and while into regions (Note [Tracing control flow] in
// trace_control_flow.cpp): programs traced from C++ callables run to the
// branch or trip count their inputs choose, errors name both types, and
// program autodiff through a traced cond gives the taken branch's gradient
// (Note [VJP of cond] in autodiff.cpp).
#include "oar/ir/autodiff.h"
#include "oar/ir/control_flow.h"
#include "oar/ir/executor.h"
#include "oar/ir/printer.h"
#include "oar/ir/trace.h"
#include "oar/ops.h"
#include "test_util.h"

namespace ir = oar::ir;
using oar::DType;
using oar::Tensor;
using oar_test::check_close;
using oar_test::error_of;

namespace {

ir::Tracer& tracer() { return dynamic_cast<ir::Tracer&>(oar::current_builder()); }

Tensor f32(const std::vector<float>& v) {
  return Tensor::from_vector(v, {static_cast<int64_t>(v.size())});
}
Tensor i64(int64_t v) { return Tensor::from_vector(std::vector<int64_t>{v}, {}); }

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// y = sum(x) > 0 ? x * x : -x, for x: f32[2].
ir::Trace traced_cond() {
  return ir::trace(
      [](const std::vector<Tensor>& in) {
        const Tensor& x = in[0];
        Tensor pred = oar::greater_than(oar::sum(x), oar::scalar_like(oar::sum(x), 0.0));
        return tracer().trace_cond(
            pred,
            [&](const std::vector<Tensor>&) { return std::vector<Tensor>{oar::multiply(x, x)}; },
            [&](const std::vector<Tensor>&) { return std::vector<Tensor>{oar::neg(x)}; },
            "test cond");
      },
      {{{2}, DType::f32, "x"}});
}

}  // namespace

TEST_CASE("trace_cond: the program takes either branch on each run") {
  ir::Trace t = traced_cond();
  CHECK(contains(ir::to_string(t.program), "= cond("));
  ir::Executor ex(t.program, oar::default_device());
  check_close(ex.run(std::vector<Tensor>{f32({1, 2})})[0], {1, 4});
  check_close(ex.run(std::vector<Tensor>{f32({-1, -2})})[0], {1, 2});
}

TEST_CASE("trace_while: carried values through region arguments, any trip count") {
  // (i, s) = while (i < n) { i + 1, s * 2 } from (0, x)
  ir::Trace t = ir::trace(
      [](const std::vector<Tensor>& in) {
        const Tensor &x = in[0], &n = in[1];
        Tensor zero = oar::scalar_like(n, 0.0);
        return tracer().trace_while(
            [&](const std::vector<Tensor>& v) {
              return std::vector<Tensor>{oar::less_than(v[0], n)};
            },
            [&](const std::vector<Tensor>& v) {
              return std::vector<Tensor>{oar::add(v[0], oar::scalar_like(v[0], 1.0)),
                                         oar::multiply(v[1], oar::scalar_like(v[1], 2.0))};
            },
            {zero, x}, "test while");
      },
      {{{2}, DType::f32, "x"}, {{}, DType::i64, "n"}});
  ir::Executor ex(t.program, oar::default_device());
  for (int64_t n : {0, 1, 3}) {
    std::vector<Tensor> out = ex.run(std::vector<Tensor>{f32({1, -1}), i64(n)});
    double scale = static_cast<double>(1 << n);
    check_close(out[1], {scale, -scale});
  }
}

TEST_CASE("trace_cond and trace_while: errors name the site and both types") {
  auto branches = [](bool cast) {
    return ir::trace(
        [cast](const std::vector<Tensor>& in) {
          const Tensor& x = in[0];
          Tensor pred = oar::greater_than(oar::sum(x), oar::scalar_like(oar::sum(x), 0.0));
          return tracer().trace_cond(
              pred, [&](const std::vector<Tensor>&) { return std::vector<Tensor>{x}; },
              [&](const std::vector<Tensor>&) {
                return std::vector<Tensor>{cast ? oar::cast(x, DType::i64)
                                                : oar::concat({x, x}, 0)};
              },
              "site");
        },
        {{{2}, DType::f32, "x"}});
  };
  CHECK(contains(
      error_of([&] { branches(true); }),
      "site: the branches give different dtypes for value 0: f32[2] (then) and i64[2] (else)"));
  CHECK(contains(
      error_of([&] { branches(false); }),
      "site: the branches give different shapes for value 0: f32[2] (true branch) and f32[4]"));
  std::string e = error_of([] {
    ir::trace(
        [](const std::vector<Tensor>& in) {
          return tracer().trace_while(
              [](const std::vector<Tensor>& v) {
                return std::vector<Tensor>{
                    oar::less_than(oar::sum(v[0]), oar::scalar_like(oar::sum(v[0]), 9.0))};
              },
              [](const std::vector<Tensor>& v) {
                return std::vector<Tensor>{oar::cast(v[0], DType::f64)};
              },
              in, "loop");
        },
        {{{2}, DType::f32, "x"}});
  });
  CHECK(contains(e, "loop: the body changes loop variable 0 from f32[2] to f64[2]"));
}

TEST_CASE("append_backward through a traced cond: the gradient of the taken branch") {
  ir::Trace t = traced_cond();
  ir::Program& p = t.program;
  ir::Value* loss_in = p.outputs()[0].value;
  // loss = sum(y): d/dx is 2x (then) or -1 (else).
  std::vector<ir::Value*> grads = ir::append_backward(p, {loss_in}, {p.inputs()[0]}, {});
  REQUIRE(grads[0] != nullptr);
  p.add_output(grads[0], "dx");
  CHECK(contains(ir::to_string(p), "= cond("));
  ir::Executor ex(p, oar::default_device());
  check_close(ex.run(std::vector<Tensor>{f32({1, 2})})[1], {2, 4});
  check_close(ex.run(std::vector<Tensor>{f32({-1, -2})})[1], {-1, -1});
}
