// The plugin probe cache: outcomes of earlier probes keyed by the plugin
// file's (path, size, mtime) and those of the libraries it loaded, so
// start-up does not spawn a probe per plugin every time. A small text file, written to a temporary name and renamed;
// a file that does not parse (or another version's) is ignored as a whole.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace oar {

/// Identity of a plugin file; a changed size or mtime is a new file.
struct PluginFileKey {
  std::string path;  ///< canonical path
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const PluginFileKey&) const = default;
};

/// A cached outcome: passed, or failed with the skip reason. It holds
/// while the plugin file and every library loaded with it are unchanged.
struct CachedProbe {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  bool passed = false;
  std::string reason;  ///< why it failed (empty when passed)
  std::vector<PluginFileKey> libraries;
};

/// The key of a file, or nullopt when it cannot be stat'ed.
std::optional<PluginFileKey> plugin_file_key(const std::string& path);

class ProbeCache {
 public:
  /// Reads `file` (empty: no cache; missing or malformed: empty cache).
  explicit ProbeCache(std::string file);
  /// The cached outcome for `key`, when its size and mtime and those of
  /// its libraries still match.
  std::optional<CachedProbe> find(const PluginFileKey& key) const;
  /// Remembers an outcome with the libraries the probe saw loaded (stat'ed
  /// now); not cached when one of them cannot be stat'ed.
  void put(const PluginFileKey& key, bool passed, const std::string& reason,
           const std::vector<std::string>& libraries);
  /// Writes the cache back if anything changed (temp file + rename);
  /// failures only log at debug level: the cache is an optimisation.
  void save() const;

  /// Where the cache lives by default: $OAR_PLUGIN_PROBE_CACHE when set
  /// (empty: no cache), else $XDG_CACHE_HOME/oar, else ~/.cache/oar.
  static std::string default_file();

 private:
  std::string file_;
  std::map<std::string, CachedProbe> entries_;  // by canonical path
  bool dirty_ = false;
};

}  // namespace oar
