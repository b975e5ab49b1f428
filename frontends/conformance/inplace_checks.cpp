// In-place checks: Tensor::assign_ (Note [In-place writes] in
// core/src/tensor/inplace.cpp) writes a source into a destination view of a
// larger buffer on the device under test. The whole buffer is read back and
// compared with the same write done on the host: the view's elements hold
// the (broadcast, cast) source, every other element keeps its filler, and
// the storage's version went up by one. A copy kernel flagged
// OAR_KERNEL_STRIDED_OUTPUT writes strided destinations itself; otherwise
// the host writes them through host memory, and the row says which.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "op_specs.h"
#include "runtime/runtime_state.h"

namespace oar_conformance {
namespace {

using oar::DType;
using oar::Shape;
using oar::Tensor;

// A destination: a view of a [4, 6] buffer, made by `take`, and the flat
// buffer positions of its elements in row-major order.
struct Destination {
  const char* name;
  Tensor (*take)(const Tensor& buffer);
  std::vector<int64_t> (*positions)();
};

std::vector<int64_t> positions_where(const Shape& shape, const std::function<int64_t(int64_t, int64_t)>& at) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < shape[0]; ++i)
    for (int64_t j = 0; j < shape[1]; ++j) out.push_back(at(i, j));
  return out;
}

const Destination kDestinations[] = {
    {"whole", [](const Tensor& b) { return b; },
     [] { return positions_where({4, 6}, [](int64_t i, int64_t j) { return i * 6 + j; }); }},
    {"rows 1..2 (byte offset)", [](const Tensor& b) { return oar::slice(b, {0}, {1}, {3}, {1}); },
     [] { return positions_where({2, 6}, [](int64_t i, int64_t j) { return (i + 1) * 6 + j; }); }},
    {"transposed", [](const Tensor& b) { return oar::transpose(b, {1, 0}); },
     [] { return positions_where({6, 4}, [](int64_t i, int64_t j) { return j * 6 + i; }); }},
    {"sliced, step 2", [](const Tensor& b) { return oar::slice(b, {0, 1}, {1, 1}, {4, 6}, {2, 2}); },
     [] { return positions_where({2, 3}, [](int64_t i, int64_t j) { return (2 * i + 1) * 6 + 2 * j + 1; }); }},
    {"transposed slice", [](const Tensor& b) { return oar::transpose(oar::slice(b, {1}, {2}, {5}, {1}), {1, 0}); },
     [] { return positions_where({3, 4}, [](int64_t i, int64_t j) { return j * 6 + i + 2; }); }},
};

// The value written at element k of a destination with `cols` columns when
// the source is a row broadcast over the rows (`row`), or dense.
double source_value(int64_t k, int64_t cols, bool row) { return row ? 10.0 + static_cast<double>(k % cols) : 10.0 + k; }

std::string check_one(const Destination& d, DType dtype, bool broadcast_row, bool other_dtype, const oar::Device& dut) {
  std::vector<double> filler(24);
  std::iota(filler.begin(), filler.end(), 1.0);
  if (dtype == DType::boolean) std::fill(filler.begin(), filler.end(), 0.0);
  Tensor buffer = upload({dtype, {4, 6}, filler}, dut);
  Tensor dst = d.take(buffer);
  const Shape shape = dst.shape();
  const int64_t rows = shape[0], cols = shape[1];
  std::vector<double> values;
  for (int64_t k = 0; k < (broadcast_row ? cols : rows * cols); ++k)
    values.push_back(dtype == DType::boolean ? 1.0 : source_value(k, cols, broadcast_row));
  const DType src_dtype = other_dtype ? (dtype == DType::f64 ? DType::i32 : DType::f64) : dtype;
  Tensor src = upload({src_dtype, broadcast_row ? Shape{cols} : shape, values}, dut);
  const uint64_t before = buffer.version();
  dst.assign_(src);
  if (buffer.version() != before + 1)
    return "the storage's version went from " + std::to_string(before) + " to " + std::to_string(buffer.version()) +
           " (expected one more)";
  std::vector<double> want = filler;
  const std::vector<int64_t> pos = d.positions();
  for (size_t k = 0; k < pos.size(); ++k)
    want[static_cast<size_t>(pos[k])] = values[broadcast_row ? k % static_cast<size_t>(cols) : k];
  HostArray got = download(buffer);
  for (size_t i = 0; i < want.size(); ++i) {
    if (got.values[i] == want[i]) continue;
    return "buffer element " + std::to_string(i) + " is " + std::to_string(got.values[i]) + " but should be " +
           std::to_string(want[i]) + (std::find(pos.begin(), pos.end(), static_cast<int64_t>(i)) == pos.end()
                                          ? " (outside the destination: it must keep its value)"
                                          : " (a written element)");
  }
  return "";
}

