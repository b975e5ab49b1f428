// conv2d, max_pool2d, avg_pool2d and their backward ops: hand-checked cases
// on cpu and mock, cpu against the mock on random problems (stride,
// padding, dilation, groups; f32, f64, bf16), and gradients against finite
// differences in f64 (first order for all; second order for conv and avg).
#include <random>

#include "gradcheck.h"

using oar::DType;
using oar::Shape;
using oar::Tensor;
using oar_test::check_close;
using oar_test::error_of;
using oar_test::test_devices;

namespace {

Tensor f64(const std::vector<double>& v, const Shape& s, const oar::Device& d) { return Tensor::from_vector(v, s, d); }

std::vector<double> iota(int64_t n, double start = 0) {
  std::vector<double> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<double>(i);
  return v;
}

}  // namespace

TEST_CASE("conv2d: hand-checked sums of windows") {
  for (const auto& device : test_devices()) {
    CAPTURE(device.str());
    for (DType dtype : {DType::f32, DType::f64, DType::bf16}) {
      CAPTURE(oar::dtype_name(dtype));
      Tensor x = oar::cast(f64(iota(9, 1), {1, 1, 3, 3}, device), dtype);  // 1..9
      Tensor w2 = oar::ones({1, 1, 2, 2}, dtype, device);
      Tensor y = oar::conv2d(x, w2);
      CHECK(y.shape() == Shape{1, 1, 2, 2});
      check_close(y, {12, 16, 24, 28});
      // 3x3 ones, padding 1, stride 2: the windows centred on the corners.
      check_close(oar::conv2d(x, oar::ones({1, 1, 3, 3}, dtype, device), Tensor(), {2}, {1}), {12, 16, 24, 28});
      // Dilation 2 of a 2x2 kernel reads the four corners.
      check_close(oar::conv2d(x, w2, Tensor(), {1}, {0}, {2}), {20});
      // Bias adds per output channel.
      Tensor bias = oar::cast(f64({100}, {1}, device), dtype);
      check_close(oar::conv2d(x, w2, bias), {112, 116, 124, 128});
    }
    // Groups: channel 0 (all 1) meets weight 3, channel 1 (all 2) weight 5.
    Tensor xg = f64({1, 1, 1, 1, 2, 2, 2, 2}, {1, 2, 2, 2}, device);
    Tensor wg = f64({3, 5}, {2, 1, 1, 1}, device);
    check_close(oar::conv2d(xg, wg, Tensor(), {1}, {0}, {1}, 2), {3, 3, 3, 3, 10, 10, 10, 10});
    // Two output channels over two input channels, no groups: 1*1*4*... sums.
    Tensor w22 = f64({1, 1, 1, -1}, {2, 2, 1, 1}, device);
    check_close(oar::conv2d(xg, w22), {3, 3, 3, 3, -1, -1, -1, -1});
  }
}

TEST_CASE("conv2d: meta errors name the op and the shapes") {
  for (const auto& device : test_devices()) {
    Tensor x = oar::zeros({1, 3, 5, 5}, DType::f32, device);
    CHECK(error_of([&] { oar::conv2d(x, oar::zeros({4, 2, 3, 3}, DType::f32, device)); })
              .find("conv2d: x has shape [1, 3, 5, 5] and weight has shape [4, 2, 3, 3]") != std::string::npos);
    CHECK(error_of([&] { oar::conv2d(x, oar::zeros({4, 3, 7, 7}, DType::f32, device)); })
              .find("spans 7 elements, more than the padded extent 5") != std::string::npos);
    CHECK(error_of([&] { oar::conv2d(oar::zeros({3, 5, 5}, DType::f32, device), x); })
              .find("conv2d: x must be 4-D (NCHW) but has shape [3, 5, 5]") != std::string::npos);
    CHECK(error_of([&] { oar::max_pool2d(x, {3}, {1}, {2}); })
              .find("max_pool2d: paddings [2, 2] must be at most half of kernel_size [3, 3]") != std::string::npos);
  }
}

TEST_CASE("pools: hand-checked windows") {
  for (const auto& device : test_devices()) {
    CAPTURE(device.str());
    for (DType dtype : {DType::f32, DType::f64, DType::bf16}) {
      CAPTURE(oar::dtype_name(dtype));
      Tensor x = oar::cast(f64(iota(16), {1, 1, 4, 4}, device), dtype);  // 0..15
      check_close(oar::max_pool2d(x, {2}), {5, 7, 13, 15});
      check_close(oar::avg_pool2d(x, {2}), {2.5, 4.5, 10.5, 12.5});
      check_close(oar::max_pool2d(x, {3}, {2}, {1}), {5, 7, 13, 15});
      // [1 2; 3 4], window 2, stride 1, padding 1: exclusive divides by the
      // elements inside, inclusive by 4.
      Tensor small = oar::cast(f64({1, 2, 3, 4}, {1, 1, 2, 2}, device), dtype);
      check_close(oar::avg_pool2d(small, {2}, {1}, {1}), {1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4});
      check_close(oar::avg_pool2d(small, {2}, {1}, {1}, false), {0.25, 0.75, 0.5, 1, 2.5, 1.5, 0.75, 1.75, 1});
    }
  }
}

