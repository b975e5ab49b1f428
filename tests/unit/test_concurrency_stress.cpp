// Eager ops from several host threads at once (issue 19, item 6): each
// thread runs matmul + tanh + sum + backward on its own tensors, with the
// shapes shared so the threads share cached oneDNN primitives, and checks
// every iteration against a host computation in double. The CPU plugin was
// wrong about once in 1300 iterations before its primitives got their own
// scratchpads (Note [Scratchpads] in plugins/cpu/onednn_util.h).
// OAR_STRESS_ITERATIONS overrides the iterations per thread on cpu (the mock
// runs a 30th of them).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "oar/ir/executor.h"
#include "oar/ir/trace.h"
#include "test_util.h"

using oar::Shape;
using oar::Tensor;

namespace {

constexpr int kThreads = 4;

int iterations(int fallback) {
  const char* v = std::getenv("OAR_STRESS_ITERATIONS");
  return v != nullptr && std::atoi(v) > 0 ? std::atoi(v) : fallback;
}

/// One thread's problem: loss = sum(tanh(a @ b)), with the host's loss and
/// gradients (dloss/da = (1 - y^2) @ b^T, dloss/db = a^T @ (1 - y^2)).
struct Problem {
  int m, k, n;
  std::vector<float> a, b;
  double loss = 0;
  std::vector<double> grad_a, grad_b;

  Problem(int m_, int k_, int n_, unsigned seed) : m(m_), k(k_), n(n_) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-0.5f, 0.5f);
    a.resize(static_cast<size_t>(m * k));
    b.resize(static_cast<size_t>(k * n));
    for (float& v : a) v = dist(rng);
    for (float& v : b) v = dist(rng);
    std::vector<double> dy(static_cast<size_t>(m * n));
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < n; ++j) {
        double acc = 0;
        for (int p = 0; p < k; ++p) acc += double(a[i * k + p]) * b[p * n + j];
        const double y = std::tanh(acc);
        loss += y;
        dy[i * n + j] = 1 - y * y;
      }
    }
    grad_a.assign(static_cast<size_t>(m * k), 0.0);
    grad_b.assign(static_cast<size_t>(k * n), 0.0);
    for (int i = 0; i < m; ++i) {
      for (int p = 0; p < k; ++p) {
        for (int j = 0; j < n; ++j) {
          grad_a[i * k + p] += dy[i * n + j] * b[p * n + j];
          grad_b[p * n + j] += a[i * k + p] * dy[i * n + j];
        }
      }
    }
  }
};

/// Largest |got - want| / (1 + |want|) over the elements.
double max_error(const std::vector<float>& got, const std::vector<double>& want) {
  double worst = got.size() == want.size() ? 0.0 : INFINITY;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    const double e = std::abs(double(got[i]) - want[i]) / (1 + std::abs(want[i]));
    worst = std::isnan(e) ? INFINITY : std::max(worst, e);
  }
  return worst;
}

