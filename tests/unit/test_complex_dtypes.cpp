// complex64 / complex128 (milestone A1): names, sizes and promotion; casts
// between real and complex; complex fills; data movement (copy, reshape,
// transpose, slice, concat, gather, broadcast, pad) on cpu and mock; printing.
#include <complex>
#include <cstdint>

#include "oar/op.h"
#include "oar/plugin_util.h"
#include "test_util.h"

using oar::DType;
using oar::Shape;
using oar::Tensor;
using oar_test::test_devices;
using c64 = std::complex<float>;
using c128 = std::complex<double>;

namespace {

DType promote(const char* name, std::vector<DType> dtypes, std::vector<oar::ScalarKind> kinds,
              DType default_float = DType::f32) {
  return oar::promote(oar::OpRegistry::instance().get(name), dtypes, kinds, default_float);
}

}  // namespace

TEST_CASE("complex dtypes: names, sizes, parsing and the part dtypes") {
  CHECK(static_cast<int>(DType::c64) == OAR_DTYPE_C64);
  CHECK(static_cast<int>(DType::c128) == OAR_DTYPE_C128);
  CHECK(oar::kDTypeCount == OAR_DTYPE_COUNT);
  CHECK(oar::dtype_size(DType::c64) == 8);
  CHECK(oar::dtype_size(DType::c128) == 16);
  CHECK(oar::dtype_name(DType::c64) == "complex64");
  CHECK(oar::dtype_short_name(DType::c128) == "c128");
  CHECK(oar::parse_dtype("complex128") == DType::c128);
  CHECK(oar::parse_dtype("c64") == DType::c64);
  CHECK(oar::is_complex(DType::c64));
  CHECK_FALSE(oar::is_complex(DType::f64));
  CHECK_FALSE(oar::is_floating(DType::c64));  // floating stays the real floats
  CHECK(oar::complex_dtype_for(DType::f64) == DType::c128);
  CHECK(oar::complex_dtype_for(DType::f32) == DType::c64);
  CHECK(oar::complex_dtype_for(DType::bf16) == DType::c64);
  CHECK(oar::complex_dtype_for(DType::i64) == DType::c64);
  CHECK(oar::complex_dtype_for(DType::c128) == DType::c128);
  CHECK(oar::real_dtype_for(DType::c64) == DType::f32);
  CHECK(oar::real_dtype_for(DType::c128) == DType::f64);
  CHECK(oar::real_dtype_for(DType::i32) == DType::i32);
  CHECK(oar::dtype_of<c64>() == DType::c64);
  CHECK(oar::dtype_of<c128>() == DType::c128);
  CHECK(oar_dtype_size(OAR_DTYPE_C128) == 16);
  CHECK(oar::dtype_set_str(oar::kComplexDTypes) == "complex64, complex128");
}

TEST_CASE("complex promotion: complex beats real; c64 with f64 is c128 (Paddle)") {
  CHECK(oar::promote_types(DType::c64, DType::f32) == DType::c64);
  CHECK(oar::promote_types(DType::f16, DType::c64) == DType::c64);
  CHECK(oar::promote_types(DType::c64, DType::f64) == DType::c128);
  CHECK(oar::promote_types(DType::c64, DType::c128) == DType::c128);
  CHECK(oar::promote_types(DType::i64, DType::c64) == DType::c64);
  CHECK(oar::promote_types(DType::boolean, DType::c128) == DType::c128);
  const auto T = oar::ScalarKind::tensor, F = oar::ScalarKind::floating, C = oar::ScalarKind::complex;
  // A float scalar keeps a complex tensor complex (it used to pick the default float).
  CHECK(promote("add", {DType::c64, DType::boolean}, {T, F}) == DType::c64);
  // A complex scalar makes a real tensor complex of its precision.
  CHECK(promote("mul", {DType::f64, DType::boolean}, {T, C}) == DType::c128);
  CHECK(promote("mul", {DType::f32, DType::boolean}, {T, C}) == DType::c64);
  CHECK(promote("add", {DType::i32, DType::boolean}, {T, C}, DType::f64) == DType::c128);
  CHECK(promote("add", {DType::boolean, DType::boolean}, {C, C}) == DType::c64);
  // True division keeps complex complex.
  CHECK(promote("div", {DType::c128, DType::c128}, {T, T}) == DType::c128);
}

TEST_CASE("complex tensors round-trip through the host and print as a+bj") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor z = Tensor::from_vector<c64>({{1, 2}, {-0.5f, -3}}, {2}, device);
    CHECK(z.dtype() == DType::c64);
    CHECK(z.to_vector<c64>() == std::vector<c64>{{1, 2}, {-0.5f, -3}});
    CHECK(z.str().find("values=[1+2j, -0.5-3j]") != std::string::npos);
    Tensor w = Tensor::from_vector<c128>({{0.25, -1}}, {1}, device);
    CHECK(w.item_complex() == c128(0.25, -1));
    CHECK_THROWS_WITH_AS(w.item(), doctest::Contains("item_complex"), oar::Error);
  }
}

