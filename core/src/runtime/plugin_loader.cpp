// Plugin discovery and loading (Boost.DLL). Each candidate is loaded in a
// transaction: its registrations are kept only when init succeeds with our
// ABI major and it provides no device type that is already taken. Any other
// outcome skips the plugin with one warning line naming path and reason.
// Candidates were probed in a child process first (plugin_probe.cpp).
#include <dlfcn.h>

#include <algorithm>
#include <boost/dll/shared_library.hpp>
#include <cstring>
#include <filesystem>
#include <set>

#include "runtime/plugin_loader.h"

#ifndef OAR_BUILD_PLUGIN_DIR
#define OAR_BUILD_PLUGIN_DIR ""
#endif
#ifndef OAR_INSTALL_PLUGIN_DIR
#define OAR_INSTALL_PLUGIN_DIR ""
#endif

namespace oar {

namespace fs = std::filesystem;

namespace {

struct RegisteredKernel {
  std::string device_type;
  std::string op_name;
  KernelEntry entry;
  bool has_priority = false;  // the descriptor has the 1.1 priority field
};

struct LoadTransaction {
  RuntimeState* runtime = nullptr;  // not owned; the runtime loading the plugin
  bool open = true;  // registrations are accepted only during init
  std::vector<OarDeviceApi> devices;
  std::vector<std::string> device_type_names;  // owned copies of device_type
  std::vector<RegisteredKernel> kernels;
};

template <typename T>
T copy_versioned(const T* src) {
  T dst;
  std::memset(&dst, 0, sizeof dst);
  std::memcpy(&dst, src, std::min(src->struct_size, sizeof dst));
  dst.struct_size = sizeof dst;
  return dst;
}

OarStatus reject(OarStatus code, const std::string& message) {
  OarHostApi api{};
  fill_host_services(api);
  api.set_error(nullptr, code, message.c_str());
  return code;
}

OarStatus host_register_device(void* host, const OarDeviceApi* device) {
  auto* txn = static_cast<LoadTransaction*>(host);
  if (!txn->open) return reject(OAR_ERROR_INVALID_ARGUMENT, "register_device: only possible during oar_plugin_init");
  if (!device || device->struct_size < OAR_STRUCT_SIZE(OarDeviceApi, impl) || !device->device_type) {
    return reject(OAR_ERROR_INVALID_ARGUMENT, "register_device: the table is missing or has no device_type");
  }
  OarDeviceApi api = copy_versioned(device);
  const char* missing = nullptr;
  if (!api.device_count) missing = "device_count";
  else if (!api.device_properties) missing = "device_properties";
  else if (!api.synchronize_device) missing = "synchronize_device";
  else if (!api.malloc) missing = "malloc";
  else if (!api.free) missing = "free";
  else if (!api.memcpy_h2d) missing = "memcpy_h2d";
  else if (!api.memcpy_d2h) missing = "memcpy_d2h";
  else if (!api.memcpy_d2d) missing = "memcpy_d2d";
  else if (!api.stream_synchronize) missing = "stream_synchronize";
  if (missing) {
    return reject(OAR_ERROR_INVALID_ARGUMENT, std::string("register_device: device type '") +
                                                  api.device_type + "' leaves required function " +
                                                  missing + " null");
  }
  txn->device_type_names.emplace_back(api.device_type);
  txn->devices.push_back(api);
  return OAR_OK;
}

OarStatus host_register_kernel(void* host, const char* device_type, const char* op_name,
                               const OarKernelDesc* desc) {
  auto* txn = static_cast<LoadTransaction*>(host);
  if (!txn->open) return reject(OAR_ERROR_INVALID_ARGUMENT, "register_kernel: only possible during oar_plugin_init");
  if (!device_type || !op_name || !desc || desc->struct_size < OAR_STRUCT_SIZE(OarKernelDesc, fn) || !desc->fn) {
    return reject(OAR_ERROR_INVALID_ARGUMENT,
                  std::string("register_kernel: kernel '") + (op_name ? op_name : "?") +
                      "' has no function or a malformed descriptor");
  }
  bool has_priority = desc->struct_size >= OAR_STRUCT_SIZE(OarKernelDesc, priority);
  OarKernelDesc d = copy_versioned(desc);
  KernelEntry entry;
  entry.any_inputs = d.input_dtypes == nullptr;
  entry.any_outputs = d.output_dtypes == nullptr;
  if (d.input_dtypes) entry.input_dtypes.assign(d.input_dtypes, d.input_dtypes + d.num_input_dtypes);
  if (d.output_dtypes) entry.output_dtypes.assign(d.output_dtypes, d.output_dtypes + d.num_output_dtypes);
  entry.flags = d.flags;
  entry.fn = d.fn;
  entry.priority = d.priority;
  // copy_versioned zeroes what a shorter (1.0) descriptor lacks: no accepts.
  entry.accepts = d.accepts;
  txn->kernels.push_back({device_type, op_name, std::move(entry), has_priority});
  return OAR_OK;
}

}  // namespace

RuntimeState* runtime_of_host(void* host) { return host ? static_cast<LoadTransaction*>(host)->runtime : nullptr; }

namespace {

std::vector<std::string> split_path_list(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(':', start);
    if (end == std::string::npos) end = list.size();
    if (end > start) out.push_back(list.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

bool is_plugin_file_name(const fs::path& p) {
  std::string name = p.filename().string();
  return name.rfind("liboar_", 0) == 0 && p.extension() == ".so";
}

}  // namespace

std::string core_library_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&core_library_dir), &info) && info.dli_fname) {
    return fs::path(info.dli_fname).parent_path().string();
  }
  return {};
}

