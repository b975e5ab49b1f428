// to_static: a C++ callable compiled to static mode. Results equal eager
// mode; shapes the traced specs accept reuse the trace (dynamic dims), other
// shapes re-trace, logged at debug level; the cache of traces is bounded.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "oar/ir/printer.h"
#include "oar/ir/trace.h"
#include "gradcheck.h"

using namespace oar;
using oar_test::check_close;
using oar_test::error_of;
using oar_test::values;

namespace {

// The log threshold is read once: set it before anything logs.
const bool g_debug_log = [] { return setenv("OAR_LOG_LEVEL", "debug", 1) == 0; }();

// Captures what the process writes to stderr while `fn` runs.
template <typename F>
std::string capture_stderr(F&& fn) {
  std::fflush(stderr);
  char path[] = "/tmp/oar_stderr_XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  int saved = dup(2);
  dup2(fd, 2);
  fn();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(fd);
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::remove(path);
  return ss.str();
}

Tensor filled(const Shape& shape, double scale, const Device& d) {
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(scale * (static_cast<double>(i % 5) - 2.0));
  return Tensor::from_vector(v, shape, d);
}

}  // namespace

TEST_CASE("to_static equals eager, reuses the trace for dynamic dims and re-traces other shapes") {
  REQUIRE(g_debug_log);
  for (const Device& d : oar_test::test_devices()) {
    INFO(d.str());
    Tensor w = filled({4, 3}, 0.2, d), b = filled({3}, 0.1, d);
    auto f = [&](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{softmax(matmul(in[0], w) + b), sum(in[0], {1})};
    };
    ir::StaticFunction sf = ir::to_static(f, {{{-1, 4}, DType::f32, "x"}}, {.parameters = {{"w", w}, {"b", b}}});
    CHECK(error_of([&] { sf.program(); }).find("has not been called yet") != std::string::npos);
    for (int64_t batch : {2, 5, 1}) {
      Tensor x = filled({batch, 4}, 0.3, d);
      std::vector<Tensor> got = sf({x});
      std::vector<Tensor> want = f({x});
      check_close(got[0], values(want[0]));
      check_close(got[1], values(want[1]));
    }
    CHECK(sf.trace_count() == 1);
    CHECK(ir::to_string(sf.program()).find("input %x: f32[-1, 4]") != std::string::npos);

    // A shape the spec rejects (4 -> 6 features) re-traces for that shape.
    auto g = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{sum(in[0] * 2.0, {1})}; };
    ir::StaticFunction sg = ir::to_static(g, {{{-1, 4}, DType::f32, "x"}}, {.max_traces = 2});
    sg({filled({3, 4}, 1.0, d)});
    std::string log = capture_stderr([&] { check_close(sg({filled({3, 6}, 1.0, d)})[0], values(g({filled({3, 6}, 1.0, d)})[0])); });
    CHECK(sg.trace_count() == 2);
    CHECK(log.find("re-tracing for inputs (f32[3, 6])") != std::string::npos);
    // Bounded: a third shape evicts the least recently used trace.
    sg({filled({2, 7}, 1.0, d)});
    CHECK(sg.trace_count() == 3);
    CHECK(sg.cached_traces() == 2);
    sg({filled({2, 7}, 1.0, d)});  // cached
    CHECK(sg.trace_count() == 3);
    sg({filled({5, 4}, 1.0, d)});  // evicted earlier: traced again
    CHECK(sg.trace_count() == 4);
  }
}

TEST_CASE("to_static: parameters can be replaced between calls; wrong inputs are clear errors") {
  Device d{"cpu", 0};
  Tensor w = Tensor::from_vector<float>({1, 2}, {2}, d);
  auto f = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * w}; };
  ir::StaticFunction sf = ir::to_static(f, {{{2}, DType::f32, "x"}}, {.parameters = {{"w", w}}});
  Tensor x = Tensor::from_vector<float>({3, 4}, {2}, d);
  check_close(sf({x})[0], {3, 8});
  sf.set_parameter("w", Tensor::from_vector<float>({10, 20}, {2}, d));
  check_close(sf({x})[0], {30, 80});
  CHECK(sf.trace_count() == 1);
  CHECK(error_of([&] { sf.set_parameter("v", x); }).find("no parameter is named 'v'") != std::string::npos);
  CHECK(error_of([&] { sf.set_parameter("w", Tensor::from_vector<float>({1, 2, 3}, {3}, d)); })
            .find("parameter 'w' is f32[2] but the new tensor is f32[3]") != std::string::npos);
  CHECK(error_of([&] { sf({x, x}); }).find("takes 1 inputs but got 2") != std::string::npos);
}

