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

#include "oar/tensor.h"

namespace oar::ir::detail {

/// Object keys keep their order, so attributes and headers round-trip as written.
using Json = nlohmann::ordered_json;

/// Parses `text`; throws oar::Error "<what> is not valid JSON: ..." or, when
/// an object holds a key twice, "<what> has the key 'k' twice in one object".
Json parse_json_strict(const std::string& text, const std::string& what);

/// `j` as an int64 when it is a JSON integer that fits one.
bool json_to_int64(const Json& j, int64_t& out);

/// A file written under `path + ".tmp-<pid>"` and renamed to `path` by
/// commit(). Until then the destination is untouched; a TempFile destroyed
/// without commit() removes its temporary file.
class TempFile {
 public:
  explicit TempFile(std::string path);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  std::ostream& stream() { return out_; }
  /// Flushes and closes the temporary file (throws naming it when a write
  /// failed); commit() calls it if needed.
  void close();
  /// Renames the temporary file to the destination (throws naming both).
  void commit();

 private:
  std::string path_;
  std::string tmp_path_;
  std::ofstream out_;
  bool committed_ = false;
};

/// Writes a safetensors file's bytes to `out`; `path` names the file in errors.
void write_safetensors(std::ostream& out, const std::string& path,
                       const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata);

}  // namespace oar::ir::detail
