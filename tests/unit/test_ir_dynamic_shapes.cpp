// Programs that keep their dynamic dims: symbolic type inference (one
// symbol per dynamic dim), the ops that take their shape from an operand,
// training traced once and run at several batch sizes, and half-precision
// decompositions computed in f32.
#include <cmath>

#include "oar/autograd.h"
#include "oar/ir/compiled_function.h"
#include "oar/ir/autodiff.h"
#include "oar/ir/executor.h"
#include "oar/ir/interpreter.h"
#include "oar/ir/pass.h"
#include "oar/ir/printer.h"
#include "oar/ir/shape_inference.h"
#include "oar/ir/trace.h"
#include "oar/ir/verifier.h"
#include "test_util.h"

using namespace oar;
using oar_test::check_close;
using oar_test::error_of;
using oar_test::values;

namespace {

ir::TensorType f32(std::vector<int64_t> dims) { return {DType::f32, std::move(dims)}; }

ir::Value* emit(ir::Program& p, const char* name, std::vector<ir::Value*> operands, const Attrs& attrs = {}) {
  // The result types by symbolic inference (what the verifier checks).
  const OpDef& def = OpRegistry::instance().get(name);
  ir::Program scratch;
  std::vector<ir::Value*> stand_ins;
  for (size_t i = 0; i < operands.size(); ++i)
    stand_ins.push_back(scratch.add_input("in" + std::to_string(i), operands[i]->type()));
  ir::TypeInference types = ir::infer_types(scratch);
  std::vector<ir::SymMeta> in;
  for (ir::Value* v : stand_ins) in.push_back({v->type().dtype, types.at(v)});
  std::vector<ir::SymMeta> out = types.symbols.infer(def, in, attrs);
  std::vector<ir::TensorType> result_types;
  for (const auto& m : out) result_types.push_back({m.dtype, ir::SymbolTable::type_dims(m.shape)});
  return p.append(def, std::move(operands), attrs, result_types)->result(0);
}

Tensor ramp(const Shape& shape, double scale, double offset, const Device& d, DType dtype = DType::f32) {
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = scale * std::sin(0.37 * static_cast<double>(i) + offset);
  return cast(Tensor::from_vector(v, shape, d), dtype);
}

}  // namespace

TEST_CASE("infer_types gives each dynamic dim its own symbol and shares it with dims equal by construction") {
  ir::Program p;
  ir::Value* x = p.add_input("x", f32({ir::kDynamic, ir::kDynamic, 8}));  // batch, sequence, features
  ir::Value* w = p.add_parameter("w", f32({8, 4}));
  ir::Value* y = emit(p, "matmul", {x, w}, {{"transpose_a", false}, {"transpose_b", false}});
  ir::Value* r = emit(p, "relu", {y});
  ir::Value* flat = emit(p, "reshape", {r}, {{"shape", std::vector<int64_t>{0, -1}}});
  ir::Value* a = p.add_input("a", f32({ir::kDynamic, 4}));
  ir::Value* b = p.add_input("b", f32({ir::kDynamic, 4}));
  ir::Value* sum_ab = emit(p, "add", {a, b});
  p.add_output(flat, "flat");
  p.add_output(sum_ab, "sum");
  ir::verify(p);

  ir::TypeInference t = ir::infer_types(p);
  auto dim = [&](ir::Value* v, size_t d) { return t.symbols.resolve(t.at(v)[d]); };
  CHECK(dim(x, 0) < 0);
  CHECK(dim(x, 1) < 0);
  CHECK(dim(x, 0) != dim(x, 1));  // batch and sequence are different dims
  CHECK(dim(y, 0) == dim(x, 0));  // matmul keeps them
  CHECK(dim(y, 1) == dim(x, 1));
  CHECK(dim(y, 2) == 4);
  CHECK(dim(r, 0) == dim(x, 0));
  CHECK(dim(r, 1) == dim(x, 1));
  CHECK(dim(flat, 0) == dim(x, 0));  // reshape copies dim 0 (the spec's 0)
  CHECK(dim(flat, 1) < 0);           // sequence * 4: a new symbol
  CHECK(dim(flat, 1) != dim(x, 1));
  CHECK(dim(flat, 1) != dim(x, 0));
  CHECK(t.type(flat).str() == "f32[-1, -1]");
  // a and b start as two symbols; adding them makes them one dim.
  CHECK(dim(a, 0) == dim(b, 0));
  CHECK(dim(sum_ab, 0) == dim(a, 0));
  CHECK(dim(sum_ab, 0) != dim(x, 0));
  CHECK(t.symbols.str(t.at(y)) == "[s0, s1, 4]");

  // A rule that needs one size of a dynamic dim is refused, naming the op.
  ir::Program q;
  ir::Value* z = q.add_input("z", f32({ir::kDynamic, 4}));
  q.append(OpRegistry::instance().get("reshape"), {z}, {{"shape", std::vector<int64_t>{8}}}, {f32({8})});
  std::string message = error_of([&] { ir::infer_types(q); });
  CHECK(message.find("program: operation 0 (reshape) rejects its operand types: reshape: cannot reshape") == 0);
  CHECK(message.find("operand shapes [s0, 4]") != std::string::npos);
  CHECK(error_of([&] { ir::verify(q); }).find("verify: operation 0 (reshape): its meta rule rejects") == 0);
}

