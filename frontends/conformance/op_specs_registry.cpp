// Op cases generated from the op registry (Note [One op definition] in
// core/src/ops/op_registry.cpp): every op with a TestDomain gets the
// standard cases of its kind, drawn from its domain, for the dtypes it is
// tested in. An op with one input and no attributes is elementwise unary
// (unary_shapes), two inputs and no attributes elementwise binary
// (binary_shapes, broadcasting), one input with exactly `axes` and
// `keepdim` a reduction (reduce_cases). Adding such an op to the registry
// with a domain is all the suite needs.
#include <algorithm>
#include <array>

#include "op_specs_util.h"

namespace oar_conformance::specs {

namespace {

// Note [Tested dtypes]: a domain lists the dtypes it is tested in, or
// (dtypes == 0) the op's accepted ones among f32, f64, f16, bf16, i32 and
// i64; i8, u8 and bool only where a domain lists them (cast, copy and the
// logical ops go through all nine).
std::vector<DType> tested_dtypes(const oar::OpDef& op) {
  const oar::DTypeSet standard =
      oar::kFloatDTypes | oar::dtype_bit(DType::i32) | oar::dtype_bit(DType::i64) | oar::kComplexDTypes;
  oar::DTypeSet set = op.domain->dtypes ? op.domain->dtypes : (op.dtypes.accepts & standard);
  std::vector<DType> out;
  for (DType d : kAll) {
    if (set & oar::dtype_bit(d)) out.push_back(d);
  }
  for (DType d : {DType::c64, DType::c128}) {
    if (set & oar::dtype_bit(d)) out.push_back(d);
  }
  return out;
}

bool is_reduction(const oar::OpDef& op) {
  return op.num_inputs == 1 && op.attrs.size() == 2 && op.find_attr("axes") && op.find_attr("keepdim");
}

// Axes as the C++ reductions pass them: non-negative, sorted, unique; none
// means every axis.
std::vector<int64_t> normalized(std::vector<int64_t> axes, int64_t rank) {
  if (axes.empty()) {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  for (int64_t& a : axes) a = a < 0 ? a + std::max<int64_t>(rank, 1) : a;
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  if (rank == 0) axes.clear();
  return axes;
}

}  // namespace

void add_registry_elementwise_specs(std::vector<OpSpec>& s) {
  for (const oar::OpDef* op : oar::OpRegistry::instance().all()) {
    if (!op->domain || !op->attrs.empty()) continue;
    const oar::TestDomain& d = *op->domain;
    if (op->num_inputs == 1) {
      s.push_back(unary(
          op->name, tested_dtypes(*op),
          [op](const Tensor& x) {
            std::array<Tensor, 1> in{x};
            return oar::apply1(*op, in);
          },
          d.low, d.high, d.integral, d.tol_scale));
    } else if (op->num_inputs == 2) {
      s.push_back(binary(
          op->name, tested_dtypes(*op),
          [op](const Tensor& a, const Tensor& b) {
            std::array<Tensor, 2> in{a, b};
            return oar::apply1(*op, in);
          },
          d.low, d.high, d.integral, d.low2, d.high2, d.nonzero2));
    }
  }
}

void add_registry_reduction_specs(std::vector<OpSpec>& s) {
  for (const oar::OpDef* op : oar::OpRegistry::instance().all()) {
    if (!op->domain || !is_reduction(*op)) continue;
    const oar::TestDomain& d = *op->domain;
    s.push_back(reduction(
        op->name, tested_dtypes(*op),
        [op](const Tensor& x, std::vector<int64_t> axes, bool keepdim) {
          std::array<Tensor, 1> in{x};
          return oar::apply1(*op, in, oar::Attrs{{"axes", normalized(std::move(axes), x.dim())}, {"keepdim", keepdim}});
        },
        d.low, d.high, d.empty_axes, d.tol_scale));
  }
}

}  // namespace oar_conformance::specs
