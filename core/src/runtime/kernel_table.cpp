// Attaching registered kernels to device types, in an order that does not
// depend on which plugin loaded first, and saying who overrides whom.
//
// Note [Kernel overrides]
// ~~~~~~~~~~~~~~~~~~~~~~~
// Since ABI 1.1 a plugin may register kernels for a device type another
// plugin owns (a kernel-only plugin: a compiler, a quantization library, a
// vendor's faster matmul). That used to happen silently, whatever the order
// the plugins loaded in. Now:
//  - A kernel for another plugin's device type needs a declared priority: a
//    descriptor with OarKernelDesc.priority (ABI 1.1). A 1.0 descriptor is
//    refused with a warning (a 1.0 plugin still loads; only that kernel is
//    dropped). The owner's own kernels may leave it out (priority 0).
//  - Per (device type, op) the implementations are tried in the order:
//    higher priority first; at equal priority the owner's first; then by
//    plugin path; within one plugin in registration order. Every key is a
//    property of the kernel, never of the load order, so the kernel that
//    runs is the same whatever OAR_PLUGIN_PATH lists first. The first whose
//    dtype signature matches and that does not decline the problem runs
//    (Note [Kernel fall-through] in dispatch/kernel_launch.h).
//  - Kernels are attached once all plugins have loaded, so a kernel-only
//    plugin may come before its device's owner.
//  - Every foreign kernel logs one info line naming the plugin, the op, the
//    device type and whose kernel it goes before (overrides) or after;
//    `oar ops --device T` lists each kernel's provider.
#include <algorithm>

#include "oar/op.h"
#include "runtime/plugin_loader.h"
#include "runtime/runtime_state.h"

namespace oar {

namespace {

// True when `a` is tried before `b` (see the Note).
bool tried_before(const KernelEntry& a, const KernelEntry& b) {
  if (a.priority != b.priority) return a.priority > b.priority;
  if (a.owner != b.owner) return a.owner;
  return a.provider < b.provider;
}

std::string name_of(const KernelEntry& k) {
  return "'" + k.provider + "' (priority " + std::to_string(k.priority) + ")";
}

// One info line per foreign provider of an op: whom it goes before and after.
void log_foreign(const DeviceBackend& backend, const std::string& op, const std::vector<KernelEntry>& list) {
  std::vector<std::string> seen;
  for (size_t i = 0; i < list.size(); ++i) {
    const KernelEntry& k = list[i];
    if (k.owner || std::find(seen.begin(), seen.end(), k.provider) != seen.end()) continue;
    seen.push_back(k.provider);
    std::string before, after;
    for (size_t j = 0; j < list.size(); ++j) {
      const KernelEntry& other = list[j];
      if (other.provider == k.provider) continue;
      std::string& into = j > i ? before : after;
      if (into.find("'" + other.provider + "'") == std::string::npos) into += (into.empty() ? "" : ", ") + name_of(other);
    }
    std::string head = "plugin '" + k.provider + "' ";
    std::string where = "kernel '" + op + "' of device type '" + backend.type + "'";
    if (!before.empty()) {
      log_message(OAR_LOG_INFO, head + "overrides " + where + " with priority " + std::to_string(k.priority) +
                                    ": it is tried before " + before);
    } else if (!after.empty()) {
      log_message(OAR_LOG_INFO, head + "adds a " + where + " with priority " + std::to_string(k.priority) +
                                    ", tried after " + after + " (for dtypes those do not take)");
    } else {
      log_message(OAR_LOG_INFO, head + "provides the only " + where + " (owned by '" + backend.plugin_path +
                                    "'), with priority " + std::to_string(k.priority));
    }
  }
}

}  // namespace

void attach_kernels(RuntimeState& state) {
  std::vector<PendingKernel> pending = std::move(state.pending_kernels);
  state.pending_kernels.clear();
  const OpRegistry& registry = OpRegistry::instance();
  std::vector<PendingKernel> kept;
  for (auto& k : pending) {
    DeviceBackend* backend = state.find(k.device_type);
    if (!backend) {
      log_message(OAR_LOG_WARNING, "plugin '" + k.entry.provider + "' registered kernel '" + k.op_name +
                                       "' for device type '" + k.device_type +
                                       "', which no loaded plugin provides; ignored");
      continue;
    }
    k.entry.owner = backend->plugin_path == k.entry.provider;
    kept.push_back(std::move(k));
  }
  std::stable_sort(kept.begin(), kept.end(), [](const PendingKernel& a, const PendingKernel& b) {
    return tried_before(a.entry, b.entry);
  });
  for (auto& k : kept) {
    DeviceBackend* backend = state.find(k.device_type);
    if (const OpDef* op = registry.find(k.op_name)) {
      if (backend->kernels_by_op.size() < registry.size()) backend->kernels_by_op.resize(registry.size());
      backend->kernels_by_op[static_cast<size_t>(op->id)].push_back(k.entry);
    } else {
      log_message(OAR_LOG_DEBUG, "plugin '" + k.entry.provider + "' registered kernel for unknown op '" +
                                     k.op_name + "'");
    }
    for (auto& record : state.plugins) {
      if (record.path == k.entry.provider) ++record.num_kernels;
    }
    backend->kernels_by_name[k.op_name].push_back(std::move(k.entry));
  }
  for (const auto& backend : state.backends) {
    for (const auto& [op, list] : backend->kernels_by_name) log_foreign(*backend, op, list);
  }
}

}  // namespace oar
