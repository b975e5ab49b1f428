// Collectives of the cpu device through Gloo (libgloo, TCP transport).
//
// Note [CPU collectives through Gloo]
// comm_init wraps the host's key-value store as a gloo::rendezvous::Store
// (HostStore, keys under "gloo/<unique id hex>/"), creates a Gloo TCP device
// on the address choose_listen_address picks, and connects a full mesh of
// pairs through it. Every entry then calls one of Gloo's collectives with
// the comm's timeout as its per-op timeout:
//  - all_reduce, reduce, broadcast, all_gather, scatter, all_to_all,
//    all_to_allv and barrier map to gloo::allreduce, reduce, broadcast,
//    allgather, scatter, alltoall, alltoallv and barrier;
//  - reduce_scatter is gloo::alltoall (rank r receives block r of every
//    rank) followed by a local reduction of the nranks blocks in rank order.
//    Gloo has no reduce-scatter in its timeout-aware (unbound buffer) API;
//    this moves (n-1)/n of the input per rank like a ring reduce-scatter,
//    while all_reduce + taking the block would move twice that and compute
//    every block everywhere. f16/bf16 blocks travel as 16 bits and are
//    accumulated in f32 locally;
//  - send/recv are unbound buffers on slots (kP2pSlotPrefix, signature, n)
//    where n counts the messages from one rank to another. Note [Eager
//    sends]: Gloo's TCP transport hands the data over only once the
//    receiver posts its recv, and the host runs a comm's calls one at a
//    time, so a blocking send would deadlock two ranks that both send
//    before they receive. send therefore copies the data, posts it and
//    returns (as the mock's send); a per-comm thread waits for each posted
//    send in order, up to the comm's timeout from when it was posted. A
//    send that fails or times out fails the comm: the next call (or
//    comm_destroy, which waits for the pending sends) reports it.
// Reductions: sum and prod wrap for integers; max/min propagate NaN; bool
// sum/max are logical or, prod/min logical and; f16 and bf16 are converted
// to f32, reduced by Gloo in f32 and converted back (all_reduce, reduce).
// In place (send == recv, or overlapping) works: overlapping inputs are
// copied first. The cpu device has no streams (Note [CPU streams are
// synchronous]): every collective has finished, or failed, when it returns.
//
// Failures: Gloo throws (gloo::IoException for I/O and timeouts,
// gloo::EnforceNotMet for broken invariants). Every entry catches all of it
// and returns OAR_ERROR_TIMEOUT (a timeout: a peer did not arrive) or
// OAR_ERROR_DEVICE (a peer's connection broke), with a message naming the
// collective, the comm's rank and size, and Gloo's words. After a failure
// Gloo has closed the comm's pairs; later calls fail at once, naming the
// first failure.
//
// Thread-safety: a comm is used by one thread at a time (the host's comm
// worker); a per-comm mutex enforces it. Different comms run concurrently.
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/reduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/scatter.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>
#include <signal.h>

#include <cmath>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cpu_common.h"
#include "cpu_gloo_reduce.h"
#include "cpu_gloo_store.h"
#include "oar/plugin_util.h"

namespace oar_cpu {
namespace {

using gloo_reduce::f32_to_half;
using gloo_reduce::gloo_reduce_fn;
using gloo_reduce::half_to_f32;
using gloo_reduce::is_half;
using gloo_reduce::local_reduce;

constexpr uint64_t kUniqueIdBytes = 16;
constexpr int64_t kDefaultTimeoutMs = 1800 * 1000;  // comm_init's timeout_ms <= 0
constexpr uint64_t kP2pSlotPrefix = 0xA0;           // above Gloo's collective prefixes (1..8)

using Clock = std::chrono::steady_clock;

/// A posted send that has not completed yet (Note [Eager sends]).
struct PendingSend {
  std::vector<char> data;  // a copy: the caller may reuse its buffer at once
  std::unique_ptr<gloo::transport::UnboundBuffer> buffer;  // over `data`
  int peer = 0;
  uint64_t n = 0;  // the message's number from this rank to `peer`
  Clock::time_point deadline;
};

struct Comm {
  std::string uid;  // hex of the unique id
  int rank = 0, nranks = 1;
  std::chrono::milliseconds timeout{kDefaultTimeoutMs};
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::rendezvous::Context> context;
  std::mutex mu;  // one call at a time
  uint32_t tag = 0;
  std::map<int, uint64_t> sent, received;  // point-to-point messages per peer

  std::mutex state_mu;        // guards the failure state (calls and the sender)
  OarStatus broken = OAR_OK;  // first failure, sticky
  std::string broken_message;
  bool unreported = false;  // a pending send failed and no call has said so yet

