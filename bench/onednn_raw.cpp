// The hardware-limit reference: the cases of bench/ops_bench.cpp called on
// oneDNN directly (primitive created once, only execute timed), one JSON
// line per case. Convolutions are timed twice: "onednn" takes and returns
// NCHW like oar's op (reorders to and from oneDNN's blocked layouts
// included), "onednn_blocked" times the primitive alone on data already in
// its layouts. OMP_NUM_THREADS sets the threads.
//
//   bench_onednn_raw [--reps 20] [--warmup 3]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using dims = dnnl::memory::dims;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;
using Args = std::unordered_map<int, dnnl::memory>;

int g_reps = 20, g_warmup = 3;
dnnl::engine g_engine(dnnl::engine::kind::cpu, 0);
dnnl::stream g_stream(g_engine);

double median_ms(const std::function<void()>& fn) {
  for (int i = 0; i < g_warmup; ++i) fn();
  std::vector<double> ms;
  for (int i = 0; i < g_reps; ++i) {
    auto t0 = Clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

void emit(const char* op, const std::string& shape, const char* framework, double ms) {
  std::printf("{\"op\": \"%s\", \"shape\": \"%s\", \"framework\": \"%s\", \"median_ms\": %.6f}\n", op, shape.c_str(),
              framework, ms);
  std::fflush(stdout);
}

dnnl::memory filled(const dnnl::memory::desc& md) {
  // Uniform values in [-1, 1) like oar's and the peers' inputs (the speed
  // of the FMA units can depend on the data).
  dnnl::memory m(md, g_engine);
  uint32_t state = 12345;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) * (2.0f / 16777216.0f) - 1.0f;
  };
  const size_t bytes = md.get_size();
  if (md.data_type() == dt::bf16) {
    auto* p = static_cast<uint16_t*>(m.get_data_handle());
    for (size_t i = 0; i < bytes / 2; ++i) {
      float f = next();
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      p[i] = static_cast<uint16_t>(bits >> 16);
    }
  } else {
    auto* p = static_cast<float*>(m.get_data_handle());
    for (size_t i = 0; i < bytes / 4; ++i) p[i] = next();
  }
  return m;
}

void run(dnnl::primitive& p, const Args& args) {
  p.execute(g_stream, args);
  g_stream.wait();
}

void bench_matmul() {
  for (dt type : {dt::f32, dt::bf16}) {
    for (int64_t n : {256, 1024, 2048}) {
      dnnl::memory::desc md({n, n}, type, tag::ab);
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(md, md, md), g_engine);
      dnnl::matmul prim(pd);
      Args args{{DNNL_ARG_SRC, filled(md)}, {DNNL_ARG_WEIGHTS, filled(md)}, {DNNL_ARG_DST, filled(md)}};
      emit("matmul", std::to_string(n) + "^3 " + (type == dt::f32 ? "f32" : "bf16"), "onednn",
           median_ms([&] { run(prim, args); }));
    }
  }
}

// Times one conv pass both ways. `user` maps each argument to its NCHW md,
// `outputs` lists the written ones.
void time_conv(const char* op, const std::string& shape, dnnl::primitive prim, const dnnl::primitive_desc_base& pd,
               const std::vector<std::pair<int, dnnl::memory::desc>>& user, const std::vector<int>& outputs) {
  Args blocked, plain;
  std::vector<std::tuple<dnnl::reorder, dnnl::memory, dnnl::memory, bool>> reorders;
  for (const auto& [arg, umd] : user) {
    dnnl::memory::desc pmd = pd.query_md(dnnl::query::exec_arg_md, arg);
    blocked[arg] = filled(pmd);
    bool out = std::find(outputs.begin(), outputs.end(), arg) != outputs.end();
    if (pmd == umd) {
      plain[arg] = blocked[arg];
      continue;
    }
    dnnl::memory u = filled(umd);
    plain[arg] = blocked[arg];
    reorders.emplace_back(out ? dnnl::reorder(blocked[arg], u) : dnnl::reorder(u, blocked[arg]),
                          out ? blocked[arg] : u, out ? u : blocked[arg], out);
  }
  emit(op, shape, "onednn_blocked", median_ms([&] { run(prim, blocked); }));
  emit(op, shape, "onednn", median_ms([&] {
         for (auto& [r, from, to, out] : reorders)
           if (!out) r.execute(g_stream, from, to);
         prim.execute(g_stream, plain);
         for (auto& [r, from, to, out] : reorders)
           if (out) r.execute(g_stream, from, to);
         g_stream.wait();
       }));
}

