// Generated inputs and the table of op cases the kernel and gradient checks
// run: for each op, the dtypes tried and, per dtype and tier, a list of
// cases (host inputs + how to call the op).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "conformance.h"

namespace oar_conformance {

/// A tensor on the host: values as doubles, converted to `dtype` on upload.
struct HostArray {
  oar::DType dtype = oar::DType::f32;
  oar::Shape shape;
  std::vector<double> values;  ///< row-major; complex: (real, imaginary) pairs, 2 per element
};

/// Copies a host array to a device (exact bytes of its dtype).
oar::Tensor upload(const HostArray& a, const oar::Device& device);
/// Reads a tensor back (f16/bf16 widened exactly).
HostArray download(const oar::Tensor& t);

/// "f32", "bf16", "i64", "bool", "c64".
std::string short_dtype(oar::DType dtype);

/// One call of an op on generated inputs.
struct OpCase {
  std::string label;  ///< shapes and attributes, for failure messages
  std::vector<HostArray> inputs;
  /// Calls the op on inputs already on `device` (creation ops use `device`).
  std::function<oar::Tensor(const std::vector<oar::Tensor>&, const oar::Device&)> run;
  bool differentiable = true;  ///< false: no gradient check for this case
};

/// The cases of one op.
struct OpSpec {
  std::string op;                  ///< name in the op registry
  std::vector<oar::DType> dtypes;  ///< dtypes tried (one check row each)
  double tol_scale = 1;            ///< multiplies the per-dtype tolerance
  /// Cases for one dtype at one tier; `seed` advances so inputs differ.
  std::function<std::vector<OpCase>(oar::DType dtype, Tier tier, uint32_t& seed)> cases;
  /// Note [Edge-value cases]: false for ops whose NaN/inf results depend on
  /// the algorithm (an FFT mixes every input into every output in an order
  /// of its own, so where inf - inf turns into NaN is not part of the contract).
  bool edge_values = true;
};

/// Every op the suite knows how to generate, in registry-like order.
const std::vector<OpSpec>& op_specs();

/// Absolute and relative tolerance for results of `dtype`.
double tolerance(oar::DType dtype);

}  // namespace oar_conformance
