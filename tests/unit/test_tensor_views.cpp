// Eager strided views (Note [Views] in core/src/tensor/view.cpp): transpose,
// slice, broadcast_to, diagonal and reshape share their input's storage;
// every op family gives on a view what it gives on a contiguous copy of the
// same values; gradients flow through each view (finite differences).
#include <cstring>

#include "gradcheck.h"
#include "oar/ir/trace.h"
#include "test_util.h"

using oar::DType;
using oar::Shape;
using oar::Tensor;
using oar_test::check_close;
using oar_test::test_devices;
using oar_test::values;

namespace {

// 0, 1, 2, ... as f32, shaped.
Tensor iota(const Shape& shape, const oar::Device& d, DType dtype = DType::f32) {
  std::vector<double> v(static_cast<size_t>(oar::shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  return oar::cast(Tensor::from_vector(v, shape, d), dtype);
}

// A contiguous tensor with the values of `t`, rebuilt from the host (the
// path every earlier test checks).
Tensor dense_copy(const Tensor& t) {
  Tensor c = Tensor::from_vector(values(t), t.shape(), t.device());
  return oar::cast(c, t.dtype());
}

bool shares_storage(const Tensor& a, const Tensor& b) { return a.impl().storage == b.impl().storage; }

// op(view) against op(contiguous copy of the view), element by element.
template <typename F>
void check_same_on_copy(const Tensor& view, F op, double tol = 1e-5) {
  REQUIRE_FALSE(view.is_contiguous());
  check_close(op(view), values(op(dense_copy(view))), tol, tol);
}

}  // namespace

TEST_CASE("transpose, slice, broadcast_to and diagonal are views of their input") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor x = iota({2, 3}, device);  // [[0 1 2] [3 4 5]]

    Tensor t = oar::transpose(x, {1, 0});
    CHECK(shares_storage(t, x));
    CHECK(t.strides() == Shape{1, 3});
    CHECK_FALSE(t.is_contiguous());
    CHECK(t.view_op() == "transpose");
    check_close(t, {0, 3, 1, 4, 2, 5});

    Tensor y = iota({4, 6}, device);
    Tensor s = oar::slice(y, {0, 1}, {1, 1}, {4, 6}, {2, 2});  // rows 1, 3; columns 1, 3, 5
    CHECK(shares_storage(s, y));
    CHECK(s.shape() == Shape{2, 3});
    CHECK(s.strides() == Shape{12, 2});
    CHECK(s.byte_offset() == (6 + 1) * 4);  // element [1, 1] of y
    check_close(s, {7, 9, 11, 19, 21, 23});
    Tensor rows = oar::slice(y, {0}, {2}, {4});  // a contiguous slice with a byte offset
    CHECK(rows.is_contiguous());
    CHECK(rows.byte_offset() == 12 * 4);
    check_close(rows, {12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23});

    Tensor b = oar::broadcast_to(iota({3, 1}, device), {2, 3, 4});
    CHECK(b.strides() == Shape{0, 1, 0});
    check_close(b, {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2});

    Tensor m = iota({3, 4}, device);  // [[0 1 2 3] [4 5 6 7] [8 9 10 11]]
    CHECK(shares_storage(oar::diagonal(m), m));
    CHECK(oar::diagonal(m).strides() == Shape{5});
    check_close(oar::diagonal(m), {0, 5, 10});
    check_close(oar::diagonal(m, 1), {1, 6, 11});
    check_close(oar::diagonal(m, 2), {2, 7});
    check_close(oar::diagonal(m, -1), {4, 9});
    CHECK(oar::diagonal(m, -1).byte_offset() == 4 * 4);
    CHECK(oar::diagonal(m, 4).shape() == Shape{0});
    CHECK(oar::diagonal(m, -3).shape() == Shape{0});
    // [2, 3, 4] over axes (0, 2): element [i, j, i] for i < 2, per j.
    Tensor c = iota({2, 3, 4}, device);
    Tensor dc = oar::diagonal(c, 0, 0, 2);
    CHECK(dc.shape() == Shape{3, 2});
    check_close(dc, {0, 13, 4, 17, 8, 21});
    // axis1 = 2 (size 4), axis2 = 1 (size 3), offset 1: element [i, l + 1, l] for l < 2.
    check_close(oar::diagonal(c, 1, -1, 1), {4, 9, 16, 21});
  }
}