TEST_CASE("conv and pool gradients: hand-checked") {
  for (const auto& device : test_devices()) {
    CAPTURE(device.str());
    Tensor x = f64(iota(9, 1), {1, 1, 3, 3}, device).set_requires_grad();
    Tensor w = oar::ones({1, 1, 2, 2}, DType::f64, device).set_requires_grad();
    auto g = oar::grad({oar::sum(oar::conv2d(x, w))}, {x, w});
    check_close(g[0], {1, 2, 1, 2, 4, 2, 1, 2, 1});  // windows covering each element
    check_close(g[1], {12, 16, 24, 28});               // sums of the shifted windows

    Tensor p = f64(iota(16), {1, 1, 4, 4}, device).set_requires_grad();
    check_close(oar::grad({oar::sum(oar::max_pool2d(p, {2}))}, {p})[0],
                {0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1});
    check_close(oar::grad({oar::sum(oar::avg_pool2d(p, {2}))}, {p})[0], std::vector<double>(16, 0.25));
  }
}

namespace {

struct ConvCase {
  Shape x, w;
  int64_t stride, padding, dilation, groups;
};

Tensor random_tensor(const Shape& shape, uint64_t seed, const oar::Device& device) {
  return Tensor::from_vector(oar_test::random_values(oar::shape_numel(shape), seed), shape, device);
}

// cpu and mock agree on shape and values.
void check_same(const Tensor& c, const Tensor& m, double tol) {
  REQUIRE(c.shape() == m.shape());
  REQUIRE(c.dtype() == m.dtype());
  check_close(oar_test::values(c), oar_test::values(m), tol, tol);
}

double tolerance(DType dtype) { return dtype == DType::f64 ? 1e-11 : dtype == DType::f32 ? 1e-4 : 3e-2; }

}  // namespace

TEST_CASE("conformance: conv2d and its grads, cpu against the mock") {
  const oar::Device cpu{"cpu", 0}, mock{"mock", 0};
  const std::vector<ConvCase> cases = {
      {{2, 3, 7, 6}, {4, 3, 3, 3}, 1, 1, 1, 1},  {{1, 4, 9, 9}, {6, 2, 3, 2}, 2, 1, 1, 2},
      {{2, 2, 8, 7}, {3, 2, 2, 3}, 1, 2, 2, 1},  {{1, 6, 10, 11}, {6, 1, 3, 3}, 3, 0, 1, 6},
      {{3, 16, 6, 6}, {16, 16, 3, 3}, 1, 1, 1, 1}, {{1, 8, 12, 12}, {4, 4, 5, 5}, 2, 2, 2, 2},
  };
  uint64_t seed = 100;
  for (const auto& c : cases) {
    for (DType dtype : {DType::f32, DType::f64, DType::bf16}) {
      CAPTURE(oar::shape_str(c.x));
      CAPTURE(oar::shape_str(c.w));
      CAPTURE(oar::dtype_name(dtype));
      CAPTURE(c.stride);
      CAPTURE(c.groups);
      const uint64_t sx = seed++, sw = seed++, sg = seed++;
      Tensor xc = oar::cast(random_tensor(c.x, sx, cpu), dtype), xm = oar::cast(random_tensor(c.x, sx, mock), dtype);
      Tensor wc = oar::cast(random_tensor(c.w, sw, cpu), dtype), wm = oar::cast(random_tensor(c.w, sw, mock), dtype);
      auto conv = [&](const Tensor& x, const Tensor& w) {
        return oar::conv2d(x, w, Tensor(), {c.stride}, {c.padding}, {c.dilation}, c.groups);
      };
      Tensor yc = conv(xc, wc), ym = conv(xm, wm);
      check_same(yc, ym, tolerance(dtype));
      // Both backward ops through the VJP: gradients of sum(y * g).
      Tensor gc = oar::cast(random_tensor(yc.shape(), sg, cpu), dtype);
      Tensor gm = oar::cast(random_tensor(ym.shape(), sg, mock), dtype);
      xc.set_requires_grad(), wc.set_requires_grad(), xm.set_requires_grad(), wm.set_requires_grad();
      auto dc = oar::grad({conv(xc, wc)}, {xc, wc}, {gc});
      auto dm = oar::grad({conv(xm, wm)}, {xm, wm}, {gm});
      check_same(dc[0], dm[0], tolerance(dtype));
      check_same(dc[1], dm[1], dtype == DType::bf16 ? 0.1 : tolerance(dtype) * 10);
    }
  }
}

