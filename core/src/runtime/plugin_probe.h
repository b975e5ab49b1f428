// Probing plugins in short-lived child processes before loading them into
// this one (Note [Plugin probe] in plugin_probe.cpp).
#pragma once

#include <string>
#include <vector>

#include "runtime/plugin_loader.h"

namespace oar {

/// The verdict on one candidate.
struct ProbeVerdict {
  bool passed = true;
  std::string reason;  ///< why it must not be loaded (when !passed)
};

/// Probes every candidate (in parallel, each within the timeout, cached
/// results first) and returns one verdict per candidate, in order. With
/// probing off every verdict passes.
std::vector<ProbeVerdict> probe_plugins(const std::vector<PluginCandidate>& candidates,
                                        const RuntimeOptions& options);

/// The probe helper executable next to liboar_core.so.
std::string probe_helper_path();

}  // namespace oar
