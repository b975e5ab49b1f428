/// \file distributed.h
/// Collective communication over a device plugin's collectives (the mock's
/// reference today; Gloo and NCCL with the distribution work). Collectives
/// run on the device's compute stream, ordered with the ops around them.
#pragma once

#include <cstdint>
#include <string>

#include "oar/plugin_api.h"
#include "oar/store.h"
#include "oar/tensor.h"

namespace oar::distributed {

/// Reduction of all_reduce / reduce_scatter.
enum class ReduceOp : int32_t { sum = OAR_REDUCE_SUM, prod = OAR_REDUCE_PROD, max = OAR_REDUCE_MAX, min = OAR_REDUCE_MIN };

/// This rank's communicator. Rank 0 creates the unique id and publishes it
/// in `store` under `key`; the other ranks wait for it there.
class Communicator {
 public:
  Communicator(const Device& device, int nranks, int rank, Store& store, const std::string& key = "oar/comm",
               int64_t timeout_ms = 60000);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  const Device& device() const { return device_; }

  /// Reduces `tensor` across ranks in place.
  void all_reduce(const Tensor& tensor, ReduceOp op = ReduceOp::sum);
  /// Every rank's tensor stacked along a new leading dim of size nranks.
  Tensor all_gather(const Tensor& tensor);
  /// Reduces across ranks and keeps block `rank` of the leading dim, which
  /// must be divisible by nranks.
  Tensor reduce_scatter(const Tensor& tensor, ReduceOp op = ReduceOp::sum);
  /// Copies root's tensor into every rank's `tensor` in place.
  void broadcast(const Tensor& tensor, int root);
  void send(const Tensor& tensor, int peer);
  /// Receives into `tensor` in place.
  void recv(const Tensor& tensor, int peer);
  void barrier();

 private:
  Device device_;
  int nranks_;
  int rank_;
  OarComm_t comm_ = nullptr;
};

}  // namespace oar::distributed