TEST_CASE("cast real <-> complex: imaginary 0 in, the real part out (bool: either part nonzero)") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor x = Tensor::from_vector<float>({1.5f, -2, 0}, {3}, device);
    CHECK(oar::cast(x, DType::c64).to_vector<c64>() == std::vector<c64>{{1.5f, 0}, {-2, 0}, {0, 0}});
    CHECK(oar::cast(x, DType::c128).to_vector<c128>() == std::vector<c128>{{1.5, 0}, {-2, 0}, {0, 0}});
    Tensor i = Tensor::from_vector<int64_t>({7, -3}, {2}, device);
    CHECK(oar::cast(i, DType::c128).to_vector<c128>() == std::vector<c128>{{7, 0}, {-3, 0}});
    Tensor b = Tensor::from_vector<bool>({true, false}, {2}, device);
    CHECK(oar::cast(b, DType::c64).to_vector<c64>() == std::vector<c64>{{1, 0}, {0, 0}});

    Tensor z = Tensor::from_vector<c128>({{2.75, 1}, {-1.5, -4}, {0, 3}, {0, 0}}, {4}, device);
    CHECK(oar::cast(z, DType::f64).to_vector<double>() == std::vector<double>{2.75, -1.5, 0, 0});
    CHECK(oar::cast(z, DType::f32).to_vector<float>() == std::vector<float>{2.75f, -1.5f, 0, 0});
    CHECK(oar::cast(z, DType::i32).to_vector<int32_t>() == std::vector<int32_t>{2, -1, 0, 0});
    CHECK(oar::cast(z, DType::boolean).to_vector<bool>() == std::vector<bool>{true, true, true, false});
    // c128 -> c64 rounds each part; c64 -> c128 is exact.
    Tensor narrow = oar::cast(z, DType::c64);
    CHECK(narrow.to_vector<c64>() == std::vector<c64>{{2.75f, 1}, {-1.5f, -4}, {0, 3}, {0, 0}});
    Tensor third = Tensor::from_vector<c128>({{1.0 / 3, -2.0 / 3}}, {1}, device);
    CHECK(oar::cast(third, DType::c64).to_vector<c64>()[0] == c64(1.0f / 3, -2.0f / 3));
    CHECK(oar::cast(oar::cast(third, DType::c64), DType::c128).to_vector<c128>()[0] ==
          c128(static_cast<double>(1.0f / 3), static_cast<double>(-2.0f / 3)));
    // A strided (transposed) input casts too.
    Tensor m = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, device);
    CHECK(oar::cast(oar::transpose(m, {1, 0}), DType::c64).to_vector<c64>() ==
          std::vector<c64>{{1, 0}, {4, 0}, {2, 0}, {5, 0}, {3, 0}, {6, 0}});
  }
}

TEST_CASE("full and full_like with a complex value; zeros and ones of complex dtypes") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    CHECK(oar::full({2}, c128(1.5, -2), DType::c64, device).to_vector<c64>() ==
          std::vector<c64>{{1.5f, -2}, {1.5f, -2}});
    CHECK(oar::full({3}, c128(0.5, 4), DType::c128, device).to_vector<c128>() ==
          std::vector<c128>(3, c128(0.5, 4)));
    CHECK(oar::zeros({2}, DType::c128, device).to_vector<c128>() == std::vector<c128>(2, c128(0, 0)));
    CHECK(oar::ones({1}, DType::c64, device).to_vector<c64>() == std::vector<c64>{{1, 0}});
    // A real dtype takes the real part of a complex value, as cast does.
    CHECK(oar::full({1}, c128(2.5, 9), DType::f32, device).to_vector<float>() == std::vector<float>{2.5f});
    Tensor z = oar::full({2, 2}, c128(1, 1), DType::c64, device);
    CHECK(oar::full_like(z, c128(-1, 0.25), DType::c64).to_vector<c64>() == std::vector<c64>(4, c64(-1, 0.25f)));
    CHECK(oar::zeros_like(z).to_vector<c64>() == std::vector<c64>(4, c64(0, 0)));
  }
}

TEST_CASE("data movement on complex: copy, reshape, transpose, slice, concat, gather, broadcast, pad") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    for (DType dt : {DType::c64, DType::c128}) {
      INFO(oar::dtype_name(dt));
      // z[i][j] = (3i + j) + (10 + 3i + j) j, shape [2, 3].
      Tensor z = oar::cast(Tensor::from_vector<c128>({{0, 10}, {1, 11}, {2, 12}, {3, 13}, {4, 14}, {5, 15}}, {2, 3},
                                                     device),
                           dt);
      auto vals = [](const Tensor& t) { return oar::cast(t, DType::c128).to_vector<c128>(); };
      CHECK(vals(oar::reshape(z, {3, 2})) == vals(z));
      CHECK(vals(oar::transpose(z, {1, 0}).contiguous()) ==
            std::vector<c128>{{0, 10}, {3, 13}, {1, 11}, {4, 14}, {2, 12}, {5, 15}});
      CHECK(vals(oar::slice(z, {1}, {1}, {3})) == std::vector<c128>{{1, 11}, {2, 12}, {4, 14}, {5, 15}});
      CHECK(vals(oar::concat({z, z}, 0)).size() == 12);
      CHECK(vals(oar::concat({oar::slice(z, {1}, {0}, {1}), oar::slice(z, {1}, {2}, {3})}, 1)) ==
            std::vector<c128>{{0, 10}, {2, 12}, {3, 13}, {5, 15}});
      Tensor index = Tensor::from_vector<int64_t>({2, 0}, {2}, device);
      CHECK(vals(oar::gather(z, index, 1)) == std::vector<c128>{{2, 12}, {0, 10}, {5, 15}, {3, 13}});
      Tensor row = oar::slice(z, {0}, {1}, {2});
      CHECK(vals(oar::broadcast_to(row, {2, 3}).contiguous()) ==
            std::vector<c128>{{3, 13}, {4, 14}, {5, 15}, {3, 13}, {4, 14}, {5, 15}});
      CHECK(vals(oar::pad(oar::slice(row, {1}, {0}, {1}), {0, 0, 1, 1})) ==
            std::vector<c128>{{0, 0}, {3, 13}, {0, 0}});
      CHECK(vals(oar::cast(z, dt)) == vals(z));  // a same-dtype cast copies
    }
  }
}
