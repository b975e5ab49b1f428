// Internal declarations of the mock accelerator plugin (liboar_mock.so).
//
// Note [Mock accelerator]
// The mock is the reference device: every primitive kernel as a plain loop,
// and a runtime that behaves like a discrete accelerator so host code that
// cheats fails loudly:
//  - Device memory is a separate space. Blocks are real host memory, but the
//    pointer handed out is `real ^ kPointerTag`, a non-canonical x86-64
//    address: any host dereference faults. The plugin translates back and
//    checks that every access lies inside a live block of the right device.
//  - New and freed memory reads as 0xCD bytes. Freed blocks are poisoned and
//    kept in a short quarantine before release, so a late kernel reads poison
//    instead of corrupting the heap.
//  - Every stream (and each device's default stream, NULL) runs its work on
//    its own worker thread, in FIFO order. Errors met while running are
//    sticky on the stream until the next stream/device synchronize.
#ifndef OAR_PLUGINS_MOCK_MOCK_INTERNAL_H
#define OAR_PLUGINS_MOCK_MOCK_INTERNAL_H

#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "oar/plugin.hpp"  // the SDK layer: errors, dtypes, attributes, kernel table

namespace oar_mock {

/// XOR-ed into every device address handed to the host.
constexpr uint64_t kPointerTag = 0xA000000000000000ull;
/// Byte that fills new and freed device memory.
constexpr unsigned char kPoisonByte = 0xCD;

// ------------------------------------------------------------------------
// Errors, formatting, dtypes: the SDK's (sdk/include/oar/plugin.hpp)
// ------------------------------------------------------------------------

namespace op = oar::plugin;
using op::dtype_name;
using op::Element;
using op::fail;
using op::kAllDtypes;
using op::kComplexDtypes;
using op::kFloatDtypes;
using op::kNumericDtypes;
using op::format;
using op::shape_str;
using op::visit_all;
using op::visit_complex;
using op::visit_float;
using op::visit_numeric;

// ------------------------------------------------------------------------
// Streams and events
// ------------------------------------------------------------------------

/// A unit of work on a stream. Returns OAR_OK or a code with `error` set.
using Task = std::function<OarStatus(std::string& error)>;

/// One in-order queue with its own worker thread (started on first use).
class Stream {
 public:
  explicit Stream(int32_t device) : device_(device) {}
  ~Stream();  // drains the queue, then joins the worker
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  int32_t device() const { return device_; }
  void enqueue(Task task);
  /// Blocks until everything enqueued so far has run.
  void wait_idle();
  bool idle();
  /// Returns and clears the sticky error (OAR_OK when none).
  OarStatus take_error(std::string* message);

 private:
  void run();

  int32_t device_;
  std::mutex mu_;
  std::condition_variable work_cv_, idle_cv_;
  std::deque<Task> queue_;
  uint64_t enqueued_ = 0, completed_ = 0;
  bool stop_ = false;
  OarStatus sticky_ = OAR_OK;
  std::string sticky_message_;
  std::thread worker_;
};

/// An event: record() bumps `recorded`; the stream marks it completed.
struct Event {
  int32_t device = 0;
  std::mutex mu;
  std::condition_variable cv;
  uint64_t recorded = 0;   // generation of the latest record
  uint64_t completed = 0;  // highest generation reached by its stream
};

// ------------------------------------------------------------------------
// Devices and memory
// ------------------------------------------------------------------------

struct Block {
  uint64_t bytes = 0;  // requested size
};

struct Device {
  int32_t index = 0;
  uint64_t capacity = 0;
  uint64_t used = 0;
  std::map<uintptr_t, Block> blocks;                   // by real address
  std::shared_ptr<Stream> default_stream;              // owned
  std::map<Stream*, std::shared_ptr<Stream>> streams;  // created streams
};

/// The whole plugin state; one per init, deleted by shutdown.
struct Plugin {
  const OarHostApi* host = nullptr;
  uint64_t memory_mb = 1024;
  std::mutex mu;  // guards devices' block and stream maps, events, quarantine
  std::vector<std::unique_ptr<Device>> devices;
  std::map<Event*, std::shared_ptr<Event>> events;
  std::deque<std::pair<void*, uint64_t>> quarantine;  // freed, poisoned
  uint64_t quarantine_bytes = 0;
};

extern Plugin* g_plugin;

/// The stream a call names (NULL: the device's default), or nullptr after
/// reporting an error that names `what`.
std::shared_ptr<Stream> find_stream(int32_t device, OarStream_t stream, const char* what);
/// True when `device` is a valid index; reports an error naming `what` otherwise.
bool check_device(int32_t device, const char* what);
/// Host address of device pointer `ptr` when [ptr, ptr + bytes) lies inside a
/// live block of `device`; nullptr after reporting an error naming `what`.
char* translate(int32_t device, const void* ptr, uint64_t bytes, const char* what);
/// True when `ptr` carries the device tag (a mock device address).
inline bool is_device_pointer(const void* ptr) {
  return (reinterpret_cast<uintptr_t>(ptr) >> 60) == (kPointerTag >> 60);
}

// ------------------------------------------------------------------------
// Kernels: views, dtypes, launches
// ------------------------------------------------------------------------

/// A tensor view translated to host addresses, safe to copy into a task.
struct View {
  char* base = nullptr;  // element 0 (byte_offset applied); null when empty
  int32_t dtype = 0;
  int32_t ndim = 0;
  int64_t shape[OAR_MAX_NDIM] = {};
  int64_t strides[OAR_MAX_NDIM] = {};  // elements

