// A CNN training step traced once with a dynamic batch: conv2d, avg_pool2d,
// slice, concat, pad, gather, dropout and cross_entropy VJPs that hold for
// every batch size (Note [Batch of the grad ops] in core/src/ops/conv.cpp,
// Note [Slices of dynamic dims] in core/src/ops/manipulation.cpp), and
// uniform_like, dropout's mask at the shape x has when it runs.
#include <cmath>

#include "oar/autograd.h"
#include "oar/builder.h"
#include "oar/ir/autodiff.h"
#include "oar/ir/compiled_function.h"
#include "oar/ir/trace.h"
#include "test_util.h"

using namespace oar;
using oar_test::check_close;
using oar_test::error_of;
using oar_test::values;

namespace {

Tensor ramp(const Shape& shape, double scale, double offset, const Device& d) {
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = scale * std::sin(0.37 * static_cast<double>(i) + offset);
  return cast(Tensor::from_vector(v, shape, d), DType::f32);
}

Tensor apply_op(const char* name, std::vector<Tensor> in, const Attrs& attrs, const Device& d) {
  return current_builder().apply(OpRegistry::instance().get(name), in, attrs, &d)[0];
}

struct Cnn {
  Tensor w1, b1, w2, b2;
  std::vector<Tensor> params() const { return {w1, b1, w2, b2}; }
  ir::ParamMap map() const { return {{"w1", w1}, {"b1", b1}, {"w2", w2}, {"b2", b2}}; }
  // x [N, 2, 8, 8] -> loss.
  Tensor loss(const Tensor& x, const Tensor& labels) const {
    Tensor h = relu(conv2d(x, w1, b1, {1}, {1}));                       // [N, 4, 8, 8]
    h = avg_pool2d(h, {2}, {2});                                        // [N, 4, 4, 4]
    Tensor tail = slice(h, {1}, {1}, {4});                              // [N, 3, 4, 4]
    h = concat({tail, slice(h, {1}, {0}, {1})}, 1);                     // [N, 4, 4, 4]
    h = pad(h, {0, 0, 0, 0, 1, 0, 0, 1});                               // [N, 4, 5, 5]
    Device d = x.device();
    h = gather(h, Tensor::from_vector<int64_t>({0, 2, 3}, {3}, d), 1);  // [N, 3, 5, 5]
    h = dropout(flatten(h, 1), 0.3, true);                              // [N, 75]
    return cross_entropy(matmul(h, w2) + b2, labels);
  }
};

Cnn make_cnn(const Device& d) {
  return {ramp({4, 2, 3, 3}, 0.3, 0.1, d).set_requires_grad(true), ramp({4}, 0.1, 0.2, d).set_requires_grad(true),
          ramp({75, 10}, 0.2, 0.3, d).set_requires_grad(true), ramp({10}, 0.1, 0.4, d).set_requires_grad(true)};
}

Tensor labels_for(int64_t batch, const Device& d) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < batch; ++i) v.push_back((i * 7 + 3) % 10);
  return Tensor::from_vector(v, {batch}, d);
}

}  // namespace

TEST_CASE("uniform_like draws uniform's numbers at its operand's shape, and dropout's mask comes from it") {
  for (const Device& d : oar_test::test_devices()) {
    CAPTURE(d.str());
    Tensor x = ramp({3, 5}, 1.0, 0.0, d);
    Attrs like{{"dtype", static_cast<int64_t>(DType::f32)}, {"seed", int64_t{42}}, {"offset", int64_t{7}},
               {"low", -1.0}, {"high", 3.0}};
    Tensor u = apply_op("uniform_like", {x}, like, d);
    CHECK(u.shape() == Shape{3, 5});
    CHECK(values(u) == values(uniform({3, 5}, -1.0, 3.0, DType::f32, d, 42, 7)));
    for (double v : values(u)) CHECK((v >= -1.0 && v < 3.0));
    // The decomposition (a device without the kernel) draws the same numbers.
    CHECK(values(OpRegistry::instance().get("uniform_like").decompose(std::vector<Tensor>{x}, like)[0]) == values(u));
    // dropout keeps x / (1 - p) where uniform(x's shape) >= p, else 0.
    seed(9);
    Tensor y = dropout(x, 0.4, true);
    std::vector<double> mask = values(uniform({3, 5}, 0.0, 1.0, DType::f32, d, 9, 0)), xs = values(x), want;
    for (size_t i = 0; i < xs.size(); ++i) want.push_back(mask[i] >= 0.4 ? xs[i] / 0.6 : 0.0);
    check_close(y, want);
  }
}

