// emit_cpu: a Kernel -> C++17 source with OpenMP (loop_ir.h).
//
// Note [CPU schedules]
// elementwise: the domain's last dim is the inner loop (`#pragma omp simd`,
// contiguous after lowering merged the dims it could); the others are
// flattened into one outer index that OpenMP splits. A 1-D domain is cut
// into chunks of kChunk elements so it still spreads over the threads.
// Nodes that do not depend on the inner variable are computed once per
// outer iteration.
// row_reduce: one row per outer iteration (OpenMP over rows). The
// reductions run in passes over the row: a pass holds every reduction
// whose inputs are ready (softmax: max, then sum of exp(x - max);
// RMSNorm: one pass), each an accumulator of a `#pragma omp simd
// reduction` loop (accumulated in f32 for f16/bf16/f32, so the sum
// vectorizes without -ffast-math: the simd reduction is allowed to
// reassociate). max/min count NaNs on the side so a NaN in the row gives
// NaN, as numpy. Then row-level stores, then one epilogue loop for the
// per-element stores. The row is read once per pass; a row of up to some
// ten thousand f32 stays in L1/L2 between passes.
// col_reduce: the reduced variable is the outer one (a sum over the batch
// of each column): threads split the columns, the inner loop over columns
// vectorizes, the rows are the sequential loop.
// Size buckets (chosen when the kernel runs, never by compiling again):
// work below kParallelMin elements runs without a parallel region.
// Stores are plain: on this project's machine (AMD EPYC, AVX-512) a plain
// RMSNorm over [16384, 4096] f32 reaches about 80% of memcpy at one
// thread, and a variant writing blocks through an L1 buffer with
// non-temporal stores measured 3x slower, so it was dropped.
#include <cmath>
#include <set>
#include <sstream>

#include "oar/error.h"
#include "oar_compiler/loop_ir.h"

