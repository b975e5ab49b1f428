/// \file distributed.h
/// Collective communication over a device plugin's collectives (Gloo on cpu,
/// the mock's reference, NCCL later). Every collective has a sync form and an
/// async form returning a Work; collectives of one communicator run in issue
/// order. Note [Communicator execution] in core/src/runtime/distributed_work.cpp
/// says where they run; Note [Failures that name the rank] in
/// distributed_health.cpp how a failure or a hang becomes a sentence.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "oar/plugin_api.h"
#include "oar/store.h"
#include "oar/tensor.h"

namespace oar::distributed {

/// Reduction of all_reduce / reduce / reduce_scatter. avg is the host's: a
/// sum, then a division by nranks of this rank's result (integer dtypes
/// truncate; bool has no avg).
enum class ReduceOp : int32_t {
  sum = OAR_REDUCE_SUM,
  prod = OAR_REDUCE_PROD,
  max = OAR_REDUCE_MAX,
  min = OAR_REDUCE_MIN,
  avg = 4
};

/// "sum", "prod", "max", "min" or "avg".
const char* reduce_op_name(ReduceOp op);

/// How a communicator names itself and whether it checks its peers.
struct CommOptions {
  /// The group's name in messages ("world", "group 1").
  std::string name = "world";
  /// Global rank of each group-local rank (empty: 0..nranks-1); messages
  /// name ranks by their global rank.
  std::vector<int> global_ranks;
  /// 1: before each collective every rank compares (op, dtype, count, root,
  /// group) with every other rank through the store and the first mismatch
  /// raises on every rank; 0: off; -1: env OAR_COLLECTIVE_CHECK.
  int check = -1;
};

namespace detail {
struct CommState;
struct WorkState;
}  // namespace detail

/// While alive, collectives issued on this thread are waited for at once
/// (the sync forms and Python's sync_op=True hold one): on a device without
/// streams (cpu) a communicator with nothing queued then runs the collective
/// on the calling thread instead of handing it to its worker and back.
class SyncScope {
 public:
  SyncScope();
  ~SyncScope();
  SyncScope(const SyncScope&) = delete;
  SyncScope& operator=(const SyncScope&) = delete;

 private:
  bool previous_;
};

/// A collective in flight. It keeps its tensors alive until it completes.
class Work {
 public:
  explicit Work(std::shared_ptr<detail::WorkState> state) : state_(std::move(state)) {}
  /// Waits for the collective and rethrows its error (an oar::Error naming
  /// the collective and the ranks that did not arrive). timeout_ms -1: the
  /// communicator's timeout; past it throws Error(timeout) and the
  /// communicator is failed. On a device with streams it synchronizes the
  /// stream, bounded by the plugin's timeout (given to comm_init). Returns
  /// true (completed).
  bool wait(int64_t timeout_ms = -1);
  /// True once the collective has finished (successfully or not).
  bool is_completed() const;
  /// "all_reduce #3 on group 'world' (rank 0 of 2, f32 x 4)".
  const std::string& description() const;

 private:
  std::shared_ptr<detail::WorkState> state_;
};

using WorkPtr = std::shared_ptr<Work>;

/// This rank's communicator of a group. Rank 0 creates the unique id and
/// publishes it in `store` under `key`; the other ranks wait for it there.
/// Roots and peers are group-local ranks.
class Communicator {
 public:
  /// timeout_ms -1: env OAR_COLLECTIVE_TIMEOUT (seconds, default 1800). It
  /// bounds every collective and every store wait made for one.
  Communicator(const Device& device, int nranks, int rank, Store& store, const std::string& key = "oar/comm",
               int64_t timeout_ms = -1, CommOptions opts = {});
  /// Waits for pending work (bounded by the timeout), then destroys.
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const;
  int nranks() const;
  const Device& device() const;
  const std::string& name() const;
  /// Global rank of each group-local rank.
  const std::vector<int>& global_ranks() const;
  int64_t timeout_ms() const;
  const std::string& key() const;

