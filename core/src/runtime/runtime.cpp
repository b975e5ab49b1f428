// The runtime: loaded plugins, device backends, default-device selection.
#include "oar/runtime.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>

#include "runtime/plugin_loader.h"
#include "runtime/plugin_probe.h"
#include "runtime/probe_cache.h"
#include "runtime/runtime_state.h"

namespace oar {

bool KernelEntry::matches(std::span<const DType> inputs, std::span<const DType> outputs) const {
  auto match_list = [](const std::vector<int32_t>& pattern, std::span<const DType> dtypes) {
    if (pattern.size() != dtypes.size()) return false;
    for (size_t i = 0; i < pattern.size(); ++i) {
      int32_t p = pattern[i];
      auto d = static_cast<int32_t>(dtypes[i]);
      if (p == OAR_DTYPE_ANY) continue;
      if (p == OAR_DTYPE_ANY_FLOAT && is_floating(dtypes[i])) continue;
      if (p != d) return false;
    }
    return true;
  };
  if (!knows_complex) {
    for (DType d : inputs) if (is_complex(d)) return false;
    for (DType d : outputs) if (is_complex(d)) return false;
  }
  return (any_inputs || match_list(input_dtypes, inputs)) &&
         (any_outputs || match_list(output_dtypes, outputs));
}

void DeviceBackend::check(OarStatus status, const char* what) const {
  if (status == OAR_OK) return;
  PluginFailure failure = host_take_failure(status);
  throw Error(failure.code,
              type + ": " + what + " failed" + (failure.message.empty() ? std::string() : ": " + failure.message));
}

DeviceSlot& DeviceBackend::slot(int index) {
  if (index < 0 || index >= count) {
    throw Error(ErrorCode::invalid_argument, "device " + type + ":" + std::to_string(index) +
                                                 " does not exist (" + type + " has " +
                                                 std::to_string(count) + " devices)");
  }
  return slots[static_cast<size_t>(index)];
}

bool DeviceBackend::host_addressable(int index) {
  DeviceSlot& s = slot(index);
  std::atomic_ref<int8_t> cached(s.host_addressable);
  int8_t known = cached.load(std::memory_order_relaxed);
  if (known >= 0) return known == 1;
  OarDeviceProperties props{};
  props.struct_size = sizeof props;
  host_clear_error();
  check(api.device_properties(api.impl, index, &props), "device_properties");
  bool yes = (props.flags & OAR_DEVICE_HOST_ADDRESSABLE) != 0;
  cached.store(yes ? 1 : 0, std::memory_order_relaxed);
  return yes;
}

const KernelEntry* DeviceBackend::find_kernel(int op_id, std::span<const DType> inputs,
                                              std::span<const DType> outputs) const {
  if (!has_kernel(op_id)) return nullptr;
  for (const auto& k : kernels_by_op[static_cast<size_t>(op_id)]) {
    if (k.matches(inputs, outputs)) return &k;
  }
  return nullptr;
}

DeviceBackend* RuntimeState::find(const std::string& type) const {
  for (const auto& b : backends) {
    if (b->type == type) return b.get();
  }
  return nullptr;
}

std::string RuntimeState::present_devices() const {
  std::string out;
  for (const auto& b : backends) {
    for (int i = 0; i < b->count; ++i) out += (out.empty() ? "" : ", ") + b->type + ":" + std::to_string(i);
  }
  return out.empty() ? std::string("none") : out;
}

DeviceBackend& RuntimeState::backend(const Device& device) const {
  DeviceBackend* b = find(device.type);
  if (!b || device.index < 0 || device.index >= b->count) {
    throw Error(ErrorCode::invalid_argument,
                "device '" + device.str() + "' is not present; present devices: " + present_devices());
  }
  return *b;
}

void RuntimeState::shutdown() {
  for (auto& b : backends) {
    if (b->shut_down) continue;
    for (int d = 0; d < b->count; ++d) {
      auto& slot = b->slots[static_cast<size_t>(d)];
      b->api.synchronize_device(b->api.impl, d);
      slot.allocator->empty_cache();
      slot.allocator->detach();
      if (slot.stream && b->api.stream_destroy) b->api.stream_destroy(b->api.impl, d, slot.stream);
      slot.stream = nullptr;
    }
    if (b->api.shutdown) b->api.shutdown(b->api.impl);
    b->shut_down = true;
  }
}

RuntimeOptions Runtime::options_from_env() {
  RuntimeOptions options;
  if (const char* p = std::getenv("OAR_PLUGIN_PATH")) options.plugin_path = p;
  if (const char* d = std::getenv("OAR_DEVICE")) options.device = d;
  if (const char* p = std::getenv("OAR_PLUGIN_PROBE")) {
    std::string v = p;
    if (v == "0" || v == "off" || v == "false") options.probe_plugins = false;
    else if (!v.empty() && v != "1" && v != "on" && v != "true") {
      throw Error(ErrorCode::invalid_argument, "OAR_PLUGIN_PROBE='" + v + "' is not understood; expected 1 (probe "
                                               "plugins in a child process first, the default) or 0 (do not)");
    }
  }
  if (const char* t = std::getenv("OAR_PLUGIN_PROBE_TIMEOUT")) {
    char* end = nullptr;
    double seconds = std::strtod(t, &end);
    if (end == t || *end != '\0' || !(seconds > 0) || seconds > 86400) {
      throw Error(ErrorCode::invalid_argument, std::string("OAR_PLUGIN_PROBE_TIMEOUT='") + t +
                                                   "' is not a number of seconds in (0, 86400]");
    }
    options.probe_timeout_s = seconds;
  }
  options.probe_cache_file = ProbeCache::default_file();
  return options;
}

Runtime::Runtime(const RuntimeOptions& options) : state_(std::make_unique<RuntimeState>()) {
  std::vector<PluginCandidate> candidates = discover_plugins(options, state_->skipped);
  std::vector<ProbeVerdict> verdicts = probe_plugins(candidates, options);
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (verdicts[i].passed) load_plugin(*state_, candidates[i]);
    else skip_plugin(*state_, candidates[i].path, verdicts[i].reason);
  }
  attach_kernels(*state_);
  for (auto& b : state_->backends) {
    for (int d = 0; d < b->count; ++d) {
      if (!b->api.stream_create) continue;
      auto& slot = b->slots[static_cast<size_t>(d)];
      host_clear_error();
      if (b->api.stream_create(b->api.impl, d, &slot.stream) != OAR_OK) {
        log_message(OAR_LOG_WARNING, b->type + ":" + std::to_string(d) +
                                         ": stream_create failed (" + host_take_error() +
                                         "); using the default stream");
        slot.stream = nullptr;
      }
    }
  }
  if (!options.device.empty()) {
    Device wanted = parse_device(options.device);
    DeviceBackend* b = state_->find(wanted.type);
    if (!b || wanted.index >= b->count) {
      throw Error(ErrorCode::invalid_argument,
                  "OAR_DEVICE='" + options.device + "' names a device that is not present; present devices: " +
                      state_->present_devices());
    }
    state_->default_device = wanted;
    state_->has_default = true;
  } else {
    for (const auto& b : state_->backends) {
      if (b->count > 0) {
        state_->default_device = Device{b->type, 0};
        state_->has_default = true;
        break;
      }
    }
  }
}