  std::mutex send_mu;  // guards pending and stopping
  std::condition_variable send_cv;
  std::deque<std::unique_ptr<PendingSend>> pending;
  bool stopping = false;
  std::thread sender;  // waits for pending sends, in order; started by the first send

  ~Comm();
};

std::mutex g_comms_mu;
std::map<Comm*, std::shared_ptr<Comm>> g_comms;

using op::format;

std::string describe(const Comm& c, const char* what) {
  return format("cpu (gloo): %s on comm %.8s (rank %d of %d)", what, c.uid.c_str(), c.rank,
                c.nranks);
}

bool is_timeout_message(const std::string& m) {
  return m.find("Timed out") != std::string::npos || m.find("timed out") != std::string::npos ||
         m.find("Application timeout") != std::string::npos;
}

/// Records the comm's first failure; later ones are consequences of it.
void set_broken(Comm& c, OarStatus code, const std::string& message, bool unreported) {
  std::lock_guard<std::mutex> lock(c.state_mu);
  if (c.broken != OAR_OK) return;
  c.broken = code;
  c.broken_message = message;
  c.unreported = unreported;
}

// The sender thread: Note [Eager sends].
void sender_loop(Comm* c) {
  std::unique_lock<std::mutex> lock(c->send_mu);
  for (;;) {
    c->send_cv.wait(lock, [&] { return c->stopping || !c->pending.empty(); });
    if (c->pending.empty()) return;
    PendingSend* p = c->pending.front().get();
    lock.unlock();
    try {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(p->deadline - Clock::now());
      p->buffer->waitSend(std::max(left, std::chrono::milliseconds(1)));  // false: aborted
    } catch (const std::exception& e) {
      std::string m = e.what();
      bool timeout = is_timeout_message(m);
      std::string what =
          format("send #%llu to rank %d", static_cast<unsigned long long>(p->n), p->peer);
      set_broken(*c, timeout ? OAR_ERROR_TIMEOUT : OAR_ERROR_DEVICE,
                 describe(*c, what.c_str()) +
                     (timeout ? format(" was not received within %lld ms of being posted (rank %d "
                                       "did not arrive): ",
                                       static_cast<long long>(c->timeout.count()), p->peer)
                              : std::string(" failed (a peer's connection broke): ")) +
                     m,
                 true);
    }
    lock.lock();
    c->pending.pop_front();
    c->send_cv.notify_all();
  }
}

/// Stops the sender after the pending sends complete (each bounded by its
/// deadline), or at once with `abort`.
void stop_sender(Comm& c, bool abort) {
  {
    std::lock_guard<std::mutex> lock(c.send_mu);
    c.stopping = true;
    if (abort)
      for (auto& p : c.pending) p->buffer->abortWaitSend();
  }
  c.send_cv.notify_all();
  if (c.sender.joinable()) c.sender.join();
}

Comm::~Comm() { stop_sender(*this, true); }  // at exit without comm_destroy: no waiting

// ------------------------------------------------------------- plumbing ---

bool overlaps(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return a_bytes && b_bytes && pa < pb + b_bytes && pb < pa + a_bytes;
}

/// `src` itself, or a copy of it in `keep` when it overlaps [dst, dst + dst_bytes).
const char* detach(const void* src, size_t bytes, const void* dst, size_t dst_bytes,
                   std::vector<char>& keep) {
  if (!overlaps(src, bytes, dst, dst_bytes)) return static_cast<const char*>(src);
  keep.assign(static_cast<const char*>(src), static_cast<const char*>(src) + bytes);
  return keep.data();
}

/// Validates the comm and runs `body` under its lock; every exception
/// becomes a status and a message (Note [CPU collectives through Gloo]).
template <typename F>
OarStatus run(const char* what, OarComm_t handle, F&& body) noexcept {
  std::shared_ptr<Comm> comm;
  {
    std::lock_guard<std::mutex> lock(g_comms_mu);
    auto it = g_comms.find(reinterpret_cast<Comm*>(handle));
    if (it != g_comms.end()) comm = it->second;
  }
  if (!comm)
    return fail_plain(OAR_ERROR_INVALID_ARGUMENT, "%s: %p is not a live cpu communicator", what,
                      static_cast<void*>(handle));
  Comm& c = *comm;
  std::lock_guard<std::mutex> lock(c.mu);
  {
    std::lock_guard<std::mutex> state(c.state_mu);
    if (c.broken != OAR_OK) {
      c.unreported = false;
      return fail(c.broken, describe(c, what) +
                                ": the communicator is unusable after an earlier failure: " +
                                c.broken_message);
    }
  }
  OarStatus code = OAR_ERROR_DEVICE;
  std::string message;
  try {
    return body(c);
  } catch (const HostStoreError& e) {
    code = e.timeout ? OAR_ERROR_TIMEOUT : OAR_ERROR_DEVICE;
    message = e.what();
  } catch (const gloo::IoException& e) {
    message = e.what();
    code = is_timeout_message(message) ? OAR_ERROR_TIMEOUT : OAR_ERROR_DEVICE;
  } catch (const gloo::EnforceNotMet& e) {
    message = e.what();
    code = is_timeout_message(message) ? OAR_ERROR_TIMEOUT : OAR_ERROR_DEVICE;
  } catch (const std::bad_alloc&) {
    return fail(OAR_ERROR_OUT_OF_MEMORY, describe(c, what) + ": out of host memory");
  } catch (const std::exception& e) {
    message = e.what();
    code = is_timeout_message(message) ? OAR_ERROR_TIMEOUT : OAR_ERROR_DEVICE;
  } catch (...) {
    message = "an unknown exception";
  }
  std::string full =
      describe(c, what) +
      (code == OAR_ERROR_TIMEOUT ? format(" timed out after %lld ms (a peer did not arrive): ",
                                          static_cast<long long>(c.timeout.count()))
                                 : std::string(" failed (a peer's connection broke): ")) +
      message;
  set_broken(c, code, full, false);
  return fail(code, full);
}

OarStatus check_dtype(const char* what, int32_t dtype) {
  if (oar_dtype_size(dtype) != 0) return OAR_OK;
  return fail_plain(OAR_ERROR_INVALID_ARGUMENT, "%s: unknown dtype %d", what, dtype);
}

OarStatus check_reduce_op(const char* what, int32_t op) {
  if (op >= OAR_REDUCE_SUM && op <= OAR_REDUCE_MIN) return OAR_OK;
  return fail_plain(OAR_ERROR_INVALID_ARGUMENT, "%s: unknown reduce op %d (0..3: sum prod max min)",
                    what, op);
}

OarStatus check_rank(const Comm& c, const char* what, const char* role, int32_t r) {
  if (r >= 0 && r < c.nranks) return OAR_OK;
  return fail(OAR_ERROR_INVALID_ARGUMENT,
              describe(c, what) +
                  format(": %s %d is outside a communicator of %d ranks", role, r, c.nranks));
}

/// FNV-1a over the call's sequence number and its signature.
uint32_t signature_hash(std::initializer_list<uint64_t> words) {
  uint32_t h = 2166136261u;
  for (uint64_t w : words)
    for (int b = 0; b < 8; ++b) h = (h ^ static_cast<uint8_t>(w >> (8 * b))) * 16777619u;
  return h;
}

/// Note [Gloo tags carry the call's signature]: Gloo matches messages by
/// slot, built from the op's tag. Ranks that disagree on a call (another
/// count, dtype, root or collective: a desynchronized program) and shared a
/// tag would match messages of different sizes, and Gloo's I/O thread then
/// aborts the process (an enforce in pair.cc). The tag hashes the call's
/// sequence number with its signature, so such calls use different slots:
/// each side waits for its peers and fails with a timeout that names it.
template <typename Options>
void prepare(Comm& c, Options& opts, std::initializer_list<uint64_t> signature) {
  uint64_t seq = c.tag++;
  uint32_t h = signature_hash(signature);
  opts.setTag(signature_hash({seq, h}));
  opts.setTimeout(c.timeout);
}

/// An opaque element of N bytes: Gloo's data movement needs only the size,
/// so one instantiation per size serves every dtype of that size.
template <size_t N>
struct Elem {
  unsigned char bytes[N];
};

/// Calls f(Elem<es>{}) for es in {1, 2, 4, 8}.
template <typename F>
void with_element(size_t es, F&& f) {
  switch (es) {
    case 1:
      f(Elem<1>{});
      break;
    case 2:
      f(Elem<2>{});
      break;
    case 4:
      f(Elem<4>{});
      break;
    default:
      f(Elem<8>{});
      break;
  }
}

template <typename T>
T* as(const void* p) {
  return static_cast<T*>(const_cast<void*>(p));
}

// --------------------------------------------------------------- entries ---

OarStatus comm_unique_id_size(void*, uint64_t* size) {
  if (!size) return fail_plain(OAR_ERROR_INVALID_ARGUMENT, "comm_unique_id_size: size is null");
  *size = kUniqueIdBytes;
  return OAR_OK;
}

OarStatus comm_unique_id(void*, void* id, uint64_t size) {
  if (!id || size < kUniqueIdBytes)
    return fail_plain(OAR_ERROR_INVALID_ARGUMENT, "comm_unique_id: needs a buffer of %llu bytes",
                      static_cast<unsigned long long>(kUniqueIdBytes));
  std::random_device rd;
  auto* bytes = static_cast<unsigned char*>(id);
  for (uint64_t i = 0; i < kUniqueIdBytes; ++i) bytes[i] = static_cast<unsigned char>(rd());
  return OAR_OK;
}

// Gloo writes to its sockets with writev: a write to a peer that died
// raises SIGPIPE, which would end this process instead of failing the
// collective. Ignored once, only where nobody installed a handler (Python
// already ignores it).
void ignore_sigpipe() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current {};
    if (sigaction(SIGPIPE, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) return;
    signal(SIGPIPE, SIG_IGN);
    op::log(OAR_LOG_DEBUG,
            "cpu (gloo): SIGPIPE is now ignored, so a write to a dead peer fails the collective "
            "(EPIPE) instead of ending the process");
  });
}

