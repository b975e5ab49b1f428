// Helpers of the compiler's kernel tests: trace and decompose a function
// into the program a fusion group holds, compile generated C++ through the
// compiler's toolchain, and run a kernel on tensors.
#pragma once

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <random>
#include <set>

#include "oar/ir/interpreter.h"
#include "oar/ir/pass.h"
#include "oar/ir/trace.h"
#include "oar_compiler/loop_ir.h"
#include "oar_compiler/toolchain.h"
#include "test_util.h"

namespace kernel_test {

using oar::DType;
using oar::Shape;
using oar::Tensor;
using KernelFn = int (*)(void* const*, const int64_t*, int);

/// `fn` traced with `specs` and every composite op decomposed: the
/// primitives a fusion group holds.
inline oar::ir::Program decomposed(const oar::ir::TracedFunction& fn, const std::vector<oar::ir::InputSpec>& specs) {
  oar::ir::Trace t = oar::ir::trace(fn, specs);
  // As the pipeline does: every composite but the size-dependent ones.
  auto composite = [](const oar::OpDef& d) {
    static const std::set<std::string> kept = {"full_like", "broadcast_to_like", "sum_to_like", "shape", "numel", "fusion_group"};
    return d.kind == oar::OpKind::composite && !kept.count(d.name);
  };
  oar::ir::make_decomposition_pass(composite)->run(t.program);
  oar::ir::make_cse_pass()->run(t.program);
  oar::ir::make_dce_pass()->run(t.program);
  return std::move(t.program);
}

/// A library compiled from generated source by the compiler's toolchain
/// (compile_cpu: its flags, its disk cache; a temporary cache unless
/// OAR_COMPILER_CACHE_DIR is set, as ctest does); symbols looked up by name.
class Library {
 public:
  explicit Library(const std::string& source) {
    oar::compiler::ToolchainConfig config = oar::compiler::toolchain_from_env();
    if (!std::getenv("OAR_COMPILER_CACHE_DIR")) {
      char dir_template[] = "/tmp/oar-kernel-test-XXXXXX";
      REQUIRE(mkdtemp(dir_template) != nullptr);
      temp_dir_ = dir_template;
      config.cache_dir = temp_dir_;
    }
    const std::string marker = "extern \"C\" int ";
    size_t at = source.find(marker);
    REQUIRE(at != std::string::npos);
    size_t begin = at + marker.size();
    std::string first = source.substr(begin, source.find('(', begin) - begin);
    library_ = oar::compiler::compile_cpu(source, first, config);
    handle_ = dlopen(library_.path().c_str(), RTLD_NOW | RTLD_NOLOAD);
    REQUIRE_MESSAGE(handle_ != nullptr, dlerror());
  }
  ~Library() {
    if (handle_) dlclose(handle_);
    if (!temp_dir_.empty()) oar_test::run_command("rm -rf " + temp_dir_);
  }
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  KernelFn get(const std::string& symbol) const {
    auto fn = reinterpret_cast<KernelFn>(dlsym(handle_, symbol.c_str()));
    REQUIRE_MESSAGE(reinterpret_cast<void*>(fn) != nullptr, "no symbol " << symbol);
    return fn;
  }

 private:
  std::string temp_dir_;
  oar::compiler::CompiledLibrary library_;
  void* handle_ = nullptr;
};

/// The dims a kernel reads, from the inputs' shapes.
inline std::vector<int64_t> dim_values(const oar::compiler::Kernel& k, const std::vector<Tensor>& inputs) {
  std::vector<int64_t> dims;
  for (const auto& d : k.dims) dims.push_back(inputs.at(static_cast<size_t>(d.input)).shape().at(static_cast<size_t>(d.axis)));
  return dims;
}

/// Runs a kernel: allocates the outputs with the shapes its Exprs give.
inline std::vector<Tensor> run_kernel(const oar::compiler::Kernel& k, KernelFn fn, const std::vector<Tensor>& inputs,
                                      int threads = 1, int* status = nullptr) {
  std::vector<int64_t> dims = dim_values(k, inputs);
  std::vector<void*> buffers;
  std::vector<Tensor> keep;
  for (const Tensor& t : inputs) {
    keep.push_back(t.contiguous());
    buffers.push_back(keep.back().host_data());
  }
  std::vector<Tensor> outs;
  for (const auto& b : k.outputs) {
    Shape s;
    for (const auto& e : b.shape) s.push_back(oar::compiler::evaluate(e, dims));
    outs.push_back(Tensor::empty(s, b.dtype, oar::Device{"cpu", 0}));
    buffers.push_back(outs.back().host_data());
  }
  int rc = fn(buffers.data(), dims.data(), threads);
  if (status) {
    *status = rc;
  } else {
    REQUIRE(rc == 0);
  }
  return outs;
}

/// Random values in [lo, hi) of `dtype` (made in f64, then cast).
inline Tensor random_tensor(const Shape& shape, DType dtype, uint32_t seed, double lo = -2, double hi = 2) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = dist(rng);
  return oar::cast(Tensor::from_vector(v, shape, oar::Device{"cpu", 0}), dtype);
}

/// |got - want| <= tol + tol * |want| elementwise; equal values (infinities)
/// and two NaNs match. Stops at the first mismatch (big tensors).
inline void check_values(const Tensor& got_t, const Tensor& want_t, double tol) {
  std::vector<double> got = oar_test::values(got_t), want = oar_test::values(want_t);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    bool ok = got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i])) ||
              std::abs(got[i] - want[i]) <= tol + tol * std::abs(want[i]);
    if (!ok) {
      INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
      CHECK(ok);
      return;
    }
  }
}

/// Tolerances by dtype: f16/bf16 results are rounded once more or less
/// than the unfused program's (which rounds after every op).
inline double tolerance(DType t) {
  switch (t) {
    case DType::f64: return 1e-12;
    case DType::bf16: return 2e-2;
    case DType::f16: return 4e-3;
    default: return 2e-5;
  }
}

}  // namespace kernel_test
