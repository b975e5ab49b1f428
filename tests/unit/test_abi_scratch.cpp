// ABI 1.1 kernel scratch memory (Note [Kernel scratch memory]) and error
// codes (Note [Error codes from plugins]), with the kernels of
// tests/plugins/scratch_plugin.c on its 4 MiB device "scratchdev".
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "oar/ir/executor.h"
#include "oar/ir/trace.h"
#include "runtime/runtime_state.h"
#include "test_util.h"

using oar::AllocatorStats;
using oar::Device;
using oar::DType;
using oar::ErrorCode;
using oar::Tensor;

namespace {

const Device kDev{"scratchdev", 0};

std::string scratch_plugin() {
  const char* dir = std::getenv("OAR_TEST_PLUGIN_DIR");
  REQUIRE(dir != nullptr);
  return std::string(dir) + "_abi/liboar_test_scratch.so";
}

// The global runtime (eager ops use it) with the scratch plugin loaded too.
oar::Runtime& runtime() {
  static oar::Runtime& rt = [] () -> oar::Runtime& {
    setenv("OAR_PLUGIN_PATH", scratch_plugin().c_str(), 1);
    return oar::Runtime::global();
  }();
  REQUIRE(rt.device_count("scratchdev") == 1);
  return rt;
}

Tensor iota(int64_t n, float start) {
  std::vector<float> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return Tensor::from_vector(v, {n}, kDev);
}

struct Caught {
  ErrorCode code = ErrorCode::internal;
  std::string message;  // empty: nothing was thrown
};
template <typename F>
Caught caught(F&& fn) {
  try {
    fn();
  } catch (const oar::Error& e) {
    return {e.code(), e.what()};
  }
  return {};
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("kernel scratch memory comes from the device's caching allocator and goes back to its cache") {
  oar::Runtime& rt = runtime();
  rt.empty_cache(kDev);
  Tensor a = iota(1000, 0), b = iota(1000, 1);  // 4000 bytes each: 4096-byte blocks
  AllocatorStats before = rt.allocator_stats(kDev);
  rt.reset_peak_stats(kDev);
  {
    Tensor y = a + b;  // the kernel takes 2 x 4000 bytes of scratch: one 8192-byte block
    std::vector<float> got = y.to_vector<float>();
    CHECK(got[0] == 1.0f);
    CHECK(got[999] == 1999.0f);
    AllocatorStats s = rt.allocator_stats(kDev);
    CHECK(s.allocated == before.allocated + 4096);                // only y is held
    CHECK(s.reserved == before.reserved + 4096 + 8192);           // the scratch block is cached
    CHECK(s.peak_allocated == before.allocated + 4096 + 8192);    // both were held during the kernel
    CHECK(s.num_device_mallocs == before.num_device_mallocs + 2);
  }
  // y's block and the scratch block are reused: no plugin malloc.
  AllocatorStats warm = rt.allocator_stats(kDev);
  Tensor z = b - a;
  CHECK(z.to_vector<float>() == std::vector<float>(1000, 1.0f));
  AllocatorStats s = rt.allocator_stats(kDev);
  CHECK(s.num_device_mallocs == warm.num_device_mallocs);
  CHECK(s.allocated == before.allocated + 4096);
}

TEST_CASE("the static executor's kernels get scratch memory too") {
  oar::Runtime& rt = runtime();
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + in[1]}; };
  oar::ir::Trace t = oar::ir::trace(fn, {{{1000}, DType::f32, "x"}, {{1000}, DType::f32, "y"}}, {}, kDev);
  oar::ir::Executor ex(t.program, kDev);
  Tensor a = iota(1000, 0), b = iota(1000, 5);
  CHECK(ex.run(std::vector<Tensor>{a, b}).at(0).to_vector<float>()[10] == 25.0f);  // 10 + 15
  AllocatorStats first = rt.allocator_stats(kDev);
  CHECK(ex.run(std::vector<Tensor>{a, b}).at(0).to_vector<float>()[999] == 2003.0f);
  AllocatorStats second = rt.allocator_stats(kDev);
  CHECK(second.allocated == first.allocated);  // the scratch went back
  CHECK(second.num_device_mallocs == first.num_device_mallocs);  // and was reused from the cache
}

TEST_CASE("scratch_alloc past the device's capacity raises out_of_memory, whatever the kernel returns") {
  oar::Runtime& rt = runtime();
  // Three 1.2 MB tensors fit in 4 MiB; the 2.4 MB of scratch does not.
  const int64_t n = 300000;
  Tensor a = iota(n, 0), b = iota(n, 0);
  uint64_t held = rt.allocator_stats(kDev).allocated;
  Caught add = caught([&] { a + b; });  // the kernel returns OAR_ERROR_OUT_OF_MEMORY
  CHECK(add.code == ErrorCode::out_of_memory);
  CHECK(contains(add.message, "add: kernel scratch memory: scratchdev:0: cannot allocate 2400256 bytes"));
  CHECK(contains(add.message, "scratchdev: 2400256 bytes requested"));
  Caught sub = caught([&] { a - b; });  // returns OAR_ERROR_INTERNAL, sets no message
  CHECK(sub.code == ErrorCode::out_of_memory);
  CHECK(contains(sub.message, "sub: kernel scratch memory: scratchdev:0: cannot allocate 2400256 bytes"));
  // Nothing leaked; the device still works.
  CHECK(rt.allocator_stats(kDev).allocated == held);
  Tensor small = iota(4, 0) + iota(4, 0);
  CHECK(small.to_vector<float>() == std::vector<float>{0, 2, 4, 6});
}

