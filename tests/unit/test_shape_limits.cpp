// Shapes that cannot describe a tensor (Note [Checked shapes]): element
// counts or byte sizes that overflow 64 bits, and more than OAR_MAX_NDIM
// dims, are refused at the op that produced them, eagerly, while tracing and
// in the verifier of a loaded program, with a sentence naming the op and the
// shape.
#include "oar/ir/serialize.h"
#include "oar/ir/trace.h"
#include "oar/ir/verifier.h"
#include "oar/plugin_util.h"
#include "test_util.h"

using oar::DType;
using oar::Shape;
using oar::Tensor;
using oar_test::error_of;
using oar_test::test_devices;

namespace {
bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}
constexpr int64_t k2to32 = int64_t{1} << 32;
constexpr int64_t k2to62 = int64_t{1} << 62;
}  // namespace

TEST_CASE("checked_shape_bytes: hand-computed sizes, overflow, negative dims and the rank limit") {
  CHECK(oar::checked_shape_bytes("t", {}, DType::f32) == 4);
  CHECK(oar::checked_shape_bytes("t", {2, 3}, DType::f64) == 48);
  CHECK(oar::checked_shape_bytes("t", {k2to62, 0, k2to62}, DType::f32) == 0);  // no elements
  CHECK(oar::checked_shape_bytes("t", {int64_t{1} << 60}, DType::f32) == uint64_t{1} << 62);
  CHECK(oar::checked_shape_bytes("t", {k2to62}, DType::u8) == uint64_t{1} << 62);
  // 2^62 f32 elements are 2^64 bytes: the byte size wraps to 0 unchecked.
  CHECK(error_of([] { oar::checked_shape_bytes("zeros", {k2to62}, DType::f32); }) ==
        "zeros: the shape [4611686018427387904] of float32 has more elements or bytes than fit "
        "in 64 bits (at most 2^63 - 1)");
  // 2^32 * 2^32 elements wrap to 0 unchecked.
  CHECK(contains(error_of([] { oar::checked_shape_bytes("t", {k2to32, k2to32}, DType::u8); }),
                 "[4294967296, 4294967296] of uint8 has more elements or bytes than fit in 64 bits"));
  CHECK(contains(error_of([] { oar::checked_shape_bytes("t", {3, -2}, DType::f32); }),
                 "t: the shape [3, -2] of float32 has the negative dim -2"));
  Shape nine(9, 1);
  CHECK(error_of([&] { oar::checked_shape_bytes("t", nine, DType::f32); }) ==
        "t: the shape [1, 1, 1, 1, 1, 1, 1, 1, 1] of float32 has 9 dims; at most 8 are supported");
  CHECK(oar::checked_shape_bytes("t", Shape(8, 2), DType::f32) == 1024);
}

TEST_CASE("creation ops refuse overflowing shapes on every device, naming the op") {
  for (const auto& dev : test_devices()) {
    INFO(dev.str());
    CHECK(contains(error_of([&] { oar::zeros({k2to62}, DType::f32, dev); }),
                   "full: the shape [4611686018427387904] of float32 has more elements or bytes"));
    CHECK(contains(error_of([&] { oar::zeros({k2to32, k2to32}, DType::f32, dev); }),
                   "full: the shape [4294967296, 4294967296] of float32 has more elements"));
    CHECK(contains(error_of([&] { oar::ones({k2to62, 2}, DType::u8, dev); }), "more elements or bytes"));
    CHECK(contains(error_of([&] { Tensor::empty({k2to62 + 1, 4}, DType::f32, dev); }),
                   "tensor: the shape [4611686018427387905, 4] of float32"));
    // A shape with a zero dim has no elements, however large the others.
    CHECK(oar::zeros({k2to62, 0}, DType::f32, dev).numel() == 0);
  }
}

