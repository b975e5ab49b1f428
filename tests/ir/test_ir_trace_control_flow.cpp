// Tracing cond and while into regions (Note [Tracing control flow] in
// trace_control_flow.cpp): programs traced from C++ callables run to the
// branch or trip count their inputs choose, errors name both types, and
// program autodiff through a traced cond gives the taken branch's gradient
// (Note [VJP of cond] in autodiff.cpp).
#include "oar/ir/autodiff.h"
#include "oar/ir/control_flow.h"
#include "oar/ir/executor.h"
#include "oar/ir/printer.h"
#include "oar/ir/serialize.h"
#include "oar/ir/trace.h"
#include "oar/ops.h"
#include "test_util.h"

#include <cmath>

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

namespace {

// s = a; repeat n times: s = s * w + b. For f32[2] a, w, b and i64 n.
ir::Trace traced_affine_loop() {
  return ir::trace(
      [](const std::vector<Tensor>& in) {
        const Tensor &a = in[0], &w = in[1], &b = in[2], &n = in[3];
        Tensor zero = oar::scalar_like(n, 0.0);
        std::vector<Tensor> out = tracer().trace_while(
            [&](const std::vector<Tensor>& v) { return std::vector<Tensor>{oar::less_than(v[0], n)}; },
            [&](const std::vector<Tensor>& v) {
              return std::vector<Tensor>{oar::add(v[0], oar::scalar_like(v[0], 1.0)),
                                         oar::add(oar::multiply(v[1], w), b)};
            },
            {zero, a}, "affine loop");
        return std::vector<Tensor>{out[1]};
      },
      {{{2}, DType::f32, "a"}, {{2}, DType::f32, "w"}, {{2}, DType::f32, "b"}, {{}, DType::i64, "n"}});
}

// The hand-computed gradients of sum(s_n): d/da = w^n, d/db = sum_{j<n} w^j,
// d/dw = n a w^(n-1) + b sum_{j<n} j w^(j-1).
struct AffineGrads {
  std::vector<double> a, w, b;
};
AffineGrads affine_grads(const std::vector<float>& a, const std::vector<float>& w, const std::vector<float>& b,
                         int n) {
  AffineGrads g;
  for (size_t e = 0; e < a.size(); ++e) {
    double pw = 1, geo = 0, dgeo = 0;
    for (int j = 0; j < n; ++j) {
      geo += std::pow(w[e], j);
      if (j > 0) dgeo += j * std::pow(w[e], j - 1);
      pw *= w[e];
    }
    g.a.push_back(pw);
    g.b.push_back(geo);
    g.w.push_back(n * a[e] * (n > 0 ? std::pow(w[e], n - 1) : 0.0) + b[e] * dgeo);
  }
  return g;
}

}  // namespace

TEST_CASE("append_backward through a traced while: the loop's iterations replayed in reverse") {
  ir::Trace t = traced_affine_loop();
  ir::Program& p = t.program;
  ir::Value* s = p.outputs()[0].value;
  std::vector<ir::Value*> grads =
      ir::append_backward(p, {s}, {p.inputs()[0], p.inputs()[1], p.inputs()[2]}, {});
  for (auto* g : grads) REQUIRE(g != nullptr);
  p.add_output(grads[0], "da");
  p.add_output(grads[1], "dw");
  p.add_output(grads[2], "db");
  std::string text = ir::to_string(p);
  CHECK(contains(text, "save_iterations"));
  // The program now has the forward while (saving its iterations) and its backward while.
  size_t whiles = 0;
  for (size_t at = text.find("= while("); at != std::string::npos; at = text.find("= while(", at + 1)) ++whiles;
  CHECK(whiles == 2);
  // The JSON form keeps the attribute and the stacks.
  ir::Program back = ir::from_json(ir::to_json(p), {});
  CHECK(ir::to_string(back) == text);

  const std::vector<float> a{1.5f, -2.0f}, w{0.5f, 1.25f}, b{0.25f, -1.0f};
  for (ir::Program* program : {&p, &back}) {
    ir::Executor ex(*program, oar::default_device());
    for (int n : {0, 1, 3}) {
      std::vector<Tensor> out = ex.run(std::vector<Tensor>{f32(a), f32(w), f32(b), i64(n)});
      AffineGrads want = affine_grads(a, w, b, n);
      check_close(out[1], want.a, 1e-5);
      check_close(out[2], want.w, 1e-5);
      check_close(out[3], want.b, 1e-5);
    }
  }
}