namespace oar::compiler {

namespace {

constexpr int64_t kParallelMin = 32768;
constexpr int64_t kChunk = 8192;

const char* kPrelude = R"(#ifndef OAR_KERNEL_PRELUDE
#define OAR_KERNEL_PRELUDE
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <omp.h>

static inline float oar_bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline uint16_t oar_f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  uint32_t nan = (u >> 16) | 0x40u;
  return (uint16_t)(f != f ? nan : rounded);
}
/* exp in f32 that vectorizes without -ffast-math (libm's expf does not):
   Cody-Waite reduction x = k ln2 + r, cephes' degree-6 polynomial (within
   about 1 ulp of libm in the normal range), 2^k applied as two factors so
   subnormal results and k = 128 stay right; inf and nan as libm. */
static inline float oar_expf(float x) {
  float xc = x > 88.72283935546875f ? 88.72283935546875f : (x < -103.97208f ? -103.97208f : x);
  float kf = rintf(xc * 1.44269504088896341f);
  float r = __builtin_fmaf(kf, -0.693359375f, xc);
  r = __builtin_fmaf(kf, 2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = __builtin_fmaf(p, r, 1.3981999507e-3f);
  p = __builtin_fmaf(p, r, 8.3334519073e-3f);
  p = __builtin_fmaf(p, r, 4.1665795894e-2f);
  p = __builtin_fmaf(p, r, 1.6666665459e-1f);
  p = __builtin_fmaf(p, r, 5.0000001201e-1f);
  float y = __builtin_fmaf(p, r * r, r) + 1.0f;
  int32_t k = (int32_t)kf;
  int32_t k1 = k >> 1, k2 = k - k1;
  uint32_t b1 = (uint32_t)(k1 + 127) << 23, b2 = (uint32_t)(k2 + 127) << 23;
  float s1, s2;
  memcpy(&s1, &b1, 4);
  memcpy(&s2, &b2, 4);
  y = y * s1 * s2;
  y = x > 88.72283935546875f ? INFINITY : y;
  return x != x ? x : y;
}
/* tanh and erf in f32 that vectorize. tanh: cephes' odd polynomial below
   0.625, else 1 - 2 / (e^2|x| + 1) on oar_expf. erf: x P(x^2) / Q(x^2),
   the rational fit of the cpu plugin's vmath::erf_f32 (cpu_vec_math.h, the
   same coefficients and steps), +-1 from |x| >= 3.919206 where erf rounds
   to 1. Measured against double libm on [-12, 12]: relative error at most
   3.8e-7 (erf), 1.3e-7 (tanh), 8.1e-8 (exp). */
static inline float oar_tanhf(float x) {
  float a = fabsf(x);
  float z = x * x;
  float small = ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z + 1.33314422036e-1f) * z -
                 3.33332819422e-1f) * z * x + x;
  float e = oar_expf(2.0f * (a < 20.0f ? a : 20.0f));
  float big = 1.0f - 2.0f / (e + 1.0f);
  big = x < 0 ? -big : big;
  float y = a > 0.625f ? big : small;
  return x != x ? x : y;
}
static inline float oar_erff(float x) {
  float z = x * x;
  float p = 1.910763281e-08f;
  p = p * z - 1.942270956e-06f;
  p = p * z + 1.473159646e-04f;
  p = p * z + 3.992159385e-03f;
  p = p * z + 5.153047293e-02f;
  p = p * z + 2.071646303e-01f;
  p = p * z + 1.128379107e+00f;
  float q = 1.021463424e-03f;
  q = q * z + 1.496152300e-02f;
  q = q * z + 1.179873124e-01f;
  q = q * z + 5.169261098e-01f;
  q = q * z + 1.0f;
  float y = (x * p) / q;
  y = y > 1.0f ? 1.0f : y;
  y = y < -1.0f ? -1.0f : y;
  float one = x < 0 ? -1.0f : 1.0f;
  return fabsf(x) >= 3.919206f ? one : y;
}
static inline float oar_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t em = h & 0x7FFFu;
  uint32_t u = em << 13;
  float f;
  memcpy(&f, &u, 4);
  f *= 0x1p112f;  /* rebias the exponent; exact for normals and subnormals */
  uint32_t r;
  memcpy(&r, &f, 4);
  r = em >= 0x7C00u ? (r | 0x7F800000u) : r;  /* inf, nan */
  r |= sign;
  memcpy(&f, &r, 4);
  return f;
}
static inline uint16_t oar_f32_to_f16(float ff) {
  uint32_t f;
  memcpy(&f, &ff, 4);
  uint32_t sign = f & 0x80000000u;
  f ^= sign;
  /* overflow, inf, nan */
  uint32_t big = f > 0x7F800000u ? 0x7E00u : 0x7C00u;
  /* subnormal results: add a magic number so the FPU rounds the mantissa */
  const uint32_t magic_u = ((127 - 15) + (23 - 10) + 1) << 23;
  float magic, fv, t;
  memcpy(&magic, &magic_u, 4);
  memcpy(&fv, &f, 4);
  t = fv + magic;
  uint32_t tu;
  memcpy(&tu, &t, 4);
  uint32_t sub = tu - magic_u;
  /* normal results: rebias and round to nearest even */
  uint32_t norm = (f + ((uint32_t)(15 - 127) << 23) + 0xFFFu + ((f >> 13) & 1u)) >> 13;
  uint32_t o = f >= ((127u + 16u) << 23) ? big : f < (113u << 23) ? sub : norm;
  return (uint16_t)(o | (sign >> 16));
}
#endif
)";

std::string c_type(DType t) {
  switch (t) {
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::f16:
    case DType::bf16: return "uint16_t";
    case DType::i8: return "int8_t";
    case DType::u8: return "uint8_t";
    case DType::i32: return "int32_t";
    case DType::i64: return "int64_t";
    case DType::boolean: return "uint8_t";
    default: throw Error(ErrorCode::unsupported, "emit_cpu: dtype " + std::string(dtype_name(t)) + " has no kernel form");
  }
}

// The C type a value computes in.
std::string compute_type(DType t) {
  DType c = compute_dtype(t);
  return c == DType::boolean ? "bool" : c_type(c);
}

std::string literal(double v, DType t) {
  DType c = compute_dtype(t);
  if (c == DType::boolean) return v != 0 ? "true" : "false";
  if (c != DType::f32 && c != DType::f64) {
    std::ostringstream os;
    os << "(" << c_type(c) << ")" << static_cast<int64_t>(v);
    return os.str();
  }
  if (std::isnan(v)) return c == DType::f32 ? "NAN" : "(double)NAN";
  if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + (c == DType::f32 ? "INFINITY" : "(double)INFINITY");
  std::ostringstream os;
  os.precision(17);
  os << std::scientific << v;
  return c == DType::f32 ? "(float)" + os.str() : os.str();
}