TEST_CASE("a CNN training step traced with a dynamic batch runs at batch 1, 3 and 8 with one backward") {
  for (const Device& d : oar_test::test_devices()) {
    CAPTURE(d.str());
    Cnn m = make_cnn(d);
    auto f = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{m.loss(in[0], in[1])}; };
    seed(123);  // the trace's dropout takes offset 0
    ir::Trace t = ir::trace(f, {{{-1, 2, 8, 8}, DType::f32, "x"}, {{-1}, DType::i64, "labels"}}, m.map(), d);
    CHECK_FALSE(t.specialized);
    CHECK(t.program.inputs()[0]->type().str() == "f32[-1, 2, 8, 8]");
    ir::CompiledFunction cf(t.program, d);
    for (int64_t batch : {1, 3, 8}) {
      CAPTURE(batch);
      Tensor x = ramp({batch, 2, 8, 8}, 1.0, 0.25 * static_cast<double>(batch), d);
      Tensor labels = labels_for(batch, d);
      seed(500 + static_cast<uint64_t>(batch));
      Tensor loss = cf(std::vector<Tensor>{x, labels}, m.map())[0];
      std::vector<Tensor> g = grad({loss}, m.params());
      seed(500 + static_cast<uint64_t>(batch));  // the same dropout mask eagerly
      Tensor want = m.loss(x, labels);
      std::vector<Tensor> want_g = grad({want}, m.params());
      check_close(loss, values(want), 1e-5, 1e-5);
      for (size_t i = 0; i < g.size(); ++i) {
        CAPTURE(i);
        CHECK(g[i].shape() == m.params()[i].shape());
        check_close(g[i], values(want_g[i]), 1e-5, 1e-5);
      }
      // Another seed is another mask: the loss differs.
      seed(900 + static_cast<uint64_t>(batch));
      CHECK(values(cf(std::vector<Tensor>{x, labels}, m.map())[0]) != values(want));
    }
    CHECK(cf.backward_count() == 1);
  }
}

TEST_CASE("the VJPs of conv2d and avg_pool2d give the batch as -1 and equal the fixed-shape grad ops") {
  Device d{"cpu", 0};
  Tensor g = ramp({3, 4, 3, 3}, 1.0, 0.5, d), w = ramp({4, 2, 3, 3}, 0.5, 0.2, d);
  Attrs conv{{"strides", std::vector<int64_t>{2, 2}}, {"paddings", std::vector<int64_t>{1, 1}},
             {"dilations", std::vector<int64_t>{1, 1}}, {"groups", int64_t{1}}};
  Attrs fixed = conv, free = conv;
  fixed.set("input_shape", std::vector<int64_t>{3, 2, 6, 6});
  free.set("input_shape", std::vector<int64_t>{-1, 2, 6, 6});
  Tensor a = apply_op("conv2d_grad_input", {g, w}, fixed, d), b = apply_op("conv2d_grad_input", {g, w}, free, d);
  CHECK(b.shape() == Shape{3, 2, 6, 6});
  CHECK(values(a) == values(b));
  Attrs pool{{"kernel_size", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}},
             {"paddings", std::vector<int64_t>{0, 0}}, {"exclusive", true}};
  Attrs pfixed = pool, pfree = pool;
  pfixed.set("input_shape", std::vector<int64_t>{3, 4, 7, 7});  // the 7th row and column get no gradient
  pfree.set("input_shape", std::vector<int64_t>{-1, 4, 7, 7});
  Tensor pa = apply_op("avg_pool2d_grad", {g}, pfixed, d), pb = apply_op("avg_pool2d_grad", {g}, pfree, d);
  CHECK(pb.shape() == Shape{3, 4, 7, 7});
  CHECK(values(pa) == values(pb));
  free.set("input_shape", std::vector<int64_t>{3, -1, 6, 6});
  CHECK(error_of([&] { apply_op("conv2d_grad_input", {g, w}, free, d); })
            .find("conv2d_grad_input: input_shape [3, -1, 6, 6] may hold -1 only as its batch") == 0);
}

