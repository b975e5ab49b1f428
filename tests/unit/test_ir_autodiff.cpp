// Program autodiff: the backward appended to a traced program, for every
// differentiable op (tests/grad_cases.h), to first and second order,
// against eager oar::grad; and static training with SGD updates.
#include "grad_cases.h"
#include "oar/ir/autodiff.h"
#include "oar/ir/interpreter.h"
#include "oar/ir/trace.h"
#include "oar/ir/verifier.h"

using namespace oar;
using oar_test::check_close;
using oar_test::error_of;
using oar_test::values;

namespace {

std::vector<ir::InputSpec> specs_of(const std::vector<Tensor>& inputs) {
  std::vector<ir::InputSpec> specs;
  for (size_t i = 0; i < inputs.size(); ++i) specs.push_back({inputs[i].shape(), inputs[i].dtype(), "in" + std::to_string(i)});
  return specs;
}

}  // namespace

TEST_CASE("every differentiable op: program gradients equal eager gradients, to second order") {
  for (const Device& d : oar_test::test_devices()) {
    for (const auto& c : oar_test::grad_cases(d)) {
      INFO(d.str() << ": " << c.name);
      auto f = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{c.f(in)}; };
      ir::Trace t = ir::trace(f, specs_of(c.inputs), {}, d);
      ir::Program& p = t.program;
      ir::Value* y = p.outputs()[0].value;
      ir::Value* v = p.add_input("v", y->type());
      std::vector<ir::Value*> wrt;
      for (size_t i : c.wrt) wrt.push_back(p.inputs()[i]);
      std::vector<ir::Value*> g = ir::append_backward(p, {y}, wrt, {v});
      std::vector<ir::Value*> w;
      for (size_t k = 0; k < g.size(); ++k) {
        p.add_output(g[k], "grad" + std::to_string(k));
        w.push_back(p.add_input("w" + std::to_string(k), wrt[k]->type()));
      }
      // Second order: d/d(wrt) of sum_k sum(g_k * w_k).
      std::vector<ir::Value*> gg = ir::append_backward(p, g, wrt, w, {.allow_unused = true});
      for (size_t k = 0; k < gg.size(); ++k) {
        if (gg[k]) p.add_output(gg[k], "grad2_" + std::to_string(k));
      }
      ir::verify(p);

      std::vector<Tensor> leaves = c.inputs;
      for (size_t i : c.wrt) leaves[i] = c.inputs[i].detach().set_requires_grad(true);
      Tensor y_eager = c.f(leaves);
      Tensor v_t = Tensor::from_vector(oar_test::random_values(y_eager.numel(), 3), y_eager.shape(), d);
      std::vector<Tensor> targets, w_t;
      for (size_t i : c.wrt) {
        targets.push_back(leaves[i]);
        w_t.push_back(Tensor::from_vector(oar_test::random_values(leaves[i].numel(), 5 + i), leaves[i].shape(), d));
      }
      std::vector<Tensor> g_eager = oar::grad({y_eager}, targets, {v_t}, true);
      // A gradient that does not depend on the inputs (linear ops) has no
      // history: its own gradient is zero.
      std::vector<Tensor> live, live_w;
      for (size_t k = 0; k < g_eager.size(); ++k) {
        if (g_eager[k].requires_grad()) {
          live.push_back(g_eager[k]);
          live_w.push_back(w_t[k]);
        }
      }
      std::vector<Tensor> gg_eager(targets.size());
      if (!live.empty()) gg_eager = oar::grad(live, targets, live_w, false, std::nullopt, true);

      std::vector<Tensor> run_inputs = c.inputs;
      run_inputs.push_back(v_t);
      run_inputs.insert(run_inputs.end(), w_t.begin(), w_t.end());
      std::vector<Tensor> got = ir::interpret(p, run_inputs);
      for (size_t k = 0; k < g.size(); ++k) check_close(got[1 + k], values(g_eager[k]), 1e-10, 1e-10);
      size_t at = 1 + g.size();
      for (size_t k = 0; k < gg.size(); ++k) {
        if (!gg[k]) {
          // The gradient does not depend on this input: eager agrees.
          if (gg_eager[k].defined()) check_close(gg_eager[k], std::vector<double>(gg_eager[k].numel(), 0.0));
          continue;
        }
        std::vector<double> want = gg_eager[k].defined() ? values(gg_eager[k])
                                                         : std::vector<double>(got[at].numel(), 0.0);
        check_close(got[at++], want, 1e-10, 1e-10);
      }
    }
  }
}

