// Per-rank progress, the sentences for failed and hung collectives, and the
// cross-rank check mode.
//
// Note [Failures that name the rank]
// A hang in a collective is nearly always one rank that is elsewhere: it
// died, or it is still computing, or it called another collective. To say
// which, every rank publishes its progress in the store under
// "oar/progress/<comm key>/<rank>": the sequence number and op of the last
// collective it started, and a wall-clock heartbeat. A small publisher
// thread writes it (coalescing: only the latest state, at most one write per
// 20 ms; a heartbeat every
// heartbeat_ms = timeout / 8, clamped to [100 ms, 5 s]), so a collective
// never waits for the store. When a collective fails or times out, the
// rank reads every other rank's record (short, bounded reads) and names
// each rank behind it: "did not arrive" when its heartbeat is fresh,
// "is unreachable or died" when the heartbeat is older than three periods
// (the process is gone or cannot reach the store). When the store itself
// cannot be read, the store's server (rank 0 serves the TCP store) has
// probably died, and the message says so.
//
// The check mode (OAR_COLLECTIVE_CHECK=1) turns a mismatched call order
// into an error instead of a hang or silently wrong numbers: before each
// numbered collective every rank writes (op, dtype, count, root, group) to
// "oar/check/<comm key>/<seq>/<rank>" and reads every other rank's record
// (bounded by the timeout). Each rank names the lower rank first, so every
// rank raises the same sentence.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "runtime/distributed_internal.h"

