// Communicator over the device table's collectives: construction, the
// checks every collective makes, and the plugin calls (with the fallbacks
// for the ABI 1.2 entries a plugin may lack). Where they run: Note
// [Communicator execution] in distributed_work.cpp.
#include "oar/distributed.h"

#include <cstdlib>

#include "oar/autograd.h"
#include "oar/ops.h"
#include "runtime/distributed_internal.h"

namespace oar::distributed {

using detail::CommState;
using detail::OpInfo;

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::prod: return "prod";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
    case ReduceOp::avg: return "avg";
  }
  return "?";
}

namespace {

DeviceBackend& collective_backend(const Device& device) {
  DeviceBackend& b = backend_of(device);
  if (!b.api.comm_init || !b.api.comm_unique_id || !b.api.comm_unique_id_size) {
    throw Error(ErrorCode::unsupported, "distributed: device type '" + device.type +
                                            "' has no collectives (its plugin has no comm_init), so it cannot "
                                            "create a communicator");
  }
  return b;
}

std::string where(const CommState& c, const std::string& op) { return op + " on group '" + c.name + "'"; }

void* data_of(const Tensor& t) {
  return t.impl().storage ? static_cast<char*>(t.impl().storage->data()) + t.impl().byte_offset : nullptr;
}

// The checks every tensor argument passes: defined, contiguous, on the
// communicator's device.
void check_tensor(const CommState& c, const std::string& op, const Tensor& t, const char* role) {
  OAR_CHECK_ARG(t.defined(), where(c, op) + ": the " + role + " tensor is undefined");
  OAR_CHECK_ARG(t.is_contiguous(), where(c, op) + ": the " + role + " tensor of shape " + shape_str(t.shape()) +
                                       " is a strided view; pass t.contiguous() (collectives need contiguous memory)");
  OAR_CHECK_ARG(t.device() == c.device, where(c, op) + ": the " + role + " tensor is on " + t.device().str() +
                                            " but the communicator is on " + c.device.str());
}

void check_same_dtype(const CommState& c, const std::string& op, const Tensor& out, const Tensor& in) {
  OAR_CHECK_ARG(out.dtype() == in.dtype(), where(c, op) + ": out is " + std::string(dtype_name(out.dtype())) +
                                               " but in is " + std::string(dtype_name(in.dtype())) +
                                               "; they must have the same dtype");
}

void check_rank(const CommState& c, const std::string& op, int r, const char* role) {
  OAR_CHECK_ARG(r >= 0 && r < c.nranks, where(c, op) + ": " + role + " " + std::to_string(r) + " is outside [0, " +
                                            std::to_string(c.nranks) + ") (ranks are group-local)");
}

void check_op(const CommState& c, const std::string& op, ReduceOp reduce, DType dtype) {
  int code = static_cast<int>(reduce);
  OAR_CHECK_ARG(code >= 0 && code <= 4, where(c, op) + ": reduce op " + std::to_string(code) +
                                            " is not one of sum 0, prod 1, max 2, min 3, avg 4");
  OAR_CHECK_ARG(!(reduce == ReduceOp::avg && dtype == DType::boolean),
                where(c, op) + ": avg of a bool tensor is not defined; use sum (logical or) or cast first");
}

uint64_t elements(const Tensor& t) { return static_cast<uint64_t>(t.numel()); }

// a * b, refusing a size_t overflow with a sentence.
uint64_t times(const CommState& c, const std::string& op, uint64_t a, uint64_t b) {
  uint64_t r = 0;
  OAR_CHECK_ARG(!__builtin_mul_overflow(a, b, &r), where(c, op) + ": " + std::to_string(a) + " x " +
                                                        std::to_string(b) + " elements overflow 64 bits");
  return r;
}

template <typename F>
void require(const CommState& c, F fn, const char* name) {
  if (!fn)
    throw Error(ErrorCode::unsupported, where(c, name) + ": device type '" + c.device.type +
                                            "' does not implement " + name);
}

OarStream_t stream_of(CommState& c) { return c.backend->slot(c.device.index).stream; }

// One plugin call on this thread: clears the thread's error, throws the plugin's.
template <typename F>
void invoke(CommState& c, const char* what, F&& call) {
  host_clear_error();
  c.backend->check(call(c.backend->api), what);
}

int32_t plugin_op(ReduceOp op) { return op == ReduceOp::avg ? OAR_REDUCE_SUM : static_cast<int32_t>(op); }

// A device-to-device copy ordered with the collectives (on the stream when there is one).
void copy_bytes(CommState& c, void* dst, const void* src, uint64_t bytes) {
  if (bytes == 0 || dst == src) return;
  const OarDeviceApi& api = c.backend->api;
  int32_t device = c.device.index;
  OarStream_t stream = stream_of(c);
  if (stream && api.memcpy_d2d_async) {
    invoke(c, "memcpy_d2d_async",
           [&](const OarDeviceApi& a) { return a.memcpy_d2d_async(a.impl, device, dst, src, bytes, stream); });
    return;
  }
  if (stream) {
    invoke(c, "stream_synchronize", [&](const OarDeviceApi& a) { return a.stream_synchronize(a.impl, device, stream); });
  }
  invoke(c, "memcpy_d2d", [&](const OarDeviceApi& a) { return a.memcpy_d2d(a.impl, device, dst, src, bytes); });
}

// avg: this rank's sum divided by nranks (integers truncate toward zero).
// When t alone holds its storage (no view or other tensor shares it) on a
// device without streams, t takes the quotient's storage instead of a copy
// of it: every holder of t sees the result, and the 7.4 MB of a data-
// parallel step's gradient buckets cost one pass instead of two (the
// division took 2.5 ms of a 9 ms pair of all_reduces). Otherwise the
// quotient is copied into t's memory.
void divide_by_ranks(CommState& c, const Tensor& t) {
  NoGrad no_grad;
  double n = static_cast<double>(c.nranks);
  Tensor q = is_integer(t.dtype()) ? cast(cast(t, DType::f64) / n, t.dtype()) : t / n;
  TensorImpl& ti = t.impl();
  const TensorImpl& qi = q.impl();
  if (!stream_of(c) && ti.storage && ti.storage.use_count() == 1 && qi.storage && qi.storage.use_count() == 1 &&
      t.is_contiguous() && q.is_contiguous() && qi.device == ti.device && !ti.dist && !ti.symbol) {
    ti.storage = qi.storage;
    ti.byte_offset = qi.byte_offset;
    ti.strides = qi.strides;
    return;
  }
  copy_bytes(c, data_of(t), data_of(q), elements(t) * dtype_size(t.dtype()));
}

}  // namespace

