// Shape manipulation (reshape, transpose, broadcast_to, slice, concat, pad,
// gather, scatter_add, squeeze/unsqueeze/flatten), creation ops and the
// counter-based random ops.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "oar/plugin_util.h"
#include "test_util.h"

using oar::DType;
using oar::Shape;
using oar::Tensor;
using oar_test::check_close;
using oar_test::test_devices;

namespace {

Tensor f32(const std::vector<float>& v, const Shape& s, const oar::Device& d) {
  return Tensor::from_vector(v, s, d);
}

// 0, 1, 2, ... as floats, shaped.
Tensor iota(const Shape& shape, const oar::Device& d) {
  std::vector<float> v(static_cast<size_t>(oar::shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return f32(v, shape, d);
}

// Same bits (stricter than ==, which treats -0 and 0 alike).
template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// Mean and standard deviation of a host vector.
std::pair<double, double> moments(const std::vector<double>& v) {
  double m = 0, s = 0;
  for (double x : v) m += x;
  m /= static_cast<double>(v.size());
  for (double x : v) s += (x - m) * (x - m);
  return {m, std::sqrt(s / static_cast<double>(v.size()))};
}

}  // namespace

TEST_CASE("reshape with -1 and 0") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor x = iota({2, 3}, device);
    Tensor r = oar::reshape(x, {3, -1});
    CHECK(r.shape() == Shape{3, 2});
    check_close(r, {0, 1, 2, 3, 4, 5});
    CHECK(oar::reshape(x, {0, -1}).shape() == Shape{2, 3});
    CHECK(oar::reshape(x, {-1}).shape() == Shape{6});
    CHECK(oar::reshape(x, {6, 1}).shape() == Shape{6, 1});
    Tensor y = iota({2, 3, 4}, device);
    CHECK(oar::reshape(y, {0, -1}).shape() == Shape{2, 12});
    CHECK(oar::reshape(y, {0, 0, 2, 2}).shape() == Shape{2, 3, 2, 2});
    check_close(oar::reshape(y, {-1, 4}), oar_test::values(y));
    CHECK_THROWS_AS(oar::reshape(x, {4, -1}), oar::Error);
    CHECK_THROWS_AS(oar::reshape(x, {-1, -1}), oar::Error);
    CHECK_THROWS_AS(oar::reshape(x, {7}), oar::Error);
  }
}

TEST_CASE("transpose and broadcast_to") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor x = iota({2, 3}, device);
    Tensor t = oar::transpose(x, {1, 0});
    CHECK(t.shape() == Shape{3, 2});
    check_close(t, {0, 3, 1, 4, 2, 5});
    check_close(oar::transpose(x, {-1, 0}), {0, 3, 1, 4, 2, 5});
    // [2,3,4] with perm {2,0,1}: y[k][i][j] = x[i][j][k] = 12i + 4j + k.
    Tensor y = oar::transpose(iota({2, 3, 4}, device), {2, 0, 1});
    CHECK(y.shape() == Shape{4, 2, 3});
    std::vector<double> want;
    for (int k = 0; k < 4; ++k)
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j) want.push_back(12 * i + 4 * j + k);
    check_close(y, want);
    CHECK_THROWS_AS(oar::transpose(x, {0, 0}), oar::Error);

    Tensor b = oar::broadcast_to(f32({1, 2, 3}, {3}, device), {2, 3});
    CHECK(b.shape() == Shape{2, 3});
    check_close(b, {1, 2, 3, 1, 2, 3});
    Tensor c = oar::broadcast_to(f32({1, 2, 3}, {3, 1}, device), {2, 3, 2});
    check_close(c, {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
    check_close(oar::broadcast_to(f32({4}, {}, device), {3}), {4, 4, 4});
    CHECK(oar::broadcast_to(f32({4}, {1}, device), {0}).shape() == Shape{0});
    CHECK_THROWS_AS(oar::broadcast_to(f32({1, 2}, {2}, device), {3}), oar::Error);
  }
}

