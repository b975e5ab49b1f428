// Reductions (sum, prod, max, min, argmax, argmin, mean, var) and matmul.
#include <cstdint>
#include <limits>

#include "test_util.h"

using oar::DType;
using oar::Shape;
using oar::Tensor;
using oar_test::check_close;
using oar_test::error_of;
using oar_test::test_devices;

namespace {

Tensor f32(const std::vector<float>& v, const Shape& s, const oar::Device& d) {
  return Tensor::from_vector(v, s, d);
}

// 0, 1, 2, ... as floats.
std::vector<float> iota(int64_t n, float start = 0) {
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<float>(i);
  return v;
}

// Row-major [m,k] @ [k,n] for host vectors.
std::vector<double> host_matmul(const std::vector<float>& a, const std::vector<float>& b, int m,
                                int k, int n) {
  std::vector<double> y(static_cast<size_t>(m * n), 0.0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      for (int p = 0; p < k; ++p) y[i * n + j] += double(a[i * k + p]) * b[p * n + j];
  return y;
}

// Row-major transpose of an [r,c] matrix.
std::vector<float> host_transpose(const std::vector<float>& a, int r, int c) {
  std::vector<float> t(a.size());
  for (int i = 0; i < r; ++i)
    for (int j = 0; j < c; ++j) t[j * r + i] = a[i * c + j];
  return t;
}

}  // namespace

TEST_CASE("sum, prod, max, min over all axes, one axis, several axes") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor x = f32({1, 2, 3, 4, 5, 6}, {2, 3}, device);
    Tensor s = oar::sum(x);
    CHECK(s.shape() == Shape{});
    check_close(s, {21});
    check_close(oar::sum(x, {0}), {5, 7, 9});
    check_close(oar::sum(x, {1}), {6, 15});
    check_close(oar::sum(x, {-1}), {6, 15});
    check_close(oar::sum(x, {0, 1}), {21});
    check_close(oar::prod(x), {720});
    check_close(oar::prod(x, {0}), {4, 10, 18});
    check_close(oar::prod(x, {-1}), {6, 120});

    Tensor y = f32({3, -1, 7, -5, 2, 0}, {2, 3}, device);
    check_close(oar::max(y), {7});
    check_close(oar::min(y), {-5});
    check_close(oar::max(y, {0}), {3, 2, 7});
    check_close(oar::min(y, {1}), {-1, -5});
    check_close(oar::max(y, {-2}), {3, 2, 7});
    CHECK(oar::max(y, {1}).dtype() == DType::f32);

    // [2,3,4] holding 0..23: reduce axes {0, 2} (and {-3, -1}).
    Tensor z = f32(iota(24), {2, 3, 4}, device);
    std::vector<double> want(3, 0.0);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 4; ++k) want[j] += 12 * i + 4 * j + k;
    check_close(oar::sum(z, {0, 2}), want);
    check_close(oar::sum(z, {-1, -3}), want);
    CHECK(oar::sum(z, {0, 2}).shape() == Shape{3});
    check_close(oar::max(z, {1, 2}), {11, 23});
    check_close(oar::min(z, {0, 1}), {0, 1, 2, 3});
  }
}

TEST_CASE("keepdim keeps reduced dims as 1") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor x = f32({1, 2, 3, 4, 5, 6}, {2, 3}, device);
    Tensor s = oar::sum(x, {1}, true);
    CHECK(s.shape() == Shape{2, 1});
    check_close(s, {6, 15});
    CHECK(oar::sum(x, {}, true).shape() == Shape{1, 1});
    CHECK(oar::max(x, {0}, true).shape() == Shape{1, 3});
    CHECK(oar::prod(oar::reshape(x, {1, 2, 3}), {0, 2}, true).shape() == Shape{1, 2, 1});
    CHECK(oar::mean(x, {-1}, true).shape() == Shape{2, 1});
  }
}

