/// \file device.h
/// A device: a plugin's device type plus an index ("cpu:0", "mock:1").
#pragma once

#include <string>
#include <string_view>

namespace oar {

/// Names one device of one plugin.
struct Device {
  std::string type;  ///< device type registered by a plugin ("cpu", "mock", "cuda")
  int index = 0;     ///< device index within that type

  /// "type:index".
  std::string str() const { return type + ":" + std::to_string(index); }
  bool operator==(const Device&) const = default;
};

/// Parses "type" or "type:index"; throws oar::Error on malformed text.
Device parse_device(std::string_view text);

}  // namespace oar
