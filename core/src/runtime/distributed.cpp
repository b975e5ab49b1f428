// Communicator over the device table's collectives.
#include "oar/distributed.h"

#include "dispatch/device_context.h"

namespace oar::distributed {

namespace {
DeviceBackend& collective_backend(const Device& device, const char* what) {
  DeviceBackend& b = backend_of(device);
  if (!b.api.comm_init || !b.api.comm_unique_id || !b.api.comm_unique_id_size) {
    throw Error(ErrorCode::unsupported, std::string("distributed: device type '") + device.type +
                                            "' has no collectives (needed for " + what + ")");
  }
  return b;
}

void* data_of(const Tensor& t) {
  // Collectives read and write flat buffers; a strided view (Note [Views]) has none.
  OAR_CHECK_ARG(t.is_contiguous(), "collective: the tensor of shape " + shape_str(t.shape()) +
                                       " is a strided view; pass t.contiguous() (collectives need contiguous memory)");
  return t.impl().storage ? static_cast<char*>(t.impl().storage->data()) + t.impl().byte_offset : nullptr;
}

OarStream_t stream_of(DeviceBackend& b, const Device& d) { return b.slot(d.index).stream; }

template <typename F>
void require(F fn, const Device& device, const char* name) {
  if (!fn) throw Error(ErrorCode::unsupported, "distributed: device type '" + device.type + "' does not implement " + name);
}
}  // namespace

Communicator::Communicator(const Device& device, int nranks, int rank, Store& store, const std::string& key,
                           int64_t timeout_ms)
    : device_(device), nranks_(nranks), rank_(rank) {
  OAR_CHECK_ARG(nranks > 0 && rank >= 0 && rank < nranks, "distributed: rank " + std::to_string(rank) +
                                                          " is outside [0, " + std::to_string(nranks) + ")");
  DeviceBackend& b = collective_backend(device, "a communicator");
  uint64_t size = 0;
  host_clear_error();
  b.check(b.api.comm_unique_id_size(b.api.impl, &size), "comm_unique_id_size");
  std::vector<uint8_t> id(size);
  if (rank == 0) {
    b.check(b.api.comm_unique_id(b.api.impl, id.data(), size), "comm_unique_id");
    store.set(key, id);
  } else {
    id = store.get(key, timeout_ms);
    OAR_CHECK_ARG(id.size() == size, "distributed: the unique id under '" + key + "' has " + std::to_string(id.size()) +
                                     " bytes but " + std::to_string(size) + " were expected");
  }
  b.check(b.api.comm_init(b.api.impl, id.data(), size, nranks, rank, device.index, reinterpret_cast<OarStore_t>(&store),
                          timeout_ms, &comm_),
          "comm_init");
}

Communicator::~Communicator() {
  if (!comm_) return;
  DeviceBackend& b = backend_of(device_);
  b.api.stream_synchronize(b.api.impl, device_.index, stream_of(b, device_));
  b.api.comm_destroy(b.api.impl, comm_);
}

void Communicator::all_reduce(const Tensor& t, ReduceOp op) {
  DeviceBackend& b = backend_of(device_);
  require(b.api.all_reduce, device_, "all_reduce");
  host_clear_error();
  b.check(b.api.all_reduce(b.api.impl, data_of(t), data_of(t), static_cast<uint64_t>(t.numel()),
                           static_cast<int32_t>(t.dtype()), static_cast<int32_t>(op), comm_, stream_of(b, device_)),
          "all_reduce");
}

Tensor Communicator::all_gather(const Tensor& t) {
  DeviceBackend& b = backend_of(device_);
  require(b.api.all_gather, device_, "all_gather");
  Shape shape = t.shape();
  shape.insert(shape.begin(), nranks_);
  Tensor out = allocate_tensor(shape, t.dtype(), device_);
  host_clear_error();
  b.check(b.api.all_gather(b.api.impl, data_of(t), data_of(out), static_cast<uint64_t>(t.numel()),
                           static_cast<int32_t>(t.dtype()), comm_, stream_of(b, device_)),
          "all_gather");
  return out;
}

Tensor Communicator::reduce_scatter(const Tensor& t, ReduceOp op) {
  DeviceBackend& b = backend_of(device_);
  require(b.api.reduce_scatter, device_, "reduce_scatter");
  OAR_CHECK_ARG(t.dim() >= 1 && t.shape()[0] % nranks_ == 0,
            "reduce_scatter: the leading dim of shape " + shape_str(t.shape()) + " is not divisible by " +
                std::to_string(nranks_) + " ranks");
  Shape shape = t.shape();
  shape[0] /= nranks_;
  Tensor out = allocate_tensor(shape, t.dtype(), device_);
  host_clear_error();
  b.check(b.api.reduce_scatter(b.api.impl, data_of(t), data_of(out), static_cast<uint64_t>(out.numel()),
                               static_cast<int32_t>(t.dtype()), static_cast<int32_t>(op), comm_, stream_of(b, device_)),
          "reduce_scatter");
  return out;
}

void Communicator::broadcast(const Tensor& t, int root) {
  DeviceBackend& b = backend_of(device_);
  require(b.api.broadcast, device_, "broadcast");
  host_clear_error();
  b.check(b.api.broadcast(b.api.impl, data_of(t), static_cast<uint64_t>(t.numel()), static_cast<int32_t>(t.dtype()),
                          root, comm_, stream_of(b, device_)),
          "broadcast");
}

void Communicator::send(const Tensor& t, int peer) {
  DeviceBackend& b = backend_of(device_);
  require(b.api.send, device_, "send");
  host_clear_error();
  b.check(b.api.send(b.api.impl, data_of(t), static_cast<uint64_t>(t.numel()), static_cast<int32_t>(t.dtype()), peer,
                     comm_, stream_of(b, device_)),
          "send");
}

void Communicator::recv(const Tensor& t, int peer) {
  DeviceBackend& b = backend_of(device_);
  require(b.api.recv, device_, "recv");
  host_clear_error();
  b.check(b.api.recv(b.api.impl, data_of(t), static_cast<uint64_t>(t.numel()), static_cast<int32_t>(t.dtype()), peer,
                     comm_, stream_of(b, device_)),
          "recv");
}

void Communicator::barrier() {
  DeviceBackend& b = backend_of(device_);
  require(b.api.barrier, device_, "barrier");
  host_clear_error();
  b.check(b.api.barrier(b.api.impl, comm_, stream_of(b, device_)), "barrier");
  b.check(b.api.stream_synchronize(b.api.impl, device_.index, stream_of(b, device_)), "stream_synchronize");
}

}  // namespace oar::distributed