OarStatus comm_init(void*, const void* unique_id, uint64_t id_size, int32_t nranks, int32_t rank,
                    int32_t device, OarStore_t store, int64_t timeout_ms, OarComm_t* out) {
  if (!out || !unique_id || id_size != kUniqueIdBytes)
    return fail_plain(OAR_ERROR_INVALID_ARGUMENT,
                      "comm_init: needs a %llu-byte unique id and a comm out-pointer (got %llu "
                      "bytes)",
                      static_cast<unsigned long long>(kUniqueIdBytes),
                      static_cast<unsigned long long>(id_size));
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return fail_plain(OAR_ERROR_INVALID_ARGUMENT,
                      "comm_init: rank %d is outside a communicator of %d ranks", rank, nranks);
  if (device != 0)
    return fail_plain(OAR_ERROR_INVALID_ARGUMENT,
                      "comm_init: device index %d is out of range (1 cpu device)", device);
  const OarHostApi* h = g_host;
  if (!store || h->struct_size < OAR_STRUCT_SIZE(OarHostApi, store_free) || !h->store_set ||
      !h->store_get || !h->store_wait || !h->store_free)
    return fail_plain(OAR_ERROR_UNSUPPORTED,
                      "comm_init: Gloo's rendezvous needs the host key-value store (store is null "
                      "or the host table lacks store_set/get/wait/free)");
  ignore_sigpipe();
  auto c = std::make_shared<Comm>();
  static const char* const hex = "0123456789abcdef";
  for (uint64_t i = 0; i < id_size; ++i) {
    unsigned char b = static_cast<const unsigned char*>(unique_id)[i];
    c->uid += hex[b >> 4];
    c->uid += hex[b & 15];
  }
  c->rank = rank;
  c->nranks = nranks;
  c->timeout = std::chrono::milliseconds(timeout_ms > 0 ? timeout_ms : kDefaultTimeoutMs);
  std::string stage = "choosing the listen address";
  try {
    ListenAddress where = choose_listen_address(h);
    stage = "creating the TCP device on " + where.ip;
    gloo::transport::tcp::attr attr;
    attr.hostname = where.ip;
    attr.ai_family = AF_INET;
    c->device = gloo::transport::tcp::CreateDevice(attr);
    stage = "connecting the full mesh through the store (listening on " + where.ip + ", " +
            where.reason + ")";
    HostStore host_store(h, store, c->timeout);
    gloo::rendezvous::PrefixStore prefixed("gloo/" + c->uid, host_store);
    c->context = std::make_shared<gloo::rendezvous::Context>(rank, nranks);
    c->context->setTimeout(c->timeout);
    c->context->connectFullMesh(prefixed, c->device);
    op::log(OAR_LOG_DEBUG,
            format("cpu (gloo): comm %.8s rank %d of %d connected, listening on %s (%s)",
                   c->uid.c_str(), rank, nranks, where.ip.c_str(), where.reason.c_str()));
  } catch (const std::exception& e) {
    std::string m = e.what();
    auto* se = dynamic_cast<const HostStoreError*>(&e);
    bool timeout = se ? se->timeout : is_timeout_message(m);
    return fail(
        timeout ? OAR_ERROR_TIMEOUT : OAR_ERROR_DEVICE,
        format("cpu (gloo): comm_init of comm %.8s (rank %d of %d) failed while ", c->uid.c_str(),
               rank, nranks) +
            stage +
            (timeout ? format(" (timeout %lld ms): ", static_cast<long long>(c->timeout.count()))
                     : std::string(": ")) +
            m);
  } catch (...) {
    return fail_plain(OAR_ERROR_DEVICE, "comm_init: an unknown exception while %s", stage.c_str());
  }
  std::lock_guard<std::mutex> lock(g_comms_mu);
  g_comms[c.get()] = c;
  *out = reinterpret_cast<OarComm_t>(c.get());
  return OAR_OK;
}

