// The process-wide default group of C++ programs (dist_env.h):
// init_parallel_env, get_rank, get_world_size, new_group. The Python
// package builds its own from the same pieces (oar/distributed/parallel.py);
// a process uses one or the other.
#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <numeric>

#include "oar/dist_env.h"
#include "oar/distributed.h"
#include "oar/error.h"
#include "oar/runtime.h"
#include "oar/store.h"
#include "runtime/runtime_state.h"

namespace oar::distributed {

namespace {

struct DefaultGroupState {
  std::mutex mutex;
  DistEnv env;
  std::unique_ptr<Store> store;  // owned; outlives every communicator below
  std::unique_ptr<Group> world;
  std::vector<std::shared_ptr<Group>> groups;  // shared with callers of new_group
  Device device;
  int next_group_id = 1;  // Paddle's rule: every rank creates groups in the same order
};

DefaultGroupState& state() {
  static DefaultGroupState s;
  return s;
}

int64_t collective_timeout_ms() {
  const char* text = std::getenv("OAR_COLLECTIVE_TIMEOUT");
  if (!text || !*text) return int64_t{1800} * 1000;
  char* end = nullptr;
  double seconds = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(seconds > 0)) {
    throw Error(ErrorCode::invalid_argument, std::string("distributed: OAR_COLLECTIVE_TIMEOUT='") +
                                                 text + "' is not a positive number of seconds");
  }
  return static_cast<int64_t>(seconds * 1000);
}

Device collective_device() {
  const char* text = std::getenv("OAR_DIST_DEVICE");
  return text && *text ? parse_device(text) : default_device();
}

CommOptions options(const std::string& name, const std::vector<int>& ranks) {
  CommOptions o;
  o.name = name;
  o.global_ranks = ranks;
  return o;
}

// Rank 0 serves the store, and a peer may still need it while it tears its
// communicators down: every rank says it is done, and rank 0 waits for the
// others (at most the collective timeout, capped at a minute: a peer that
// died never says so) before its store goes away.
void release_store(DefaultGroupState& s) {
  if (!s.store || s.env.world_size <= 1) return;
  try {
    s.store->set("oar/exit/" + std::to_string(s.env.rank), {1});
    if (s.env.rank != 0) return;
    const int64_t grace_ms = std::min<int64_t>(collective_timeout_ms(), 60000);
    for (int r = 1; r < s.env.world_size; ++r)
      s.store->wait("oar/exit/" + std::to_string(r), grace_ms);
  } catch (const std::exception& e) {
    log_message(OAR_LOG_INFO,
                std::string("distributed: destroy_process_group did not see every rank finish: ") +
                    e.what());
  }
}

}  // namespace

Group::Group(int id, std::vector<int> ranks, int rank, std::shared_ptr<Communicator> comm)
    : id_(id), ranks_(std::move(ranks)), rank_(rank), comm_(std::move(comm)) {}

Communicator& Group::comm() const {
  if (!comm_) {
    throw Error(ErrorCode::invalid_argument,
                "distributed: group " + std::to_string(id_) +
                    (rank_ < 0 ? " does not include this process" : " was destroyed") +
                    "; it has no communicator");
  }
  return *comm_;
}

void Group::destroy() {
  if (comm_) comm_->destroy();
  comm_.reset();
}

Group& init_parallel_env() {
  DefaultGroupState& s = state();
  std::lock_guard lock(s.mutex);
  if (s.world) return *s.world;
  DistEnv env = detect_dist_env();
  log_message(OAR_LOG_INFO, describe(env));
  // The Gloo plugin finds its peers' interface through these.
  setenv("MASTER_ADDR", env.master_addr.c_str(), 1);
  setenv("MASTER_PORT", std::to_string(env.master_port).c_str(), 1);
  int64_t timeout_ms = collective_timeout_ms();
  Device device = collective_device();
  std::unique_ptr<Store> store;
  if (env.world_size > 1) {
    store = std::make_unique<TCPStore>(env.master_addr, env.master_port, env.rank == 0, env.job_id,
                                       timeout_ms);
  } else {
    store = std::make_unique<InProcessStore>();
  }
  std::vector<int> ranks(env.world_size);
  std::iota(ranks.begin(), ranks.end(), 0);
  auto comm = std::make_shared<Communicator>(device, env.world_size, env.rank, *store,
                                             "oar/group/0", timeout_ms, options("world", ranks));
  s.env = env;
  s.device = device;
  s.store = std::move(store);
  s.world = std::make_unique<Group>(0, ranks, env.rank, std::move(comm));
  s.next_group_id = 1;
  return *s.world;
}

bool is_initialized() {
  std::lock_guard lock(state().mutex);
  return state().world != nullptr;
}

int get_rank() {
  DefaultGroupState& s = state();
  std::lock_guard lock(s.mutex);
  return s.world ? s.env.rank : 0;
}

int get_world_size() {
  DefaultGroupState& s = state();
  std::lock_guard lock(s.mutex);
  return s.world ? s.env.world_size : 1;
}

Group& default_group() {
  DefaultGroupState& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.world) {
    throw Error(ErrorCode::invalid_argument,
                "distributed: the default group does not exist yet; call "
                "oar::distributed::init_parallel_env() first");
  }
  return *s.world;
}

Store& default_store() {
  DefaultGroupState& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.store) {
    throw Error(
        ErrorCode::invalid_argument,
        "distributed: there is no store yet; call oar::distributed::init_parallel_env() first");
  }
  return *s.store;
}

std::shared_ptr<Group> new_group(std::vector<int> ranks) {
  DefaultGroupState& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.world) {
    throw Error(ErrorCode::invalid_argument,
                "new_group: the default group does not exist yet; call "
                "oar::distributed::init_parallel_env() first");
  }
  const int world = s.env.world_size;
  if (ranks.empty()) {
    ranks.resize(world);
    std::iota(ranks.begin(), ranks.end(), 0);
  }
  std::sort(ranks.begin(), ranks.end());
  for (size_t i = 0; i < ranks.size(); ++i) {
    OAR_CHECK_ARG(ranks[i] >= 0 && ranks[i] < world,
                  "new_group: rank " + std::to_string(ranks[i]) + " is outside [0, " +
                      std::to_string(world) + ") (the world size)");
    OAR_CHECK_ARG(i == 0 || ranks[i] != ranks[i - 1],
                  "new_group: rank " + std::to_string(ranks[i]) + " is listed twice");
  }
  const int id = s.next_group_id++;
  auto it = std::find(ranks.begin(), ranks.end(), s.env.rank);
  const int rank = it == ranks.end() ? -1 : static_cast<int>(it - ranks.begin());
  std::shared_ptr<Communicator> comm;
  if (rank >= 0) {
    const std::string name = "group " + std::to_string(id);
    comm = std::make_shared<Communicator>(s.device, static_cast<int>(ranks.size()), rank, *s.store,
                                          "oar/group/" + std::to_string(id),
                                          collective_timeout_ms(), options(name, ranks));
  }
  auto group = std::make_shared<Group>(id, std::move(ranks), rank, std::move(comm));
  s.groups.push_back(group);
  return group;
}

void destroy_process_group() {
  DefaultGroupState& s = state();
  std::lock_guard lock(s.mutex);
  for (auto& g : s.groups) g->destroy();
  s.groups.clear();
  if (s.world) s.world->destroy();
  release_store(s);
  s.world.reset();
  s.store.reset();
  s.env = DistEnv{};
  s.next_group_id = 1;
}

}  // namespace oar::distributed
