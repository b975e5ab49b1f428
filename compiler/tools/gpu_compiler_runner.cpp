// gpu_compiler_runner: the compiler's CUDA kernels on a real GPU, without a
// CUDA plugin. For every group of the compiler's test programs
// (tests/compiler/cuda_test_programs.h) it emits CUDA C, compiles it with
// NVRTC for the device's architecture, loads the PTX through the driver API
// (libcuda.so.1 opened with dlopen), runs each kernel at several batch
// sizes (aligned, and with every buffer one element off alignment, which
// takes the scalar path) and compares with the uncompiled program run by the
// CPU interpreter; then times RMSNorm against the device's memcpy bandwidth.
// Run by bench/gpu_compiler.sh. Exit status: 0 all kernels match, 1 a
// mismatch or error, 2 no CUDA device (or no driver / NVRTC). `--no-gpu`
// runs everything but the device (NVRTC, the CPU reference, the buffers).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>

#include "cuda_driver.h"
#include "cuda_test_programs.h"
#include "oar/ir/interpreter.h"
#include "oar/ops.h"
#include "oar_compiler/nvrtc.h"

using namespace oar;
using namespace oar::compiler;
using oar::compiler::tools::CudaDriver;
using oar::compiler::tools::CUdeviceptr;
using oar::compiler::tools::CUevent;
using oar::compiler::tools::CUfunction;
using oar::compiler::tools::CUmodule;