OarStatus comm_destroy(void*, OarComm_t handle) {
  std::shared_ptr<Comm> c;
  {
    std::lock_guard<std::mutex> lock(g_comms_mu);
    auto it = g_comms.find(reinterpret_cast<Comm*>(handle));
    if (it == g_comms.end())
      return fail_plain(OAR_ERROR_INVALID_ARGUMENT,
                        "comm_destroy: %p is not a live cpu communicator",
                        static_cast<void*>(handle));
    c = it->second;
    g_comms.erase(it);
  }
  std::lock_guard<std::mutex> lock(c->mu);  // a call in flight finishes first
  stop_sender(*c, false);                   // pending sends complete or time out
  OarStatus code = OAR_OK;
  std::string message;
  {
    std::lock_guard<std::mutex> state(c->state_mu);
    if (c->unreported) code = c->broken, message = c->broken_message;
  }
  try {
    c->context.reset();
    c->device.reset();
  } catch (...) {
  }
  return code == OAR_OK ? OAR_OK : fail(code, message);
}

OarStatus all_reduce(void*, const void* send, void* recv, uint64_t count, int32_t dtype,
                     int32_t reduce_op, OarComm_t comm, OarStream_t) {
  if (OarStatus s = check_dtype("all_reduce", dtype)) return s;
  if (OarStatus s = check_reduce_op("all_reduce", reduce_op)) return s;
  return run("all_reduce", comm, [&](Comm& c) -> OarStatus {
    gloo::AllreduceOptions opts(c.context);
    prepare(c, opts, {1, count, static_cast<uint64_t>(dtype), static_cast<uint64_t>(reduce_op)});
    if (count == 0) return OAR_OK;
    if (is_half(dtype)) {  // reduce in f32
      std::vector<float> acc = half_to_f32(dtype, send, count);
      opts.setOutput(acc.data(), count);
      opts.setReduceFunction(gloo_reduce_fn(OAR_DTYPE_F32, reduce_op));
      gloo::allreduce(opts);
      f32_to_half(dtype, acc.data(), count, recv);
      return OAR_OK;
    }
    const size_t es = oar_dtype_size(dtype);
    if (send != recv) std::memmove(recv, send, count * es);
    with_element(es, [&](auto tag) { opts.setOutput(as<decltype(tag)>(recv), count); });
    opts.setReduceFunction(gloo_reduce_fn(dtype, reduce_op));
    gloo::allreduce(opts);
    return OAR_OK;
  });
}