TEST_CASE("sum and prod of integers and bools give int64") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor x = Tensor::from_vector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3}, device);
    Tensor s = oar::sum(x, {0});
    CHECK(s.dtype() == DType::i64);
    CHECK(s.to_vector<int64_t>() == std::vector<int64_t>{5, 7, 9});
    CHECK(oar::prod(x).to_vector<int64_t>() == std::vector<int64_t>{720});
    Tensor big = Tensor::from_vector<int32_t>({2000000000, 2000000000}, {2}, device);
    CHECK(oar::sum(big).to_vector<int64_t>() == std::vector<int64_t>{4000000000LL});
    Tensor b = Tensor::from_vector<bool>({true, false, true, true}, {4}, device);
    CHECK(oar::sum(b).dtype() == DType::i64);
    CHECK(oar::sum(b).to_vector<int64_t>() == std::vector<int64_t>{3});
    Tensor m = oar::max(x, {1});
    CHECK(m.dtype() == DType::i32);
    CHECK(m.to_vector<int32_t>() == std::vector<int32_t>{3, 6});
  }
}

TEST_CASE("reductions over size-0 dims") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor e = oar::zeros({0, 3}, DType::f32, device);
    Tensor s = oar::sum(e, {0});
    CHECK(s.shape() == Shape{3});
    check_close(s, {0, 0, 0});
    check_close(oar::prod(e, {0}), {1, 1, 1});
    check_close(oar::sum(e), {0});
    CHECK(oar::sum(e, {1}).shape() == Shape{0});
    CHECK(oar::max(e, {1}).shape() == Shape{0});  // the reduced axis is not empty
    std::string msg = error_of([&] { oar::max(e, {0}); });
    CHECK(msg.find("max") != std::string::npos);
    CHECK(msg.find("size 0") != std::string::npos);
    CHECK_THROWS_AS(oar::min(e), oar::Error);
    CHECK_THROWS_AS(oar::argmax(e), oar::Error);
  }
}

TEST_CASE("argmax and argmin return the first extreme index") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor v = f32({1, 3, 3, 2}, {4}, device);
    Tensor am = oar::argmax(v);
    CHECK(am.dtype() == DType::i64);
    CHECK(am.shape() == Shape{});
    CHECK(am.to_vector<int64_t>() == std::vector<int64_t>{1});
    CHECK(oar::argmin(f32({4, 0, 2, 0}, {4}, device)).to_vector<int64_t>() ==
          std::vector<int64_t>{1});

    Tensor x = f32({5, 1, 5, 0, 7, 7}, {2, 3}, device);
    CHECK(oar::argmax(x, 1).to_vector<int64_t>() == std::vector<int64_t>{0, 1});
    CHECK(oar::argmax(x, 0).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 1});
    CHECK(oar::argmax(x, -1).to_vector<int64_t>() == std::vector<int64_t>{0, 1});
    CHECK(oar::argmin(x, 1).to_vector<int64_t>() == std::vector<int64_t>{1, 0});
    CHECK(oar::argmin(x, 0).to_vector<int64_t>() == std::vector<int64_t>{1, 0, 0});
    CHECK(oar::argmax(x).to_vector<int64_t>() == std::vector<int64_t>{4});  // flattened
    CHECK(oar::argmin(x).to_vector<int64_t>() == std::vector<int64_t>{3});
    CHECK(oar::argmax(x, 1, true).shape() == Shape{2, 1});
    CHECK(oar::argmax(x, std::nullopt, true).shape() == Shape{1, 1});
    // NaN counts as the extreme value (docs/kernels.md).
    const float nan = std::numeric_limits<float>::quiet_NaN();
    CHECK(oar::argmax(f32({1, nan, 3, nan}, {4}, device)).to_vector<int64_t>() ==
          std::vector<int64_t>{1});
    CHECK(oar::argmin(f32({1, -3, nan}, {3}, device)).to_vector<int64_t>() ==
          std::vector<int64_t>{2});
    Tensor xi = Tensor::from_vector<int32_t>({-2, 9, 9, -8}, {4}, device);
    CHECK(oar::argmax(xi).to_vector<int64_t>() == std::vector<int64_t>{1});
    CHECK(oar::argmin(xi).to_vector<int64_t>() == std::vector<int64_t>{3});
  }
}

