// Which launcher started this process: the variables of oar's launcher,
// torchrun, Paddle, Open MPI and Slurm.
#include "oar/dist_env.h"

#include <cstdlib>
#include <optional>

#include "oar/error.h"

namespace oar::distributed {

// Note [Launcher variables]
// The first family whose variables are present wins:
//   1. OAR_LAUNCHER=1: our launcher, which also sets the torchrun family
//      (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT);
//   2. torchrun: RANK or WORLD_SIZE;
//   3. Paddle: PADDLE_TRAINER_ID or PADDLE_TRAINERS_NUM; the store is the
//      first of PADDLE_TRAINER_ENDPOINTS ("ip:port,ip:port", one per
//      trainer); the local rank counts the endpoints on the host of
//      PADDLE_CURRENT_ENDPOINT (PADDLE_LOCAL_RANK / PADDLE_RANK_IN_NODE win);
//   4. Open MPI: OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK / _LOCAL_SIZE;
//   5. Slurm: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID; the store is on the
//      first host of SLURM_JOB_NODELIST (SLURM_NODELIST);
//   6. none: rank 0 of 1.
// Open MPI and Slurm say nothing of a port and MPI nothing of a host:
// MASTER_ADDR / MASTER_PORT set them (and override Slurm's host), else
// 127.0.0.1 and 6170. Oar's launcher is checked before torchrun only to
// name it in the log; the variables read are the same. A family checked
// lower is never mixed in: under torchrun, SLURM_* are ignored, so srun
// running torchrun (or our launcher) works.
// The job id is OAR_JOB_ID, else PADDLE_JOB_ID, else SLURM_JOB_ID, else
// "default".

namespace {

class Reader {
 public:
  explicit Reader(const EnvLookup& env) : env_(env) {}

  std::optional<std::string> text(const char* name) const {
    const char* v = env_(name);
    if (!v || !*v) return std::nullopt;
    return std::string(v);
  }
  bool has(const char* name) const { return text(name).has_value(); }

  std::optional<int> integer(const char* name) const {
    auto v = text(name);
    if (!v) return std::nullopt;
    return parse_int(*v, name);
  }
  int required(const char* name, const char* family) const {
    auto v = integer(name);
    if (!v)
      throw Error(ErrorCode::invalid_argument, std::string("distributed: the ") + family +
                                                   " variables are set but " + name +
                                                   " is missing");
    return *v;
  }

  static int parse_int(const std::string& value, const std::string& name) {
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(value, &used, 10);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != value.size() || v < -1000000000LL || v > 1000000000LL) {
      throw Error(ErrorCode::invalid_argument,
                  "distributed: " + name + "='" + value + "' is not an integer");
    }
    return static_cast<int>(v);
  }

 private:
  const EnvLookup& env_;
};

struct Endpoint {
  std::string host;
  int port;
};

Endpoint parse_endpoint(const std::string& text, const std::string& variable) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    throw Error(ErrorCode::invalid_argument, "distributed: " + variable + " has the endpoint '" +
                                                 text + "', which is not of the form host:port");
  }
  std::string host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);  // [::1]
  return {host,
          Reader::parse_int(text.substr(colon + 1), variable + " (the port of '" + text + "')")};
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t end = s.find(sep, start);
    out.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

void check_rank(const DistEnv& e, const char* rank_var, const char* size_var) {
  if (e.world_size < 1) {
    throw Error(ErrorCode::invalid_argument, std::string("distributed: ") + size_var + "=" +
                                                 std::to_string(e.world_size) +
                                                 " must be at least 1");
  }
  if (e.rank < 0 || e.rank >= e.world_size) {
    throw Error(ErrorCode::invalid_argument,
                std::string("distributed: ") + rank_var + "=" + std::to_string(e.rank) +
                    " is outside [0, " + size_var + "=" + std::to_string(e.world_size) + ")");
  }
}

void check_local(const DistEnv& e, const char* rank_var, const char* size_var) {
  if (e.local_world_size < 1 || e.local_world_size > e.world_size) {
    throw Error(ErrorCode::invalid_argument,
                std::string("distributed: ") + size_var + "=" + std::to_string(e.local_world_size) +
                    " is outside [1, " + std::to_string(e.world_size) + "] (the world size)");
  }
  if (e.local_rank < 0 || e.local_rank >= e.local_world_size) {
    throw Error(ErrorCode::invalid_argument,
                std::string("distributed: ") + rank_var + "=" + std::to_string(e.local_rank) +
                    " is outside [0, " + size_var + "=" + std::to_string(e.local_world_size) + ")");
  }
}

// MASTER_ADDR / MASTER_PORT, when set, replace what the family derived.
void apply_master_override(const Reader& r, DistEnv& e) {
  if (auto addr = r.text("MASTER_ADDR")) e.master_addr = *addr;
  if (auto port = r.integer("MASTER_PORT")) e.master_port = *port;
}