OarStatus reduce(void*, const void* send, void* recv, uint64_t count, int32_t dtype,
                 int32_t reduce_op, int32_t root, OarComm_t comm, OarStream_t) {
  if (OarStatus s = check_dtype("reduce", dtype)) return s;
  if (OarStatus s = check_reduce_op("reduce", reduce_op)) return s;
  return run("reduce", comm, [&](Comm& c) -> OarStatus {
    if (OarStatus s = check_rank(c, "reduce", "root", root)) return s;
    gloo::ReduceOptions opts(c.context);
    prepare(c, opts,
            {2, count, static_cast<uint64_t>(dtype), static_cast<uint64_t>(reduce_op),
             static_cast<uint64_t>(root)});
    opts.setRoot(root);
    if (count == 0) return OAR_OK;
    // Gloo writes partial results into every rank's output: non-roots get
    // a scratch output so their recv stays untouched.
    if (is_half(dtype)) {
      std::vector<float> acc = half_to_f32(dtype, send, count);
      opts.setOutput(acc.data(), count);
      opts.setReduceFunction(gloo_reduce_fn(OAR_DTYPE_F32, reduce_op));
      gloo::reduce(opts);
      if (c.rank == root) f32_to_half(dtype, acc.data(), count, recv);
      return OAR_OK;
    }
    const size_t es = oar_dtype_size(dtype), bytes = count * es;
    std::vector<char> scratch;
    void* out = recv;
    if (c.rank != root) {
      scratch.resize(bytes);
      out = scratch.data();
    }
    if (send != out) std::memmove(out, send, bytes);
    with_element(es, [&](auto tag) { opts.setOutput(as<decltype(tag)>(out), count); });
    opts.setReduceFunction(gloo_reduce_fn(dtype, reduce_op));
    gloo::reduce(opts);
    return OAR_OK;
  });
}

