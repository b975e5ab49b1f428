// Complex ops on cpu and mock: values against std::complex, promotion of
// mixed real/complex operands, reductions, matmul, errors, and gradients
// (Note [Complex gradients]) against central finite differences in c128, to
// first and second order.
#include <complex>
#include <cstdint>
#include <functional>
#include <random>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <unistd.h>

#include "oar/ir/printer.h"
#include "oar/ir/program.h"
#include "oar/ir/safetensors.h"
#include "oar/ir/serialize.h"
#include "test_util.h"

using oar::DType;
using oar::Shape;
using oar::Tensor;
using oar_test::test_devices;
using c128 = std::complex<double>;
using c64 = std::complex<float>;

namespace {

std::vector<c128> z_values(const Tensor& t) { return oar::cast(t, DType::c128).to_vector<c128>(); }

void check_close_c(const std::vector<c128>& got, const std::vector<c128>& want, double tol = 1e-12) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    CHECK(std::abs(got[i] - want[i]) <= tol * (1 + std::abs(want[i])));
  }
}

Tensor c128_tensor(const std::vector<c128>& v, const Shape& s, const oar::Device& d) {
  return Tensor::from_vector(v, s, d);
}

const std::vector<c128> kZ = {{0.5, -1.25}, {-2, 0.75}, {1.5, 2}, {-0.25, -0.5}, {3, 0.1}, {-1, 1}};

// Central differences of the real loss L at z along the real and the
// imaginary axis of every element: the gradient dL/dx + i dL/dy.
std::vector<c128> numeric_grad(const std::function<double(const std::vector<c128>&)>& loss, std::vector<c128> z,
                               double h = 1e-6) {
  std::vector<c128> g(z.size());
  for (size_t k = 0; k < z.size(); ++k) {
    const c128 z0 = z[k];
    double parts[2];
    for (int p = 0; p < 2; ++p) {
      const c128 step = p == 0 ? c128(h, 0) : c128(0, h);
      z[k] = z0 + step;
      double up = loss(z);
      z[k] = z0 - step;
      double down = loss(z);
      parts[p] = (up - down) / (2 * h);
    }
    z[k] = z0;
    g[k] = {parts[0], parts[1]};
  }
  return g;
}

// A real loss from a complex-or-real output: sum(w1 * real(y) + w2 * imag(y)),
// fixed weights, so every part of y reaches the gradient.
Tensor weighted_loss(const Tensor& y) {
  const auto n = static_cast<size_t>(y.numel());
  std::vector<double> w1(n), w2(n);
  for (size_t i = 0; i < n; ++i) {
    w1[i] = 0.3 + 0.1 * static_cast<double>(i);
    w2[i] = -0.7 + 0.2 * static_cast<double>(i);
  }
  DType part = oar::real_dtype_for(y.dtype());
  Tensor a = oar::cast(Tensor::from_vector(w1, y.shape(), y.device()), part);
  Tensor loss = oar::sum(oar::real(y) * a);
  if (oar::is_complex(y.dtype())) {
    Tensor b = oar::cast(Tensor::from_vector(w2, y.shape(), y.device()), part);
    loss = loss + oar::sum(oar::imag(y) * b);
  }
  return loss;
}

struct UnaryGradCase {
  const char* name;
  std::function<Tensor(const Tensor&)> f;
};

}  // namespace

