// Collectives of the mock, across its devices in one process and across
// processes, through the host's key-value store.
//
// Note [Mock collectives]
// A collective is enqueued on the stream like a kernel. When the stream's
// worker reaches it, the rank copies its contribution from device memory
// into a blob (a small header naming the collective, then the bytes),
// publishes it under "mock/<uid>/<seq>/<rank>", reads the blobs of the ranks
// it needs (each read bounded by the comm's timeout), computes its result in
// rank order 0..n-1 (so every rank gets identical bits) and writes it back.
// `seq` counts the collectives issued on the comm, so ranks must issue them
// in the same order, as with NCCL. The rank that finishes reading last (a
// store counter) empties the published keys. Point-to-point messages use
// "mock/<uid>/p2p/<src>-<dst>/<n>"; send does not wait for the receiver.
#include <atomic>
#include <chrono>
#include <cmath>
#include <random>

#include "mock_internal.h"

namespace oar_mock {
namespace {

constexpr uint64_t kUniqueIdBytes = 16;
constexpr int64_t kDefaultTimeoutMs = 600000;  // when comm_init gets timeout_ms <= 0

struct Comm {
  std::string uid;  // hex of the unique id
  int32_t nranks = 1, rank = 0, device = 0;
  OarStore_t store = nullptr;
  int64_t timeout_ms = kDefaultTimeoutMs;
  std::mutex mu;
  uint64_t seq = 0;                            // collectives issued, in call order
  std::map<int32_t, uint64_t> sent, received;  // point-to-point messages per peer
  std::atomic<bool> aborted{false};
};

enum class Coll : int32_t {
  AllReduce,
  AllGather,
  ReduceScatter,
  Broadcast,
  AllToAll,
  Barrier,
  Reduce,
  Scatter,
  AllToAllV,
  Last = AllToAllV
};
const char* coll_name(Coll c) {
  switch (c) {
    case Coll::AllReduce:
      return "all_reduce";
    case Coll::AllGather:
      return "all_gather";
    case Coll::ReduceScatter:
      return "reduce_scatter";
    case Coll::Broadcast:
      return "broadcast";
    case Coll::AllToAll:
      return "all_to_all";
    case Coll::Barrier:
      return "barrier";
    case Coll::Reduce:
      return "reduce";
    case Coll::Scatter:
      return "scatter";
    case Coll::AllToAllV:
      return "all_to_allv";
  }
  return "collective";
}

std::mutex g_comms_mu;
std::map<Comm*, std::shared_ptr<Comm>> g_comms;

const OarHostApi& host() { return *g_plugin->host; }
using Blob = std::vector<char>;
using Clock = std::chrono::steady_clock;

std::shared_ptr<Comm> find_comm(OarComm_t handle, const char* what) {
  std::lock_guard<std::mutex> lock(g_comms_mu);
  auto it = g_comms.find(reinterpret_cast<Comm*>(handle));
  if (it != g_comms.end()) return it->second;
  fail(OAR_ERROR_INVALID_ARGUMENT,
       format("%s: %p is not a live mock communicator", what, static_cast<void*>(handle)));
  return nullptr;
}

std::string describe(const Comm& c, const char* op, uint64_t seq) {
  return format("mock: %s #%llu on comm %.8s (rank %d of %d)", op,
              static_cast<unsigned long long>(seq), c.uid.c_str(), c.rank, c.nranks);
}

// Reads `key`, waiting until `deadline` in short slices so comm_abort is seen.
OarStatus fetch(Comm& c, const std::string& key, Clock::time_point deadline, Blob* out,
                std::string& error) {
  for (;;) {
    if (c.aborted) {
      error =
          format("mock: comm %.8s was aborted while waiting for '%s'", c.uid.c_str(), key.c_str());
      return OAR_ERROR_DEVICE;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    int64_t slice = std::max<int64_t>(1, std::min<int64_t>(left.count(), 100));
    void* value = nullptr;
    uint64_t size = 0;
    OarStatus st = host().store_get(c.store, key.c_str(), slice, &value, &size);
    if (st == OAR_OK) {
      out->assign(static_cast<char*>(value), static_cast<char*>(value) + size);
      if (value) host().store_free(value);
      return OAR_OK;
    }
    if (st != OAR_ERROR_TIMEOUT) {
      error = format("mock: the host store failed to read '%s' (status %d)", key.c_str(), st);
      return st;
    }
    if (Clock::now() >= deadline) return OAR_ERROR_TIMEOUT;
  }
}

OarStatus publish(Comm& c, const std::string& key, const Blob& blob, std::string& error) {
  OarStatus st = host().store_set(c.store, key.c_str(), blob.data(), blob.size());
  if (st != OAR_OK)
    error = format("mock: the host store failed to write '%s' (status %d)", key.c_str(), st);
  return st;
}

std::string coll_key(const Comm& c, uint64_t seq, int32_t rank) {
  return format("mock/%s/%llu/%d", c.uid.c_str(), static_cast<unsigned long long>(seq), rank);
}

constexpr uint64_t kAnySize = ~uint64_t{0};

// One rendezvous: publish `mine` (when this rank is a publisher), read the
// blobs of `from`, check each was sent by the same collective with
// `payload_bytes` bytes (kAnySize: any), then take part in the cleanup. blobs[r] holds the
// payload of rank r.
OarStatus exchange(Comm& c, Coll op, uint64_t seq, const Blob* mine, uint64_t payload_bytes,
                   const std::vector<int32_t>& from, const std::vector<int32_t>& publishers,
                   std::vector<Blob>& blobs, std::string& error) {
  blobs.assign(c.nranks, Blob());
  if (mine) {
    Blob framed(sizeof(int32_t));
    int32_t code = static_cast<int32_t>(op);
    std::memcpy(framed.data(), &code, sizeof code);
    framed.insert(framed.end(), mine->begin(), mine->end());
    if (OarStatus st = publish(c, coll_key(c, seq, c.rank), framed, error)) return st;
  }
  auto deadline = Clock::now() + std::chrono::milliseconds(c.timeout_ms);
  for (size_t i = 0; i < from.size(); ++i) {
    int32_t r = from[i];
    if (r == c.rank && mine) {
      blobs[r] = *mine;
      continue;
    }
    Blob framed;
    OarStatus st = fetch(c, coll_key(c, seq, r), deadline, &framed, error);
    if (st == OAR_ERROR_TIMEOUT) {
      // Name every rank that has not arrived, probing the rest briefly.
      std::string missing = std::to_string(r);
      for (size_t j = i + 1; j < from.size(); ++j) {
        Blob probe;
        std::string ignored;
        if (from[j] != c.rank &&
            fetch(c, coll_key(c, seq, from[j]), Clock::now(), &probe, ignored) != OAR_OK)
          missing += ", " + std::to_string(from[j]);
      }
      error = describe(c, coll_name(op), seq) +
              format(" timed out after %lld ms: rank(s) %s did not arrive",
                   static_cast<long long>(c.timeout_ms), missing.c_str());
      return OAR_ERROR_TIMEOUT;
    }
    if (st != OAR_OK) return st;
    int32_t code = -1;
    if (framed.size() >= sizeof code) std::memcpy(&code, framed.data(), sizeof code);
    if (code != static_cast<int32_t>(op)) {
      error = describe(c, coll_name(op), seq) +
              format(
                  ": rank %d issued %s as its collective #%llu; ranks must issue collectives in "
                  "the same order",
                  r, code >= 0 && code <= static_cast<int32_t>(Coll::Last) ? coll_name(static_cast<Coll>(code)) : "something else",
                  static_cast<unsigned long long>(seq));
      return OAR_ERROR_INVALID_ARGUMENT;
    }
    if (payload_bytes != kAnySize && framed.size() - sizeof code != payload_bytes) {
      error = describe(c, coll_name(op), seq) +
              format(
                  ": rank %d contributed %zu bytes but %llu were expected (ranks disagree on "
                  "count or dtype)",
                  r, framed.size() - sizeof code, static_cast<unsigned long long>(payload_bytes));
      return OAR_ERROR_INVALID_ARGUMENT;
    }
    blobs[r].assign(framed.begin() + sizeof code, framed.end());
  }
  // Cleanup: the last rank done reading empties the published keys.
  int64_t done = 0;
  std::string done_key =
      format("mock/%s/%llu/done", c.uid.c_str(), static_cast<unsigned long long>(seq));
  if (host().store_add(c.store, done_key.c_str(), 1, &done) == OAR_OK && done == c.nranks)
    for (int32_t p : publishers) host().store_set(c.store, coll_key(c, seq, p).c_str(), "", 0);
  return OAR_OK;
}

std::vector<int32_t> all_ranks(const Comm& c) {
  std::vector<int32_t> r(c.nranks);
  for (int32_t i = 0; i < c.nranks; ++i) r[i] = i;
  return r;
}

// dst[i] = srcs[0][i] op srcs[1][i] op ... in rank order; sums and products
// accumulate in f64 (floats) or wrapping i64 (integers); max/min propagate NaN.
void reduce_into(int32_t dtype, int32_t op, const std::vector<const char*>& srcs, uint64_t count,
                 char* dst) {
  visit_all(dtype, [&](auto t) {
    using T = Element<decltype(t)>;
    using A = typename T::A;
    using C = typename T::C;
    const size_t es = sizeof(typename T::S);
    for (uint64_t i = 0; i < count; ++i) {
      A acc = op == OAR_REDUCE_PROD ? A(1) : A(0);
      C ext = T::load(srcs[0] + i * es);
      for (const char* src : srcs) {
        C v = T::load(src + i * es);
        if (op == OAR_REDUCE_SUM) {
          if constexpr (T::is_float)
            acc += v;
          else
            acc = wrap_add(acc, v);
        } else if (op == OAR_REDUCE_PROD) {
          if constexpr (T::is_float)
            acc *= v;
          else
            acc = wrap_mul(acc, v);
        } else {
          bool better = op == OAR_REDUCE_MAX ? v > ext : v < ext;
          if constexpr (T::is_float) better = !std::isnan(ext) && (better || std::isnan(v));
          if (better) ext = v;
        }
      }
      if (op == OAR_REDUCE_SUM || op == OAR_REDUCE_PROD) ext = static_cast<C>(acc);
      T::store(dst + i * es, ext);
    }
  });
}

// Validation shared by the entries: comm, dtype, stream and buffers.
struct Call {
  std::shared_ptr<Comm> comm;
  std::shared_ptr<Stream> stream;
  uint64_t seq = 0;
  size_t es = 0;
};

OarStatus begin(const char* what, OarComm_t handle, int32_t dtype, OarStream_t stream, Call* call,
                bool is_collective = true) {
  call->comm = find_comm(handle, what);
  if (!call->comm) return OAR_ERROR_INVALID_ARGUMENT;
  call->es = oar_dtype_size(dtype);
  if (call->es == 0)
    return fail(OAR_ERROR_INVALID_ARGUMENT, format("%s: unknown dtype %d", what, dtype));
  call->stream = find_stream(call->comm->device, stream, what);
  if (!call->stream) return OAR_ERROR_INVALID_ARGUMENT;
  if (is_collective) {
    std::lock_guard<std::mutex> lock(call->comm->mu);
    call->seq = call->comm->seq++;
  }
  return OAR_OK;
}

// Device buffer of the comm's device, or null after an error (bytes 0: a
// placeholder that is never touched).
char* buffer(const Call& call, const void* ptr, uint64_t bytes, const char* what) {
  static char empty;
  if (bytes == 0) return &empty;
  return translate(call.comm->device, ptr, bytes, what);
}

OarStatus check_reduce_op(const char* what, int32_t op) {
  if (op >= OAR_REDUCE_SUM && op <= OAR_REDUCE_MIN) return OAR_OK;
  return fail(OAR_ERROR_INVALID_ARGUMENT, format("%s: unknown reduce op %d", what, op));
}

// ------------------------------------------------------------------------
// Device table entries
// ------------------------------------------------------------------------

OarStatus comm_unique_id_size(void*, uint64_t* size) {
  if (!size) return fail(OAR_ERROR_INVALID_ARGUMENT, "comm_unique_id_size: size is null");
  *size = kUniqueIdBytes;
  return OAR_OK;
}

OarStatus comm_unique_id(void*, void* id, uint64_t size) {
  if (!id || size < kUniqueIdBytes)
    return fail(OAR_ERROR_INVALID_ARGUMENT, format("comm_unique_id: needs a buffer of %llu bytes",
                                                 static_cast<unsigned long long>(kUniqueIdBytes)));
  std::random_device rd;
  auto* bytes = static_cast<unsigned char*>(id);
  for (uint64_t i = 0; i < kUniqueIdBytes; ++i) bytes[i] = static_cast<unsigned char>(rd());
  return OAR_OK;
}

OarStatus comm_init(void*, const void* unique_id, uint64_t id_size, int32_t nranks, int32_t rank,
                    int32_t device, OarStore_t store, int64_t timeout_ms, OarComm_t* comm) {
  if (!comm || !unique_id || id_size != kUniqueIdBytes)
    return fail(
        OAR_ERROR_INVALID_ARGUMENT,
        format("comm_init: needs a %llu-byte unique id and a comm out-pointer (got %llu bytes)",
             static_cast<unsigned long long>(kUniqueIdBytes),
             static_cast<unsigned long long>(id_size)));
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                format("comm_init: rank %d is outside a communicator of %d ranks", rank, nranks));
  if (!check_device(device, "comm_init")) return OAR_ERROR_INVALID_ARGUMENT;
  const OarHostApi& h = host();
  if (!store || h.struct_size < OAR_STRUCT_SIZE(OarHostApi, store_free) || !h.store_set ||
      !h.store_get || !h.store_add || !h.store_free)
    return fail(OAR_ERROR_UNSUPPORTED,
                "comm_init: the mock's collectives need the host key-value store (store is null "
                "or the host table lacks store_set/get/add/free)");
  auto c = std::make_shared<Comm>();
  static const char* const hex = "0123456789abcdef";
  for (uint64_t i = 0; i < id_size; ++i) {
    unsigned char b = static_cast<const unsigned char*>(unique_id)[i];
    c->uid += hex[b >> 4];
    c->uid += hex[b & 15];
  }
  c->nranks = nranks;
  c->rank = rank;
  c->device = device;
  c->store = store;
  c->timeout_ms = timeout_ms > 0 ? timeout_ms : kDefaultTimeoutMs;
  std::lock_guard<std::mutex> lock(g_comms_mu);
  g_comms[c.get()] = c;
  *comm = reinterpret_cast<OarComm_t>(c.get());
  return OAR_OK;
}

OarStatus comm_destroy(void*, OarComm_t handle) {
  auto c = find_comm(handle, "comm_destroy");
  if (!c) return OAR_ERROR_INVALID_ARGUMENT;
  std::lock_guard<std::mutex> lock(g_comms_mu);
  g_comms.erase(c.get());  // enqueued collectives keep their reference
  return OAR_OK;
}

OarStatus comm_abort(void*, OarComm_t handle) {
  auto c = find_comm(handle, "comm_abort");
  if (!c) return OAR_ERROR_INVALID_ARGUMENT;
  c->aborted = true;
  return OAR_OK;
}

OarStatus all_reduce(void*, const void* send, void* recv, uint64_t count, int32_t dtype,
                     int32_t reduce_op, OarComm_t comm, OarStream_t stream) {
  Call call;
  if (OarStatus s = check_reduce_op("all_reduce", reduce_op)) return s;
  if (OarStatus s = begin("all_reduce", comm, dtype, stream, &call)) return s;
  uint64_t bytes = count * call.es;
  const char* src = buffer(call, send, bytes, "all_reduce (send)");
  char* dst = src ? buffer(call, recv, bytes, "all_reduce (recv)") : nullptr;
  if (!dst) return OAR_ERROR_INVALID_ARGUMENT;
  call.stream->enqueue(
      [call, src, dst, bytes, count, dtype, reduce_op](std::string& error) -> OarStatus {
        Comm& c = *call.comm;
        Blob mine(src, src + bytes);
        std::vector<Blob> blobs;
        auto ranks = all_ranks(c);
        if (OarStatus s =
                exchange(c, Coll::AllReduce, call.seq, &mine, bytes, ranks, ranks, blobs, error))
          return s;
        std::vector<const char*> srcs;
        for (const Blob& b : blobs) srcs.push_back(b.data());
        if (bytes) reduce_into(dtype, reduce_op, srcs, count, dst);
        return OAR_OK;
      });
  return OAR_OK;
}

OarStatus all_gather(void*, const void* send, void* recv, uint64_t count, int32_t dtype,
                     OarComm_t comm, OarStream_t stream) {
  Call call;
  if (OarStatus s = begin("all_gather", comm, dtype, stream, &call)) return s;
  uint64_t bytes = count * call.es;
  const char* src = buffer(call, send, bytes, "all_gather (send)");
  char* dst = src ? buffer(call, recv, bytes * call.comm->nranks, "all_gather (recv)") : nullptr;
  if (!dst) return OAR_ERROR_INVALID_ARGUMENT;
  call.stream->enqueue([call, src, dst, bytes](std::string& error) -> OarStatus {
    Comm& c = *call.comm;
    Blob mine(src, src + bytes);
    std::vector<Blob> blobs;
    auto ranks = all_ranks(c);
    if (OarStatus s =
            exchange(c, Coll::AllGather, call.seq, &mine, bytes, ranks, ranks, blobs, error))
      return s;
    for (int32_t r = 0; r < c.nranks; ++r)
      if (bytes) std::memcpy(dst + r * bytes, blobs[r].data(), bytes);
    return OAR_OK;
  });
  return OAR_OK;
}

OarStatus reduce_scatter(void*, const void* send, void* recv, uint64_t recv_count, int32_t dtype,
                         int32_t reduce_op, OarComm_t comm, OarStream_t stream) {
  Call call;
  if (OarStatus s = check_reduce_op("reduce_scatter", reduce_op)) return s;
  if (OarStatus s = begin("reduce_scatter", comm, dtype, stream, &call)) return s;
  uint64_t block = recv_count * call.es, total = block * call.comm->nranks;
  const char* src = buffer(call, send, total, "reduce_scatter (send)");
  char* dst = src ? buffer(call, recv, block, "reduce_scatter (recv)") : nullptr;
  if (!dst) return OAR_ERROR_INVALID_ARGUMENT;
  call.stream->enqueue([call, src, dst, block, total, recv_count, dtype,
                        reduce_op](std::string& error) -> OarStatus {
    Comm& c = *call.comm;
    Blob mine(src, src + total);
    std::vector<Blob> blobs;
    auto ranks = all_ranks(c);
    if (OarStatus s =
            exchange(c, Coll::ReduceScatter, call.seq, &mine, total, ranks, ranks, blobs, error))
      return s;
    std::vector<const char*> srcs;
    for (const Blob& b : blobs) srcs.push_back(b.data() + c.rank * block);
    if (block) reduce_into(dtype, reduce_op, srcs, recv_count, dst);
    return OAR_OK;
  });
  return OAR_OK;
}

OarStatus broadcast(void*, void* buf, uint64_t count, int32_t dtype, int32_t root, OarComm_t comm,
                    OarStream_t stream) {
  Call call;
  if (OarStatus s = begin("broadcast", comm, dtype, stream, &call)) return s;
  if (root < 0 || root >= call.comm->nranks)
    return fail(OAR_ERROR_INVALID_ARGUMENT, format("broadcast: root %d is outside a communicator of "
                                                 "%d ranks",
                                                 root, call.comm->nranks));
  uint64_t bytes = count * call.es;
  char* data = buffer(call, buf, bytes, "broadcast");
  if (!data) return OAR_ERROR_INVALID_ARGUMENT;
  call.stream->enqueue([call, data, bytes, root](std::string& error) -> OarStatus {
    Comm& c = *call.comm;
    bool is_root = c.rank == root;
    Blob mine;
    if (is_root) mine.assign(data, data + bytes);
    std::vector<Blob> blobs;
    std::vector<int32_t> from;
    if (!is_root) from.push_back(root);
    if (OarStatus s = exchange(c, Coll::Broadcast, call.seq, is_root ? &mine : nullptr, bytes, from,
                               {root}, blobs, error))
      return s;
    if (!is_root && bytes) std::memcpy(data, blobs[root].data(), bytes);
    return OAR_OK;
  });
  return OAR_OK;
}

OarStatus all_to_all(void*, const void* send, void* recv, uint64_t count, int32_t dtype,
                     OarComm_t comm, OarStream_t stream) {
  Call call;
  if (OarStatus s = begin("all_to_all", comm, dtype, stream, &call)) return s;
  uint64_t block = count * call.es, total = block * call.comm->nranks;
  const char* src = buffer(call, send, total, "all_to_all (send)");
  char* dst = src ? buffer(call, recv, total, "all_to_all (recv)") : nullptr;
  if (!dst) return OAR_ERROR_INVALID_ARGUMENT;
  call.stream->enqueue([call, src, dst, block, total](std::string& error) -> OarStatus {
    Comm& c = *call.comm;
    Blob mine(src, src + total);
    std::vector<Blob> blobs;
    auto ranks = all_ranks(c);
    if (OarStatus s =
            exchange(c, Coll::AllToAll, call.seq, &mine, total, ranks, ranks, blobs, error))
      return s;
    for (int32_t r = 0; r < c.nranks; ++r)  // block r of recv comes from rank r
      if (block) std::memcpy(dst + r * block, blobs[r].data() + c.rank * block, block);
    return OAR_OK;
  });
  return OAR_OK;
}

OarStatus barrier(void*, OarComm_t comm, OarStream_t stream) {
  Call call;
  if (OarStatus s = begin("barrier", comm, OAR_DTYPE_U8, stream, &call)) return s;
  call.stream->enqueue([call](std::string& error) -> OarStatus {
    Comm& c = *call.comm;
    Blob mine;
    std::vector<Blob> blobs;
    auto ranks = all_ranks(c);
    return exchange(c, Coll::Barrier, call.seq, &mine, 0, ranks, ranks, blobs, error);
  });
  return OAR_OK;
}

OarStatus reduce(void*, const void* send, void* recv, uint64_t count, int32_t dtype,
                 int32_t reduce_op, int32_t root, OarComm_t comm, OarStream_t stream) {
  Call call;
  if (OarStatus s = check_reduce_op("reduce", reduce_op)) return s;
  if (OarStatus s = begin("reduce", comm, dtype, stream, &call)) return s;
  if (root < 0 || root >= call.comm->nranks)
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                format("reduce: root %d is outside a communicator of %d ranks", root,
                       call.comm->nranks));
  uint64_t bytes = count * call.es;
  const bool is_root = call.comm->rank == root;
  const char* src = buffer(call, send, bytes, "reduce (send)");
  // recv is only touched (and only checked) on root.
  char* dst = src && is_root ? buffer(call, recv, bytes, "reduce (recv)") : nullptr;
  if (!src || (is_root && !dst)) return OAR_ERROR_INVALID_ARGUMENT;
  call.stream->enqueue(
      [call, src, dst, bytes, count, dtype, reduce_op, root](std::string& error) -> OarStatus {
        Comm& c = *call.comm;
        Blob mine(src, src + bytes);
        std::vector<Blob> blobs;
        auto ranks = all_ranks(c);
        std::vector<int32_t> from;
        if (c.rank == root) from = ranks;
        if (OarStatus s =
                exchange(c, Coll::Reduce, call.seq, &mine, bytes, from, ranks, blobs, error))
          return s;
        if (c.rank != root || !bytes) return OAR_OK;
        std::vector<const char*> srcs;
        for (const Blob& b : blobs) srcs.push_back(b.data());
        reduce_into(dtype, reduce_op, srcs, count, dst);
        return OAR_OK;
      });
  return OAR_OK;
}

OarStatus scatter(void*, const void* send, void* recv, uint64_t count, int32_t dtype, int32_t root,
                  OarComm_t comm, OarStream_t stream) {
  Call call;
  if (OarStatus s = begin("scatter", comm, dtype, stream, &call)) return s;
  if (root < 0 || root >= call.comm->nranks)
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                format("scatter: root %d is outside a communicator of %d ranks", root,
                       call.comm->nranks));
  uint64_t block = count * call.es, total = block * call.comm->nranks;
  const bool is_root = call.comm->rank == root;
  // send is only read (and only checked) on root.
  const char* src = is_root ? buffer(call, send, total, "scatter (send)") : nullptr;
  char* dst = !is_root || src ? buffer(call, recv, block, "scatter (recv)") : nullptr;
  if (!dst) return OAR_ERROR_INVALID_ARGUMENT;
  call.stream->enqueue([call, src, dst, block, total, root](std::string& error) -> OarStatus {
    Comm& c = *call.comm;
    bool is_root = c.rank == root;
    Blob mine;
    if (is_root) mine.assign(src, src + total);
    std::vector<Blob> blobs;
    std::vector<int32_t> from;
    if (!is_root) from.push_back(root);
    if (OarStatus s = exchange(c, Coll::Scatter, call.seq, is_root ? &mine : nullptr, total, from,
                               {root}, blobs, error))
      return s;
    const Blob& all = is_root ? mine : blobs[root];
    if (block) std::memcpy(dst, all.data() + c.rank * block, block);
    return OAR_OK;
  });
  return OAR_OK;
}

