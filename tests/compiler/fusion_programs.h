// Programs the fusion tests plan (test_fusion_plan.cpp) and lower
// (test_fusion_lowering.cpp): traced, then decomposed as the compiler
// pipeline does.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "oar/ir/autodiff.h"
#include "oar/ir/pass.h"
#include "oar/ir/trace.h"
#include "oar/ops.h"

namespace oar_test {

using namespace oar;

// Decomposes every composite op, as the compiler pipeline does, but those
// taking a shape from an operand (their decompositions would bake in one
// size of a dynamic dim; Note [Dynamic dims] in trace.h).
inline void decompose_all(ir::Program& p) {
  static const std::set<std::string> keep = {"full_like", "broadcast_to_like", "shape", "numel"};
  ir::make_decomposition_pass([](const OpDef& d) { return keep.count(d.name) == 0; })->run(p);
  ir::make_dce_pass()->run(p);
}

inline ir::Program traced(const ir::TracedFunction& f, const std::vector<ir::InputSpec>& specs) {
  ir::Trace t = ir::trace(f, specs);
  decompose_all(t.program);
  return std::move(t.program);
}

// A decomposed single-head transformer block: pre-norm attention and MLP,
// residuals; the weights are inputs so no tensor is made eagerly.
inline std::vector<Tensor> block_fn(const std::vector<Tensor>& in) {
  const Tensor &x = in[0], &g1 = in[1], &b1 = in[2], &wq = in[3], &wk = in[4], &wv = in[5],
               &wo = in[6];
  const Tensor &g2 = in[7], &b2 = in[8], &w1 = in[9], &c1 = in[10], &w2 = in[11], &c2 = in[12];
  Tensor h = layer_norm(x, g1, b1, 1e-5, -1);
  Tensor q = matmul(h, wq), k = matmul(h, wk), v = matmul(h, wv);
  Tensor att = softmax(matmul(q, k, false, true) * 0.25, -1);
  Tensor x1 = x + matmul(matmul(att, v), wo);
  Tensor m = gelu(matmul(layer_norm(x1, g2, b2, 1e-5, -1), w1) + c1);
  Tensor y = x1 + matmul(m, w2) + c2;
  return {y};
}

inline std::vector<ir::InputSpec> block_specs() {
  const int64_t C = 16, H = 64;
  auto f32 = [](std::vector<int64_t> s, const char* name) {
    return ir::InputSpec{std::move(s), DType::f32, name};
  };
  return {f32({-1, 8, C}, "x"), f32({C}, "g1"),    f32({C}, "b1"),    f32({C, C}, "wq"),
          f32({C, C}, "wk"),    f32({C, C}, "wv"), f32({C, C}, "wo"), f32({C}, "g2"),
          f32({C}, "b2"),       f32({C, H}, "w1"), f32({H}, "c1"),    f32({H, C}, "w2"),
          f32({C}, "c2")};
}

// The transformer block's training program: mean(y^2) and its gradients
// with respect to x and every weight (append_backward), decomposed.
inline ir::Program block_backward_program() {
  ir::Trace l = ir::trace(
      [](const std::vector<Tensor>& in) {
        Tensor y = block_fn(in)[0];
        return std::vector<Tensor>{mean(y * y)};
      },
      block_specs());
  ir::Program q = std::move(l.program);
  std::vector<ir::Value*> wrt(q.inputs().begin(), q.inputs().end());
  std::vector<ir::Value*> grads = ir::append_backward(q, {q.outputs()[0].value}, wrt);
  for (size_t i = 0; i < grads.size(); ++i) q.add_output(grads[i], "grad_" + wrt[i]->name());
  decompose_all(q);
  return q;
}

// cross_entropy(logits [B, 10], label [B]) and, with `backward`, its
// gradient with respect to the logits.
inline ir::Program cross_entropy_program(bool backward) {
  ir::Trace t = ir::trace(
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{cross_entropy(in[0], in[1])};
      },
      {{{-1, 10}, DType::f32, "logits"}, {{-1}, DType::i64, "label"}});
  ir::Program p = std::move(t.program);
  decompose_all(p);
  if (backward) {
    std::vector<ir::Value*> g = ir::append_backward(p, {p.outputs()[0].value}, {p.find("logits")});
    p.add_output(g[0], "grad_logits");
    decompose_all(p);
  }
  return p;
}

// Every program of the plan tests, by name.
inline std::vector<std::pair<std::string, std::function<ir::Program()>>> fusion_test_programs() {
  using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
  auto one = [](Fn f, std::vector<ir::InputSpec> specs) {
    return [f, specs] { return traced(f, specs); };
  };
  return {
      {"rms_norm", one(
                       [](const std::vector<Tensor>& in) {
                         return std::vector<Tensor>{rms_norm(in[0], in[1])};
                       },
                       {{{-1, 768}, DType::f32, "x"}, {{768}, DType::f32, "w"}})},
      {"softmax",
       one([](const std::vector<Tensor>& in) { return std::vector<Tensor>{softmax(in[0], -1)}; },
           {{{-1, 128}, DType::f32, "x"}})},
      {"log_softmax", one(
                          [](const std::vector<Tensor>& in) {
                            return std::vector<Tensor>{log_softmax(in[0], -1)};
                          },
                          {{{-1, 7, 33}, DType::f32, "x"}})},
      {"layer_norm",
       one(
           [](const std::vector<Tensor>& in) {
             return std::vector<Tensor>{layer_norm(in[0], in[1], in[2], 1e-5, -1)};
           },
           {{{-1, 256}, DType::f32, "x"}, {{256}, DType::f32, "w"}, {{256}, DType::f32, "b"}})},
      {"bias_gelu",
       one([](const std::vector<Tensor>& in) { return std::vector<Tensor>{gelu(in[0] + in[1])}; },
           {{{-1, 3072}, DType::f32, "x"}, {{3072}, DType::f32, "bias"}})},
      {"cross_entropy", [] { return cross_entropy_program(false); }},
      {"cross_entropy_backward", [] { return cross_entropy_program(true); }},
      {"transformer_block",
       [] {
         ir::Trace t = ir::trace(block_fn, block_specs());
         decompose_all(t.program);
         return std::move(t.program);
       }},
      {"transformer_block_backward", [] { return block_backward_program(); }},
  };
}

}  // namespace oar_test