Communicator::Communicator(const Device& device, int nranks, int rank, Store& store, const std::string& key,
                           int64_t timeout_ms, CommOptions opts)
    : state_(std::make_shared<CommState>()) {
  CommState& c = *state_;
  c.name = opts.name.empty() ? std::string("world") : opts.name;
  OAR_CHECK_ARG(nranks > 0 && rank >= 0 && rank < nranks, "distributed: creating group '" + c.name + "': rank " +
                                                              std::to_string(rank) + " is outside [0, " +
                                                              std::to_string(nranks) + ")");
  OAR_CHECK_ARG(opts.global_ranks.empty() || opts.global_ranks.size() == static_cast<size_t>(nranks),
                "distributed: creating group '" + c.name + "': global_ranks has " +
                    std::to_string(opts.global_ranks.size()) + " entries but the group has " +
                    std::to_string(nranks) + " ranks");
  c.device = device;
  c.nranks = nranks;
  c.rank = rank;
  c.key = key;
  c.global_ranks = std::move(opts.global_ranks);
  c.timeout_ms = timeout_ms < 0 ? detail::default_timeout_ms() : timeout_ms;
  c.check = opts.check < 0 ? detail::check_from_env() : opts.check != 0;
  c.store = &store;
  DeviceBackend& b = collective_backend(device);
  c.backend = &b;
  bool has_stream = b.slot(device.index).stream != nullptr;
  const char* force_worker = std::getenv("OAR_COMM_WORKER");
  c.worker_syncs = has_stream && force_worker && std::string(force_worker) == "1";
  c.streams = has_stream && !c.worker_syncs;

  uint64_t size = 0;
  host_clear_error();
  b.check(b.api.comm_unique_id_size(b.api.impl, &size), "comm_unique_id_size");
  std::vector<uint8_t> id(size);
  if (rank == 0) {
    b.check(b.api.comm_unique_id(b.api.impl, id.data(), size), "comm_unique_id");
    store.set(key, id);
  } else {
    id = store.get(key, c.timeout_ms);
    OAR_CHECK_ARG(id.size() == size, "distributed: the unique id under '" + key + "' has " + std::to_string(id.size()) +
                                         " bytes but " + std::to_string(size) + " were expected");
  }
  b.check(b.api.comm_init(b.api.impl, id.data(), size, nranks, rank, device.index,
                          reinterpret_cast<OarStore_t>(&store), c.timeout_ms, &c.comm),
          "comm_init");
  detail::start_publisher(c);
  if (!c.streams) detail::start_worker(c, state_);
}

