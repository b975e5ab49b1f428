// In-place writes (Note [In-place writes] in core/src/tensor/inplace.cpp):
// Tensor::assign_ writes through a view into its base, broadcasts and casts
// its source, bumps the storage version, and autograd refuses a saved
// tensor that was overwritten (Note [Version counter]).
#include "dispatch/device_context.h"
#include "test_util.h"

using oar::DType;
using oar::Shape;
using oar::Tensor;
using oar_test::check_close;
using oar_test::test_devices;

namespace {
Tensor iota(const Shape& shape, const oar::Device& d) {
  std::vector<float> v(static_cast<size_t>(oar::shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return Tensor::from_vector(v, shape, d);
}
}  // namespace

TEST_CASE("assign_ writes through views into the base's memory") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor x = iota({2, 3}, device);  // [[0 1 2] [3 4 5]]
    CHECK(x.version() == 0);
    oar::transpose(x, {1, 0}).assign_(Tensor::from_vector(std::vector<float>{10, 20, 30, 40, 50, 60}, {3, 2}, device));
    check_close(x, {10, 30, 50, 20, 40, 60});
    CHECK(x.version() == 1);
    oar::slice(x, {1}, {0}, {3}, {2}).assign_(Tensor::from_vector(std::vector<double>{-1}, {1}, device));  // cast, broadcast
    check_close(x, {-1, 30, -1, -1, 40, -1});
    Tensor row = oar::slice(x, {0}, {1}, {2}, {1});
    row.assign_(oar::slice(x, {0}, {0}, {1}, {1}));  // overlapping memory: the source is read first
    check_close(x, {-1, 30, -1, -1, 30, -1});
    CHECK(x.version() == 3);
    CHECK_THROWS_WITH_AS(x.assign_(iota({4}, device)), doctest::Contains("does not broadcast"), oar::Error);
    CHECK_THROWS_WITH_AS(oar::broadcast_to(iota({1, 3}, device), {2, 3}).assign_(iota({3}, device)),
                         doctest::Contains("broadcast view"), oar::Error);
  }
}

TEST_CASE("backward refuses a saved tensor written in place, naming the op that saved it") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor x = iota({3}, device);
    x.set_requires_grad();
    Tensor y = oar::exp(x);
    Tensor z = oar::sum(y, {0}, false);
    oar::Tensor plain = y.detach();
    plain.assign_(iota({3}, device));  // y's memory, behind autograd's back
    CHECK_THROWS_WITH_AS(z.backward(), doctest::Contains("output 0 of 'exp'"), oar::Error);
  }
}

TEST_CASE("recording an op on a tensor whose memory was written through another handle is an error") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    Tensor x = iota({3}, device);
    x.set_requires_grad();
    Tensor y = oar::exp(x);
    y.detach().assign_(iota({3}, device));
    CHECK_THROWS_WITH_AS(oar::exp(y), doctest::Contains("its memory has since been written in place"), oar::Error);
    Tensor fresh = oar::with_history(y, y);  // the handle an in-place write leaves: stamped with the new version
    CHECK_NOTHROW(oar::exp(fresh));
  }
}

TEST_CASE("without a copy kernel for strided outputs, assign_ writes strided views through host memory") {
  for (const auto& device : test_devices()) {
    INFO(device.str());
    // White-box: hide the flag of the device's copy kernels, then restore it.
    auto& kernels = oar::backend_of(device).kernels_by_op[static_cast<size_t>(oar::OpRegistry::instance().get("copy").id)];
    std::vector<uint32_t> saved;
    for (auto& k : kernels) {
      saved.push_back(k.flags);
      k.flags &= ~static_cast<uint32_t>(OAR_KERNEL_STRIDED_OUTPUT);
    }
    Tensor x = iota({3, 4}, device);
    oar::slice(oar::transpose(x, {1, 0}), {0, 1}, {1, 0}, {4, 3}, {2, 2})
        .assign_(Tensor::from_vector(std::vector<float>{-1, -2, -3, -4}, {2, 2}, device));
    // x^T rows 1 and 3, columns 0 and 2: x[0][1] x[2][1] x[0][3] x[2][3]
    check_close(x, {0, -1, 2, -3, 4, 5, 6, 7, 8, -2, 10, -4});
    CHECK(x.version() == 1);
    for (size_t i = 0; i < kernels.size(); ++i) kernels[i].flags = saved[i];
  }
}