TEST_CASE("nonzero's count is a data-dependent symbol, and so is a dim made from it; an input's dim is not") {
  ir::Program p;
  ir::Value* x = p.add_input("x", f32({ir::kDynamic, 3}));
  ir::Value* mask = emit(p, "greater", {x, emit(p, "full_like", {x}, {{"value", 0.0}, {"dtype", int64_t{0}}})});
  ir::Value* where = emit(p, "nonzero", {mask});                                          // [count, 2]
  ir::Value* flat = emit(p, "reshape", {where}, {{"shape", std::vector<int64_t>{-1}}});  // [2 * count]
  ir::Value* rows = emit(p, "reshape", {where}, {{"shape", std::vector<int64_t>{-1, 1}}});
  p.add_output(flat, "flat");
  p.add_output(rows, "rows");
  ir::verify(p);
  ir::TypeInference t = ir::infer_types(p);
  const ir::SymbolTable& s = t.symbols;
  CHECK_FALSE(s.data_dependent(t.at(x)[0]));  // the input's batch: known before the program runs
  CHECK(s.data_dependent(t.at(where)[0]));
  CHECK(s.data_dependent(t.at(flat)[0]));  // 2 * count: a new symbol from a data-dependent one
  CHECK(s.data_dependent(t.at(rows)[0]));
  CHECK(t.at(rows)[0] != t.at(where)[0]);
  CHECK_FALSE(s.data_dependent(3));
}