TEST_CASE("grad-of-grad by applying append_backward twice: tanh's closed forms") {
  Device d{"cpu", 0};
  auto f = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{sum(tanh(in[0]))}; };
  ir::Trace t = ir::trace(f, {{{4}, DType::f64, "x"}}, {}, d);
  ir::Program& p = t.program;
  ir::Value* x = p.inputs()[0];
  ir::Value* g = ir::append_backward(p, {p.outputs()[0].value}, {x})[0];
  p.add_output(g, "dy");
  // sum(g) differentiated again: d/dx sum(1 - tanh^2) = -2 tanh (1 - tanh^2).
  ir::Value* gg = ir::append_backward(p, {g}, {x})[0];
  p.add_output(gg, "d2y");
  std::vector<double> xs{-1.5, -0.2, 0.3, 2.0};
  std::vector<Tensor> got = ir::interpret(p, std::vector<Tensor>{Tensor::from_vector(xs, {4}, d)});
  std::vector<double> dy, d2y;
  for (double v : xs) {
    double th = std::tanh(v);
    dy.push_back(1 - th * th);
    d2y.push_back(-2 * th * (1 - th * th));
  }
  check_close(got[1], dy, 1e-12, 1e-12);
  check_close(got[2], d2y, 1e-12, 1e-12);
}

TEST_CASE("an unreachable wrt value is an error unless allow_unused") {
  Device d{"cpu", 0};
  auto f = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{sum(in[0] * 2.0)}; };
  ir::Trace t = ir::trace(f, {{{3}, DType::f32, "x"}, {{3}, DType::f32, "z"}}, {}, d);
  ir::Value* loss = t.program.outputs()[0].value;
  ir::Value* z = t.program.inputs()[1];
  CHECK(error_of([&] { ir::append_backward(t.program, {loss}, {z}); }).find("'z' does not reach the targets") !=
        std::string::npos);
  CHECK(ir::append_backward(t.program, {loss}, {z}, {}, {.allow_unused = true})[0] == nullptr);
}

TEST_CASE("static training with SGD updates follows eager SGD step for step") {
  for (const Device& d : oar_test::test_devices()) {
    Tensor w0 = oar_test::random_f64({3, 2}, d), b0 = oar_test::random_f64({2}, d);
    Tensor x = oar_test::random_f64({5, 3}, d), target = oar_test::random_f64({5, 2}, d);
    auto loss_fn = [](const Tensor& xx, const Tensor& tt, const Tensor& w, const Tensor& b) {
      return mse_loss(tanh(matmul(xx, w) + b), tt);
    };
    auto f = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{loss_fn(in[0], in[1], w0, b0)}; };
    ir::Trace t = ir::trace(f, {{{5, 3}, DType::f64, "x"}, {{5, 2}, DType::f64, "t"}}, {{"w", w0}, {"b", b0}}, d);
    ir::append_sgd_step(t.program, t.program.outputs()[0].value, 0.5);
    REQUIRE(t.program.updates().size() == 2);

    ir::ParamMap params{{"b", b0}, {"w", w0}};
    Tensor w = w0, b = b0;
    for (int step = 0; step < 5; ++step) {
      std::vector<Tensor> out = ir::interpret(t.program, std::vector<Tensor>{x, target}, params);
      // Eager: the same step.
      Tensor we = w.detach().set_requires_grad(true), be = b.detach().set_requires_grad(true);
      Tensor loss = loss_fn(x, target, we, be);
      std::vector<Tensor> g = oar::grad({loss}, {we, be});
      check_close(out[0], {loss.item()}, 1e-12, 1e-12);
      {
        NoGrad ng;
        w = we.detach() - g[0] * 0.5;
        b = be.detach() - g[1] * 0.5;
      }
      for (size_t u = 0; u < t.program.updates().size(); ++u) params[t.program.updates()[u].name] = out[1 + u];
      check_close(params["w"], values(w), 1e-12, 1e-12);
      check_close(params["b"], values(b), 1e-12, 1e-12);
    }
  }
}

TEST_CASE("append_backward on a dynamic-batch program whose loss averages over the batch keeps the batch dynamic") {
  // mse_loss's mean counts the batch when the program runs (numel), and the
  // VJPs take their shapes from their operands, so one backward serves
  // every batch size.
  Device d{"cpu", 0};
  Tensor w = oar_test::random_f64({3, 2}, d);
  auto f = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{mse_loss(matmul(in[0], w), in[1])}; };
  ir::Trace t = ir::trace(f, {{{-1, 3}, DType::f64, "x"}, {{-1, 2}, DType::f64, "y"}}, {{"w", w}}, d, {{4, 3}, {4, 2}});
  CHECK(t.program.inputs()[0]->type().str() == "f64[-1, 3]");
  ir::Value* g = ir::append_backward(t.program, {t.program.outputs()[0].value}, {t.program.parameters()[0]})[0];
  t.program.add_output(g, "grad_w");
  CHECK(t.program.inputs()[0]->type().str() == "f64[-1, 3]");
  CHECK(g->type().str() == "f64[3, 2]");
  for (int64_t batch : {1, 4, 7}) {
    CAPTURE(batch);
    Tensor x = oar_test::random_f64({batch, 3}, d), y = oar_test::random_f64({batch, 2}, d);
    Tensor wl = w.detach().set_requires_grad(true);
    Tensor want = oar::grad({mse_loss(matmul(x, wl), y)}, {wl})[0];
    check_close(ir::interpret(t.program, std::vector<Tensor>{x, y}, {{"w", w}})[1], values(want), 1e-12, 1e-12);
  }
}
