// Building blocks of the op cases, shared by the family files
// op_specs_*.cpp: random host arrays, the standard shape lists, and
// OpSpec makers for each kind of op.
#pragma once

#include <cmath>
#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "op_specs.h"

namespace oar_conformance::specs {

using oar::DType;
using oar::Shape;
using oar::Tensor;
using Inputs = std::vector<Tensor>;
using Fn1 = std::function<Tensor(const Tensor&)>;
using Fn2 = std::function<Tensor(const Tensor&, const Tensor&)>;

/// Real floats and complex (whose parts are floats).
inline bool is_float(DType d) { return oar::is_floating(d) || oar::is_complex(d); }

/// Uniform values in [lo, hi); integral (and always so for integer dtypes)
/// rounds them, so zeros and ties occur. Bool: 0/1.
HostArray random(const Shape& shape, DType dtype, double lo, double hi, uint32_t& seed, bool integral = false);
/// n indices in [0, bound).
HostArray indices(int64_t n, int64_t bound, DType dtype, uint32_t& seed);
inline std::string str(const Shape& s) { return oar::shape_str(s); }

extern const std::vector<DType> kFloat, kNumeric, kAll, kComposite;
/// c64, c128; kAll and kFloat with them (data movement, matmul).
extern const std::vector<DType> kComplex, kAllComplex, kFloatComplex, kNumericComplex;

std::vector<Shape> unary_shapes(Tier tier);
std::vector<std::pair<Shape, Shape>> binary_shapes(Tier tier);
struct ReduceCase {
  Shape shape;
  std::vector<int64_t> axes;
  bool keepdim;
};
std::vector<ReduceCase> reduce_cases(Tier tier, bool allow_empty);

OpSpec unary(const std::string& op, std::vector<DType> dtypes, Fn1 fn, double lo, double hi, bool integral = false,
             double tol_scale = 1);
/// nonzero_b: integer divisors avoid 0.
OpSpec binary(const std::string& op, std::vector<DType> dtypes, Fn2 fn, double lo, double hi, bool integral = false,
              double blo = NAN, double bhi = NAN, bool nonzero_b = false);
OpSpec reduction(const std::string& op, std::vector<DType> dtypes,
                 std::function<Tensor(const Tensor&, std::vector<int64_t>, bool)> fn, double lo, double hi,
                 bool allow_empty, double tol_scale = 10);
/// One-input ops with fixed shape cases: (shape, label, call).
using ShapeCall = std::tuple<Shape, std::string, Fn1>;
OpSpec shaped(const std::string& op, std::vector<DType> dtypes, std::function<std::vector<ShapeCall>(Tier)> calls);
std::vector<ShapeCall> smoke_cut(Tier tier, std::vector<ShapeCall> v);
using CreationCalls = std::vector<std::pair<std::string, std::function<Tensor(DType, const oar::Device&)>>>;
OpSpec creation(const std::string& op, std::vector<DType> dtypes, std::function<CreationCalls(Tier)> calls);
/// Composite ops: a few shapes, f32/f64.
OpSpec composite(const std::string& op, std::function<std::vector<OpCase>(DType, Tier, uint32_t&)> cases);
OpCase case1(const std::string& label, HostArray x, Fn1 fn);

// The family files, in the order op_specs() lists them.
/// Unary and binary elementwise ops with a TestDomain (op_specs_registry.cpp).
void add_registry_elementwise_specs(std::vector<OpSpec>& s);
/// Reductions over `axes` with a TestDomain (op_specs_registry.cpp).
void add_registry_reduction_specs(std::vector<OpSpec>& s);
/// where, cast (op_specs_elementwise.cpp).
void add_elementwise_specs(std::vector<OpSpec>& s);
/// argmax, argmin (op_specs_elementwise.cpp).
void add_reduction_specs(std::vector<OpSpec>& s);
/// matmul and the manipulation ops (op_specs_shape.cpp).
void add_shape_specs(std::vector<OpSpec>& s);
/// Convolution, pooling, creation and composite ops (op_specs_nn.cpp).
void add_nn_specs(std::vector<OpSpec>& s);

}  // namespace oar_conformance::specs