// The blob of all_to_allv: nranks uint64 counts (elements to each rank),
// then the blocks in rank order.
OarStatus all_to_allv(void*, const void* send, const uint64_t* send_counts,
                      const uint64_t* send_offsets, void* recv, const uint64_t* recv_counts,
                      const uint64_t* recv_offsets, int32_t dtype, OarComm_t comm,
                      OarStream_t stream) {
  Call call;
  if (!send_counts || !send_offsets || !recv_counts || !recv_offsets)
    return fail(OAR_ERROR_INVALID_ARGUMENT, "all_to_allv: a count or offset array is null");
  if (OarStatus s = begin("all_to_allv", comm, dtype, stream, &call)) return s;
  const int32_t n = call.comm->nranks;
  const size_t es = call.es;
  std::vector<uint64_t> counts(send_counts, send_counts + n), rcounts(recv_counts, recv_counts + n);
  std::vector<const char*> srcs(n);
  std::vector<char*> dsts(n);
  for (int32_t r = 0; r < n; ++r) {
    srcs[r] = buffer(call, static_cast<const char*>(send) + send_offsets[r] * es,
                     send_counts[r] * es, "all_to_allv (send)");
    dsts[r] = srcs[r] ? buffer(call, static_cast<char*>(recv) + recv_offsets[r] * es,
                               recv_counts[r] * es, "all_to_allv (recv)")
                      : nullptr;
    if (!dsts[r]) return OAR_ERROR_INVALID_ARGUMENT;
  }
  call.stream->enqueue([call, counts, rcounts, srcs, dsts, es](std::string& error) -> OarStatus {
    Comm& c = *call.comm;
    const size_t n = counts.size();
    Blob mine(n * sizeof(uint64_t));
    std::memcpy(mine.data(), counts.data(), mine.size());
    for (size_t r = 0; r < n; ++r) mine.insert(mine.end(), srcs[r], srcs[r] + counts[r] * es);
    std::vector<Blob> blobs;
    auto ranks = all_ranks(c);
    if (OarStatus s =
            exchange(c, Coll::AllToAllV, call.seq, &mine, kAnySize, ranks, ranks, blobs, error))
      return s;
    for (size_t r = 0; r < n; ++r) {  // block r of recv comes from rank r
      const Blob& b = blobs[r];
      std::vector<uint64_t> theirs(n, 0);
      if (b.size() >= n * sizeof(uint64_t)) std::memcpy(theirs.data(), b.data(), n * sizeof(uint64_t));
      uint64_t at = n * sizeof(uint64_t);
      for (size_t k = 0; k < static_cast<size_t>(c.rank); ++k) at += theirs[k] * es;
      if (theirs[c.rank] != rcounts[r] || at + rcounts[r] * es > b.size()) {
        error = describe(c, "all_to_allv", call.seq) +
                format(": rank %zu sends %llu elements to rank %d, but recv_counts[%zu] is %llu",
                       r, static_cast<unsigned long long>(theirs[c.rank]), c.rank, r,
                       static_cast<unsigned long long>(rcounts[r]));
        return OAR_ERROR_INVALID_ARGUMENT;
      }
      if (rcounts[r]) std::memcpy(dsts[r], b.data() + at, rcounts[r] * es);
    }
    return OAR_OK;
  });
  return OAR_OK;
}