// A stored element -> its compute value, and back.
std::string from_storage(const std::string& e, DType t) {
  if (t == DType::bf16) return "oar_bf16_to_f32(" + e + ")";
  if (t == DType::f16) return "oar_f16_to_f32(" + e + ")";
  if (t == DType::boolean) return "(" + e + " != 0)";
  return e;
}
std::string to_storage(const std::string& e, DType t) {
  if (t == DType::bf16) return "oar_f32_to_bf16(" + e + ")";
  if (t == DType::f16) return "oar_f32_to_f16(" + e + ")";
  if (t == DType::boolean) return "(uint8_t)((" + e + ") ? 1 : 0)";
  return "(" + c_type(t) + ")(" + e + ")";
}

std::string cast_text(const std::string& e, DType from, DType to) {
  DType cf = compute_dtype(from), ct = compute_dtype(to);
  std::string out = e;
  if (ct == DType::boolean) {
    out = "(" + e + " != 0)";
  } else if (cf != ct || from == DType::boolean) {
    out = "((" + compute_type(to) + ")(" + e + "))";
  }
  // A cast to f16/bf16 rounds, as the unfused program does.
  if (to == DType::bf16) out = "oar_bf16_to_f32(oar_f32_to_bf16(" + out + "))";
  if (to == DType::f16) out = "oar_f16_to_f32(oar_f32_to_f16(" + out + "))";
  return out;
}

class CpuEmitter {
 public:
  CpuEmitter(const Kernel& k, std::string symbol) : k_(k), symbol_(std::move(symbol)), masks_(node_var_masks(k)) {}

  // Note [Buffer pointers inside the row lambda]: the loops live in a
  // lambda that the OpenMP region calls. Pointers captured by reference
  // were re-read through the closure in every vector lane: GCC vectorized
  // the loads of in0 itself as gathers (vpgatherqq) inside the outlined
  // region, about 4x slower than the serial call of the same lambda. So the
  // lambda captures by value and declares its own __restrict pointers from
  // `buffers`: loop-invariant locals, contiguous vector loads in both paths.
  std::string buffer_decls(const std::string& indent) const {
    std::ostringstream o;
    for (size_t i = 0; i < k_.inputs.size(); ++i) {
      o << indent << "const " << c_type(k_.inputs[i].dtype) << "* __restrict in" << i << " = (const "
        << c_type(k_.inputs[i].dtype) << "*)buffers[" << i << "];\n";
    }
    for (size_t i = 0; i < k_.outputs.size(); ++i) {
      o << indent << c_type(k_.outputs[i].dtype) << "* __restrict out" << i << " = (" << c_type(k_.outputs[i].dtype)
        << "*)buffers[" << k_.inputs.size() + i << "];\n";
    }
    return o.str();
  }

  std::string run() {
    std::string bad = verify_kernel(k_);
    if (!bad.empty()) throw Error(ErrorCode::invalid_argument, "emit_cpu: " + bad);
    os_ << kPrelude << "\n// " << (k_.name.empty() ? symbol_ : k_.name) << "\n";
    os_ << "extern \"C\" int " << symbol_ << "(void* const* buffers, const int64_t* dims, int num_threads) {\n";
    os_ << "  if (buffers == 0 || (dims == 0 && " << k_.dims.size() << " > 0)) return " << kKernelBadArgument << ";\n";
    for (size_t i = 0; i < k_.dims.size(); ++i) os_ << "  const int64_t d" << i << " = dims[" << i << "];\n";
    for (size_t i = 0; i < k_.inputs.size() + k_.outputs.size(); ++i) {
      os_ << "  if (buffers[" << i << "] == 0 && " << numel_text(i) << " > 0) return " << kKernelBadArgument << ";\n";
    }
    for (const DimCheck& c : k_.dim_checks) {
      os_ << "  if (" << expr(c.a) << " != " << expr(c.b) << ") return " << kKernelShapeMismatch << ";\n";
    }
    os_ << "  const int nt = num_threads > 0 ? num_threads : omp_get_max_threads();\n";
    os_ << "  (void)nt;\n";
    if (k_.kind == ScheduleKind::elementwise) {
      elementwise();
    } else if (k_.kind == ScheduleKind::row_reduce) {
      row_reduce();
    } else {
      throw Error(ErrorCode::unsupported, "emit_cpu: kernel " + k_.name + ": col_reduce has no CPU schedule yet");
    }
    os_ << "  return 0;\n}\n";
    return os_.str();
  }

