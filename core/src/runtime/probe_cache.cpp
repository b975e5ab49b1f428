// The plugin probe cache (see probe_cache.h). Format, one entry per line,
// fields separated by tabs, after a header naming the format and host ABI:
//   oar-plugin-probe-cache 2 abi 1.1
//   pass<TAB>size<TAB>mtime_ns<TAB>path<TAB><TAB>library...
//   fail<TAB>size<TAB>mtime_ns<TAB>path<TAB>reason<TAB>library...
// where each library is "size mtime_ns path". Paths or reasons containing a
// tab or newline are not cached.
#include "runtime/probe_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "oar/plugin_api.h"
#include "runtime/runtime_state.h"

namespace oar {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxCacheBytes = 1 << 20;  // a bigger file is not ours
constexpr size_t kMaxEntries = 4096;

std::string header_line() {
  return "oar-plugin-probe-cache 2 abi " + std::to_string(OAR_ABI_VERSION_MAJOR) + "." +
         std::to_string(OAR_ABI_VERSION_MINOR);
}

std::vector<std::string_view> split_tabs(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t end = line.find('\t', start);
    out.push_back(line.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

template <typename T>
bool parse_number(std::string_view text, T& value) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size();
}

bool cacheable_text(const std::string& s) { return s.find_first_of("\t\n\r") == std::string::npos; }

// "size mtime_ns path" of one library.
bool parse_library(std::string_view field, PluginFileKey& key) {
  size_t a = field.find(' ');
  size_t b = a == std::string_view::npos ? a : field.find(' ', a + 1);
  if (b == std::string_view::npos || b + 1 >= field.size()) return false;
  key.path = std::string(field.substr(b + 1));
  return parse_number(field.substr(0, a), key.size) && parse_number(field.substr(a + 1, b - a - 1), key.mtime_ns);
}

bool unchanged(const PluginFileKey& recorded) {
  auto now = plugin_file_key(recorded.path);
  return now && now->size == recorded.size && now->mtime_ns == recorded.mtime_ns;
}

}  // namespace

std::optional<PluginFileKey> plugin_file_key(const std::string& path) {
  std::error_code ec;
  fs::path canonical = fs::canonical(path, ec);
  if (ec) return std::nullopt;
  struct stat st {};
  if (::stat(canonical.c_str(), &st) != 0) return std::nullopt;
  return PluginFileKey{canonical.string(), static_cast<uint64_t>(st.st_size),
                       static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

ProbeCache::ProbeCache(std::string file) : file_(std::move(file)) {
  if (file_.empty()) return;
  std::ifstream in(file_, std::ios::binary);
  if (!in) return;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.size() > kMaxCacheBytes) return;
  std::istringstream lines(text);
  std::string line;
  if (!std::getline(lines, line) || line != header_line()) return;
  std::map<std::string, CachedProbe> entries;
  while (std::getline(lines, line)) {
    auto fields = split_tabs(line);
    CachedProbe entry;
    if (fields.size() < 5 || fields[3].empty() || entries.size() >= kMaxEntries) return;
    if (fields[0] == "pass" && fields[4].empty()) entry.passed = true;
    else if (fields[0] == "fail" && !fields[4].empty()) entry.reason = std::string(fields[4]);
    else return;
    if (!parse_number(fields[1], entry.size) || !parse_number(fields[2], entry.mtime_ns)) return;
    for (size_t i = 5; i < fields.size(); ++i) {
      if (!parse_library(fields[i], entry.libraries.emplace_back())) return;
    }
    entries[std::string(fields[3])] = std::move(entry);
  }
  entries_ = std::move(entries);  // all or nothing: a damaged file is not half-trusted
}

std::optional<CachedProbe> ProbeCache::find(const PluginFileKey& key) const {
  auto it = entries_.find(key.path);
  if (it == entries_.end() || it->second.size != key.size || it->second.mtime_ns != key.mtime_ns) {
    return std::nullopt;
  }
  for (const auto& library : it->second.libraries) {
    if (!unchanged(library)) return std::nullopt;  // an upgraded dependency is a new plugin
  }
  return it->second;
}

void ProbeCache::put(const PluginFileKey& key, bool passed, const std::string& reason,
                     const std::vector<std::string>& libraries) {
  if (file_.empty() || !cacheable_text(key.path) || !cacheable_text(reason)) return;
  CachedProbe entry{key.size, key.mtime_ns, passed, passed ? std::string() : reason, {}};
  for (const auto& path : libraries) {
    auto library = plugin_file_key(path);
    if (!library || !cacheable_text(library->path)) return;
    entry.libraries.push_back(*library);
  }
  entries_[key.path] = std::move(entry);
  dirty_ = true;
}

void ProbeCache::save() const {
  if (file_.empty() || !dirty_) return;
  std::string text = header_line() + "\n";
  for (const auto& [path, e] : entries_) {
    std::error_code ec;
    if (!fs::exists(path, ec)) continue;  // forget plugins that are gone
    text += std::string(e.passed ? "pass" : "fail") + "\t" + std::to_string(e.size) + "\t" +
            std::to_string(e.mtime_ns) + "\t" + path + "\t" + e.reason;
    for (const auto& l : e.libraries) {
      text += "\t" + std::to_string(l.size) + " " + std::to_string(l.mtime_ns) + " " + l.path;
    }
    text += "\n";
  }
  std::error_code ec;
  fs::path target(file_);
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  // A unique temporary name: two runtimes (threads or processes) saving at
  // once each rename a whole file; the last one wins.
  std::string temp = file_ + ".tmp-XXXXXX";
  int fd = ::mkstemp(temp.data());
  std::FILE* f = fd < 0 ? nullptr : ::fdopen(fd, "wb");
  if (!f && fd >= 0) ::close(fd);
  bool ok = f && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (f) ok = std::fclose(f) == 0 && ok;
  if (ok && std::rename(temp.c_str(), file_.c_str()) == 0) return;
  if (fd >= 0) std::remove(temp.c_str());
  log_message(OAR_LOG_DEBUG, "could not write the plugin probe cache '" + file_ + "'");
}

std::string ProbeCache::default_file() {
  if (const char* explicit_file = std::getenv("OAR_PLUGIN_PROBE_CACHE")) return explicit_file;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/oar/plugin-probe.cache";
  const char* home = std::getenv("HOME");
  if (home && *home) return std::string(home) + "/.cache/oar/plugin-probe.cache";
  return {};
}

}  // namespace oar
