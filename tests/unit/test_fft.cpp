// The FFT ops (core/src/ops/fft.cpp) on the mock's reference DFT and on the
// cpu through liboar_fftw.so: hand-computed transforms, the two devices
// against each other on strided and batched problems, and FFTW planning
// from several threads at once (Note [FFTW plans] in plugins/fftw).
#include <complex>
#include <random>
#include <thread>

#include "test_util.h"

using oar::DType;
using oar::Shape;
using oar::Tensor;
using cpx = std::complex<double>;

namespace {

bool has_fftw() {
  for (const auto& p : oar::Runtime::global().plugins())
    if (p.path.find("liboar_fftw") != std::string::npos) return true;
  return false;
}

std::vector<oar::Device> fft_devices() {
  std::vector<oar::Device> out{{"mock", 0}};
  if (has_fftw()) out.push_back({"cpu", 0});
  return out;
}

std::vector<cpx> random_complex(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<cpx> v(n);
  for (auto& z : v) z = {dist(rng), dist(rng)};
  return v;
}

void check_complex(const std::vector<cpx>& got, const std::vector<cpx>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    CHECK(std::abs(got[i] - want[i]) <= tol * (1 + std::abs(want[i])));
  }
}

}  // namespace

TEST_CASE("fft_c2c of [1, 2, 3, 4] is [10, -2+2i, -2, -2-2i], and its inverse gives the input back") {
  for (const auto& dev : fft_devices()) {
    INFO("device " << dev.str());
    Tensor x = Tensor::from_vector(std::vector<cpx>{1, 2, 3, 4}, {4}, dev);
    Tensor y = oar::fft_c2c(x, {0});
    check_complex(y.to_vector<cpx>(), {10, {-2, 2}, -2, {-2, -2}}, 1e-12);
    check_complex(oar::fft_c2c(y, {-1}, "backward", false).to_vector<cpx>(), {1, 2, 3, 4}, 1e-12);
    // ortho: |y| scaled by 1/sqrt(4).
    check_complex(oar::fft_c2c(x, {0}, "ortho").to_vector<cpx>(), {5, {-1, 1}, -1, {-1, -1}}, 1e-12);
  }
}

TEST_CASE("fft_r2c keeps n/2 + 1 bins and fft_c2r inverts it, for odd and even n") {
  for (const auto& dev : fft_devices()) {
    INFO("device " << dev.str());
    // Against the DFT sum written out here.
    for (int64_t n : {5, 6}) {
      std::vector<double> xs(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j) xs[j] = std::cos(0.7 * j) + 0.1 * j;
      Tensor x = Tensor::from_vector(xs, {n}, dev);
      Tensor y = oar::fft_r2c(x, {0});
      REQUIRE(y.shape() == Shape{n / 2 + 1});
      std::vector<cpx> want;
      for (int64_t k = 0; k <= n / 2; ++k) {
        cpx acc = 0;
        for (int64_t j = 0; j < n; ++j) acc += xs[j] * std::polar(1.0, -2 * M_PI * j * k / n);
        want.push_back(acc);
      }
      check_complex(y.to_vector<cpx>(), want, 1e-12);
      oar_test::check_close(oar::fft_c2r(y, {0}, "backward", n), xs, 1e-12, 1e-12);
    }
  }
}

