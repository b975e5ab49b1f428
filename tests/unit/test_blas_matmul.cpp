// The cpu plugin's OpenBLAS matmul (f64, c64, c128) against a naive host
// reference: every transpose case, batch broadcast with padded ranks,
// strided operands (transposed and sliced views, expanded batch dims),
// sizes 1 and odd, and problems large enough to split over threads. Also
// the vectorized f64 exp and tanh against libm.
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <random>

#include "test_util.h"

using oar::DType;
using oar::Shape;
using oar::Tensor;

namespace {

const oar::Device kCpu{"cpu", 0};

/// Row-major strides of a shape.
std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int d = static_cast<int>(s.size()) - 2; d >= 0; --d) st[d] = st[d + 1] * s[d + 1];
  return st;
}

/// y = op(a) @ op(b) on host values with numpy broadcasting of the batch
/// dims (ranks padded with leading 1s), accumulated in long double.
template <class T>
std::vector<T> host_matmul(const std::vector<T>& a, Shape as, const std::vector<T>& b, Shape bs,
                           bool ta, bool tb, Shape* ys) {
  const size_t nd = std::max(as.size(), bs.size());
  as.insert(as.begin(), nd - as.size(), 1);
  bs.insert(bs.begin(), nd - bs.size(), 1);
  const auto ast = strides_of(as), bst = strides_of(bs);
  const int64_t M = ta ? as[nd - 1] : as[nd - 2], K = ta ? as[nd - 2] : as[nd - 1];
  const int64_t N = tb ? bs[nd - 2] : bs[nd - 1];
  REQUIRE((tb ? bs[nd - 1] : bs[nd - 2]) == K);
  Shape y;
  for (size_t d = 0; d + 2 < nd; ++d) y.push_back(std::max(as[d], bs[d]));
  y.push_back(M);
  y.push_back(N);
  *ys = y;
  int64_t batches = 1;
  for (size_t d = 0; d + 2 < nd; ++d) batches *= y[d];
  using Acc = std::conditional_t<std::is_same_v<T, double>, long double, std::complex<long double>>;
  std::vector<T> out(static_cast<size_t>(batches * M * N));
  for (int64_t bi = 0; bi < batches; ++bi) {
    int64_t ao = 0, bo = 0, rest = bi;
    for (int d = static_cast<int>(nd) - 3; d >= 0; --d) {
      const int64_t i = rest % y[d];
      rest /= y[d];
      if (as[d] != 1) ao += i * ast[d];
      if (bs[d] != 1) bo += i * bst[d];
    }
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t n = 0; n < N; ++n) {
        Acc acc = 0;
        for (int64_t k = 0; k < K; ++k) {
          const T av = a[ao + (ta ? k * ast[nd - 2] + m : m * ast[nd - 2] + k)];
          const T bv = b[bo + (tb ? n * bst[nd - 2] + k : k * bst[nd - 2] + n)];
          acc += Acc(av) * Acc(bv);
        }
        out[(bi * M + m) * N + n] = static_cast<T>(acc);
      }
    }
  }
  return out;
}

template <class T>
std::vector<T> random_values(int64_t n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<T> v(static_cast<size_t>(n));
  for (auto& x : v) {
    if constexpr (std::is_same_v<T, double>) {
      x = dist(gen);
    } else {
      const double re = dist(gen), im = dist(gen);
      x = T(static_cast<typename T::value_type>(re), static_cast<typename T::value_type>(im));
    }
  }
  return v;
}

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

/// How an operand reaches the kernel.
enum class Layout { kContiguous, kTransposedView, kColumnSlice, kStepSlice };