TEST_CASE("slice with steps, negative indices, clamping and empty results") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor x = iota({10}, device);
    check_close(oar::slice(x, {0}, {2}, {8}), {2, 3, 4, 5, 6, 7});
    check_close(oar::slice(x, {0}, {2}, {8}, {2}), {2, 4, 6});
    check_close(oar::slice(x, {0}, {1}, {10}, {4}), {1, 5, 9});
    check_close(oar::slice(x, {0}, {8}, {2}, {-3}), {8, 5});
    check_close(oar::slice(x, {0}, {-1}, {-11}, {-1}),
                {9, 8, 7, 6, 5, 4, 3, 2, 1, 0});  // x[-1:-11:-1]
    check_close(oar::slice(x, {0}, {-3}, {-1}), {7, 8});
    check_close(oar::slice(x, {0}, {-100}, {3}), {0, 1, 2});  // clamped start
    check_close(oar::slice(x, {0}, {7}, {100}), {7, 8, 9});   // clamped end
    check_close(oar::slice(x, {0}, {100}, {-100}, {-4}), {9, 5, 1});
    Tensor empty = oar::slice(x, {0}, {5}, {2});
    CHECK(empty.shape() == Shape{0});
    CHECK(empty.to_vector<float>().empty());
    CHECK(oar::slice(x, {0}, {2}, {5}, {-1}).shape() == Shape{0});
    // 2-D: rows 1..2, columns 3, 2, 1 of a [3,4] holding 0..11.
    Tensor m = iota({3, 4}, device);
    Tensor s = oar::slice(m, {0, 1}, {1, -1}, {3, 0}, {1, -1});
    CHECK(s.shape() == Shape{2, 3});
    check_close(s, {7, 6, 5, 11, 10, 9});
    check_close(oar::slice(m, {-1}, {0}, {1}), {0, 4, 8});
    CHECK_THROWS_AS(oar::slice(x, {0}, {0}, {5}, {0}), oar::Error);
  }
}

TEST_CASE("concat along axes, with a size-0 input") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor a = f32({1, 2, 3, 4}, {2, 2}, device);
    Tensor b = f32({5, 6}, {1, 2}, device);
    Tensor r0 = oar::concat({a, b}, 0);
    CHECK(r0.shape() == Shape{3, 2});
    check_close(r0, {1, 2, 3, 4, 5, 6});
    Tensor c = f32({7, 8}, {2, 1}, device);
    Tensor r1 = oar::concat({a, c}, 1);
    CHECK(r1.shape() == Shape{2, 3});
    check_close(r1, {1, 2, 7, 3, 4, 8});
    check_close(oar::concat({c, a, c}, -1), {7, 1, 2, 7, 8, 3, 4, 8});
    Tensor e = oar::zeros({0, 2}, DType::f32, device);
    Tensor r2 = oar::concat({e, a, e}, 0);
    CHECK(r2.shape() == Shape{2, 2});
    check_close(r2, {1, 2, 3, 4});
    CHECK(oar::concat({e, e}, 0).shape() == Shape{0, 2});
    Tensor ints = oar::concat({Tensor::from_vector<int64_t>({1}, {1}, device),
                               Tensor::from_vector<int64_t>({2, 3}, {2}, device)});
    CHECK(ints.to_vector<int64_t>() == std::vector<int64_t>{1, 2, 3});
    std::string msg = oar_test::error_of([&] {
      oar::concat({a, f32({1, 2, 3}, {1, 3}, device)}, 0);
    });
    CHECK(msg.find("concat") != std::string::npos);
  }
}

