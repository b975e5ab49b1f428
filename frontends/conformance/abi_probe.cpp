// ABI checks. Each probe loads the plugin with dlopen in a forked child and
// calls oar_plugin_init with the runner's own host table, so a plugin that
// crashes, keeps global state, or misbehaves with an unusual host cannot
// disturb the runtime the later sections use. The child reports JSON on a
// pipe; a child that dies is a failed check naming the signal.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>

#include "conformance.h"

namespace oar_conformance {
namespace {

using json = nlohmann::json;

// ---- the probe's host table: records what the plugin registers ----

struct ProbeHost {
  bool zero_devices = false;  // answer "0" to options named *_DEVICES
  std::vector<OarDeviceApi> devices;
  std::vector<size_t> device_struct_sizes;
  std::vector<std::string> device_types;
  json kernels = json::array();
  std::string last_error;
};
ProbeHost* g_probe = nullptr;

OarStatus probe_register_device(void*, const OarDeviceApi* api) {
  if (!api) return OAR_ERROR_INVALID_ARGUMENT;
  OarDeviceApi copy;
  std::memset(&copy, 0, sizeof copy);
  std::memcpy(&copy, api, std::min(api->struct_size, sizeof copy));
  g_probe->devices.push_back(copy);
  g_probe->device_struct_sizes.push_back(api->struct_size);
  g_probe->device_types.push_back(api->device_type ? api->device_type : "");
  return OAR_OK;
}
OarStatus probe_register_kernel(void*, const char* type, const char* op,
                                const OarKernelDesc* desc) {
  if (!type || !op || !desc) return OAR_ERROR_INVALID_ARGUMENT;
  g_probe->kernels.push_back(
      {{"op", op}, {"struct_size", desc->struct_size}, {"has_fn", desc->fn != nullptr}});
  return OAR_OK;
}
void probe_log(void*, int32_t, const char*) {}
void probe_set_error(void*, OarStatus, const char* message) {
  g_probe->last_error = message ? message : "";
}
int32_t probe_attr_kind(OarAttrs_t, const char*) { return OAR_ATTR_MISSING; }
OarStatus probe_attr_int(OarAttrs_t, const char*, int64_t*) { return OAR_ERROR_INVALID_ARGUMENT; }
OarStatus probe_attr_float(OarAttrs_t, const char*, double*) { return OAR_ERROR_INVALID_ARGUMENT; }
OarStatus probe_attr_bool(OarAttrs_t, const char*, int32_t*) { return OAR_ERROR_INVALID_ARGUMENT; }
OarStatus probe_attr_string(OarAttrs_t, const char*, const char**) {
  return OAR_ERROR_INVALID_ARGUMENT;
}
OarStatus probe_attr_ints(OarAttrs_t, const char*, const int64_t**, int64_t*) {
  return OAR_ERROR_INVALID_ARGUMENT;
}
OarStatus probe_attr_floats(OarAttrs_t, const char*, const double**, int64_t*) {
  return OAR_ERROR_INVALID_ARGUMENT;
}
OarStatus probe_store_set(OarStore_t, const char*, const void*, uint64_t) {
  return OAR_ERROR_UNSUPPORTED;
}
OarStatus probe_store_get(OarStore_t, const char*, int64_t, void**, uint64_t*) {
  return OAR_ERROR_UNSUPPORTED;
}
OarStatus probe_store_add(OarStore_t, const char*, int64_t, int64_t*) {
  return OAR_ERROR_UNSUPPORTED;
}
OarStatus probe_store_wait(OarStore_t, const char*, int64_t) { return OAR_ERROR_UNSUPPORTED; }
void probe_store_free(void* p) { std::free(p); }
const char* probe_get_option(void*, const char* name) {
  std::string n = name ? name : "";
  if (g_probe->zero_devices && n.size() > 8 && n.compare(n.size() - 8, 8, "_DEVICES") == 0)
    return "0";
  return std::getenv(n.c_str());
}

// No kernel runs in a probe; the table still has every 1.1 entry.
void* probe_scratch_alloc(void*, const OarKernelContext*, uint64_t) { return nullptr; }
void probe_scratch_free(void*, const OarKernelContext*, void*) {}

OarHostApi make_host(int32_t major) {
  OarHostApi h;
  std::memset(&h, 0, sizeof h);
  h.struct_size = sizeof h;
  h.abi_major = major;
  h.abi_minor = OAR_ABI_VERSION_MINOR;
  h.register_device = probe_register_device;
  h.register_kernel = probe_register_kernel;
  h.log = probe_log;
  h.set_error = probe_set_error;
  h.attr_kind = probe_attr_kind;
  h.attr_int = probe_attr_int;
  h.attr_float = probe_attr_float;
  h.attr_bool = probe_attr_bool;
  h.attr_string = probe_attr_string;
  h.attr_int_array = probe_attr_ints;
  h.attr_float_array = probe_attr_floats;
  h.store_set = probe_store_set;
  h.store_get = probe_store_get;
  h.store_add = probe_store_add;
  h.store_wait = probe_store_wait;
  h.store_free = probe_store_free;
  h.get_option = probe_get_option;
  h.scratch_alloc = probe_scratch_alloc;
  h.scratch_free = probe_scratch_free;
  return h;
}

// ---- running a probe in a child ----

// Runs `probe` in a forked child; returns its JSON, or {"crashed": reason}.
json in_child(const std::function<json()>& probe) {
  int fds[2];
  if (pipe(fds) != 0) return {{"crashed", "pipe() failed"}};
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string out;
    try {
      out = probe().dump();
    } catch (const std::exception& e) {
      out = json{{"crashed", std::string("the probe threw: ") + e.what()}}.dump();
    }
    size_t off = 0;
    while (off < out.size()) {
      ssize_t n = write(fds[1], out.data() + off, out.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    _exit(0);  // no atexit handlers: the plugin is never shut down by the host here
  }
  close(fds[1]);
  std::string text;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fds[0], buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status))
    return {{"crashed", std::string("the plugin crashed the probe with signal ") +
                            std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) +
                            ")"}};
  if (text.empty()) return {{"crashed", "the probe exited without a result"}};
  return json::parse(text, nullptr, false);
}

