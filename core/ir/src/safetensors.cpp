// The safetensors reader and writer, and the file helpers of
// serialize_util.h.
//
// Note [Reading hostile safetensors files]
// A file may be truncated, corrupted or crafted. The reader trusts nothing:
// it reads with std::ifstream (no mmap), caps the header length, checks
// every header entry (dtype, shape with overflow-checked sizes, offsets
// inside the data section and matching the shape), and, like the reference
// implementation, requires the tensors to tile the data section exactly: no
// gaps, no overlaps, no trailing bytes. Only then does it read any data.
#include "oar/ir/safetensors.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <tuple>
#include <unordered_set>
#include <vector>

#include "serialize_util.h"

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian host would need byte swaps");

namespace oar::ir {

namespace detail {

namespace {
// `text` with bytes outside printable ASCII as \xNN: the parser's message
// quotes the offending bytes of a hostile file, which may not be UTF-8.
std::string printable(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}
}  // namespace

// Note [Bounded JSON nesting]
// nlohmann's parser keeps its own stack, but dump() and the recursive code
// that walks a parsed value (error messages quote a shape with dump()) use
// the C++ stack, so 100,000 nested brackets overflowed it. The parser's
// callback sees the depth of every value; a document deeper than
// kMaxJsonDepth is refused while parsing, before anything walks it. Both
// readers (program JSON, safetensors headers) parse through here.
Json parse_json_strict(const std::string& text, const std::string& what) {
  struct TooDeep {};
  // Keys seen in each open object, innermost last; the first repeated key.
  std::vector<std::unordered_set<std::string>> open_objects;
  std::string duplicate;
  auto on_event = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (depth > kMaxJsonDepth) throw TooDeep{};
    if (event == Json::parse_event_t::object_start) {
      open_objects.emplace_back();
    } else if (event == Json::parse_event_t::object_end) {
      if (!open_objects.empty()) open_objects.pop_back();
    } else if (event == Json::parse_event_t::key && !open_objects.empty()) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (!open_objects.back().insert(key).second && duplicate.empty()) duplicate = key;
    }
    return true;
  };
  Json j;
  try {
    j = Json::parse(text, on_event);
  } catch (const Json::exception& e) {
    throw Error(ErrorCode::invalid_argument, what + " is not valid JSON (" + printable(e.what()) + ")");
  } catch (const TooDeep&) {
    throw Error(ErrorCode::invalid_argument, what + " nests arrays and objects more than " +
                                                 std::to_string(kMaxJsonDepth) + " levels deep");
  }
  if (!duplicate.empty()) {
    throw Error(ErrorCode::invalid_argument,
                what + " has the key '" + duplicate + "' twice in one object");
  }
  return j;
}

bool json_to_int64(const Json& j, int64_t& out) {
  if (!j.is_number_integer()) return false;
  if (j.is_number_unsigned()) {
    auto u = j.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    out = static_cast<int64_t>(u);
    return true;
  }
  out = j.get<int64_t>();
  return true;
}

}  // namespace detail

namespace {

using detail::Json;

// The reference implementation's cap on the header length.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct DTypeName {
  DType dtype;
  const char* name;
};
constexpr std::array<DTypeName, kDTypeCount> kDTypeNames = {{
    {DType::f32, "F32"},
    {DType::f64, "F64"},
    {DType::f16, "F16"},
    {DType::bf16, "BF16"},
    {DType::i8, "I8"},
    {DType::u8, "U8"},
    {DType::i32, "I32"},
    {DType::i64, "I64"},
    {DType::boolean, "BOOL"},
    {DType::c64, "C64"},    // the safetensors spec's names (interleaved real, imaginary)
    {DType::c128, "C128"},
}};

bool parse_safetensors_dtype(const std::string& name, DType& out) {
  for (const auto& d : kDTypeNames) {
    if (name == d.name) {
      out = d.dtype;
      return true;
    }
  }
  return false;
}

std::string offsets_str(uint64_t begin, uint64_t end) {
  std::string s = "[";
  s += std::to_string(begin);
  s += ", ";
  s += std::to_string(end);
  s += "]";
  return s;
}

// One header entry, checked.
struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin;
  uint64_t end;
};

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error(ErrorCode::invalid_argument, path + ": " + what);
}

