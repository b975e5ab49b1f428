// Helpers shared by the program serializer and the safetensors reader and
// writer: strict JSON parsing, checked integer reads, and files written to a
// temporary name and renamed into place.
#pragma once

#include <cstdint>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "oar/tensor.h"

namespace oar::ir::detail {

/// Object keys keep their order, so attributes and headers round-trip as written.
using Json = nlohmann::ordered_json;

/// The deepest nesting of arrays and objects a reader accepts (Note
/// [Bounded JSON nesting]); oar's own files nest at most 6 levels.
inline constexpr int kMaxJsonDepth = 64;

/// Parses `text`; throws oar::Error "<what> is not valid JSON: ...", when
/// an object holds a key twice "<what> has the key 'k' twice in one object",
/// and when it nests deeper than kMaxJsonDepth "<what> nests ... deep".
Json parse_json_strict(const std::string& text, const std::string& what);

/// `j` as an int64 when it is a JSON integer that fits one.
bool json_to_int64(const Json& j, int64_t& out);

/// A file written under `path + ".tmp-<pid>-<n>"`, flushed to disk and
/// renamed to `path` by commit() (Note [Durable saves]). Until then the
/// destination is untouched; a TempFile destroyed without commit() removes
/// its temporary file. Creating one removes the temporary files of `path`
/// left by processes that no longer run.
class TempFile {
 public:
  explicit TempFile(std::string path);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  std::ostream& stream() { return out_; }
  /// Flushes, closes and fsyncs the temporary file (throws naming it when a
  /// write failed); commit() calls it if needed.
  void close();
  /// Renames the temporary file to the destination and fsyncs the
  /// directory (throws naming both).
  void commit();

 private:
  std::string path_;
  std::string tmp_path_;
  std::ofstream out_;
  bool committed_ = false;
};

/// rename(from, to), then fsync of the directory of `to`; throws naming both.
void durable_rename(const std::string& from, const std::string& to);
/// fsync of the directory holding `path`, so a rename there is on disk.
void fsync_directory_of(const std::string& path);
/// Removes `path.tmp-<pid>[-<n>]` files whose process no longer runs.
void remove_stale_temp_files(const std::string& path);

/// Writes a safetensors file's bytes to `out`; `path` names the file in errors.
void write_safetensors(std::ostream& out, const std::string& path,
                       const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata);

}  // namespace oar::ir::detail