void read_torchrun(const Reader& r, DistEnv& e) {
  e.rank = r.required("RANK", "torchrun");
  e.world_size = r.required("WORLD_SIZE", "torchrun");
  check_rank(e, "RANK", "WORLD_SIZE");
  // Without the local variables, assume one machine.
  e.local_rank = r.integer("LOCAL_RANK").value_or(e.rank);
  e.local_world_size = r.integer("LOCAL_WORLD_SIZE").value_or(e.world_size);
  check_local(e, "LOCAL_RANK", "LOCAL_WORLD_SIZE");
  apply_master_override(r, e);
}

void read_paddle(const Reader& r, DistEnv& e) {
  e.rank = r.required("PADDLE_TRAINER_ID", "Paddle");
  e.world_size = r.required("PADDLE_TRAINERS_NUM", "Paddle");
  check_rank(e, "PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM");
  e.local_rank = e.rank;
  e.local_world_size = e.world_size;
  auto endpoints_text = r.text("PADDLE_TRAINER_ENDPOINTS");
  if (!endpoints_text) {
    apply_master_override(r, e);
  } else {
    std::vector<Endpoint> endpoints;
    for (const std::string& item : split(*endpoints_text, ',')) {
      endpoints.push_back(parse_endpoint(item, "PADDLE_TRAINER_ENDPOINTS"));
    }
    if (static_cast<int>(endpoints.size()) != e.world_size) {
      throw Error(ErrorCode::invalid_argument,
                  "distributed: PADDLE_TRAINER_ENDPOINTS lists " +
                      std::to_string(endpoints.size()) +
                      " endpoints but PADDLE_TRAINERS_NUM=" + std::to_string(e.world_size));
    }
    e.master_addr = endpoints[0].host;
    e.master_port = endpoints[0].port;
    // The machine of this trainer: its current endpoint's host, else its own entry.
    std::string host = endpoints[e.rank].host;
    if (auto current = r.text("PADDLE_CURRENT_ENDPOINT"))
      host = parse_endpoint(*current, "PADDLE_CURRENT_ENDPOINT").host;
    e.local_rank = 0;
    e.local_world_size = 0;
    for (int i = 0; i < e.world_size; ++i) {
      if (endpoints[i].host != host) continue;
      if (i < e.rank) ++e.local_rank;
      ++e.local_world_size;
    }
    if (e.local_world_size == 0) {
      throw Error(ErrorCode::invalid_argument,
                  "distributed: PADDLE_CURRENT_ENDPOINT's host '" + host +
                      "' is not among PADDLE_TRAINER_ENDPOINTS='" + *endpoints_text + "'");
    }
  }
  if (auto local = r.integer("PADDLE_LOCAL_RANK"))
    e.local_rank = *local;
  else if (auto in_node = r.integer("PADDLE_RANK_IN_NODE"))
    e.local_rank = *in_node;
  check_local(e, "PADDLE_LOCAL_RANK", "the trainers on this host");
}

void read_openmpi(const Reader& r, DistEnv& e) {
  e.rank = r.required("OMPI_COMM_WORLD_RANK", "Open MPI");
  e.world_size = r.required("OMPI_COMM_WORLD_SIZE", "Open MPI");
  check_rank(e, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE");
  e.local_rank = r.integer("OMPI_COMM_WORLD_LOCAL_RANK").value_or(e.rank);
  e.local_world_size = r.integer("OMPI_COMM_WORLD_LOCAL_SIZE").value_or(e.world_size);
  check_local(e, "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE");
  if (e.local_world_size < e.world_size && !r.has("MASTER_ADDR")) {
    throw Error(
        ErrorCode::invalid_argument,
        "distributed: the Open MPI job spans several machines (OMPI_COMM_WORLD_LOCAL_SIZE=" +
            std::to_string(e.local_world_size) +
            " < OMPI_COMM_WORLD_SIZE=" + std::to_string(e.world_size) +
            ") and Open MPI does not say where rank 0 runs; set MASTER_ADDR to its host");
  }
  apply_master_override(r, e);
}

// SLURM_TASKS_PER_NODE is "2(x3),1": 2 tasks on each of 3 nodes, then 1.
std::optional<int> slurm_tasks_on_node(const std::string& text, int node) {
  int first = 0;
  for (const std::string& item : split(text, ',')) {
    size_t paren = item.find("(x");
    int tasks = Reader::parse_int(item.substr(0, paren), "SLURM_TASKS_PER_NODE");
    int repeat = 1;
    if (paren != std::string::npos) {
      if (item.back() != ')') {
        throw Error(ErrorCode::invalid_argument, "distributed: SLURM_TASKS_PER_NODE='" + text +
                                                     "' has the item '" + item +
                                                     "', expected N or N(xM)");
      }
      repeat = Reader::parse_int(item.substr(paren + 2, item.size() - paren - 3),
                                 "SLURM_TASKS_PER_NODE");
    }
    if (node < first + repeat) return tasks;
    first += repeat;
  }
  return std::nullopt;
}

void read_slurm(const Reader& r, DistEnv& e) {
  e.rank = r.required("SLURM_PROCID", "Slurm");
  e.world_size = r.required("SLURM_NTASKS", "Slurm");
  check_rank(e, "SLURM_PROCID", "SLURM_NTASKS");
  e.local_rank = r.integer("SLURM_LOCALID").value_or(e.rank);
  e.local_world_size = e.world_size;
  auto tasks_per_node = r.text("SLURM_TASKS_PER_NODE");
  auto node = r.integer("SLURM_NODEID");
  if (tasks_per_node && node) {
    if (auto n = slurm_tasks_on_node(*tasks_per_node, *node)) e.local_world_size = *n;
  }
  check_local(e, "SLURM_LOCALID", "the tasks on this node (SLURM_TASKS_PER_NODE)");
  if (auto list = r.text("SLURM_JOB_NODELIST")) {
    e.master_addr = first_slurm_host(*list, "SLURM_JOB_NODELIST");
  } else if (auto old = r.text("SLURM_NODELIST")) {
    e.master_addr = first_slurm_host(*old, "SLURM_NODELIST");
  }
  apply_master_override(r, e);
}

}  // namespace

