// CUDA code generation without a GPU: every group the planner makes for the
// compiler's test programs (cuda_test_programs.h: RMSNorm, softmax,
// log_softmax, layer_norm, bias+gelu, cross_entropy forward and backward,
// the transformer block and its backward; RMSNorm/softmax/layer_norm in
// bf16, f16 and f64) emits CUDA C that NVRTC compiles to PTX for compute_90
// and `ptxas -arch=sm_90` assembles. NVRTC and ptxas come from the CUDA
// toolkit; where either is absent those cases say so and check nothing
// else. The launch geometry, the vector paths and the refusals are checked
// everywhere. (Running the kernels needs a GPU: bench/gpu_compiler.sh.)
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>

#include "cuda_test_programs.h"
#include "oar_compiler/nvrtc.h"

using namespace oar;
using namespace oar::compiler;

namespace {

// NVRTC and ptxas, or nullptr after a MESSAGE saying which is missing.
const Nvrtc* toolkit_or_skip() {
  std::string why;
  const Nvrtc* nvrtc = Nvrtc::get(&why);
  if (!nvrtc) {
    MESSAGE("SKIPPED (no CUDA toolkit): " << why);
    return nullptr;
  }
  if (find_ptxas(&why).empty()) {
    MESSAGE("SKIPPED (no ptxas): " << why);
    return nullptr;
  }
  return nvrtc;
}

std::vector<cuda_test::CudaCase> cases_of(const std::string& name) {
  for (auto& [n, make] : cuda_test::cuda_test_programs())
    if (n == name) {
      ir::Program p = make();
      return cuda_test::cuda_cases(name, p, nullptr);
    }
  FAIL("no test program " << name);
  return {};
}

}  // namespace

TEST_CASE("NVRTC compiles a hand-written kernel to PTX that ptxas accepts; broken input fails with a sentence") {
  const Nvrtc* nvrtc = toolkit_or_skip();
  if (!nvrtc) return;
  MESSAGE("NVRTC " << nvrtc->major() << "." << nvrtc->minor() << " from " << nvrtc->path());
  PtxResult ok = nvrtc->compile(
      "extern \"C\" __global__ void twice(float* y, const float* x, long long n) {\n"
      "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
      "  if (i < n) y[i] = 2.0f * x[i];\n}\n",
      "twice.cu");
  REQUIRE_MESSAGE(ok.ok, ok.error);
  CHECK(ok.ptx.find(".entry twice") != std::string::npos);
  CHECK(ok.ptx.find(".target sm_90") != std::string::npos);
  PtxasResult as = run_ptxas(ok.ptx, "sm_90");
  CHECK_MESSAGE(as.ok, as.error);
  CHECK(as.log.find("twice") != std::string::npos);  // -v: the entry's registers

  // A real architecture gives SASS (a CUBIN, an ELF file) for drivers older than the PTX.
  PtxResult cubin = nvrtc->compile("extern \"C\" __global__ void nop() {}\n", "nop.cu", "sm_90");
  REQUIRE_MESSAGE(cubin.ok, cubin.error);
  CHECK(cubin.ptx.substr(0, 4) == "\x7f" "ELF");

  PtxResult bad = nvrtc->compile("__global__ void broken( {", "broken.cu");
  CHECK_FALSE(bad.ok);
  CHECK(bad.error.find("NVRTC failed to compile broken.cu for compute_90") != std::string::npos);
  CHECK(bad.error.find("error") != std::string::npos);  // NVRTC's log follows
  PtxasResult bad_ptx = run_ptxas("not ptx at all", "sm_90");
  CHECK_FALSE(bad_ptx.ok);
  CHECK(bad_ptx.error.find("ptxas -arch=sm_90 rejected the PTX") != std::string::npos);
}

TEST_CASE("every generated CUDA kernel of the test programs compiles with NVRTC for sm_90 and ptxas accepts it") {
  const Nvrtc* nvrtc = toolkit_or_skip();
  if (!nvrtc) return;
  int kernels = 0;
  for (auto& [name, make] : cuda_test::cuda_test_programs()) {
    ir::Program p = make();
    std::vector<std::string> refused;
    std::vector<cuda_test::CudaCase> cases = cuda_test::cuda_cases(name, p, &refused);
    for (const std::string& r : refused) MESSAGE("not lowered (test_fusion_lowering checks it): " << r);
    if (cases.empty()) continue;  // nothing lowered: reported above
    // One module per program: one NVRTC and one ptxas run for all its kernels.
    PtxResult ptx = nvrtc->compile(cuda_test::module_source(cases), name + ".cu");
    REQUIRE_MESSAGE(ptx.ok, name << ": " << ptx.error);
    for (const auto& c : cases) {
      CHECK_MESSAGE(ptx.ptx.find(".entry " + c.symbol + "(") != std::string::npos, name << ": " << c.symbol);
      ++kernels;
    }
    PtxasResult as = run_ptxas(ptx.ptx, "sm_90");
    CHECK_MESSAGE(as.ok, name << ": " << as.error);
    CHECK_MESSAGE(as.log.find("spill") != std::string::npos, as.log);
  }
  MESSAGE(kernels << " kernels compiled and assembled for sm_90");
  CHECK(kernels >= 20);
}

