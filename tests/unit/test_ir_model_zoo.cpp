// The model zoo of static mode: an MLP, a small CNN, a transformer block
// with causal attention and the PINN of the autodiff issue. For each, on
// cpu and mock: static outputs and gradients (traced, optimized, program
// autodiff, executor) equal eager ones; save -> `oar-run` gives the same
// outputs; the MLP's printed program equals tests/data/ir/mlp.expected.txt.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "oar/ir/autodiff.h"
#include "oar/ir/executor.h"
#include "oar/ir/pass.h"
#include "oar/ir/printer.h"
#include "oar/ir/safetensors.h"
#include "oar/ir/serialize.h"
#include "oar/ir/trace.h"
#include "test_util.h"

using namespace oar;
using oar_test::check_close;
using oar_test::values;

namespace {

namespace fs = std::filesystem;

Tensor init(const Shape& shape, double scale, uint64_t seed, const Device& d) {
  return uniform(shape, -scale, scale, DType::f32, d, seed);
}

struct Model {
  std::string name;
  ir::ParamMap params;
  std::vector<ir::InputSpec> specs;
  std::vector<Tensor> inputs;  // example inputs (the last ones may be targets)
  size_t num_forward_inputs = 1;
  // forward(inputs, params) -> outputs; loss(inputs, params) -> scalar.
  std::function<std::vector<Tensor>(const std::vector<Tensor>&, const ir::ParamMap&)> forward;
  std::function<Tensor(const std::vector<Tensor>&, const ir::ParamMap&)> loss;
  double tol = 1e-5;
};

Model mlp(const Device& d) {
  Model m{.name = "mlp"};
  m.params = {{"fc1.weight", init({8, 16}, 0.3, 1, d)}, {"fc1.bias", init({16}, 0.1, 2, d)},
              {"fc2.weight", init({16, 4}, 0.3, 3, d)}, {"fc2.bias", init({4}, 0.1, 4, d)}};
  m.specs = {{{-1, 8}, DType::f32, "x"}, {{-1, 4}, DType::f32, "target"}};
  m.inputs = {init({6, 8}, 1.0, 5, d), init({6, 4}, 1.0, 6, d)};
  m.forward = [](const std::vector<Tensor>& in, const ir::ParamMap& p) {
    Tensor h = relu(linear(in[0], p.at("fc1.weight"), p.at("fc1.bias")));
    return std::vector<Tensor>{linear(h, p.at("fc2.weight"), p.at("fc2.bias"))};
  };
  m.loss = [f = m.forward](const std::vector<Tensor>& in, const ir::ParamMap& p) {
    return mse_loss(f(in, p)[0], in[1]);
  };
  return m;
}

Model cnn(const Device& d) {
  Model m{.name = "cnn"};
  m.params = {{"conv.weight", init({4, 1, 3, 3}, 0.4, 11, d)}, {"conv.bias", init({4}, 0.1, 12, d)},
              {"fc.weight", init({64, 10}, 0.2, 13, d)}, {"fc.bias", init({10}, 0.1, 14, d)}};
  m.specs = {{{-1, 1, 8, 8}, DType::f32, "image"}, {{-1}, DType::i64, "label"}};
  std::vector<int64_t> labels{3, 7, 1};
  m.inputs = {init({3, 1, 8, 8}, 1.0, 15, d), Tensor::from_vector(labels, {3}, d)};
  m.forward = [](const std::vector<Tensor>& in, const ir::ParamMap& p) {
    Tensor h = relu(conv2d(in[0], p.at("conv.weight"), p.at("conv.bias"), {1}, {1}));
    h = flatten(max_pool2d(h, {2}), 1);
    return std::vector<Tensor>{linear(h, p.at("fc.weight"), p.at("fc.bias"))};
  };
  m.loss = [f = m.forward](const std::vector<Tensor>& in, const ir::ParamMap& p) {
    return cross_entropy(f(in, p)[0], in[1]);
  };
  return m;
}

Model transformer(const Device& d) {
  const int64_t D = 16, H = 2, T = 5;
  Model m{.name = "transformer"};
  m.params = {{"ln.weight", init({D}, 0.2, 21, d) + 1.0}, {"ln.bias", init({D}, 0.1, 22, d)},
              {"wq", init({D, D}, 0.3, 23, d)},           {"wk", init({D, D}, 0.3, 24, d)},
              {"wv", init({D, D}, 0.3, 25, d)},           {"wo", init({D, D}, 0.3, 26, d)},
              {"rms.weight", init({D}, 0.2, 27, d) + 1.0}, {"w1", init({D, 4 * D}, 0.3, 28, d)},
              {"w2", init({4 * D, D}, 0.2, 29, d)}};
  m.specs = {{{-1, T, D}, DType::f32, "x"}};
  m.inputs = {init({2, T, D}, 1.0, 30, d)};
  m.forward = [=](const std::vector<Tensor>& in, const ir::ParamMap& p) {
    const Tensor& x = in[0];
    Tensor h = layer_norm(x, p.at("ln.weight"), p.at("ln.bias"));
    // reshape with 0 keeps a dim (Paddle), so the batch stays dynamic.
    auto heads = [&](const Tensor& t) { return reshape(t, {0, 0, H, D / H}); };
    Tensor q = heads(matmul(h, p.at("wq"))), k = heads(matmul(h, p.at("wk"))), v = heads(matmul(h, p.at("wv")));
    Tensor a = reshape(scaled_dot_product_attention(q, k, v, /*is_causal=*/true), {0, 0, D});
    Tensor x1 = x + matmul(a, p.at("wo"));
    Tensor f = matmul(gelu(matmul(rms_norm(x1, p.at("rms.weight")), p.at("w1"))), p.at("w2"));
    return std::vector<Tensor>{x1 + f};
  };
  m.loss = [f = m.forward](const std::vector<Tensor>& in, const ir::ParamMap& p) {
    return mean(f(in, p)[0] * f(in, p)[0]);
  };
  m.tol = 2e-5;
  return m;
}

// The PINN of the autodiff issue: u(x, y) an MLP (tanh); the loss holds the
// Laplacian from grad-of-grad inside the traced function.
Model pinn(const Device& d) {
  const int64_t W = 16;
  Model m{.name = "pinn"};
  m.params = {{"l0.weight", init({2, W}, 0.8, 41, d)}, {"l0.bias", init({W}, 0.1, 42, d)},
              {"l1.weight", init({W, W}, 0.4, 43, d)}, {"l1.bias", init({W}, 0.1, 44, d)},
              {"l2.weight", init({W, 1}, 0.4, 45, d)}, {"l2.bias", init({1}, 0.1, 46, d)}};
  m.specs = {{{-1, 2}, DType::f32, "points"}};
  m.inputs = {uniform({12, 2}, 0.0, 1.0, DType::f32, d, 47)};
  auto u_of = [](const Tensor& xy, const ir::ParamMap& p) {
    Tensor h = tanh(linear(xy, p.at("l0.weight"), p.at("l0.bias")));
    h = tanh(linear(h, p.at("l1.weight"), p.at("l1.bias")));
    return linear(h, p.at("l2.weight"), p.at("l2.bias"));
  };
  m.forward = [=](const std::vector<Tensor>& in, const ir::ParamMap& p) {
    Tensor xy = in[0].detach().set_requires_grad(true);
    Tensor u = u_of(xy, p);
    Tensor du = grad({sum(u)}, {xy}, {}, /*create_graph=*/true)[0];
    Tensor dx = slice(du, {1}, {0}, {1}), dy = slice(du, {1}, {1}, {2});
    Tensor uxx = slice(grad({sum(dx)}, {xy}, {}, true)[0], {1}, {0}, {1});
    Tensor uyy = slice(grad({sum(dy)}, {xy}, {}, true)[0], {1}, {1}, {2});
    const double pi = 3.14159265358979;
    Tensor x = slice(in[0], {1}, {0}, {1}), y = slice(in[0], {1}, {1}, {2});
    Tensor f = sin(x * pi) * sin(y * pi) * (2 * pi * pi);
    Tensor residual = uxx + uyy + f;
    return std::vector<Tensor>{u, residual};
  };
  m.loss = [f = m.forward](const std::vector<Tensor>& in, const ir::ParamMap& p) {
    std::vector<Tensor> out = f(in, p);
    return mean(out[1] * out[1]) + mean(out[0] * out[0]);  // residual + a boundary-style term
  };
  m.tol = 1e-4;
  return m;
}

std::vector<Tensor> forward_inputs(const Model& m) {
  return {m.inputs.begin(), m.inputs.begin() + static_cast<std::ptrdiff_t>(m.num_forward_inputs)};
}

std::vector<ir::InputSpec> forward_specs(const Model& m) {
  return {m.specs.begin(), m.specs.begin() + static_cast<std::ptrdiff_t>(m.num_forward_inputs)};
}

std::string read_file(const fs::path& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void check_model(const Model& m, const Device& d) {
  INFO(m.name << " on " << d.str());
  // Forward: static equals eager.
  auto fwd = [&](const std::vector<Tensor>& in) { return m.forward(in, m.params); };
  std::vector<Tensor> in = forward_inputs(m);
  std::vector<Shape> in_shapes;
  for (const Tensor& x : in) in_shapes.push_back(x.shape());
  ir::Trace t = ir::trace(fwd, forward_specs(m), m.params, d, in_shapes);
  ir::default_pipeline(d).run(t.program);
  ir::Executor exec(t.program, d);
  exec.set_parameters(m.params);
  std::vector<Tensor> eager = m.forward(in, m.params);
  std::vector<Tensor> got = exec.run(in);
  REQUIRE(got.size() == eager.size());
  for (size_t i = 0; i < got.size(); ++i) check_close(got[i], values(eager[i]), m.tol, m.tol);

  // Gradients of the loss with respect to every parameter.
  auto loss_fn = [&](const std::vector<Tensor>& inputs) { return std::vector<Tensor>{m.loss(inputs, m.params)}; };
  std::vector<Shape> shapes;
  for (const Tensor& x : m.inputs) shapes.push_back(x.shape());
  ir::Trace lt = ir::trace(loss_fn, m.specs, m.params, d, shapes);
  std::vector<ir::Value*> params;
  for (ir::Value* p : lt.program.parameters()) params.push_back(p);
  std::vector<ir::Value*> g = ir::append_backward(lt.program, {lt.program.outputs()[0].value}, params, {},
                                                  {.input_shapes = shapes});
  for (size_t i = 0; i < g.size(); ++i) lt.program.add_output(g[i], "grad:" + params[i]->name());
  ir::default_pipeline(d).run(lt.program);
  ir::Executor grad_exec(lt.program, d);
  grad_exec.set_parameters(m.params);
  std::vector<Tensor> static_grads = grad_exec.run(m.inputs);
  ir::ParamMap leaves;
  std::vector<Tensor> wrt;
  for (ir::Value* p : params) {
    leaves[p->name()] = m.params.at(p->name()).detach().set_requires_grad(true);
    wrt.push_back(leaves[p->name()]);
  }
  Tensor loss = m.loss(m.inputs, leaves);
  std::vector<Tensor> eager_grads = grad({loss}, wrt);
  check_close(static_grads[0], {loss.item()}, m.tol, m.tol);
  for (size_t i = 0; i < wrt.size(); ++i) {
    INFO("gradient of " << params[i]->name());
    check_close(static_grads[1 + i], values(eager_grads[i]), m.tol, m.tol);
  }

  // Training through to_static: the forward runs as a program, the loss and
  // backward() eagerly; gradients reach the parameters as in eager mode.
  {
    ir::StaticOptions opts;
    for (const auto& [name, t] : leaves) opts.parameters[name] = t;
    std::vector<ir::InputSpec> specs = forward_specs(m);
    ir::StaticFunction sf = ir::to_static([&](const std::vector<Tensor>& xs) { return m.forward(xs, leaves); },
                                          specs, opts);
    // The model's loss on the static outputs: m.loss with a forward that
    // calls the static function.
    Model through = m;
    through.forward = [&](const std::vector<Tensor>& xs, const ir::ParamMap&) {
      return sf({xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(m.num_forward_inputs)});
    };
    Tensor static_loss_value = through.loss(m.inputs, leaves);
    std::vector<Tensor> g = grad({static_loss_value}, wrt);
    check_close(static_loss_value, {loss.item()}, m.tol, m.tol);
    for (size_t i = 0; i < wrt.size(); ++i) {
      INFO("to_static gradient of " << params[i]->name());
      check_close(g[i], values(eager_grads[i]), m.tol, m.tol);
    }
  }

  // Deploy: save, then oar-run in a separate process gives the same outputs.
  fs::path dir = fs::temp_directory_path() / ("oar_zoo_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string base = (dir / m.name).string();
  ir::save(t.program, m.params, base);
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < in.size(); ++i) feeds[t.program.inputs()[i]->name()] = in[i];
  ir::save_safetensors(base + ".inputs.safetensors", feeds);
  const char* bin = std::getenv("OAR_BIN_DIR");
  REQUIRE(bin != nullptr);
  std::string out = oar_test::run_command(std::string(bin) + "/oar-run " + base + " --device " + d.str() +
                                          " --inputs " + base + ".inputs.safetensors --output " + base +
                                          ".outputs.safetensors");
  INFO(out);
  auto outputs = ir::load_safetensors(base + ".outputs.safetensors", d);
  for (size_t i = 0; i < eager.size(); ++i) {
    const std::string& name = t.program.outputs()[i].name;
    REQUIRE(outputs.count(name) == 1);
    check_close(outputs.at(name), values(eager[i]), m.tol, m.tol);
  }
  fs::remove_all(dir);
}

}  // namespace

TEST_CASE("model zoo: static equals eager, and oar-run reproduces the outputs") {
  for (const Device& d : oar_test::test_devices()) {
    for (auto make : {mlp, cnn, transformer, pinn}) check_model(make(d), d);
  }
}

TEST_CASE("model zoo: the MLP program prints as the checked-in expected file") {
  Device d{"cpu", 0};
  Model m = mlp(d);
  auto fwd = [&](const std::vector<Tensor>& in) { return m.forward(in, m.params); };
  ir::Trace t = ir::trace(fwd, forward_specs(m), m.params, d, {});
  ir::default_pipeline(d).run(t.program);
  fs::path expected = fs::path(OAR_TEST_DATA_DIR) / "ir" / "mlp.expected.txt";
  std::string got = ir::to_string(t.program);
  if (const char* update = std::getenv("OAR_UPDATE_EXPECTED"); update && std::string(update) == "1") {
    std::ofstream(expected) << got;
  }
  INFO("expected file: " << expected.string() << " (OAR_UPDATE_EXPECTED=1 rewrites it)");
  CHECK(got == read_file(expected));
}