TEST_CASE("full_like, broadcast_to_like, sum_to_like, shape and numel take their shapes when they run") {
  for (const Device& d : oar_test::test_devices()) {
    CAPTURE(d.str());
    // Eagerly.
    Tensor x = ramp({2, 3}, 1.0, 0.0, d);
    check_close(full_like(x, 2.5), {2.5, 2.5, 2.5, 2.5, 2.5, 2.5});
    CHECK(full_like(x, 7, DType::i64).to_vector<int64_t>() == std::vector<int64_t>(6, 7));
    CHECK_FALSE(ones_like(x.detach().set_requires_grad(true)).requires_grad());
    Tensor row = Tensor::from_vector<float>({1, 2, 3}, {3}, d);
    check_close(broadcast_to_like(row, x), {1, 2, 3, 1, 2, 3});
    Tensor g = Tensor::from_vector<float>({1, 2, 3, 10, 20, 30}, {2, 3}, d);
    check_close(sum_to_like(g, row), {11, 22, 33});
    check_close(sum_to_like(g, Tensor::from_vector<float>({0, 0}, {2, 1}, d)), {6, 60});
    CHECK(shape_of(x).to_vector<int64_t>() == std::vector<int64_t>{2, 3});
    CHECK(shape_of(x).shape() == Shape{2});
    CHECK(numel_of(x).to_vector<int64_t>() == std::vector<int64_t>{6});
    CHECK(numel_of(x).shape() == Shape{});
    // The decompositions a device without these kernels runs agree with them.
    auto decomposed = [](const char* op, std::vector<Tensor> in, const Attrs& attrs = {}) {
      return OpRegistry::instance().get(op).decompose(in, attrs)[0];
    };
    Attrs fill{{"value", 2.5}, {"dtype", static_cast<int64_t>(DType::f32)}};
    CHECK(values(decomposed("full_like", {x}, fill)) == values(full_like(x, 2.5)));
    CHECK(values(decomposed("broadcast_to_like", {row, x})) == values(broadcast_to_like(row, x)));
    CHECK(values(decomposed("sum_to_like", {g, row})) == values(sum_to_like(g, row)));
    CHECK(decomposed("shape", {x}).to_vector<int64_t>() == shape_of(x).to_vector<int64_t>());
    CHECK(decomposed("numel", {x}).to_vector<int64_t>() == numel_of(x).to_vector<int64_t>());

    // Traced once with a dynamic batch, run at three batch sizes.
    auto f = [](const std::vector<Tensor>& in) {
      const Tensor& v = in[0];
      return std::vector<Tensor>{full_like(v, 1.5), broadcast_to_like(in[1], v), sum_to_like(v, in[1]),
                                 shape_of(v), numel_of(v)};
    };
    ir::Trace t = ir::trace(f, {{{-1, 3}, DType::f32, "v"}, {{3}, DType::f32, "row"}}, {}, d);
    CHECK_FALSE(t.specialized);
    CHECK(t.program.outputs()[0].value->type().str() == "f32[-1, 3]");
    CHECK(t.program.outputs()[1].value->type().str() == "f32[-1, 3]");
    CHECK(t.program.outputs()[2].value->type().str() == "f32[3]");
    CHECK(t.program.outputs()[3].value->type().str() == "i64[2]");
    CHECK(t.program.outputs()[4].value->type().str() == "i64[]");
    ir::Executor exec(t.program, d);
    for (int64_t batch : {1, 4, 9}) {
      CAPTURE(batch);
      Tensor v = ramp({batch, 3}, 1.0, 0.5, d);
      std::vector<Tensor> got = exec.run(std::vector<Tensor>{v, row});
      check_close(got[0], std::vector<double>(static_cast<size_t>(batch * 3), 1.5));
      check_close(got[1], values(broadcast_to(row, {batch, 3})));
      check_close(got[2], values(sum(v, {0})), 1e-5, 1e-5);
      CHECK(got[3].to_vector<int64_t>() == std::vector<int64_t>{batch, 3});
      CHECK(got[4].to_vector<int64_t>() == std::vector<int64_t>{batch * 3});
    }
    CHECK(exec.program().inputs()[0]->type().str() == "f32[-1, 3]");  // not recompiled per shape
  }
  Device cpu{"cpu", 0};
  CHECK(error_of([&] { broadcast_to_like(ramp({2, 3}, 1, 0, cpu), ramp({4}, 1, 0, cpu)); })
            .find("broadcast_to_like: x of shape [2, 3] cannot be broadcast to the shape [4] of the reference") == 0);
  CHECK(error_of([&] { sum_to_like(ramp({2, 3}, 1, 0, cpu), ramp({2}, 1, 0, cpu)); })
            .find("sum_to_like: g of shape [2, 3] cannot be summed to the shape [2] of the reference") == 0);
}

namespace {

struct Mlp {
  Tensor w1, b1, w2, b2;
  std::vector<Tensor> params() const { return {w1, b1, w2, b2}; }
  Tensor loss(const Tensor& x, const Tensor& labels) const {
    Tensor h = relu(matmul(x, w1) + b1);
    return cross_entropy(matmul(h, w2) + b2, labels);
  }
};

Mlp make_mlp(const Device& d) {
  return {ramp({784, 16}, 0.05, 0.1, d).set_requires_grad(true), ramp({16}, 0.1, 0.2, d).set_requires_grad(true),
          ramp({16, 10}, 0.2, 0.3, d).set_requires_grad(true), ramp({10}, 0.1, 0.4, d).set_requires_grad(true)};
}

Tensor labels_for(int64_t batch, const Device& d) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < batch; ++i) v.push_back((i * 7 + 3) % 10);
  return Tensor::from_vector(v, {batch}, d);
}

}  // namespace

