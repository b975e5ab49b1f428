// Skip reasons for plugins that dlopen refused. dlopen's message names the
// first object it could not find, which for a plugin's missing dependency is
// the library the user has to install, not the plugin: say so.
#include <string_view>

#include "runtime/plugin_loader.h"

namespace oar {

namespace {

// The text of `error` just before `marker`, back to a separator: the object
// dlerror names ("libdnnl.so.2" in "libdnnl.so.2: cannot open shared object
// file: No such file or directory"); empty when the marker is absent.
std::string object_before(std::string_view error, std::string_view marker) {
  size_t at = error.find(marker);
  if (at == std::string_view::npos) return {};
  size_t start = error.find_last_of("( ", at == 0 ? 0 : at - 1);
  start = start == std::string_view::npos ? 0 : start + 1;
  return std::string(error.substr(start, at - start));
}

std::string word_after(std::string_view error, std::string_view marker) {
  size_t at = error.find(marker);
  if (at == std::string_view::npos) return {};
  at += marker.size();
  size_t end = error.find_first_of(" )\n", at);
  return std::string(error.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at));
}

}  // namespace

std::string describe_load_failure(const std::string& plugin_path, const std::string& error) {
  std::string missing = object_before(error, ": cannot open shared object file");
  if (!missing.empty() && missing != plugin_path) {
    return "it needs the shared library '" + missing +
           "', which was not found (install it, or add its directory to LD_LIBRARY_PATH)";
  }
  std::string symbol = word_after(error, "undefined symbol: ");
  if (!symbol.empty()) {
    return "it needs the symbol '" + symbol +
           "', which none of the libraries it links against provides (is one of them an older or "
           "newer version than the plugin was built with?)";
  }
  return "not a loadable shared object (" + error + ")";
}

}  // namespace oar