/// A tensor with logical shape `shape` and values `v` (row-major), stored
/// as `layout` says: contiguous, a transpose view of its last two dims, the
/// first columns of a wider matrix (leading dimension > columns), or every
/// other column (no unit stride: the kernel copies it).
template <class T>
Tensor make_operand(const std::vector<T>& v, const Shape& shape, Layout layout, uint64_t seed) {
  const size_t nd = shape.size();
  const int64_t R = shape[nd - 2], C = shape[nd - 1], batch = numel(shape) / (R * C);
  if (layout == Layout::kContiguous) return Tensor::from_vector(v, shape, kCpu);
  if (layout == Layout::kTransposedView) {
    std::vector<T> t(v.size());
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t r = 0; r < R; ++r)
        for (int64_t c = 0; c < C; ++c) t[(b * C + c) * R + r] = v[(b * R + r) * C + c];
    Shape ts = shape;
    std::swap(ts[nd - 2], ts[nd - 1]);
    std::vector<int64_t> perm;
    for (size_t d = 0; d < nd; ++d) perm.push_back(static_cast<int64_t>(d));
    std::swap(perm[nd - 2], perm[nd - 1]);
    return oar::transpose(Tensor::from_vector(t, ts, kCpu), perm);
  }
  const int64_t wide = layout == Layout::kColumnSlice ? C + 3 : 2 * C;
  std::vector<T> w = random_values<T>(batch * R * wide, seed);  // filler the slice skips
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c) {
        const int64_t col = layout == Layout::kColumnSlice ? c : 2 * c;
        w[(b * R + r) * wide + col] = v[(b * R + r) * C + c];
      }
  Shape ws = shape;
  ws[nd - 1] = wide;
  const auto axis = static_cast<int64_t>(nd - 1);
  if (layout == Layout::kColumnSlice)
    return oar::slice(Tensor::from_vector(w, ws, kCpu), {axis}, {0}, {C});
  return oar::slice(Tensor::from_vector(w, ws, kCpu), {axis}, {0}, {wide}, {2});
}

template <class T>
void check_matmul(const Shape& as, const Shape& bs, bool ta, bool tb, Layout la, Layout lb,
                  double tol) {
  const auto av = random_values<T>(numel(as), 1 + numel(as));
  const auto bv = random_values<T>(numel(bs), 7 + numel(bs));
  Shape ys;
  const auto want = host_matmul(av, as, bv, bs, ta, tb, &ys);
  Tensor a = make_operand(av, as, la, 11);
  Tensor b = make_operand(bv, bs, lb, 13);
  Tensor y = oar::matmul(a, b, ta, tb);
  REQUIRE(y.shape() == ys);
  const auto got = y.to_vector<T>();
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << " of " << got.size());
    const double err = std::abs(got[i] - want[i]);
    CHECK(err <= tol * (1.0 + std::abs(want[i])));
  }
}

const Layout kLayouts[] = {Layout::kContiguous, Layout::kTransposedView, Layout::kColumnSlice,
                           Layout::kStepSlice};

template <class T>
void check_all_cases(double tol) {
  // Sizes 1 and odd, every transpose flag and every layout of both operands.
  const int64_t dims[][3] = {{1, 1, 1}, {1, 5, 3}, {4, 1, 7}, {3, 6, 1}, {7, 5, 9}, {17, 3, 33}};
  for (const auto& mnk : dims) {
    const int64_t M = mnk[0], N = mnk[1], K = mnk[2];
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      const Shape as = ta ? Shape{K, M} : Shape{M, K};
      const Shape bs = tb ? Shape{N, K} : Shape{K, N};
      for (Layout la : kLayouts) {
        for (Layout lb : kLayouts) {
          INFO("M N K = " << M << " " << N << " " << K << ", ta " << ta << ", tb " << tb
                          << ", layouts " << int(la) << " " << int(lb));
          check_matmul<T>(as, bs, ta, tb, la, lb, tol);
        }
      }
    }
  }
}

template <class T>
void check_batches(double tol) {
  // Broadcast batch dims, padded ranks ([3, K, N] against [2, 1, M, K]).
  check_matmul<T>({2, 1, 5, 4}, {3, 4, 6}, false, false, Layout::kContiguous, Layout::kContiguous,
                  tol);
  check_matmul<T>({2, 1, 4, 5}, {3, 6, 4}, true, true, Layout::kTransposedView,
                  Layout::kStepSlice, tol);
  check_matmul<T>({5, 3}, {4, 3, 2}, false, false, Layout::kColumnSlice, Layout::kTransposedView,
                  tol);
  check_matmul<T>({1, 3, 7, 3}, {2, 1, 3, 1}, false, false, Layout::kStepSlice,
                  Layout::kContiguous, tol);
  // Large enough to split over threads: along M, along N, and by batch.
  check_matmul<T>({130, 70}, {70, 40}, false, false, Layout::kContiguous, Layout::kContiguous,
                  tol);
  check_matmul<T>({80, 3}, {80, 1200}, true, false, Layout::kContiguous, Layout::kTransposedView,
                  tol);
  check_matmul<T>({5, 40, 30}, {30, 50}, false, false, Layout::kColumnSlice, Layout::kContiguous,
                  tol);
}

