// Generated CPU kernels (lower_group + emit_cpu) equal the uncompiled
// program (the interpreter over the cpu plugin) on random inputs: RMSNorm,
// softmax, log_softmax, layer_norm, bias + gelu, broadcasts, at several
// dynamic sizes (rows and columns that are not multiples of the vector
// width) in f32, f64, bf16 and f16.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "kernel_test_util.h"
#include "oar/ops.h"

using namespace kernel_test;
using oar::compiler::Kernel;
using oar::compiler::ScheduleKind;
namespace ir = oar::ir;

namespace {

struct Case {
  std::string name;
  ir::Program program;
  Kernel kernel;
};

Case make_case(const std::string& name, const ir::TracedFunction& fn, const std::vector<ir::InputSpec>& specs) {
  Case c{name, decomposed(fn, specs), {}};
  std::string why;
  auto k = oar::compiler::lower_group(c.program, &why);
  INFO(name << ": " << why);
  REQUIRE(k.has_value());
  c.kernel = std::move(*k);
  c.kernel.name = name;
  return c;
}

// Compiles every case into one library and checks each on every input set.
void check_cases(std::vector<Case>& cases, const std::vector<std::vector<std::vector<Tensor>>>& inputs,
                 const std::vector<int>& threads = {1, 2}) {
  std::string source;
  for (const Case& c : cases) source += oar::compiler::emit_cpu(c.kernel, "k_" + c.name);
  Library lib(source);
  for (size_t i = 0; i < cases.size(); ++i) {
    KernelFn fn = lib.get("k_" + cases[i].name);
    for (const auto& in : inputs[i]) {
      std::vector<Tensor> want = ir::interpret(cases[i].program, in);
      for (int nt : threads) {
        std::vector<Tensor> got = run_kernel(cases[i].kernel, fn, in, nt);
        REQUIRE(got.size() == want.size());
        for (size_t o = 0; o < got.size(); ++o) {
          INFO(cases[i].name << " input shape " << oar::shape_str(in[0].shape()) << " output " << o << " threads " << nt
                             << "\n" << oar::compiler::to_string(cases[i].kernel));
          CHECK(got[o].shape() == want[o].shape());
          CHECK(got[o].dtype() == want[o].dtype());
          double tol = tolerance(want[o].dtype());
          check_values(got[o], want[o], tol);
        }
      }
    }
  }
}

std::vector<Tensor> rms_inputs(int64_t rows, int64_t cols, DType t, uint32_t seed) {
  return {random_tensor({rows, cols}, t, seed), random_tensor({cols}, t, seed + 1, 0.5, 1.5)};
}

}  // namespace

TEST_CASE("RMSNorm compiles to one row_reduce kernel equal to the unfused program") {
  std::vector<Case> cases;
  std::vector<std::vector<std::vector<Tensor>>> inputs;
  for (DType t : {DType::f32, DType::f64, DType::bf16, DType::f16}) {
    auto rms = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{oar::rms_norm(in[0], in[1], 1e-6)}; };
    std::string name = "rms_" + std::string(oar::dtype_short_name(t));
    cases.push_back(make_case(name, rms, {{{-1, 100}, t, "x"}, {{100}, t, "w"}}));
    CHECK(cases.back().kernel.kind == ScheduleKind::row_reduce);
    CHECK(cases.back().kernel.reductions.size() == 1);
    inputs.push_back({rms_inputs(1, 100, t, 1), rms_inputs(7, 100, t, 2), rms_inputs(65, 100, t, 3)});
  }
  // Both dims dynamic: the columns are read at run time too.
  auto rms = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{oar::rms_norm(in[0], in[1], 1e-5)}; };
  cases.push_back(make_case("rms_dyn", rms, {{{-1, -1}, DType::f32, "x"}, {{-1}, DType::f32, "w"}}));
  inputs.push_back({rms_inputs(3, 17, DType::f32, 4), rms_inputs(40, 1030, DType::f32, 5), rms_inputs(2, 1, DType::f32, 6)});
  check_cases(cases, inputs);
  // The loads and the store are contiguous rows: v0 * cols + v1.
  const Kernel& k = cases[0].kernel;
  CHECK(oar::compiler::to_string(k.stores[0].index) == "(v0 * 100) + v1");
}

