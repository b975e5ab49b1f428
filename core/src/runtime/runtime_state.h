// The runtime's private state: device backends (one per registered device
// type), their kernels, per-device streams and allocators.
#pragma once

#include <boost/dll/shared_library.hpp>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "oar/dtype.h"
#include "oar/error.h"
#include <atomic>

#include "oar/plugin_api.h"
#include "oar/runtime.h"
#include "runtime/caching_allocator.h"

namespace oar {

/// One registered kernel with its dtype signature.
struct KernelEntry {
  std::vector<int32_t> input_dtypes;   // empty with any_inputs
  std::vector<int32_t> output_dtypes;  // empty with any_outputs
  bool any_inputs = false;
  bool any_outputs = false;
  uint32_t flags = 0;
  OarKernelFn fn = nullptr;
  /// OarKernelDesc.accepts (ABI 1.1; null: takes every problem its dtypes
  /// match). Note [Kernel fall-through] in dispatch/kernel_launch.h.
  int32_t (*accepts)(const OarKernelContext* ctx) = nullptr;
  std::string provider;   // path of the plugin that registered it
  int32_t priority = 0;   // OarKernelDesc.priority (0 without one)
  bool owner = false;     // registered by the plugin owning the device type
  /// Built with ABI >= 1.3: its OAR_DTYPE_ANY patterns (and any-dtype
  /// kernels) also match c64/c128. Note [Complex dtypes and older plugins].
  bool knows_complex = true;

  bool matches(std::span<const DType> inputs, std::span<const DType> outputs) const;
};

/// A kernel registered during a plugin's init, attached to its device type
/// once every plugin has loaded (attach_kernels in kernel_table.cpp).
struct PendingKernel {
  std::string device_type;
  std::string op_name;
  KernelEntry entry;
};

/// One device of a backend.
struct DeviceSlot {
  OarStream_t stream = nullptr;  // the compute stream every kernel runs on
  std::unique_ptr<CachingAllocator> allocator;
  int8_t host_addressable = -1;  // -1: not asked yet, else 0 or 1; read and written through std::atomic_ref
};

/// A device type registered by a plugin.
struct DeviceBackend {
  OarDeviceApi api{};
  std::string type;
  std::string plugin_path;
  int count = 0;
  std::vector<DeviceSlot> slots;
  std::unordered_map<std::string, std::vector<KernelEntry>> kernels_by_name;
  /// Per OpDef::id the implementations in the order tried (Note [Kernel
  /// overrides] in kernel_table.cpp): the list the fall-through walks.
  std::vector<std::vector<KernelEntry>> kernels_by_op;
  bool shut_down = false;

  /// Throws oar::Error(status) with "<type>: <what> failed: <plugin's message>".
  void check(OarStatus status, const char* what) const;
  DeviceSlot& slot(int index);
  /// True when the device's memory is host memory (OAR_DEVICE_HOST_ADDRESSABLE);
  /// asked of the plugin once per device, then cached.
  bool host_addressable(int index);
  /// The first kernel for an op and dtypes in the order tried, or nullptr
  /// (without asking accepts: select_kernel in dispatch/kernel_launch.h does).
  const KernelEntry* find_kernel(int op_id, std::span<const DType> inputs,
                                 std::span<const DType> outputs) const;
  bool has_kernel(int op_id) const {
    return op_id >= 0 && static_cast<size_t>(op_id) < kernels_by_op.size() &&
           !kernels_by_op[static_cast<size_t>(op_id)].empty();
  }
};

/// Everything a Runtime owns.
class RuntimeState {
 public:
  std::vector<boost::dll::shared_library> libraries;  // kept loaded for the process
  std::vector<std::unique_ptr<OarHostApi>> host_tables;  // one per plugin tried; plugins keep the pointer
  std::vector<std::unique_ptr<void, void (*)(void*)>> host_states;  // the tables' `host` (loading transactions)
  std::vector<std::unique_ptr<DeviceBackend>> backends;  // best first
  std::vector<int32_t> priorities;                       // parallel to backends
  std::vector<PluginRecord> plugins;
  std::vector<SkippedPlugin> skipped;
  std::vector<PendingKernel> pending_kernels;  // registered, not yet attached
  Device default_device;
  bool has_default = false;

  /// nullptr when no plugin registered the type.
  DeviceBackend* find(const std::string& type) const;
  /// Throws oar::Error listing present devices when absent.
  DeviceBackend& backend(const Device& device) const;
  std::string present_devices() const;
  void shutdown();
};

/// Thread-local error the plugin set through OarHostApi.set_error: its
/// code and message (Note [Error codes from plugins] in host_api.cpp).
void host_clear_error();
/// The message alone (and clears the error).
std::string host_take_error();
/// A failed plugin call's error: the code and the message.
struct PluginFailure {
  ErrorCode code;
  std::string message;  // empty when the plugin set none
};
/// The error of a plugin call that returned `returned` (not OAR_OK): the
/// code given to set_error when it is a failure code, else `returned`;
/// clears the thread's error.
PluginFailure host_take_failure(OarStatus returned);

/// The device of the kernel launch running on this thread (Note [Kernel
/// scratch memory] in host_api.cpp).
struct LaunchDevice {
  DeviceBackend* backend = nullptr;
  int device = 0;
};
extern thread_local LaunchDevice t_launch_device;
/// Names the launch's device while a kernel runs, for scratch_alloc when
/// the context carries no device_type. Nests (decompositions re-enter).
class LaunchScope {
 public:
  LaunchScope(DeviceBackend& backend, int device) : previous_(t_launch_device) {
    t_launch_device = {&backend, device};
  }
  ~LaunchScope() { t_launch_device = previous_; }
  LaunchScope(const LaunchScope&) = delete;
  LaunchScope& operator=(const LaunchScope&) = delete;

 private:
  LaunchDevice previous_;
};
/// The runtime a plugin's host table belongs to (plugin_loader.cpp); null
/// for a table the runtime did not make.
RuntimeState* runtime_of_host(void* host);
/// Fills the host table's services (all but register_device/kernel).
void fill_host_services(OarHostApi& api);
/// Wraps Attrs as the ABI's opaque attribute handle.
class Attrs;
OarAttrs_t attrs_handle(const Attrs& attrs);

/// Log to stderr when `level` >= $OAR_LOG_LEVEL (default warning).
void log_message(int32_t level, const std::string& message);
/// Whether log_message(level, ...) prints (to skip building the message).
bool log_enabled(int32_t level);

}  // namespace oar
