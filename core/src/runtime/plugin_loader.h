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
/// Loads one candidate into `state`, or records why it was skipped.
void load_plugin(RuntimeState& state, const PluginCandidate& candidate);

}  // namespace oar
