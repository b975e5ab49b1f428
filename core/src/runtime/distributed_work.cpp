// Where a communicator's collectives run, and their Work handles.
//
// Note [Communicator execution]
// Collectives of one communicator run in issue order, and an async one lets
// the caller compute meanwhile (DataParallel overlaps its gradient
// all_reduces with the backward pass):
// - A device with streams (the mock; CUDA later) gets the plugin call in
//   the issuing call: the plugin enqueues it on the compute stream, ordered
//   with the kernels around it. Work::wait synchronizes the stream (the
//   plugin's own timeout, given to comm_init, bounds it). The sync forms
//   do not block the host: like the kernels, a collective's result is
//   ready for the next op on the stream, and its failure surfaces at the
//   next synchronization.
// - A device without streams (cpu: stream_create is null) would block the
//   caller inside the plugin, so the plugin calls run on one FIFO worker
//   thread per communicator; the sync forms are async + wait. Work::wait
//   waits with a deadline, so the host enforces the timeout even where the
//   plugin does not. OAR_COMM_WORKER=1 puts a stream device's collectives
//   on the worker too (it synchronizes the stream after each), so the tests
//   cover this path on the mock.
// Either way a collective takes its sequence number on the issuing thread
// (under issue_mu, which also orders the queue), a failure is recorded as
// the communicator's first failure, and later work fails fast with it.
#include <algorithm>
#include <chrono>

#include "runtime/distributed_internal.h"

namespace oar::distributed {

using detail::CommState;
using detail::WorkState;

namespace detail {

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {

void complete(WorkState& w, std::exception_ptr error) {
  std::lock_guard<std::mutex> lock(w.mu);
  w.error = std::move(error);
  w.done = true;
  w.keep.clear();
  w.cv.notify_all();
}

// The error a plugin call (or the check mode) threw, as the collective's.
std::exception_ptr collective_error(CommState& c, const WorkState& w, std::exception_ptr raw) {
  try {
    std::rethrow_exception(raw);
  } catch (const Error& e) {
    // Errors built by diagnose/check_peers already name the collective.
    std::string text = e.what();
    if (text.rfind(w.description, 0) == 0 || text.rfind("collective mismatch", 0) == 0) {
      c.fail(raw, e.code(), e.what());
      return raw;
    }
    Error named = (e.code() == ErrorCode::timeout || e.code() == ErrorCode::device)
                      ? diagnose(c, w.description, w.seq, e.code(), e.what(), false)
                      : Error(e.code(), w.description + " failed: " + e.what());
    auto p = std::make_exception_ptr(named);
    c.fail(p, named.code(), named.what());
    return p;
  } catch (const std::exception& e) {
    Error named(ErrorCode::internal, w.description + " failed: " + e.what());
    auto p = std::make_exception_ptr(named);
    c.fail(p, named.code(), named.what());
    return p;
  }
}

void run_task(CommState& c, WorkState& w, const std::function<void()>& body) {
  std::exception_ptr error;
  try {
    c.throw_if_failed(w.description);
    try {
      if (c.check && w.op.numbered) check_peers(c, w.op, w.seq);
      body();
      if (c.worker_syncs) {
        DeviceBackend& b = *c.backend;
        host_clear_error();
        b.check(b.api.stream_synchronize(b.api.impl, c.device.index, b.slot(c.device.index).stream),
                w.op.name.c_str());
      }
    } catch (...) {
      error = collective_error(c, w, std::current_exception());
    }
  } catch (...) {
    error = std::current_exception();  // fail fast: the earlier failure
  }
  complete(w, error);
}

}  // namespace

namespace {
thread_local bool t_sync = false;  // inside a SyncScope
}  // namespace

WorkPtr submit(const std::shared_ptr<CommState>& state, OpInfo op, std::vector<Tensor> keep,
               std::function<void()> body) {
  CommState& c = *state;
  auto w = std::make_shared<WorkState>();
  w->comm = state;
  w->keep = std::move(keep);
  w->issued_ms = steady_ms();
  std::unique_lock<std::mutex> issue(c.issue_mu);
  if (c.destroyed) {
    throw Error(ErrorCode::invalid_argument,
                op.name + " on group '" + c.name + "': the communicator was destroyed; create a new one");
  }
  w->seq = op.numbered ? ++c.next_seq : c.next_seq;
  w->op = std::move(op);
  w->description = c.describe(w->op, w->seq);
  c.throw_if_failed(w->description);
  if (w->op.numbered) note_progress(c, w->seq, w->op.name);
  if (c.streams) {
    // Enqueued here, in order (issue_mu is held); the stream runs it.
    std::exception_ptr error;
    try {
      if (c.check && w->op.numbered) check_peers(c, w->op, w->seq);
      body();
    } catch (...) {
      error = collective_error(c, *w, std::current_exception());
    }
    if (error) {
      complete(*w, nullptr);
      std::rethrow_exception(error);
    }
  } else {
    bool here = false;
    {
      std::lock_guard<std::mutex> lock(c.queue_mu);
      if (t_sync && c.queue.empty() && !c.worker_busy) {
        c.worker_busy = true;  // the worker starts nothing until this returns
        here = true;
      } else {
        c.queue.push_back([&c, w, body = std::move(body)] { run_task(c, *w, body); });
      }
    }
    if (here) {
      // A sync call with nothing queued: run it on this thread (issue_mu is
      // still held, so the order stays the issue order).
      run_task(c, *w, body);
      {
        std::lock_guard<std::mutex> lock(c.queue_mu);
        c.worker_busy = false;
      }
      c.queue_cv.notify_all();
    } else {
      c.queue_cv.notify_one();
    }
  }
  return std::make_shared<Work>(w);
}

void start_worker(CommState& c, const std::shared_ptr<CommState>& keep) {
  c.worker = std::thread([&c, keep] {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(c.queue_mu);
        // worker_busy while the queue is not empty: a sync call runs on its
        // own thread (submit); wait for it.
        c.queue_cv.wait(lock, [&] {
          return (c.worker_stop && c.queue.empty()) || (!c.queue.empty() && !c.worker_busy);
        });
        if (c.queue.empty()) return;
        task = std::move(c.queue.front());
        c.queue.pop_front();
        c.worker_busy = true;
      }
      task();
      {
        std::lock_guard<std::mutex> lock(c.queue_mu);
        c.worker_busy = false;
      }
      c.queue_cv.notify_all();
    }
  });
}