TEST_CASE("bf16/f16/f32 row kernels read whole rows with 16-byte vector loads, accumulate in f32, reduce across warps") {
  for (const char* name : {"rms_norm_bf16", "rms_norm_f16", "rms_norm", "softmax_bf16"}) {
    std::vector<cuda_test::CudaCase> cases = cases_of(name);
    REQUIRE(cases.size() == 1);
    const cuda_test::CudaCase& c = cases[0];
    CHECK(c.kernel.kind == ScheduleKind::row_reduce);
    const bool half = std::string(name).find("_bf16") != std::string::npos ||
                      std::string(name).find("_f16") != std::string::npos;
    const std::string vec = half ? "VecT<unsigned short, 8>" : "VecT<float, 4>";
    CHECK_MESSAGE(c.source.find("const " + vec + " nv") != std::string::npos, name << "\n" << c.source);
    CHECK_MESSAGE(c.source.find("*reinterpret_cast<" + vec + "*>(b") != std::string::npos, name);  // vector store
    CHECK(c.source.find("    float acc0 = ") != std::string::npos);  // f32 accumulator, also for bf16/f16
    CHECK(c.source.find("oar_block_reduce<float>(acc0, smem0") != std::string::npos);
  }
  // softmax: the sum of exp(x - max) waits for the max: two passes, then the epilogue.
  std::vector<cuda_test::CudaCase> sm = cases_of("softmax");
  REQUIRE(sm.size() == 1);
  REQUIRE(sm[0].kernel.reductions.size() == 2);
  size_t first = sm[0].source.find("oar_block_reduce<float>(acc0");
  size_t second = sm[0].source.find("oar_block_reduce<float>(acc1");
  CHECK(first != std::string::npos);
  CHECK(second != std::string::npos);
  CHECK(first < second);
}

TEST_CASE("launch geometry is chosen by size at run time: one block per row, 32..512 threads") {
  std::vector<cuda_test::CudaCase> rms = cases_of("rms_norm");  // x [-1, 768] f32: W = 4
  REQUIRE(rms.size() == 1);
  const Kernel& k = rms[0].kernel;
  REQUIRE(k.dims.size() == 1);  // the batch
  CHECK(cuda_vector_width(k) == 4);
  CudaLaunch l = cuda_launch_config(k, std::vector<int64_t>{1000});
  CHECK(l.grid == 1000);  // a row per block
  CHECK(l.block == 128);  // 768 / (2 tiles x 4) = 96 -> 128
  CHECK(cuda_launch_config(k, std::vector<int64_t>{0}).grid == 0);  // nothing to do
  CHECK(cuda_launch_config(k, std::vector<int64_t>{1 << 22}).grid == (1u << 20));  // capped; rows stride

  std::vector<cuda_test::CudaCase> big = cases_of("rms_norm_bf16");  // [-1, 4096] bf16: W = 8
  REQUIRE(big.size() == 1);
  CHECK(cuda_vector_width(big[0].kernel) == 8);
  CHECK(cuda_launch_config(big[0].kernel, std::vector<int64_t>{16384}).block == 256);  // 4096 / 16
  std::vector<cuda_test::CudaCase> f64 = cases_of("rms_norm_f64");  // W = 2
  CHECK(cuda_vector_width(f64.at(0).kernel) == 2);
  CHECK(cuda_launch_config(f64.at(0).kernel, std::vector<int64_t>{3}).block == 512);  // 4096 / 4 -> capped

  std::vector<cuda_test::CudaCase> gelu = cases_of("bias_gelu");  // [-1, 3072] f32 elementwise
  REQUIRE(gelu.size() == 1);
  REQUIRE(gelu[0].kernel.kind == ScheduleKind::elementwise);
  l = cuda_launch_config(gelu[0].kernel, std::vector<int64_t>{10});
  CHECK(l.block == 256);
  CHECK(l.grid == 30);  // 10 x 3072 / 4 = 7680 tiles of 4 over 256 threads
}