TEST_CASE("views of views keep sharing storage and compose strides and offsets") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor y = iota({4, 6}, device);
    Tensor ts = oar::slice(oar::transpose(y, {1, 0}), {0}, {1}, {6}, {2});  // columns 1, 3, 5 of y as rows
    CHECK(shares_storage(ts, y));
    CHECK(ts.strides() == Shape{2, 6});
    check_close(ts, {1, 7, 13, 19, 3, 9, 15, 21, 5, 11, 17, 23});
    Tensor st = oar::transpose(oar::slice(y, {0, 1}, {1, 0}, {4, 6}, {2, 3}), {1, 0});  // y[1::2, ::3].T
    check_close(st, {6, 18, 9, 21});
    Tensor d = oar::diagonal(oar::broadcast_to(iota({3}, device), {3, 3}));  // [0 1 2] per row: diagonal 0 1 2
    CHECK(d.strides() == Shape{1});
    check_close(d, {0, 1, 2});
    Tensor dd = oar::diagonal(oar::slice(iota({5, 5}, device), {0, 1}, {1, 0}, {5, 5}, {2, 2}), 0);  // rows 1,3 cols 0,2
    check_close(dd, {5, 17});
    // reshape: a view when the strides allow it, else a copy.
    Tensor rows = oar::slice(y, {0}, {0}, {4}, {2});  // rows 0, 2: each row contiguous
    Tensor split = oar::reshape(rows, {2, 2, 3});
    CHECK(shares_storage(split, y));
    check_close(split, {0, 1, 2, 3, 4, 5, 12, 13, 14, 15, 16, 17});
    Tensor flat = oar::reshape(oar::transpose(y, {1, 0}), {-1});
    CHECK_FALSE(shares_storage(flat, y));
    CHECK(flat.is_contiguous());
    check_close(oar::slice(flat, {0}, {0}, {5}), {0, 6, 12, 18, 1});
  }
}

TEST_CASE("contiguous copies a view, is recorded for autograd, and leaves contiguous tensors alone") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor x = iota({2, 3}, device, DType::f64).set_requires_grad(true);
    CHECK(x.contiguous().impl_ptr() == x.impl_ptr());
    Tensor c = oar::transpose(x, {1, 0}).contiguous();
    CHECK(c.is_contiguous());
    CHECK_FALSE(shares_storage(c, x));
    CHECK(c.strides() == Shape{2, 1});
    check_close(c, {0, 3, 1, 4, 2, 5});
    auto g = oar::grad({oar::multiply(c, iota({3, 2}, device, DType::f64))}, {x},
                       {oar::full({3, 2}, 1.0, DType::f64, device)});
    check_close(g[0], {0, 2, 4, 1, 3, 5});  // d/dx of sum(x.T * w) is w.T
    // Size-1 dims do not break contiguity, whatever their strides.
    Tensor col = oar::transpose(iota({1, 4}, device), {1, 0});
    CHECK(col.strides() == Shape{1, 4});
    CHECK(col.is_contiguous());
    Tensor row = oar::transpose(iota({4, 1}, device), {1, 0});
    CHECK(row.is_contiguous());
    check_close(oar::exp(row), {1, std::exp(1.0), std::exp(2.0), std::exp(3.0)});
  }
}