std::string p2p_key(const Comm& c, int32_t src, int32_t dst, uint64_t n) {
  return format("mock/%s/p2p/%d-%d/%llu", c.uid.c_str(), src, dst,
              static_cast<unsigned long long>(n));
}

OarStatus send(void*, const void* buf, uint64_t count, int32_t dtype, int32_t peer, OarComm_t comm,
               OarStream_t stream) {
  Call call;
  if (OarStatus s = begin("send", comm, dtype, stream, &call, false)) return s;
  Comm& c = *call.comm;
  if (peer < 0 || peer >= c.nranks)
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                format("send: peer %d is outside a communicator of %d ranks", peer, c.nranks));
  uint64_t bytes = count * call.es;
  const char* src = buffer(call, buf, bytes, "send");
  if (!src) return OAR_ERROR_INVALID_ARGUMENT;
  uint64_t n;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    n = c.sent[peer]++;
  }
  call.stream->enqueue([call, src, bytes, peer, n](std::string& error) -> OarStatus {
    Comm& c = *call.comm;
    return publish(c, p2p_key(c, c.rank, peer, n), Blob(src, src + bytes), error);
  });
  return OAR_OK;
}

OarStatus recv(void*, void* buf, uint64_t count, int32_t dtype, int32_t peer, OarComm_t comm,
               OarStream_t stream) {
  Call call;
  if (OarStatus s = begin("recv", comm, dtype, stream, &call, false)) return s;
  Comm& c = *call.comm;
  if (peer < 0 || peer >= c.nranks)
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                format("recv: peer %d is outside a communicator of %d ranks", peer, c.nranks));
  uint64_t bytes = count * call.es;
  char* dst = buffer(call, buf, bytes, "recv");
  if (!dst) return OAR_ERROR_INVALID_ARGUMENT;
  uint64_t n;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    n = c.received[peer]++;
  }
  call.stream->enqueue([call, dst, bytes, peer, n](std::string& error) -> OarStatus {
    Comm& c = *call.comm;
    std::string key = p2p_key(c, peer, c.rank, n);
    Blob blob;
    auto deadline = Clock::now() + std::chrono::milliseconds(c.timeout_ms);
    OarStatus st = fetch(c, key, deadline, &blob, error);
    if (st == OAR_ERROR_TIMEOUT)
      error = format(
          "mock: recv #%llu from rank %d on comm %.8s (rank %d of %d) timed out after "
          "%lld ms: rank %d did not arrive (no matching send)",
          static_cast<unsigned long long>(n), peer, c.uid.c_str(), c.rank, c.nranks,
          static_cast<long long>(c.timeout_ms), peer);
    if (st != OAR_OK) return st;
    if (blob.size() != bytes) {
      error = format("mock: recv from rank %d got %zu bytes but %llu were expected", peer,
                   blob.size(), static_cast<unsigned long long>(bytes));
      return OAR_ERROR_INVALID_ARGUMENT;
    }
    if (bytes) std::memcpy(dst, blob.data(), bytes);
    host().store_set(c.store, key.c_str(), "", 0);  // free the message
    return OAR_OK;
  });
  return OAR_OK;
}

OarStatus group_start(void*) { return OAR_OK; }  // sends never block: nothing to group
OarStatus group_end(void*) { return OAR_OK; }

}  // namespace

void fill_collectives(OarDeviceApi* api) {
  api->comm_unique_id_size = comm_unique_id_size;
  api->comm_unique_id = comm_unique_id;
  api->comm_init = comm_init;
  api->comm_destroy = comm_destroy;
  api->comm_abort = comm_abort;
  api->all_reduce = all_reduce;
  api->all_gather = all_gather;
  api->reduce_scatter = reduce_scatter;
  api->broadcast = broadcast;
  api->send = send;
  api->recv = recv;
  api->all_to_all = all_to_all;
  api->barrier = barrier;
  api->group_start = group_start;
  api->group_end = group_end;
  api->reduce = reduce;
  api->scatter = scatter;
  api->all_to_allv = all_to_allv;
}

void abort_all_comms() {
  std::lock_guard<std::mutex> lock(g_comms_mu);
  for (auto& [key, comm] : g_comms) comm->aborted = true;
  g_comms.clear();
}

}  // namespace oar_mock
