// Strided checks: every op of op_specs() with a native kernel runs on views
// (transposed, sliced with a byte offset and step 2, broadcast with stride
// 0) and must give what the same op gives on contiguous copies of the same
// values, on the device under test. A kernel flagged OAR_KERNEL_STRIDED
// receives the views themselves; any other kernel receives the contiguous
// copies the host makes (Note [Views] in core/src/tensor/view.cpp), so a
// row checks the kernel's stride handling or the host's copy, and says which.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "op_specs.h"
#include "runtime/runtime_state.h"

namespace oar_conformance {
namespace {

using oar::DType;
using oar::Shape;
using oar::Tensor;

// Row-major index -> element index helpers for host arrays.
std::vector<int64_t> unravel(int64_t i, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? i % shape[d] : 0;
    i = shape[d] ? i / shape[d] : 0;
  }
  return idx;
}
int64_t ravel(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t i = 0;
  for (size_t d = 0; d < shape.size(); ++d) i = i * shape[d] + idx[d];
  return i;
}

enum class Layout { transposed, sliced, broadcast };
const char* layout_name(Layout l) {
  return l == Layout::transposed ? "transposed" : l == Layout::sliced ? "sliced" : "broadcast";
}

// Whether input `a` gets the layout (others stay contiguous).
bool applies(Layout l, const HostArray& a) {
  if (a.values.empty()) return false;
  switch (l) {
    case Layout::transposed: return a.shape.size() >= 2 && a.shape[a.shape.size() - 1] > 1 && a.shape[a.shape.size() - 2] > 1;
    case Layout::sliced: return !a.shape.empty();
    case Layout::broadcast: return !a.shape.empty() && a.shape[0] > 1;
  }
  return false;
}

// The values the op sees for the broadcast layout: row 0 along dim 0 repeated.
HostArray repeat_first_row(const HostArray& a) {
  HostArray out = a;
  const size_t row = a.values.size() / static_cast<size_t>(a.shape[0]);
  for (size_t i = row; i < out.values.size(); ++i) out.values[i] = a.values[i % row];
  return out;
}

// A view on `device` with the values of `a` (after repeat_first_row for the
// broadcast layout) and the layout's strides.
Tensor strided_view(Layout l, const HostArray& a, const oar::Device& device) {
  const size_t r = a.shape.size();
  const size_t k = oar::is_complex(a.dtype) ? 2 : 1;  // values per element: complex holds (re, im)
  const auto n = static_cast<int64_t>(a.values.size() / k);
  auto put = [&](HostArray& mem, int64_t to, int64_t from) {
    for (size_t p = 0; p < k; ++p) mem.values[static_cast<size_t>(to) * k + p] = a.values[static_cast<size_t>(from) * k + p];
  };
  switch (l) {
    case Layout::transposed: {
      // Memory holds a with its last two dims swapped; the transpose view swaps them back.
      Shape swapped = a.shape;
      std::swap(swapped[r - 1], swapped[r - 2]);
      HostArray mem{a.dtype, swapped, std::vector<double>(a.values.size())};
      for (int64_t i = 0; i < n; ++i) {
        auto idx = unravel(i, a.shape);
        std::swap(idx[r - 1], idx[r - 2]);
        put(mem, ravel(idx, swapped), i);
      }
      std::vector<int64_t> perm(r);
      for (size_t d = 0; d < r; ++d) perm[d] = static_cast<int64_t>(d);
      std::swap(perm[r - 1], perm[r - 2]);
      return oar::transpose(upload(mem, device), perm);
    }
    case Layout::sliced: {
      // Every dim of memory is 2n + 1 long, a at the odd positions; filler elsewhere.
      Shape big = a.shape;
      for (auto& d : big) d = 2 * d + 1;
      HostArray mem{a.dtype, big, std::vector<double>(k * static_cast<size_t>(oar::shape_numel(big)), 1.0)};
      for (int64_t i = 0; i < n; ++i) {
        auto idx = unravel(i, a.shape);
        for (auto& v : idx) v = 2 * v + 1;
        put(mem, ravel(idx, big), i);
      }
      std::vector<int64_t> axes, starts, ends, steps;
      for (size_t d = 0; d < r; ++d) {
        axes.push_back(static_cast<int64_t>(d));
        starts.push_back(1);
        ends.push_back(big[d]);
        steps.push_back(2);
      }
      return oar::slice(upload(mem, device), axes, starts, ends, steps);
    }
    case Layout::broadcast: {
      HostArray row{a.dtype, a.shape, {}};
      row.shape[0] = 1;
      row.values.assign(a.values.begin(), a.values.begin() + static_cast<int64_t>(a.values.size() / static_cast<size_t>(a.shape[0])));
      return oar::broadcast_to(upload(row, device), a.shape);
    }
  }
  return Tensor();
}

// Empty when equal (exactly, or within `tol` for floats).
std::string compare(const HostArray& got, const HostArray& want, double tol) {
  if (got.dtype != want.dtype || got.shape != want.shape)
    return "the result has shape " + oar::shape_str(got.shape) + " " + short_dtype(got.dtype) + " but on contiguous inputs " +
           oar::shape_str(want.shape) + " " + short_dtype(want.dtype);
  for (size_t i = 0; i < want.values.size(); ++i) {
    double g = got.values[i], w = want.values[i];
    if ((std::isnan(g) && std::isnan(w)) || g == w || std::fabs(g - w) <= tol + tol * std::fabs(w)) continue;
    char buf[200];
    std::snprintf(buf, sizeof buf, "element %zu is %.9g but on contiguous inputs %.9g (tolerance %.1e)", i, g, w, tol);
    return buf;
  }
  return "";
}

// True when a kernel of `op_id` whose first input can be `dtype` is flagged strided.
bool has_strided_kernel(const oar::DeviceBackend& backend, int op_id, DType dtype) {
  if (op_id < 0 || static_cast<size_t>(op_id) >= backend.kernels_by_op.size()) return false;
  const auto& list = backend.kernels_by_op[static_cast<size_t>(op_id)];
  const auto dt = static_cast<int32_t>(dtype);
  return std::any_of(list.begin(), list.end(), [&](const oar::KernelEntry& k) {
    const int32_t first = k.input_dtypes.empty() ? OAR_DTYPE_ANY : k.input_dtypes[0];
    const bool takes = k.any_inputs || first == dt || first == OAR_DTYPE_ANY ||
                       (first == OAR_DTYPE_ANY_FLOAT && oar::is_floating(dtype));
    return takes && (k.flags & OAR_KERNEL_STRIDED);
  });
}

}  // namespace

