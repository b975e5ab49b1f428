// CUDA C code generation for loop-IR kernels (see codegen_cuda.h).
#include "oar_compiler/codegen_cuda.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>

#include "oar/error.h"

namespace oar::compiler {

// Note [CUDA schedules]
// One generated __global__ function per kernel; the host picks the grid and
// block per call (cuda_launch_config), so a new size never recompiles.
//  - The innermost loop variable (the last domain var; the cols of a
//    row_reduce) is walked in tiles of W = cuda_vector_width() elements. A
//    tile whose W elements lie in range and whose contiguous loads/stores
//    (index = base + v, base independent of v, checked symbolically) start
//    at a multiple of W from aligned pointers does one 16-byte access per
//    buffer (VecT) and computes its W lanes from registers; any other tile
//    (row tails, odd row lengths, misaligned views) runs the same lanes with
//    scalar accesses. Loads that do not depend on the tile variable are
//    scalar and uniform.
//  - elementwise: a grid-stride loop over the tiles of the flattened outer
//    dims x the tiles of the last dim.
//  - row_reduce: one block per row (grid-stride over rows). Reductions are
//    grouped into passes over the row: a reduction that uses an earlier one
//    (softmax's sum of exp(x - max), layer_norm's variance) waits for the
//    next pass. Each thread folds its tiles in f32 (f64 for f64), then
//    __shfl_xor_sync within warps and one shared-memory step across warps
//    give every thread the row's value. Per-row stores are done by thread
//    0, the per-element epilogue by a last pass over the row (re-read from
//    L2 for the rows in flight: HBM sees one read and one write).
//  - col_reduce: one thread per column, a serial loop over the rows
//    (coalesced across the threads of a warp).
// f16/bf16 are stored as unsigned short bits and converted by bit
// operations (bf16) or cvt (f16); no CUDA header is included, so NVRTC
// needs nothing from the toolkit's include directory.

namespace {

[[noreturn]] void fail(const Kernel& k, const std::string& what) {
  throw Error(ErrorCode::unsupported, "emit_cuda: kernel " + k.name + ": " + what);
}

std::string storage_type(DType d) {
  switch (d) {
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::f16:
    case DType::bf16: return "unsigned short";
    case DType::i8: return "signed char";
    case DType::u8:
    case DType::boolean: return "unsigned char";
    case DType::i32: return "int";
    case DType::i64: return "long long";
    default: return "";
  }
}

std::string compute_type(DType d) {
  switch (compute_dtype(d)) {
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::i8: return "signed char";
    case DType::u8: return "unsigned char";
    case DType::boolean: return "bool";
    case DType::i32: return "int";
    case DType::i64: return "long long";
    default: return "";
  }
}

bool is_float(DType d) {
  return d == DType::f32 || d == DType::f64 || d == DType::f16 || d == DType::bf16;
}

// Storage value text -> compute value text.
std::string from_storage(DType d, const std::string& x) {
  if (d == DType::bf16) return "oar_bf16_to_f32(" + x + ")";
  if (d == DType::f16) return "oar_f16_to_f32(" + x + ")";
  if (d == DType::boolean) return "(" + x + " != 0)";
  return x;
}

// Compute value text (of a node of dtype `from`) -> storage of `to`.
std::string to_storage(DType to, const std::string& x) {
  if (to == DType::bf16) return "oar_f32_to_bf16((float)(" + x + "))";
  if (to == DType::f16) return "oar_f32_to_f16((float)(" + x + "))";
  if (to == DType::boolean) return "(unsigned char)((" + x + ") ? 1 : 0)";
  return "(" + storage_type(to) + ")(" + x + ")";
}

std::string literal(double v, DType d) {
  const DType c = compute_dtype(d);
  if (c == DType::boolean) return v != 0 ? "true" : "false";
  if (!is_float(c)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "(%s)%lldLL", compute_type(d).c_str(), static_cast<long long>(v));
    return buf;
  }
  const bool f64 = c == DType::f64;
  if (std::isnan(v)) return f64 ? "__longlong_as_double(0x7ff8000000000000LL)" : "__int_as_float(0x7fc00000)";
  if (std::isinf(v)) {
    std::string inf = f64 ? "__longlong_as_double(0x7ff0000000000000LL)" : "__int_as_float(0x7f800000)";
    return v < 0 ? "(-" + inf + ")" : inf;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, f64 ? "%.17g" : "%.9g", v);
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return f64 ? s : s + "f";
}

std::string identity(ReduceOp op, DType d) {
  switch (op) {
    case ReduceOp::sum: return literal(0, d);
    case ReduceOp::prod: return literal(1, d);
    case ReduceOp::max:
      if (is_float(d)) return literal(-INFINITY, d);
      return "oar_lowest<" + compute_type(d) + ">()";
    case ReduceOp::min:
      if (is_float(d)) return literal(INFINITY, d);
      return "oar_highest<" + compute_type(d) + ">()";
  }
  return "";
}

const char* op_functor(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "OarSum";
    case ReduceOp::prod: return "OarProd";
    case ReduceOp::max: return "OarMax";
    case ReduceOp::min: return "OarMin";
  }
  return "";
}