TEST_CASE("every op family gives on a view what it gives on a contiguous copy") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor a = iota({4, 6}, device);
    Tensor at = oar::transpose(a, {1, 0});                       // [6, 4], strides [1, 6]
    Tensor as = oar::slice(a, {0, 1}, {1, 1}, {4, 6}, {2, 2});   // [2, 3], offset and step 2
    Tensor ab = oar::broadcast_to(iota({1, 4}, device), {6, 4});  // stride 0
    Tensor ad = oar::diagonal(a, 1);                             // [4], stride 7
    // elementwise unary and binary (a view and a broadcast view)
    check_same_on_copy(at, [](const Tensor& v) { return oar::exp(oar::multiply(v, oar::full({}, 0.1, DType::f32, v.device()))); });
    check_same_on_copy(as, [](const Tensor& v) { return oar::sqrt(v); });
    check_same_on_copy(at, [&](const Tensor& v) { return oar::add(v, ab); });
    check_close(oar::add(at, ab), [&] {
      std::vector<double> want;
      for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 4; ++j) want.push_back(j * 6 + i + j);  // a[j, i] + j
      return want;
    }());
    check_same_on_copy(ad, [](const Tensor& v) { return oar::neg(v); });
    // reductions
    check_same_on_copy(at, [](const Tensor& v) { return oar::sum(v, {0}); });
    check_same_on_copy(at, [](const Tensor& v) { return oar::max(v, {1}, true); });
    check_close(oar::sum(as), {7 + 9 + 11 + 19 + 21 + 23});
    check_close(oar::sum(ab, {0}), {0, 6, 12, 18});
    // matmul: a transposed operand, a sliced one
    check_same_on_copy(at, [&](const Tensor& v) { return oar::matmul(v, a); });
    check_same_on_copy(as, [&](const Tensor& v) { return oar::matmul(v, oar::transpose(as, {1, 0})); });
    check_close(oar::matmul(as, oar::transpose(as, {1, 0})), {49 + 81 + 121, 7 * 19 + 9 * 21 + 11 * 23,
                                                              7 * 19 + 9 * 21 + 11 * 23, 361 + 441 + 529});
    // softmax along either axis
    check_same_on_copy(at, [](const Tensor& v) { return oar::softmax(oar::multiply(v, oar::full({}, 0.1, DType::f32, v.device())), -1); });
    check_same_on_copy(at, [](const Tensor& v) { return oar::softmax(v, 0); }, 1e-5);
    // conv2d on a sliced NCHW input
    Tensor img = iota({1, 2, 7, 7}, device);
    Tensor crop = oar::slice(img, {2, 3}, {1, 0}, {7, 7}, {2, 2});  // [1, 2, 3, 4]
    Tensor w = oar::multiply(iota({3, 2, 2, 2}, device), oar::full({}, 0.01, DType::f32, device));
    check_same_on_copy(crop, [&](const Tensor& v) { return oar::conv2d(v, w, Tensor(), {1}, {1}); }, 1e-4);
    // concat of views
    check_same_on_copy(at, [&](const Tensor& v) { return oar::concat({v, ab}, 0); });
    check_close(oar::concat({ad, oar::reshape(as, {-1})}, 0),
                {1, 8, 15, 22, 7, 9, 11, 19, 21, 23});
    // gather and scatter_add: the data and the index as views
    Tensor idx = oar::slice(Tensor::from_vector(std::vector<int64_t>{9, 3, 9, 0, 9, 3}, {6}, device), {0}, {1}, {6}, {2});
    check_close(oar::gather(at, idx, 0), {3 * 1, 3 * 1 + 6, 3 * 1 + 12, 3 * 1 + 18, 0, 6, 12, 18, 3, 9, 15, 21});
    check_same_on_copy(at, [&](const Tensor& v) { return oar::gather(v, idx, 1); });
    check_same_on_copy(at, [&](const Tensor& v) {
      return oar::scatter_add(v, idx, oar::slice(at, {1}, {0}, {3}), 1);
    });
    // cast
    check_same_on_copy(at, [](const Tensor& v) { return oar::cast(v, DType::f64); });
    check_same_on_copy(ab, [](const Tensor& v) { return oar::cast(v, DType::i32); }, 0);
    CHECK(oar::cast(ab, DType::i64).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3,
                                                                                  0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3});
  }
}