namespace {

CudaDriver cu;

void check(const char* what, int rc) {
  if (rc != 0) throw std::runtime_error(cu.describe(what, rc));
}

const Device kCpu{"cpu", 0};

Tensor random_input(const ir::TensorType& t, int64_t batch, uint32_t seed) {
  Shape shape = t.with_dynamic_dims(batch);
  std::mt19937 rng(seed);
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  if (t.dtype == DType::i64 || t.dtype == DType::i32) {
    std::uniform_int_distribution<int> d(0, 9);  // class labels (cross_entropy: 10 classes)
    for (double& x : v) x = d(rng);
  } else {
    std::uniform_real_distribution<double> d(-2, 2);
    for (double& x : v) x = d(rng);
  }
  return cast(Tensor::from_vector(v, shape, kCpu), t.dtype);
}

struct Tolerance {
  double rtol, atol;
};
Tolerance tolerance(DType d) {
  switch (d) {
    case DType::f64: return {1e-10, 1e-12};
    case DType::f32: return {1e-4, 1e-5};
    case DType::f16: return {4e-3, 4e-3};
    case DType::bf16: return {2e-2, 2e-2};
    default: return {0, 0};
  }
}

// Device memory for one buffer, `offset_elems` elements past an aligned start.
struct DeviceBuffer {
  CUdeviceptr base = 0, ptr = 0;
  size_t bytes = 0;
  DeviceBuffer(size_t n, size_t offset) : bytes(n) {
    check("cuMemAlloc", cu.MemAlloc(&base, n + offset + 16));
    ptr = base + offset;
  }
  ~DeviceBuffer() {
    if (base) cu.MemFree(base);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

// Runs one kernel on `inputs`; returns its outputs (CPU tensors).
std::vector<Tensor> run_on_gpu(const cuda_test::CudaCase& c, CUfunction fn, const std::vector<Tensor>& inputs,
                               bool misaligned) {
  const Kernel& k = c.kernel;
  std::vector<int64_t> dims;
  for (const DimSymbol& d : k.dims) dims.push_back(inputs.at(d.input).shape().at(d.axis));
  if (cuda_check_dims(k, dims) != kKernelOk) throw std::runtime_error("a dim check failed");
  std::vector<std::unique_ptr<DeviceBuffer>> bufs;
  std::vector<Tensor> contiguous;
  for (const Tensor& t : inputs) {
    contiguous.push_back(t.contiguous());
    const size_t n = static_cast<size_t>(t.numel()) * dtype_size(t.dtype());
    bufs.push_back(std::make_unique<DeviceBuffer>(n, misaligned ? dtype_size(t.dtype()) : 0));
    if (n) check("cuMemcpyHtoD", cu.MemcpyHtoD(bufs.back()->ptr, contiguous.back().host_data(), n));
  }
  std::vector<Tensor> outs;
  for (const Buffer& b : k.outputs) {
    Shape s;
    for (const Expr& e : b.shape) s.push_back(evaluate(e, dims));
    outs.push_back(Tensor::empty(s, b.dtype, kCpu));
    const size_t n = static_cast<size_t>(shape_numel(s)) * dtype_size(b.dtype);
    bufs.push_back(std::make_unique<DeviceBuffer>(n, misaligned ? dtype_size(b.dtype) : 0));
  }
  std::vector<void*> params;
  for (auto& b : bufs) params.push_back(&b->ptr);
  std::vector<long long> dim_args(dims.begin(), dims.end());
  for (long long& d : dim_args) params.push_back(&d);
  const CudaLaunch l = cuda_launch_config(k, dims);
  if (l.grid > 0) {
    check("cuLaunchKernel", cu.LaunchKernel(fn, l.grid, 1, 1, l.block, 1, 1, 0, nullptr, params.data(), nullptr));
    check("cuCtxSynchronize", cu.CtxSynchronize());
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    const DeviceBuffer& b = *bufs[inputs.size() + i];
    if (b.bytes) check("cuMemcpyDtoH", cu.MemcpyDtoH(outs[i].host_data(), b.ptr, b.bytes));
  }
  return outs;
}

// Largest |gpu - ref| / (atol + rtol |ref|); <= 1 passes. NaN where the two disagree on NaN.
double error_ratio(const Tensor& gpu, const Tensor& ref) {
  if (gpu.shape() != ref.shape()) return INFINITY;
  Tensor a = cast(gpu, DType::f64), b = cast(ref.contiguous(), DType::f64);
  const double* x = static_cast<const double*>(a.host_data());
  const double* y = static_cast<const double*>(b.host_data());
  const Tolerance tol = tolerance(ref.dtype());
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    if (std::isnan(x[i]) || std::isnan(y[i])) {
      if (std::isnan(x[i]) != std::isnan(y[i])) return NAN;
      continue;
    }
    const double diff = std::fabs(x[i] - y[i]), allowed = tol.atol + tol.rtol * std::fabs(y[i]);
    worst = std::max(worst, allowed > 0 ? diff / allowed : (diff > 0 ? INFINITY : 0));
  }
  return worst;
}

CUmodule load_module(const std::string& name, const std::string& source, const std::string& arch, double* ms) {
  const auto t0 = std::chrono::steady_clock::now();
  PtxResult ptx = Nvrtc::get()->compile(source, name + ".cu", arch);
  *ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!ptx.ok) throw std::runtime_error(ptx.error);
  CUmodule m = nullptr;
  int rc = cu.ModuleLoadDataEx(&m, ptx.ptx.c_str(), 0, nullptr, nullptr);
  if (rc == 222 || rc == 218) {
    // CUDA_ERROR_UNSUPPORTED_PTX_VERSION / INVALID_PTX: a driver older than
    // NVRTC's PTX; NVRTC's own SASS (sm_XY) needs no JIT in the driver.
    static bool said = false;
    if (!said) std::printf("  note: %s; loading CUBIN for sm_%s instead\n", cu.describe("cuModuleLoadDataEx", rc).c_str(),
                           arch.substr(8).c_str());
    said = true;
    PtxResult cubin = Nvrtc::get()->compile(source, name + ".cu", "sm_" + arch.substr(8));
    if (!cubin.ok) throw std::runtime_error(cubin.error);
    rc = cu.ModuleLoadDataEx(&m, cubin.ptx.data(), 0, nullptr, nullptr);
  }
  check("cuModuleLoadDataEx", rc);
  return m;
}

// With `gpu` false (--no-gpu): everything but the device: NVRTC, the CPU
// reference, and that each kernel's buffers match its group's values.
int check_kernels(const std::string& arch, bool gpu) {
  int failures = 0, runs = 0;
  for (auto& [name, make] : cuda_test::cuda_test_programs()) {
    ir::Program p = make();
    std::vector<std::string> refused;
    std::vector<cuda_test::CudaCase> cases = cuda_test::cuda_cases(name, p, &refused);
    for (const std::string& r : refused) std::printf("  note: not lowered: %s\n", r.c_str());
    if (cases.empty()) continue;
    double compile_ms = 0;
    CUmodule module = nullptr;
    if (gpu) {
      module = load_module(name, cuda_test::module_source(cases), arch, &compile_ms);
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      PtxResult ptx = Nvrtc::get()->compile(cuda_test::module_source(cases), name + ".cu", arch);
      compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (!ptx.ok) throw std::runtime_error(ptx.error);
    }
    std::printf("%s: %zu kernels, NVRTC %.0f ms\n", name.c_str(), cases.size(), compile_ms);
    // The groups' inputs and outputs become program outputs: one CPU run gives them all.
    const size_t first_extra = p.outputs().size();
    std::vector<ir::Value*> extra;
    for (const auto& c : cases) {
      extra.insert(extra.end(), c.inputs.begin(), c.inputs.end());
      extra.insert(extra.end(), c.outputs.begin(), c.outputs.end());
    }
    for (ir::Value* v : extra) p.add_output(v);
    for (int64_t batch : {1, 3, 64}) {
      std::vector<Tensor> inputs;
      for (size_t i = 0; i < p.inputs().size(); ++i)
        inputs.push_back(random_input(p.inputs()[i]->type(), batch, static_cast<uint32_t>(17 * i + batch)));
      std::vector<Tensor> values = ir::interpret(p, inputs);
      size_t at = first_extra;
      for (const auto& c : cases) {
        std::vector<Tensor> in(values.begin() + at, values.begin() + at + c.inputs.size());
        at += c.inputs.size();
        std::vector<Tensor> ref(values.begin() + at, values.begin() + at + c.outputs.size());
        at += c.outputs.size();
        if (!gpu) {  // the buffers the kernel would get are the group's values
          ++runs;
          std::vector<int64_t> dims;
          for (const DimSymbol& d : c.kernel.dims) dims.push_back(in.at(d.input).shape().at(d.axis));
          bool ok = in.size() == c.kernel.inputs.size() && ref.size() == c.kernel.outputs.size();
          for (size_t i = 0; ok && i < in.size(); ++i) ok = in[i].dtype() == c.kernel.inputs[i].dtype;
          for (size_t i = 0; ok && i < ref.size(); ++i) {
            Shape s;
            for (const Expr& e : c.kernel.outputs[i].shape) s.push_back(evaluate(e, dims));
            ok = s == ref[i].shape() && ref[i].dtype() == c.kernel.outputs[i].dtype;
          }
          failures += !ok;
          if (!ok) std::printf("  FAIL %s batch %lld: buffers differ from the group's values\n", c.group.c_str(),
                               static_cast<long long>(batch));
          continue;
        }
        CUfunction fn = nullptr;
        check("cuModuleGetFunction", cu.ModuleGetFunction(&fn, module, c.symbol.c_str()));
        for (bool misaligned : {false, true}) {
          ++runs;
          double worst = 0;
          std::string error;
          try {
            std::vector<Tensor> got = run_on_gpu(c, fn, in, misaligned);
            for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, error_ratio(got[i], ref[i]));
          } catch (const std::exception& e) {
            error = e.what();
          }
          const bool ok = error.empty() && worst <= 1.0;
          failures += !ok;
          if (!ok || batch == 64)
            std::printf("  %-4s %-28s batch %-3lld %-10s err/tol %.3g %s\n", ok ? "ok" : "FAIL", c.group.c_str(),
                        static_cast<long long>(batch), misaligned ? "misaligned" : "aligned", worst, error.c_str());
        }
      }
    }
    if (module) cu.ModuleUnload(module);
  }
  std::printf("\n%d kernel %s, %d failures\n", runs, gpu ? "runs" : "buffer checks (no GPU)", failures);
  return failures;
}