TEST_CASE("the row lambda declares its own restrict pointers (no closure reads in the parallel loops)") {
  // Note [Buffer pointers inside the row lambda] in codegen_cpu.cpp: with
  // the pointers captured by reference GCC gathered in0 itself in every
  // vector lane of the OpenMP-outlined copy of the loops (4x slower).
  auto rms = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{oar::rms_norm(in[0], in[1], 1e-6)}; };
  auto add = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + in[1]}; };
  for (const Case& c : {make_case("rms", rms, {{{-1, 768}, DType::f32, "x"}, {{768}, DType::f32, "w"}}),
                        make_case("add", add, {{{-1, 33}, DType::f32, "a"}, {{-1, 33}, DType::f32, "b"}})}) {
    const std::string src = oar::compiler::emit_cpu(c.kernel, "k_" + c.name);
    const size_t lambda = src.find("auto run = [=](");
    REQUIRE_MESSAGE(lambda != std::string::npos, src);
    const size_t body_end = src.find("};", lambda);
    const std::string body = src.substr(lambda, body_end - lambda);
    CHECK_MESSAGE(body.find("const float* __restrict in0 = (const float*)buffers[0];") != std::string::npos, body);
    CHECK_MESSAGE(body.find("float* __restrict out0 = (float*)buffers[") != std::string::npos, body);
    CHECK(src.find("[&]") == std::string::npos);
  }
}

TEST_CASE("softmax, log_softmax and layer_norm fuse their reductions over the same rows") {
  std::vector<Case> cases;
  std::vector<std::vector<std::vector<Tensor>>> inputs;
  auto sm = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{oar::softmax(in[0], -1)}; };
  auto lsm = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{oar::log_softmax(in[0], -1)}; };
  auto ln = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{oar::layer_norm(in[0], in[1], in[2], 1e-5, 2)};
  };
  for (DType t : {DType::f32, DType::bf16}) {
    std::string s(oar::dtype_short_name(t));
    cases.push_back(make_case("softmax_" + s, sm, {{{-1, -1}, t, "x"}}));
    CHECK(cases.back().kernel.reductions.size() == 2);  // max, then the sum of exp(x - max)
    // 8200 columns: longer than the row buffers of Note [Row values kept between passes].
    inputs.push_back({{random_tensor({5, 33}, t, 7, -30, 30)}, {random_tensor({3, 1025}, t, 8)},
                      {random_tensor({2, 8200}, t, 19)}});
    cases.push_back(make_case("log_softmax_" + s, lsm, {{{-1, 64}, t, "x"}}));
    inputs.push_back({{random_tensor({9, 64}, t, 9)}, {random_tensor({1, 64}, t, 10)}});
    // Rows over two axes, one of them static: [B, 7, 33].
    cases.push_back(make_case("log_softmax3_" + s, lsm, {{{-1, 7, 33}, t, "x"}}));
    inputs.push_back({{random_tensor({3, 7, 33}, t, 17)}, {random_tensor({1, 7, 33}, t, 18)}});
    // layer_norm over the last dim of [batch, seq, hidden]: rows are batch * seq.
    cases.push_back(make_case("layer_norm_" + s, ln, {{{-1, -1, 48}, t, "x"}, {{48}, t, "w"}, {{48}, t, "b"}}));
    CHECK(cases.back().kernel.reductions.size() == 2);  // mean, then the variance around it
    inputs.push_back({{random_tensor({2, 3, 48}, t, 11), random_tensor({48}, t, 12), random_tensor({48}, t, 13)},
                      {random_tensor({5, 7, 48}, t, 14), random_tensor({48}, t, 15), random_tensor({48}, t, 16)}});
  }
  check_cases(cases, inputs);
}