 private:
  std::string expr(const Expr& e) const {
    return to_c(
        simplify(e, k_.simplify_context()), [](int i) { return "d" + std::to_string(i); },
        [](int i) { return "v" + std::to_string(i); });
  }

  std::string numel_text(size_t buffer) const {
    const Buffer& b = buffer < k_.inputs.size() ? k_.inputs[buffer] : k_.outputs[buffer - k_.inputs.size()];
    Expr n(1);
    for (const Expr& d : b.shape) n = n * d;
    return expr(n);
  }

  // The C text of node n's value, its arguments named t<id> (or r<k>).
  std::string node_text(int id) const {
    const Node& n = k_.nodes[static_cast<size_t>(id)];
    auto arg = [&](size_t i) { return name(n.args[i]); };
    switch (n.kind) {
      case NodeKind::load:
        return from_storage("in" + std::to_string(n.buffer) + "[" + expr(n.index) + "]", k_.inputs[static_cast<size_t>(n.buffer)].dtype);
      case NodeKind::constant: return literal(n.value, n.dtype);
      case NodeKind::index: return "((" + compute_type(n.dtype) + ")(" + expr(n.index) + "))";
      case NodeKind::cast: return cast_text(arg(0), k_.nodes[static_cast<size_t>(n.args[0])].dtype, n.dtype);
      case NodeKind::reduced: return "r" + std::to_string(n.reduction);
      default: {
        std::vector<std::string> args;
        for (size_t i = 0; i < n.args.size(); ++i) args.push_back(arg(i));
        // Comparisons see their operands' type; where's branches are the result's.
        DType operand = k_.nodes[static_cast<size_t>(n.args[n.op == "where" ? 1 : 0])].dtype;
        return scalar_op_c(n.op, n.dtype, operand, args, false);
      }
    }
  }

  std::string name(int id) const { return "t" + std::to_string(id); }

  // Emits node `id` and what it needs into `out` (once per scope `done`);
  // nodes that do not depend on `inner_bit` go to the enclosing scope `outer`.
  void emit_node(int id, uint32_t inner_bit, std::string& out, std::vector<bool>& done, std::string* outer,
                 std::vector<bool>* outer_done, const std::string& indent, const std::string& outer_indent) {
    if (done[static_cast<size_t>(id)]) return;
    if (outer && !(masks_[static_cast<size_t>(id)] & inner_bit)) {
      emit_node(id, 0, *outer, *outer_done, nullptr, nullptr, outer_indent, outer_indent);
      return;
    }
    const Node& n = k_.nodes[static_cast<size_t>(id)];
    const size_t u = static_cast<size_t>(id);
    if (!cache_load_.empty() && cache_load_[u]) {  // Note [Row values kept between passes]
      out += indent + "const " + compute_type(n.dtype) + " " + name(id) + " = c" + std::to_string(cache_slot_[u]) + "[v1];\n";
      done[u] = true;
      return;
    }
    for (int a : n.args) {
      emit_node(a, inner_bit, out, done, outer, outer_done, indent, outer_indent);
    }
    if (n.kind != NodeKind::reduced) {
      out += indent + "const " + compute_type(n.dtype) + " " + name(id) + " = " + node_text(id) + ";\n";
    } else {
      out += indent + "const " + compute_type(n.dtype) + " " + name(id) + " = r" + std::to_string(n.reduction) + ";\n";
    }
    if (!cache_store_.empty() && cache_store_[u]) out += indent + "c" + std::to_string(cache_slot_[u]) + "[v1] = " + name(id) + ";\n";
    done[u] = true;
  }

