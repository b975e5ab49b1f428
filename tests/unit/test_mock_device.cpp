// The mock accelerator behaves like a real device: separate memory reached
// through copies, a capacity whose excess is an exception, streams on worker
// threads (so a missing synchronization shows), and collectives across its
// devices and across processes. This binary runs with OAR_MOCK_MEMORY_MB=64.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <thread>

#include "oar/distributed.h"
#include "test_util.h"

using oar::Device;
using oar::DType;
using oar::Tensor;
using oar::distributed::Communicator;
using oar::distributed::ReduceOp;

namespace {
const Device kMock0{"mock", 0};
const Device kMock1{"mock", 1};
const Device kCpu{"cpu", 0};
}  // namespace

TEST_CASE("mock: the default device is cpu; the mock has 2 devices and is not host-addressable") {
  auto& rt = oar::Runtime::global();
  CHECK(rt.default_device() == kCpu);
  CHECK(rt.device_count("mock") == 2);
  oar::DeviceInfo info = rt.device_info(kMock1);
  CHECK((info.flags & OAR_DEVICE_HOST_ADDRESSABLE) == 0);
  CHECK(info.total_memory == 64ull << 20);
}

TEST_CASE("mock: allocating past capacity is an out-of-memory exception and the device keeps working") {
  auto& rt = oar::Runtime::global();
  oar::Error error(oar::ErrorCode::internal, "");
  bool thrown = false;
  try {
    Tensor big = oar::zeros({100 << 20}, DType::u8, kMock0);  // 100 MiB > 64 MiB
  } catch (const oar::Error& e) {
    thrown = true;
    error = e;
  }
  REQUIRE(thrown);
  CHECK(error.code() == oar::ErrorCode::out_of_memory);
  CHECK(std::string(error.what()).find("mock:0: cannot allocate") == 0);

  // Fill most of the device, free it, and allocate again: the cache is reused
  // or released, never leaked.
  for (int round = 0; round < 3; ++round) {
    Tensor a = oar::full({10 << 20}, 1.0, DType::f32, kMock0);  // 40 MiB
    CHECK(oar::sum(a).item() == doctest::Approx(10 << 20));
  }
  Tensor b = oar::full({12 << 20}, 2.0, DType::f32, kMock0);  // 48 MiB: needs the cache emptied
  CHECK(oar::max(b).item() == 2.0);
  b = Tensor();
  rt.empty_cache(kMock0);
  CHECK(rt.allocator_stats(kMock0).allocated == 0);
}

TEST_CASE("mock: the caching allocator reuses blocks and tracks its peak") {
  auto& rt = oar::Runtime::global();
  rt.empty_cache(kMock1);
  rt.reset_peak_stats(kMock1);
  uint64_t mallocs = rt.allocator_stats(kMock1).num_device_mallocs;
  for (int i = 0; i < 5; ++i) {
    Tensor t = oar::ones({1000}, DType::f32, kMock1);
    CHECK(rt.allocator_stats(kMock1).allocated >= 4000);
  }
  CHECK(rt.allocator_stats(kMock1).num_device_mallocs == mallocs + 1);
  CHECK(rt.allocator_stats(kMock1).allocated == 0);
  CHECK(rt.allocator_stats(kMock1).peak_allocated >= 4000);
  CHECK(rt.allocator_stats(kMock1).reserved >= 4000);
}

TEST_CASE("mock: a host read waits for queued kernels on the compute stream") {
  // A slow reference matmul is still running on the mock's stream worker when
  // the host asks for the result: without the dispatcher's synchronization
  // the copy would return memory the kernel has not written yet.
  for (int round = 0; round < 3; ++round) {
    Tensor a = oar::full({192, 192}, 1.0, DType::f32, kMock0);
    Tensor b = oar::full({192, 192}, 0.5, DType::f32, kMock0);
    Tensor c = oar::matmul(oar::matmul(a, b), b);  // every element: 192*0.5*192*0.5 = 9216
    std::vector<float> v = c.to_vector<float>();
    CHECK(v.front() == 9216.0f);
    CHECK(v.back() == 9216.0f);
  }
  // A block freed while a kernel still reads it is reused by a host upload:
  // the upload must be ordered after the kernel.
  for (int round = 0; round < 3; ++round) {
    Tensor a = oar::full({256, 256}, 2.0, DType::f32, kMock0);
    Tensor s = oar::matmul(a, a);
    a = Tensor();  // a's block returns to the cache while matmul may run
    std::vector<float> host(256 * 256, 7.0f);
    Tensor fresh = Tensor::from_vector(host, {256, 256}, kMock0);
    CHECK(s.to_vector<float>()[0] == 1024.0f);
    CHECK(oar::sum(fresh).item() == doctest::Approx(7.0 * 256 * 256));
  }
}

TEST_CASE("mock: copies between mock devices, the cpu and the host") {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, kMock0);
  Tensor y = (x * 2.0).to(kMock1);
  CHECK(y.device() == kMock1);
  Tensor z = (y + 1.0).to(kCpu);
  CHECK(z.device() == kCpu);
  CHECK(z.to_vector<float>() == std::vector<float>{3, 5, 7, 9, 11, 13});
  Tensor back = z.to(kMock0);
  CHECK(oar::sum(back).item() == 48.0);
  CHECK(oar_test::error_of([&] { oar::add(x, y); }).find("input 0 is on mock:0 but input 1 is on mock:1") !=
        std::string::npos);
  CHECK(oar_test::error_of([&] { x.to(Device{"mock", 9}); }).find("device 'mock:9' is not present") == 0);
}