TEST_CASE("reductions over the same rows of different shapes share one kernel (layer_norm, then log_softmax of its reshape)") {
  // The transformer block's loss: layer_norm over [b, s, d] (rows [b, s]),
  // reshaped to [b * s, d] for cross_entropy (rows [b * s]). Lowering once
  // refused the second reduction ("reduces other rows"), so the fused group
  // ran unfused and the compiled training step was slower than the static
  // one. Every per-row and per-element value is an output here, as in a
  // training forward that saves them for the backward. The last output
  // counts the elements equal to their row's max, as max's VJP does: with
  // FP contraction the kernel stored layer_norm's output 1 ulp away from
  // the values its max loop saw, the count was 0 and the block's second
  // training step NaN (ToolchainConfig: -ffp-contract=off).
  std::vector<Case> cases;
  std::vector<std::vector<std::vector<Tensor>>> inputs;
  auto f = [](const std::vector<Tensor>& in) {
    // layer_norm as the training forward's decomposition, its products saved.
    Tensor m = oar::mean(in[0], {2}, true);
    Tensor xc = in[0] - m;
    Tensor xhat = xc * oar::rsqrt(oar::mean(xc * xc, {2}, true) + 1e-5);
    Tensor scaled = xhat * in[1];
    Tensor y = scaled + in[2];
    Tensor r = oar::reshape(y, {-1, 24});
    Tensor mx = oar::max(r, {1}, true);
    Tensor lse = oar::log(oar::sum(oar::exp(r - mx), {1}, true));
    Tensor at_max = oar::sum(oar::cast(oar::equal(r, mx), oar::DType::f32), {1}, false);
    return std::vector<Tensor>{m,  xc, xhat, scaled, y, mx, lse, r - mx - lse, oar::sum(r - mx - lse, {1}, false),
                               at_max};
  };
  for (DType t : {DType::f32, DType::bf16}) {
    cases.push_back(make_case("ln_lsm_" + std::string(oar::dtype_short_name(t)), f,
                              {{{-1, 5, 24}, t, "x"}, {{24}, t, "w"}, {{24}, t, "b"}}));
    CHECK(cases.back().kernel.kind == ScheduleKind::row_reduce);
    inputs.push_back({{random_tensor({3, 5, 24}, t, 31), random_tensor({24}, t, 32), random_tensor({24}, t, 33)},
                      {random_tensor({1, 5, 24}, t, 34), random_tensor({24}, t, 35), random_tensor({24}, t, 36)}});
  }
  check_cases(cases, inputs);
  // Rows that are not the same data (a transpose between the reductions) are still refused.
  auto g = [](const std::vector<Tensor>& in) {
    Tensor m = oar::mean(in[0], {2}, true);
    Tensor t = oar::transpose(in[0] - m, {1, 0, 2});
    return std::vector<Tensor>{oar::sum(oar::reshape(t, {-1, 4}), {1}, false)};
  };
  std::string why;
  CHECK_FALSE(oar::compiler::lower_group(decomposed(g, {{{3, 5, 4}, DType::f32, "x"}}), &why).has_value());
  CHECK_MESSAGE(why.find("another row") != std::string::npos, why);
}

TEST_CASE("softmax keeps exp(x - max) for the epilogue; layer_norm recomputes x - mean") {
  // Note [Row values kept between passes] in codegen_cpu.cpp: computing
  // exp twice made the compiled softmax slower than torch.compile's.
  auto sm = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{oar::softmax(in[0], -1)}; };
  auto ln = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{oar::layer_norm(in[0], in[1], in[2], 1e-5, 1)};
  };
  auto count = [](const std::string& s, const std::string& what) {
    size_t n = 0;
    for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
  };
  Case softmax = make_case("softmax", sm, {{{-1, -1}, DType::f32, "x"}});
  const std::string src = oar::compiler::emit_cpu(softmax.kernel, "k_softmax");
  const size_t cached = src.find("if (cols <= 8192) {"), plain = src.find("} else {", cached);
  REQUIRE_MESSAGE(cached != std::string::npos, src);
  REQUIRE_MESSAGE(plain != std::string::npos, src);
  const std::string with_buffer = src.substr(cached, plain - cached), without = src.substr(plain);
  CHECK_MESSAGE(count(with_buffer, "oar_expf(") == 1, with_buffer);
  CHECK_MESSAGE(count(with_buffer, "c0[v1] = ") == 1, with_buffer);
  CHECK_MESSAGE(count(with_buffer, " = c0[v1];") == 1, with_buffer);
  CHECK_MESSAGE(count(without, "oar_expf(") == 2, without);  // long rows: no buffer, exp again
  Case norm = make_case("ln", ln, {{{-1, 48}, DType::f32, "x"}, {{48}, DType::f32, "w"}, {{48}, DType::f32, "b"}});
  const std::string ln_src = oar::compiler::emit_cpu(norm.kernel, "k_ln");
  CHECK_MESSAGE(ln_src.find("c0[") == std::string::npos, ln_src);
}

