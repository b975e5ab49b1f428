/// \file loop_ir.h
/// The compiler's loop IR: index expressions over symbolic dims (Expr) with
/// a simplifier, and a Kernel — one fused group as a schedule kind, a loop
/// domain, and a scalar expression DAG of loads, math and reductions with
/// the stores of its outputs. lower_group builds a Kernel from a group's
/// sub-program; emit_cpu (and emit_cuda, codegen_cuda.cpp) turn it into
/// source.
///
/// Note [Loop IR in one picture]
/// A kernel iterates a domain of loop variables v0..v{n-1}, variable i over
/// [0, domain[i]). Each domain extent and each buffer dim is an Expr over
/// the kernel's dim symbols d0..d{m-1}: dynamic dims whose values the
/// caller reads from an input's shape at run time (DimSymbol), so one
/// kernel serves every size. The body is a DAG of Nodes (kernel.nodes, in
/// an order where arguments come first): a load reads an input at a flat
/// (row-major, contiguous) index Expr over the loop variables; math nodes
/// apply an IR op by name; a `reduced` node is the result of a Reduction
/// of the same kernel. Stores write a node to an output at an index Expr.
///  - elementwise: every loop variable is parallel; codegen flattens the
///    outer ones (OpenMP) and vectorizes the last.
///  - row_reduce: domain [rows, cols]; each Reduction folds its value node
///    over v1 (the cols) for each v0 (the row); nodes that depend on v1
///    after the reductions are the per-element epilogue, nodes and stores
///    that do not depend on v1 run once per row. Reduction k may use the
///    results of reductions before it (softmax: the sum of exp(x - max);
///    layer_norm: the variance around the mean): a reduction that uses an
///    earlier one needs a pass over the row of its own.
///  - col_reduce: domain [rows, cols]; each Reduction folds over v0 for
///    each v1 (the bias gradient); stores not depending on v0. Declared
///    only: lower_group does not make it yet and emit_cpu refuses it.
/// Which variables a node depends on is node_var_masks(); a reduced node
/// depends on the variables the reduction is not over.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "oar/dtype.h"

namespace oar::ir {
class Program;
}

namespace oar::compiler {

// ---------------------------------------------------------------------------
// Index expressions
// ---------------------------------------------------------------------------

/// What an Expr node is. Integer arithmetic on int64; floordiv and mod round
/// toward negative infinity (Python's // and %; on the non-negative values
/// indices take they equal C's / and %). Comparisons give 0 or 1.
enum class ExprKind : uint8_t {
  constant,  ///< value
  dim,       ///< dim symbol d<index>
  var,       ///< loop variable v<index>
  add,       ///< args[0] + args[1]
  sub,       ///< args[0] - args[1]
  mul,       ///< args[0] * args[1]
  floordiv,  ///< args[0] floordiv args[1] (args[1] > 0)
  mod,       ///< args[0] mod args[1] (args[1] > 0)
  min,       ///< min(args[0], args[1])
  max,       ///< max(args[0], args[1])
  lt,        ///< args[0] < args[1]
  le,        ///< args[0] <= args[1]
  eq,        ///< args[0] == args[1]
  ne,        ///< args[0] != args[1]
  select,    ///< args[0] != 0 ? args[1] : args[2]
};

struct ExprNode;

/// An immutable index expression (a shared, pointer-sized handle; copies
/// are cheap). A default-constructed Expr is null (is_null()); every
/// function below wants non-null arguments.
class Expr {
 public:
  Expr() = default;
  /// The constant `value` (implicit, so `x + 1` reads naturally).
  Expr(int64_t value);  // NOLINT(google-explicit-constructor)
  Expr(int value) : Expr(static_cast<int64_t>(value)) {}  // NOLINT(google-explicit-constructor)
  explicit Expr(std::shared_ptr<const ExprNode> node) : node_(std::move(node)) {}