/// Runs `iters` iterations on each of kThreads threads; returns the number
/// of wrong iterations and describes the first in `first`.
int run_stress(const oar::Device& device, int iters, std::string* first) {
  // Shapes mix a square problem and thin ones (whose oneDNN kernels pack
  // or reduce through scratchpad buffers); thread t and t + 2 share shapes.
  const int shapes[][3] = {{64, 64, 64}, {8, 256, 16}};
  std::vector<Problem> problems;
  for (int t = 0; t < kThreads; ++t) {
    const int* s = shapes[t % 2];
    problems.emplace_back(s[0], s[1], s[2], 1234u + static_cast<unsigned>(t));
  }
  std::atomic<int> wrong{0};
  std::mutex first_mutex;
  auto body = [&](int t) {
    const Problem& p = problems[static_cast<size_t>(t)];
    for (int it = 0; it < iters; ++it) {
      try {
        Tensor a = Tensor::from_vector(p.a, Shape{p.m, p.k}, device).set_requires_grad();
        Tensor b = Tensor::from_vector(p.b, Shape{p.k, p.n}, device).set_requires_grad();
        Tensor loss = oar::sum(oar::tanh(oar::matmul(a, b)));
        loss.backward();
        const double loss_error = max_error(loss.to_vector<float>(), {p.loss});
        const double ga_error = max_error(a.grad().to_vector<float>(), p.grad_a);
        const double gb_error = max_error(b.grad().to_vector<float>(), p.grad_b);
        const double worst = std::max({loss_error, ga_error, gb_error});
        if (worst > 1e-4) {
          if (wrong.fetch_add(1) == 0) {
            std::lock_guard<std::mutex> lock(first_mutex);
            *first = "thread " + std::to_string(t) + " iteration " + std::to_string(it) +
                     ": relative errors loss " + std::to_string(loss_error) + ", grad a " +
                     std::to_string(ga_error) + ", grad b " + std::to_string(gb_error);
          }
        }
      } catch (const std::exception& e) {
        if (wrong.fetch_add(1) == 0) {
          std::lock_guard<std::mutex> lock(first_mutex);
          *first = "thread " + std::to_string(t) + " threw: " + e.what();
        }
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(body, t);
  for (auto& th : threads) th.join();
  return wrong.load();
}

}  // namespace

TEST_CASE("4 threads of eager matmul + tanh + sum + backward agree with the host, every time") {
  for (const auto& device : oar_test::test_devices()) {
    CAPTURE(device.str());
    // The mock's loops are ~30x slower; it was never wrong (no shared caches).
    const int cpu_iters = iterations(3000);
    const int iters = device.type == "cpu" ? cpu_iters : std::max(cpu_iters / 30, 10);
    std::string first;
    const int wrong = run_stress(device, iters, &first);
    INFO("first wrong iteration: " << first);
    CHECK(wrong == 0);
  }
}

// Issue 19, item 5: one executor called from 4 threads at once. Calls are
// serialized (Note [Concurrent calls] in executor.h); batch sizes differ
// per thread, so a call may re-plan the arena another thread just used.
TEST_CASE("one executor called from 4 threads gives each call its own answer") {
  namespace ir = oar::ir;
  for (const auto& device : oar_test::test_devices()) {
    CAPTURE(device.str());
    Tensor w = Tensor::from_vector(std::vector<float>{0.5f, -1, 2, 0.25f, 1, -0.5f}, {3, 2}, device);
    auto fn = [&](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{oar::tanh(oar::matmul(in[0], w)) + 1.0};
    };
    ir::Trace t = ir::trace(fn, {{{-1, 3}, oar::DType::f32, "x"}}, {{"w", w}}, device);
    ir::Executor executor(t.program, device);
    executor.set_parameters(t.parameters);
    // Inputs of 1, 2, 3, 4 rows with the host's answers.
    std::vector<Tensor> inputs;
    std::vector<std::vector<double>> want;
    const std::vector<float> wv{0.5f, -1, 2, 0.25f, 1, -0.5f};
    for (int rows = 1; rows <= 4; ++rows) {
      std::vector<float> x(static_cast<size_t>(rows * 3));
      for (size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * static_cast<float>(i) - 0.3f * static_cast<float>(rows);
      inputs.push_back(Tensor::from_vector(x, Shape{rows, 3}, device));
      std::vector<double> y;
      for (int r = 0; r < rows; ++r) {
        for (int c = 0; c < 2; ++c) {
          double acc = 0;
          for (int k = 0; k < 3; ++k) acc += double(x[r * 3 + k]) * wv[k * 2 + c];
          y.push_back(std::tanh(acc) + 1.0);
        }
      }
      want.push_back(y);
    }
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    const int calls = device.type == "cpu" ? 200 : 20;
    for (int th = 0; th < kThreads; ++th) {
      threads.emplace_back([&, th] {
        for (int i = 0; i < calls; ++i) {
          const size_t k = static_cast<size_t>((th + i) % 4);
          try {
            std::vector<Tensor> out = executor.run(std::vector<Tensor>{inputs[k]});
            if (max_error(out[0].to_vector<float>(), want[k]) > 1e-5) wrong.fetch_add(1);
          } catch (const std::exception&) {
            wrong.fetch_add(1);
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    CHECK(wrong.load() == 0);
  }
}
