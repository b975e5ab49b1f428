// The to_static trace cache (ir::TraceCache, Note [Trace cache] in
// compiled_function.cpp), which oar.jit.to_static is a thin layer over:
// spec matching, the specs a new trace uses, lookup by key and specs, LRU
// eviction and the trace count; a cached trace runs its program.
#include "oar/ir/compiled_function.h"
#include "oar/ir/printer.h"
#include "test_util.h"

using namespace oar;
using oar_test::check_close;
using oar_test::error_of;

namespace {

Tensor f32(const std::vector<float>& v, const Shape& shape) {
  return Tensor::from_vector(v, shape, Device{"cpu", 0});
}

// A trace of x -> x * factor for `spec`, ready to insert under `key`.
ir::CachedTrace trace_of(const ir::InputSpec& spec, double factor, ir::TraceKey key) {
  ir::TracedFunction fn = [factor](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * factor}; };
  ir::Trace t = ir::trace(fn, {spec}, {}, key.device);
  ir::CachedTrace entry;
  entry.specs = t.specs;
  entry.program = std::make_shared<ir::Program>(std::move(t.program));
  entry.function = std::make_shared<ir::CompiledFunction>(*entry.program, key.device);
  entry.structure = "tensor";
  entry.key = std::move(key);
  return entry;
}

}  // namespace

TEST_CASE("TraceCache: a spec accepts equal dtype and rank with every dim equal or dynamic") {
  Tensor x = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(ir::spec_accepts({{2, 3}, DType::f32, ""}, x));
  CHECK(ir::spec_accepts({{-1, 3}, DType::f32, ""}, x));
  CHECK(ir::spec_accepts({{-1, -1}, DType::f32, ""}, x));
  CHECK_FALSE(ir::spec_accepts({{-1, 4}, DType::f32, ""}, x));     // a static dim differs
  CHECK_FALSE(ir::spec_accepts({{-1, 3}, DType::f64, ""}, x));     // dtype
  CHECK_FALSE(ir::spec_accepts({{-1, 3, 1}, DType::f32, ""}, x));  // rank
  std::vector<ir::InputSpec> two = {{{-1, 3}, DType::f32, "a"}, {{2, 3}, DType::f32, "b"}};
  std::vector<Tensor> xx = {x, x};
  CHECK(ir::specs_accept(two, xx));
  CHECK_FALSE(ir::specs_accept(two, std::vector<Tensor>{x}));  // counts differ
}

TEST_CASE("TraceCache: a new trace keeps the declared specs when they accept the call, else the exact shapes") {
  Tensor x = f32({1, 2, 3, 4, 5, 6}, {3, 2});
  std::vector<ir::InputSpec> declared = {{{-1, 2}, DType::f32, "x"}};
  std::vector<ir::InputSpec> same = ir::TraceCache::specs_for(declared, std::vector<Tensor>{x}, "to_static(f)");
  REQUIRE(same.size() == 1);
  CHECK(same[0].shape == std::vector<int64_t>{-1, 2});  // the dynamic dim stays dynamic

  std::vector<ir::InputSpec> rejecting = {{{-1, 4}, DType::f32, "x"}};
  std::vector<ir::InputSpec> exact = ir::TraceCache::specs_for(rejecting, std::vector<Tensor>{x}, "to_static(f)");
  REQUIRE(exact.size() == 1);
  CHECK(exact[0].shape == std::vector<int64_t>{3, 2});
  CHECK(exact[0].dtype == DType::f32);
  CHECK(exact[0].name == "x");

  CHECK(error_of([&] { ir::TraceCache::specs_for(declared, std::vector<Tensor>{x, x}, "to_static(f)"); })
            .find("to_static(f): input_spec has 1 specs but the call passes 2 tensors") != std::string::npos);
}

TEST_CASE("TraceCache: lookup matches the key and the specs, keeps the most recently used and counts traces") {
  const Device cpu{"cpu", 0};
  ir::TraceCache cache(2);
  const ir::TraceKey plain{1, {}, cpu};
  Tensor x23 = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(cache.lookup(plain, std::vector<Tensor>{x23}) == nullptr);
  CHECK(cache.latest() == nullptr);

  auto a = cache.insert(trace_of({{-1, 3}, DType::f32, "x"}, 2.0, plain));
  CHECK(a->id != 0);
  CHECK(cache.trace_count() == 1);
  // The dynamic batch dim: another batch size finds the same trace.
  Tensor x43 = f32({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {4, 3});
  CHECK(cache.lookup(plain, std::vector<Tensor>{x43}) == a);
  // Other arguments, another mode or another dtype do not.
  CHECK(cache.lookup({2, {}, cpu}, std::vector<Tensor>{x23}) == nullptr);
  CHECK(cache.lookup({1, {true}, cpu}, std::vector<Tensor>{x23}) == nullptr);
  CHECK(cache.lookup(plain, std::vector<Tensor>{cast(x23, DType::f64)}) == nullptr);
  CHECK(cache.lookup({1, {}, Device{"mock", 0}}, std::vector<Tensor>{x23.to(Device{"mock", 0})}) == nullptr);

  // The cached trace runs its program: x * 2.
  check_close((*a->function)(std::vector<Tensor>{x23}, {})[0], {2, 4, 6, 8, 10, 12});

  // Capacity 2: b, then a lookup of a (now the most recently used), then c
  // drops b, the least recently used.
  const ir::TraceKey train{1, {true, false}, cpu};
  auto b = cache.insert(trace_of({{2, 3}, DType::f32, "x"}, 3.0, train));
  CHECK(cache.latest() == b);
  CHECK(cache.lookup(plain, std::vector<Tensor>{x23}) == a);
  CHECK(cache.latest() == a);
  auto c = cache.insert(trace_of({{-1, 3}, DType::f32, "x"}, 4.0, {3, {}, cpu}));
  CHECK(cache.size() == 2);
  CHECK(cache.trace_count() == 3);
  std::vector<std::shared_ptr<const ir::CachedTrace>> held = cache.entries();
  REQUIRE(held.size() == 2);
  CHECK(held[0] == c);
  CHECK(held[1] == a);
  CHECK(cache.lookup(train, std::vector<Tensor>{x23}) == nullptr);  // b was dropped
  CHECK(a->id != b->id);
  CHECK(b->id != c->id);
  CHECK(ir::to_string(*c->program).find("input %x: f32[-1, 3]") != std::string::npos);
}
