// Out-of-range indices and labels (issue 19, item 9): gather, scatter_add,
// embedding and cross_entropy raise at the op, naming the op, the value
// and its position, on every device (Note [Index values] in op_util.h).
#include <cmath>

#include "test_util.h"

using oar::DType;
using oar::Shape;
using oar::Tensor;
using oar_test::check_close;
using oar_test::error_of;
using oar_test::test_devices;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

Tensor ints(const std::vector<int64_t>& v, const Shape& s, const oar::Device& d) {
  return Tensor::from_vector(v, s, d);
}

}  // namespace

TEST_CASE("gather and scatter_add name the out-of-range index and its position") {
  for (const auto& device : test_devices()) {
    CAPTURE(device.str());
    Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {3, 2}, device);
    std::string e = error_of([&] { oar::gather(x, ints({0, 3}, {2}, device), 0); });
    CHECK(contains(e, "gather: index 3 at position [1] of index tensor [2] is out of range"));
    CHECK(contains(e, "expected 0 <= index < 3 (the size of axis 0 of x [3, 2])"));
    e = error_of([&] { oar::gather(x, ints({-1}, {1}, device), 1); });
    CHECK(contains(e, "gather: index -1 at position [0]"));
    CHECK(contains(e, "< 2 (the size of axis 1 of x [3, 2])"));
    Tensor upd = Tensor::from_vector(std::vector<float>{1, 1}, {1, 2}, device);
    e = error_of([&] { oar::scatter_add(x, ints({5}, {1}, device), upd, 0); });
    CHECK(contains(e, "scatter_add: index 5 at position [0]"));
    // In range still works.
    check_close(oar::gather(x, ints({2, 0}, {2}, device), 0), {5, 6, 1, 2});
  }
}

TEST_CASE("embedding names the out-of-range id") {
  for (const auto& device : test_devices()) {
    CAPTURE(device.str());
    Tensor w = Tensor::from_vector(std::vector<float>{0, 1, 2, 3, 4, 5}, {3, 2}, device);
    std::string e = error_of([&] { oar::embedding(ints({0, 1, 2, 7}, {2, 2}, device), w); });
    CHECK(contains(e, "embedding: id 7 at position [1, 1] of id tensor [2, 2] is out of range"));
    CHECK(contains(e, "(the number of rows of weight [3, 2])"));
    check_close(oar::embedding(ints({2, 0}, {2}, device), w), {4, 5, 0, 1});
  }
}

TEST_CASE("cross_entropy refuses a label outside [0, C) but accepts ignore_index") {
  for (const auto& device : test_devices()) {
    CAPTURE(device.str());
    // Two rows of 3 classes with equal logits: each row's loss is log(3).
    Tensor logits = Tensor::from_vector(std::vector<float>(6, 0.f), {2, 3}, device);
    std::string e = error_of([&] { oar::cross_entropy(logits, ints({1, 3}, {2}, device)); });
    CHECK(contains(e, "cross_entropy: label 3 at position [1] of label tensor [2] is out of range"));
    CHECK(contains(e, "expected 0 <= label < 3 (the number of classes along axis 1 of logits [2, 3]) or label == "
                      "ignore_index -100"));
    e = error_of([&] { oar::cross_entropy(logits, ints({-1, 0}, {2, 1}, device)); });
    CHECK(contains(e, "cross_entropy: label -1 at position [0, 0]"));
    // ignore_index rows are skipped: the mean is over the one valid row.
    check_close(oar::cross_entropy(logits, ints({-100, 2}, {2}, device)), {std::log(3.0)});
    check_close(oar::cross_entropy(logits, ints({5, 2}, {2}, device), false, -1, "mean", 5), {std::log(3.0)});
  }
}