TEST_CASE("pad with a constant") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor x = f32({1, 2, 3, 4}, {2, 2}, device);
    Tensor y = oar::pad(x, {1, 0, 0, 2}, 9);
    CHECK(y.shape() == Shape{3, 4});
    check_close(y, {9, 9, 9, 9, 1, 2, 9, 9, 3, 4, 9, 9});
    check_close(oar::pad(f32({5}, {1}, device), {2, 1}), {0, 0, 5, 0});
    CHECK(oar::pad(oar::zeros({0}, DType::f32, device), {1, 1}, 3).to_vector<float>() ==
          std::vector<float>{3, 3});
    CHECK_THROWS_AS(oar::pad(x, {1, 1}), oar::Error);
  }
}

TEST_CASE("gather and scatter_add with int32 and int64 indices") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor x = f32({1, 2, 3, 4, 5, 6}, {3, 2}, device);
    Tensor i32 = Tensor::from_vector<int32_t>({2, 0, 2}, {3}, device);
    Tensor g = oar::gather(x, i32, 0);
    CHECK(g.shape() == Shape{3, 2});
    check_close(g, {5, 6, 1, 2, 5, 6});
    Tensor i64 = Tensor::from_vector<int64_t>({1}, {1}, device);
    Tensor g1 = oar::gather(x, i64, 1);
    CHECK(g1.shape() == Shape{3, 1});
    check_close(g1, {2, 4, 6});
    check_close(oar::gather(x, i64, -1), {2, 4, 6});
    CHECK(oar::gather(x, Tensor::from_vector<int64_t>({}, {0}, device)).shape() == Shape{0, 2});

    // Duplicate indices accumulate: rows 0 and 2 of the updates land on row 0.
    Tensor upd = f32({1, 2, 3, 4, 5, 6}, {3, 2}, device);
    Tensor s = oar::scatter_add(oar::zeros({3, 2}, DType::f32, device),
                                Tensor::from_vector<int32_t>({0, 2, 0}, {3}, device), upd);
    CHECK(s.shape() == Shape{3, 2});
    check_close(s, {6, 8, 0, 0, 3, 4});
    Tensor s1 = oar::scatter_add(x, Tensor::from_vector<int64_t>({1, 1}, {2}, device),
                                 f32({10, 20, 30, 40, 50, 60}, {3, 2}, device), 1);
    check_close(s1, {1, 32, 3, 74, 5, 116});
    check_close(x, {1, 2, 3, 4, 5, 6});  // the input is unchanged
  }
}

TEST_CASE("gather and scatter_add reject an out-of-range index with oar::Error") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor x = f32({1, 2, 3, 4, 5, 6}, {3, 2}, device);
    for (int64_t bad : {int64_t{3}, int64_t{100}}) {
      INFO("index " << bad);
      Tensor idx = Tensor::from_vector<int64_t>({0, bad}, {2}, device);
      // The mock may report the error only when the result is read.
      CHECK_THROWS_AS(oar::gather(x, idx, 0).to_vector<float>(), oar::Error);
      CHECK_THROWS_AS(
          oar::scatter_add(x, idx, oar::ones({2, 2}, DType::f32, device), 0).to_vector<float>(),
          oar::Error);
      oar::Runtime::global().synchronize(device);  // nothing left pending
    }
    Tensor i32 = Tensor::from_vector<int32_t>({2}, {1}, device);
    CHECK_THROWS_AS(oar::gather(x, i32, 1).to_vector<float>(), oar::Error);
    // The device is still usable afterwards.
    check_close(oar::gather(x, Tensor::from_vector<int32_t>({1}, {1}, device), 0), {3, 4});
    CHECK_THROWS_AS(oar::gather(x, f32({0}, {1}, device), 0), oar::Error);  // float index
  }
}

