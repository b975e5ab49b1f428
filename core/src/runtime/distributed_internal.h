// The communicator's private state, shared by distributed.cpp (the
// collectives), distributed_work.cpp (where they run) and
// distributed_health.cpp (progress, diagnosis, check mode).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dispatch/device_context.h"
#include "oar/distributed.h"

namespace oar::distributed::detail {

/// What one collective does, for messages and the check mode.
struct OpInfo {
  std::string name;   // "all_reduce"
  DType dtype = DType::f32;
  uint64_t count = 0;  // elements (this rank's input)
  int root = -1;       // group-local root or peer, -1: none
  bool numbered = true;  // false for send/recv: they take no sequence number
};

/// One rank's published progress (Note [Failures that name the rank]).
struct Progress {
  uint64_t seq = 0;
  std::string op;       // "none" before the first collective
  int64_t stamp_ms = 0;  // wall clock of the last heartbeat
};

struct CommState {
  Device device;
  DeviceBackend* backend = nullptr;  // not owned
  Store* store = nullptr;            // not owned; outlives the communicator
  int nranks = 1, rank = 0;
  std::string key, name;
  std::vector<int> global_ranks;
  int64_t timeout_ms = 0;
  bool check = false;
  bool streams = false;  // the device has a compute stream: collectives are enqueued on it
  /// The worker runs a stream device's collectives (env OAR_COMM_WORKER=1,
  /// for tests of the worker path on the mock): it synchronizes after each.
  bool worker_syncs = false;
  OarComm_t comm = nullptr;
  bool destroyed = false;

  // Sequence numbers, taken on the issuing thread.
  std::mutex issue_mu;
  uint64_t next_seq = 0;

  // The first failure; later work fails fast with it.
  std::mutex fail_mu;
  std::exception_ptr failure;
  std::string failure_message;
  ErrorCode failure_code = ErrorCode::internal;

  // FIFO worker (devices without streams).
  std::mutex queue_mu;
  std::condition_variable queue_cv;
  std::deque<std::function<void()>> queue;
  bool worker_stop = false;
  bool worker_busy = false;
  std::thread worker;

  // Progress publisher.
  std::mutex progress_mu;
  std::condition_variable progress_cv;
  uint64_t progress_seq = 0;
  std::string progress_op = "none";
  bool progress_dirty = true, publisher_stop = false;
  std::thread publisher;
  int64_t heartbeat_ms = 1000;

  /// "all_reduce #17 on group 'world' (rank 0 of 2, f32 x 1024)".
  std::string describe(const OpInfo& op, uint64_t seq) const;
  int global(int local) const { return global_ranks.empty() ? local : global_ranks[static_cast<size_t>(local)]; }
  std::string progress_key(int local_rank) const;

  /// Throws the first failure (fail fast), when there is one.
  void throw_if_failed(const std::string& what);
  /// Records `error` as the first failure unless there is one.
  void fail(std::exception_ptr error, ErrorCode code, const std::string& message);
};

struct WorkState {
  std::shared_ptr<CommState> comm;
  OpInfo op;
  uint64_t seq = 0;
  std::string description;
  std::vector<Tensor> keep;  // alive until completion
  int64_t issued_ms = 0;     // steady clock

  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
  bool synced = false;  // stream devices: the stream was synchronized after it
};

// --- distributed_work.cpp ---
/// Runs `body` as collective `op`: enqueued on the stream in this call, or
/// on the worker thread. `body` makes the plugin calls (throws on failure).
WorkPtr submit(const std::shared_ptr<CommState>& state, OpInfo op, std::vector<Tensor> keep,
               std::function<void()> body);
/// Starts the FIFO worker; it holds `keep` (the state) while it runs.
void start_worker(CommState& state, const std::shared_ptr<CommState>& keep);
/// Waits up to the timeout for queued work, then stops the worker; false
/// when it was stuck in the plugin and had to be detached.
bool stop_worker(CommState& state);
int64_t steady_ms();

// --- distributed_health.cpp ---
void start_publisher(CommState& state);
void stop_publisher(CommState& state);
/// Marks collective `seq` started (coalesced; no store round trip here).
void note_progress(CommState& state, uint64_t seq, const std::string& op);
/// The error for a collective that failed (plugin code and message) or
/// timed out on the host (timed_out): names the ranks that did not arrive.
Error diagnose(CommState& state, const std::string& description, uint64_t seq, ErrorCode code,
               const std::string& plugin_message, bool timed_out);
/// Check mode: writes this rank's record of `op` and compares it with every
/// other rank's; throws Error(invalid_argument) on the first mismatch.
void check_peers(CommState& state, const OpInfo& op, uint64_t seq);
/// Seconds as text: "5 s", "0.3 s".
std::string seconds_text(int64_t ms);
/// OAR_COLLECTIVE_TIMEOUT in ms (default 1800 s).
int64_t default_timeout_ms();
/// OAR_COLLECTIVE_CHECK as 0/1.
bool check_from_env();

}  // namespace oar::distributed::detail