bool copy_writes_strided_output(const oar::DeviceBackend& backend, DType dtype) {
  static const int copy_id = oar::OpRegistry::instance().get("copy").id;
  const oar::KernelEntry* k = backend.find_kernel(copy_id, {&dtype, 1}, {&dtype, 1});
  return k && (k->flags & OAR_KERNEL_STRIDED_OUTPUT);
}

// A source of another dtype is cast by the device's `cast` kernel: a plugin
// without that cast skips those cases (as the other sections skip what a
// plugin has no kernel for).
bool casts(const oar::DeviceBackend& backend, DType from, DType to) {
  static const int cast_id = oar::OpRegistry::instance().get("cast").id;
  return backend.find_kernel(cast_id, {&from, 1}, {&to, 1}) != nullptr;
}

}  // namespace

void run_inplace_checks(Suite& suite, const Devices& devices) {
  if (!devices.backend || !suite.section_selected("inplace.")) return;
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::i32, DType::i64, DType::u8, DType::boolean}) {
    if (suite.tier() == Tier::smoke && dtype != DType::f32) continue;
    const std::string name = "inplace.assign." + short_dtype(dtype);
    if (!suite.selected(name)) continue;
    const std::string how = copy_writes_strided_output(*devices.backend, dtype)
                                ? "copy kernel flagged strided output"
                                : "strided destinations written through host memory";
    CheckResult row{.name = name};
    row.extra = {{"dtype", short_dtype(dtype)}, {"path", how}};
    int index = 0, skipped_casts = 0;
    for (const Destination& d : kDestinations) {
      for (int variant = 0; variant < 3; ++variant) {
        const bool row_source = variant == 1, other_dtype = variant == 2 && dtype != DType::boolean;
        if (other_dtype && !casts(*devices.backend, dtype == DType::f64 ? DType::i32 : DType::f64, dtype)) {
          ++skipped_casts;
          continue;
        }
        const std::string id = name + "/" + std::to_string(index);
        if (!suite.case_selected(name, index++)) continue;
        suite.set_current(id);
        std::string diff;
        try {
          diff = check_one(d, dtype, row_source, other_dtype, devices.dut);
        } catch (const oar::Error& e) {
          diff = std::string("failed: ") + e.what();
        }
        ++row.cases;
        if (!diff.empty() && !row.failed_cases++) {
          row.result = Result::fail;
          row.failed_case = id;
          row.detail = how + ": destination " + d.name + (row_source ? ", a broadcast row source" : "") +
                       (other_dtype ? ", a source of another dtype" : "") + ": " + diff;
        }
      }
    }
    if (row.result == Result::pass)
      row.detail = how + ": " + std::to_string(row.cases) +
                   " writes into whole, offset, transposed and strided views match the host" +
                   (skipped_casts ? " (" + std::to_string(skipped_casts) +
                                        " cases with a source of another dtype skipped: no cast kernel)"
                                  : std::string());
    suite.add(row);
  }
  suite.set_current("");
}

}  // namespace oar_conformance
