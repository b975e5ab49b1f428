// A/B timing of a generated RMSNorm kernel against the cpu plugin's
// hand-fused rms_norm and against a memcpy of the same bytes, interleaved
// in one run (medians of rounds). Usage:
//   bench_rms_kernel [rows cols [rounds [threads [dtype]]]]
// (OAR_NUM_THREADS should equal `threads` for the plugin's kernel.)
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>

#include "oar/ir/pass.h"
#include "oar/ir/trace.h"
#include "oar/ops.h"
#include "oar_compiler/loop_ir.h"

using namespace oar;

namespace {

double seconds_of(const std::function<void()>& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int64_t rows = argc > 2 ? std::atoll(argv[1]) : 4096, cols = argc > 2 ? std::atoll(argv[2]) : 768;
  int rounds = argc > 3 ? std::atoi(argv[3]) : 15;
  int threads = argc > 4 ? std::atoi(argv[4]) : 1;
  DType dtype = argc > 5 ? parse_dtype(argv[5]) : DType::f32;
  Device cpu{"cpu", 0};
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{rms_norm(in[0], in[1], 1e-6)}; };
  ir::Trace t = ir::trace(fn, {{{-1, cols}, dtype, "x"}, {{cols}, dtype, "w"}});
  auto composite = [](const OpDef& d) {
    static const std::set<std::string> kept = {"full_like", "broadcast_to_like", "sum_to_like", "shape", "numel"};
    return d.kind == OpKind::composite && !kept.count(d.name);
  };
  ir::make_decomposition_pass(composite)->run(t.program);
  std::string why;
  auto k = compiler::lower_group(t.program, &why);
  if (!k) {
    std::fprintf(stderr, "%s\n", why.c_str());
    return 1;
  }
  std::string src = compiler::emit_cpu(*k, "rms");
  std::string dir = "/tmp/oar-bench-rms-" + std::to_string(getpid());
  std::string mk = "mkdir -p " + dir;
  if (std::system(mk.c_str()) != 0) return 1;
  std::ofstream(dir + "/k.cpp") << src;
  std::string cmd = "c++ -O3 -march=native -fopenmp -fPIC -shared -std=c++17 " + dir + "/k.cpp -o " + dir + "/k.so";
  if (std::system(cmd.c_str()) != 0) return 1;
  void* h = dlopen((dir + "/k.so").c_str(), RTLD_NOW);
  auto kfn = reinterpret_cast<int (*)(void* const*, const int64_t*, int)>(dlsym(h, "rms"));
  if (std::getenv("SHOW_SOURCE")) std::printf("%s\n%s\n", compiler::to_string(*k).c_str(), src.c_str());

  Tensor x = cast(uniform({rows, cols}, -1, 1, DType::f32, cpu), dtype);
  Tensor w = cast(uniform({cols}, 0.5, 1.5, DType::f32, cpu), dtype);
  Tensor y = Tensor::empty({rows, cols}, dtype, cpu);
  Tensor z = Tensor::empty({rows, cols}, dtype, cpu);
  int64_t dims[1] = {rows};
  void* bufs[3] = {x.host_data(), w.host_data(), y.host_data()};
  size_t bytes = static_cast<size_t>(rows * cols) * dtype_size(dtype);
  std::vector<double> tk, tp, tm;
  Tensor ref;
  for (int r = 0; r < rounds + 2; ++r) {
    double a = seconds_of([&] { kfn(bufs, dims, threads); });
    double b = seconds_of([&] { ref = rms_norm(x, w, 1e-6); });
    double c = seconds_of([&] { std::memcpy(z.host_data(), x.host_data(), bytes); });
    if (r >= 2) {
      tk.push_back(a);
      tp.push_back(b);
      tm.push_back(c);
    }
  }
  double err = max(abs(cast(y, DType::f32) - cast(ref, DType::f32))).item();
  double gk = 2.0 * bytes / median(tk) / 1e9, gp = 2.0 * bytes / median(tp) / 1e9, gm = 2.0 * bytes / median(tm) / 1e9;
  std::printf("rms_norm [%lld, %lld] %s threads %d: generated %.3f ms (%.1f GB/s), cpu plugin %.3f ms (%.1f GB/s), "
              "memcpy %.3f ms (%.1f GB/s); generated/plugin speedup %.2fx, %.0f%% of memcpy; max |diff| %.2e\n",
              static_cast<long long>(rows), static_cast<long long>(cols), std::string(dtype_short_name(dtype)).c_str(),
              threads, median(tk) * 1e3, gk, median(tp) * 1e3, gp, median(tm) * 1e3, gm, median(tp) / median(tk),
              100.0 * gk / gm, err);
  dlclose(h);
  std::string rm = "rm -rf " + dir;
  return std::system(rm.c_str());
}