TEST_CASE("squeeze, unsqueeze and flatten") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor x = iota({1, 3, 1}, device);
    CHECK(oar::squeeze(x).shape() == Shape{3});
    CHECK(oar::squeeze(x, {0}).shape() == Shape{3, 1});
    CHECK(oar::squeeze(x, {-1}).shape() == Shape{1, 3});
    CHECK(oar::squeeze(x, {1}).shape() == Shape{1, 3, 1});  // a dim that is not 1 stays
    check_close(oar::squeeze(x), {0, 1, 2});
    Tensor v = iota({3}, device);
    CHECK(oar::unsqueeze(v, {0}).shape() == Shape{1, 3});
    CHECK(oar::unsqueeze(v, {-1}).shape() == Shape{3, 1});
    CHECK(oar::unsqueeze(v, {0, -1}).shape() == Shape{1, 3, 1});
    CHECK(oar::unsqueeze(f32({2}, {}, device), {0}).shape() == Shape{1});
    Tensor y = iota({2, 3, 4}, device);
    CHECK(oar::flatten(y).shape() == Shape{24});
    CHECK(oar::flatten(y, 1).shape() == Shape{2, 12});
    CHECK(oar::flatten(y, 0, 1).shape() == Shape{6, 4});
    CHECK(oar::flatten(y, -2, -1).shape() == Shape{2, 12});
    CHECK(oar::flatten(f32({2}, {}, device)).shape() == Shape{1});
    check_close(oar::flatten(y, 1), oar_test::values(y));
  }
}

TEST_CASE("full, zeros, ones and arange") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor f = oar::full({2, 2}, 3.5, DType::f32, device);
    CHECK(f.device() == device);
    CHECK(f.to_vector<float>() == std::vector<float>{3.5, 3.5, 3.5, 3.5});
    CHECK(oar::full({3}, 7.9, DType::i32, device).to_vector<int32_t>() ==
          std::vector<int32_t>{7, 7, 7});
    CHECK(oar::full({}, -2, DType::f64, device).to_vector<double>() == std::vector<double>{-2});
    CHECK(oar::zeros({2}, DType::i64, device).to_vector<int64_t>() == std::vector<int64_t>{0, 0});
    CHECK(oar::ones({2}, DType::boolean, device).to_vector<bool>() ==
          std::vector<bool>{true, true});
    CHECK(oar::ones({0, 4}, DType::f32, device).shape() == Shape{0, 4});
    check_close(oar::ones({2}, DType::bf16, device), {1, 1}, 0, 0);
    check_close(oar::full_like(f, 2), {2, 2, 2, 2});
    CHECK(oar::zeros_like(oar::zeros({3}, DType::i32, device)).dtype() == DType::i32);

    Tensor a = oar::arange(0, 5, 1, DType::i64, device);
    CHECK(a.dtype() == DType::i64);
    CHECK(a.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4});
    CHECK(oar::arange(5, 0, -2, DType::i32, device).to_vector<int32_t>() ==
          std::vector<int32_t>{5, 3, 1});
    CHECK(oar::arange(1, 2, 0.25, DType::f32, device).to_vector<float>() ==
          std::vector<float>{1, 1.25, 1.5, 1.75});
    CHECK(oar::arange(1, -1, -0.5, DType::f64, device).to_vector<double>() ==
          std::vector<double>{1, 0.5, 0, -0.5});
    CHECK(oar::arange(3, 3, 1, DType::i64, device).shape() == Shape{0});
    CHECK(oar::arange(3, 0, 1, DType::i64, device).shape() == Shape{0});
    CHECK_THROWS_AS(oar::arange(0, 1, 0, DType::i64, device), oar::Error);
  }
}