using InitFn = OarStatus (*)(const OarHostApi*, OarPluginInfo*);

// Loads the plugin; fills `error` when it cannot.
InitFn open_plugin(const std::string& path, std::string& error) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = dlerror();
    error = std::string("dlopen failed: ") + (e ? e : "?");
    return nullptr;
  }
  auto init = reinterpret_cast<InitFn>(dlsym(handle, OAR_PLUGIN_INIT_SYMBOL));
  if (!init) error = "the plugin does not export '" OAR_PLUGIN_INIT_SYMBOL "'";
  return init;
}

const char* const kRequired[] = {
    "device_count", "device_properties", "synchronize_device", "malloc", "free", "memcpy_h2d",
    "memcpy_d2h",   "memcpy_d2d",        "stream_synchronize"};

// Name -> non-null, for every function entry of the table.
std::map<std::string, bool> entries(const OarDeviceApi& a) {
#define E(f) \
  { #f, a.f != nullptr }
  return {E(device_count),
          E(device_properties),
          E(set_device),
          E(synchronize_device),
          E(malloc),
          E(free),
          E(memcpy_h2d),
          E(memcpy_d2h),
          E(memcpy_d2d),
          E(memcpy_h2d_async),
          E(memcpy_d2h_async),
          E(memcpy_d2d_async),
          E(memcpy_peer),
          E(memset_async),
          E(memory_stats),
          E(stream_create),
          E(stream_destroy),
          E(stream_synchronize),
          E(stream_query),
          E(event_create),
          E(event_destroy),
          E(event_record),
          E(event_synchronize),
          E(event_query),
          E(stream_wait_event),
          E(comm_unique_id_size),
          E(comm_unique_id),
          E(comm_init),
          E(comm_destroy),
          E(comm_abort),
          E(all_reduce),
          E(all_gather),
          E(reduce_scatter),
          E(broadcast),
          E(send),
          E(recv),
          E(all_to_all),
          E(barrier),
          E(group_start),
          E(group_end),
          E(shutdown)};
#undef E
}

// Calls a fill function with a host struct shorter than the plugin's and
// checks nothing past the host's struct_size was written.
template <typename T, typename Fill>
std::string check_short_struct(size_t short_size, Fill fill) {
  constexpr unsigned char kCanary = 0xAB;
  alignas(T) unsigned char buffer[sizeof(T) + 64];
  std::memset(buffer, kCanary, sizeof buffer);
  auto* s = reinterpret_cast<T*>(buffer);
  s->struct_size = short_size;
  OarStatus status = fill(s);
  if (status != OAR_OK)
    return "returned " + status_str(status) + " for a host struct of " +
           std::to_string(short_size) + " bytes";
  if (s->struct_size != short_size)
    return "changed the host's struct_size from " + std::to_string(short_size) + " to " +
           std::to_string(s->struct_size);
  for (size_t i = short_size; i < sizeof buffer; ++i)
    if (buffer[i] != kCanary)
      return "wrote byte " + std::to_string(i) + " past the host's struct_size of " +
             std::to_string(short_size);
  return {};
}

// Probe 1: a normal init; what the plugin reports and registers.
json probe_normal(const std::string& path) {
  ProbeHost host_state;
  g_probe = &host_state;
  std::string error;
  InitFn init = open_plugin(path, error);
  if (!init) return {{"open_error", error}};
  OarHostApi host = make_host(OAR_ABI_VERSION_MAJOR);
  OarPluginInfo info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  OarStatus status = init(&host, &info);
  json j = {{"status", status},
            {"error", host_state.last_error},
            {"abi_major", info.abi_major},
            {"abi_minor", info.abi_minor},
            {"name", info.name ? info.name : ""},
            {"kernels", host_state.kernels}};
  json devs = json::array();
  for (size_t i = 0; i < host_state.devices.size(); ++i) {
    const OarDeviceApi& a = host_state.devices[i];
    json d = {{"type", host_state.device_types[i]},
              {"struct_size", host_state.device_struct_sizes[i]}};
    json present = json::object();
    for (const auto& [name, has] : entries(a)) present[name] = has;
    d["entries"] = present;
    int32_t count = -1;
    if (a.device_count) a.device_count(a.impl, &count);
    d["count"] = count;
    if (count > 0 && a.device_properties) {
      d["short_properties"] = check_short_struct<OarDeviceProperties>(
          OAR_STRUCT_SIZE(OarDeviceProperties, name),
          [&](OarDeviceProperties* p) { return a.device_properties(a.impl, 0, p); });
      OarDeviceProperties p;
      std::memset(&p, 0, sizeof p);
      p.struct_size = sizeof p;
      a.device_properties(a.impl, 0, &p);
      d["name_terminated"] = std::memchr(p.name, 0, sizeof p.name) != nullptr;
    }
    if (count > 0 && a.memory_stats)
      d["short_stats"] = check_short_struct<OarMemoryStats>(
          OAR_STRUCT_SIZE(OarMemoryStats, used),
          [&](OarMemoryStats* s) { return a.memory_stats(a.impl, 0, s); });
    devs.push_back(d);
  }
  j["devices"] = devs;
  for (const auto& a : host_state.devices)
    if (a.shutdown) a.shutdown(a.impl);
  j["shutdown_ok"] = true;
  return j;
}

// Probe 2: every *_DEVICES option answers 0.
json probe_zero_devices(const std::string& path) {
  ProbeHost host_state;
  host_state.zero_devices = true;
  g_probe = &host_state;
  std::string error;
  InitFn init = open_plugin(path, error);
  if (!init) return {{"open_error", error}};
  OarHostApi host = make_host(OAR_ABI_VERSION_MAJOR);
  OarPluginInfo info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  OarStatus status = init(&host, &info);
  json counts = json::array();
  for (const auto& a : host_state.devices) {
    int32_t count = -1;
    OarStatus s = a.device_count ? a.device_count(a.impl, &count) : OAR_ERROR_INTERNAL;
    counts.push_back({{"status", s}, {"count", count}});
  }
  for (const auto& a : host_state.devices)
    if (a.shutdown) a.shutdown(a.impl);
  return {{"status", status}, {"error", host_state.last_error}, {"counts", counts}};
}

// Probe 3: a host of another major must be refused, not crash.
json probe_foreign_host(const std::string& path) {
  ProbeHost host_state;
  g_probe = &host_state;
  std::string error;
  InitFn init = open_plugin(path, error);
  if (!init) return {{"open_error", error}};
  OarHostApi host = make_host(OAR_ABI_VERSION_MAJOR + 1);
  OarPluginInfo info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  OarStatus status = init(&host, &info);
  return {{"status", status}, {"abi_major", info.abi_major}, {"error", host_state.last_error}};
}

void add_check(Suite& suite, const std::string& name, bool ok, const std::string& detail,
               bool skip = false) {
  if (!suite.selected(name)) return;
  suite.add({.name = name,
             .result = skip ? Result::skip
                       : ok ? Result::pass
                            : Result::fail,
             .detail = detail});
}

}  // namespace