Communicator::~Communicator() {
  try {
    destroy();
  } catch (...) {
    // A destructor never throws; destroy() reports nothing worth a crash.
  }
}

void Communicator::destroy() {
  CommState& c = *state_;
  {
    std::lock_guard<std::mutex> lock(c.issue_mu);
    if (c.destroyed) return;
    c.destroyed = true;
  }
  DeviceBackend& b = *c.backend;
  bool idle = true;
  if (c.streams) {
    if (!b.shut_down) {
      host_clear_error();
      OarStatus status = b.api.stream_synchronize(b.api.impl, c.device.index, stream_of(c));
      if (status != OAR_OK) {
        PluginFailure f = host_take_failure(status);
        std::string message = "group '" + c.name + "': a collective pending when the communicator was destroyed failed: " + f.message;
        c.fail(std::make_exception_ptr(Error(f.code, message)), f.code, message);
      }
    }
  } else {
    idle = detail::stop_worker(c);
  }
  detail::stop_publisher(c);
  if (idle && c.comm && !b.shut_down && b.api.comm_destroy) {
    host_clear_error();
    if (b.api.comm_destroy(b.api.impl, c.comm) != OAR_OK) host_clear_error();
  }
  c.comm = nullptr;
}

int Communicator::rank() const { return state_->rank; }
int Communicator::nranks() const { return state_->nranks; }
const Device& Communicator::device() const { return state_->device; }
const std::string& Communicator::name() const { return state_->name; }
const std::vector<int>& Communicator::global_ranks() const {
  CommState& c = *state_;
  if (c.global_ranks.empty()) {
    std::lock_guard<std::mutex> lock(c.issue_mu);
    if (c.global_ranks.empty())
      for (int r = 0; r < c.nranks; ++r) c.global_ranks.push_back(r);
  }
  return c.global_ranks;
}
int64_t Communicator::timeout_ms() const { return state_->timeout_ms; }
const std::string& Communicator::key() const { return state_->key; }

// Sync forms: on a device with streams the collective is already ordered
// on the compute stream (Note [Communicator execution]); otherwise wait.
#define OAR_FINISH(work)                     \
  do {                                       \
    SyncScope sync_;                         \
    WorkPtr w_ = (work);                     \
    if (!state_->streams) w_->wait();        \
  } while (0)

void Communicator::all_reduce(const Tensor& t, ReduceOp op) { OAR_FINISH(all_reduce_async(t, op)); }