Entry parse_entry(const std::string& path, const std::string& name, const Json& info,
                  uint64_t data_bytes) {
  const std::string tensor = "tensor '" + name + "'";
  if (!info.is_object())
    fail(path, tensor + " is described by a JSON " + info.type_name() + ", not an object");
  for (const auto& [key, _] : info.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      fail(path,
           tensor + " has the unknown key '" + key + "' (expected dtype, shape, data_offsets)");
    }
  }
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!info.contains(key)) fail(path, tensor + " has no '" + key + "'");
  }

  Entry e{.name = name, .dtype = DType::f32, .shape = {}, .begin = 0, .end = 0};
  const Json& dtype = info.at("dtype");
  if (!dtype.is_string()) fail(path, tensor + " has a dtype that is not a string");
  if (!parse_safetensors_dtype(dtype.get<std::string>(), e.dtype)) {
    fail(path, tensor + " has the unsupported dtype '" + dtype.get<std::string>() +
                   "' (expected F32, F64, F16, BF16, I8, U8, I32, I64 or BOOL)");
  }

  const Json& shape = info.at("shape");
  if (!shape.is_array()) fail(path, tensor + " has a shape that is not a list");
  uint64_t numel = 1;
  bool overflow = false;
  for (const Json& d : shape) {
    int64_t dim = 0;
    if (!detail::json_to_int64(d, dim) || dim < 0) {
      fail(path,
           tensor + " has the shape " + shape.dump() + "; dims must be non-negative integers");
    }
    e.shape.push_back(dim);
    overflow = overflow || __builtin_mul_overflow(numel, static_cast<uint64_t>(dim), &numel);
  }
  uint64_t bytes = 0;
  overflow = overflow || __builtin_mul_overflow(numel, dtype_size(e.dtype), &bytes) ||
             numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (overflow)
    fail(path, tensor + " has the shape " + shape.dump() + ", whose size overflows 64 bits");

  const Json& offsets = info.at("data_offsets");
  bool two_ints = offsets.is_array() && offsets.size() == 2 && offsets[0].is_number_unsigned() &&
                  offsets[1].is_number_unsigned();
  if (!two_ints) {
    fail(path,
         tensor + " has data_offsets " + offsets.dump() + "; expected two non-negative integers");
  }
  e.begin = offsets[0].get<uint64_t>();
  e.end = offsets[1].get<uint64_t>();
  if (e.begin > e.end)
    fail(path, tensor + " has data_offsets " + offsets_str(e.begin, e.end) + " with begin > end");
  if (e.end > data_bytes) {
    fail(path, tensor + " has data_offsets " + offsets_str(e.begin, e.end) +
                   " beyond the data section of " + std::to_string(data_bytes) + " bytes");
  }
  if (e.end - e.begin != bytes) {
    fail(path, tensor + " has data_offsets " + offsets_str(e.begin, e.end) + " but shape " +
                   shape_str(e.shape) + " of " + dtype.get<std::string>() + " needs " +
                   std::to_string(bytes) + " bytes");
  }
  return e;
}

// The tensors must tile [0, data_bytes) exactly (Note [Reading hostile safetensors files]).
void check_coverage(const std::string& path, std::vector<Entry> entries, uint64_t data_bytes) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : entries) {
    if (e.begin < covered) {
      fail(path, "tensor '" + e.name + "' at " + offsets_str(e.begin, e.end) +
                     " overlaps tensor '" + previous->name + "' at " +
                     offsets_str(previous->begin, previous->end));
    }
    if (e.begin > covered) {
      fail(path, "bytes [" + std::to_string(covered) + ", " + std::to_string(e.begin) +
                     ") of the data section belong to no tensor");
    }
    covered = e.end;
    previous = &e;
  }
  if (covered != data_bytes) {
    fail(path, "bytes [" + std::to_string(covered) + ", " + std::to_string(data_bytes) +
                   ") of the data section belong to no tensor");
  }
}

}  // namespace

const char* safetensors_dtype(DType dtype) {
  for (const auto& d : kDTypeNames) {
    if (d.dtype == dtype) return d.name;
  }
  throw Error(ErrorCode::invalid_argument, "safetensors: dtype value " +
                                               std::to_string(static_cast<int>(dtype)) +
                                               " has no safetensors name");
}