TEST_CASE("a training program traced with [-1, 784] runs at batch 1, 64 and 1000 without re-tracing") {
  for (const Device& d : oar_test::test_devices()) {
    CAPTURE(d.str());
    Mlp m = make_mlp(d);
    ir::StaticFunction sf = ir::to_static(
        [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{m.loss(in[0], in[1])}; },
        {{{-1, 784}, DType::f32, "x"}, {{-1}, DType::i64, "labels"}},
        {.parameters = {{"w1", m.w1}, {"b1", m.b1}, {"w2", m.w2}, {"b2", m.b2}}});
    const ir::Program* first = nullptr;
    for (int64_t batch : {1, 64, 1000}) {
      CAPTURE(batch);
      Tensor x = ramp({batch, 784}, 1.0, static_cast<double>(batch), d);
      Tensor labels = labels_for(batch, d);
      Tensor loss = sf({x, labels})[0];
      std::vector<Tensor> g = grad({loss}, m.params());
      Tensor want = m.loss(x, labels);
      std::vector<Tensor> want_g = grad({want}, m.params());
      check_close(loss, values(want), 1e-5, 1e-5);
      for (size_t i = 0; i < g.size(); ++i) check_close(g[i], values(want_g[i]), 1e-5, 1e-5);
      if (!first) first = &sf.program();
      CHECK(&sf.program() == first);
      CHECK(sf.trace_count() == 1);
    }
    CHECK(sf.cached_traces() == 1);
    CHECK(first->inputs()[0]->type().str() == "f32[-1, 784]");
  }
}

TEST_CASE("one backward serves every batch size, and an SGD program updates like eager SGD at each") {
  Device d{"cpu", 0};
  Mlp m = make_mlp(d);
  auto f = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{m.loss(in[0], in[1])}; };
  ir::ParamMap params{{"w1", m.w1}, {"b1", m.b1}, {"w2", m.w2}, {"b2", m.b2}};
  ir::Trace t = ir::trace(f, {{{-1, 784}, DType::f32, "x"}, {{-1}, DType::i64, "labels"}}, params, d);
  CHECK_FALSE(t.specialized);

  // The compiled function's training pair is made once, not per shape.
  ir::CompiledFunction cf(t.program, d);
  for (int64_t batch : {1, 64, 1000}) {
    Tensor x = ramp({batch, 784}, 1.0, 0.25, d);
    Tensor loss = cf(std::vector<Tensor>{x, labels_for(batch, d)}, params)[0];
    std::vector<Tensor> g = grad({loss}, m.params());
    std::vector<Tensor> want = grad({m.loss(x, labels_for(batch, d))}, m.params());
    for (size_t i = 0; i < g.size(); ++i) check_close(g[i], values(want[i]), 1e-5, 1e-5);
  }
  CHECK(cf.backward_count() == 1);

  // append_sgd_step on the dynamic program: the updates keep the parameter types.
  ir::Program p = t.program.clone();
  ir::append_sgd_step(p, p.outputs()[0].value, 0.1);
  CHECK(p.inputs()[0]->type().str() == "f32[-1, 784]");
  ir::default_pipeline(d).run(p);
  ir::Executor exec(p, d);
  exec.set_parameters(params);
  Mlp eager{m.w1.detach(), m.b1.detach(), m.w2.detach(), m.b2.detach()};
  for (int64_t batch : {1, 64, 1000}) {
    CAPTURE(batch);
    Tensor x = ramp({batch, 784}, 1.0, 0.75, d);
    Tensor labels = labels_for(batch, d);
    Tensor loss = exec.run(std::vector<Tensor>{x, labels})[0];
    for (Tensor* w : {&eager.w1, &eager.b1, &eager.w2, &eager.b2}) *w = w->detach().set_requires_grad(true);
    Tensor want = eager.loss(x, labels);
    std::vector<Tensor> g = grad({want}, eager.params());
    check_close(loss, values(want), 1e-5, 1e-5);
    {
      NoGrad ng;
      eager.w1 = eager.w1 - g[0] * 0.1;
      eager.b1 = eager.b1 - g[1] * 0.1;
      eager.w2 = eager.w2 - g[2] * 0.1;
      eager.b2 = eager.b2 - g[3] * 0.1;
    }
    check_close(exec.parameters().at("w1"), values(eager.w1), 1e-5, 1e-5);
    check_close(exec.parameters().at("b1"), values(eager.b1), 1e-5, 1e-5);
    check_close(exec.parameters().at("w2"), values(eager.w2), 1e-5, 1e-5);
    check_close(exec.parameters().at("b2"), values(eager.b2), 1e-5, 1e-5);
  }
  CHECK(exec.program().inputs()[0]->type().str() == "f32[-1, 784]");
}