TEST_CASE("conformance: pools and their grads, cpu against the mock") {
  const oar::Device cpu{"cpu", 0}, mock{"mock", 0};
  struct PoolCase {
    Shape x;
    int64_t kernel, stride, padding;
  };
  const std::vector<PoolCase> cases = {{{2, 3, 8, 8}, 2, 2, 0}, {{1, 4, 9, 7}, 3, 2, 1}, {{2, 2, 10, 10}, 3, 1, 1},
                                       {{1, 5, 11, 6}, 4, 3, 2}, {{3, 17, 14, 14}, 3, 2, 1}};
  uint64_t seed = 500;
  for (const auto& c : cases) {
    for (DType dtype : {DType::f32, DType::f64, DType::bf16}) {
      for (bool exclusive : {true, false}) {
        CAPTURE(oar::shape_str(c.x));
        CAPTURE(oar::dtype_name(dtype));
        CAPTURE(c.kernel);
        CAPTURE(c.padding);
        CAPTURE(exclusive);
        const uint64_t sx = seed++, sg = seed++;
        Tensor xc = oar::cast(random_tensor(c.x, sx, cpu), dtype).set_requires_grad();
        Tensor xm = oar::cast(random_tensor(c.x, sx, mock), dtype).set_requires_grad();
        Tensor ac = oar::avg_pool2d(xc, {c.kernel}, {c.stride}, {c.padding}, exclusive);
        Tensor am = oar::avg_pool2d(xm, {c.kernel}, {c.stride}, {c.padding}, exclusive);
        check_same(ac, am, tolerance(dtype));
        Tensor gc = oar::cast(random_tensor(ac.shape(), sg, cpu), dtype);
        Tensor gm = oar::cast(random_tensor(am.shape(), sg, mock), dtype);
        check_same(oar::grad({ac}, {xc}, {gc})[0], oar::grad({am}, {xm}, {gm})[0], tolerance(dtype));
        if (!exclusive) continue;
        Tensor mc = oar::max_pool2d(xc, {c.kernel}, {c.stride}, {c.padding});
        Tensor mm = oar::max_pool2d(xm, {c.kernel}, {c.stride}, {c.padding});
        check_same(mc, mm, 0);
        // bf16 windows may hold ties, where the argmax is the device's choice.
        if (dtype != DType::bf16)
          check_same(oar::grad({mc}, {xc}, {gc})[0], oar::grad({mm}, {xm}, {gm})[0], tolerance(dtype));
      }
    }
  }
}

TEST_CASE("conv and pool gradients match finite differences (f64)") {
  for (const auto& device : test_devices()) {
    CAPTURE(device.str());
    struct Case {
      const char* name;
      Shape x, w;
      int64_t stride, padding, dilation, groups;
    };
    for (const Case& c : {Case{"plain", {2, 2, 4, 4}, {3, 2, 2, 2}, 1, 0, 1, 1},
                          Case{"stride 2 padding 1", {1, 2, 5, 4}, {2, 2, 3, 3}, 2, 1, 1, 1},
                          Case{"dilation 2 groups 2", {1, 4, 5, 5}, {4, 2, 2, 2}, 1, 1, 2, 2}}) {
      CAPTURE(c.name);
      oar_test::TensorFn f = [c](const std::vector<Tensor>& in) {
        return oar::conv2d(in[0], in[1], Tensor(), {c.stride}, {c.padding}, {c.dilation}, c.groups);
      };
      std::vector<Tensor> inputs{oar_test::random_f64(c.x, device), oar_test::random_f64(c.w, device)};
      oar_test::check_gradients(f, inputs, {0, 1});
      // Second order: the VJP is built from conv2d_grad_input/_weight, whose
      // own VJPs are conv ops again (Note [Conv VJPs]).
      oar_test::check_second_order(f, inputs, {0, 1}, {.eps = 1e-6, .atol = 1e-5, .rtol = 1e-5});
    }
    oar_test::TensorFn avg = [](const std::vector<Tensor>& in) { return oar::avg_pool2d(in[0], {3}, {2}, {1}); };
    oar_test::TensorFn avg_incl = [](const std::vector<Tensor>& in) {
      return oar::avg_pool2d(in[0], {2}, {1}, {1}, false);
    };
    oar_test::TensorFn maxp = [](const std::vector<Tensor>& in) { return oar::max_pool2d(in[0], {3}, {2}, {1}); };
    std::vector<Tensor> xin{oar_test::random_f64({2, 2, 5, 6}, device)};
    oar_test::check_gradients(avg, xin, {0});
    oar_test::check_gradients(avg_incl, xin, {0});
    oar_test::check_gradients(maxp, xin, {0});
    oar_test::check_second_order(avg, xin, {0}, {.eps = 1e-6, .atol = 1e-5, .rtol = 1e-5});
    // The second derivative of max pooling is not implemented: a clear error.
    Tensor x = xin[0].detach().set_requires_grad();
    Tensor g = oar::grad({oar::sum(oar::max_pool2d(x, {2}) * oar::max_pool2d(x, {2}))}, {x}, {}, true)[0];
    CHECK(error_of([&] { oar::grad({oar::sum(g)}, {x}); }).find("max_pool2d_grad") != std::string::npos);
  }
}