TEST_CASE("mean and var") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor x = f32({1, 2, 3, 4, 5, 6}, {2, 3}, device);
    check_close(oar::mean(x), {3.5});
    check_close(oar::mean(x, {0}), {2.5, 3.5, 4.5});
    check_close(oar::mean(x, {1}), {2, 5});
    Tensor v = f32({1, 2, 3, 4}, {4}, device);
    // mean 2.5, squared deviations sum to 5.
    check_close(oar::var(v), {5.0 / 3});
    check_close(oar::var(v, {}, false), {1.25});
    Tensor w = f32({1, 2, 3, 2, 4, 6}, {2, 3}, device);
    check_close(oar::var(w, {1}), {1, 4});
    check_close(oar::var(w, {1}, false), {2.0 / 3, 8.0 / 3});
    check_close(oar::var(w, {0}, true, true), {0.5, 2, 4.5});
    CHECK(oar::var(w, {0}, true, true).shape() == Shape{1, 3});
    Tensor d = Tensor::from_vector<double>({1, 2, 3, 4}, {2, 2}, device);
    check_close(oar::var(d, {0, 1}), {5.0 / 3}, 1e-12, 1e-12);
    CHECK(oar::mean(d).dtype() == DType::f64);
  }
}

TEST_CASE("matmul 2-D with and without transposes") {
  std::vector<float> a = {1, 2, 3, 4, 5, 6};     // [2,3]
  std::vector<float> b = {7, 8, 9, 10, 11, 12};  // [3,2]
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor y = oar::matmul(f32(a, {2, 3}, device), f32(b, {3, 2}, device));
    CHECK(y.shape() == Shape{2, 2});
    check_close(y, {58, 64, 139, 154});
    Tensor at = f32(host_transpose(a, 2, 3), {3, 2}, device);
    Tensor bt = f32(host_transpose(b, 3, 2), {2, 3}, device);
    check_close(oar::matmul(at, f32(b, {3, 2}, device), true, false), {58, 64, 139, 154});
    check_close(oar::matmul(f32(a, {2, 3}, device), bt, false, true), {58, 64, 139, 154});
    check_close(oar::matmul(at, bt, true, true), {58, 64, 139, 154});
    // [3,2] @ [2,3] -> [3,3]
    Tensor z = oar::matmul(f32(b, {3, 2}, device), f32(a, {2, 3}, device));
    CHECK(z.shape() == Shape{3, 3});
    check_close(z, host_matmul(b, a, 3, 2, 3));
  }
}

TEST_CASE("matmul batched and with broadcast batch dims") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    // [2,2,3] @ [2,3,2]
    std::vector<float> a = iota(12, 1), b = iota(12, -6);
    Tensor y = oar::matmul(f32(a, {2, 2, 3}, device), f32(b, {2, 3, 2}, device));
    CHECK(y.shape() == Shape{2, 2, 2});
    std::vector<double> want;
    for (int i = 0; i < 2; ++i) {
      auto blk = host_matmul({a.begin() + 6 * i, a.begin() + 6 * i + 6},
                             {b.begin() + 6 * i, b.begin() + 6 * i + 6}, 2, 3, 2);
      want.insert(want.end(), blk.begin(), blk.end());
    }
    check_close(y, want);
    // [2,1,3,4] @ [5,4,2] -> [2,5,3,2]: out[i][j] = A[i] @ B[j].
    std::vector<float> a4 = iota(24, -10), b3 = iota(40, -20);
    for (auto& v : b3) v *= 0.25f;
    Tensor big = oar::matmul(f32(a4, {2, 1, 3, 4}, device), f32(b3, {5, 4, 2}, device));
    CHECK(big.shape() == Shape{2, 5, 3, 2});
    std::vector<double> want4;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 5; ++j) {
        auto blk = host_matmul({a4.begin() + 12 * i, a4.begin() + 12 * i + 12},
                               {b3.begin() + 8 * j, b3.begin() + 8 * j + 8}, 3, 4, 2);
        want4.insert(want4.end(), blk.begin(), blk.end());
      }
    check_close(big, want4);
    // A 2-D operand broadcasts over the other's batch: [2,2,3] @ [3,2].
    Tensor mixed = oar::matmul(f32(a, {2, 2, 3}, device), f32(iota(6), {3, 2}, device));
    CHECK(mixed.shape() == Shape{2, 2, 2});
    auto m0 = host_matmul(a, iota(6), 4, 3, 2);
    check_close(mixed, m0);
  }
}