void skip_plugin(RuntimeState& state, const std::string& path, const std::string& reason) {
  state.skipped.push_back({path, reason});
  log_message(OAR_LOG_WARNING, "skipping plugin '" + path + "': " + reason);
}

std::vector<PluginCandidate> discover_plugins(const RuntimeOptions& options,
                                              std::vector<SkippedPlugin>& skipped) {
  std::vector<PluginCandidate> out;
  std::set<std::string> seen;
  auto add_file = [&](const fs::path& file, bool explicit_entry) {
    std::error_code ec;
    fs::path canonical = fs::weakly_canonical(file, ec);
    std::string key = ec ? file.string() : canonical.string();
    if (!seen.insert(key).second) return;
    out.push_back({file.string(), explicit_entry});
  };
  auto add_entry = [&](const std::string& entry, bool explicit_entry) {
    std::error_code ec;
    fs::path p(entry);
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> files;
      for (const auto& e : fs::directory_iterator(p, ec)) {
        if (e.is_regular_file(ec) && is_plugin_file_name(e.path())) files.push_back(e.path());
      }
      std::sort(files.begin(), files.end());
      for (const auto& f : files) add_file(f, explicit_entry);
    } else if (fs::exists(p, ec)) {
      add_file(p, explicit_entry);
    } else if (explicit_entry) {
      skipped.push_back({entry, "no such file or directory"});
      log_message(OAR_LOG_WARNING, "skipping plugin path '" + entry + "': no such file or directory");
    }
  };
  for (const auto& entry : split_path_list(options.plugin_path)) add_entry(entry, true);
  if (options.search_default_dirs) {
    std::string core_dir = core_library_dir();
    for (std::string dir : {std::string(OAR_BUILD_PLUGIN_DIR), std::string(OAR_INSTALL_PLUGIN_DIR),
                            core_dir.empty() ? std::string() : core_dir + "/oar/plugins",
                            core_dir.empty() ? std::string() : core_dir + "/plugins"}) {
      if (!dir.empty()) add_entry(dir, false);
    }
  }
  return out;
}

