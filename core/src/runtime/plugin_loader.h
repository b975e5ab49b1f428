// Plugin discovery ($OAR_PLUGIN_PATH, then the default directories) and
// transactional loading.
#pragma once

#include <string>
#include <vector>

#include "runtime/runtime_state.h"

namespace oar {

struct PluginCandidate {
  std::string path;
  bool from_plugin_path = false;  // named through $OAR_PLUGIN_PATH / options
};

/// Candidate files in search order, without duplicates. Missing entries of
/// the plugin path are added to `skipped` with a warning.
std::vector<PluginCandidate> discover_plugins(const RuntimeOptions& options,
                                              std::vector<SkippedPlugin>& skipped);
/// Loads one candidate into `state`, or records why it was skipped. Its
/// kernels wait in state.pending_kernels for attach_kernels.
void load_plugin(RuntimeState& state, const PluginCandidate& candidate);
/// Records a skipped plugin and logs the one warning line about it.
void skip_plugin(RuntimeState& state, const std::string& path, const std::string& reason);
/// Attaches the kernels of every loaded plugin to their device types, in an
/// order independent of load order (Note [Kernel overrides], kernel_table.cpp).
void attach_kernels(RuntimeState& state);
/// The skip reason for a plugin dlopen refused: names a missing dependency
/// when that is the cause (loader_messages.cpp).
std::string describe_load_failure(const std::string& plugin_path, const std::string& error);
/// Directory of liboar_core.so (empty when unknown).
std::string core_library_dir();

}  // namespace oar