TEST_CASE("reshape and unsqueeze refuse more than 8 dims and wrapped sizes, naming the op") {
  for (const auto& dev : test_devices()) {
    INFO(dev.str());
    Tensor x = oar::ones(Shape(8, 1), DType::f32, dev);
    CHECK(error_of([&] { oar::reshape(x, Shape(9, 1)); }) ==
          "reshape: the shape [1, 1, 1, 1, 1, 1, 1, 1, 1] of float32 has 9 dims; at most 8 are supported");
    CHECK(error_of([&] { oar::unsqueeze(x, {0}); }) ==
          "unsqueeze: the shape [1, 1, 1, 1, 1, 1, 1, 1, 1] of float32 has 9 dims; at most 8 are "
          "supported");
    CHECK(oar::sum(oar::reshape(x, Shape(8, 1))).item() == 1.0);
    // (2^62 + 1) * 4 wraps to 4 = x's element count: only the checked product sees it.
    Tensor four = oar::ones({4}, DType::f32, dev);
    CHECK(contains(error_of([&] { oar::reshape(four, {k2to62 + 1, 4}); }), "reshape: the shape"));
    // An empty tensor may take any shape of zero elements.
    CHECK(oar::reshape(oar::zeros({0}, DType::f32, dev), {k2to32, k2to32, 0}).shape() ==
          Shape{k2to32, k2to32, 0});
  }
}

TEST_CASE("a traced or loaded program with a 9-D value fails, with a sentence") {
  oar::Device cpu{"cpu", 0};
  Tensor w = oar::ones({2, 2}, DType::f32, cpu);
  CHECK(contains(error_of([&] {
                   oar::ir::trace(
                       [](const std::vector<Tensor>& in) {
                         return std::vector<Tensor>{oar::reshape(in[0], Shape(9, 1))};
                       },
                       {{Shape(8, 1), DType::f32, "x"}}, {}, cpu);
                 }),
                 "reshape: the shape [1, 1, 1, 1, 1, 1, 1, 1, 1] of float32 has 9 dims"));

  // A saved program whose reshape builds 9 dims: the verifier refuses it.
  auto program_with = [](const std::string& shape, const std::string& result_shape) {
    return R"({"format": "oar.program", "version": 1,
      "inputs": [{"id": 0, "name": "x", "type": {"dtype": "f32", "shape": )" + shape + R"(}}],
      "parameters": [], "constants": [],
      "ops": [{"op": "reshape", "operands": [0], "attrs": {"shape": {"ints": )" + result_shape + R"(}},
               "results": [{"id": 1, "type": {"dtype": "f32", "shape": )" + result_shape + R"(}}]}],
      "outputs": [{"name": "y", "value": 1}], "updates": []})";
  };
  CHECK_NOTHROW(oar::ir::from_json(program_with("[2, 1]", "[1, 1, 1, 1, 1, 1, 1, 2]"), {}, "ok.json"));
  CHECK(error_of([&] {
          oar::ir::from_json(program_with("[2, 1]", "[1, 1, 1, 1, 1, 1, 1, 1, 2]"), {}, "nine.json");
        }) == "nine.json: verify: operation 0 (reshape): its meta rule rejects the operand types: "
              "reshape: the shape [1, 1, 1, 1, 1, 1, 1, 1, 2] of float32 has 9 dims; at most 8 are "
              "supported");
  CHECK(contains(error_of([&] {
                   oar::ir::from_json(program_with("[1, 1, 1, 1, 1, 1, 1, 1, 2]", "[2]"), {}, "in.json");
                 }),
                 "in.json: verify: 'x': the shape [1, 1, 1, 1, 1, 1, 1, 1, 2] of float32 has 9 dims"));
  CHECK(contains(error_of([&] {
                   oar::ir::from_json(program_with("[4294967296, 4294967296]", "[-1]"), {}, "big.json");
                 }),
                 "big.json: verify: 'x': the shape [4294967296, 4294967296] of float32 has more elements"));
}