WorkPtr Communicator::all_reduce_async(const Tensor& t, ReduceOp op) {
  CommState& c = *state_;
  check_tensor(c, "all_reduce", t, "input");
  check_op(c, "all_reduce", op, t.dtype());
  require(c, c.backend->api.all_reduce, "all_reduce");
  void* p = data_of(t);
  uint64_t n = elements(t);
  int32_t dt = static_cast<int32_t>(t.dtype());
  CommState* s = &c;
  return detail::submit(state_, OpInfo{"all_reduce", t.dtype(), n}, {t}, [s, p, n, dt, op, t] {
    invoke(*s, "all_reduce", [&](const OarDeviceApi& a) {
      return a.all_reduce(a.impl, p, p, n, dt, plugin_op(op), s->comm, stream_of(*s));
    });
    if (op == ReduceOp::avg) divide_by_ranks(*s, t);
  });
}

Tensor Communicator::all_gather(const Tensor& t) {
  check_tensor(*state_, "all_gather", t, "input");
  Shape shape = t.shape();
  shape.insert(shape.begin(), state_->nranks);
  Tensor out = allocate_tensor(shape, t.dtype(), state_->device);
  OAR_FINISH(all_gather_async(out, t));
  return out;
}

WorkPtr Communicator::all_gather_async(const Tensor& out, const Tensor& in) {
  CommState& c = *state_;
  check_tensor(c, "all_gather", in, "input");
  check_tensor(c, "all_gather", out, "output");
  check_same_dtype(c, "all_gather", out, in);
  uint64_t n = elements(in);
  OAR_CHECK_ARG(elements(out) == times(c, "all_gather", n, c.nranks),
                where(c, "all_gather") + ": out has " + std::to_string(elements(out)) + " elements but " +
                    std::to_string(c.nranks) + " ranks x " + std::to_string(n) + " were expected");
  require(c, c.backend->api.all_gather, "all_gather");
  void *src = data_of(in), *dst = data_of(out);
  int32_t dt = static_cast<int32_t>(in.dtype());
  CommState* s = &c;
  return detail::submit(state_, OpInfo{"all_gather", in.dtype(), n}, {out, in}, [s, src, dst, n, dt] {
    invoke(*s, "all_gather",
           [&](const OarDeviceApi& a) { return a.all_gather(a.impl, src, dst, n, dt, s->comm, stream_of(*s)); });
  });
}

Tensor Communicator::reduce_scatter(const Tensor& t, ReduceOp op) {
  CommState& c = *state_;
  check_tensor(c, "reduce_scatter", t, "input");
  OAR_CHECK_ARG(t.dim() >= 1 && t.shape()[0] % c.nranks == 0,
                where(c, "reduce_scatter") + ": the leading dim of shape " + shape_str(t.shape()) +
                    " is not divisible by " + std::to_string(c.nranks) + " ranks");
  Shape shape = t.shape();
  shape[0] /= c.nranks;
  Tensor out = allocate_tensor(shape, t.dtype(), c.device);
  OAR_FINISH(reduce_scatter_async(out, t, op));
  return out;
}

WorkPtr Communicator::reduce_scatter_async(const Tensor& out, const Tensor& in, ReduceOp op) {
  CommState& c = *state_;
  check_tensor(c, "reduce_scatter", in, "input");
  check_tensor(c, "reduce_scatter", out, "output");
  check_same_dtype(c, "reduce_scatter", out, in);
  check_op(c, "reduce_scatter", op, in.dtype());
  uint64_t n = elements(out);
  OAR_CHECK_ARG(elements(in) == times(c, "reduce_scatter", n, c.nranks),
                where(c, "reduce_scatter") + ": in has " + std::to_string(elements(in)) + " elements but " +
                    std::to_string(c.nranks) + " ranks x " + std::to_string(n) + " (out's) were expected");
  require(c, c.backend->api.reduce_scatter, "reduce_scatter");
  void *src = data_of(in), *dst = data_of(out);
  int32_t dt = static_cast<int32_t>(in.dtype());
  CommState* s = &c;
  return detail::submit(state_, OpInfo{"reduce_scatter", in.dtype(), elements(in)}, {out, in},
                        [s, src, dst, n, dt, op, out] {
                          invoke(*s, "reduce_scatter", [&](const OarDeviceApi& a) {
                            return a.reduce_scatter(a.impl, src, dst, n, dt, plugin_op(op), s->comm, stream_of(*s));
                          });
                          if (op == ReduceOp::avg) divide_by_ranks(*s, out);
                        });
}

