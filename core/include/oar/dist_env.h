/// \file dist_env.h
/// Which launcher started this process (oar's, torchrun, Paddle's, Slurm,
/// Open MPI or none) and the process-wide default group built from it, as
/// Paddle's init_parallel_env / get_rank / get_world_size / new_group.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace oar {
class Store;
}

namespace oar::distributed {

class Communicator;

/// Where the store of a job is served when no variable says so.
inline constexpr int kDefaultMasterPort = 6170;

/// This process's place in its job, as its launcher described it.
struct DistEnv {
  int rank = 0;                           ///< global rank, in [0, world_size)
  int world_size = 1;                     ///< number of processes of the job
  int local_rank = 0;                     ///< rank among the processes of this machine
  int local_world_size = 1;               ///< number of processes on this machine
  std::string master_addr = "127.0.0.1";  ///< host of the job's store (rank 0 serves it)
  int master_port = kDefaultMasterPort;   ///< port of the job's store
  std::string job_id = "default";         ///< stores refuse clients of another job
  /// The variable family used: "oar.distributed.launch", "torchrun",
  /// "paddle", "openmpi", "slurm" or "none".
  std::string source = "none";
};

/// Looks a variable up; null when it is not set.
using EnvLookup = std::function<const char*(const char* name)>;

/// Reads the process environment (Note [Launcher variables] in
/// dist_env.cpp for the precedence). A malformed or inconsistent value
/// throws Error(invalid_argument) with a sentence naming the variable.
DistEnv detect_dist_env();
/// The same over `env` (tests pass a map instead of the real environment).
DistEnv detect_dist_env(const EnvLookup& env);

/// The first host of a Slurm node list: "node[03-05,9],gpu1" -> "node03",
/// "rack[1-2]-n[7,8]" -> "rack1-n7". Throws Error(invalid_argument) naming
/// `variable` when the list is empty or its brackets are malformed.
std::string first_slurm_host(const std::string& nodelist,
                             const std::string& variable = "SLURM_JOB_NODELIST");

/// One line for the info log: the family, rank, world size and store address.
std::string describe(const DistEnv& env);

/// A set of ranks with a communicator among them (Paddle's Group). Ranks
/// outside the group hold a Group too, with rank() == -1 and no communicator;
/// collectives on it are theirs to skip.
class Group {
 public:
  Group(int id, std::vector<int> ranks, int rank, std::shared_ptr<Communicator> comm);
  int id() const { return id_; }                            ///< 0 for the world
  const std::vector<int>& ranks() const { return ranks_; }  ///< global ranks, group order
  int nranks() const { return static_cast<int>(ranks_.size()); }
  int rank() const { return rank_; }  ///< this process's rank in the group, -1 if not a member
  bool is_member() const { return rank_ >= 0; }
  /// The communicator; throws Error(invalid_argument) for a non-member.
  Communicator& comm() const;
  /// Frees the communicator (idempotent).
  void destroy();

 private:
  int id_;
  std::vector<int> ranks_;
  int rank_;
  std::shared_ptr<Communicator> comm_;  // owned (shared with callers that keep it)
};

/// Detects the environment, connects to the job's store (rank 0 serves a
/// TCP store on master_addr:master_port, the others connect) and builds the
/// world communicator on the default device ($OAR_DIST_DEVICE overrides).
/// Idempotent: a second call returns the same group. World size 1 needs no
/// store.
Group& init_parallel_env();
/// True between init_parallel_env() and destroy_process_group().
bool is_initialized();
/// The global rank (0 before init_parallel_env, as the environment says after).
int get_rank();
/// The world size (1 before init_parallel_env).
int get_world_size();
/// The world group; throws Error(invalid_argument) before init_parallel_env.
Group& default_group();
/// A group of `ranks` (global, distinct, sorted or not; empty = the world).
/// Every rank of the world must call it, in the same order, as in Paddle:
/// the groups are numbered by a per-process counter.
std::shared_ptr<Group> new_group(std::vector<int> ranks);
/// The job's store; throws before init_parallel_env or for world size 1.
Store& default_store();
/// Frees every group's communicator and the store; init_parallel_env may
/// be called again afterwards.
void destroy_process_group();

}  // namespace oar::distributed