// Average ms of `launch` over `iters` runs after warm-up, by events.
template <typename F>
double time_ms(F&& launch, int iters = 50) {
  for (int i = 0; i < 3; ++i) launch();
  CUevent a, b;
  check("cuEventCreate", cu.EventCreate(&a, 0));
  check("cuEventCreate", cu.EventCreate(&b, 0));
  check("cuEventRecord", cu.EventRecord(a, nullptr));
  for (int i = 0; i < iters; ++i) launch();
  check("cuEventRecord", cu.EventRecord(b, nullptr));
  check("cuEventSynchronize", cu.EventSynchronize(b));
  float ms = 0;
  check("cuEventElapsedTime", cu.EventElapsedTime(&ms, a, b));
  cu.EventDestroy(a);
  cu.EventDestroy(b);
  return ms / iters;
}

void time_rms_norm(const std::string& arch) {
  std::printf("\nRMSNorm (generated kernel) vs device memcpy (cuMemcpyDtoD), same run\n");
  std::printf("%-16s %-5s %10s %10s %12s %8s\n", "shape", "dtype", "kernel us", "GB/s", "memcpy GB/s", "ratio");
  struct Size {
    int64_t rows, cols;
    DType dtype;
  };
  for (const Size& s : {Size{4096, 768, DType::f32}, Size{4096, 768, DType::bf16}, Size{16384, 4096, DType::f32},
                        Size{16384, 4096, DType::bf16}}) {
    ir::Program p = oar_test::traced(
        [](const std::vector<Tensor>& in) { return std::vector<Tensor>{rms_norm(in[0], in[1])}; },
        {{{-1, s.cols}, s.dtype, "x"}, {{s.cols}, s.dtype, "w"}});
    std::vector<cuda_test::CudaCase> cases = cuda_test::cuda_cases("rms_bench", p, nullptr);
    if (cases.size() != 1) throw std::runtime_error("RMSNorm did not become one kernel");
    const cuda_test::CudaCase& c = cases[0];
    double compile_ms = 0;
    CUmodule m = load_module("rms_bench", c.source, arch, &compile_ms);
    CUfunction fn = nullptr;
    check("cuModuleGetFunction", cu.ModuleGetFunction(&fn, m, c.symbol.c_str()));
    // Buffers in the kernel's order (the sub-program's inputs, then outputs).
    std::vector<Tensor> host;
    for (size_t i = 0; i < c.sub.inputs().size(); ++i)
      host.push_back(random_input(c.sub.inputs()[i]->type(), s.rows, static_cast<uint32_t>(i + 1)));
    std::vector<int64_t> dims;
    for (const DimSymbol& d : c.kernel.dims) dims.push_back(host.at(d.input).shape().at(d.axis));
    std::vector<std::unique_ptr<DeviceBuffer>> bufs;
    size_t moved = 0;  // bytes the kernel must read and write at least
    for (const Tensor& t : host) {
      const size_t bytes = static_cast<size_t>(t.numel()) * dtype_size(t.dtype());
      bufs.push_back(std::make_unique<DeviceBuffer>(bytes, 0));
      check("cuMemcpyHtoD", cu.MemcpyHtoD(bufs.back()->ptr, t.host_data(), bytes));
      moved += bytes;
    }
    for (const Buffer& b : c.kernel.outputs) {
      int64_t numel = 1;
      for (const Expr& e : b.shape) numel *= evaluate(e, dims);
      bufs.push_back(std::make_unique<DeviceBuffer>(static_cast<size_t>(numel) * dtype_size(b.dtype), 0));
      moved += bufs.back()->bytes;
    }
    std::vector<long long> dim_args(dims.begin(), dims.end());
    std::vector<void*> params;
    for (auto& b : bufs) params.push_back(&b->ptr);
    for (long long& d : dim_args) params.push_back(&d);
    const size_t n = static_cast<size_t>(s.rows * s.cols) * dtype_size(s.dtype);
    DeviceBuffer src(n, 0), dst(n, 0);
    const CudaLaunch l = cuda_launch_config(c.kernel, dims);
    const double k_ms = time_ms([&] {
      check("cuLaunchKernel", cu.LaunchKernel(fn, l.grid, 1, 1, l.block, 1, 1, 0, nullptr, params.data(), nullptr));
    });
    const double m_ms = time_ms([&] { check("cuMemcpyDtoD", cu.MemcpyDtoD(dst.ptr, src.ptr, n)); });
    const double k_gbs = static_cast<double>(moved) / (k_ms * 1e6), m_gbs = 2.0 * n / (m_ms * 1e6);
    char shape[32];
    std::snprintf(shape, sizeof shape, "[%lld, %lld]", static_cast<long long>(s.rows), static_cast<long long>(s.cols));
    std::printf("%-16s %-5s %10.1f %10.0f %12.0f %7.0f%%   (block %u, NVRTC %.0f ms)\n", shape,
                std::string(dtype_short_name(s.dtype)).c_str(), k_ms * 1e3, k_gbs, m_gbs, 100 * k_gbs / m_gbs,
                l.block, compile_ms);
    cu.ModuleUnload(m);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string why;
  int count = 0;
  if (argc > 1 && std::string(argv[1]) == "--no-gpu") {  // the harness without a device
    if (!Nvrtc::get(&why)) {
      std::printf("gpu_compiler_runner: %s\n", why.c_str());
      return 2;
    }
    try {
      return check_kernels("compute_90", false) == 0 ? 0 : 1;
    } catch (const std::exception& e) {
      std::printf("gpu_compiler_runner: error: %s\n", e.what());
      return 1;
    }
  }
  if (!cu.load(&why)) {
    std::printf("gpu_compiler_runner: no CUDA device: %s\n", why.c_str());
    return 2;
  }
  if (int rc = cu.Init(0); rc != 0) {
    std::printf("gpu_compiler_runner: no CUDA device: %s\n", cu.describe("cuInit", rc).c_str());
    return 2;
  }
  if (cu.DeviceGetCount(&count) != 0 || count == 0) {
    std::printf("gpu_compiler_runner: no CUDA device: the driver reports 0 devices\n");
    return 2;
  }
  const Nvrtc* nvrtc = Nvrtc::get(&why);
  if (!nvrtc) {
    std::printf("gpu_compiler_runner: %s\n", why.c_str());
    return 2;
  }
  try {
    tools::CUdevice dev = 0;
    check("cuDeviceGet", cu.DeviceGet(&dev, 0));
    char name[256] = {0};
    int major = 0, minor = 0, sms = 0, driver = 0;
    cu.DeviceGetName(name, sizeof name, dev);
    cu.DeviceGetAttribute(&major, tools::kAttrComputeCapabilityMajor, dev);
    cu.DeviceGetAttribute(&minor, tools::kAttrComputeCapabilityMinor, dev);
    cu.DeviceGetAttribute(&sms, tools::kAttrMultiprocessorCount, dev);
    cu.DriverGetVersion(&driver);
    tools::CUcontext ctx = nullptr;
    check("cuDevicePrimaryCtxRetain", cu.DevicePrimaryCtxRetain(&ctx, dev));
    check("cuCtxSetCurrent", cu.CtxSetCurrent(ctx));
    const std::string arch = "compute_" + std::to_string(major * 10 + minor);
    std::printf("device 0: %s, sm_%d%d, %d SMs, driver %d; NVRTC %d.%d (%s), PTX for %s\n\n", name, major, minor, sms,
                driver, nvrtc->major(), nvrtc->minor(), nvrtc->path().c_str(), arch.c_str());
    const int failures = check_kernels(arch, true);
    time_rms_norm(arch);
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::printf("gpu_compiler_runner: error: %s\n", e.what());
    return 1;
  }
}