bool stop_worker(CommState& c) {
  if (!c.worker.joinable()) return true;
  std::unique_lock<std::mutex> lock(c.queue_mu);
  c.worker_stop = true;
  c.queue_cv.notify_all();
  auto drained = [&] { return c.queue.empty() && !c.worker_busy; };
  bool failed;
  {
    std::lock_guard<std::mutex> fail_lock(c.fail_mu);
    failed = c.failure != nullptr;
  }
  // A failed comm's work is not waited for long: it fails fast or is stuck.
  int64_t grace = failed ? std::min<int64_t>(c.timeout_ms, 2000) : c.timeout_ms + 1000;
  bool ok = c.queue_cv.wait_for(lock, std::chrono::milliseconds(grace), drained);
  if (!ok && c.backend->api.comm_abort && c.comm) {
    // Stuck in the plugin past the timeout: abort the comm to unblock it.
    lock.unlock();
    c.backend->api.comm_abort(c.backend->api.impl, c.comm);
    lock.lock();
    ok = c.queue_cv.wait_for(lock, std::chrono::milliseconds(2000), drained);
  }
  lock.unlock();
  if (ok) {
    c.worker.join();
  } else {
    c.worker.detach();  // it holds the state; the plugin's comm is leaked
  }
  return ok;
}

}  // namespace detail

SyncScope::SyncScope() : previous_(detail::t_sync) { detail::t_sync = true; }
SyncScope::~SyncScope() { detail::t_sync = previous_; }

bool Work::wait(int64_t timeout_ms) {
  WorkState& w = *state_;
  CommState& c = *w.comm;
  std::unique_lock<std::mutex> lock(w.mu);
  if (c.streams) {
    if (!w.done) {
      lock.unlock();
      DeviceBackend& b = *c.backend;
      host_clear_error();
      OarStatus status = b.api.stream_synchronize(b.api.impl, c.device.index, b.slot(c.device.index).stream);
      std::exception_ptr error;
      if (status != OAR_OK) {
        PluginFailure f = host_take_failure(status);
        Error e = (f.code == ErrorCode::timeout || f.code == ErrorCode::device)
                      ? detail::diagnose(c, w.description, w.seq, f.code, f.message, false)
                      : Error(f.code, w.description + " failed: " + f.message);
        error = std::make_exception_ptr(e);
        c.fail(error, e.code(), e.what());
      } else {
        // The stream's error went to whoever synchronized first (destroy, a
        // copy): the comm failed, so this collective is not trusted.
        try {
          c.throw_if_failed(w.description);
        } catch (...) {
          error = std::current_exception();
        }
      }
      detail::complete(w, error);
      lock.lock();
    }
    if (w.error) std::rethrow_exception(w.error);
    return true;
  }
  int64_t limit = timeout_ms < 0 ? c.timeout_ms : timeout_ms;
  if (!w.cv.wait_for(lock, std::chrono::milliseconds(limit), [&] { return w.done; })) {
    lock.unlock();
    Error e = detail::diagnose(c, w.description, w.seq, ErrorCode::timeout, "", true);
    c.fail(std::make_exception_ptr(e), e.code(), e.what());
    throw e;
  }
  if (w.error) std::rethrow_exception(w.error);
  return true;
}

bool Work::is_completed() const {
  WorkState& w = *state_;
  {
    std::lock_guard<std::mutex> lock(w.mu);
    if (w.done) return true;
  }
  CommState& c = *w.comm;
  if (!c.streams) return false;
  DeviceBackend& b = *c.backend;
  if (!b.api.stream_query) return false;
  int32_t done = 0;
  host_clear_error();
  // The whole stream done implies this collective done; an error stays for wait().
  if (b.api.stream_query(b.api.impl, c.device.index, b.slot(c.device.index).stream, &done) != OAR_OK) {
    host_clear_error();
    return true;
  }
  return done != 0;
}

const std::string& Work::description() const { return state_->description; }

}  // namespace oar::distributed
