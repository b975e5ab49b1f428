// detect_dist_env over each launcher family (Note [Launcher variables] in
// core/src/runtime/dist_env.cpp): what each resolves to, which family wins
// when several are set, and the sentence a malformed value gets.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <thread>

#include "oar/dist_env.h"
#include "oar/distributed.h"
#include "test_util.h"

using oar::distributed::detect_dist_env;
using oar::distributed::DistEnv;
using oar::distributed::first_slurm_host;
using oar_test::error_of;

namespace {

using Vars = std::map<std::string, std::string>;

DistEnv detect(const Vars& vars) {
  return detect_dist_env([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

std::string error_for(const Vars& vars) {
  return error_of([&] { detect(vars); });
}

void check_env(const DistEnv& e, int rank, int world, int local_rank, int local_world,
               const std::string& addr, int port, const std::string& job,
               const std::string& source) {
  CHECK(e.rank == rank);
  CHECK(e.world_size == world);
  CHECK(e.local_rank == local_rank);
  CHECK(e.local_world_size == local_world);
  CHECK(e.master_addr == addr);
  CHECK(e.master_port == port);
  CHECK(e.job_id == job);
  CHECK(e.source == source);
}

}  // namespace

TEST_CASE("dist_env: no variables is rank 0 of 1 on the default store address") {
  check_env(detect({}), 0, 1, 0, 1, "127.0.0.1", 6170, "default", "none");
  // MASTER_* alone move the store; empty values count as unset.
  check_env(detect({{"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "7000"}, {"RANK", ""}}), 0, 1, 0,
            1, "10.0.0.1", 7000, "default", "none");
}

TEST_CASE("dist_env: torchrun") {
  Vars v{{"RANK", "3"},
         {"WORLD_SIZE", "4"},
         {"LOCAL_RANK", "1"},
         {"LOCAL_WORLD_SIZE", "2"},
         {"MASTER_ADDR", "node7"},
         {"MASTER_PORT", "29500"}};
  check_env(detect(v), 3, 4, 1, 2, "node7", 29500, "default", "torchrun");
  // Without the local variables: one machine.
  check_env(detect({{"RANK", "1"}, {"WORLD_SIZE", "2"}}), 1, 2, 1, 2, "127.0.0.1", 6170, "default",
            "torchrun");
}

TEST_CASE("dist_env: oar's launcher names itself and reads the torchrun variables") {
  Vars v{{"OAR_LAUNCHER", "1"},
         {"RANK", "1"},
         {"WORLD_SIZE", "2"},
         {"LOCAL_RANK", "1"},
         {"LOCAL_WORLD_SIZE", "2"},
         {"MASTER_ADDR", "h0"},
         {"MASTER_PORT", "6200"},
         {"OAR_JOB_ID", "job-a"},
         // The Paddle copies the launcher also sets are not read.
         {"PADDLE_TRAINER_ID", "1"},
         {"PADDLE_TRAINERS_NUM", "2"},
         {"PADDLE_TRAINER_ENDPOINTS", "x:1,y:2"}};
  check_env(detect(v), 1, 2, 1, 2, "h0", 6200, "job-a", "oar.distributed.launch");
  CHECK(error_for({{"OAR_LAUNCHER", "1"}, {"WORLD_SIZE", "2"}}) ==
        "distributed: the torchrun variables are set but RANK is missing");
}

TEST_CASE(
    "dist_env: Paddle: the store is the first endpoint, local ranks count this host's endpoints") {
  Vars v{{"PADDLE_TRAINER_ID", "3"},
         {"PADDLE_TRAINERS_NUM", "4"},
         {"PADDLE_TRAINER_ENDPOINTS", "10.0.0.1:6170,10.0.0.1:6171,10.0.0.2:6170,10.0.0.2:6171"},
         {"PADDLE_CURRENT_ENDPOINT", "10.0.0.2:6171"},
         {"PADDLE_JOB_ID", "pj"}};
  check_env(detect(v), 3, 4, 1, 2, "10.0.0.1", 6170, "pj", "paddle");
  v["PADDLE_LOCAL_RANK"] = "0";  // the launcher's own word wins
  CHECK(detect(v).local_rank == 0);
  // Without endpoints, MASTER_* (or the defaults) place the store.
  check_env(
      detect({{"PADDLE_TRAINER_ID", "0"}, {"PADDLE_TRAINERS_NUM", "2"}, {"MASTER_PORT", "7001"}}),
      0, 2, 0, 2, "127.0.0.1", 7001, "default", "paddle");
  CHECK(error_for({{"PADDLE_TRAINER_ID", "0"},
                   {"PADDLE_TRAINERS_NUM", "3"},
                   {"PADDLE_TRAINER_ENDPOINTS", "a:1,b:2"}}) ==
        "distributed: PADDLE_TRAINER_ENDPOINTS lists 2 endpoints but PADDLE_TRAINERS_NUM=3");
  CHECK(error_for({{"PADDLE_TRAINER_ID", "0"},
                   {"PADDLE_TRAINERS_NUM", "2"},
                   {"PADDLE_TRAINER_ENDPOINTS", "a:1,b"}}) ==
        "distributed: PADDLE_TRAINER_ENDPOINTS has the endpoint 'b', which is not of the form "
        "host:port");
  CHECK(error_for({{"PADDLE_TRAINER_ID", "0"},
                   {"PADDLE_TRAINERS_NUM", "2"},
                   {"PADDLE_TRAINER_ENDPOINTS", "a:1,b:x"}}) ==
        "distributed: PADDLE_TRAINER_ENDPOINTS (the port of 'b:x')='x' is not an integer");
}

TEST_CASE("dist_env: Open MPI") {
  Vars v{{"OMPI_COMM_WORLD_RANK", "2"},
         {"OMPI_COMM_WORLD_SIZE", "3"},
         {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
         {"OMPI_COMM_WORLD_LOCAL_SIZE", "3"}};
  check_env(detect(v), 2, 3, 2, 3, "127.0.0.1", 6170, "default", "openmpi");
  // Across machines MPI does not say where rank 0 is: MASTER_ADDR must.
  v["OMPI_COMM_WORLD_LOCAL_SIZE"] = "2";
  v["OMPI_COMM_WORLD_LOCAL_RANK"] = "0";
  CHECK(error_for(v).find("set MASTER_ADDR") != std::string::npos);
  v["MASTER_ADDR"] = "head";
  v["MASTER_PORT"] = "6300";
  check_env(detect(v), 2, 3, 0, 2, "head", 6300, "default", "openmpi");
}

TEST_CASE("dist_env: Slurm") {
  Vars v{{"SLURM_PROCID", "5"},
         {"SLURM_NTASKS", "6"},
         {"SLURM_LOCALID", "1"},
         {"SLURM_NODEID", "2"},
         {"SLURM_TASKS_PER_NODE", "2(x3)"},
         {"SLURM_JOB_NODELIST", "node[03-05,9],gpu1"},
         {"SLURM_JOB_ID", "4242"}};
  check_env(detect(v), 5, 6, 1, 2, "node03", 6170, "4242", "slurm");
  v["MASTER_ADDR"] = "login1";  // overrides the node list
  CHECK(detect(v).master_addr == "login1");
  // "3,1": node 1 runs one task.
  check_env(detect({{"SLURM_PROCID", "3"},
                    {"SLURM_NTASKS", "4"},
                    {"SLURM_LOCALID", "0"},
                    {"SLURM_NODEID", "1"},
                    {"SLURM_TASKS_PER_NODE", "3,1"},
                    {"SLURM_NODELIST", "a1,b2"}}),
            3, 4, 0, 1, "a1", 6170, "default", "slurm");
  CHECK(error_for(
            {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", "node[01"}}) ==
        "distributed: SLURM_JOB_NODELIST='node[01' is not a Slurm node list: a '[' is not closed");
}

TEST_CASE("dist_env: the first Slurm host") {
  CHECK(first_slurm_host("node[03-05,9],gpu1") == "node03");
  CHECK(first_slurm_host("gpu1,node[1-2]") == "gpu1");
  CHECK(first_slurm_host("rack[1-2]-n[7,8]") == "rack1-n7");
  CHECK(first_slurm_host("n[9,1-3]") == "n9");
  CHECK(first_slurm_host("single") == "single");
  CHECK(error_of([] { first_slurm_host("", "SLURM_NODELIST"); }) ==
        "distributed: SLURM_NODELIST='' is not a Slurm node list: it is empty");
  CHECK(error_of([] { first_slurm_host("n]1"); }).find("a ']' has no '['") != std::string::npos);
  CHECK(error_of([] { first_slurm_host("n[a-b]"); }).find("does not start with a number") !=
        std::string::npos);
  CHECK(error_of([] { first_slurm_host(",n1"); }).find("its first host is empty") !=
        std::string::npos);
}

TEST_CASE("dist_env: precedence launcher > torchrun > Paddle > Open MPI > Slurm") {
  Vars all{{"RANK", "1"},
           {"WORLD_SIZE", "2"},
           {"PADDLE_TRAINER_ID", "2"},
           {"PADDLE_TRAINERS_NUM", "3"},
           {"OMPI_COMM_WORLD_RANK", "3"},
           {"OMPI_COMM_WORLD_SIZE", "4"},
           {"SLURM_PROCID", "4"},
           {"SLURM_NTASKS", "5"},
           {"SLURM_JOB_NODELIST", "n1"}};
  Vars v = all;
  CHECK(detect(v).source == "torchrun");
  CHECK(detect(v).rank == 1);
  v["OAR_LAUNCHER"] = "1";
  CHECK(detect(v).source == "oar.distributed.launch");
  v.erase("OAR_LAUNCHER");
  v.erase("RANK");
  v.erase("WORLD_SIZE");
  CHECK(detect(v).source == "paddle");
  CHECK(detect(v).rank == 2);
  v.erase("PADDLE_TRAINER_ID");
  v.erase("PADDLE_TRAINERS_NUM");
  CHECK(detect(v).source == "openmpi");
  CHECK(detect(v).rank == 3);
  v.erase("OMPI_COMM_WORLD_RANK");
  v.erase("OMPI_COMM_WORLD_SIZE");
  CHECK(detect(v).source == "slurm");
  CHECK(detect(v).rank == 4);
  // The job id: OAR_JOB_ID > PADDLE_JOB_ID > SLURM_JOB_ID.
  Vars ids{{"OAR_JOB_ID", "o"}, {"PADDLE_JOB_ID", "p"}, {"SLURM_JOB_ID", "s"}};
  CHECK(detect(ids).job_id == "o");
  ids.erase("OAR_JOB_ID");
  CHECK(detect(ids).job_id == "p");
  ids.erase("PADDLE_JOB_ID");
  CHECK(detect(ids).job_id == "s");
}

TEST_CASE("dist_env: malformed values are sentences naming the variable") {
  CHECK(error_for({{"RANK", "one"}, {"WORLD_SIZE", "2"}}) ==
        "distributed: RANK='one' is not an integer");
  CHECK(error_for({{"RANK", "1x"}, {"WORLD_SIZE", "2"}}) ==
        "distributed: RANK='1x' is not an integer");
  CHECK(error_for({{"RANK", "0"}}) ==
        "distributed: the torchrun variables are set but WORLD_SIZE is missing");
  CHECK(error_for({{"RANK", "2"}, {"WORLD_SIZE", "2"}}) ==
        "distributed: RANK=2 is outside [0, WORLD_SIZE=2)");
  CHECK(error_for({{"RANK", "0"}, {"WORLD_SIZE", "0"}}) ==
        "distributed: WORLD_SIZE=0 must be at least 1");
  CHECK(error_for({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "3"}}) ==
        "distributed: LOCAL_RANK=3 is outside [0, LOCAL_WORLD_SIZE=2)");
  CHECK(error_for({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "99999"}}) ==
        "distributed: the store port 99999 (MASTER_PORT or the first trainer endpoint) is outside "
        "[1, 65535]");
  CHECK(error_for({{"MASTER_PORT", "http"}}) ==
        "distributed: MASTER_PORT='http' is not an integer");
  CHECK(error_for({{"PADDLE_TRAINER_ID", "-1"}, {"PADDLE_TRAINERS_NUM", "2"}}) ==
        "distributed: PADDLE_TRAINER_ID=-1 is outside [0, PADDLE_TRAINERS_NUM=2)");
  CHECK(error_for({{"OMPI_COMM_WORLD_RANK", "0"}}) ==
        "distributed: the Open MPI variables are set but OMPI_COMM_WORLD_SIZE is missing");
  CHECK(error_for({{"SLURM_PROCID", "0"},
                   {"SLURM_NTASKS", "1"},
                   {"SLURM_NODEID", "0"},
                   {"SLURM_TASKS_PER_NODE", "2(x"}}) ==
        "distributed: SLURM_TASKS_PER_NODE='2(x' has the item '2(x', expected N or N(xM)");
}

TEST_CASE("dist_env: detect_dist_env() reads the process environment") {
  unsetenv("OAR_LAUNCHER");
  setenv("RANK", "1", 1);
  setenv("WORLD_SIZE", "3", 1);
  DistEnv e = detect_dist_env();
  unsetenv("RANK");
  unsetenv("WORLD_SIZE");
  CHECK(e.rank == 1);
  CHECK(e.world_size == 3);
  CHECK(e.source == "torchrun");
  CHECK(oar::distributed::describe(e).find("rank 1 of 3") != std::string::npos);
}

// ---- the C++ default group (core/src/runtime/process_group.cpp) ----

namespace {

const char* const kLauncherVars[] = {"OAR_LAUNCHER",
                                     "RANK",
                                     "WORLD_SIZE",
                                     "LOCAL_RANK",
                                     "LOCAL_WORLD_SIZE",
                                     "MASTER_ADDR",
                                     "MASTER_PORT",
                                     "PADDLE_TRAINER_ID",
                                     "PADDLE_TRAINERS_NUM",
                                     "PADDLE_TRAINER_ENDPOINTS",
                                     "OMPI_COMM_WORLD_RANK",
                                     "OMPI_COMM_WORLD_SIZE",
                                     "SLURM_PROCID",
                                     "SLURM_NTASKS",
                                     "OAR_JOB_ID"};

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

std::vector<float> values_of(const oar::Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  t.copy_to_host(out.data());
  return out;
}

}  // namespace

TEST_CASE("dist_env: the C++ default group of a one-process job") {
  namespace od = oar::distributed;
  for (const char* v : kLauncherVars) unsetenv(v);
  setenv("OAR_DIST_DEVICE", "cpu", 1);
  CHECK(!od::is_initialized());
  CHECK(od::get_rank() == 0);
  CHECK(od::get_world_size() == 1);
  CHECK(error_of([] { od::default_group(); }) ==
        "distributed: the default group does not exist yet; call "
        "oar::distributed::init_parallel_env() first");
  od::Group& world = od::init_parallel_env();
  CHECK(&od::init_parallel_env() == &world);  // idempotent
  CHECK(od::is_initialized());
  CHECK(world.id() == 0);
  CHECK(world.rank() == 0);
  CHECK(world.nranks() == 1);
  CHECK(std::string(std::getenv("MASTER_PORT")) == "6170");
  std::vector<float> v{1.5f, -2.0f};
  oar::Tensor x = oar::Tensor::from_host(v.data(), {2}, oar::DType::f32, oar::parse_device("cpu"));
  world.comm().all_reduce(x);
  CHECK(values_of(x) == v);
  auto g = od::new_group({0});
  CHECK(g->id() == 1);
  CHECK(g->rank() == 0);
  CHECK(error_of([] { od::new_group({1}); }) ==
        "new_group: rank 1 is outside [0, 1) (the world size)");
  CHECK(error_of([] { od::new_group({0, 0}); }) == "new_group: rank 0 is listed twice");
  od::destroy_process_group();
  CHECK(!od::is_initialized());
  CHECK(error_of([&] { g->comm(); }) ==
        "distributed: group 1 was destroyed; it has no communicator");
  unsetenv("OAR_DIST_DEVICE");
  unsetenv("MASTER_ADDR");
  unsetenv("MASTER_PORT");
}

// The parent runs this binary twice more as ranks 0 and 1 of a job (the
// child case below), through the torchrun variables.
TEST_CASE("dist_env: the C++ default group joins two processes") {
  if (std::getenv("OAR_TEST_DIST_CHILD")) return;
  const int port = free_port();
  std::vector<pid_t> pids;
  for (int rank = 0; rank < 2; ++rank) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      for (const char* v : kLauncherVars) unsetenv(v);
      setenv("OAR_TEST_DIST_CHILD", "1", 1);
      setenv("RANK", std::to_string(rank).c_str(), 1);
      setenv("WORLD_SIZE", "2", 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      setenv("OAR_COLLECTIVE_TIMEOUT", "20", 1);
      setenv("OAR_DIST_DEVICE", "cpu", 1);
      execl("/proc/self/exe", "test_dist_env", "--test-case=dist_env: child of the two-process job",
            "--no-version", static_cast<char*>(nullptr));
      _exit(127);
    }
    pids.push_back(pid);
  }
  // Bounded join: each child gets until the deadline, then is killed.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::vector<int> status(pids.size(), -1);
  size_t done = 0;
  while (done < pids.size() && std::chrono::steady_clock::now() < deadline) {
    for (size_t i = 0; i < pids.size(); ++i) {
      if (status[i] != -1) continue;
      int s = 0;
      if (waitpid(pids[i], &s, WNOHANG) == pids[i]) {
        status[i] = s;
        ++done;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (size_t i = 0; i < pids.size(); ++i) {
    if (status[i] != -1) continue;
    kill(pids[i], SIGKILL);
    waitpid(pids[i], &status[i], 0);
  }
  for (size_t i = 0; i < pids.size(); ++i) {
    INFO("rank " << i);
    CHECK(WIFEXITED(status[i]));
    CHECK(WEXITSTATUS(status[i]) == 0);
  }
}

TEST_CASE("dist_env: child of the two-process job") {
  namespace od = oar::distributed;
  if (!std::getenv("OAR_TEST_DIST_CHILD")) return;
  od::Group& world = od::init_parallel_env();
  const int rank = od::get_rank();
  REQUIRE(od::get_world_size() == 2);
  REQUIRE(world.rank() == rank);
  std::vector<float> v{float(rank + 1), 10.0f * float(rank)};
  oar::Tensor x = oar::Tensor::from_host(v.data(), {2}, oar::DType::f32, oar::parse_device("cpu"));
  world.comm().all_reduce(x);
  CHECK(values_of(x) == std::vector<float>{3.0f, 10.0f});
  // Group [1]: rank 0 is outside it.
  auto g = od::new_group({1});
  CHECK(g->rank() == (rank == 1 ? 0 : -1));
  CHECK(g->is_member() == (rank == 1));
  if (rank == 1) {
    g->comm().all_reduce(x);
    CHECK(values_of(x) == std::vector<float>{3.0f, 10.0f});
  } else {
    CHECK(error_of([&] { g->comm(); }) ==
          "distributed: group 1 does not include this process; it has no communicator");
  }
  world.comm().barrier();
  od::destroy_process_group();
}