  int64_t numel() const {
    int64_t n = 1;
    for (int32_t d = 0; d < ndim; ++d) n *= shape[d];
    return n;
  }
  size_t elsize() const { return oar_dtype_size(dtype); }
  /// Address of element `index` (one entry per dim). A dim of size 1 is read
  /// at 0 whatever the index, which is how broadcasting inputs are read.
  char* at(const int64_t* index) const {
    int64_t offset = 0;
    for (int32_t d = 0; d < ndim; ++d)
      if (shape[d] != 1) offset += index[d] * strides[d];
    return base + offset * static_cast<int64_t>(elsize());
  }
};

/// Advances a row-major multi-index over `shape`; false after the last one.
inline bool next_index(int32_t ndim, const int64_t* shape, int64_t* index) {
  for (int32_t d = ndim - 1; d >= 0; --d) {
    if (++index[d] < shape[d]) return true;
    index[d] = 0;
  }
  return false;
}

/// Calls f(index, i) for every element of `shape` in row-major order, where
/// i is the element's linear position.
template <typename F>
void for_each_index(int32_t ndim, const int64_t* shape, F&& f) {
  int64_t n = 1;
  for (int32_t d = 0; d < ndim; ++d) n *= shape[d];
  int64_t index[OAR_MAX_NDIM] = {};
  for (int64_t i = 0; i < n; ++i) {
    f(static_cast<const int64_t*>(index), i);
    next_index(ndim, shape, index);
  }
}

/// A kernel launch after validation: translated views and the stream.
struct Launch {
  std::shared_ptr<Stream> stream;
  std::vector<View> in, out;
  const OarKernelContext* ctx = nullptr;  // valid during the kernel call only
  const char* op = "";
};

/// Checks counts, device, stream and every view; translates the views.
/// `num_inputs` < 0 accepts any count. Reports an error naming `op`.
OarStatus prepare(const OarKernelContext* ctx, const char* op, int32_t num_inputs,
                  int32_t num_outputs, Launch* launch);
/// Enqueues `body` (run on the stream's worker) for a prepared launch.
OarStatus submit(const Launch& launch, Task body);

/// Shape equality of two views, with a sentence naming `op` on mismatch.
bool check_same_shape(const char* op, const char* a_name, const View& a, const char* b_name,
                      const View& b);
/// Each dim of `in` equals the output's or is 1 (ranks equal).
bool check_broadcastable(const char* op, const char* in_name, const View& in, const View& out);
OarStatus bad_dtype(const char* op, const char* arg, int32_t dtype, const char* allowed);

// Element traits of the dtypes the mock names directly (op::Element: S the
// storage type, C the compute type, A the accumulator).
using I32 = Element<int32_t>;
using I64 = Element<int64_t>;
using Bool = Element<bool>;

/// Integer arithmetic with two's complement wrap, never undefined.
inline int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrap_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
inline int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// Registration of each kernel family (mock_kernels_*.cpp).
void register_elementwise_kernels(op::KernelTable& t);
void register_reduce_kernels(op::KernelTable& t);
void register_shape_kernels(op::KernelTable& t);
void register_conv_kernels(op::KernelTable& t);
void register_complex_kernels(op::KernelTable& t);
void register_fft_kernels(op::KernelTable& t);
void register_optimizer_kernels(op::KernelTable& t);

// Collective entries of the device table (mock_collectives.cpp).
void fill_collectives(OarDeviceApi* api);
void abort_all_comms();

}  // namespace oar_mock

#endif  // OAR_PLUGINS_MOCK_MOCK_INTERNAL_H