OarStatus all_gather(void*, const void* send, void* recv, uint64_t count, int32_t dtype,
                     OarComm_t comm, OarStream_t) {
  if (OarStatus s = check_dtype("all_gather", dtype)) return s;
  return run("all_gather", comm, [&](Comm& c) -> OarStatus {
    gloo::AllgatherOptions opts(c.context);
    prepare(c, opts, {3, count, static_cast<uint64_t>(dtype)});
    if (count == 0) return OAR_OK;
    const size_t es = oar_dtype_size(dtype), bytes = count * es;
    char* mine = static_cast<char*>(recv) + c.rank * bytes;
    if (send != mine) std::memmove(mine, send, bytes);  // then Gloo runs in place
    with_element(es, [&](auto tag) {
      opts.setOutput(as<decltype(tag)>(recv), count * static_cast<size_t>(c.nranks));
    });
    gloo::allgather(opts);
    return OAR_OK;
  });
}

OarStatus all_to_all(void*, const void* send, void* recv, uint64_t count, int32_t dtype,
                     OarComm_t comm, OarStream_t) {
  if (OarStatus s = check_dtype("all_to_all", dtype)) return s;
  return run("all_to_all", comm, [&](Comm& c) -> OarStatus {
    gloo::AlltoallOptions opts(c.context);
    prepare(c, opts, {4, count, static_cast<uint64_t>(dtype)});
    if (count == 0) return OAR_OK;
    const size_t es = oar_dtype_size(dtype), total = count * c.nranks;
    std::vector<char> keep;
    const char* src = detach(send, total * es, recv, total * es, keep);
    with_element(es, [&](auto tag) {
      using T = decltype(tag);
      opts.setInput(as<T>(src), total);
      opts.setOutput(as<T>(recv), total);
    });
    gloo::alltoall(opts);
    return OAR_OK;
  });
}

OarStatus reduce_scatter(void*, const void* send, void* recv, uint64_t recv_count, int32_t dtype,
                         int32_t reduce_op, OarComm_t comm, OarStream_t) {
  if (OarStatus s = check_dtype("reduce_scatter", dtype)) return s;
  if (OarStatus s = check_reduce_op("reduce_scatter", reduce_op)) return s;
  return run("reduce_scatter", comm, [&](Comm& c) -> OarStatus {
    // Note [CPU collectives through Gloo]: all_to_all, then a local reduction.
    gloo::AlltoallOptions opts(c.context);
    prepare(c, opts,
            {5, recv_count, static_cast<uint64_t>(dtype), static_cast<uint64_t>(reduce_op)});
    if (recv_count == 0) return OAR_OK;
    const size_t es = oar_dtype_size(dtype), total = recv_count * c.nranks;
    std::vector<char> blocks(total * es);
    with_element(es, [&](auto tag) {
      using T = decltype(tag);
      opts.setInput(as<T>(send), total);
      opts.setOutput(as<T>(blocks.data()), total);
    });
    gloo::alltoall(opts);
    std::vector<const char*> from(c.nranks);
    for (int r = 0; r < c.nranks; ++r) from[r] = blocks.data() + r * recv_count * es;
    local_reduce(dtype, reduce_op, from, recv_count, static_cast<char*>(recv));
    return OAR_OK;
  });
}

OarStatus broadcast(void*, void* buffer, uint64_t count, int32_t dtype, int32_t root,
                    OarComm_t comm, OarStream_t) {
  if (OarStatus s = check_dtype("broadcast", dtype)) return s;
  return run("broadcast", comm, [&](Comm& c) -> OarStatus {
    if (OarStatus s = check_rank(c, "broadcast", "root", root)) return s;
    gloo::BroadcastOptions opts(c.context);
    prepare(c, opts, {6, count, static_cast<uint64_t>(dtype), static_cast<uint64_t>(root)});
    opts.setRoot(root);
    if (count == 0) return OAR_OK;
    with_element(oar_dtype_size(dtype),
                 [&](auto tag) { opts.setOutput(as<decltype(tag)>(buffer), count); });
    gloo::broadcast(opts);
    return OAR_OK;
  });
}