TEST_CASE("the code given to set_error is the exception's code (Note [Error codes from plugins])") {
  runtime();
  Tensor a = iota(3, 1), b = iota(3, 1);
  // set_error(INVALID_ARGUMENT, ...) then return OAR_ERROR_DEVICE: the code that came with the message.
  Caught mul = caught([&] { a* b; });
  CHECK(mul.code == ErrorCode::invalid_argument);
  CHECK(mul.message == "scratchdev mul: refuses its inputs on purpose");
  // No set_error: the returned status, with the host's sentence.
  Caught div = caught([&] { a / b; });
  CHECK(div.code == ErrorCode::out_of_memory);
  CHECK(div.message == "div: the scratchdev kernel failed with status 2");
  // set_error during a call that returns OAR_OK: success, and the message is not kept for later.
  Tensor n = oar::neg(a);
  CHECK(n.to_vector<float>() == std::vector<float>{-1, -2, -3});
  CHECK(caught([&] { a / b; }).message == "div: the scratchdev kernel failed with status 2");
  // A status the ABI does not define: internal, with the number.
  Caught max = caught([&] { oar::maximum(a, b); });
  CHECK(max.code == ErrorCode::internal);
  CHECK(max.message ==
        "scratchdev maximum: fails with a status the ABI lacks (the plugin returned status 42, which ABI 1 "
        "does not define)");
}

TEST_CASE("scratch_alloc finds the device through ctx->device_type, and refuses without a launch") {
  oar::RuntimeOptions options;
  options.plugin_path = scratch_plugin();
  options.search_default_dirs = false;
  oar::Runtime rt(options);
  REQUIRE(rt.state().host_tables.size() == 1);
  const OarHostApi& host = *rt.state().host_tables[0];
  REQUIRE(bool(host.scratch_alloc));
  OarKernelContext ctx{};
  ctx.struct_size = sizeof ctx;
  ctx.device_type = "scratchdev";
  ctx.op_name = "test";

  void* p = host.scratch_alloc(host.host, &ctx, 1000);
  REQUIRE(p != nullptr);
  CHECK(rt.allocator_stats(kDev).allocated == 1024);
  host.scratch_free(host.host, &ctx, p);
  CHECK(rt.allocator_stats(kDev).allocated == 0);
  CHECK(rt.allocator_stats(kDev).reserved == 1024);
  host.scratch_free(host.host, &ctx, p);  // freed twice: a warning, the stats stay right
  CHECK(rt.allocator_stats(kDev).allocated == 0);

  oar::host_clear_error();
  CHECK(host.scratch_alloc(host.host, &ctx, uint64_t{8} << 20) == nullptr);
  oar::PluginFailure oom = oar::host_take_failure(OAR_ERROR_INTERNAL);
  CHECK(oom.code == ErrorCode::out_of_memory);
  CHECK(contains(oom.message, "test: kernel scratch memory: scratchdev:0: cannot allocate 8388608 bytes"));

  ctx.device_type = "nodev";
  CHECK(host.scratch_alloc(host.host, &ctx, 16) == nullptr);
  oar::PluginFailure unknown = oar::host_take_failure(OAR_ERROR_INTERNAL);
  CHECK(unknown.code == ErrorCode::invalid_argument);
  CHECK(contains(unknown.message, "scratch_alloc: device type 'nodev' of the kernel context is not one this host provides"));

  // A 1.0-sized context has no device_type; outside a launch there is no device to use.
  ctx.struct_size = OAR_STRUCT_SIZE(OarKernelContext, op_name);
  CHECK(host.scratch_alloc(host.host, &ctx, 16) == nullptr);
  oar::PluginFailure outside = oar::host_take_failure(OAR_ERROR_INTERNAL);
  CHECK(outside.code == ErrorCode::invalid_argument);
  CHECK(contains(outside.message, "scratch_alloc: called outside a kernel launch"));
  // Inside a launch of scratchdev:0 the same context works.
  {
    oar::LaunchScope scope(*rt.state().find("scratchdev"), 0);
    void* q = host.scratch_alloc(host.host, &ctx, 16);
    CHECK(q != nullptr);
    CHECK(rt.allocator_stats(kDev).allocated == 512);
    host.scratch_free(host.host, &ctx, q);
  }
  CHECK(rt.allocator_stats(kDev).allocated == 0);
}
