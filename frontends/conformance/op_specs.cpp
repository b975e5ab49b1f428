// The op cases: host arrays, tolerances, and the table op_specs() put
// together from the family files (op_specs_*.cpp). Shapes cover
// broadcasting, size-0 and size-1 dims, scalars and odd sizes; values are
// drawn from std::mt19937 on the host, in ranges where every op is defined
// (for elementwise ops and reductions: the registry's TestDomain), with
// integers and ties where they matter.
#include "op_specs.h"

#include <cmath>
#include <cstring>
#include <random>

#include "oar/plugin_util.h"
#include "op_specs_util.h"

namespace oar_conformance {

using oar::DType;
using oar::Shape;
using oar::Tensor;
using Inputs = std::vector<Tensor>;

// ---------------------------------------------------------------------------
// Host arrays
// ---------------------------------------------------------------------------

std::string short_dtype(DType dtype) {
  static const char* const names[] = {"f32", "f64", "f16", "bf16", "i8", "u8",
                                      "i32", "i64", "bool", "c64", "c128"};
  auto i = static_cast<int>(dtype);
  return i >= 0 && i < oar::kDTypeCount ? names[i] : "dtype" + std::to_string(i);
}

// A complex HostArray holds (real, imaginary) pairs: its parts are stored as
// the part dtype's elements, interleaved, which is the complex layout.
Tensor upload_complex(const HostArray& a, const oar::Device& device) {
  const DType part = oar::real_dtype_for(a.dtype);
  const size_t n = a.values.size(), size = oar::dtype_size(part);
  std::vector<unsigned char> bytes(std::max<size_t>(n * size, 1));
  for (size_t i = 0; i < n; ++i) {
    if (part == DType::f32) {
      auto f = static_cast<float>(a.values[i]);
      std::memcpy(bytes.data() + i * size, &f, size);
    } else {
      std::memcpy(bytes.data() + i * size, &a.values[i], size);
    }
  }
  return Tensor::from_host(bytes.data(), a.shape, a.dtype, device);
}

HostArray download_complex(const Tensor& t) {
  HostArray a{t.dtype(), t.shape(), {}};
  const DType part = oar::real_dtype_for(t.dtype());
  const size_t n = 2 * static_cast<size_t>(t.numel()), size = oar::dtype_size(part);
  std::vector<unsigned char> bytes(std::max<size_t>(n * size, 1));
  if (n) t.copy_to_host(bytes.data());
  a.values.resize(n);
  for (size_t i = 0; i < n; ++i) {
    if (part == DType::f32) {
      float f;
      std::memcpy(&f, bytes.data() + i * size, size);
      a.values[i] = f;
    } else {
      std::memcpy(&a.values[i], bytes.data() + i * size, size);
    }
  }
  return a;
}

Tensor upload(const HostArray& a, const oar::Device& device) {
  if (oar::is_complex(a.dtype)) return upload_complex(a, device);
  size_t n = a.values.size(), size = oar::dtype_size(a.dtype);
  std::vector<unsigned char> bytes(std::max<size_t>(n * size, 1));
  for (size_t i = 0; i < n; ++i) {
    double v = a.values[i];
    unsigned char* p = bytes.data() + i * size;
    switch (a.dtype) {
      case DType::f32: {
        float f = static_cast<float>(v);
        std::memcpy(p, &f, 4);
        break;
      }
      case DType::f64:
        std::memcpy(p, &v, 8);
        break;
      case DType::f16: {
        uint16_t h = oar_f32_to_f16(static_cast<float>(v));
        std::memcpy(p, &h, 2);
        break;
      }
      case DType::bf16: {
        uint16_t h = oar_f32_to_bf16(static_cast<float>(v));
        std::memcpy(p, &h, 2);
        break;
      }
      case DType::i8: {
        auto x = static_cast<int8_t>(v);
        std::memcpy(p, &x, 1);
        break;
      }
      case DType::u8: {
        auto x = static_cast<uint8_t>(v);
        std::memcpy(p, &x, 1);
        break;
      }
      case DType::i32: {
        auto x = static_cast<int32_t>(v);
        std::memcpy(p, &x, 4);
        break;
      }
      case DType::i64: {
        auto x = static_cast<int64_t>(v);
        std::memcpy(p, &x, 8);
        break;
      }
      case DType::boolean:
        *p = v != 0;
        break;
      case DType::c64:
      case DType::c128:
        break;  // upload_complex
    }
  }
  return Tensor::from_host(bytes.data(), a.shape, a.dtype, device);
}

HostArray download(const Tensor& t) {
  if (oar::is_complex(t.dtype())) return download_complex(t);
  HostArray a{t.dtype(), t.shape(), {}};
  size_t n = static_cast<size_t>(t.numel()), size = oar::dtype_size(t.dtype());
  std::vector<unsigned char> bytes(std::max<size_t>(n * size, 1));
  if (n) t.copy_to_host(bytes.data());
  a.values.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char* p = bytes.data() + i * size;
    double& v = a.values[i];
    switch (t.dtype()) {
      case DType::f32: {
        float f;
        std::memcpy(&f, p, 4);
        v = f;
        break;
      }
      case DType::f64:
        std::memcpy(&v, p, 8);
        break;
      case DType::f16: {
        uint16_t h;
        std::memcpy(&h, p, 2);
        v = oar_f16_to_f32(h);
        break;
      }
      case DType::bf16: {
        uint16_t h;
        std::memcpy(&h, p, 2);
        v = oar_bf16_to_f32(h);
        break;
      }
      case DType::i8: {
        int8_t x;
        std::memcpy(&x, p, 1);
        v = x;
        break;
      }
      case DType::u8:
        v = *p;
        break;
      case DType::i32: {
        int32_t x;
        std::memcpy(&x, p, 4);
        v = x;
        break;
      }
      case DType::i64: {
        int64_t x;
        std::memcpy(&x, p, 8);
        v = static_cast<double>(x);
        break;
      }
      case DType::boolean:
        v = *p;
        break;
      case DType::c64:
      case DType::c128:
        break;  // download_complex
    }
  }
  return a;
}