TEST_CASE("emit_cuda refuses a dtype it cannot express with a sentence; dim checks are the host's") {
  Kernel k;
  k.name = "g0_complex_copy";
  k.kind = ScheduleKind::elementwise;
  k.dims = {{0, 0}};
  k.inputs = {{"x", DType::c64, {dim_expr(0)}}};
  k.outputs = {{"y", DType::c64, {dim_expr(0)}}};
  k.domain = {dim_expr(0)};
  Node load;
  load.kind = NodeKind::load;
  load.dtype = DType::c64;
  load.buffer = 0;
  load.index = var_expr(0);
  k.nodes = {load};
  k.stores = {{0, 0, var_expr(0)}};
  CHECK_THROWS_WITH_AS(emit_cuda(k, "sym"),
                       doctest::Contains("emit_cuda: kernel g0_complex_copy: buffer x has dtype complex64"),
                       Error);

  k.inputs[0].dtype = k.outputs[0].dtype = k.nodes[0].dtype = DType::f32;
  k.dims = {{0, 0}, {1, 0}};
  k.inputs.push_back({"z", DType::f32, {dim_expr(1)}});
  k.dim_checks = {{dim_expr(0), dim_expr(1)}};
  CHECK(cuda_check_dims(k, std::vector<int64_t>{5, 5}) == kKernelOk);
  CHECK(cuda_check_dims(k, std::vector<int64_t>{5, 1}) == kKernelShapeMismatch);
  const std::string src = emit_cuda(k, "copy_f32");
  CHECK(src.find("extern \"C\" __global__ void __launch_bounds__(1024) copy_f32(const float* __restrict__ b0") !=
        std::string::npos);
  CHECK(src.find("long long d1)") != std::string::npos);
}

TEST_CASE("the GPU runner of bench/gpu_compiler.sh says 'no CUDA device' and exits 2 without a driver") {
  const char* bin = std::getenv("OAR_BIN_DIR");
  REQUIRE_MESSAGE(bin != nullptr, "OAR_BIN_DIR is set by ctest");
  const std::string runner = std::string(bin) + "/gpu_compiler_runner";
  REQUIRE_MESSAGE(std::filesystem::exists(runner), runner << " is built with the compiler (target gpu_compiler_runner)");
  // A driver library that does not exist: the path a machine without a GPU takes.
  const std::string cmd = "OAR_LIBCUDA=liboar-no-such-libcuda.so.1 " + runner + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, pipe)) out += buf;
  const int status = pclose(pipe);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 2);
  CHECK_MESSAGE(out.find("gpu_compiler_runner: no CUDA device: the CUDA driver library "
                         "liboar-no-such-libcuda.so.1 could not be opened") != std::string::npos,
                out);

  // --no-gpu: the harness up to the device (NVRTC, the CPU reference run of each
  // program, each kernel's buffers equal to its group's values in dtype and shape).
  if (!toolkit_or_skip()) return;
  pipe = popen((runner + " --no-gpu 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  out.clear();
  while (fgets(buf, sizeof buf, pipe)) out += buf;
  const int no_gpu_status = pclose(pipe);
  CHECK_MESSAGE(WIFEXITED(no_gpu_status), out);
  CHECK_MESSAGE(WEXITSTATUS(no_gpu_status) == 0, out);
  CHECK_MESSAGE(out.find("kernel buffer checks (no GPU), 0 failures") != std::string::npos, out);
}

TEST_CASE("a col_reduce kernel (a bias gradient: sum over the rows) gives each thread a column and compiles") {
  Kernel k;
  k.name = "g0_bias_grad";
  k.kind = ScheduleKind::col_reduce;
  k.dims = {{0, 0}, {0, 1}};
  const Expr d0 = dim_expr(0), d1 = dim_expr(1), v0 = var_expr(0), v1 = var_expr(1);
  k.inputs = {{"dy", DType::bf16, {d0, d1}}};
  k.outputs = {{"db", DType::bf16, {d1}}};
  k.domain = {d0, d1};
  Node load;
  load.kind = NodeKind::load;
  load.dtype = DType::bf16;
  load.buffer = 0;
  load.index = v0 * d1 + v1;
  Node reduced;
  reduced.kind = NodeKind::reduced;
  reduced.dtype = DType::bf16;
  reduced.reduction = 0;
  k.nodes = {load, reduced};
  k.reductions = {{ReduceOp::sum, 0, DType::bf16}};
  k.stores = {{0, 1, v1}};
  REQUIRE(verify_kernel(k).empty());
  const std::string src = emit_cuda(k, "bias_grad");
  CHECK(src.find("for (long long v0 = 0; v0 < rows; ++v0)") != std::string::npos);
  CHECK(src.find("float acc0 = 0.0f;") != std::string::npos);  // bf16 sums in f32
  CHECK(src.find("b1[v1] = oar_f32_to_bf16") != std::string::npos);
  CudaLaunch l = cuda_launch_config(k, std::vector<int64_t>{4096, 1000});
  CHECK(l.block == 128);
  CHECK(l.grid == 8);  // 1000 columns / 128
  const Nvrtc* nvrtc = toolkit_or_skip();
  if (!nvrtc) return;
  PtxResult ptx = nvrtc->compile(src, "bias_grad.cu");
  REQUIRE_MESSAGE(ptx.ok, ptx.error);
  PtxasResult as = run_ptxas(ptx.ptx, "sm_90");
  CHECK_MESSAGE(as.ok, as.error);
}