TEST_CASE("append_backward twice through a traced while: second derivatives through the stacks") {
  // d/dw of sum(d sum(s_n) / dw) = sum over e of d^2 s_n / dw^2 for each element.
  ir::Trace t = traced_affine_loop();
  ir::Program& p = t.program;
  ir::Value* s = p.outputs()[0].value;
  ir::Value* dw = ir::append_backward(p, {s}, {p.inputs()[1]}, {})[0];
  REQUIRE(dw != nullptr);
  ir::Value* d2w = ir::append_backward(p, {dw}, {p.inputs()[1]}, {})[0];
  REQUIRE(d2w != nullptr);
  p.add_output(d2w, "d2w");
  const std::vector<float> a{1.5f, -2.0f}, w{0.5f, 1.25f}, b{0.25f, -1.0f};
  ir::Executor ex(p, oar::default_device());
  for (int n : {0, 1, 2, 4}) {
    std::vector<Tensor> out = ex.run(std::vector<Tensor>{f32(a), f32(w), f32(b), i64(n)});
    // d^2/dw^2 of a w^n + b sum_{j<n} w^j.
    std::vector<double> want;
    for (size_t e = 0; e < a.size(); ++e) {
      double v = n >= 2 ? n * (n - 1) * a[e] * std::pow(w[e], n - 2) : 0.0;
      for (int j = 2; j < n; ++j) v += b[e] * j * (j - 1) * std::pow(w[e], j - 2);
      want.push_back(v);
    }
    check_close(out[1], want, 1e-4);
  }
}

namespace {

// s_{k+1} = sum(s_k) > 0 ? s_k * w : s_k + b, s_0 = a, n iterations: a cond
// nested in the body of a while.
ir::Trace traced_branching_loop() {
  return ir::trace(
      [](const std::vector<Tensor>& in) {
        const Tensor &a = in[0], &w = in[1], &b = in[2], &n = in[3];
        Tensor zero = oar::scalar_like(n, 0.0);
        std::vector<Tensor> out = tracer().trace_while(
            [&](const std::vector<Tensor>& v) { return std::vector<Tensor>{oar::less_than(v[0], n)}; },
            [&](const std::vector<Tensor>& v) {
              const Tensor& s = v[1];
              Tensor pred = oar::greater_than(oar::sum(s), oar::scalar_like(oar::sum(s), 0.0));
              std::vector<Tensor> next = tracer().trace_cond(
                  pred, [&](const std::vector<Tensor>&) { return std::vector<Tensor>{oar::multiply(s, w)}; },
                  [&](const std::vector<Tensor>&) { return std::vector<Tensor>{oar::add(s, b)}; },
                  "branch in loop");
              return std::vector<Tensor>{oar::add(v[0], oar::scalar_like(v[0], 1.0)), next[0]};
            },
            {zero, a}, "branching loop");
        return std::vector<Tensor>{out[1]};
      },
      {{{2}, DType::f32, "a"}, {{2}, DType::f32, "w"}, {{2}, DType::f32, "b"}, {{}, DType::i64, "n"}});
}

// sum(s_n) of the branching loop in double.
double branching_loop(std::vector<double> s, const std::vector<double>& w, const std::vector<double>& b, int n) {
  for (int k = 0; k < n; ++k) {
    double total = 0;
    for (double v : s) total += v;
    for (size_t e = 0; e < s.size(); ++e) s[e] = total > 0 ? s[e] * w[e] : s[e] + b[e];
  }
  double total = 0;
  for (double v : s) total += v;
  return total;
}

}  // namespace

