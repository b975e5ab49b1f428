/// \file dtype.h
/// Element types of tensors; values equal the ABI's OarDType.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace oar {

/// Element type of a tensor. The numeric values are the ABI's OAR_DTYPE_*.
enum class DType : int32_t {
  f32 = 0,
  f64 = 1,
  f16 = 2,
  bf16 = 3,
  i8 = 4,
  u8 = 5,
  i32 = 6,
  i64 = 7,
  boolean = 8,
};

/// Bytes of one element.
size_t dtype_size(DType dtype);
/// Lower-case name: "float32", "bfloat16", "int64", "bool", ...
std::string_view dtype_name(DType dtype);
/// Short name: "f32", "bf16", "i64", "bool", ...
std::string_view dtype_short_name(DType dtype);
/// Parses a name as printed by dtype_name or the short form ("f32", "bf16");
/// throws oar::Error naming the text otherwise.
DType parse_dtype(std::string_view name);
/// True for f32, f64, f16, bf16.
bool is_floating(DType dtype);
/// True for i8, u8, i32, i64.
bool is_integer(DType dtype);
/// The dtype two operands are computed in (float beats int beats bool, wider
/// beats narrower; f16 with bf16 gives f32; u8 with i8 gives i32).
DType promote_types(DType a, DType b);

/// The DType of a C++ element type.
template <typename T>
constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<double>() { return DType::f64; }
template <> constexpr DType dtype_of<int8_t>() { return DType::i8; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::u8; }
template <> constexpr DType dtype_of<int32_t>() { return DType::i32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::i64; }
template <> constexpr DType dtype_of<bool>() { return DType::boolean; }

}  // namespace oar
