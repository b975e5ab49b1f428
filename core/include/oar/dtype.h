/// \file dtype.h
/// Element types of tensors; values equal the ABI's OarDType.
#pragma once

#include <cstddef>
#include <complex>
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
  c64 = 9,    ///< complex64: two f32 (real, imaginary), interleaved
  c128 = 10,  ///< complex128: two f64 (real, imaginary), interleaved
};

/// Number of dtypes (one past the largest value).
inline constexpr int kDTypeCount = 11;

/// Bytes of one element.
size_t dtype_size(DType dtype);
/// Lower-case name: "float32", "bfloat16", "int64", "bool", "complex64", ...
std::string_view dtype_name(DType dtype);
/// Short name: "f32", "bf16", "i64", "bool", "c64", ...
std::string_view dtype_short_name(DType dtype);
/// Parses a name as printed by dtype_name or the short form ("f32", "bf16");
/// throws oar::Error naming the text otherwise.
DType parse_dtype(std::string_view name);
/// True for f32, f64, f16, bf16 (real floats; complex is not floating).
bool is_floating(DType dtype);
/// True for c64 and c128.
bool is_complex(DType dtype);
/// The complex dtype holding values of `real`: f64 -> c128; f32, f16, bf16,
/// the integers and bool -> c64; a complex dtype -> itself.
DType complex_dtype_for(DType real);
/// The dtype of the real and imaginary parts: c64 -> f32, c128 -> f64; any
/// other dtype -> itself.
DType real_dtype_for(DType dtype);
/// True for i8, u8, i32, i64.
bool is_integer(DType dtype);
/// The dtype two operands are computed in (complex beats float beats int beats
/// bool, wider beats narrower; f16 with bf16 gives f32; u8 with i8 gives i32;
/// c64 with f64 gives c128, as Paddle).
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
template <> constexpr DType dtype_of<std::complex<float>>() { return DType::c64; }
template <> constexpr DType dtype_of<std::complex<double>>() { return DType::c128; }

}  // namespace oar