TEST_CASE("to_static trains: outputs are differentiable through the program's appended backward") {
  for (const Device& d : oar_test::test_devices()) {
    INFO(d.str());
    Tensor w = oar_test::random_f64({3, 2}, d).set_requires_grad(true);
    Tensor b = oar_test::random_f64({2}, d).set_requires_grad(true);
    auto f = [&](const std::vector<Tensor>& in) {
      Tensor h = tanh(matmul(in[0], w) + b);
      return std::vector<Tensor>{h, argmax(h, 1)};
    };
    ir::StaticFunction sf = ir::to_static(f, {{{-1, 3}, DType::f64, "x"}}, {.parameters = {{"w", w}, {"b", b}}});
    Tensor x = oar_test::random_f64({4, 3}, d).set_requires_grad(true);
    Tensor v = oar_test::random_f64({4, 2}, d);
    std::vector<Tensor> out = sf({x});
    CHECK(out[0].requires_grad());
    CHECK(out[0].grad_fn_name() == "to_static");
    CHECK_FALSE(out[1].requires_grad());  // integers carry no gradient
    std::vector<Tensor> g = grad({sum(out[0] * v)}, {x, w, b});
    std::vector<Tensor> want = grad({sum(f({x})[0] * v)}, {x, w, b});
    for (size_t i = 0; i < 3; ++i) check_close(g[i], values(want[i]), 1e-12, 1e-12);
    // Higher derivatives through a static program are refused, not wrong.
    Tensor y = sum(sf({x})[0] * v);
    CHECK(error_of([&] { grad({y}, {x}, {}, /*create_graph=*/true); }).find("gradients of gradients") !=
          std::string::npos);
  }
}

TEST_CASE("to_static: an eager SGD loop over a static forward follows the eager loop") {
  Device d{"cpu", 0};
  Tensor w0 = oar_test::random_f64({3, 1}, d), x = oar_test::random_f64({8, 3}, d), t = oar_test::random_f64({8, 1}, d);
  Tensor w_static = w0.detach().set_requires_grad(true), w_eager = w0.detach().set_requires_grad(true);
  auto model = [](const Tensor& xx, const Tensor& w) { return sigmoid(matmul(xx, w)); };
  ir::StaticFunction sf = ir::to_static([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{model(in[0], w_static)}; },
                                        {{{8, 3}, DType::f64, "x"}}, {.parameters = {{"w", w_static}}});
  for (int step = 0; step < 4; ++step) {
    Tensor ls = mse_loss(sf({x})[0], t);
    ls.backward();
    Tensor le = mse_loss(model(x, w_eager), t);
    le.backward();
    check_close(ls, {le.item()}, 1e-12, 1e-12);
    check_close(w_static.grad(), values(w_eager.grad()), 1e-12, 1e-12);
    NoGrad ng;
    Tensor ns = (w_static - w_static.grad() * 0.5).detach().set_requires_grad(true);
    Tensor ne = (w_eager - w_eager.grad() * 0.5).detach().set_requires_grad(true);
    w_static = ns;
    w_eager = ne;
    sf.set_parameter("w", w_static);  // the function reads its parameters from here
  }
  CHECK(sf.trace_count() == 1);
}

TEST_CASE("random ops draw new numbers on every run, reproducibly under oar::seed") {
  for (const Device& d : oar_test::test_devices()) {
    INFO(d.str());
    auto f = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + uniform({4}, 0.0, 1.0, DType::f64)}; };
    Tensor x = zeros({4}, DType::f64, d);
    ir::Trace t = ir::trace(f, {{{4}, DType::f64, "x"}}, {}, d);
    ir::Executor ex(t.program, d);
    oar::seed(7);
    std::vector<double> a = values(ex.run(std::vector<Tensor>{x})[0]), b = values(ex.run(std::vector<Tensor>{x})[0]);
    CHECK(a != b);
    oar::seed(7);
    CHECK(values(ex.run(std::vector<Tensor>{x})[0]) == a);
    std::vector<Tensor> feed{x};
    CHECK(values(ex.run(feed, {3, 9})[0]) == values(ex.run(feed, {3, 9})[0]));

    // Training through dropout: the backward recomputes the forward with the
    // same mask, so d(sum(y * v))/dw = v * y / w elementwise.
    Tensor w = Tensor::from_vector<double>({0.5, -1.5, 2.0, 1.0, 3.0, -0.25}, {6}, d).set_requires_grad(true);
    ir::StaticFunction sf = ir::to_static(
        [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{dropout(in[0] * w, 0.5)}; },
        {{{6}, DType::f64, "x"}}, {.parameters = {{"w", w}}});
    Tensor xs = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {6}, d);
    Tensor v = Tensor::from_vector<double>({0.1, 0.2, 0.3, 0.4, 0.5, 0.6}, {6}, d);
    std::vector<double> masks_seen;
    for (int run = 0; run < 3; ++run) {
      Tensor y = sf({xs})[0];
      std::vector<double> yv = values(y), wv = values(w), vv = values(v);
      std::vector<double> want;
      for (size_t i = 0; i < yv.size(); ++i) want.push_back(vv[i] * yv[i] / wv[i]);
      check_close(grad({sum(y * v)}, {w})[0], want, 1e-12, 1e-12);
      for (double e : yv) masks_seen.push_back(e == 0.0);
    }
    // Three runs of six elements at p = 0.5 did not all share one mask.
    bool differ = false;
    for (size_t i = 0; i < 6; ++i) differ = differ || masks_seen[i] != masks_seen[6 + i] || masks_seen[i] != masks_seen[12 + i];
    CHECK(differ);
  }
}