namespace oar::distributed::detail {

namespace {

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::vector<uint8_t> bytes_of(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }
std::string text_of(const std::vector<uint8_t>& b) { return std::string(b.begin(), b.end()); }


void publish_now(CommState& c, uint64_t seq, const std::string& op) {
  std::string record = std::to_string(seq) + " " + std::to_string(wall_ms()) + " " + op;
  try {
    c.store->set(c.progress_key(c.rank), bytes_of(record));
  } catch (const std::exception&) {
    // The store is unreachable; a failing collective will say so.
  }
}

bool parse_progress(const std::string& text, Progress& p) {
  std::istringstream in(text);
  return static_cast<bool>(in >> p.seq >> p.stamp_ms >> p.op);
}

std::string last_collective(const Progress& p) {
  if (p.seq == 0) return "it has not started a collective on this group";
  return "its last collective was #" + std::to_string(p.seq) + " " + p.op;
}

}  // namespace

std::string seconds_text(int64_t ms) {
  std::ostringstream out;
  out << static_cast<double>(ms) / 1000.0 << " s";
  return out.str();
}

int64_t default_timeout_ms() {
  const char* env = std::getenv("OAR_COLLECTIVE_TIMEOUT");
  if (!env || !*env) return 1800 * 1000;
  char* end = nullptr;
  double seconds = std::strtod(env, &end);
  OAR_CHECK_ARG(end != env && *end == 0 && seconds > 0,
                std::string("OAR_COLLECTIVE_TIMEOUT is '") + env + "'; expected a positive number of seconds");
  return static_cast<int64_t>(seconds * 1000.0);
}

bool check_from_env() {
  const char* env = std::getenv("OAR_COLLECTIVE_CHECK");
  return env && *env && std::string(env) != "0";
}

std::string CommState::describe(const OpInfo& op, uint64_t seq) const {
  std::string what = op.name;
  if (op.numbered) what += " #" + std::to_string(seq);
  what += " on group '" + name + "' (rank " + std::to_string(global(rank)) + " of " + std::to_string(nranks) + ", " +
          std::string(dtype_short_name(op.dtype)) + " x " + std::to_string(op.count);
  if (op.root >= 0) what += std::string(op.numbered ? ", root " : ", peer ") + std::to_string(global(op.root));
  return what + ")";
}

std::string CommState::progress_key(int local_rank) const {
  return "oar/progress/" + key + "/" + std::to_string(local_rank);
}

void CommState::throw_if_failed(const std::string& what) {
  std::lock_guard<std::mutex> lock(fail_mu);
  if (!failure) return;
  throw Error(failure_code, what + " was not run because of an earlier failure on this communicator: " + failure_message);
}

void CommState::fail(std::exception_ptr error, ErrorCode code, const std::string& message) {
  std::lock_guard<std::mutex> lock(fail_mu);
  if (failure) return;
  failure = std::move(error);
  failure_code = code;
  failure_message = message;
}

constexpr int64_t kMinPublishGapMs = 20;

void start_publisher(CommState& c) {
  c.heartbeat_ms = std::clamp<int64_t>(c.timeout_ms / 8, 100, 5000);
  c.publisher = std::thread([&c] {
    std::unique_lock<std::mutex> lock(c.progress_mu);
    for (;;) {
      c.progress_cv.wait_for(lock, std::chrono::milliseconds(c.heartbeat_ms),
                             [&] { return c.progress_dirty || c.publisher_stop; });
      uint64_t seq = c.progress_seq;
      std::string op = c.progress_op;
      bool stop = c.publisher_stop;
      c.progress_dirty = false;
      lock.unlock();
      publish_now(c, seq, op);
      lock.lock();
      if (stop) return;
      // At most one store write per kMinPublishGapMs: a burst of small
      // collectives costs one round trip, not one each (a failure is
      // diagnosed a timeout later, long after the latest state is out).
      c.progress_cv.wait_for(lock, std::chrono::milliseconds(kMinPublishGapMs), [&] { return c.publisher_stop; });
    }
  });
}

void stop_publisher(CommState& c) {
  if (!c.publisher.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(c.progress_mu);
    c.publisher_stop = true;
  }
  c.progress_cv.notify_all();
  c.publisher.join();
}

void note_progress(CommState& c, uint64_t seq, const std::string& op) {
  {
    std::lock_guard<std::mutex> lock(c.progress_mu);
    c.progress_seq = seq;
    c.progress_op = op;
    c.progress_dirty = true;
  }
  c.progress_cv.notify_one();
}

Error diagnose(CommState& c, const std::string& description, uint64_t seq, ErrorCode code,
               const std::string& plugin_message, bool timed_out) {
  bool timeout = timed_out || code == ErrorCode::timeout;
  std::string message =
      description + (timeout ? " did not complete within " + seconds_text(c.timeout_ms) : std::string(" failed"));
  std::vector<std::string> behind;
  std::string store_error;
  int64_t now = wall_ms();
  int64_t stale_ms = 3 * c.heartbeat_ms + 500;
  int64_t deadline = steady_ms() + 3000;  // the whole diagnosis stays short
  for (int r = 0; r < c.nranks; ++r) {
    if (r == c.rank) continue;
    if (steady_ms() > deadline) {
      behind.push_back("ranks from " + std::to_string(c.global(r)) + " on were not asked (out of time)");
      break;
    }
    std::string who = "rank " + std::to_string(c.global(r));
    Progress p;
    try {
      if (!parse_progress(text_of(c.store->get(c.progress_key(r), 100)), p)) continue;
    } catch (const Error& e) {
      // Every store words a missing key so; anything else is the store failing.
      if (e.code() == ErrorCode::timeout && std::string(e.what()).find("did not appear") != std::string::npos) {
        behind.push_back(who + " has published no progress on this group (it never created its communicator, or died "
                               "right away)");
        continue;
      }
      store_error = e.what();
      break;
    } catch (const std::exception& e) {
      store_error = e.what();
      break;
    }
    if (p.seq >= seq) continue;  // it arrived
    // A broken connection (the plugin's device error) means the rank is gone.
    bool stale = now - p.stamp_ms > stale_ms || code == ErrorCode::device;
    behind.push_back(who + (stale ? " is unreachable or died (" : " did not arrive (") + last_collective(p) + ")");
  }
  if (behind.empty() && store_error.empty() && code == ErrorCode::device) {
    // Every rank had started it and a connection broke: a peer died inside
    // the collective. Its heartbeat stops; wait (bounded) until one goes stale.
    int64_t until = steady_ms() + stale_ms + c.heartbeat_ms + 500;
    while (behind.empty() && store_error.empty() && steady_ms() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(c.heartbeat_ms, 200)));
      for (int r = 0; r < c.nranks; ++r) {
        if (r == c.rank) continue;
        Progress p;
        try {
          if (!parse_progress(text_of(c.store->get(c.progress_key(r), 100)), p)) continue;
        } catch (const std::exception& e) {
          store_error = e.what();
          break;
        }
        if (wall_ms() - p.stamp_ms > stale_ms) {
          behind.push_back("rank " + std::to_string(c.global(r)) + " died or became unreachable during it (" +
                           last_collective(p) + "; its heartbeat stopped)");
        }
      }
    }
  }
  if (!behind.empty()) {
    message += ": ";
    for (size_t i = 0; i < behind.size(); ++i) message += (i ? "; " : "") + behind[i];
  } else if (store_error.empty() && timeout) {
    message += ": every rank has started it";
  }
  if (!store_error.empty()) {
    message += behind.empty() ? ": " : "; ";
    if (auto* tcp = dynamic_cast<TCPStore*>(c.store)) {
      message += "the store at " + tcp->host() + ":" + std::to_string(tcp->port()) +
                 " (served by rank 0) cannot be reached: rank 0 has probably died (" + store_error + ")";
    } else {
      message += "the store cannot be reached (" + store_error + "): rank 0, which serves it, has probably died";
    }
  }
  if (!plugin_message.empty()) message += " [" + plugin_message + "]";
  return Error(timeout ? ErrorCode::timeout : code, message);
}

