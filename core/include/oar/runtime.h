/// \file runtime.h
/// The runtime: plugins found and loaded, devices, default-device selection,
/// per-device caching allocators.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "oar/device.h"

namespace oar {

/// A plugin that loaded.
struct PluginRecord {
  std::string path;
  std::string name;  ///< name the plugin reported
  int abi_major = 0;
  int abi_minor = 0;
  std::vector<std::string> device_types;
  int num_kernels = 0;
};

/// A plugin that was skipped, with the reason (also logged as a warning).
struct SkippedPlugin {
  std::string path;
  std::string reason;
};

/// Properties of one device.
struct DeviceInfo {
  Device device;
  std::string name;
  std::string isa;
  uint64_t total_memory = 0;
  uint64_t free_memory = 0;
  int compute_units = 0;
  uint32_t flags = 0;  ///< OAR_DEVICE_* flags
  std::string plugin_path;
};

/// Statistics of one device's caching allocator, in bytes.
struct AllocatorStats {
  uint64_t allocated = 0;       ///< held by live tensors
  uint64_t reserved = 0;        ///< obtained from the plugin (allocated + cached)
  uint64_t peak_allocated = 0;  ///< highest `allocated` since start or reset
  uint64_t num_device_mallocs = 0;
};

/// Where to look for plugins.
struct RuntimeOptions {
  /// `:`-separated directories (scanned for liboar_*.so) or files; searched
  /// before the default directories. Default: $OAR_PLUGIN_PATH.
  std::string plugin_path;
  /// Also search the build's and install's plugin directories.
  bool search_default_dirs = true;
  /// "type[:index]" for the default device. Default: $OAR_DEVICE.
  std::string device;
  /// Load and initialise each plugin in a short-lived child process first,
  /// and skip the ones that crash, exit or hang there. Default: on unless
  /// $OAR_PLUGIN_PROBE is 0.
  bool probe_plugins = true;
  /// Seconds one probe may take. Default: $OAR_PLUGIN_PROBE_TIMEOUT, else 10.
  double probe_timeout_s = 10;
  /// File caching probe outcomes; empty: no cache. From the environment:
  /// $OAR_PLUGIN_PROBE_CACHE, else $XDG_CACHE_HOME/oar/plugin-probe.cache,
  /// else ~/.cache/oar/plugin-probe.cache.
  std::string probe_cache_file;
};

/// One implementation of an op on a device type, as `oar ops` shows it.
struct KernelProvider {
  std::string op;
  std::string plugin_path;  ///< the plugin that registered it
  int priority = 0;         ///< declared priority (0 for the owner's 1.0 kernels)
  bool owner = false;       ///< registered by the plugin that owns the device type
};

class RuntimeState;

/// Loaded plugins and their devices. One global instance serves the eager
/// API (Runtime::global()); tests may build their own from options.
class Runtime {
 public:
  explicit Runtime(const RuntimeOptions& options);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// The process-wide runtime, created on first use from the environment
  /// ($OAR_PLUGIN_PATH, $OAR_DEVICE).
  static Runtime& global();
  /// Options read from the environment; throws naming the variable when
  /// one of them holds a value that is not understood.
  static RuntimeOptions options_from_env();

  const std::vector<PluginRecord>& plugins() const;
  const std::vector<SkippedPlugin>& skipped() const;
  /// Registered device types, best first (by the plugins' priorities).
  std::vector<std::string> device_types() const;
  /// Devices of a type (0 when the type is unknown).
  int device_count(const std::string& type) const;
  /// Every device present, best type first.
  std::vector<Device> devices() const;
  DeviceInfo device_info(const Device& device) const;

  /// The device ops use when none is given: $OAR_DEVICE, else the best
  /// device present (cpu last among real devices; the mock only on request).
  Device default_device() const;
  /// Overrides the default device; throws naming the devices present when
  /// `device` is not one of them.
  void set_default_device(const Device& device);
  /// Throws oar::Error listing the present devices when `device` is absent.
  void check_device(const Device& device) const;

  /// Names of ops with a native kernel on a device type.
  std::vector<std::string> kernel_ops(const std::string& type) const;
  /// Every kernel of a device type: by op name, then in the order they are
  /// tried (Note [Kernel overrides] in core/src/runtime/kernel_table.cpp).
  std::vector<KernelProvider> kernel_providers(const std::string& type) const;

  AllocatorStats allocator_stats(const Device& device) const;
  void reset_peak_stats(const Device& device);
  /// Returns cached, unused blocks of a device to its plugin.
  void empty_cache(const Device& device);
  /// Waits for all work queued on a device.
  void synchronize(const Device& device);

  RuntimeState& state() const { return *state_; }

 private:
  std::unique_ptr<RuntimeState> state_;
};

/// Shorthands over Runtime::global().
Device default_device();
void set_default_device(const Device& device);

}  // namespace oar