TEST_CASE("complex parts: complex, real, imag, conj, abs, angle, as_real, as_complex, polar") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor re = Tensor::from_vector<double>({1, -2, 0.5}, {3}, device);
    Tensor im = Tensor::from_vector<double>({3, 0, -4}, {3}, device);
    Tensor z = oar::complex(re, im);
    CHECK(z.dtype() == DType::c128);
    check_close_c(z_values(z), {{1, 3}, {-2, 0}, {0.5, -4}});
    CHECK(oar::complex(oar::cast(re, DType::f32), oar::cast(im, DType::f32)).dtype() == DType::c64);
    // Broadcast: a [3, 1] real part with a [2] imaginary part.
    Tensor zb = oar::complex(oar::reshape(re, {3, 1}), Tensor::from_vector<double>({10, 20}, {2}, device));
    CHECK(zb.shape() == Shape{3, 2});
    check_close_c(z_values(zb), {{1, 10}, {1, 20}, {-2, 10}, {-2, 20}, {0.5, 10}, {0.5, 20}});
    CHECK(oar::real(z).to_vector<double>() == std::vector<double>{1, -2, 0.5});
    CHECK(oar::imag(z).to_vector<double>() == std::vector<double>{3, 0, -4});
    check_close_c(z_values(oar::conj(z)), {{1, -3}, {-2, 0}, {0.5, 4}});
    Tensor r = oar::abs(z);
    CHECK(r.dtype() == DType::f64);
    oar_test::check_close(r.to_vector<double>(), {std::sqrt(10.0), 2, std::sqrt(16.25)}, 1e-12, 1e-12);
    oar_test::check_close(oar::angle(z).to_vector<double>(),
                          {std::atan2(3.0, 1.0), M_PI, std::atan2(-4.0, 0.5)}, 1e-12, 1e-12);
    // A real input: real is itself, imag zeros, angle pi for negatives.
    CHECK(oar::imag(re).to_vector<double>() == std::vector<double>{0, 0, 0});
    CHECK(oar::angle(re).to_vector<double>() == std::vector<double>{0, M_PI, 0});
    Tensor pairs = oar::as_real(z);
    CHECK(pairs.shape() == Shape{3, 2});
    CHECK(pairs.to_vector<double>() == std::vector<double>{1, 3, -2, 0, 0.5, -4});
    check_close_c(z_values(oar::as_complex(pairs)), z_values(z));
    // as_real of a strided (transposed) complex view.
    Tensor m = oar::reshape(oar::complex(Tensor::from_vector<double>({1, 2, 3, 4}, {4}, device),
                                         Tensor::from_vector<double>({5, 6, 7, 8}, {4}, device)),
                            {2, 2});
    CHECK(oar::as_real(oar::transpose(m, {1, 0})).to_vector<double>() ==
          std::vector<double>{1, 5, 3, 7, 2, 6, 4, 8});
    Tensor p = oar::polar(Tensor::from_vector<double>({2, 1}, {2}, device),
                          Tensor::from_vector<double>({M_PI / 2, M_PI}, {2}, device));
    check_close_c(z_values(p), {{0, 2}, {-1, 0}});
  }
}

TEST_CASE("complex arithmetic and math match std::complex; real operands promote (f64 with c64 is c128)") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor a = c128_tensor(kZ, {2, 3}, device);
    Tensor b = c128_tensor({{1, 1}, {-0.5, 2}, {0.25, -3}}, {3}, device);  // broadcasts over rows
    auto each = [&](auto&& f) {
      std::vector<c128> out;
      for (size_t i = 0; i < kZ.size(); ++i) out.push_back(f(kZ[i], z_values(b)[i % 3]));
      return out;
    };
    check_close_c(z_values(a + b), each([](c128 x, c128 y) { return x + y; }));
    check_close_c(z_values(a - b), each([](c128 x, c128 y) { return x - y; }));
    check_close_c(z_values(a * b), each([](c128 x, c128 y) { return x * y; }));
    check_close_c(z_values(a / b), each([](c128 x, c128 y) { return x / y; }));
    check_close_c(z_values(-a), each([](c128 x, c128) { return -x; }));
    for (auto [name, op, ref] : std::vector<std::tuple<const char*, Tensor (*)(const Tensor&), c128 (*)(const c128&)>>{
             {"exp", oar::exp, [](const c128& x) { return std::exp(x); }},
             {"log", oar::log, [](const c128& x) { return std::log(x); }},
             {"sqrt", oar::sqrt, [](const c128& x) { return std::sqrt(x); }},
             {"sin", oar::sin, [](const c128& x) { return std::sin(x); }},
             {"cos", oar::cos, [](const c128& x) { return std::cos(x); }},
             {"tanh", oar::tanh, [](const c128& x) { return std::tanh(x); }}}) {
      INFO(name);
      check_close_c(z_values(op(a)), each([ref](c128 x, c128) { return ref(x); }));
      // c64 agrees to float precision.
      check_close_c(z_values(op(oar::cast(a, DType::c64))), each([ref](c128 x, c128) { return ref(x); }), 1e-5);
    }
    // Mixed operands: a real tensor becomes complex of the wider precision.
    Tensor x32 = Tensor::from_vector<float>({2, -1, 0.5}, {3}, device);
    Tensor z64 = oar::cast(b, DType::c64);
    CHECK((x32 * z64).dtype() == DType::c64);
    CHECK((oar::cast(x32, DType::f64) * z64).dtype() == DType::c128);
    check_close_c(z_values(x32 * z64), {{2, 2}, {0.5, -2}, {0.125, -1.5}}, 1e-6);
    // Scalars: z * 2.0 stays complex.
    check_close_c(z_values(b * 2.0), {{2, 2}, {-1, 4}, {0.5, -6}});
    // equal / not_equal compare both parts; ordering is refused.
    Tensor c = c128_tensor({{1, 1}, {-0.5, 0}, {0.25, -3}}, {3}, device);
    CHECK(oar::equal(b, c).to_vector<bool>() == std::vector<bool>{true, false, true});
    CHECK(oar::not_equal(b, c).to_vector<bool>() == std::vector<bool>{false, true, false});
    CHECK_THROWS_WITH_AS(oar::less_than(b, c), doctest::Contains("complex numbers have no order"), oar::Error);
    CHECK_THROWS_WITH_AS(oar::max(b, {0}), doctest::Contains("complex numbers have no order"), oar::Error);
  }
}