// Everything the generated kernels share; device functions only.
// Guarded, so the sources of several kernels concatenate into one module.
const char* kPrelude = R"CUDA(// Generated by oar's compiler (codegen_cuda.cpp). Do not edit.
#ifndef OAR_CUDA_PRELUDE
#define OAR_CUDA_PRELUDE
typedef long int64_t;
typedef int int32_t;
typedef signed char int8_t;
typedef unsigned char uint8_t;
#ifndef INT64_C
#define INT64_C(c) c##L
#endif
template <typename T, int N> struct alignas(sizeof(T) * N) VecT { T v[N]; };
__device__ __forceinline__ float oar_bf16_to_f32(unsigned short h) {
  return __uint_as_float(((unsigned)h) << 16);
}
__device__ __forceinline__ unsigned short oar_f32_to_bf16(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return (unsigned short)(u >> 16);
}
__device__ __forceinline__ float oar_f16_to_f32(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ unsigned short oar_f32_to_f16(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
template <typename T> __device__ __forceinline__ T oar_lowest() { return (T)(1ULL << (sizeof(T) * 8 - 1)); }
template <typename T> __device__ __forceinline__ T oar_highest() { return (T)~(1ULL << (sizeof(T) * 8 - 1)); }
struct OarSum { template <typename T> __device__ T operator()(T a, T b) const { return a + b; } };
struct OarProd { template <typename T> __device__ T operator()(T a, T b) const { return a * b; } };
// NaN propagates (a != a), as in the CPU kernels and torch.
struct OarMax { template <typename T> __device__ T operator()(T a, T b) const { return (a != a || a > b) ? a : b; } };
struct OarMin { template <typename T> __device__ T operator()(T a, T b) const { return (a != a || a < b) ? a : b; } };
__device__ __forceinline__ float oar_shfl(float v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
__device__ __forceinline__ double oar_shfl(double v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
__device__ __forceinline__ int oar_shfl(int v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
__device__ __forceinline__ long long oar_shfl(long long v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
template <typename T> __device__ __forceinline__ T oar_shfl(T v, int m) { return (T)__shfl_xor_sync(0xffffffffu, (int)v, m); }
// The block's reduction of v, returned to every thread. blockDim.x is a
// multiple of 32; smem has 33 slots (one per warp, one for the result).
template <typename T, typename Op> __device__ __forceinline__ T oar_block_reduce(T v, T* smem, Op op, T id) {
  for (int m = 16; m > 0; m >>= 1) v = op(v, oar_shfl(v, m));
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (int)(blockDim.x >> 5) ? smem[lane] : id;
    for (int m = 16; m > 0; m >>= 1) v = op(v, oar_shfl(v, m));
    if (lane == 0) smem[32] = v;
  }
  __syncthreads();
  return smem[32];
}
#endif  // OAR_CUDA_PRELUDE
)CUDA";

Expr substitute_var(const Expr& e, int var, const Expr& by) {
  if (e.kind() == ExprKind::var) return e.value() == var ? by : e;
  if (e.args().empty()) return e;
  std::vector<Expr> args;
  for (const Expr& a : e.args()) args.push_back(substitute_var(a, var, by));
  return make_expr(e.kind(), std::move(args));
}

// What the emitter knows about the tile variable `tile_var` of a kernel.
struct Emitter {
  const Kernel& k;
  int vec = 1;
  int tile_var = 0;
  SimplifyContext ctx;
  std::vector<uint32_t> masks;
  std::vector<std::optional<Expr>> load_base;   // per node: base of a contiguous load
  std::vector<std::optional<Expr>> store_base;  // per store
  std::ostringstream out;

  Emitter(const Kernel& kernel, int tile) : k(kernel), tile_var(tile) {
    vec = cuda_vector_width(k);
    ctx = k.simplify_context();
    masks = node_var_masks(k);
    load_base.resize(k.nodes.size());
    for (size_t i = 0; i < k.nodes.size(); ++i)
      if (k.nodes[i].kind == NodeKind::load) load_base[i] = contiguous_base(k.nodes[i].index);
    for (const Store& s : k.stores) store_base.push_back(contiguous_base(s.index));
  }

  // base when index == base + v<tile_var> with base free of it.
  std::optional<Expr> contiguous_base(const Expr& index) const {
    if (index.is_null() || !uses_var(index, tile_var)) return std::nullopt;
    Expr base = simplify(substitute_var(index, tile_var, Expr(0)), ctx);
    Expr rest = simplify(index - base - var_expr(tile_var), ctx);
    if (!rest.is_constant(0) || uses_var(base, tile_var)) return std::nullopt;
    return base;
  }

  std::string c(const Expr& e) const {
    return to_c(simplify(e, ctx), [](int d) { return "d" + std::to_string(d); },
                [](int v) { return "v" + std::to_string(v); });
  }
  std::string buf(int input_or_output, bool output) const {
    return "b" + std::to_string(output ? static_cast<int>(k.inputs.size()) + input_or_output : input_or_output);
  }
  const Buffer& input(int i) const { return k.inputs.at(i); }

  bool lane_vector_load(int id, bool vector_lanes) const { return vector_lanes && load_base[id].has_value(); }

  // The C text of node `id`'s value from its arguments' names.
  std::string node_expr(int id, bool vector_lanes) const {
    const Node& n = k.nodes[id];
    auto arg = [&](int i) { return "n" + std::to_string(n.args.at(i)); };
    switch (n.kind) {
      case NodeKind::load: {
        const DType d = input(n.buffer).dtype;
        if (lane_vector_load(id, vector_lanes)) return from_storage(d, "nv" + std::to_string(id) + ".v[j]");
        return from_storage(d, buf(n.buffer, false) + "[" + c(n.index) + "]");
      }
      case NodeKind::constant: return literal(n.value, n.dtype);
      case NodeKind::index: return "(" + compute_type(n.dtype) + ")(" + c(n.index) + ")";
      case NodeKind::cast: {
        // As the CPU kernels: a cast to f16/bf16 rounds, as the unfused program does.
        std::string e = compute_dtype(n.dtype) == DType::boolean
                            ? "(" + arg(0) + " != 0)"
                            : "(" + compute_type(n.dtype) + ")(" + arg(0) + ")";
        if (n.dtype == DType::bf16) e = "oar_bf16_to_f32(oar_f32_to_bf16(" + e + "))";
        if (n.dtype == DType::f16) e = "oar_f16_to_f32(oar_f32_to_f16(" + e + "))";
        return e;
      }
      case NodeKind::reduced: return "red" + std::to_string(n.reduction);
      case NodeKind::unary:
      case NodeKind::binary:
      case NodeKind::ternary: {
        std::vector<std::string> args;
        for (size_t i = 0; i < n.args.size(); ++i) args.push_back(arg(static_cast<int>(i)));
        // comparisons see their operands' type; where (cond, a, b) its values'.
        const int typed = n.kind == NodeKind::ternary ? 1 : 0;
        const DType operand = k.nodes.at(n.args.at(typed)).dtype;
        if (!has_scalar_op(n.op, static_cast<int>(n.args.size())))
          fail(k, "op " + n.op + " with " + std::to_string(n.args.size()) + " arguments has no scalar form");
        return scalar_op_c(n.op, n.dtype, operand, args, /*cuda=*/true);
      }
    }
    fail(k, "node " + std::to_string(id) + " has an unknown kind");
  }

  void emit_node(int id, const std::string& indent, bool vector_lanes) {
    out << indent << "const " << compute_type(k.nodes[id].dtype) << " n" << id << " = "
        << node_expr(id, vector_lanes) << ";\n";
  }

  // Ids of the nodes `roots` need, ascending (arguments first).
  std::vector<int> closure(const std::vector<int>& roots) const {
    std::vector<char> need(k.nodes.size(), 0);
    std::vector<int> stack = roots;
    while (!stack.empty()) {
      int id = stack.back();
      stack.pop_back();
      if (id < 0 || need[id]) continue;
      need[id] = 1;
      for (int a : k.nodes[id].args) stack.push_back(a);
    }
    std::vector<int> ids;
    for (size_t i = 0; i < need.size(); ++i)
      if (need[i]) ids.push_back(static_cast<int>(i));
    return ids;
  }

  bool depends_on_tile(int id) const { return (masks[id] >> tile_var) & 1u; }

  std::string store_text(const Store& s, bool vector_lanes, int store_no) const {
    const DType d = k.outputs.at(s.output).dtype;
    std::string value = to_storage(d, "n" + std::to_string(s.value));
    if (vector_lanes && store_base[store_no]) return "sv" + std::to_string(store_no) + ".v[j] = " + value + ";";
    return buf(s.output, true) + "[" + c(s.index) + "] = " + value + ";";
  }

  // One tile of W elements of the tile variable starting at `c`: the nodes
  // `lane_nodes` per lane, folded into `accs` (reduction ids) and stored by
  // `stores` (store ids). Vector accesses when the tile is whole and aligned.
  void emit_tile(const std::vector<int>& lane_nodes, const std::vector<int>& accs,
                 const std::vector<int>& stores, const std::string& extent, const std::string& ind) {
    const std::string v = "v" + std::to_string(tile_var);
    // The vector condition: whole tile, every contiguous access's base a multiple of W.
    std::string cond = "c + " + std::to_string(vec) + " <= " + extent;
    std::vector<int> vloads, vstores;
    for (int id : lane_nodes)
      if (k.nodes[id].kind == NodeKind::load && load_base[id]) vloads.push_back(id);
    for (int s : stores)
      if (store_base[s]) vstores.push_back(s);
    std::vector<std::string> bases;  // distinct bases not known to be multiples of W
    auto check_base = [&](const Expr& base) {
      const Expr b = simplify(base, ctx);
      if (b.is_constant() && b.value() % vec == 0) return;
      const std::string text = c(b);
      if (std::find(bases.begin(), bases.end(), text) == bases.end()) bases.push_back(text);
    };
    for (int id : vloads) check_base(*load_base[id]);
    for (int s : vstores) check_base(*store_base[s]);
    for (const std::string& b : bases) cond += " && (" + b + ") % " + std::to_string(vec) + " == 0";
    const bool any_vector = !vloads.empty() || !vstores.empty();
    auto body = [&](bool vector_lanes, const std::string& in) {
      out << in << "const long long " << v << " = c + j;\n" << in << "(void)" << v << ";\n";
      if (!vector_lanes) out << in << "if (" << v << " >= " << extent << ") break;\n";
      for (int id : lane_nodes) emit_node(id, in, vector_lanes);
      for (int r : accs)
        out << in << "acc" << r << " = " << op_functor(k.reductions[r].op) << "()(acc" << r << ", n"
            << k.reductions[r].value << ");\n";
      for (int s : stores) out << in << store_text(k.stores[s], vector_lanes, s) << "\n";
    };
    if (any_vector) {
      out << ind << "if (ptr_ok && " << cond << ") {\n";
      const std::string in2 = ind + "  ";
      for (int id : vloads) {
        const Node& n = k.nodes[id];
        const std::string st = storage_type(input(n.buffer).dtype);
        out << in2 << "const VecT<" << st << ", " << vec << "> nv" << id << " = *reinterpret_cast<const VecT<"
            << st << ", " << vec << ">*>(" << buf(n.buffer, false) << " + (" << c(*load_base[id]) << ") + c);\n";
      }
      for (int s : vstores)
        out << in2 << "VecT<" << storage_type(k.outputs[k.stores[s].output].dtype) << ", " << vec << "> sv"
            << s << ";\n";
      out << in2 << "#pragma unroll\n" << in2 << "for (int j = 0; j < " << vec << "; ++j) {\n";
      body(true, in2 + "  ");
      out << in2 << "}\n";
      for (int s : vstores) {
        const std::string st = storage_type(k.outputs[k.stores[s].output].dtype);
        out << in2 << "*reinterpret_cast<VecT<" << st << ", " << vec << ">*>(" << buf(k.stores[s].output, true)
            << " + (" << c(*store_base[s]) << ") + c) = sv" << s << ";\n";
      }
      out << ind << "} else {\n";
    } else {
      out << ind << "{\n";
    }
    out << ind << "  for (int j = 0; j < " << vec << "; ++j) {\n";
    body(false, ind + "    ");
    out << ind << "  }\n" << ind << "}\n";
  }

  void emit_signature(const std::string& symbol) {
    out << "extern \"C\" __global__ void __launch_bounds__(1024) " << symbol << "(";
    std::vector<std::string> params;
    for (size_t i = 0; i < k.inputs.size(); ++i)
      params.push_back("const " + storage_type(k.inputs[i].dtype) + "* __restrict__ " + buf(static_cast<int>(i), false));
    for (size_t i = 0; i < k.outputs.size(); ++i)
      params.push_back(storage_type(k.outputs[i].dtype) + "* __restrict__ " + buf(static_cast<int>(i), true));
    for (size_t i = 0; i < k.dims.size(); ++i) params.push_back("long long d" + std::to_string(i));
    for (size_t i = 0; i < params.size(); ++i) out << (i ? ",\n    " : "") << params[i];
    out << ") {\n";
    // Vector accesses need each pointer aligned to its VecT.
    out << "  const bool ptr_ok = true";
    for (size_t i = 0; i < k.inputs.size() + k.outputs.size(); ++i) {
      const DType d = i < k.inputs.size() ? k.inputs[i].dtype : k.outputs[i - k.inputs.size()].dtype;
      out << " && ((unsigned long long)b" << i << " % (sizeof(" << storage_type(d) << ") * " << vec << ")) == 0";
    }
    out << ";\n";
  }

  void emit_elementwise() {
    std::vector<Expr> dom = k.domain.empty() ? std::vector<Expr>{Expr(1)} : k.domain;
    const int n = static_cast<int>(dom.size());
    for (int i = 0; i < n; ++i) out << "  const long long E" << i << " = " << c(dom[i]) << ";\n";
    out << "  const long long outer = 1";
    for (int i = 0; i + 1 < n; ++i) out << " * E" << i;
    out << ";\n  const long long per_row = (E" << n - 1 << " + " << vec - 1 << ") / " << vec << ";\n"
        << "  const long long tiles = outer * per_row;\n"
        << "  for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < tiles;"
           " t += (long long)gridDim.x * blockDim.x) {\n"
        << "    long long o = t / per_row;\n"
        << "    const long long c = (t - o * per_row) * " << vec << ";\n";
    for (int i = n - 2; i >= 0; --i) {
      if (i > 0)
        out << "    const long long v" << i << " = o % E" << i << "; o /= E" << i << ";\n";
      else
        out << "    const long long v0 = o;\n";
    }
    std::vector<int> roots, stores;
    for (size_t s = 0; s < k.stores.size(); ++s) {
      roots.push_back(k.stores[s].value);
      stores.push_back(static_cast<int>(s));
    }
    emit_tile(closure(roots), {}, stores, "E" + std::to_string(n - 1), "    ");
    out << "  }\n";
  }

  // row_reduce (cooperative: a block per row over v0, tiles of v1 over the
  // threads) or col_reduce (a thread per column v1, serial over v0).
  void emit_reduce(bool cooperative) {
    // The inner (folded) variable is the tile variable: v1 for row_reduce, v0 for col_reduce.
    out << "  const long long rows = " << c(k.domain.at(0)) << ", cols = " << c(k.domain.at(1)) << ";\n";
    const std::string inner_extent = cooperative ? "cols" : "rows";
    if (cooperative)
      for (size_t r = 0; r < k.reductions.size(); ++r)
        out << "  __shared__ " << compute_type(k.reductions[r].dtype) << " smem" << r << "[33];\n";
    if (cooperative)
      out << "  for (long long v0 = blockIdx.x; v0 < rows; v0 += gridDim.x) {\n";
    else
      out << "  for (long long v1 = blockIdx.x * (long long)blockDim.x + threadIdx.x; v1 < cols;"
             " v1 += (long long)gridDim.x * blockDim.x) {\n";
    std::vector<char> emitted(k.nodes.size(), 0);
    auto emit_outer_nodes = [&](const std::vector<int>& ids) {
      for (int id : ids)
        if (!depends_on_tile(id) && !emitted[id]) {
          emit_node(id, "    ", false);
          emitted[id] = 1;
        }
    };
    auto inner_nodes = [&](const std::vector<int>& ids) {
      std::vector<int> in;
      for (int id : ids)
        if (depends_on_tile(id)) in.push_back(id);
      return in;
    };
    // Passes: a reduction runs one pass after the latest one it uses.
    const std::vector<uint32_t> deps = reduction_deps(k);
    std::vector<int> pass(k.reductions.size(), 0);
    int passes = 0;
    for (size_t r = 0; r < k.reductions.size(); ++r) {
      for (size_t q = 0; q < r; ++q)
        if ((deps[r] >> q) & 1u) pass[r] = std::max(pass[r], pass[q] + 1);
      passes = std::max(passes, pass[r] + 1);
    }
    for (int p = 0; p < passes; ++p) {
      std::vector<int> accs, roots;
      for (size_t r = 0; r < k.reductions.size(); ++r)
        if (pass[r] == p) {
          accs.push_back(static_cast<int>(r));
          roots.push_back(k.reductions[r].value);
        }
      const std::vector<int> ids = closure(roots);
      emit_outer_nodes(ids);
      for (int r : accs)
        out << "    " << compute_type(k.reductions[r].dtype) << " acc" << r << " = "
            << identity(k.reductions[r].op, k.reductions[r].dtype) << ";\n";
      emit_inner_loop(cooperative, inner_nodes(ids), accs, {}, inner_extent);
      for (int r : accs) {
        const std::string t = compute_type(k.reductions[r].dtype);
        if (cooperative)
          out << "    const " << t << " red" << r << " = oar_block_reduce<" << t << ">(acc" << r << ", smem" << r
              << ", " << op_functor(k.reductions[r].op) << "(), " << identity(k.reductions[r].op, k.reductions[r].dtype)
              << ");\n";
        else
          out << "    const " << t << " red" << r << " = acc" << r << ";\n";
      }
    }
    // Stores once per outer index (thread 0 of the block), then the epilogue.
    std::vector<int> outer_stores, inner_stores, outer_roots, inner_roots;
    for (size_t s = 0; s < k.stores.size(); ++s) {
      const Store& st = k.stores[s];
      const bool inner = depends_on_tile(st.value) || uses_var(st.index, tile_var);
      (inner ? inner_stores : outer_stores).push_back(static_cast<int>(s));
      (inner ? inner_roots : outer_roots).push_back(st.value);
    }
    if (!outer_stores.empty()) {
      emit_outer_nodes(closure(outer_roots));
      out << "    if (" << (cooperative ? "threadIdx.x == 0" : "true") << ") {\n";
      for (int s : outer_stores) out << "      " << store_text(k.stores[s], false, s) << "\n";
      out << "    }\n";
    }
    if (!inner_stores.empty()) {
      const std::vector<int> ids = closure(inner_roots);
      emit_outer_nodes(ids);
      emit_inner_loop(cooperative, inner_nodes(ids), {}, inner_stores, inner_extent);
    }
    out << "  }\n";
  }

  void emit_inner_loop(bool cooperative, const std::vector<int>& ids, const std::vector<int>& accs,
                       const std::vector<int>& stores, const std::string& extent) {
    if (cooperative) {
      out << "    for (long long c = (long long)threadIdx.x * " << vec << "; c < " << extent
          << "; c += (long long)blockDim.x * " << vec << ") {\n";
      emit_tile(ids, accs, stores, extent, "      ");
      out << "    }\n";
      return;
    }
    out << "    for (long long v0 = 0; v0 < " << extent << "; ++v0) {\n";
    for (int id : ids) emit_node(id, "      ", false);
    for (int r : accs)
      out << "      acc" << r << " = " << op_functor(k.reductions[r].op) << "()(acc" << r << ", n"
          << k.reductions[r].value << ");\n";
    for (int s : stores) out << "      " << store_text(k.stores[s], false, s) << "\n";
    out << "    }\n";
  }
};

}  // namespace

int cuda_vector_width(const Kernel& kernel) {
  size_t smallest = 8;
  for (const auto* list : {&kernel.inputs, &kernel.outputs})
    for (const Buffer& b : *list) smallest = std::min(smallest, dtype_size(b.dtype));
  return static_cast<int>(std::min<size_t>(8, 16 / std::max<size_t>(smallest, 1)));
}

std::string emit_cuda(const Kernel& kernel, const std::string& symbol) {
  if (std::string bad = verify_kernel(kernel); !bad.empty()) fail(kernel, "invalid kernel: " + bad);
  for (const auto* list : {&kernel.inputs, &kernel.outputs})
    for (const Buffer& b : *list)
      if (storage_type(b.dtype).empty())
        fail(kernel, "buffer " + b.name + " has dtype " + std::string(dtype_name(b.dtype)) +
                         ", which the CUDA backend does not support");
  const bool reduce = kernel.kind != ScheduleKind::elementwise;
  if (reduce && kernel.domain.size() != 2)
    fail(kernel, "a reduce schedule needs a domain of rank 2, found rank " + std::to_string(kernel.domain.size()));
  // The tile variable: the innermost var (elementwise), the cols (row_reduce);
  // col_reduce walks columns per thread, so nothing is tiled (W lanes of one
  // thread would be W columns: not expressed, it runs scalar).
  const int tile = kernel.kind == ScheduleKind::elementwise
                       ? std::max(0, static_cast<int>(kernel.domain.size()) - 1)
                       : (kernel.kind == ScheduleKind::row_reduce ? 1 : 0);
  Emitter e(kernel, tile);
  e.out << kPrelude << "\n// kernel " << kernel.name << "\n";
  e.emit_signature(symbol);
  switch (kernel.kind) {
    case ScheduleKind::elementwise: e.emit_elementwise(); break;
    case ScheduleKind::row_reduce: e.emit_reduce(true); break;
    case ScheduleKind::col_reduce: e.emit_reduce(false); break;
  }
  e.out << "}\n";
  return e.out.str();
}

int cuda_check_dims(const Kernel& kernel, std::span<const int64_t> dims) {
  for (const DimCheck& check : kernel.dim_checks)
    if (evaluate(check.a, dims) != evaluate(check.b, dims)) return kKernelShapeMismatch;
  return kKernelOk;
}

CudaLaunch cuda_launch_config(const Kernel& kernel, std::span<const int64_t> dims) {
  const int64_t vec = cuda_vector_width(kernel);
  constexpr int64_t kMaxGrid = int64_t{1} << 20;  // the loops stride over the rest
  CudaLaunch launch;
  auto blocks = [&](int64_t work, int64_t threads) {
    return static_cast<unsigned>(std::clamp<int64_t>((work + threads - 1) / threads, 0, kMaxGrid));
  };
  if (kernel.kind == ScheduleKind::elementwise) {
    int64_t outer = 1, last = 1;
    for (size_t i = 0; i < kernel.domain.size(); ++i)
      (i + 1 == kernel.domain.size() ? last : outer) *= evaluate(kernel.domain[i], dims);
    const int64_t tiles = outer * ((last + vec - 1) / vec);
    launch.block = 256;
    launch.grid = blocks(tiles, 256);
    return launch;
  }
  const int64_t rows = evaluate(kernel.domain.at(0), dims), cols = evaluate(kernel.domain.at(1), dims);
  if (kernel.kind == ScheduleKind::col_reduce) {
    launch.block = 128;
    launch.grid = blocks(cols, 128);
    return launch;
  }
  // Size bucket: about two tiles per thread, 32..512 threads.
  const int64_t want = (cols + 2 * vec - 1) / (2 * vec);
  int64_t threads = 32;
  while (threads < want && threads < 512) threads *= 2;
  launch.block = static_cast<unsigned>(threads);
  launch.grid = static_cast<unsigned>(std::clamp<int64_t>(rows, 0, kMaxGrid));
  return launch;
}

}  // namespace oar::compiler