TEST_CASE("matmul with 1-D operands and f64") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor v = f32({1, 2, 3}, {3}, device);
    Tensor m = f32({1, 2, 3, 4, 5, 6}, {3, 2}, device);
    Tensor vm = oar::matmul(v, m);  // [3] @ [3,2] -> [2]
    CHECK(vm.shape() == Shape{2});
    check_close(vm, {22, 28});
    Tensor mv = oar::matmul(f32({1, 2, 3, 4, 5, 6}, {2, 3}, device), v);  // [2,3] @ [3] -> [2]
    CHECK(mv.shape() == Shape{2});
    check_close(mv, {14, 32});
    Tensor vv = oar::matmul(v, f32({4, 5, 6}, {3}, device));  // -> []
    CHECK(vv.shape() == Shape{});
    check_close(vv, {32});
    Tensor bv = oar::matmul(f32(iota(12), {2, 2, 3}, device), v);  // [2,2,3] @ [3] -> [2,2]
    CHECK(bv.shape() == Shape{2, 2});
    check_close(bv, {8, 26, 44, 62});
    Tensor d = oar::matmul(Tensor::from_vector<double>({1, 2, 3, 4}, {2, 2}, device),
                           Tensor::from_vector<double>({0.1, 0.2, 0.3, 0.4}, {2, 2}, device));
    CHECK(d.dtype() == DType::f64);
    check_close(d, {0.7, 1.0, 1.5, 2.2}, 1e-14, 1e-14);
  }
}

TEST_CASE("matmul with mismatched contracted dims names both shapes") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    std::string msg = error_of([&] {
      oar::matmul(oar::zeros({2, 2, 3}, DType::f32, device),
                  oar::zeros({2, 4, 5}, DType::f32, device));
    });
    INFO(msg);
    CHECK(msg.find("matmul") != std::string::npos);
    CHECK(msg.find("[2, 2, 3]") != std::string::npos);
    CHECK(msg.find("[2, 4, 5]") != std::string::npos);
    std::string vec = error_of([&] {
      oar::matmul(oar::zeros({3}, DType::f32, device), oar::zeros({4}, DType::f32, device));
    });
    CHECK(vec.find("matmul") != std::string::npos);
    CHECK_THROWS_AS(
        oar::matmul(oar::zeros({2, 3}, DType::f32, device), oar::zeros({2, 3}, DType::f32, device)),
        oar::Error);
    // Batch dims that cannot broadcast.
    CHECK_THROWS_AS(oar::matmul(oar::zeros({2, 2, 3}, DType::f32, device),
                                oar::zeros({3, 3, 2}, DType::f32, device)),
                    oar::Error);
  }
}

TEST_CASE("cpu: summing 100 million f32 ones gives exactly 1e8 (cascade summation, not 16777216)") {
  // A naive f32 accumulator stops at 2^24 = 16777216; the cpu plugin sums in
  // blocks, so the result is 1e8 exactly (1e8 is representable in f32).
  Tensor ones = oar::ones({100'000'000}, DType::f32, oar::Device{"cpu", 0});
  CHECK(oar::sum(ones).to_vector<float>()[0] == 100000000.0f);
  Tensor rows = oar::reshape(ones, {10'000, 10'000});
  std::vector<float> per_row = oar::sum(rows, {1}).to_vector<float>();
  CHECK(per_row.front() == 10000.0f);
  CHECK(per_row.back() == 10000.0f);
  CHECK(oar::sum(oar::sum(rows, {0})).to_vector<float>()[0] == 100000000.0f);
}
