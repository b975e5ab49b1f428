// Out-of-range labels and classes in traced programs (Note [Index values] in
// core/src/ops/op_util.h): the program's check_index op refuses them when it
// runs, naming the user's op and the value, on every device; good values pass
// through unchanged.
#include "oar/ir/executor.h"
#include "oar/ir/trace.h"
#include "test_util.h"

using namespace oar;
using oar_test::check_close;
using oar_test::error_of;
using oar_test::values;

namespace {

Tensor labels(const std::vector<int64_t>& v, const Device& d) {
  return Tensor::from_vector<int64_t>(v, {static_cast<int64_t>(v.size())}, d);
}

}  // namespace

TEST_CASE("a traced cross_entropy refuses an out-of-range label when the program runs") {
  for (const Device& dev : oar_test::test_devices()) {
    INFO("device " << dev.str());
    auto loss = [](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{oar::cross_entropy(in[0], in[1], false, -1, "none", -100)};
    };
    ir::Trace t = ir::trace(loss, {{{-1, 3}, DType::f32, "logits"}, {{-1}, DType::i64, "label"}}, {}, dev);
    ir::Executor ex(t.program, dev);
    Tensor logits = Tensor::from_vector<float>({1, 2, 3, 0, 0, 0}, {2, 3}, dev);
    // Good labels (and ignore_index) give the eager loss.
    std::vector<Tensor> got = ex.run(std::vector<Tensor>{logits, labels({2, -100}, dev)});
    check_close(values(got[0]), values(loss({logits, labels({2, -100}, dev)})[0]));
    std::string e = error_of([&] {
      std::vector<Tensor> out = ex.run(std::vector<Tensor>{logits, labels({0, 3}, dev)});
      values(out[0]);  // an asynchronous device reports at the next synchronize
    });
    CHECK(e.find("cross_entropy: label 3 at flat position 1 of label tensor [2] is out of range") != std::string::npos);
    CHECK(e.find("expected 0 <= label < 3") != std::string::npos);
    e = error_of([&] { values(ex.run(std::vector<Tensor>{logits, labels({-1, 0}, dev)})[0]); });
    CHECK(e.find("cross_entropy: label -1 at flat position 0") != std::string::npos);
  }
}

TEST_CASE("check_index: eager values are checked on the host, traced ones by the op") {
  for (const Device& dev : oar_test::test_devices()) {
    INFO("device " << dev.str());
    std::string e = error_of([&] { oar::check_index(labels({1, 4, 0}, dev), 4, "one_hot", "class", "num_classes"); });
    CHECK(e == "one_hot: class 4 at position [1] of class tensor [3] is out of range; expected 0 <= class < 4 "
               "(num_classes)");
    CHECK(values(oar::check_index(labels({1, 3}, dev), 4, "one_hot")) == std::vector<double>{1, 3});
    auto f = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{oar::check_index(in[0], 4, "one_hot", "class")}; };
    ir::Trace t = ir::trace(f, {{{-1}, DType::i64, "x"}}, {}, dev);
    ir::Executor ex(t.program, dev);
    CHECK(values(ex.run(std::vector<Tensor>{labels({3, 0, 2}, dev)})[0]) == std::vector<double>{3, 0, 2});
    e = error_of([&] { values(ex.run(std::vector<Tensor>{labels({3, 9}, dev)})[0]); });
    CHECK(e.find("one_hot: class 9 at flat position 1 of class tensor [2] is out of range; expected 0 <= class < 4") !=
          std::string::npos);
  }
}