  bool is_null() const { return node_ == nullptr; }
  ExprKind kind() const;
  /// The constant's value, or the dim's / var's index.
  int64_t value() const;
  /// The operands (empty for constant, dim, var).
  const std::vector<Expr>& args() const;
  /// True for a constant (equal to `v` when given).
  bool is_constant() const;
  bool is_constant(int64_t v) const;
  const ExprNode* node() const { return node_.get(); }

 private:
  std::shared_ptr<const ExprNode> node_;
};

/// The node behind an Expr.
struct ExprNode {
  ExprKind kind = ExprKind::constant;
  int64_t value = 0;       ///< constant value, or the dim / var index
  std::vector<Expr> args;  ///< operands
};

/// Leaf constructors.
Expr dim_expr(int index);
Expr var_expr(int index);
/// A node of `kind` on `args` as given (no simplification).
Expr make_expr(ExprKind kind, std::vector<Expr> args);

/// Arithmetic building the node as written; call simplify() to fold it.
Expr operator+(const Expr& a, const Expr& b);
Expr operator-(const Expr& a, const Expr& b);
Expr operator*(const Expr& a, const Expr& b);
Expr floordiv(const Expr& a, const Expr& b);
Expr mod(const Expr& a, const Expr& b);
Expr min_expr(const Expr& a, const Expr& b);
Expr max_expr(const Expr& a, const Expr& b);
Expr select(const Expr& cond, const Expr& a, const Expr& b);
Expr compare(ExprKind kind, const Expr& a, const Expr& b);  ///< kind: lt, le, eq, ne

/// Structural equality and a hash agreeing with it (for memo tables and
/// common-subexpression elimination).
bool same_expr(const Expr& a, const Expr& b);
size_t hash_expr(const Expr& e);
struct ExprHash {
  size_t operator()(const Expr& e) const { return hash_expr(e); }
};
struct ExprEqual {
  bool operator()(const Expr& a, const Expr& b) const { return same_expr(a, b); }
};

/// True when `e` reads loop variable `var` (any: var < 0) / dim symbol `dim`.
bool uses_var(const Expr& e, int var = -1);
bool uses_dim(const Expr& e, int dim = -1);

/// The value of `e` given dim symbol values and loop variable values (for
/// tests and run-time checks). Throws oar::Error on a division by a
/// non-positive value or an index out of range.
int64_t evaluate(const Expr& e, std::span<const int64_t> dims, std::span<const int64_t> vars = {});

/// Text form, "(v0 * 768) + v1", "d0 floordiv 4" (for logs and tests).
std::string to_string(const Expr& e);

/// C expression text (int64_t arithmetic, valid C++17 and CUDA C): dims and
/// vars are named by the callbacks, floordiv/mod print as / and %, which is
/// right for the non-negative values indices take.
std::string to_c(const Expr& e, const std::function<std::string(int)>& dim_name,
                 const std::function<std::string(int)>& var_name);

/// What the simplifier may assume: loop variable i lies in
/// [0, var_extents[i]) (an extent may be null: unknown), and every dim
/// symbol is >= 0 (>= 1 when dims_positive).
struct SimplifyContext {
  std::vector<Expr> var_extents;
  bool dims_positive = false;
};

/// Folds `e`: constant folding, x*1, x*0, x+0, x-x, reassociates sums and
/// products into a canonical order (so equal expressions print equally and
/// common subexpressions are found), (a*n + b) floordiv n -> a and
/// (a*n + b) mod n -> b when 0 <= b < n is known, x mod n -> x and
/// x floordiv n -> 0 when 0 <= x < n is known, (x floordiv n)*n + x mod n
/// -> x, min/max/compare of provably ordered operands, select of a known
/// condition. Never changes the value for any dims and vars the context
/// allows.
Expr simplify(const Expr& e, const SimplifyContext& ctx = {});

/// Lower and upper bounds of `e` when they are provable constants
/// (nullopt: unknown), under `ctx`.
std::optional<int64_t> lower_bound(const Expr& e, const SimplifyContext& ctx = {});
std::optional<int64_t> upper_bound(const Expr& e, const SimplifyContext& ctx = {});
/// True when 0 <= e < n is provable under `ctx` (n may be symbolic: v < n
/// holds for a variable of extent n).
bool provably_in_range(const Expr& e, const Expr& n, const SimplifyContext& ctx = {});

// ---------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------

/// A dynamic dim's value, read by the caller from inputs[input].shape[axis]
/// and passed as dims[i] for symbol d<i>.
struct DimSymbol {
  int input = 0;
  int axis = 0;
};

/// A kernel argument: a contiguous row-major tensor.
struct Buffer {
  std::string name;          ///< for generated source and logs ("x", "out0")
  DType dtype = DType::f32;  ///< as stored (bf16/f16 are converted by bits)
  std::vector<Expr> shape;   ///< over the dim symbols
};

/// How the domain is iterated (Note [Loop IR in one picture]).
enum class ScheduleKind : uint8_t { elementwise, row_reduce, col_reduce };

/// What a Node is.
enum class NodeKind : uint8_t {
  load,      ///< inputs[buffer] at `index`
  constant,  ///< `value`
  index,     ///< the int value of `index` (e.g. a reduced count), as dtype
  unary,     ///< op(args[0]); op: an IR op name (exp, log, rsqrt, neg, ...)
  binary,    ///< op(args[0], args[1]) (add, sub, mul, div, pow, maximum, less, ...)
  ternary,   ///< op(args[0], args[1], args[2]) (where: cond, a, b)
  cast,      ///< args[0] converted to `dtype`
  reduced,   ///< the result of reductions[reduction]
};

/// One scalar value of the body. `dtype` is the IR value's dtype; nodes of
/// f16/bf16 are computed in f32 (compute_dtype) and rounded only where a
/// store writes them.
struct Node {
  NodeKind kind = NodeKind::constant;
  DType dtype = DType::f32;
  std::string op;         ///< unary, binary, ternary: the IR op name
  std::vector<int> args;  ///< node ids, all smaller than this node's
  int buffer = -1;        ///< load: the input
  Expr index;             ///< load: flat element index; index: the value
  double value = 0;       ///< constant
  int reduction = -1;     ///< reduced: index into Kernel::reductions
};

/// The reductions a kernel can do.
enum class ReduceOp : uint8_t { sum, max, min, prod };

/// A fold of node `value` over the reduced loop variable, in `dtype`
/// (accumulated in compute_dtype(dtype): f32 for f16/bf16/f32).
struct Reduction {
  ReduceOp op = ReduceOp::sum;
  int value = -1;  ///< node id
  DType dtype = DType::f32;
};

/// outputs[output][index] = node `value` (converted to the output's dtype).
struct Store {
  int output = 0;
  int value = -1;  ///< node id
  Expr index;
};

/// A runtime condition on the dims: `a == b` must hold, else the kernel
/// returns kKernelShapeMismatch and the caller runs the group unfused (a
/// dynamic dim that broadcasts at run time, say).
struct DimCheck {
  Expr a;
  Expr b;
};

/// One fused group, ready for code generation.
struct Kernel {
  std::string name;                  ///< the group's name ("g3_reduce_rms")
  ScheduleKind kind = ScheduleKind::elementwise;
  std::vector<DimSymbol> dims;       ///< d0, d1, ...
  std::vector<DimCheck> dim_checks;  ///< checked before any work
  std::vector<Buffer> inputs;        ///< buffers[0 .. inputs)
  std::vector<Buffer> outputs;       ///< buffers[inputs ..)
  std::vector<Expr> domain;          ///< loop extents; row_reduce/col_reduce: [rows, cols]
  std::vector<Node> nodes;           ///< the body, arguments first
  std::vector<Reduction> reductions; ///< in dependency order
  std::vector<Store> stores;