TEST_CASE("half-precision softmax, layer_norm and rms_norm decompositions compute in f32") {
  Device d{"cpu", 0};
  Shape shape{3, 8};
  for (DType half : {DType::f16, DType::bf16}) {
    CAPTURE(dtype_name(half));
    Tensor x = ramp(shape, 4.0, 0.3, d, half);
    Tensor w = ramp({8}, 1.0, 1.1, d, half), b = ramp({8}, 0.5, 2.2, d, half);
    Tensor x32 = cast(x, DType::f32), w32 = cast(w, DType::f32), b32 = cast(b, DType::f32);
    auto decompose = [](const char* op, std::vector<Tensor> in, const Attrs& attrs) {
      return OpRegistry::instance().get(op).decompose(in, attrs)[0];
    };
    Attrs axis{{"axis", int64_t{1}}};
    Attrs norm{{"epsilon", 1e-5}, {"begin_axis", int64_t{1}}};
    // The half result is the f32 computation cast down, bit for bit.
    struct Case {
      const char* op;
      std::vector<Tensor> in, in32;
      Attrs attrs;
    };
    for (const Case& c : {Case{"softmax", {x}, {x32}, axis}, Case{"log_softmax", {x}, {x32}, axis},
                          Case{"layer_norm", {x, w, b}, {x32, w32, b32}, norm},
                          Case{"rms_norm", {x, w}, {x32, w32}, norm}}) {
      CAPTURE(c.op);
      Tensor got = decompose(c.op, c.in, c.attrs);
      CHECK(got.dtype() == half);
      Tensor want = cast(decompose(c.op, c.in32, c.attrs), half);
      CHECK(values(got) == values(want));
    }
    // softmax by hand, in double: rows sum to 1 within half's precision.
    std::vector<double> xs = values(x), sm = values(decompose("softmax", {x}, axis));
    for (int64_t r = 0; r < 3; ++r) {
      double mx = -1e30, total = 0;
      for (int64_t c = 0; c < 8; ++c) mx = std::max(mx, xs[static_cast<size_t>(r * 8 + c)]);
      for (int64_t c = 0; c < 8; ++c) total += std::exp(xs[static_cast<size_t>(r * 8 + c)] - mx);
      for (int64_t c = 0; c < 8; ++c) {
        double want = std::exp(xs[static_cast<size_t>(r * 8 + c)] - mx) / total;
        CHECK(std::abs(sm[static_cast<size_t>(r * 8 + c)] - want) <= 1e-2 * want + 1e-3);
      }
    }
  }
  // In a program the decomposition casts up and back down.
  ir::Program p;
  ir::Value* x = p.add_input("x", {DType::f16, {ir::kDynamic, 8}});
  p.add_output(emit(p, "softmax", {x}, {{"axis", int64_t{1}}}));
  ir::make_decomposition_pass(std::set<std::string>{"softmax"})->run(p);
  ir::verify(p);
  size_t casts = 0, f32_exps = 0;
  for (const auto& op : p.block().ops()) {
    casts += op->name() == "cast";
    f32_exps += op->name() == "exp" && op->result(0)->type().dtype == DType::f32;
  }
  CHECK(casts == 2);
  CHECK(f32_exps == 1);
  CHECK(p.outputs()[0].value->type().str() == "f16[-1, 8]");
}