namespace {

struct CheckRecord {
  std::string op, dtype, group;
  uint64_t count = 0;
  int root = -1;
  std::string text() const {
    std::string s = op + "(" + dtype;
    if (op != "all_to_all_v") s += ", " + std::to_string(count) + " elements";
    if (root >= 0) s += ", root " + std::to_string(root);
    s += ")";
    return s;
  }
  bool operator==(const CheckRecord& o) const {
    return op == o.op && dtype == o.dtype && group == o.group && root == o.root &&
           (op == "all_to_all_v" || count == o.count);
  }
};

std::string encode(const CheckRecord& r) {
  return r.op + "\n" + r.dtype + "\n" + std::to_string(r.count) + "\n" + std::to_string(r.root) + "\n" + r.group;
}

CheckRecord decode(const std::string& text) {
  CheckRecord r;
  std::istringstream in(text);
  std::string count, root;
  std::getline(in, r.op);
  std::getline(in, r.dtype);
  std::getline(in, count);
  std::getline(in, root);
  std::getline(in, r.group);
  r.count = count.empty() ? 0 : std::stoull(count);
  r.root = root.empty() ? -1 : std::stoi(root);
  return r;
}

}  // namespace

void check_peers(CommState& c, const OpInfo& op, uint64_t seq) {
  std::string prefix = "oar/check/" + c.key + "/" + std::to_string(seq) + "/";
  CheckRecord mine{op.name, std::string(dtype_short_name(op.dtype)), c.name, op.count, op.root >= 0 ? c.global(op.root) : -1};
  c.store->set(prefix + std::to_string(c.rank), bytes_of(encode(mine)));
  int64_t deadline = steady_ms() + c.timeout_ms;
  for (int r = 0; r < c.nranks; ++r) {
    if (r == c.rank) continue;
    CheckRecord theirs;
    try {
      theirs = decode(text_of(c.store->get(prefix + std::to_string(r), std::max<int64_t>(1, deadline - steady_ms()))));
    } catch (const Error& e) {
      if (e.code() != ErrorCode::timeout) throw;
      throw diagnose(c, c.describe(op, seq), seq, ErrorCode::timeout, "", true);
    }
    if (theirs == mine) continue;
    bool me_first = c.rank < r;
    const CheckRecord& lo = me_first ? mine : theirs;
    const CheckRecord& hi = me_first ? theirs : mine;
    int lo_rank = c.global(me_first ? c.rank : r), hi_rank = c.global(me_first ? r : c.rank);
    std::string message = "collective mismatch at #" + std::to_string(seq) + " on group '" + c.name + "': rank " +
                          std::to_string(lo_rank) + " called " + lo.text() + " but rank " + std::to_string(hi_rank) +
                          " called " + hi.text();
    if (lo.group != hi.group) message += " (on group '" + hi.group + "')";
    throw Error(ErrorCode::invalid_argument, message);
  }
}

}  // namespace oar::distributed::detail