namespace detail {

void write_safetensors(std::ostream& out, const std::string& path,
                       const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  // Wider dtypes first, then by name, as the reference orders them: every
  // tensor then starts at a multiple of its element size.
  std::vector<std::pair<const std::string*, const Tensor*>> order;
  for (const auto& [name, t] : tensors) {
    if (name == "__metadata__") fail(path, "a tensor cannot be named '__metadata__'");
    if (!t.defined()) fail(path, "tensor '" + name + "' is undefined");
    if (t.is_symbolic())
      fail(path, "tensor '" + name + "' is symbolic (a traced value) and has no data");
    order.emplace_back(&name, &t);
  }
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return dtype_size(a.second->dtype()) > dtype_size(b.second->dtype());
  });

  Json header = Json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : order) {
    uint64_t bytes = static_cast<uint64_t>(t->numel()) * dtype_size(t->dtype());
    header[*name] = Json{{"dtype", safetensors_dtype(t->dtype())},
                         {"shape", t->shape()},
                         {"data_offsets", Json::array({offset, offset + bytes})}};
    offset += bytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const Json::exception& e) {
    fail(path, std::string("cannot encode the header (") + e.what() + ")");
  }
  text.append((8 - text.size() % 8) % 8, ' ');  // the reference pads to a multiple of 8

  std::array<char, 8> length{};
  uint64_t n = text.size();
  std::memcpy(length.data(), &n, sizeof n);
  out.write(length.data(), length.size());
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  std::vector<char> host;
  for (const auto& [name, t] : order) {
    host.resize(static_cast<size_t>(t->numel()) * dtype_size(t->dtype()));
    t->copy_to_host(host.data());
    out.write(host.data(), static_cast<std::streamsize>(host.size()));
  }
}

}  // namespace detail

void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  detail::TempFile file(path);
  detail::write_safetensors(file.stream(), path, tensors, metadata);
  file.commit();
}

namespace {

// A checked header: the entries tile the data section that starts at byte
// `data_start` (Note [Reading hostile safetensors files]).
struct Header {
  std::vector<Entry> entries;
  std::map<std::string, std::string> metadata;
  uint64_t data_start = 0;
};

Header read_header(const std::string& path, std::ifstream& in) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec)) {
    fail(path, "is not a regular file");
  }
  in.open(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open the file (") + std::strerror(errno) + ")");
  in.seekg(0, std::ios::end);
  std::streamoff end = in.tellg();
  if (end < 0) fail(path, "cannot determine the file's size");
  auto file_bytes = static_cast<uint64_t>(end);
  if (file_bytes < 8) {
    fail(path, "the file has " + std::to_string(file_bytes) +
                   " bytes, fewer than the 8 of the header length");
  }

  in.seekg(0);
  std::array<char, 8> length{};
  in.read(length.data(), length.size());
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, length.data(), sizeof header_bytes);
  if (header_bytes > kMaxHeaderBytes) {
    fail(path, "the header length " + std::to_string(header_bytes) + " exceeds the limit of " +
                   std::to_string(kMaxHeaderBytes) + " bytes");
  }
  if (header_bytes > file_bytes - 8) {
    fail(path, "the header length " + std::to_string(header_bytes) + " exceeds the " +
                   std::to_string(file_bytes - 8) + " bytes that follow it");
  }
  std::string text(header_bytes, '\0');
  in.read(text.data(), static_cast<std::streamsize>(header_bytes));
  if (!in) fail(path, "reading the header failed");
  uint64_t data_bytes = file_bytes - 8 - header_bytes;

  Json json = detail::parse_json_strict(text, path + ": the header");
  if (!json.is_object())
    fail(path, std::string("the header is a JSON ") + json.type_name() + ", not an object");

  Header header;
  header.data_start = 8 + header_bytes;
  for (const auto& [name, info] : json.items()) {
    if (name == "__metadata__") {
      if (!info.is_object()) fail(path, "__metadata__ is not an object");
      for (const auto& [key, value] : info.items()) {
        if (!value.is_string()) fail(path, "__metadata__ entry '" + key + "' is not a string");
        header.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    header.entries.push_back(parse_entry(path, name, info, data_bytes));
  }
  check_coverage(path, header.entries, data_bytes);
  return header;
}

}  // namespace

std::map<std::string, std::string> read_safetensors_metadata(const std::string& path) {
  std::ifstream in;
  return read_header(path, in).metadata;
}

std::map<std::string, Tensor> load_safetensors(const std::string& path, const Device& device,
                                               std::map<std::string, std::string>* metadata) {
  std::ifstream in;
  Header header = read_header(path, in);
  std::map<std::string, Tensor> tensors;
  std::vector<char> host;
  for (const Entry& e : header.entries) {
    host.resize(std::max<uint64_t>(e.end - e.begin, 1));
    in.seekg(static_cast<std::streamoff>(header.data_start + e.begin));
    in.read(host.data(), static_cast<std::streamsize>(e.end - e.begin));
    if (!in)
      fail(path, "reading the data of tensor '" + e.name + "' failed (was the file truncated?)");
    tensors.emplace(e.name, Tensor::from_host(host.data(), e.shape, e.dtype, device));
  }
  if (metadata) *metadata = std::move(header.metadata);
  return tensors;
}

}  // namespace oar::ir