void bench_conv() {
  const std::string shape = "8x64x56x56 k3 p1 f32";
  dims src{8, 64, 56, 56}, wei{64, 64, 3, 3}, dst{8, 64, 56, 56}, s{1, 1}, d{0, 0}, p{1, 1};
  dnnl::memory::desc usrc(src, dt::f32, tag::nchw), uwei(wei, dt::f32, tag::oihw), udst(dst, dt::f32, tag::nchw);
  dnnl::memory::desc asrc(src, dt::f32, tag::any), awei(wei, dt::f32, tag::any), adst(dst, dt::f32, tag::any);
  auto alg = dnnl::algorithm::convolution_direct;
  dnnl::convolution_forward::primitive_desc fwd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, alg, asrc, awei, adst, s, d, p, p), g_engine);
  dnnl::convolution_forward::primitive_desc hint(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg, asrc, awei, adst, s, d, p, p), g_engine);
  time_conv("conv2d_fwd", shape, dnnl::convolution_forward(fwd), fwd,
            {{DNNL_ARG_SRC, usrc}, {DNNL_ARG_WEIGHTS, uwei}, {DNNL_ARG_DST, udst}}, {DNNL_ARG_DST});
  dnnl::convolution_backward_data::primitive_desc bd(
      dnnl::convolution_backward_data::desc(alg, asrc, awei, adst, s, d, p, p), g_engine, hint);
  time_conv("conv2d_bwd_data", shape, dnnl::convolution_backward_data(bd), bd,
            {{DNNL_ARG_DIFF_DST, udst}, {DNNL_ARG_WEIGHTS, uwei}, {DNNL_ARG_DIFF_SRC, usrc}}, {DNNL_ARG_DIFF_SRC});
  dnnl::convolution_backward_weights::primitive_desc bw(
      dnnl::convolution_backward_weights::desc(alg, asrc, awei, adst, s, d, p, p), g_engine, hint);
  time_conv("conv2d_bwd_weights", shape, dnnl::convolution_backward_weights(bw), bw,
            {{DNNL_ARG_SRC, usrc}, {DNNL_ARG_DIFF_DST, udst}, {DNNL_ARG_DIFF_WEIGHTS, uwei}}, {DNNL_ARG_DIFF_WEIGHTS});
}

// Memory-bound ops through oneDNN, to decide where oar should call it.
void bench_memory_bound() {
  const int64_t big = 16 << 20;
  dnnl::memory::desc vec({big}, dt::f32, tag::a);
  {
    dnnl::binary::primitive_desc pd(dnnl::binary::desc(dnnl::algorithm::binary_add, vec, vec, vec), g_engine);
    dnnl::binary prim(pd);
    Args args{{DNNL_ARG_SRC_0, filled(vec)}, {DNNL_ARG_SRC_1, filled(vec)}, {DNNL_ARG_DST, filled(vec)}};
    emit("add", "16M f32", "onednn", median_ms([&] { run(prim, args); }));
  }
  {
    dnnl::memory::desc one({1}, dt::f32, tag::a);
    dnnl::reduction::primitive_desc pd(dnnl::reduction::desc(dnnl::algorithm::reduction_sum, vec, one, 0.f, 0.f),
                                       g_engine);
    dnnl::reduction prim(pd);
    Args args{{DNNL_ARG_SRC, filled(vec)}, {DNNL_ARG_DST, filled(one)}};
    emit("reduce_sum", "16M f32", "onednn", median_ms([&] { run(prim, args); }));
  }
  dnnl::memory::desc mat({4096, 4096}, dt::f32, tag::ab);
  {
    dnnl::softmax_forward::primitive_desc pd(
        dnnl::softmax_forward::desc(dnnl::prop_kind::forward_inference, mat, 1), g_engine);
    dnnl::softmax_forward prim(pd);
    Args args{{DNNL_ARG_SRC, filled(mat)}, {DNNL_ARG_DST, filled(mat)}};
    emit("softmax", "4096x4096 f32", "onednn", median_ms([&] { run(prim, args); }));
    dnnl::logsoftmax_forward::primitive_desc lpd(
        dnnl::logsoftmax_forward::desc(dnnl::prop_kind::forward_inference, mat, 1), g_engine);
    dnnl::logsoftmax_forward lprim(lpd);
    emit("log_softmax", "4096x4096 f32", "onednn", median_ms([&] { run(lprim, args); }));
  }
  {
    auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
    dnnl::layer_normalization_forward::primitive_desc pd(
        dnnl::layer_normalization_forward::desc(dnnl::prop_kind::forward_inference, mat, 1e-5f, flags), g_engine);
    dnnl::layer_normalization_forward prim(pd);
    dnnl::memory::desc ch({4096}, dt::f32, tag::a);
    Args args{{DNNL_ARG_SRC, filled(mat)}, {DNNL_ARG_DST, filled(mat)}, {DNNL_ARG_SCALE, filled(ch)},
              {DNNL_ARG_SHIFT, filled(ch)}};
    emit("layer_norm", "4096x4096 f32", "onednn", median_ms([&] { run(prim, args); }));
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string arg = argv[i];
    if (arg == "--reps") g_reps = std::stoi(argv[i + 1]);
    if (arg == "--warmup") g_warmup = std::stoi(argv[i + 1]);
  }
  bench_matmul();
  bench_conv();
  bench_memory_bound();
  return 0;
}