TEST_CASE("bias + gelu and broadcasts compile to elementwise kernels") {
  std::vector<Case> cases;
  std::vector<std::vector<std::vector<Tensor>>> inputs;
  auto bias_gelu = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{oar::gelu(in[0] + in[1], false)}; };
  auto bias_gelu_tanh = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{oar::gelu(in[0] + in[1], true)}; };
  // An outer product-like broadcast: [-1, 1] * [1, -1] - [-1, 1], with two outputs.
  auto outer = [](const std::vector<Tensor>& in) {
    Tensor p = in[0] * in[1];
    return std::vector<Tensor>{p - in[0], oar::exp(p)};
  };
  for (DType t : {DType::f32, DType::f16}) {
    std::string s(oar::dtype_short_name(t));
    cases.push_back(make_case("bias_gelu_" + s, bias_gelu, {{{-1, 96}, t, "x"}, {{96}, t, "b"}}));
    CHECK(cases.back().kernel.kind == ScheduleKind::elementwise);
    inputs.push_back({{random_tensor({3, 96}, t, 20), random_tensor({96}, t, 21)},
                      {random_tensor({400, 96}, t, 22), random_tensor({96}, t, 23)}});
  }
  cases.push_back(make_case("bias_gelu_tanh", bias_gelu_tanh, {{{-1, 96}, DType::f64, "x"}, {{96}, DType::f64, "b"}}));
  inputs.push_back({{random_tensor({5, 96}, DType::f64, 24), random_tensor({96}, DType::f64, 25)}});
  cases.push_back(make_case("outer", outer, {{{-1, 1}, DType::f32, "a"}, {{1, -1}, DType::f32, "b"}}));
  inputs.push_back({{random_tensor({3, 1}, DType::f32, 26), random_tensor({1, 5}, DType::f32, 27)},
                    {random_tensor({300, 1}, DType::f32, 28), random_tensor({1, 301}, DType::f32, 29)}});
  check_cases(cases, inputs);
  // The same-shape elementwise kernel is one flat loop.
  auto add = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{oar::exp(in[0]) + in[1]}; };
  Case flat = make_case("flat", add, {{{-1, 7, 5}, DType::f32, "a"}, {{-1, 7, 5}, DType::f32, "b"}});
  CHECK(flat.kernel.domain.size() == 1);
}

TEST_CASE("lower_group refuses what it cannot lower, with the reason") {
  std::string why;
  auto mm = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{oar::matmul(in[0], in[1])}; };
  ir::Program p = decomposed(mm, {{{-1, 4}, DType::f32, "a"}, {{4, 3}, DType::f32, "b"}});
  CHECK_FALSE(oar::compiler::lower_group(p, &why).has_value());
  CHECK(why == "lower_group: op 'matmul' has no loop form (not elementwise, broadcast, reshape, transpose or a reduction)");
  auto col = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{oar::sum(in[0], {0}, false)}; };
  ir::Program q = decomposed(col, {{{-1, 4}, DType::f32, "a"}});
  CHECK_FALSE(oar::compiler::lower_group(q, &why).has_value());
  CHECK(why.find("reduces axes that are not the trailing ones") != std::string::npos);
}

TEST_CASE("a dynamic dim that broadcasts at run time makes the kernel refuse the sizes") {
  auto add = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + in[1]}; };
  std::vector<Case> cases;
  cases.push_back(make_case("two_dyn", add, {{{-1, 4}, DType::f32, "a"}, {{-1, 4}, DType::f32, "b"}}));
  REQUIRE(cases[0].kernel.dim_checks.size() == 1);
  std::vector<std::vector<std::vector<Tensor>>> inputs{
      {{random_tensor({3, 4}, DType::f32, 1), random_tensor({3, 4}, DType::f32, 2)}}};
  check_cases(cases, inputs);
  Library lib(oar::compiler::emit_cpu(cases[0].kernel, "k"));
  int status = -1;
  run_kernel(cases[0].kernel, lib.get("k"), {random_tensor({3, 4}, DType::f32, 1), random_tensor({1, 4}, DType::f32, 2)}, 1,
             &status);
  CHECK(status == oar::compiler::kKernelShapeMismatch);
}

TEST_CASE("exp, tanh and erf in generated f32 kernels match libm on extreme and special values") {
  auto fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{oar::exp(in[0]), oar::tanh(in[0]), oar::erf(in[0]), oar::tanh(in[0] * 1e-3), oar::erf(in[0] * 1e-3)};
  };
  std::vector<Case> cases;
  cases.push_back(make_case("exp", fn, {{{-1}, DType::f32, "x"}}));
  std::vector<double> v = {-110, -104, -103.9, -100, -88, -87.3, -20, -1e-8, 0, 1e-8, 0.5, 1, 10, 80, 88.7, 88.72, 88.73, 89,
                           NAN, INFINITY, -INFINITY};
  for (int i = -200; i <= 200; ++i) v.push_back(i * 0.437);
  std::vector<std::vector<std::vector<Tensor>>> inputs{{{oar::cast(Tensor::from_vector(v, {static_cast<int64_t>(v.size())}), DType::f32)}}};
  check_cases(cases, inputs, {1});
}