  /// The context for simplify(): var i in [0, domain[i]).
  SimplifyContext simplify_context() const;
};

/// Codes a generated kernel returns.
inline constexpr int kKernelOk = 0;
/// A DimCheck failed: run the group unfused.
inline constexpr int kKernelShapeMismatch = 1;
/// A buffer or dims pointer was null.
inline constexpr int kKernelBadArgument = 2;

/// The type a dtype computes in: f16/bf16 -> f32; others themselves.
DType compute_dtype(DType dtype);

/// For each node, a bit mask of the loop variables it depends on (bit i:
/// v<i>), through its loads' and index nodes' Exprs and its arguments; a
/// reduced node depends on the variables its reduction is not over.
std::vector<uint32_t> node_var_masks(const Kernel& kernel);
/// For each reduction, the mask of the reductions (bit j: reductions[j])
/// its value node depends on, directly or through other nodes.
std::vector<uint32_t> reduction_deps(const Kernel& kernel);

/// Checks the invariants (node ids in order, loads of inputs, stores of
/// outputs, reductions only in reduce schedules, domain rank 2 for them,
/// every output stored); returns "" or a sentence naming what is wrong.
std::string verify_kernel(const Kernel& kernel);

/// Text of a kernel (schedule, dims, buffers, domain, nodes, reductions,
/// stores), stable for tests and OAR_COMPILER_LOG.
std::string to_string(const Kernel& kernel);

// ---------------------------------------------------------------------------
// Lowering and CPU code generation
// ---------------------------------------------------------------------------

/// Lowers a group's sub-program (its inputs are the kernel's inputs, its
/// outputs the kernel's outputs, in order) to a Kernel, or returns nullopt
/// with a sentence in *why_not (when given) naming the op and the reason
/// (an op without a scalar form, a reduction over non-trailing axes, two
/// reductions over different rows, ...). The Exprs come out simplified.
std::optional<Kernel> lower_group(const ir::Program& sub, std::string* why_not);

/// C++17 source defining
///   extern "C" int <symbol>(void* const* buffers, const int64_t* dims, int num_threads);
/// buffers: the inputs then the outputs (contiguous, row-major, allocated by
/// the caller with the shapes the Exprs give); dims: the values of
/// Kernel::dims in order; num_threads: the OpenMP threads to use (<= 0: the
/// OpenMP default). Returns kKernelOk or an error code above. OpenMP over
/// the rows (flattened outer loops), `#pragma omp simd` inner loops over
/// contiguous data, f16/bf16 converted by bit operations (round to nearest
/// even on store), accumulation in f32 (f64 for f64); schedules chosen by
/// size at run time (no parallel region for tiny work; row length buckets),
/// so a new size never needs a new compile. Compile with
/// `-O3 -march=native -fopenmp -std=c++17 -fno-math-errno -fno-trapping-math
/// -ffp-contract=off` (no -ffast-math; ToolchainConfig says why).
std::string emit_cpu(const Kernel& kernel, const std::string& symbol);

/// The C++/CUDA text of a scalar op on argument texts already in
/// compute_dtype(dtype) of the node (`dtype`: the node's dtype; for
/// comparisons and where, the operands' compute type is `operand_dtype`).
/// Shared by emit_cpu and emit_cuda so both compute the same thing; throws
/// oar::Error naming an op it does not know. `cuda` picks the target: on
/// the CPU f32 exp, tanh and erf are the emit_cpu prelude's vectorizable
/// oar_expf / oar_tanhf / oar_erff (within 5.1e-7 relative of libm); CUDA
/// gets expf, tanhf, erff (never __expf or rsqrtf: results must match).
std::string scalar_op_c(const std::string& op, DType dtype, DType operand_dtype,
                        const std::vector<std::string>& args, bool cuda);
/// True when scalar_op_c knows `op` with `arity` arguments.
bool has_scalar_op(const std::string& op, int arity);

}  // namespace oar::compiler