  /// Reduces `tensor` across ranks in place.
  void all_reduce(const Tensor& tensor, ReduceOp op = ReduceOp::sum);
  WorkPtr all_reduce_async(const Tensor& tensor, ReduceOp op = ReduceOp::sum);
  /// Every rank's tensor stacked along a new leading dim of size nranks.
  Tensor all_gather(const Tensor& tensor);
  /// Into `out` (contiguous, nranks * in.numel elements, rank-major).
  WorkPtr all_gather_async(const Tensor& out, const Tensor& in);
  /// Reduces across ranks and keeps block `rank` of the leading dim, which
  /// must be divisible by nranks.
  Tensor reduce_scatter(const Tensor& tensor, ReduceOp op = ReduceOp::sum);
  /// in.numel == nranks * out.numel; out gets block `rank`, reduced.
  WorkPtr reduce_scatter_async(const Tensor& out, const Tensor& in, ReduceOp op = ReduceOp::sum);
  /// Copies root's tensor into every rank's `tensor` in place.
  void broadcast(const Tensor& tensor, int root);
  WorkPtr broadcast_async(const Tensor& tensor, int root);
  /// Reduces into root's `tensor` in place; other ranks' tensors unchanged.
  void reduce(const Tensor& tensor, int root, ReduceOp op = ReduceOp::sum);
  WorkPtr reduce_async(const Tensor& tensor, int root, ReduceOp op = ReduceOp::sum);
  /// Root's `in` (nranks * out.numel elements, rank-major; ignored and may be
  /// undefined elsewhere): every rank receives block `rank` into `out`.
  void scatter(const Tensor& out, const Tensor& in, int root);
  WorkPtr scatter_async(const Tensor& out, const Tensor& in, int root);
  /// Equal blocks: block r of `in` goes to rank r; block r of `out` comes
  /// from rank r.
  void all_to_all(const Tensor& out, const Tensor& in);
  WorkPtr all_to_all_async(const Tensor& out, const Tensor& in);
  /// Uneven blocks, counts in elements per rank (nranks entries each):
  /// in_counts[r] elements of `in` (packed rank-major) go to rank r and
  /// out_counts[r] elements from rank r land in `out` (packed rank-major).
  void all_to_all_v(const Tensor& out, const Tensor& in, const std::vector<int64_t>& out_counts,
                    const std::vector<int64_t>& in_counts);
  WorkPtr all_to_all_v_async(const Tensor& out, const Tensor& in, const std::vector<int64_t>& out_counts,
                             const std::vector<int64_t>& in_counts);
  void send(const Tensor& tensor, int peer);
  WorkPtr send_async(const Tensor& tensor, int peer);
  /// Receives into `tensor` in place.
  void recv(const Tensor& tensor, int peer);
  WorkPtr recv_async(const Tensor& tensor, int peer);
  /// Returns once every rank has reached it.
  void barrier();

  /// The fallbacks used when the plugin lacks reduce / scatter / all_to_allv
  /// (ABI 1.2 entries may be null); public so tests can run them on a
  /// plugin that has the entries.
  WorkPtr reduce_via_all_reduce_async(const Tensor& tensor, int root, ReduceOp op);
  WorkPtr scatter_via_broadcast_async(const Tensor& out, const Tensor& in, int root);
  WorkPtr all_to_all_v_via_send_recv_async(const Tensor& out, const Tensor& in,
                                           const std::vector<int64_t>& out_counts,
                                           const std::vector<int64_t>& in_counts);

  /// Waits for pending work (bounded by the timeout) and destroys the
  /// plugin's communicator; idempotent. Later collectives throw.
  void destroy();

 private:
  std::shared_ptr<detail::CommState> state_;  // owned; shared with pending Work and the worker threads
};

}  // namespace oar::distributed