void run_strided_checks(Suite& suite, const Devices& devices) {
  if (!devices.backend || !suite.section_selected("strided.")) return;
  const auto& registry = oar::OpRegistry::instance();
  const oar::DeviceBackend& backend = *devices.backend;
  for (const auto& spec : op_specs()) {
    const oar::OpDef* op = registry.find(spec.op);
    if (!op || !backend.has_kernel(op->id)) continue;
    for (DType dt : spec.dtypes) {
      const std::string how =
          has_strided_kernel(backend, op->id, dt) ? "kernel flagged strided" : "host-made contiguous copies";
      if (suite.tier() == Tier::smoke && dt != spec.dtypes.front()) continue;
      const std::string name = "strided." + spec.op + "." + short_dtype(dt);
      if (!suite.selected(name)) continue;
      uint32_t seed = 1;
      for (char ch : "kernel." + spec.op + "." + short_dtype(dt)) seed = seed * 31 + static_cast<unsigned char>(ch);
      std::vector<OpCase> cases = spec.cases(dt, suite.tier(), seed);
      cases.resize(std::min<size_t>(cases.size(), suite.tier() == Tier::full ? cases.size() : 3));
      const double tol = tolerance(dt) * spec.tol_scale;
      CheckResult row{.name = name};
      row.extra = {{"dtype", short_dtype(dt)}, {"path", how}};
      int missing = 0;
      for (size_t i = 0; i < cases.size(); ++i) {
        for (Layout layout : {Layout::transposed, Layout::sliced, Layout::broadcast}) {
          const OpCase& c = cases[i];
          if (std::none_of(c.inputs.begin(), c.inputs.end(), [&](const HostArray& a) { return applies(layout, a); }))
            continue;
          std::string id = name + "/" + std::to_string(i);
          if (!suite.case_selected(name, static_cast<int>(i))) continue;
          suite.set_current(id);
          std::string diff;
          try {
            std::vector<Tensor> dense, views;
            for (const HostArray& a : c.inputs) {
              bool use = applies(layout, a);
              HostArray values = use && layout == Layout::broadcast ? repeat_first_row(a) : a;
              dense.push_back(upload(values, devices.dut));
              views.push_back(use ? strided_view(layout, values, devices.dut) : dense.back());
              if (use && views.back().is_contiguous() && layout != Layout::sliced)
                throw oar::Error(oar::ErrorCode::internal, std::string("the ") + layout_name(layout) +
                                                               " input is contiguous: eager views are not strided");
            }
            HostArray want = download(c.run(dense, devices.dut));
            HostArray got = download(c.run(views, devices.dut));
            diff = compare(got, want, tol);
          } catch (const oar::Error& e) {
            if (e.code() == oar::ErrorCode::unsupported) {
              ++missing;  // a dtype or shape the plugin does not take: the kernel checks report it
              continue;
            }
            diff = std::string("failed: ") + e.what();
          }
          ++row.cases;
          if (!diff.empty() && !row.failed_cases++) {
            row.result = Result::fail;
            row.failed_case = id;
            row.detail = how + ": case " + std::to_string(i) + " (" + c.label + ", " + layout_name(layout) +
                         " inputs): " + diff;
          }
        }
      }
      if (row.cases == 0) {
        if (missing == 0) continue;  // nothing to make strided (scalars, creation ops)
        row.result = Result::skip;
        row.detail = "the plugin has no kernel for these cases";
      } else if (row.result == Result::pass) {
        row.detail = how + ": " + std::to_string(row.cases) +
                     " cases on transposed, sliced and broadcast inputs match the contiguous result";
      }
      suite.add(row);
    }
  }
  suite.set_current("");
}

}  // namespace oar_conformance