double tolerance(DType dtype) {
  switch (dtype) {
    case DType::f64:
    case DType::c128:
      return 1e-10;
    case DType::f32:
    case DType::c64:
      return 1e-5;
    case DType::f16:
      return 1e-2;
    case DType::bf16:
      return 2e-2;
    default:
      return 0;
  }
}

namespace {

using specs::is_float;

// Note [Edge-value cases]: beyond the smoke tier, every op with a float
// input gets one more case per float dtype: its first case with NaN, +inf
// and -inf planted in the first three elements of its first float input of
// at least three elements. The reference defines what those give (NaN
// propagates, numpy's rules); a device that drops a NaN in a max or turns
// an infinity into a finite number fails the check. No gradient check: the
// gradients of non-finite inputs are not part of the contract.
void add_edge_value_cases(std::vector<OpSpec>& specs) {
  for (OpSpec& spec : specs) {
    if (!spec.edge_values) continue;
    auto base = spec.cases;
    spec.cases = [base](DType dt, Tier tier, uint32_t& seed) {
      std::vector<OpCase> cases = base(dt, tier, seed);
      if (tier == Tier::smoke || !is_float(dt)) return cases;
      for (const OpCase& c : cases) {
        for (size_t i = 0; i < c.inputs.size(); ++i) {
          if (!is_float(c.inputs[i].dtype) || c.inputs[i].values.size() < 3) continue;
          OpCase edge = c;
          std::vector<double>& v = edge.inputs[i].values;
          v[0] = NAN;
          v[1] = INFINITY;
          v[2] = -INFINITY;
          edge.label += " [NaN, +inf, -inf in input " + std::to_string(i) + "]";
          edge.differentiable = false;
          cases.push_back(std::move(edge));
          return cases;
        }
      }
      return cases;
    };
  }
}

}  // namespace

const std::vector<OpSpec>& op_specs() {
  static const std::vector<OpSpec> all = [] {
    std::vector<OpSpec> s;
    specs::add_registry_elementwise_specs(s);
    specs::add_elementwise_specs(s);
    specs::add_registry_reduction_specs(s);
    specs::add_reduction_specs(s);
    specs::add_shape_specs(s);
    specs::add_nn_specs(s);
    specs::add_fft_specs(s);
    add_edge_value_cases(s);
    return s;
  }();
  return all;
}

}  // namespace oar_conformance