  std::string store_text(const Store& s) const {
    DType t = k_.outputs[static_cast<size_t>(s.output)].dtype;
    DType from = k_.nodes[static_cast<size_t>(s.value)].dtype;
    std::string v = name(s.value);
    if (compute_dtype(from) != compute_dtype(t) || from == DType::boolean) v = "(" + compute_type(t) + ")(" + v + ")";
    return "out" + std::to_string(s.output) + "[" + expr(s.index) + "] = " + to_storage(v, t) + ";\n";
  }

  // ---- elementwise (Note [CPU schedules]) ----

  void elementwise() {
    const size_t r = k_.domain.size();
    const int inner = static_cast<int>(r - 1);
    for (size_t i = 0; i < r; ++i) os_ << "  const int64_t e" << i << " = " << expr(k_.domain[i]) << ";\n";
    os_ << "  const int64_t n_inner = e" << inner << ";\n";
    os_ << "  int64_t n_outer = 1;\n";
    for (size_t i = 0; i + 1 < r; ++i) os_ << "  n_outer *= e" << i << ";\n";
    os_ << "  if (n_outer == 0 || n_inner == 0) return 0;\n";
    // A 1-D domain is cut into chunks: the outer index is the chunk.
    bool chunked = r == 1;
    if (chunked) os_ << "  n_outer = (n_inner + " << kChunk << " - 1) / " << kChunk << ";\n";
    std::string outer, body;
    std::vector<bool> outer_done(k_.nodes.size(), false), inner_done(k_.nodes.size(), false);
    const std::string oi = "      ", ii = "        ";
    const uint32_t inner_bit = 1u << inner;
    // Outer coordinates, innermost-outer first.
    std::string coords;
    if (!chunked) {
      coords += oi + "int64_t rest = o;\n";
      for (size_t i = r - 1; i-- > 0;) {
        coords += oi + "const int64_t v" + std::to_string(i) + " = rest % e" + std::to_string(i) + ";\n";
        coords += oi + "rest /= e" + std::to_string(i) + ";\n";
      }
      coords += oi + "(void)rest;\n";
    }
    for (const Store& s : k_.stores) {
      emit_node(s.value, inner_bit, body, inner_done, &outer, &outer_done, ii, oi);
      body += ii + store_text(s);
    }
    std::string lo = chunked ? "o * " + std::to_string(kChunk) : "0";
    std::string hi = chunked ? "(o * " + std::to_string(kChunk) + " + " + std::to_string(kChunk) +
                                   " < n_inner ? o * " + std::to_string(kChunk) + " + " + std::to_string(kChunk) +
                                   " : n_inner)"
                             : "n_inner";
    os_ << "  auto run = [=](int64_t o_begin, int64_t o_end) {\n" << buffer_decls("    ");
    os_ << "    for (int64_t o = o_begin; o < o_end; ++o) {\n";
    os_ << coords << outer;
    os_ << "      const int64_t lo = " << lo << ", hi = " << hi << ";\n";
    os_ << "#pragma omp simd\n";
    os_ << "      for (int64_t v" << inner << " = lo; v" << inner << " < hi; ++v" << inner << ") {\n";
    os_ << body << "      }\n    }\n  };\n";
    parallel_dispatch("n_outer * n_inner", "n_outer");
  }

  // Runs run(0, n) serially for small work, else split over threads.
  void parallel_dispatch(const std::string& work, const std::string& n) {
    os_ << "  if (" << work << " < " << kParallelMin << " || nt <= 1 || " << n << " == 1) {\n";
    os_ << "    run(0, " << n << ");\n";
    os_ << "  } else {\n";
    // Chunks of about an eighth of a thread's share, handed out dynamically:
    // a thread the machine deschedules does not hold the others back.
    os_ << "    const int64_t chunk = " << n << " / ((int64_t)nt * 8) > 0 ? " << n << " / ((int64_t)nt * 8) : 1;\n";
    os_ << "    const int64_t n_chunks = (" << n << " + chunk - 1) / chunk;\n";
    os_ << "#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)\n";
    os_ << "    for (int64_t c = 0; c < n_chunks; ++c) run(c * chunk, c * chunk + chunk < " << n << " ? c * chunk + chunk : " << n << ");\n";
    os_ << "  }\n";
  }