OarStatus scatter(void*, const void* send, void* recv, uint64_t count, int32_t dtype, int32_t root,
                  OarComm_t comm, OarStream_t) {
  if (OarStatus s = check_dtype("scatter", dtype)) return s;
  return run("scatter", comm, [&](Comm& c) -> OarStatus {
    if (OarStatus s = check_rank(c, "scatter", "root", root)) return s;
    gloo::ScatterOptions opts(c.context);
    prepare(c, opts, {7, count, static_cast<uint64_t>(dtype), static_cast<uint64_t>(root)});
    opts.setRoot(root);
    if (count == 0) return OAR_OK;
    const size_t es = oar_dtype_size(dtype), bytes = count * es;
    std::vector<char> keep;
    with_element(es, [&](auto tag) {
      using T = decltype(tag);
      if (c.rank == root) {
        const char* src = detach(send, bytes * c.nranks, recv, bytes, keep);
        std::vector<T*> blocks(c.nranks);
        for (int r = 0; r < c.nranks; ++r) blocks[r] = as<T>(src + r * bytes);
        opts.setInputs(blocks, count);
      }
      opts.setOutput(as<T>(recv), count);
    });
    gloo::scatter(opts);
    return OAR_OK;
  });
}

OarStatus all_to_allv(void*, const void* send, const uint64_t* send_counts,
                      const uint64_t* send_offsets, void* recv, const uint64_t* recv_counts,
                      const uint64_t* recv_offsets, int32_t dtype, OarComm_t comm, OarStream_t) {
  if (OarStatus s = check_dtype("all_to_allv", dtype)) return s;
  if (!send_counts || !send_offsets || !recv_counts || !recv_offsets)
    return fail_plain(OAR_ERROR_INVALID_ARGUMENT, "all_to_allv: a count or offset array is null");
  return run("all_to_allv", comm, [&](Comm& c) -> OarStatus {
    const size_t es = oar_dtype_size(dtype), n = static_cast<size_t>(c.nranks);
    // Each pair of ranks first agrees on its counts (one small all_to_all):
    // Gloo would abort the process on a message of an unexpected size, so a
    // mismatch is reported here by both ranks of the pair, naming both sides.
    std::vector<uint64_t> mine(2 * n), theirs(2 * n);
    for (size_t r = 0; r < n; ++r) mine[2 * r] = send_counts[r], mine[2 * r + 1] = recv_counts[r];
    gloo::AlltoallOptions counts(c.context);
    prepare(c, counts, {10, static_cast<uint64_t>(dtype)});
    counts.setInput(mine.data(), 2 * n);
    counts.setOutput(theirs.data(), 2 * n);
    gloo::alltoall(counts);
    gloo::AlltoallvOptions opts(c.context);
    prepare(c, opts, {8, static_cast<uint64_t>(dtype)});
    for (size_t r = 0; r < n; ++r)
      if (theirs[2 * r] != recv_counts[r] || theirs[2 * r + 1] != send_counts[r])
        return fail(OAR_ERROR_INVALID_ARGUMENT,
                    describe(c, "all_to_allv") +
                        format(": rank %zu sends %llu elements to this rank and expects %llu from "
                               "it, but recv_counts[%zu] is %llu and send_counts[%zu] is %llu",
                               r, static_cast<unsigned long long>(theirs[2 * r]),
                               static_cast<unsigned long long>(theirs[2 * r + 1]), r,
                               static_cast<unsigned long long>(recv_counts[r]), r,
                               static_cast<unsigned long long>(send_counts[r])));
    // Gloo's alltoallv takes blocks packed in rank order; pack (and unpack)
    // through scratch unless the offsets already are the running sums.
    auto packed = [&](const uint64_t* counts, const uint64_t* offsets, size_t* total) {
      bool dense = true;
      *total = 0;
      for (size_t r = 0; r < n; ++r) {
        dense = dense && offsets[r] == *total;
        *total += counts[r];
      }
      return dense;
    };
    size_t send_total = 0, recv_total = 0;
    bool send_dense = packed(send_counts, send_offsets, &send_total);
    bool recv_dense = packed(recv_counts, recv_offsets, &recv_total);
    std::vector<char> send_scratch, recv_scratch;
    const char* src = static_cast<const char*>(send);
    if (!send_dense || overlaps(send, send_total * es, recv, recv_total * es)) {
      send_scratch.resize(send_total * es);
      for (size_t r = 0, at = 0; r < n; at += send_counts[r], ++r)
        std::memcpy(send_scratch.data() + at * es, src + send_offsets[r] * es, send_counts[r] * es);
      src = send_scratch.data();
    }
    char* dst = static_cast<char*>(recv);
    if (!recv_dense) {
      recv_scratch.resize(recv_total * es);
      dst = recv_scratch.data();
    }
    std::vector<int64_t> in_counts(send_counts, send_counts + n),
        out_counts(recv_counts, recv_counts + n);
    // Gloo wants a non-null buffer even when this rank sends or receives nothing.
    char empty = 0;
    with_element(es, [&](auto tag) {
      using T = decltype(tag);
      opts.setInput(as<T>(send_total ? src : &empty), in_counts);
      opts.setOutput(as<T>(recv_total ? dst : &empty), out_counts);
    });
    gloo::alltoallv(opts);
    if (!recv_dense)
      for (size_t r = 0, at = 0; r < n; at += recv_counts[r], ++r)
        std::memcpy(static_cast<char*>(recv) + recv_offsets[r] * es, dst + at * es,
                    recv_counts[r] * es);
    return OAR_OK;
  });
}

