// pow with a scalar exponent (Note [pow fast paths] in core/src/ops/elementwise.cpp):
// the fast exponents give std::pow's values and pow's derivatives to second
// order, and a traced pow(x, 2) is a multiply, not a per-element pow.
#include <cmath>

#include "oar/ir/printer.h"
#include "oar/ir/trace.h"
#include "test_util.h"

using namespace oar;
using oar_test::check_close;
using oar_test::values;

TEST_CASE("pow with a scalar exponent: values, first and second derivatives, every exponent path") {
  const std::vector<double> xs = {0.25, 0.5, 1.5, 2, 3.75};
  for (const auto& device : oar_test::test_devices()) {
    for (double e : {1.0, 2.0, 3.0, -1.0, -2.0, 0.5, -0.5, 2.5, 4.0}) {
      INFO(device.str() << ": exponent " << e);
      Tensor x = Tensor::from_vector<double>(xs, {5}).to(device);
      x.set_requires_grad();
      Tensor y = oar::pow(x, e);
      std::vector<double> want, d1, d2;
      for (double v : xs) {
        want.push_back(std::pow(v, e));
        d1.push_back(e * std::pow(v, e - 1));
        d2.push_back(e * (e - 1) * std::pow(v, e - 2));
      }
      check_close(y, want, 1e-14, 1e-14);
      auto g = oar::grad({oar::sum(y)}, {x}, {}, /*create_graph=*/true);
      check_close(g[0], d1, 1e-13, 1e-13);
      if (e != 1) check_close(oar::grad({oar::sum(g[0])}, {x})[0], d2, 1e-12, 1e-12);  // pow(x, 1)'' is 0: constant
    }
    // f32 keeps its dtype; pow(x, 1) is a new tensor.
    Tensor f = Tensor::from_vector<float>({-1.5f, 2}, {2}).to(device);
    CHECK(oar::pow(f, 2.0).dtype() == DType::f32);
    check_close(oar::pow(f, 2.0), {2.25, 4});
    check_close(oar::pow(f, 1.0), {-1.5, 2});
    CHECK(std::isnan(values(oar::pow(f, 0.5))[0]));  // as std::pow of a negative base
  }
}

TEST_CASE("pow(x, 2) traces to a multiply and pow(x, 0.5) to sqrt; pow(x, 2.5) stays pow") {
  Device d = oar::default_device();
  auto program_of = [&](double e) {
    auto f = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{oar::pow(in[0], e)}; };
    return ir::to_string(ir::trace(f, {{{-1, 8}, DType::f32, "x"}}, {}, d).program);
  };
  std::string square = program_of(2.0), root = program_of(0.5), general = program_of(2.5);
  CHECK(square.find("mul") != std::string::npos);
  CHECK(square.find("pow") == std::string::npos);
  CHECK(root.find("sqrt") != std::string::npos);
  CHECK(root.find("pow") == std::string::npos);
  CHECK(general.find("pow") != std::string::npos);
  // Other integer exponents: repeated squaring, multiplies and a division only.
  for (double e : {5.0, -3.0, 32.0}) {
    std::string p = program_of(e);
    INFO("exponent " << e << ":\n" << p);
    CHECK(p.find("mul") != std::string::npos);
    CHECK(p.find("pow") == std::string::npos);
  }
  CHECK(program_of(33.0).find("pow") != std::string::npos);  // past kMaxMultiplyExponent
}

TEST_CASE("pow of an integer tensor by a non-negative integer exponent is exact and wraps as numpy") {
  Tensor x = Tensor::from_vector<int32_t>({-3, 2, 1000}, {3});
  CHECK(oar::pow(x, 3.0).dtype() == DType::i32);
  CHECK(oar::pow(x, 3.0).to_vector<int32_t>() == std::vector<int32_t>{-27, 8, 1000000000});
  CHECK(oar::pow(x, 0.0).to_vector<int32_t>() == std::vector<int32_t>{1, 1, 1});
  // 1000^7 = 10^21 = 3735027712 (mod 2^32), -559939584 as int32: numpy's np.power.
  CHECK(oar::pow(x, 7.0).to_vector<int32_t>() == std::vector<int32_t>{-2187, 128, -559939584});
}