TEST_CASE("uniform and normal: range, moments, determinism") {
  const int64_t n = 100000;
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor u = oar::uniform({n}, -2, 3, DType::f32, device, 42, 0);
    auto uv = oar_test::values(u);
    bool in_range = true;
    for (double x : uv) in_range = in_range && x >= -2 && x < 3;
    CHECK(in_range);
    auto [um, us] = moments(uv);
    CHECK(std::abs(um - 0.5) < 0.03);                  // mean (low + high) / 2
    CHECK(std::abs(us - 5 / std::sqrt(12.0)) < 0.02);  // std (high - low) / sqrt(12)

    Tensor g = oar::normal({n}, 1, 2, DType::f32, device, 42, 0);
    auto [gm, gs] = moments(oar_test::values(g));
    CHECK(std::abs(gm - 1) < 0.04);
    CHECK(std::abs(gs - 2) < 0.04);
    CHECK(oar::normal({2, 3}, 0, 1, DType::f64, device, 1, 0).shape() == Shape{2, 3});

    CHECK(same_bits(u.to_vector<float>(),
                    oar::uniform({n}, -2, 3, DType::f32, device, 42, 0).to_vector<float>()));
    CHECK(same_bits(g.to_vector<float>(),
                    oar::normal({n}, 1, 2, DType::f32, device, 42, 0).to_vector<float>()));
    auto u1 = oar::uniform({1000}, 0, 1, DType::f32, device, 42, 1).to_vector<float>();
    auto u0 = oar::uniform({1000}, 0, 1, DType::f32, device, 42, 0).to_vector<float>();
    auto s7 = oar::uniform({1000}, 0, 1, DType::f32, device, 7, 0).to_vector<float>();
    int same_offset = 0, same_seed = 0;
    for (size_t i = 0; i < u0.size(); ++i)
      same_offset += u0[i] == u1[i], same_seed += u0[i] == s7[i];
    CHECK(same_offset < 10);
    CHECK(same_seed < 10);
    CHECK_THROWS_AS(oar::uniform({2}, 0, 1, DType::i32, device, 1, 0), oar::Error);
  }
}

TEST_CASE("uniform and normal are bitwise identical on cpu and mock") {
  oar::Device cpu{"cpu", 0}, mock{"mock", 0};
  for (Shape shape : {Shape{1}, Shape{7}, Shape{3, 5}, Shape{1023}, Shape{4, 257}}) {
    for (uint64_t offset : {uint64_t{0}, uint64_t{5}, uint64_t{1} << 33}) {
      INFO("shape " << oar::shape_str(shape) << " offset " << offset);
      uint64_t seed = 0x123456789abcULL;
      CHECK(
          same_bits(oar::uniform(shape, -1, 2, DType::f32, cpu, seed, offset).to_vector<float>(),
                    oar::uniform(shape, -1, 2, DType::f32, mock, seed, offset).to_vector<float>()));
      CHECK(same_bits(
          oar::uniform(shape, -1, 2, DType::f64, cpu, seed, offset).to_vector<double>(),
          oar::uniform(shape, -1, 2, DType::f64, mock, seed, offset).to_vector<double>()));
      CHECK(
          same_bits(oar::normal(shape, 0.5, 3, DType::f32, cpu, seed, offset).to_vector<float>(),
                    oar::normal(shape, 0.5, 3, DType::f32, mock, seed, offset).to_vector<float>()));
      CHECK(same_bits(
          oar::normal(shape, 0.5, 3, DType::f64, cpu, seed, offset).to_vector<double>(),
          oar::normal(shape, 0.5, 3, DType::f64, mock, seed, offset).to_vector<double>()));
    }
  }
}

TEST_CASE("uniform and normal follow the Philox formula of docs/kernels.md") {
  const uint64_t seed = 2024, offset = 3;
  for (const auto& device : test_devices()) {
    INFO(device.str());
    auto u = oar::uniform({9}, -1, 3, DType::f64, device, seed, offset).to_vector<double>();
    auto g = oar::normal({9}, 0.5, 2, DType::f64, device, seed, offset).to_vector<double>();
    for (uint64_t i = 0; i < 9; ++i) {
      INFO("element " << i);
      CHECK(u[i] == -1 + 4 * oar_uniform_at(seed, offset, i));
      CHECK(g[i] == doctest::Approx(0.5 + 2 * oar_normal_at(seed, offset, i)).epsilon(1e-15));
    }
  }
}