void Communicator::broadcast(const Tensor& t, int root) { OAR_FINISH(broadcast_async(t, root)); }

WorkPtr Communicator::broadcast_async(const Tensor& t, int root) {
  CommState& c = *state_;
  check_tensor(c, "broadcast", t, "input");
  check_rank(c, "broadcast", root, "root");
  require(c, c.backend->api.broadcast, "broadcast");
  void* p = data_of(t);
  uint64_t n = elements(t);
  int32_t dt = static_cast<int32_t>(t.dtype());
  CommState* s = &c;
  return detail::submit(state_, OpInfo{"broadcast", t.dtype(), n, root}, {t}, [s, p, n, dt, root] {
    invoke(*s, "broadcast",
           [&](const OarDeviceApi& a) { return a.broadcast(a.impl, p, n, dt, root, s->comm, stream_of(*s)); });
  });
}

void Communicator::reduce(const Tensor& t, int root, ReduceOp op) { OAR_FINISH(reduce_async(t, root, op)); }

WorkPtr Communicator::reduce_async(const Tensor& t, int root, ReduceOp op) {
  CommState& c = *state_;
  if (!c.backend->api.reduce) return reduce_via_all_reduce_async(t, root, op);
  check_tensor(c, "reduce", t, "input");
  check_rank(c, "reduce", root, "root");
  check_op(c, "reduce", op, t.dtype());
  void* p = data_of(t);
  uint64_t n = elements(t);
  int32_t dt = static_cast<int32_t>(t.dtype());
  CommState* s = &c;
  return detail::submit(state_, OpInfo{"reduce", t.dtype(), n, root}, {t}, [s, p, n, dt, op, root, t] {
    invoke(*s, "reduce", [&](const OarDeviceApi& a) {
      return a.reduce(a.impl, p, p, n, dt, plugin_op(op), root, s->comm, stream_of(*s));
    });
    if (op == ReduceOp::avg && s->rank == root) divide_by_ranks(*s, t);
  });
}

WorkPtr Communicator::reduce_via_all_reduce_async(const Tensor& t, int root, ReduceOp op) {
  CommState& c = *state_;
  check_tensor(c, "reduce", t, "input");
  check_rank(c, "reduce", root, "root");
  check_op(c, "reduce", op, t.dtype());
  require(c, c.backend->api.all_reduce, "all_reduce (reduce's fallback)");
  // Root reduces in place; the others into a scratch buffer they drop.
  Tensor target = c.rank == root ? t : allocate_tensor(t.shape(), t.dtype(), c.device);
  void *src = data_of(t), *dst = data_of(target);
  uint64_t n = elements(t);
  int32_t dt = static_cast<int32_t>(t.dtype());
  CommState* s = &c;
  return detail::submit(state_, OpInfo{"reduce", t.dtype(), n, root}, {t, target}, [s, src, dst, n, dt, op, root, t] {
    invoke(*s, "all_reduce", [&](const OarDeviceApi& a) {
      return a.all_reduce(a.impl, src, dst, n, dt, plugin_op(op), s->comm, stream_of(*s));
    });
    if (op == ReduceOp::avg && s->rank == root) divide_by_ranks(*s, t);
  });
}

void Communicator::scatter(const Tensor& out, const Tensor& in, int root) { OAR_FINISH(scatter_async(out, in, root)); }

namespace {
// The checks of scatter; returns the element count per rank.
uint64_t check_scatter(const CommState& c, const Tensor& out, const Tensor& in, int root) {
  check_tensor(c, "scatter", out, "output");
  check_rank(c, "scatter", root, "root");
  uint64_t n = elements(out);
  if (c.rank == root) {
    check_tensor(c, "scatter", in, "input (root's)");
    check_same_dtype(c, "scatter", out, in);
    OAR_CHECK_ARG(elements(in) == times(c, "scatter", n, c.nranks),
                  where(c, "scatter") + ": root's in has " + std::to_string(elements(in)) + " elements but " +
                      std::to_string(c.nranks) + " ranks x " + std::to_string(n) + " (out's) were expected");
  }
  return n;
}
}  // namespace

