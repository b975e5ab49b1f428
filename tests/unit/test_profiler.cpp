// The trace recorder (Note [Trace recorder] in core/src/runtime/profiler.cpp):
// off records nothing, scopes nest, eager ops carry their kernel and the
// bytes they allocated, and two threads record at once.
#include <algorithm>
#include <memory>
#include <thread>

#include "oar/profiler.h"
#include "test_util.h"

using namespace oar;
using oar_test::check_close;
namespace prof = oar::profiler;

namespace {

// Restores the recorder's state (off, no events) around a test case.
struct Fresh {
  Fresh() {
    prof::stop();
    prof::collect();
  }
  ~Fresh() {
    prof::stop();
    prof::collect();
  }
};

const prof::Event* find(const std::vector<prof::Event>& events, const std::string& name,
                        const std::string& category) {
  for (const auto& e : events)
    if (e.name == name && e.category == category) return &e;
  return nullptr;
}

bool inside(const prof::Event& inner, const prof::Event& outer) {
  return inner.thread == outer.thread && inner.start_ns >= outer.start_ns &&
         inner.end_ns <= outer.end_ns;
}

}  // namespace

TEST_CASE("profiler: off records nothing") {
  Fresh fresh;
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}, Device{"cpu", 0});
  Tensor c = matmul(a, a);
  { prof::RecordEvent user("user", "UserDefined"); }
  CHECK(prof::collect().empty());
  CHECK_FALSE(prof::recording());
}

TEST_CASE("profiler: user scopes nest and end once") {
  Fresh fresh;
  prof::start();
  {
    prof::RecordEvent outer("outer", "UserDefined");
    { prof::RecordEvent inner("inner", "UserDefined"); }
    prof::RecordEvent manual;
    manual.begin("manual", "UserDefined");
    CHECK(manual.active());
    manual.end();
    manual.end();  // idempotent
    CHECK_FALSE(manual.active());
  }
  prof::stop();
  auto events = prof::collect();
  REQUIRE(events.size() == 3);
  // in order of their end: inner, manual, outer
  CHECK(events[0].name == "inner");
  CHECK(events[1].name == "manual");
  CHECK(events[2].name == "outer");
  CHECK(inside(events[0], events[2]));
  CHECK(inside(events[1], events[2]));
  CHECK(events[0].end_ns >= events[0].start_ns);
  CHECK(events[2].device.empty());
  CHECK(events[2].stream == -1);
  CHECK(prof::collect().empty());  // collect moved them out
}

TEST_CASE("profiler: a scope open at stop is recorded, one begun after is not") {
  Fresh fresh;
  prof::start();
  auto open = std::make_unique<prof::RecordEvent>("open", "UserDefined");
  prof::stop();
  { prof::RecordEvent late("late", "UserDefined"); }
  open.reset();
  auto events = prof::collect();
  REQUIRE(events.size() == 1);
  CHECK(events[0].name == "open");
}

TEST_CASE("profiler: an eager op holds its kernel, device, stream and allocated bytes") {
  Fresh fresh;
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, Device{"cpu", 0});
  Tensor b = Tensor::from_vector<float>({1, 0, 0, 1, 1, 1}, {3, 2}, Device{"cpu", 0});
  prof::start();
  Tensor c = matmul(a, b);
  prof::stop();
  check_close(c, {4, 5, 10, 11});
  auto events = prof::collect();
  const prof::Event* op = find(events, "matmul", "Operator");
  const prof::Event* kernel = find(events, "matmul", "Kernel");
  REQUIRE(op);
  REQUIRE(kernel);
  CHECK(inside(*kernel, *op));
  CHECK(op->device == "cpu:0");
  CHECK(kernel->device == "cpu:0");
  CHECK(op->stream == 0);
  CHECK(kernel->stream == 0);
  CHECK(op->bytes >= 2 * 2 * 4);  // the [2, 2] float32 output
  CHECK(kernel->bytes == 0);      // the output was allocated before the launch
  CHECK(op->thread == prof::thread_id());
  CHECK(op->input_shapes.empty());  // not asked for

  prof::start(/*record_shapes=*/true);
  matmul(a, b);
  prof::stop();
  events = prof::collect();
  op = find(events, "matmul", "Operator");
  REQUIRE(op);
  CHECK(op->input_shapes == "[[2, 3], [3, 2]]");
  CHECK(op->input_dtypes == "[float32, float32]");
}

TEST_CASE("profiler: two threads record at once, each with its own id") {
  Fresh fresh;
  constexpr int kPerThread = 200;
  prof::start();
  auto work = [](const char* name) {
    for (int i = 0; i < kPerThread; ++i) {
      prof::RecordEvent outer(name, "UserDefined");
      prof::RecordEvent inner(std::string(name) + "/inner", "UserDefined");
    }
  };
  std::thread t1(work, "t1"), t2(work, "t2");
  t1.join();
  t2.join();
  prof::stop();
  auto events = prof::collect();
  REQUIRE(events.size() == 4 * kPerThread);
  uint64_t id1 = 0, id2 = 0;
  int n1 = 0, n2 = 0;
  for (const auto& e : events) {
    bool first = e.name.rfind("t1", 0) == 0;
    uint64_t& id = first ? id1 : id2;
    if (id == 0) id = e.thread;
    CHECK(e.thread == id);
    (first ? n1 : n2)++;
  }
  CHECK(n1 == 2 * kPerThread);
  CHECK(n2 == 2 * kPerThread);
  CHECK(id1 != id2);
}