TEST_CASE("mock: collectives across its two devices in one process") {
  oar::InProcessStore store;
  Communicator c0(kMock0, 2, 0, store, "test/inproc");
  Communicator c1(kMock1, 2, 1, store, "test/inproc");
  Tensor a0 = Tensor::from_vector<float>({1, 2, 3}, {3}, kMock0);
  Tensor a1 = Tensor::from_vector<float>({10, 20, 30}, {3}, kMock1);

  c0.all_reduce(a0, ReduceOp::sum);
  c1.all_reduce(a1, ReduceOp::sum);
  CHECK(a0.to_vector<float>() == std::vector<float>{11, 22, 33});
  CHECK(a1.to_vector<float>() == std::vector<float>{11, 22, 33});

  Tensor m0 = Tensor::from_vector<int64_t>({5, -1}, {2}, kMock0);
  Tensor m1 = Tensor::from_vector<int64_t>({2, 7}, {2}, kMock1);
  c0.all_reduce(m0, ReduceOp::max);
  c1.all_reduce(m1, ReduceOp::max);
  CHECK(m1.to_vector<int64_t>() == std::vector<int64_t>{5, 7});
  c0.all_reduce(m0, ReduceOp::prod);
  c1.all_reduce(m1, ReduceOp::prod);
  CHECK(m0.to_vector<int64_t>() == std::vector<int64_t>{25, 49});
  c0.all_reduce(m0, ReduceOp::min);
  c1.all_reduce(m1, ReduceOp::min);
  CHECK(m0.to_vector<int64_t>() == std::vector<int64_t>{25, 49});

  Tensor g0 = c0.all_gather(Tensor::from_vector<float>({1, 2}, {2}, kMock0));
  Tensor g1 = c1.all_gather(Tensor::from_vector<float>({3, 4}, {2}, kMock1));
  CHECK(g0.shape() == oar::Shape{2, 2});
  CHECK(g1.to_vector<float>() == std::vector<float>{1, 2, 3, 4});

  Tensor r0 = c0.reduce_scatter(Tensor::from_vector<float>({1, 2, 3, 4}, {4}, kMock0));
  Tensor r1 = c1.reduce_scatter(Tensor::from_vector<float>({10, 20, 30, 40}, {4}, kMock1));
  CHECK(r0.to_vector<float>() == std::vector<float>{11, 22});
  CHECK(r1.to_vector<float>() == std::vector<float>{33, 44});

  Tensor b0 = Tensor::from_vector<float>({0, 0}, {2}, kMock0);
  Tensor b1 = Tensor::from_vector<float>({8, 9}, {2}, kMock1);
  c0.broadcast(b0, 1);
  c1.broadcast(b1, 1);
  CHECK(b0.to_vector<float>() == std::vector<float>{8, 9});

  Tensor s = Tensor::from_vector<float>({4, 5, 6}, {3}, kMock0);
  Tensor r = oar::zeros({3}, DType::f32, kMock1);
  c0.send(s, 1);
  c1.recv(r, 0);
  CHECK(r.to_vector<float>() == std::vector<float>{4, 5, 6});
  std::thread t([&] { c1.barrier(); });
  c0.barrier();
  t.join();
}

TEST_CASE("mock: a collective whose peer never arrives times out with a sentence naming the rank") {
  oar::InProcessStore store;
  Communicator lonely(kMock0, 2, 0, store, "test/timeout", 300);
  Tensor x = oar::ones({4}, DType::f32, kMock0);
  lonely.all_reduce(x);
  std::string message = oar_test::error_of([&] { x.to_vector<float>(); });
  CHECK(message.find("1") != std::string::npos);
  CHECK(message.find("all_reduce") != std::string::npos);
  // The device still works afterwards.
  CHECK(oar::sum(oar::ones({4}, DType::f32, kMock0)).item() == 4.0);
}

// Rank body for the cross-process test; runs only when the parent sets the env.
TEST_CASE("mock collective worker (runs only as a child process)") {
  const char* rank_env = std::getenv("OAR_TEST_RANK");
  if (!rank_env) return;
  int rank = std::atoi(rank_env);
  oar::FileStore store(std::getenv("OAR_TEST_STORE"));
  Communicator comm(Device{"mock", rank}, 2, rank, store, "test/procs", 20000);
  Tensor x = Tensor::from_vector<float>({float(rank + 1), float(10 * (rank + 1))}, {2}, Device{"mock", rank});
  comm.all_reduce(x);
  std::vector<float> v = x.to_vector<float>();
  REQUIRE(v == std::vector<float>{3, 30});
  Tensor g = comm.all_gather(Tensor::from_vector<int32_t>({rank}, {1}, Device{"mock", rank}));
  REQUIRE(g.to_vector<int32_t>() == std::vector<int32_t>{0, 1});
}

TEST_CASE("mock: collectives across two processes through a file store") {
  if (std::getenv("OAR_TEST_RANK")) return;
  std::string dir = std::filesystem::temp_directory_path() / ("oar_store_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  REQUIRE(n > 0);
  self[n] = 0;
  std::string child = std::string(self) + " --test-case='mock collective worker*' --no-version=true";
  std::string command = "OAR_TEST_STORE=" + dir + " OAR_TEST_RANK=0 " + child + " > " + dir + ".r0 2>&1 & " +
                        "OAR_TEST_STORE=" + dir + " OAR_TEST_RANK=1 " + child + " > " + dir + ".r1 2>&1; s1=$?; " +
                        "wait $!; s0=$?; exit $((s0 + s1))";
  int status = std::system(command.c_str());
  if (status != 0) {
    std::system(("cat " + dir + ".r0 " + dir + ".r1").c_str());
  }
  CHECK(status == 0);
  std::filesystem::remove_all(dir);
  std::filesystem::remove(dir + ".r0");
  std::filesystem::remove(dir + ".r1");
}