TEST_CASE("append_backward through a while whose body holds a cond: each iteration's branch differentiated") {
  ir::Trace t = traced_branching_loop();
  ir::Program& p = t.program;
  ir::Value* s = p.outputs()[0].value;
  std::vector<ir::Value*> grads = ir::append_backward(p, {s}, {p.inputs()[0], p.inputs()[1], p.inputs()[2]}, {});
  for (auto* g : grads) REQUIRE(g != nullptr);
  for (size_t k = 0; k < grads.size(); ++k) p.add_output(grads[k], "d" + std::to_string(k));
  const std::vector<double> a{1.5, -0.5}, w{0.5, 1.25}, b{0.25, -1.0};
  auto as_f32 = [](const std::vector<double>& v) { return f32(std::vector<float>(v.begin(), v.end())); };
  ir::Program back = ir::from_json(ir::to_json(p), {});
  for (ir::Program* program : {&p, &back}) {
    ir::Executor ex(*program, oar::default_device());
    for (int n : {0, 1, 2, 5}) {
      std::vector<Tensor> out = ex.run(std::vector<Tensor>{as_f32(a), as_f32(w), as_f32(b), i64(n)});
      // Central differences of the double reference, input by input.
      for (size_t which = 0; which < 3; ++which) {
        std::vector<double> want;
        for (size_t e = 0; e < 2; ++e) {
          std::vector<std::vector<double>> plus{a, w, b}, minus{a, w, b};
          const double h = 1e-6;
          plus[which][e] += h;
          minus[which][e] -= h;
          want.push_back((branching_loop(plus[0], plus[1], plus[2], n) -
                          branching_loop(minus[0], minus[1], minus[2], n)) / (2 * h));
        }
        check_close(out[1 + which], want, 1e-4);
      }
    }
  }
}

TEST_CASE("print and assert ops run with each run's values, inside a while too (Note [Print and assert ops])") {
  std::vector<std::string> lines;
  oar::set_print_hook([&](const std::string& format, std::span<const Tensor> tensors) {
    std::string line = format + ":";
    for (const Tensor& t : tensors) {
      for (float v : t.to_vector<float>()) line += " " + std::to_string(static_cast<int>(v));
    }
    lines.push_back(line);
  });
  // while (v < n) { print(v); v = v + 1 }; assert(v < 3); y = v * 2
  ir::Trace t = ir::trace(
      [](const std::vector<Tensor>& in) {
        std::vector<Tensor> out = tracer().trace_while(
            [&](const std::vector<Tensor>& v) { return std::vector<Tensor>{oar::less_than(v[0], in[1])}; },
            [&](const std::vector<Tensor>& v) {
              Tensor shown = oar::print_tensors(std::vector<Tensor>{v[0]}, "v {}")[0];
              return std::vector<Tensor>{oar::add(shown, oar::scalar_like(shown, 1.0))};
            },
            {in[0]}, "print loop");
        Tensor ok = oar::assert_true(oar::less_than(out[0], oar::scalar_like(out[0], 3.0)), {}, "v < 3 at test:1");
        (void)ok;
        return std::vector<Tensor>{oar::multiply(out[0], oar::scalar_like(out[0], 2.0))};
      },
      {{{}, DType::f32, "v"}, {{}, DType::f32, "n"}});
  CHECK(contains(ir::to_string(t.program), "print("));
  ir::Program back = ir::from_json(ir::to_json(t.program), {});
  ir::Executor ex(back, oar::default_device());
  auto scalar = [](float v) { return Tensor::from_vector(std::vector<float>{v}, {}); };
  std::vector<Tensor> out = ex.run(std::vector<Tensor>{scalar(0), scalar(2)});
  check_close(out[0], std::vector<double>{4.0}, 0);
  CHECK(lines == std::vector<std::string>{"v {}: 0", "v {}: 1"});
  std::string message = error_of([&] { ex.run(std::vector<Tensor>{scalar(0), scalar(5)}); });
  CHECK(contains(message, "assert: v < 3 at test:1"));
  CHECK(lines.size() == 7);  // printed 0..4 before the assert failed
  oar::set_print_hook({});
}