void load_plugin(RuntimeState& state, const PluginCandidate& candidate) {
  auto skip = [&](const std::string& reason) { skip_plugin(state, candidate.path, reason); };

  boost::dll::shared_library library;
  try {
    library.load(candidate.path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    skip(describe_load_failure(candidate.path, e.what()));
    return;
  }
  if (!library.has(OAR_PLUGIN_INIT_SYMBOL)) {
    skip("it does not export the entry symbol '" OAR_PLUGIN_INIT_SYMBOL "'");
    return;
  }
  auto init = library.get<OarStatus(const OarHostApi*, OarPluginInfo*)>(OAR_PLUGIN_INIT_SYMBOL);

  // The host table and its state must outlive the plugin (plugins keep the
  // pointer), so both live in the runtime state for the process.
  auto& txn = *static_cast<LoadTransaction*>(
      state.host_states.emplace_back(new LoadTransaction, [](void* p) { delete static_cast<LoadTransaction*>(p); }).get());
  txn.runtime = &state;
  OarHostApi& host = *state.host_tables.emplace_back(std::make_unique<OarHostApi>());
  host.struct_size = sizeof host;
  host.abi_major = OAR_ABI_VERSION_MAJOR;
  host.abi_minor = OAR_ABI_VERSION_MINOR;
  host.host = &txn;
  host.register_device = host_register_device;
  host.register_kernel = host_register_kernel;
  fill_host_services(host);
  OarPluginInfo info{};
  info.struct_size = sizeof info;

  // Once init has run, a skipped plugin's library is never unloaded: a
  // thread its init started may still run its code. (Loaded plugins stay
  // until the Runtime ends, after their shutdown.)
  auto skip_pinned = [&](const std::string& reason) {
    dlopen(candidate.path.c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    skip(reason);
  };
  host_clear_error();
  OarStatus status;
  try {
    status = init(&host, &info);
  } catch (const std::exception& e) {
    skip_pinned(std::string("its init threw an exception across the C ABI: ") + e.what());
    return;
  } catch (...) {
    skip_pinned("its init threw an exception across the C ABI");
    return;
  }
  txn.open = false;
  std::string message = host_take_error();
  if (info.abi_major != OAR_ABI_VERSION_MAJOR) {
    skip_pinned("incompatible ABI version (plugin: " + std::to_string(info.abi_major) + "." +
                std::to_string(info.abi_minor) + ", host: " + std::to_string(OAR_ABI_VERSION_MAJOR) + "." +
                std::to_string(OAR_ABI_VERSION_MINOR) + ")");
    return;
  }
  if (status != OAR_OK) {
    skip_pinned("its init failed with status " + std::to_string(status) +
                (message.empty() ? std::string() : ": " + message));
    return;
  }
  for (const auto& type : txn.device_type_names) {
    if (DeviceBackend* existing = state.find(type)) {
      skip_pinned("device type '" + type + "' is already provided by '" + existing->plugin_path + "'");
      return;
    }
  }

  PluginRecord record;
  record.path = candidate.path;
  record.name = info.name ? info.name : fs::path(candidate.path).stem().string();
  record.abi_major = info.abi_major;
  record.abi_minor = info.abi_minor;

  std::vector<std::unique_ptr<DeviceBackend>> fresh;
  for (size_t i = 0; i < txn.devices.size(); ++i) {
    auto backend = std::make_unique<DeviceBackend>();
    backend->api = txn.devices[i];
    backend->type = txn.device_type_names[i];
    backend->api.device_type = backend->type.c_str();
    backend->plugin_path = candidate.path;
    int32_t count = 0;
    host_clear_error();
    if (OarStatus s = backend->api.device_count(backend->api.impl, &count); s != OAR_OK && s != OAR_ERROR_NO_DEVICE) {
      skip_pinned("device_count of '" + backend->type + "' failed: " + host_take_error());
      return;
    }
    backend->count = std::max<int32_t>(count, 0);
    backend->slots.resize(static_cast<size_t>(backend->count));
    for (int d = 0; d < backend->count; ++d) {
      backend->slots[static_cast<size_t>(d)].allocator = std::make_unique<CachingAllocator>(*backend, d);
    }
    record.device_types.push_back(backend->type);
    fresh.push_back(std::move(backend));
  }

  for (auto& backend : fresh) {
    int32_t priority = backend->api.priority;
    auto pos = std::find_if(state.priorities.begin(), state.priorities.end(),
                            [&](int32_t p) { return p < priority; });
    auto index = pos - state.priorities.begin();
    state.priorities.insert(pos, priority);
    state.backends.insert(state.backends.begin() + index, std::move(backend));
  }

  for (auto& k : txn.kernels) {
    bool own = std::find(txn.device_type_names.begin(), txn.device_type_names.end(), k.device_type) !=
               txn.device_type_names.end();
    if (!own && !k.has_priority) {
      log_message(OAR_LOG_WARNING,
                  "plugin '" + candidate.path + "' registered kernel '" + k.op_name + "' for device type '" +
                      k.device_type + "', which it does not provide, without a priority (an ABI 1.0 "
                      "kernel descriptor); ignored: a kernel for another plugin's device type must "
                      "declare OarKernelDesc.priority (ABI 1.1)");
      continue;
    }
    k.entry.provider = candidate.path;
    // Note [Complex dtypes and older plugins]: complex dtypes came with ABI
    // 1.3; an older plugin's OAR_DTYPE_ANY kernel was written for the real
    // dtypes and never receives a complex tensor.
    k.entry.knows_complex = info.abi_major > 1 || info.abi_minor >= 3;
    state.pending_kernels.push_back({k.device_type, k.op_name, std::move(k.entry)});
  }

  log_message(OAR_LOG_INFO, "loaded plugin '" + candidate.path + "' (" + record.name + ", ABI " +
                                std::to_string(info.abi_major) + "." + std::to_string(info.abi_minor) + ")");
  state.plugins.push_back(std::move(record));
  state.libraries.push_back(std::move(library));
}

}  // namespace oar