std::string first_slurm_host(const std::string& nodelist, const std::string& variable) {
  auto malformed = [&](const std::string& why) {
    return Error(ErrorCode::invalid_argument, "distributed: " + variable + "='" + nodelist +
                                                  "' is not a Slurm node list: " + why);
  };
  if (nodelist.empty()) throw malformed("it is empty");
  std::string host;
  size_t i = 0;
  while (i < nodelist.size() && nodelist[i] != ',') {
    char c = nodelist[i];
    if (c == ']') throw malformed("a ']' has no '['");
    if (c != '[') {
      host += c;
      ++i;
      continue;
    }
    size_t close = nodelist.find(']', i);
    if (close == std::string::npos) throw malformed("a '[' is not closed");
    std::string range = nodelist.substr(i + 1, close - i - 1);
    // The first item of "03-05,9" is "03-05"; its first value "03" keeps its zeros.
    std::string first = range.substr(0, range.find_first_of(",-"));
    if (first.empty() || first.find_first_not_of("0123456789") != std::string::npos) {
      throw malformed("the range '[" + range + "]' does not start with a number");
    }
    host += first;
    i = close + 1;
  }
  if (host.empty()) throw malformed("its first host is empty");
  return host;
}

DistEnv detect_dist_env(const EnvLookup& env) {
  Reader r(env);
  DistEnv e;
  auto launcher = r.text("OAR_LAUNCHER");
  if (launcher && *launcher == "1") {
    e.source = "oar.distributed.launch";
    read_torchrun(r, e);
  } else if (r.has("RANK") || r.has("WORLD_SIZE")) {
    e.source = "torchrun";
    read_torchrun(r, e);
  } else if (r.has("PADDLE_TRAINER_ID") || r.has("PADDLE_TRAINERS_NUM")) {
    e.source = "paddle";
    read_paddle(r, e);
  } else if (r.has("OMPI_COMM_WORLD_RANK") || r.has("OMPI_COMM_WORLD_SIZE")) {
    e.source = "openmpi";
    read_openmpi(r, e);
  } else if (r.has("SLURM_PROCID")) {
    e.source = "slurm";
    read_slurm(r, e);
  } else {
    apply_master_override(r, e);
  }
  if (e.master_port < 1 || e.master_port > 65535) {
    throw Error(ErrorCode::invalid_argument,
                "distributed: the store port " + std::to_string(e.master_port) +
                    " (MASTER_PORT or the first trainer endpoint) is outside [1, 65535]");
  }
  if (auto id = r.text("OAR_JOB_ID"))
    e.job_id = *id;
  else if (auto paddle = r.text("PADDLE_JOB_ID"))
    e.job_id = *paddle;
  else if (auto slurm = r.text("SLURM_JOB_ID"))
    e.job_id = *slurm;
  return e;
}

DistEnv detect_dist_env() {
  return detect_dist_env([](const char* name) -> const char* { return std::getenv(name); });
}

std::string describe(const DistEnv& e) {
  std::string from =
      e.source == "none" ? "no launcher variables (none)" : "the " + e.source + " variables";
  return "distributed: rank " + std::to_string(e.rank) + " of " + std::to_string(e.world_size) +
         " (local " + std::to_string(e.local_rank) + " of " + std::to_string(e.local_world_size) +
         ") from " + from + "; store " + e.master_addr + ":" + std::to_string(e.master_port) +
         ", job '" + e.job_id + "'";
}

}  // namespace oar::distributed