  // ---- row_reduce (Note [CPU schedules]) ----

  // The start value of an accumulator: -inf / inf for float max / min, the
  // type's extremes for integers (and bool).
  static std::string identity(ReduceOp op, DType t) {
    DType c = compute_dtype(t);
    if (op == ReduceOp::sum) return "0";
    if (op == ReduceOp::prod) return "1";
    bool is_max = op == ReduceOp::max;
    switch (c) {
      case DType::f32: return is_max ? "-INFINITY" : "INFINITY";
      case DType::f64: return is_max ? "-(double)INFINITY" : "(double)INFINITY";
      case DType::i64: return is_max ? "INT64_MIN" : "INT64_MAX";
      case DType::i32: return is_max ? "INT32_MIN" : "INT32_MAX";
      case DType::i8: return is_max ? "INT8_MIN" : "INT8_MAX";
      case DType::u8: return is_max ? "0" : "UINT8_MAX";
      default: return is_max ? "false" : "true";
    }
  }

  // The reductions grouped into passes over the row: a pass holds every
  // reduction whose inputs are ready (Note [CPU schedules]).
  std::vector<std::vector<size_t>> reduction_passes() const {
    auto deps = reduction_deps(k_);
    std::vector<std::vector<size_t>> passes;
    uint32_t ready = 0;
    size_t left = k_.reductions.size();
    while (left > 0) {
      std::vector<size_t> pass;
      for (size_t j = 0; j < k_.reductions.size(); ++j) {
        if (!(ready >> j & 1u) && (deps[j] & ~ready) == 0) pass.push_back(j);
      }
      if (pass.empty()) throw Error(ErrorCode::internal, "emit_cpu: kernel " + k_.name + ": reductions depend on each other");
      for (size_t j : pass) ready |= 1u << j;
      left -= pass.size();
      passes.push_back(std::move(pass));
    }
    return passes;
  }

  // Note [Row values kept between passes]
  // A per-element value that a later loop over the row needs again is
  // recomputed there unless it is worth keeping: softmax's exp(x - max) is
  // summed in the second pass and divided in the epilogue, and computing it
  // twice made the compiled softmax slower than torch.compile's (0.85x at
  // [4096, 768]). plan_row_cache picks, for each later loop, the largest
  // shared values whose computation holds a transcendental op or a division
  // (a subtraction like layer_norm's x - mean is cheaper to redo than to
  // store and load); the first loop that computes one writes it to a row
  // buffer c<k> on the stack, later loops read it. Rows longer than
  // kCacheCols run the same code without buffers. The value read back is
  // the one computed, so the result is bit for bit the same either way.
  static constexpr int64_t kCacheCols = 8192;

  static bool costly_op(const Node& n) {
    static const std::set<std::string> ops = {"exp", "expm1", "log", "sqrt", "rsqrt", "tanh", "erf",
                                              "sin", "cos",  "pow",   "div"};
    return (n.kind == NodeKind::unary || n.kind == NodeKind::binary) && ops.count(n.op) > 0;
  }

  // loops: for each loop over the row (the passes, then the epilogue), its
  // root nodes. Fills cache_slot_ and returns the number of buffers, with
  // per-loop load / store flags in loads / stores.
  int plan_row_cache(const std::vector<std::vector<int>>& loops, std::vector<std::vector<char>>& loads,
                     std::vector<std::vector<char>>& stores) {
    const uint32_t col_bit = 2u;
    const size_t n = k_.nodes.size();
    // The column-dependent nodes each loop computes.
    std::vector<std::vector<char>> in(loops.size(), std::vector<char>(n, 0));
    std::vector<char> costly(n, 0);
    for (size_t i = 0; i < n; ++i) {
      if (!(masks_[i] & col_bit)) continue;
      costly[i] = costly_op(k_.nodes[i]);
      for (int a : k_.nodes[i].args) {
        if (costly[static_cast<size_t>(a)]) costly[i] = 1;
      }
    }
    for (size_t l = 0; l < loops.size(); ++l) {
      std::vector<int> stack(loops[l]);
      while (!stack.empty()) {
        size_t id = static_cast<size_t>(stack.back());
        stack.pop_back();
        if (in[l][id] || !(masks_[id] & col_bit)) continue;
        in[l][id] = 1;
        for (int a : k_.nodes[id].args) stack.push_back(a);
      }
    }
    loads.assign(loops.size(), std::vector<char>(n, 0));
    stores.assign(loops.size(), std::vector<char>(n, 0));
    cache_slot_.assign(n, -1);
    int slots = 0;
    for (size_t l = 1; l < loops.size(); ++l) {
      std::vector<char> seen(n, 0);
      std::vector<int> stack(loops[l]);
      while (!stack.empty()) {
        size_t id = static_cast<size_t>(stack.back());
        stack.pop_back();
        if (seen[id] || !(masks_[id] & col_bit)) continue;
        seen[id] = 1;
        size_t first = l;
        for (size_t k = 0; k < l; ++k) {
          if (in[k][id]) {
            first = k;
            break;
          }
        }
        if (first < l && costly[id]) {
          if (cache_slot_[id] < 0) cache_slot_[id] = slots++;
          loads[l][id] = 1;
          stores[first][id] = 1;
          continue;
        }
        for (int a : k_.nodes[id].args) stack.push_back(a);
      }
    }
    return slots;
  }