Runtime::~Runtime() { state_->shutdown(); }

Runtime& Runtime::global() {
  // Never destroyed: tensors alive during static destruction still return
  // their memory to it. Plugins are shut down by an atexit handler instead.
  static Runtime* runtime = [] {
    auto* r = new Runtime(options_from_env());
    std::atexit([] { Runtime::global().state().shutdown(); });
    return r;
  }();
  return *runtime;
}

const std::vector<PluginRecord>& Runtime::plugins() const { return state_->plugins; }
const std::vector<SkippedPlugin>& Runtime::skipped() const { return state_->skipped; }

std::vector<std::string> Runtime::device_types() const {
  std::vector<std::string> out;
  for (const auto& b : state_->backends) out.push_back(b->type);
  return out;
}

int Runtime::device_count(const std::string& type) const {
  DeviceBackend* b = state_->find(type);
  return b ? b->count : 0;
}

std::vector<Device> Runtime::devices() const {
  std::vector<Device> out;
  for (const auto& b : state_->backends) {
    for (int i = 0; i < b->count; ++i) out.push_back({b->type, i});
  }
  return out;
}

DeviceInfo Runtime::device_info(const Device& device) const {
  DeviceBackend& b = state_->backend(device);
  OarDeviceProperties props{};
  props.struct_size = sizeof props;
  host_clear_error();
  b.check(b.api.device_properties(b.api.impl, device.index, &props), "device_properties");
  DeviceInfo info;
  info.device = device;
  info.name = std::string(props.name, strnlen(props.name, sizeof props.name));
  info.isa = std::string(props.isa, strnlen(props.isa, sizeof props.isa));
  info.total_memory = props.total_memory;
  info.free_memory = props.free_memory;
  info.compute_units = props.compute_units;
  info.flags = props.flags;
  info.plugin_path = b.plugin_path;
  return info;
}

Device Runtime::default_device() const {
  if (!state_->has_default) {
    throw Error(ErrorCode::no_device, "no device is present: no plugin registered a device (searched $OAR_PLUGIN_PATH and the default plugin directories; run `oar devices`)");
  }
  return state_->default_device;
}

void Runtime::check_device(const Device& device) const { state_->backend(device); }

void Runtime::set_default_device(const Device& device) {
  check_device(device);
  state_->default_device = device;
  state_->has_default = true;
}

std::vector<std::string> Runtime::kernel_ops(const std::string& type) const {
  std::vector<std::string> out;
  if (DeviceBackend* b = state_->find(type)) {
    for (const auto& [name, list] : b->kernels_by_name) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<KernelProvider> Runtime::kernel_providers(const std::string& type) const {
  std::vector<KernelProvider> out;
  if (DeviceBackend* b = state_->find(type)) {
    for (const auto& [name, list] : b->kernels_by_name) {
      for (const auto& k : list) out.push_back({name, k.provider, k.priority, k.owner});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const KernelProvider& a, const KernelProvider& b) { return a.op < b.op; });
  return out;
}

AllocatorStats Runtime::allocator_stats(const Device& device) const {
  return state_->backend(device).slot(device.index).allocator->stats();
}

void Runtime::reset_peak_stats(const Device& device) {
  state_->backend(device).slot(device.index).allocator->reset_peak();
}

void Runtime::empty_cache(const Device& device) {
  state_->backend(device).slot(device.index).allocator->empty_cache();
}

void Runtime::synchronize(const Device& device) {
  DeviceBackend& b = state_->backend(device);
  host_clear_error();
  b.check(b.api.synchronize_device(b.api.impl, device.index), "synchronize_device");
}

Device default_device() { return Runtime::global().default_device(); }
void set_default_device(const Device& device) { Runtime::global().set_default_device(device); }

}  // namespace oar