TEST_CASE("gradients flow through every view (finite differences)") {
  using oar_test::check_gradients;
  using oar_test::random_f64;
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor x = random_f64({3, 4}, device);
    Tensor w = random_f64({4, 3}, device);
    // transpose: its VJP is a transpose
    check_gradients([](const std::vector<Tensor>& in) { return oar::multiply(oar::transpose(in[0], {1, 0}), in[1]); },
                    {x, w}, {0, 1});
    // strided slice: a scatter into zeros
    check_gradients([](const std::vector<Tensor>& in) {
      return oar::exp(oar::slice(in[0], {0, 1}, {0, 1}, {3, 4}, {2, 2}));
    }, {x}, {0});
    // broadcast_to (stride 0): sum_to
    Tensor v = random_f64({1, 4}, device);
    check_gradients([](const std::vector<Tensor>& in) {
      return oar::multiply(oar::broadcast_to(in[0], {2, 3, 4}), oar::broadcast_to(in[0], {2, 3, 4}));
    }, {v}, {0});
    // diagonal with offsets: a diag-embed
    for (int64_t offset : {0, 1, -2}) {
      INFO("offset " << offset);
      check_gradients([offset](const std::vector<Tensor>& in) { Tensor d = oar::diagonal(in[0], offset); return oar::multiply(d, d); },
                      {x}, {0});
    }
    Tensor cube = random_f64({2, 3, 4}, device);
    check_gradients([](const std::vector<Tensor>& in) { Tensor d = oar::diagonal(in[0], 1, 2, 0); return oar::multiply(d, d); },
                    {cube}, {0});
    // views of views and a reshape that must copy
    check_gradients([](const std::vector<Tensor>& in) {
      Tensor t = oar::transpose(oar::slice(in[0], {1}, {1}, {4}, {2}), {1, 0});  // strides [2, 4]
      Tensor flat = oar::reshape(t, {-1});  // no strides fit: a copy
      return oar::multiply(flat, flat);
    }, {x}, {0});
    // the hand value: d/dx sum(diagonal(x, 1)) is 1 on that diagonal
    Tensor leaf = oar::zeros({3, 4}, DType::f64, device).set_requires_grad(true);
    oar::sum(oar::diagonal(leaf, 1)).backward();
    check_close(leaf.grad(), {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
  }
}

TEST_CASE("diagonal refuses bad axes with a sentence naming the op") {
  Tensor m = iota({3, 4}, {"cpu", 0});
  CHECK(oar_test::error_of([&] { oar::diagonal(m, 0, 1, 1); }).find("diagonal: axis1 1 and axis2 1") != std::string::npos);
  CHECK(oar_test::error_of([&] { oar::diagonal(iota({3}, {"cpu", 0})); }).find("diagonal: x must have at least 2 dims") !=
        std::string::npos);
}

TEST_CASE("static mode materializes the view ops and takes views as inputs and parameters") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor w = oar::transpose(iota({3, 4}, device), {1, 0});  // a strided parameter [4, 3]
    auto f = [&](const std::vector<Tensor>& in) {
      const Tensor& x = in[0];  // [batch, 3, 4]
      Tensor d = oar::diagonal(x, 1, 1, 2);                       // [batch, 3]
      Tensor s = oar::slice(x, {2}, {0}, {4}, {2});               // [batch, 3, 2]
      Tensor t = oar::transpose(s, {0, 2, 1});                    // [batch, 2, 3]
      Tensor b = oar::broadcast_to(oar::unsqueeze(d, {1}), {x.shape()[0], 2, 3});
      return std::vector<Tensor>{oar::add(t, b), oar::matmul(x, w)};
    };
    oar::ir::StaticFunction sf = oar::ir::to_static(f, {{{-1, 3, 4}, DType::f32, "x"}}, {.parameters = {{"w", w}}});
    for (int64_t batch : {2, 3}) {
      INFO("batch " << batch);
      Tensor x = iota({batch, 3, 4}, device);
      std::vector<Tensor> got = sf({x}), want = f({x});
      check_close(got[0], values(want[0]));
      check_close(got[1], values(want[1]));
      // An input that is itself a strided view is made contiguous for the program.
      Tensor xt = oar::transpose(iota({batch, 4, 3}, device), {0, 2, 1});
      check_close(sf({xt})[0], values(f({xt})[0]));
    }
  }
}