  // The code of one row (v0), with the row buffers (cache) or without.
  std::string row_code(const std::vector<std::vector<size_t>>& passes, const std::vector<std::vector<char>>* loads,
                       const std::vector<std::vector<char>>* stores) {
    std::string row;
    std::vector<bool> row_done(k_.nodes.size(), false);
    const std::string ri = "      ", li = "        ";
    const uint32_t col_bit = 2u;
    auto use_loop = [&](size_t l) {
      cache_load_ = loads ? (*loads)[l] : std::vector<char>();
      cache_store_ = stores ? (*stores)[l] : std::vector<char>();
    };
    for (size_t p = 0; p < passes.size(); ++p) {
      std::string loop, clauses;
      std::vector<bool> loop_done(k_.nodes.size(), false);
      use_loop(p);
      for (size_t j : passes[p]) {
        const Reduction& red = k_.reductions[j];
        std::string acc = "acc" + std::to_string(j), T = compute_type(red.dtype);
        bool is_float = compute_dtype(red.dtype) == DType::f32 || compute_dtype(red.dtype) == DType::f64;
        row += ri + T + " " + acc + " = " + identity(red.op, red.dtype) + ";\n";
        bool extremum = red.op == ReduceOp::max || red.op == ReduceOp::min;
        if (extremum && is_float) row += ri + "int64_t nan" + std::to_string(j) + " = 0;\n";
        emit_node(red.value, col_bit, loop, loop_done, &row, &row_done, li, ri);
        std::string v = name(red.value);
        switch (red.op) {
          case ReduceOp::sum: loop += li + acc + " += " + v + ";\n"; clauses += " reduction(+:" + acc + ")"; break;
          case ReduceOp::prod: loop += li + acc + " *= " + v + ";\n"; clauses += " reduction(*:" + acc + ")"; break;
          case ReduceOp::max:
          case ReduceOp::min: {
            const char* cmp = red.op == ReduceOp::max ? ">" : "<";
            loop += li + acc + " = " + v + " " + cmp + " " + acc + " ? " + v + " : " + acc + ";\n";
            clauses += std::string(" reduction(") + (red.op == ReduceOp::max ? "max" : "min") + ":" + acc + ")";
            if (is_float) {
              loop += li + "nan" + std::to_string(j) + " += " + v + " != " + v + ";\n";
              clauses += " reduction(+:nan" + std::to_string(j) + ")";
            }
            break;
          }
        }
      }
      row += "#pragma omp simd" + clauses + "\n";
      row += ri + "for (int64_t v1 = 0; v1 < cols; ++v1) {\n" + loop + ri + "}\n";
      for (size_t j : passes[p]) {
        const Reduction& red = k_.reductions[j];
        std::string T = compute_type(red.dtype);
        bool is_float = compute_dtype(red.dtype) == DType::f32 || compute_dtype(red.dtype) == DType::f64;
        std::string value = "acc" + std::to_string(j);
        if ((red.op == ReduceOp::max || red.op == ReduceOp::min) && is_float) {
          value = "(nan" + std::to_string(j) + " ? (" + T + ")NAN : " + value + ")";
        }
        // A sum or product of f16/bf16 rounds, as the unfused program's result
        // does. A max or min does not: it is one of the row's values, which the
        // kernel keeps in f32, and `x == max` (max's VJP) must find it; rounding
        // is monotone, so the stored max is the unfused program's either way.
        const bool picks = red.op == ReduceOp::max || red.op == ReduceOp::min;
        if (red.dtype == DType::bf16 && !picks) value = "oar_bf16_to_f32(oar_f32_to_bf16(" + value + "))";
        if (red.dtype == DType::f16 && !picks) value = "oar_f16_to_f32(oar_f32_to_f16(" + value + "))";
        row += ri + "const " + T + " r" + std::to_string(j) + " = " + value + ";\n";
      }
    }
    // Row-level stores, then the per-element epilogue.
    use_loop(passes.size());
    std::string epilogue;
    std::vector<bool> epi_done(k_.nodes.size(), false);
    for (const Store& s : k_.stores) {
      if (uses_var(s.index, 1)) continue;
      emit_node(s.value, 0, row, row_done, nullptr, nullptr, ri, ri);
      row += ri + store_text(s);
    }
    for (const Store& s : k_.stores) {
      if (!uses_var(s.index, 1)) continue;
      emit_node(s.value, col_bit, epilogue, epi_done, &row, &row_done, li, ri);
      epilogue += li + store_text(s);
    }
    if (!epilogue.empty()) {
      row += "#pragma omp simd\n" + ri + "for (int64_t v1 = 0; v1 < cols; ++v1) {\n" + epilogue + ri + "}\n";
    }
    cache_load_.clear();
    cache_store_.clear();
    return row;
  }