WorkPtr Communicator::scatter_async(const Tensor& out, const Tensor& in, int root) {
  CommState& c = *state_;
  if (!c.backend->api.scatter) return scatter_via_broadcast_async(out, in, root);
  uint64_t n = check_scatter(c, out, in, root);
  void* src = c.rank == root ? data_of(in) : nullptr;
  void* dst = data_of(out);
  int32_t dt = static_cast<int32_t>(out.dtype());
  CommState* s = &c;
  std::vector<Tensor> keep{out};
  if (c.rank == root) keep.push_back(in);
  return detail::submit(state_, OpInfo{"scatter", out.dtype(), n, root}, std::move(keep), [s, src, dst, n, dt, root] {
    invoke(*s, "scatter",
           [&](const OarDeviceApi& a) { return a.scatter(a.impl, src, dst, n, dt, root, s->comm, stream_of(*s)); });
  });
}

WorkPtr Communicator::scatter_via_broadcast_async(const Tensor& out, const Tensor& in, int root) {
  CommState& c = *state_;
  uint64_t n = check_scatter(c, out, in, root);
  require(c, c.backend->api.broadcast, "broadcast (scatter's fallback)");
  // Root broadcasts all blocks; every rank keeps its own.
  Tensor all = c.rank == root ? in : allocate_tensor({static_cast<int64_t>(times(c, "scatter", n, c.nranks))},
                                                     out.dtype(), c.device);
  void *buffer = data_of(all), *dst = data_of(out);
  uint64_t total = n * static_cast<uint64_t>(c.nranks);
  uint64_t block_bytes = n * dtype_size(out.dtype());
  int32_t dt = static_cast<int32_t>(out.dtype());
  CommState* s = &c;
  return detail::submit(state_, OpInfo{"scatter", out.dtype(), n, root}, {out, all},
                        [s, buffer, dst, total, block_bytes, dt, root] {
                          invoke(*s, "broadcast", [&](const OarDeviceApi& a) {
                            return a.broadcast(a.impl, buffer, total, dt, root, s->comm, stream_of(*s));
                          });
                          copy_bytes(*s, dst, static_cast<char*>(buffer) + block_bytes * s->rank, block_bytes);
                        });
}

void Communicator::all_to_all(const Tensor& out, const Tensor& in) { OAR_FINISH(all_to_all_async(out, in)); }

WorkPtr Communicator::all_to_all_async(const Tensor& out, const Tensor& in) {
  CommState& c = *state_;
  check_tensor(c, "all_to_all", in, "input");
  check_tensor(c, "all_to_all", out, "output");
  check_same_dtype(c, "all_to_all", out, in);
  OAR_CHECK_ARG(elements(in) % c.nranks == 0 && elements(out) == elements(in),
                where(c, "all_to_all") + ": in has " + std::to_string(elements(in)) + " elements and out " +
                    std::to_string(elements(out)) + "; both must hold " + std::to_string(c.nranks) +
                    " equal blocks (use all_to_all_v for uneven ones)");
  require(c, c.backend->api.all_to_all, "all_to_all");
  uint64_t n = elements(in) / c.nranks;
  void *src = data_of(in), *dst = data_of(out);
  int32_t dt = static_cast<int32_t>(in.dtype());
  CommState* s = &c;
  return detail::submit(state_, OpInfo{"all_to_all", in.dtype(), elements(in)}, {out, in}, [s, src, dst, n, dt] {
    invoke(*s, "all_to_all",
           [&](const OarDeviceApi& a) { return a.all_to_all(a.impl, src, dst, n, dt, s->comm, stream_of(*s)); });
  });
}