TEST_CASE("sum and mean of complex; matmul of complex on the mock reference") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor a = c128_tensor(kZ, {2, 3}, device);
    check_close_c(z_values(oar::sum(a, {1})), {kZ[0] + kZ[1] + kZ[2], kZ[3] + kZ[4] + kZ[5]});
    check_close_c(z_values(oar::sum(a, {0}, true)), {kZ[0] + kZ[3], kZ[1] + kZ[4], kZ[2] + kZ[5]});
    c128 total = 0;
    for (c128 v : kZ) total += v;
    check_close_c(z_values(oar::sum(a)), {total});
    check_close_c(z_values(oar::mean(a)), {total / 6.0});
    CHECK(oar::sum(oar::cast(a, DType::c64)).dtype() == DType::c64);
  }
  const oar::Device mock{"mock", 0};
  Tensor a = c128_tensor(kZ, {2, 3}, mock);
  Tensor b = c128_tensor({{1, 0}, {0, 1}, {2, -1}, {0.5, 0.5}, {-1, 0}, {0, -2}}, {3, 2}, mock);
  std::vector<c128> want(4);
  auto bz = z_values(b);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int p = 0; p < 3; ++p) want[i * 2 + j] += kZ[i * 3 + p] * bz[p * 2 + j];
  check_close_c(z_values(oar::matmul(a, b)), want);
  // The same product from transposed operands (transpose_a, transpose_b).
  check_close_c(z_values(oar::matmul(oar::transpose(a, {1, 0}).contiguous(), oar::transpose(b, {1, 0}).contiguous(),
                                     true, true)),
                want);
}