  void row_reduce() {
    os_ << "  const int64_t rows = " << expr(k_.domain[0]) << ", cols = " << expr(k_.domain[1]) << ";\n";
    os_ << "  if (rows == 0) return 0;\n";
    auto passes = reduction_passes();
    std::vector<std::vector<int>> loops;
    for (const auto& pass : passes) {
      loops.emplace_back();
      for (size_t j : pass) loops.back().push_back(k_.reductions[j].value);
    }
    loops.emplace_back();
    for (const Store& s : k_.stores) {
      if (uses_var(s.index, 1)) loops.back().push_back(s.value);
    }
    std::vector<std::vector<char>> loads, stores;
    const int slots = plan_row_cache(loops, loads, stores);
    const std::string plain = row_code(passes, nullptr, nullptr);
    os_ << "  auto run = [=](int64_t r_begin, int64_t r_end) {\n" << buffer_decls("    ");
    if (slots == 0) {
      os_ << "    for (int64_t v0 = r_begin; v0 < r_end; ++v0) {\n" << plain << "    }\n  };\n";
    } else {
      const std::string cached = row_code(passes, &loads, &stores);
      os_ << "    if (cols <= " << kCacheCols << ") {\n";
      for (size_t i = 0; i < k_.nodes.size(); ++i) {
        if (cache_slot_[i] >= 0) {
          os_ << "      alignas(64) " << compute_type(k_.nodes[i].dtype) << " c" << cache_slot_[i] << "[" << kCacheCols
              << "];\n";
        }
      }
      os_ << "      for (int64_t v0 = r_begin; v0 < r_end; ++v0) {\n" << cached << "      }\n";
      os_ << "    } else {\n";
      os_ << "      for (int64_t v0 = r_begin; v0 < r_end; ++v0) {\n" << plain << "      }\n";
      os_ << "    }\n  };\n";
    }
    parallel_dispatch("rows * cols", "rows");
  }

  const Kernel& k_;
  std::string symbol_;
  std::vector<uint32_t> masks_;
  // Note [Row values kept between passes]: the buffer of each kept node
  // (-1: none), and which nodes the loop being emitted reads / writes.
  std::vector<int> cache_slot_;
  std::vector<char> cache_load_, cache_store_;
  std::ostringstream os_;
};

}  // namespace

std::string emit_cpu(const Kernel& kernel, const std::string& symbol) {
  CpuEmitter e(kernel, symbol);
  return e.run();
}

}  // namespace oar::compiler