void Communicator::all_to_all_v(const Tensor& out, const Tensor& in, const std::vector<int64_t>& out_counts,
                                const std::vector<int64_t>& in_counts) {
  OAR_FINISH(all_to_all_v_async(out, in, out_counts, in_counts));
}

namespace {
struct Layout {
  std::vector<uint64_t> in_counts, in_offsets, out_counts, out_offsets;
};

std::vector<uint64_t> offsets_of(const CommState& c, const std::vector<int64_t>& counts, const Tensor& t,
                                 const char* which, std::vector<uint64_t>& unsigned_counts) {
  std::string op = "all_to_all_v";
  OAR_CHECK_ARG(counts.size() == static_cast<size_t>(c.nranks),
                where(c, op) + ": " + which + "_counts has " + std::to_string(counts.size()) + " entries but the group has " +
                    std::to_string(c.nranks) + " ranks");
  std::vector<uint64_t> offsets(counts.size());
  uint64_t total = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    OAR_CHECK_ARG(counts[r] >= 0, where(c, op) + ": " + which + "_counts[" + std::to_string(r) + "] is " +
                                      std::to_string(counts[r]) + "; counts cannot be negative");
    offsets[r] = total;
    unsigned_counts.push_back(static_cast<uint64_t>(counts[r]));
    OAR_CHECK_ARG(!__builtin_add_overflow(total, static_cast<uint64_t>(counts[r]), &total),
                  where(c, op) + ": " + which + "_counts overflow 64 bits");
  }
  OAR_CHECK_ARG(total == elements(t), where(c, op) + ": " + which + "_counts sum to " + std::to_string(total) +
                                          " elements but the " + which + " tensor has " +
                                          std::to_string(elements(t)));
  return offsets;
}

Layout check_all_to_all_v(const CommState& c, const Tensor& out, const Tensor& in,
                          const std::vector<int64_t>& out_counts, const std::vector<int64_t>& in_counts) {
  check_tensor(c, "all_to_all_v", in, "input");
  check_tensor(c, "all_to_all_v", out, "output");
  check_same_dtype(c, "all_to_all_v", out, in);
  Layout l;
  l.in_offsets = offsets_of(c, in_counts, in, "in", l.in_counts);
  l.out_offsets = offsets_of(c, out_counts, out, "out", l.out_counts);
  return l;
}
}  // namespace

WorkPtr Communicator::all_to_all_v_async(const Tensor& out, const Tensor& in, const std::vector<int64_t>& out_counts,
                                         const std::vector<int64_t>& in_counts) {
  CommState& c = *state_;
  if (!c.backend->api.all_to_allv) return all_to_all_v_via_send_recv_async(out, in, out_counts, in_counts);
  auto l = std::make_shared<Layout>(check_all_to_all_v(c, out, in, out_counts, in_counts));
  void *src = data_of(in), *dst = data_of(out);
  int32_t dt = static_cast<int32_t>(in.dtype());
  CommState* s = &c;
  return detail::submit(state_, OpInfo{"all_to_all_v", in.dtype(), elements(in)}, {out, in}, [s, src, dst, dt, l] {
    invoke(*s, "all_to_allv", [&](const OarDeviceApi& a) {
      return a.all_to_allv(a.impl, src, l->in_counts.data(), l->in_offsets.data(), dst, l->out_counts.data(),
                           l->out_offsets.data(), dt, s->comm, stream_of(*s));
    });
  });
}