TEST_CASE("complex gradients match central finite differences in c128 (dL/dx + i dL/dy)") {
  const std::vector<UnaryGradCase> cases = {
      {"exp", [](const Tensor& z) { return oar::exp(z); }},
      {"log", [](const Tensor& z) { return oar::log(z); }},
      {"sqrt", [](const Tensor& z) { return oar::sqrt(z); }},
      {"sin", [](const Tensor& z) { return oar::sin(z); }},
      {"cos", [](const Tensor& z) { return oar::cos(z); }},
      {"tanh", [](const Tensor& z) { return oar::tanh(z); }},
      {"neg", [](const Tensor& z) { return -z; }},
      {"conj", [](const Tensor& z) { return oar::conj(z); }},
      {"real", [](const Tensor& z) { return oar::real(z); }},
      {"imag", [](const Tensor& z) { return oar::imag(z); }},
      {"abs", [](const Tensor& z) { return oar::abs(z); }},
      {"angle", [](const Tensor& z) { return oar::angle(z); }},
      {"as_real", [](const Tensor& z) { return oar::as_real(z); }},
      {"z * z", [](const Tensor& z) { return z * z; }},
      {"1 / z", [](const Tensor& z) { return 1.0 / z; }},
      {"z / conj(z)", [](const Tensor& z) { return z / oar::conj(z); }},
      {"z * const", [](const Tensor& z) {
         return z * c128_tensor({{0.5, 2}, {-1, 0.25}, {3, -1}}, {3}, z.device());
       }},
      {"const / z", [](const Tensor& z) {
         return c128_tensor({{1, -1}, {2, 0.5}, {-0.5, 1}}, {3}, z.device()) / z;
       }},
      {"sum over rows", [](const Tensor& z) { return oar::sum(z, {0}); }},
      {"mean", [](const Tensor& z) { return oar::mean(z * z, {1}); }},
      {"complex(real, imag) rebuilt", [](const Tensor& z) { return oar::complex(oar::imag(z), oar::real(z) * 2.0); }},
      {"polar(|z|, angle z)", [](const Tensor& z) { return oar::polar(oar::abs(z), oar::angle(z) * 0.5); }},
      {"x * z mixed", [](const Tensor& z) { return oar::real(z) * z; }},
      {"cast to real", [](const Tensor& z) { return oar::cast(z, DType::f64) * 3.0; }},
      {"matmul z z^T", [](const Tensor& z) { return oar::matmul(z, oar::transpose(z, {1, 0})); }},
  };
  // matmul of complex runs on the mock (the cpu's is the BLAS kernel).
  for (const auto& device : test_devices()) {
    for (const auto& c : cases) {
      INFO(device.str() << ": " << c.name);
      if (std::string(c.name).rfind("matmul", 0) == 0 && device.type == "cpu") continue;
      auto loss_of = [&](const std::vector<c128>& v) {
        oar::NoGrad no_grad;
        return weighted_loss(c.f(c128_tensor(v, {2, 3}, device))).item();
      };
      Tensor z = c128_tensor(kZ, {2, 3}, device).set_requires_grad();
      Tensor g = oar::grad({weighted_loss(c.f(z))}, {z})[0];
      REQUIRE(g.dtype() == DType::c128);
      check_close_c(z_values(g), numeric_grad(loss_of, kZ), 1e-6);
    }
  }
}

TEST_CASE("second-order complex gradients match finite differences of the first-order ones") {
  const std::vector<UnaryGradCase> cases = {
      {"exp", [](const Tensor& z) { return oar::exp(z); }},
      {"z * z * conj(z)", [](const Tensor& z) { return z * z * oar::conj(z); }},
      {"1 / z", [](const Tensor& z) { return 1.0 / z; }},
      {"sin", [](const Tensor& z) { return oar::sin(z); }},
      {"abs", [](const Tensor& z) { return oar::abs(z); }},
      {"log", [](const Tensor& z) { return oar::log(z); }},
  };
  const std::vector<c128> v = {{0.3, -0.2}, {1, 0.5}, {-0.4, 0.1}, {0.2, 0.9}, {-1, -0.3}, {0.6, 0.6}};
  for (const auto& device : test_devices()) {
    for (const auto& c : cases) {
      INFO(device.str() << ": " << c.name);
      // h(z) = Re(sum(conj(v) * grad_z L(z))): a real function of z.
      auto h_of = [&](const Tensor& z, bool create_graph) {
        Tensor g = oar::grad({weighted_loss(c.f(z))}, {z}, {}, create_graph)[0];
        return oar::sum(oar::real(oar::conj(c128_tensor(v, {2, 3}, z.device())) * g));
      };
      auto h_value = [&](const std::vector<c128>& values) {
        Tensor z = c128_tensor(values, {2, 3}, device).set_requires_grad();
        return h_of(z, false).item();
      };
      Tensor z = c128_tensor(kZ, {2, 3}, device).set_requires_grad();
      Tensor gg = oar::grad({h_of(z, true)}, {z})[0];
      check_close_c(z_values(gg), numeric_grad(h_value, kZ, 1e-5), 1e-5);
    }
  }
}