TEST_CASE("a VJP along a dynamic dim holds for the example size only, and append_backward says so") {
  Device d{"cpu", 0};
  // concat along the dynamic dim: the VJP's slices take the example's size.
  Tensor w = ramp({3}, 1.0, 0.3, d);
  ir::Trace traced = ir::trace(
      [&](const std::vector<Tensor>& in) {
        Tensor y = concat({in[0] * w, in[0]}, 0);
        return std::vector<Tensor>{sum(y * y)};
      },
      {{{-1, 3}, DType::f32, "x"}}, {{"w", w}}, d);
  CHECK_FALSE(traced.specialized);
  const ir::Program& p = traced.program;
  std::string message = error_of([&] {
    ir::Program q = p.clone();
    ir::append_backward(q, {q.outputs()[0].value}, {q.parameters()[0]});
  });
  CHECK(message.find("append_backward: a VJP rule computed a shape from the example sizes of the dynamic dims") == 0);
  // With input shapes the backward is made for them; the gradient is right.
  ir::Program q = p.clone();
  std::vector<ir::Value*> g = ir::append_backward(q, {q.outputs()[0].value}, {q.parameters()[0]}, {},
                                                  {.input_shapes = {{2, 3}}});
  REQUIRE(g[0]);
  CHECK(g[0]->type().str() == "f32[3]");
  // pad along the dynamic dim, differentiated for the input itself: nothing
  // after the VJP would reject the gradient's example-sized shape.
  ir::Trace padded = ir::trace(
      [](const std::vector<Tensor>& in) {
        Tensor y = pad(in[0], {1, 2, 0, 0});
        return std::vector<Tensor>{sum(y * y)};
      },
      {{{-1, 3}, DType::f32, "x"}}, {}, d);
  CHECK_FALSE(padded.specialized);
  {
    ir::Program r = padded.program.clone();
    CHECK(error_of([&] { ir::append_backward(r, {r.outputs()[0].value}, {r.inputs()[0]}); })
              .find("append_backward: a VJP rule computed a shape from the example sizes") == 0);
  }
  // pad along the static dim: the gradient keeps the dynamic batch.
  ir::Trace features = ir::trace(
      [](const std::vector<Tensor>& in) {
        Tensor y = pad(in[0], {0, 0, 2, 1});
        return std::vector<Tensor>{sum(y * y)};
      },
      {{{-1, 3}, DType::f32, "x"}}, {}, d);
  {
    ir::Program r = features.program.clone();
    std::vector<ir::Value*> gx = ir::append_backward(r, {r.outputs()[0].value}, {r.inputs()[0]});
    CHECK(gx[0]->type().str() == "f32[-1, 3]");
  }
  // Slicing the features of a dynamic batch keeps the batch dynamic.
  ir::Trace t = ir::trace([](const std::vector<Tensor>& in) { return std::vector<Tensor>{slice(in[0], {1}, {1}, {3})}; },
                          {{{-1, 4}, DType::f32, "x"}}, {}, d);
  CHECK_FALSE(t.specialized);
  CHECK(t.program.outputs()[0].value->type().str() == "f32[-1, 2]");
}
