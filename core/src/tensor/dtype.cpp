// dtype and device helpers.
#include <array>
#include <charconv>

#include "oar/device.h"
#include "oar/dtype.h"
#include "oar/error.h"

namespace oar {

namespace {
struct DTypeInfo {
  DType dtype;
  size_t size;
  std::string_view name;
  std::string_view short_name;
};
constexpr std::array<DTypeInfo, kDTypeCount> kDTypes = {{
    {DType::f32, 4, "float32", "f32"},
    {DType::f64, 8, "float64", "f64"},
    {DType::f16, 2, "float16", "f16"},
    {DType::bf16, 2, "bfloat16", "bf16"},
    {DType::i8, 1, "int8", "i8"},
    {DType::u8, 1, "uint8", "u8"},
    {DType::i32, 4, "int32", "i32"},
    {DType::i64, 8, "int64", "i64"},
    {DType::boolean, 1, "bool", "bool"},
    {DType::c64, 8, "complex64", "c64"},
    {DType::c128, 16, "complex128", "c128"},
}};

const DTypeInfo& info(DType dtype) {
  auto index = static_cast<size_t>(dtype);
  if (index >= kDTypes.size()) {
    throw Error(ErrorCode::invalid_argument,
                "dtype: value " + std::to_string(index) + " is not a dtype (expected 0.." +
                    std::to_string(kDTypeCount - 1) + ")");
  }
  return kDTypes[index];
}

// Rank used by promote_types: bool < ints < floats < complex; within a kind,
// wider wins.
int kind_rank(DType d) {
  return d == DType::boolean ? 0 : is_integer(d) ? 1 : is_complex(d) ? 3 : 2;
}
}  // namespace

size_t dtype_size(DType dtype) { return info(dtype).size; }
std::string_view dtype_name(DType dtype) { return info(dtype).name; }
std::string_view dtype_short_name(DType dtype) { return info(dtype).short_name; }

DType parse_dtype(std::string_view name) {
  for (const auto& d : kDTypes) {
    if (d.name == name || d.short_name == name) return d.dtype;
  }
  if (name == "float") return DType::f32;
  if (name == "double") return DType::f64;
  if (name == "int") return DType::i64;
  if (name == "complex") return DType::c64;
  throw Error(ErrorCode::invalid_argument,
              "dtype: '" + std::string(name) + "' is not a dtype name (expected float32, float64, "
              "float16, bfloat16, int8, uint8, int32, int64, bool, complex64 or complex128)");
}

bool is_floating(DType d) {
  return d == DType::f32 || d == DType::f64 || d == DType::f16 || d == DType::bf16;
}
bool is_complex(DType d) { return d == DType::c64 || d == DType::c128; }

DType complex_dtype_for(DType d) {
  if (is_complex(d)) return d;
  return d == DType::f64 ? DType::c128 : DType::c64;
}

DType real_dtype_for(DType d) {
  if (d == DType::c64) return DType::f32;
  if (d == DType::c128) return DType::f64;
  return d;
}

bool is_integer(DType d) {
  return d == DType::i8 || d == DType::u8 || d == DType::i32 || d == DType::i64;
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (is_complex(a) || is_complex(b)) {
    // Complex beats real; the result is wide enough for both parts (c64 with
    // f64 gives c128, as Paddle and NumPy).
    bool wide = real_dtype_for(a) == DType::f64 || real_dtype_for(b) == DType::f64;
    return wide ? DType::c128 : DType::c64;
  }
  if (kind_rank(a) != kind_rank(b)) return kind_rank(a) > kind_rank(b) ? a : b;
  if (is_floating(a)) {
    if ((a == DType::f16 && b == DType::bf16) || (a == DType::bf16 && b == DType::f16)) return DType::f32;
    return dtype_size(a) >= dtype_size(b) ? a : b;
  }
  if ((a == DType::u8 && b == DType::i8) || (a == DType::i8 && b == DType::u8)) return DType::i32;
  return dtype_size(a) >= dtype_size(b) ? a : b;
}

Device parse_device(std::string_view text) {
  Device device;
  auto colon = text.find(':');
  device.type = std::string(text.substr(0, colon));
  bool ok = !device.type.empty();
  if (ok && colon != std::string_view::npos) {
    auto digits = text.substr(colon + 1);
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), device.index);
    ok = ec == std::errc() && ptr == digits.data() + digits.size() && !digits.empty() && device.index >= 0;
  }
  if (!ok) {
    throw Error(ErrorCode::invalid_argument,
                "device: '" + std::string(text) + "' is not a device (expected 'type' or 'type:index', e.g. 'cpu' or 'mock:1')");
  }
  return device;
}

}  // namespace oar