TEST_CASE("complex op errors name the op and what it needs") {
  const oar::Device cpu{"cpu", 0};
  Tensor x = Tensor::from_vector<float>({1, 2, 3}, {3}, cpu);
  CHECK_THROWS_WITH_AS(oar::as_complex(x), doctest::Contains("as_complex: the last dim of x must be 2"), oar::Error);
  CHECK_THROWS_WITH_AS(oar::as_real(x), doctest::Contains("as_real: x has dtype float32 but a complex dtype"),
                       oar::Error);
  CHECK_THROWS_WITH_AS(oar::complex(x, oar::cast(x, DType::c64)),
                       doctest::Contains("complex: input 1 has dtype complex64 but the parts must be real"), oar::Error);
}

TEST_CASE("complex programs: dtype names in the IR text and JSON round-trip; safetensors says C64/C128") {
  oar::ir::Program p;
  oar::ir::Value* z = p.add_input("z", {DType::c64, {-1, 3}});
  auto emit = [&](const char* name, std::vector<oar::ir::Value*> operands) {
    const oar::OpDef& def = oar::OpRegistry::instance().get(name);
    std::vector<oar::TensorMeta> metas;
    for (auto* v : operands) metas.push_back({v->type().dtype, v->type().dims});
    oar::TensorMeta out = def.meta(def, metas, {}).at(0);
    return p.append(def, std::move(operands), {}, {oar::ir::TensorType{out.dtype, out.shape}})->result(0);
  };
  oar::ir::Value* r = emit("abs", {emit("mul", {z, emit("conj", {z})})});
  p.add_output(r, "r");
  CHECK(r->type().dtype == DType::f32);
  const std::string json = oar::ir::to_json(p, 1);
  CHECK(json.find("\"c64\"") != std::string::npos);
  oar::ir::Program back = oar::ir::from_json(json, {}, "complex.json");
  CHECK(oar::ir::to_json(back, 1) == json);
  CHECK(oar::ir::to_string(back) == oar::ir::to_string(p));
  CHECK(oar::ir::to_string(p).find("c64") != std::string::npos);

  const std::string path = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                           "/oar_complex_" + std::to_string(::getpid()) + ".safetensors";
  const oar::Device cpu{"cpu", 0};
  oar::ir::save_safetensors(path, {{"w", Tensor::from_vector<c128>({{1, -2}}, {1}, cpu)}}, {});
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(bytes.find("\"dtype\":\"C128\"") != std::string::npos);
  CHECK(z_values(oar::ir::load_safetensors(path, cpu, nullptr).at("w")) == std::vector<c128>{{1, -2}});
  std::remove(path.c_str());
}

// scatter_add on complex (the VJP of gather and of slicing a complex tensor):
// y = x; y[index[i]] += updates[i] along axis 0, on cpu and mock.
TEST_CASE("complex: scatter_add adds real and imaginary parts, and a slice of a complex tensor has a gradient") {
  for (const oar::Device& dev : test_devices()) {
    INFO(dev.type);
    for (DType dt : {DType::c64, DType::c128}) {
      Tensor x = oar::cast(c128_tensor({{1, 1}, {2, -2}, {3, 0.5}}, {3, 1}, dev), dt);
      Tensor index = Tensor::from_vector(std::vector<int64_t>{2, 0, 2}, {3}, dev);
      Tensor upd = oar::cast(c128_tensor({{0.5, 1}, {-1, 4}, {2, -3}}, {3, 1}, dev), dt);
      Tensor y = oar::scatter_add(x, index, upd, 0);
      CHECK(y.dtype() == dt);
      check_close_c(z_values(y), {{0, 5}, {2, -2}, {5.5, -1.5}}, 1e-6);
    }
    // d/dz of sum(|z[1:3]|^2) is 2 z on the slice and 0 elsewhere.
    Tensor z = c128_tensor(kZ, {6}, dev).detach();
    z.set_requires_grad(true);
    Tensor part = oar::slice(z, {0}, {1}, {3});
    Tensor loss = oar::sum(oar::real(part * oar::conj(part)));
    loss.backward();
    std::vector<c128> want(6, c128(0, 0));
    want[1] = 2.0 * kZ[1], want[2] = 2.0 * kZ[2];
    check_close_c(z_values(z.grad()), want);
  }
}