WorkPtr Communicator::all_to_all_v_via_send_recv_async(const Tensor& out, const Tensor& in,
                                                       const std::vector<int64_t>& out_counts,
                                                       const std::vector<int64_t>& in_counts) {
  CommState& c = *state_;
  auto l = std::make_shared<Layout>(check_all_to_all_v(c, out, in, out_counts, in_counts));
  require(c, c.backend->api.send, "send (all_to_all_v's fallback)");
  require(c, c.backend->api.recv, "recv (all_to_all_v's fallback)");
  char *src = static_cast<char*>(data_of(in)), *dst = static_cast<char*>(data_of(out));
  int32_t dt = static_cast<int32_t>(in.dtype());
  size_t esize = dtype_size(in.dtype());
  CommState* s = &c;
  return detail::submit(state_, OpInfo{"all_to_all_v", in.dtype(), elements(in)}, {out, in}, [s, src, dst, dt, esize, l] {
    int me = s->rank;
    copy_bytes(*s, dst + l->out_offsets[me] * esize, src + l->in_offsets[me] * esize, l->in_counts[me] * esize);
    // Pairs (i, j), i < j, in one global order: the lower rank sends first.
    // Deadlock-free even when send blocks until the peer receives.
    for (int i = 0; i < s->nranks; ++i) {
      for (int j = i + 1; j < s->nranks; ++j) {
        if (me != i && me != j) continue;
        int peer = me == i ? j : i;
        auto do_send = [&] {
          if (l->in_counts[peer] == 0) return;
          invoke(*s, "send", [&](const OarDeviceApi& a) {
            return a.send(a.impl, src + l->in_offsets[peer] * esize, l->in_counts[peer], dt, peer, s->comm,
                          stream_of(*s));
          });
        };
        auto do_recv = [&] {
          if (l->out_counts[peer] == 0) return;
          invoke(*s, "recv", [&](const OarDeviceApi& a) {
            return a.recv(a.impl, dst + l->out_offsets[peer] * esize, l->out_counts[peer], dt, peer, s->comm,
                          stream_of(*s));
          });
        };
        if (me == i) {
          do_send();
          do_recv();
        } else {
          do_recv();
          do_send();
        }
      }
    }
  });
}

void Communicator::send(const Tensor& t, int peer) { OAR_FINISH(send_async(t, peer)); }

WorkPtr Communicator::send_async(const Tensor& t, int peer) {
  CommState& c = *state_;
  check_tensor(c, "send", t, "input");
  check_rank(c, "send", peer, "peer");
  OAR_CHECK_ARG(peer != c.rank, where(c, "send") + ": rank " + std::to_string(peer) + " cannot send to itself");
  require(c, c.backend->api.send, "send");
  void* p = data_of(t);
  uint64_t n = elements(t);
  int32_t dt = static_cast<int32_t>(t.dtype());
  CommState* s = &c;
  OpInfo info{"send", t.dtype(), n, peer, false};
  return detail::submit(state_, info, {t}, [s, p, n, dt, peer] {
    invoke(*s, "send", [&](const OarDeviceApi& a) { return a.send(a.impl, p, n, dt, peer, s->comm, stream_of(*s)); });
  });
}

void Communicator::recv(const Tensor& t, int peer) { OAR_FINISH(recv_async(t, peer)); }

WorkPtr Communicator::recv_async(const Tensor& t, int peer) {
  CommState& c = *state_;
  check_tensor(c, "recv", t, "output");
  check_rank(c, "recv", peer, "peer");
  OAR_CHECK_ARG(peer != c.rank, where(c, "recv") + ": rank " + std::to_string(peer) + " cannot receive from itself");
  require(c, c.backend->api.recv, "recv");
  void* p = data_of(t);
  uint64_t n = elements(t);
  int32_t dt = static_cast<int32_t>(t.dtype());
  CommState* s = &c;
  OpInfo info{"recv", t.dtype(), n, peer, false};
  return detail::submit(state_, info, {t}, [s, p, n, dt, peer] {
    invoke(*s, "recv", [&](const OarDeviceApi& a) { return a.recv(a.impl, p, n, dt, peer, s->comm, stream_of(*s)); });
  });
}

void Communicator::barrier() {
  CommState& c = *state_;
  require(c, c.backend->api.barrier, "barrier");
  CommState* s = &c;
  detail::submit(state_, OpInfo{"barrier", DType::u8, 0}, {}, [s] {
    invoke(*s, "barrier", [&](const OarDeviceApi& a) { return a.barrier(a.impl, s->comm, stream_of(*s)); });
  })->wait();
}

#undef OAR_FINISH

}  // namespace oar::distributed