void run_abi_probes(Suite& suite) {
  const std::string& path = suite.options().plugin;
  suite.set_current("abi.version");
  json normal = in_child([&] { return probe_normal(path); });
  if (normal.is_discarded()) normal = {{"crashed", "the probe's output was not JSON"}};
  if (normal.contains("open_error") || normal.contains("crashed")) {
    std::string why = normal.value("open_error", normal.value("crashed", std::string()));
    add_check(suite, "abi.entry", false, why);
    return;
  }
  add_check(suite, "abi.entry", true, "dlopen and '" OAR_PLUGIN_INIT_SYMBOL "' found");

  // Version: equal major; the minor is reported (any minor loads).
  int major = normal.value("abi_major", -1), minor = normal.value("abi_minor", -1);
  std::string versions =
      "plugin reports ABI " + std::to_string(major) + "." + std::to_string(minor) + ", host is " +
      std::to_string(OAR_ABI_VERSION_MAJOR) + "." + std::to_string(OAR_ABI_VERSION_MINOR);
  add_check(suite, "abi.version", major == OAR_ABI_VERSION_MAJOR,
            major == OAR_ABI_VERSION_MAJOR
                ? versions
                : versions + "; the majors differ, so every host of ABI " +
                      std::to_string(OAR_ABI_VERSION_MAJOR) + " refuses it");
  int status = normal.value("status", -1);
  add_check(
      suite, "abi.init", status == OAR_OK,
      status == OAR_OK
          ? "init returned OK; " + std::to_string(normal["devices"].size()) + " device types, " +
                std::to_string(normal["kernels"].size()) + " kernels"
          : "init returned " + status_str(status) + ": " + normal.value("error", std::string()));

  // Struct sizes: tables within what this ABI knows (unless from a newer
  // minor), and host structs written only within their struct_size.
  std::string size_problem;
  for (const auto& d : normal["devices"]) {
    size_t size = d["struct_size"];
    if (size < OAR_STRUCT_SIZE(OarDeviceApi, impl))
      size_problem = "OarDeviceApi of '" + d["type"].get<std::string>() + "' has struct_size " +
                     std::to_string(size) + ", shorter than its fixed header";
    else if (size > sizeof(OarDeviceApi) && minor <= OAR_ABI_VERSION_MINOR)
      size_problem = "OarDeviceApi has struct_size " + std::to_string(size) + " > " +
                     std::to_string(sizeof(OarDeviceApi)) + " but the plugin claims minor " +
                     std::to_string(minor);
    if (!d.value("short_properties", std::string()).empty())
      size_problem = "device_properties " + d["short_properties"].get<std::string>();
    if (!d.value("short_stats", std::string()).empty())
      size_problem = "memory_stats " + d["short_stats"].get<std::string>();
    if (d.contains("name_terminated") && !d["name_terminated"].get<bool>())
      size_problem = "device_properties left the name without a terminating NUL";
  }
  for (const auto& k : normal["kernels"]) {
    size_t size = k["struct_size"];
    if (size < OAR_STRUCT_SIZE(OarKernelDesc, fn) || !k["has_fn"].get<bool>())
      size_problem = "the kernel descriptor of '" + k["op"].get<std::string>() +
                     "' is malformed (struct_size " + std::to_string(size) + ")";
  }
  add_check(suite, "abi.struct_sizes", size_problem.empty(),
            size_problem.empty()
                ? "device tables, kernel descriptors, and short host structs honoured"
                : size_problem);

  // Required entries set; optional groups complete; optional nulls listed.
  std::string missing, nulls, group_problem;
  for (const auto& d : normal["devices"]) {
    const json& e = d["entries"];
    for (const char* name : kRequired)
      if (!e.value(name, false)) missing += std::string(missing.empty() ? "" : ", ") + name;
    for (const auto& [name, has] : e.items())
      if (!has.get<bool>() &&
          std::find(std::begin(kRequired), std::end(kRequired), name) == std::end(kRequired))
        nulls += (nulls.empty() ? "" : ", ") + name;
    if (e["stream_create"] != e["stream_destroy"])
      group_problem = "stream_create and stream_destroy must both be set or both null";
    bool events = e["event_create"].get<bool>();
    for (const char* f : {"event_destroy", "event_record", "event_synchronize", "event_query"})
      if (e[f].get<bool>() != events)
        group_problem = std::string("the event group is incomplete (") + f + ")";
    if (e["stream_wait_event"].get<bool>() && (!events || !e["stream_create"].get<bool>()))
      group_problem = "stream_wait_event is set but the device has no streams or no events";
    if (e["comm_init"].get<bool>())
      for (const char* f : {"comm_unique_id_size", "comm_unique_id", "comm_destroy"})
        if (!e[f].get<bool>())
          group_problem = std::string("comm_init is set but ") + f + " is null";
  }
  bool entries_ok = missing.empty() && group_problem.empty();
  add_check(suite, "abi.entries", entries_ok,
            !missing.empty()         ? "required entries are null: " + missing
            : !group_problem.empty() ? group_problem
                                     : "required entries set; null (host falls back): " +
                                           (nulls.empty() ? "none" : nulls));

  // Zero devices: init succeeds and reports 0 when told so.
  if (suite.selected("abi.zero_devices")) {
    suite.set_current("abi.zero_devices");
    json zero = in_child([&] { return probe_zero_devices(path); });
    if (zero.is_discarded() || zero.contains("crashed") || zero.contains("open_error")) {
      add_check(suite, "abi.zero_devices", false,
                "with *_DEVICES=0: " +
                    (zero.is_discarded()
                         ? std::string("bad probe output")
                         : zero.value("crashed", zero.value("open_error", std::string()))));
    } else if (zero.value("status", -1) != OAR_OK) {
      add_check(suite, "abi.zero_devices", false,
                "with *_DEVICES=0 init returned " + status_str(zero.value("status", -1)) + ": " +
                    zero.value("error", std::string()) + " (zero devices must be success)");
    } else {
      bool all_zero = true, errors = false;
      for (const auto& c : zero["counts"]) {
        if (c["status"] != OAR_OK && c["status"] != OAR_ERROR_NO_DEVICE) errors = true;
        if (c["count"] != 0) all_zero = false;
      }
      if (errors)
        add_check(suite, "abi.zero_devices", false, "device_count failed with zero devices");
      else if (!all_zero)
        add_check(
            suite, "abi.zero_devices", true,
            "the plugin ignores OAR_<TYPE>_DEVICES=0, so the zero-device path was not exercised",
            true);
      else
        add_check(suite, "abi.zero_devices", true,
                  "init OK and device_count 0 with OAR_<TYPE>_DEVICES=0");
    }
  }

  // A host of another major: refused (non-OK or its own major), no crash.
  if (suite.selected("abi.foreign_host")) {
    suite.set_current("abi.foreign_host");
    json foreign = in_child([&] { return probe_foreign_host(path); });
    if (foreign.is_discarded() || foreign.contains("crashed")) {
      add_check(suite, "abi.foreign_host", false,
                "a host of ABI major " + std::to_string(OAR_ABI_VERSION_MAJOR + 1) + ": " +
                    (foreign.is_discarded() ? std::string("bad probe output")
                                            : foreign.value("crashed", std::string())));
    } else {
      bool refused = foreign.value("status", 0) != OAR_OK ||
                     foreign.value("abi_major", -1) != OAR_ABI_VERSION_MAJOR + 1;
      add_check(suite, "abi.foreign_host", refused,
                refused
                    ? "a host of major " + std::to_string(OAR_ABI_VERSION_MAJOR + 1) +
                          " is refused (" + status_str(foreign.value("status", 0)) +
                          ", plugin major " + std::to_string(foreign.value("abi_major", -1)) + ")"
                    : "init accepted a host of another major and claimed that major");
    }
  }
  suite.set_current("");
}

}  // namespace oar_conformance