/// An operand whose batch dim (and one matrix dim) has stride 0 (expand).
template <class T>
void check_expanded(double tol) {
  const auto av = random_values<T>(4 * 3, 3);
  const auto bv = random_values<T>(1 * 5, 5);
  Tensor a = oar::broadcast_to(Tensor::from_vector(av, {1, 4, 3}, kCpu), {6, 4, 3});
  Tensor b = oar::broadcast_to(Tensor::from_vector(bv, {1, 1, 5}, kCpu), {6, 3, 5});
  Tensor y = oar::matmul(a, b);
  REQUIRE(y.shape() == Shape{6, 4, 5});
  std::vector<T> bfull;
  for (int k = 0; k < 3; ++k) bfull.insert(bfull.end(), bv.begin(), bv.end());
  Shape ys;
  const auto want1 = host_matmul(av, {4, 3}, bfull, {3, 5}, false, false, &ys);
  const auto got = y.to_vector<T>();
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    const T w = want1[i % want1.size()];
    CHECK(std::abs(got[i] - w) <= tol * (1.0 + std::abs(w)));
  }
}

}  // namespace

TEST_CASE("f64 matmul on the cpu matches a naive reference in every transpose and layout case") {
  check_all_cases<double>(1e-14);
}

TEST_CASE("f64 matmul broadcasts batches, splits large problems and reads expanded operands") {
  check_batches<double>(1e-13);
  check_expanded<double>(1e-14);
}

TEST_CASE("f64 matmul with an empty contraction gives zeros") {
  Tensor y = oar::matmul(oar::ones({3, 0}, DType::f64, kCpu), oar::ones({0, 2}, DType::f64, kCpu));
  REQUIRE(y.shape() == Shape{3, 2});
  for (double v : y.to_vector<double>()) CHECK(v == 0.0);
}

namespace {

/// Distance of got from want in units in the last place of want.
double ulps(double got, double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0.0 : 1e30;
  if (got == want) return 0.0;
  if (std::isinf(want) || std::isinf(got)) return 1e30;
  const double aw = std::fabs(want);
  const double ulp = aw < std::numeric_limits<double>::min()
                         ? std::numeric_limits<double>::denorm_min()
                         : std::nextafter(aw, std::numeric_limits<double>::infinity()) - aw;
  return std::fabs(got - want) / ulp;
}

}  // namespace

TEST_CASE("f64 exp and tanh on the cpu are within 2 ulp of libm, special values included") {
  std::vector<double> x;
  std::mt19937_64 gen(42);
  std::uniform_real_distribution<double> wide(-40.0, 40.0), narrow(-1.0, 1.0);
  for (int i = 0; i < 100000; ++i) x.push_back(i % 2 ? wide(gen) : narrow(gen) * 1e-3 * (i % 9));
  const double inf = std::numeric_limits<double>::infinity();
  for (double v : {0.0, -0.0, inf, -inf, std::nan(""), 0.625, -0.625, 1e-300, 5e-324, 22.0, 19.5,
                   -746.0, -745.1, -744.0, -708.4, 709.7, 709.79, 709.8, 800.0})
    x.push_back(v);
  Tensor t = Tensor::from_vector(x, {static_cast<int64_t>(x.size())}, kCpu);
  const auto e = oar::exp(t).to_vector<double>();
  const auto h = oar::tanh(t).to_vector<double>();
  double worst_exp = 0, worst_tanh = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    INFO("x = " << x[i] << ": exp " << e[i] << " (libm " << std::exp(x[i]) << "), tanh " << h[i]
                << " (libm " << std::tanh(x[i]) << ")");
    const double ue = ulps(e[i], std::exp(x[i])), ut = ulps(h[i], std::tanh(x[i]));
    CHECK(ue <= 2.0);
    CHECK(ut <= 2.0);
    CHECK(std::signbit(h[i]) == std::signbit(std::tanh(x[i])));
    worst_exp = std::max(worst_exp, ue);
    worst_tanh = std::max(worst_tanh, ut);
  }
  MESSAGE("max ulp: exp " << worst_exp << ", tanh " << worst_tanh);
}