TEST_CASE("every loop over a row of softmax and gelu vectorizes with the toolchain's flags") {
  // Without -fno-trapping-math GCC kept oar_expf and the `?:` selects scalar
  // on machines without AVX-512 masking (a Zen 3: softmax [4096, 768] 12.9 ms
  // instead of 2.8). GCC reports each vectorized loop with -fopt-info-vec.
#if !defined(__x86_64__) || defined(__clang__)
  MESSAGE("skipped: the check reads GCC's x86-64 vectorizer report");
#else
  auto sm = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{oar::softmax(in[0], -1)}; };
  auto gelu = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{oar::gelu(in[0] + in[1], false)}; };
  for (const Case& c : {make_case("softmax", sm, {{{-1, -1}, DType::f32, "x"}}),
                        make_case("gelu", gelu, {{{-1, 96}, DType::f32, "x"}, {{96}, DType::f32, "b"}})}) {
    const std::string src = oar::compiler::emit_cpu(c.kernel, "k_" + c.name);
    char dir_template[] = "/tmp/oar-vec-test-XXXXXX";
    REQUIRE(mkdtemp(dir_template) != nullptr);
    const std::string dir = dir_template, file = dir + "/k.cpp";
    {
      std::ofstream out(file);
      out << src;
    }
    std::string cmd = oar::compiler::toolchain_from_env().cxx;
    for (const std::string& f : oar::compiler::ToolchainConfig{}.flags) cmd += " " + f;
    cmd += " -fopt-info-vec-optimized " + file + " -o " + dir + "/k.so 2>&1";
    std::string report;
    FILE* pipe = popen(cmd.c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buf[4096];
    while (size_t n = fread(buf, 1, sizeof buf, pipe)) report.append(buf, n);
    REQUIRE_MESSAGE(pclose(pipe) == 0, report);
    std::set<int> vectorized;
    for (size_t at = report.find("k.cpp:"); at != std::string::npos; at = report.find("k.cpp:", at + 1)) {
      const size_t eol = report.find('\n', at);
      if (report.substr(at, eol - at).find("loop vectorized") != std::string::npos) {
        vectorized.insert(std::atoi(report.c_str() + at + 6));
      }
    }
    // A loop counts as vectorized when GCC names a line from its pragma to
    // its closing brace (it reports the pragma or a statement of the body).
    std::vector<std::string> lines;
    std::istringstream in(src);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    int loops = 0;
    for (size_t i = 0; i < lines.size(); ++i) {
      const std::string& line = lines[i];
      if (line.find("for (int64_t v1 = ") == std::string::npos && line.find("for (int64_t v0 = lo;") == std::string::npos) continue;
      ++loops;
      const std::string close = line.substr(0, line.find_first_not_of(' ')) + "}";
      size_t end = i + 1;
      while (end < lines.size() && lines[end] != close) ++end;
      const int first = static_cast<int>(i), last = static_cast<int>(end) + 1;  // 1-based: the pragma is line i
      auto hit = vectorized.lower_bound(first);
      CHECK_MESSAGE((hit != vectorized.end() && *hit <= last),
                    c.name << ": the loop at line " << i + 1 << " `" << line << "` was not vectorized\n" << report);
    }
    CHECK(loops > 0);
    std::filesystem::remove_all(dir);
  }
#endif
}

TEST_CASE("integer max and min reductions start from the type's extremes") {
  auto fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{oar::max(in[0], {1}, false), oar::min(in[0], {1}, true), oar::sum(in[0], {1}, false)};
  };
  std::vector<Case> cases;
  cases.push_back(make_case("imax", fn, {{{-1, 5}, DType::i64, "x"}}));
  Tensor x = oar::cast(random_tensor({4, 5}, DType::f64, 50, -1e12, -1e9), DType::i64);  // all negative: max below 0
  Tensor y = oar::cast(random_tensor({3, 5}, DType::f64, 51, 1e9, 1e12), DType::i64);    // all positive
  std::vector<std::vector<std::vector<Tensor>>> inputs{{{x}, {y}}};
  check_cases(cases, inputs, {1});
}
