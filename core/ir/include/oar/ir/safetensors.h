/// \file safetensors.h
/// The safetensors format (https://huggingface.co/docs/safetensors): an
/// 8-byte little-endian header length N, N bytes of JSON header mapping each
/// name to {dtype, shape, data_offsets:[begin, end)} (plus an optional
/// "__metadata__" object of strings), then the raw little-endian data.
/// Readers of other tools (the Python `safetensors` package) read our files.
#pragma once

#include <map>
#include <string>

#include "oar/device.h"
#include "oar/tensor.h"

namespace oar::ir {

/// Writes tensors (any device; copied to the host) to `path`. The file is
/// written to a temporary name, flushed to disk (fsync) and renamed, so a
/// failed or killed save never clobbers an existing file: `path` is always
/// the previous file or the new one, whole.
void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

/// Reads every tensor of `path` onto `device`. A truncated, corrupted or
/// hostile file (bad header length, invalid JSON, unknown dtype, negative
/// or overflowing shape, offsets out of range, overlapping or unaccounted
/// data, size not matching the shape) throws oar::Error naming the file and
/// what is wrong; it never crashes or reads out of bounds.
std::map<std::string, Tensor> load_safetensors(const std::string& path, const Device& device,
                                               std::map<std::string, std::string>* metadata = nullptr);

/// The "__metadata__" strings of `path`, after checking the whole header
/// as load_safetensors does, without reading any tensor data.
std::map<std::string, std::string> read_safetensors_metadata(const std::string& path);

/// safetensors dtype names: "F32", "F64", "F16", "BF16", "I8", "U8", "I32",
/// "I64", "BOOL".
const char* safetensors_dtype(DType dtype);

}  // namespace oar::ir