OarStatus barrier(void*, OarComm_t comm, OarStream_t) {
  return run("barrier", comm, [&](Comm& c) -> OarStatus {
    gloo::BarrierOptions opts(c.context);
    prepare(c, opts, {9});
    gloo::barrier(opts);
    return OAR_OK;
  });
}

// Point-to-point slots: the prefix, 24 bits of the message's signature
// (Note [Gloo tags carry the call's signature]) and its number n.
uint64_t p2p_slot(uint64_t n, uint64_t count, int32_t dtype) {
  uint64_t sig = signature_hash({count, static_cast<uint64_t>(dtype)}) & 0xffffffu;
  return (kP2pSlotPrefix << 56) | (sig << 32) | (n & 0xffffffffu);
}

OarStatus send(void*, const void* buffer, uint64_t count, int32_t dtype, int32_t peer,
               OarComm_t comm, OarStream_t) {
  if (OarStatus s = check_dtype("send", dtype)) return s;
  return run("send", comm, [&](Comm& c) -> OarStatus {
    if (OarStatus s = check_rank(c, "send", "peer", peer)) return s;
    if (peer == c.rank)
      return fail(OAR_ERROR_INVALID_ARGUMENT,
                  describe(c, "send") + ": a rank cannot send to itself");
    // Note [Eager sends]: copy, post, and let the sender thread wait.
    auto p = std::make_unique<PendingSend>();
    size_t bytes = count * oar_dtype_size(dtype);
    p->data.resize(bytes ? bytes : 1);
    if (bytes) std::memcpy(p->data.data(), buffer, bytes);
    p->buffer = c.context->createUnboundBuffer(p->data.data(), bytes);
    p->peer = peer;
    p->n = c.sent[peer]++;
    p->deadline = Clock::now() + c.timeout;
    p->buffer->send(peer, p2p_slot(p->n, count, dtype));
    {
      std::lock_guard<std::mutex> lock(c.send_mu);
      if (!c.sender.joinable()) c.sender = std::thread(sender_loop, &c);
      c.pending.push_back(std::move(p));
    }
    c.send_cv.notify_all();
    return OAR_OK;
  });
}

OarStatus recv(void*, void* buffer, uint64_t count, int32_t dtype, int32_t peer, OarComm_t comm,
               OarStream_t) {
  if (OarStatus s = check_dtype("recv", dtype)) return s;
  return run("recv", comm, [&](Comm& c) -> OarStatus {
    if (OarStatus s = check_rank(c, "recv", "peer", peer)) return s;
    if (peer == c.rank)
      return fail(OAR_ERROR_INVALID_ARGUMENT,
                  describe(c, "recv") + ": a rank cannot receive from itself");
    uint64_t n = c.received[peer]++;
    size_t bytes = count * oar_dtype_size(dtype);
    char empty = 0;
    auto buf = c.context->createUnboundBuffer(bytes ? buffer : &empty, bytes);
    buf->recv(peer, p2p_slot(n, count, dtype));
    buf->waitRecv(c.timeout);
    return OAR_OK;
  });
}

}  // namespace

void fill_collectives(OarDeviceApi* api) {
  api->comm_unique_id_size = comm_unique_id_size;
  api->comm_unique_id = comm_unique_id;
  api->comm_init = comm_init;
  api->comm_destroy = comm_destroy;
  api->all_reduce = all_reduce;
  api->all_gather = all_gather;
  api->reduce_scatter = reduce_scatter;
  api->broadcast = broadcast;
  api->send = send;
  api->recv = recv;
  api->all_to_all = all_to_all;
  api->barrier = barrier;
  api->reduce = reduce;
  api->scatter = scatter;
  api->all_to_allv = all_to_allv;
}

}  // namespace oar_cpu