TEST_CASE("the cpu (FFTW) and the mock (reference DFT) agree on strided, batched, multi-axis problems") {
  if (!has_fftw()) return;
  std::vector<cpx> data = random_complex(3 * 10 * 7, 7);
  for (const auto& [axes, norm] : std::vector<std::pair<std::vector<int64_t>, std::string>>{
           {{1}, "backward"}, {{0, 2}, "ortho"}, {{2, 0, 1}, "forward"}, {{-1}, "backward"}}) {
    INFO("axes " << axes.size() << " norm " << norm);
    Tensor on_cpu = oar::transpose(Tensor::from_vector(data, {3, 10, 7}, {"cpu", 0}), {2, 0, 1});  // strided
    Tensor on_mock = oar::transpose(Tensor::from_vector(data, {3, 10, 7}, {"mock", 0}), {2, 0, 1});
    for (bool forward : {true, false})
      check_complex(oar::fft_c2c(on_cpu, axes, norm, forward).to_vector<cpx>(),
                    oar::fft_c2c(on_mock, axes, norm, forward).to_vector<cpx>(), 1e-12);
    Tensor real_cpu = oar::cast(on_cpu, DType::f64), real_mock = oar::cast(on_mock, DType::f64);
    Tensor half_cpu = oar::fft_r2c(real_cpu, axes, norm), half_mock = oar::fft_r2c(real_mock, axes, norm);
    check_complex(half_cpu.to_vector<cpx>(), half_mock.to_vector<cpx>(), 1e-12);
    int64_t n = real_cpu.shape()[static_cast<size_t>((axes.back() + 3) % 3)];
    oar_test::check_close(oar::fft_c2r(half_cpu, axes, norm, n), oar_test::values(oar::fft_c2r(half_mock, axes, norm, n)),
                          1e-12, 1e-12);
    // Not onesided: all n bins, the upper ones conjugate-symmetric.
    check_complex(oar::fft_r2c(real_cpu, axes, norm, false).to_vector<cpx>(),
                  oar::fft_r2c(real_mock, axes, norm, false).to_vector<cpx>(), 1e-12);
  }
}

TEST_CASE("FFTW plans made from four threads at once give the reference results") {
  if (!has_fftw()) return;
  // Each thread transforms its own lengths (new plans) and shared ones (the
  // same cache entries), in c64 and c128, against the mock computed first.
  std::vector<std::vector<int64_t>> lengths = {{17, 64, 9}, {18, 64, 25}, {19, 64, 36}, {20, 64, 49}};
  std::vector<std::vector<std::vector<cpx>>> inputs(4), expected(4);
  for (int t = 0; t < 4; ++t)
    for (int64_t n : lengths[t]) {
      inputs[t].push_back(random_complex(static_cast<size_t>(3 * n), 100 + t * 7 + static_cast<unsigned>(n)));
      expected[t].push_back(oar::fft_c2c(Tensor::from_vector(inputs[t].back(), {3, n}, {"mock", 0}), {1})
                                .to_vector<cpx>());
    }
  std::vector<std::string> failures(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      try {
        for (int round = 0; round < 5; ++round)
          for (size_t i = 0; i < lengths[t].size(); ++i) {
            int64_t n = lengths[t][i];
            DType dt = round % 2 ? DType::c64 : DType::c128;
            Tensor x = oar::cast(Tensor::from_vector(inputs[t][i], {3, n}, {"cpu", 0}), dt);
            auto got = oar::cast(oar::fft_c2c(x, {1}), DType::c128).to_vector<cpx>();
            double tol = dt == DType::c64 ? 1e-4 : 1e-11;
            for (size_t j = 0; j < got.size(); ++j)
              if (std::abs(got[j] - expected[t][i][j]) > tol * (1 + std::abs(expected[t][i][j])))
                throw std::runtime_error("n=" + std::to_string(n) + " element " + std::to_string(j) + " differs");
          }
      } catch (const std::exception& e) {
        failures[t] = e.what();
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) {
    INFO("thread " << t);
    CHECK(failures[t] == "");
  }
}

TEST_CASE("fft meta rules reject what they cannot transform, naming the op") {
  oar::Device mock{"mock", 0};
  Tensor z = Tensor::from_vector(std::vector<cpx>{1, 2, 3}, {3}, mock);
  CHECK(oar_test::error_of([&] { oar::fft_c2c(z, {0}, "sideways"); }).find("fft_c2c: normalization is 'sideways'") !=
        std::string::npos);
  CHECK(oar_test::error_of([&] { oar::fft_c2c(z, {0, 0}); }).find("appears twice") != std::string::npos);
  // c2r needs last_dim_size / 2 + 1 bins: 3 bins give n = 4 or 5, not 7.
  CHECK(oar_test::error_of([&] { oar::fft_c2r(z, {0}, "backward", 7); }).find("must hold last_dim_size / 2 + 1 = 4 bins but holds 3") !=
        std::string::npos);
  Tensor empty = Tensor::from_vector(std::vector<cpx>{}, {0}, mock);
  CHECK(oar_test::error_of([&] { oar::fft_c2c(empty, {0}); }).find("has no points") != std::string::npos);
}
