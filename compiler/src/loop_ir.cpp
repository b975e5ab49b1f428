// The loop IR's data structures: Expr nodes, structural equality and hash,
// evaluation, printing (text and C), and the Kernel's analyses (variable
// masks, reduction dependencies, verification, text form).
#include <sstream>

#include "oar/error.h"
#include "oar_compiler/loop_ir.h"

namespace oar::compiler {

namespace {

const std::vector<Expr> kNoArgs;

std::shared_ptr<const ExprNode> new_node(ExprKind kind, int64_t value, std::vector<Expr> args) {
  auto n = std::make_shared<ExprNode>();
  n->kind = kind;
  n->value = value;
  n->args = std::move(args);
  return n;
}

Expr node(ExprKind kind, int64_t value, std::vector<Expr> args) { return Expr(new_node(kind, value, std::move(args))); }

const char* op_text(ExprKind kind) {
  switch (kind) {
    case ExprKind::add: return "+";
    case ExprKind::sub: return "-";
    case ExprKind::mul: return "*";
    case ExprKind::floordiv: return "floordiv";
    case ExprKind::mod: return "mod";
    case ExprKind::lt: return "<";
    case ExprKind::le: return "<=";
    case ExprKind::eq: return "==";
    case ExprKind::ne: return "!=";
    default: return "?";
  }
}

int64_t floordiv_value(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace

Expr::Expr(int64_t value) : node_(new_node(ExprKind::constant, value, {})) {}

ExprKind Expr::kind() const { return node_->kind; }
int64_t Expr::value() const { return node_->value; }
const std::vector<Expr>& Expr::args() const { return node_ ? node_->args : kNoArgs; }
bool Expr::is_constant() const { return node_ && node_->kind == ExprKind::constant; }
bool Expr::is_constant(int64_t v) const { return is_constant() && node_->value == v; }

Expr dim_expr(int index) { return node(ExprKind::dim, index, {}); }
Expr var_expr(int index) { return node(ExprKind::var, index, {}); }
Expr make_expr(ExprKind kind, std::vector<Expr> args) { return node(kind, 0, std::move(args)); }

Expr operator+(const Expr& a, const Expr& b) { return make_expr(ExprKind::add, {a, b}); }
Expr operator-(const Expr& a, const Expr& b) { return make_expr(ExprKind::sub, {a, b}); }
Expr operator*(const Expr& a, const Expr& b) { return make_expr(ExprKind::mul, {a, b}); }
Expr floordiv(const Expr& a, const Expr& b) { return make_expr(ExprKind::floordiv, {a, b}); }
Expr mod(const Expr& a, const Expr& b) { return make_expr(ExprKind::mod, {a, b}); }
Expr min_expr(const Expr& a, const Expr& b) { return make_expr(ExprKind::min, {a, b}); }
Expr max_expr(const Expr& a, const Expr& b) { return make_expr(ExprKind::max, {a, b}); }
Expr select(const Expr& cond, const Expr& a, const Expr& b) { return make_expr(ExprKind::select, {cond, a, b}); }
Expr compare(ExprKind kind, const Expr& a, const Expr& b) {
  OAR_CHECK_ARG(kind == ExprKind::lt || kind == ExprKind::le || kind == ExprKind::eq || kind == ExprKind::ne,
                "loop IR: compare wants lt, le, eq or ne");
  return make_expr(kind, {a, b});
}

bool same_expr(const Expr& a, const Expr& b) {
  if (a.node() == b.node()) return true;
  if (a.is_null() || b.is_null()) return false;
  if (a.kind() != b.kind() || a.value() != b.value() || a.args().size() != b.args().size()) return false;
  for (size_t i = 0; i < a.args().size(); ++i) {
    if (!same_expr(a.args()[i], b.args()[i])) return false;
  }
  return true;
}

size_t hash_expr(const Expr& e) {
  if (e.is_null()) return 0;
  size_t h = std::hash<int64_t>()(e.value()) * 31 + static_cast<size_t>(e.kind()) + 0x9e3779b9;
  for (const Expr& a : e.args()) h = h * 1000003u ^ hash_expr(a);
  return h;
}

bool uses_var(const Expr& e, int var) {
  if (e.is_null()) return false;
  if (e.kind() == ExprKind::var) return var < 0 || e.value() == var;
  for (const Expr& a : e.args()) {
    if (uses_var(a, var)) return true;
  }
  return false;
}

bool uses_dim(const Expr& e, int dim) {
  if (e.is_null()) return false;
  if (e.kind() == ExprKind::dim) return dim < 0 || e.value() == dim;
  for (const Expr& a : e.args()) {
    if (uses_dim(a, dim)) return true;
  }
  return false;
}

int64_t evaluate(const Expr& e, std::span<const int64_t> dims, std::span<const int64_t> vars) {
  OAR_CHECK_ARG(!e.is_null(), "loop IR: evaluate of a null expression");
  auto arg = [&](size_t i) { return evaluate(e.args()[i], dims, vars); };
  switch (e.kind()) {
    case ExprKind::constant: return e.value();
    case ExprKind::dim:
      OAR_CHECK_ARG(e.value() >= 0 && static_cast<size_t>(e.value()) < dims.size(),
                    "loop IR: evaluate: d" + std::to_string(e.value()) + " has no value (" +
                        std::to_string(dims.size()) + " dims given)");
      return dims[static_cast<size_t>(e.value())];
    case ExprKind::var:
      OAR_CHECK_ARG(e.value() >= 0 && static_cast<size_t>(e.value()) < vars.size(),
                    "loop IR: evaluate: v" + std::to_string(e.value()) + " has no value (" +
                        std::to_string(vars.size()) + " vars given)");
      return vars[static_cast<size_t>(e.value())];
    case ExprKind::add: return arg(0) + arg(1);
    case ExprKind::sub: return arg(0) - arg(1);
    case ExprKind::mul: return arg(0) * arg(1);
    case ExprKind::floordiv:
    case ExprKind::mod: {
      int64_t a = arg(0), b = arg(1);
      OAR_CHECK_ARG(b > 0, "loop IR: evaluate: " + to_string(e) + " divides by " + std::to_string(b));
      int64_t q = floordiv_value(a, b);
      return e.kind() == ExprKind::floordiv ? q : a - q * b;
    }
    case ExprKind::min: return std::min(arg(0), arg(1));
    case ExprKind::max: return std::max(arg(0), arg(1));
    case ExprKind::lt: return arg(0) < arg(1);
    case ExprKind::le: return arg(0) <= arg(1);
    case ExprKind::eq: return arg(0) == arg(1);
    case ExprKind::ne: return arg(0) != arg(1);
    case ExprKind::select: return arg(0) != 0 ? arg(1) : arg(2);
  }
  return 0;
}

namespace {

std::string print(const Expr& e, const std::function<std::string(int)>& dim_name,
                  const std::function<std::string(int)>& var_name, bool c) {
  if (e.is_null()) return "<null>";
  auto arg = [&](size_t i) { return print(e.args()[i], dim_name, var_name, c); };
  switch (e.kind()) {
    case ExprKind::constant:
      return c ? "INT64_C(" + std::to_string(e.value()) + ")" : std::to_string(e.value());
    case ExprKind::dim: return dim_name(static_cast<int>(e.value()));
    case ExprKind::var: return var_name(static_cast<int>(e.value()));
    case ExprKind::min:
      return c ? "(" + arg(0) + " < " + arg(1) + " ? " + arg(0) + " : " + arg(1) + ")"
               : "min(" + arg(0) + ", " + arg(1) + ")";
    case ExprKind::max:
      return c ? "(" + arg(0) + " > " + arg(1) + " ? " + arg(0) + " : " + arg(1) + ")"
               : "max(" + arg(0) + ", " + arg(1) + ")";
    case ExprKind::select: return "(" + arg(0) + " ? " + arg(1) + " : " + arg(2) + ")";
    case ExprKind::floordiv:
      if (c) return "(" + arg(0) + " / " + arg(1) + ")";
      break;
    case ExprKind::mod:
      if (c) return "(" + arg(0) + " % " + arg(1) + ")";
      break;
    case ExprKind::lt:
    case ExprKind::le:
    case ExprKind::eq:
    case ExprKind::ne:
      if (c) return "(int64_t)(" + arg(0) + " " + op_text(e.kind()) + " " + arg(1) + ")";
      break;
    default: break;
  }
  return "(" + arg(0) + " " + op_text(e.kind()) + " " + arg(1) + ")";
}

}  // namespace

std::string to_string(const Expr& e) {
  std::string s = print(
      e, [](int i) { return "d" + std::to_string(i); }, [](int i) { return "v" + std::to_string(i); }, false);
  // Drop the outermost parentheses when they enclose the whole text.
  if (s.size() >= 2 && s.front() == '(' && s.back() == ')') {
    int depth = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      depth += s[i] == '(' ? 1 : s[i] == ')' ? -1 : 0;
      if (depth == 0 && i + 1 < s.size()) return s;
    }
    return s.substr(1, s.size() - 2);
  }
  return s;
}

std::string to_c(const Expr& e, const std::function<std::string(int)>& dim_name,
                 const std::function<std::string(int)>& var_name) {
  return print(e, dim_name, var_name, true);
}

// ---- Kernels ----

SimplifyContext Kernel::simplify_context() const {
  SimplifyContext ctx;
  ctx.var_extents = domain;
  return ctx;
}

DType compute_dtype(DType dtype) {
  return dtype == DType::f16 || dtype == DType::bf16 ? DType::f32 : dtype;
}

namespace {

// The loop variable a schedule reduces over.
int reduced_var(ScheduleKind kind) { return kind == ScheduleKind::col_reduce ? 0 : 1; }

uint32_t expr_mask(const Expr& e) {
  if (e.is_null()) return 0;
  if (e.kind() == ExprKind::var) return 1u << e.value();
  uint32_t m = 0;
  for (const Expr& a : e.args()) m |= expr_mask(a);
  return m;
}

}  // namespace

std::vector<uint32_t> node_var_masks(const Kernel& kernel) {
  std::vector<uint32_t> masks(kernel.nodes.size(), 0);
  uint32_t all = kernel.domain.size() >= 32 ? ~0u : (1u << kernel.domain.size()) - 1;
  for (size_t i = 0; i < kernel.nodes.size(); ++i) {
    const Node& n = kernel.nodes[i];
    uint32_t m = expr_mask(n.index);
    for (int a : n.args) m |= masks.at(static_cast<size_t>(a));
    if (n.kind == NodeKind::reduced) m = all & ~(1u << reduced_var(kernel.kind));
    masks[i] = m;
  }
  return masks;
}

std::vector<uint32_t> reduction_deps(const Kernel& kernel) {
  // deps[i]: the reductions node i reads, directly or through its arguments.
  std::vector<uint32_t> deps(kernel.nodes.size(), 0);
  for (size_t i = 0; i < kernel.nodes.size(); ++i) {
    const Node& n = kernel.nodes[i];
    uint32_t m = n.kind == NodeKind::reduced ? 1u << n.reduction : 0;
    for (int a : n.args) m |= deps.at(static_cast<size_t>(a));
    deps[i] = m;
  }
  std::vector<uint32_t> out;
  for (const Reduction& r : kernel.reductions) out.push_back(deps.at(static_cast<size_t>(r.value)));
  return out;
}

std::string verify_kernel(const Kernel& k) {
  const std::string who = "kernel " + k.name + ": ";
  bool reduce = k.kind != ScheduleKind::elementwise;
  if (k.domain.empty()) return who + "the domain is empty";
  if (reduce && k.domain.size() != 2) {
    return who + "a reduce schedule wants a domain [rows, cols] but has rank " + std::to_string(k.domain.size());
  }
  if (!reduce && !k.reductions.empty()) return who + "an elementwise schedule has reductions";
  if (reduce && k.reductions.empty()) return who + "a reduce schedule has no reduction";
  if (k.reductions.size() > 32) return who + "more than 32 reductions";
  if (k.domain.size() > 8) return who + "a domain of rank above 8";
  for (const DimSymbol& d : k.dims) {
    if (d.input < 0 || static_cast<size_t>(d.input) >= k.inputs.size() || d.axis < 0 ||
        static_cast<size_t>(d.axis) >= k.inputs[static_cast<size_t>(d.input)].shape.size()) {
      return who + "a dim symbol reads input " + std::to_string(d.input) + " axis " + std::to_string(d.axis) +
             ", which does not exist";
    }
  }
  for (size_t i = 0; i < k.nodes.size(); ++i) {
    const Node& n = k.nodes[i];
    const std::string at = who + "node " + std::to_string(i) + ": ";
    for (int a : n.args) {
      if (a < 0 || static_cast<size_t>(a) >= i) return at + "argument " + std::to_string(a) + " is not an earlier node";
    }
    size_t want = n.kind == NodeKind::unary || n.kind == NodeKind::cast ? 1
                  : n.kind == NodeKind::binary                          ? 2
                  : n.kind == NodeKind::ternary                         ? 3
                                                                        : 0;
    if (n.args.size() != want) return at + "has " + std::to_string(n.args.size()) + " arguments, wants " + std::to_string(want);
    if (n.kind == NodeKind::load && (n.buffer < 0 || static_cast<size_t>(n.buffer) >= k.inputs.size())) {
      return at + "loads input " + std::to_string(n.buffer) + ", which does not exist";
    }
    if ((n.kind == NodeKind::load || n.kind == NodeKind::index) && n.index.is_null()) return at + "has no index";
    if (n.kind == NodeKind::reduced && (n.reduction < 0 || static_cast<size_t>(n.reduction) >= k.reductions.size())) {
      return at + "reads reduction " + std::to_string(n.reduction) + ", which does not exist";
    }
    if ((n.kind == NodeKind::unary || n.kind == NodeKind::binary || n.kind == NodeKind::ternary) &&
        !has_scalar_op(n.op, static_cast<int>(want))) {
      return at + "op '" + n.op + "' has no scalar form with " + std::to_string(want) + " arguments";
    }
  }
  for (size_t r = 0; r < k.reductions.size(); ++r) {
    int v = k.reductions[r].value;
    if (v < 0 || static_cast<size_t>(v) >= k.nodes.size()) return who + "reduction " + std::to_string(r) + " has no value node";
  }
  auto deps = reduction_deps(k);
  for (size_t r = 0; r < deps.size(); ++r) {
    if (deps[r] >> r) return who + "reduction " + std::to_string(r) + " uses itself or a later reduction";
  }
  std::vector<bool> stored(k.outputs.size(), false);
  for (const Store& s : k.stores) {
    if (s.output < 0 || static_cast<size_t>(s.output) >= k.outputs.size()) {
      return who + "a store writes output " + std::to_string(s.output) + ", which does not exist";
    }
    if (s.value < 0 || static_cast<size_t>(s.value) >= k.nodes.size() || s.index.is_null()) {
      return who + "the store of output " + std::to_string(s.output) + " has no value or index";
    }
    stored[static_cast<size_t>(s.output)] = true;
  }
  for (size_t o = 0; o < stored.size(); ++o) {
    if (!stored[o]) return who + "output " + std::to_string(o) + " is never stored";
  }
  return "";
}

namespace {

const char* schedule_name(ScheduleKind k) {
  switch (k) {
    case ScheduleKind::elementwise: return "elementwise";
    case ScheduleKind::row_reduce: return "row_reduce";
    case ScheduleKind::col_reduce: return "col_reduce";
  }
  return "?";
}

const char* reduce_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
    case ReduceOp::prod: return "prod";
  }
  return "?";
}

std::string shape_text(const std::vector<Expr>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + to_string(shape[i]);
  return s + "]";
}

}  // namespace

std::string to_string(const Kernel& k) {
  std::ostringstream os;
  os << "kernel " << k.name << " " << schedule_name(k.kind) << " domain " << shape_text(k.domain) << "\n";
  for (size_t i = 0; i < k.dims.size(); ++i) {
    os << "  d" << i << " = inputs[" << k.dims[i].input << "].shape[" << k.dims[i].axis << "]\n";
  }
  for (const DimCheck& c : k.dim_checks) os << "  check " << to_string(c.a) << " == " << to_string(c.b) << "\n";
  for (size_t i = 0; i < k.inputs.size(); ++i) {
    os << "  in" << i << " " << k.inputs[i].name << ": " << dtype_short_name(k.inputs[i].dtype)
       << shape_text(k.inputs[i].shape) << "\n";
  }
  for (size_t i = 0; i < k.outputs.size(); ++i) {
    os << "  out" << i << " " << k.outputs[i].name << ": " << dtype_short_name(k.outputs[i].dtype)
       << shape_text(k.outputs[i].shape) << "\n";
  }
  for (size_t i = 0; i < k.nodes.size(); ++i) {
    const Node& n = k.nodes[i];
    os << "  %" << i << ": " << dtype_short_name(n.dtype) << " = ";
    switch (n.kind) {
      case NodeKind::load: os << "load in" << n.buffer << "[" << to_string(n.index) << "]"; break;
      case NodeKind::constant: os << "const " << n.value; break;
      case NodeKind::index: os << "index " << to_string(n.index); break;
      case NodeKind::cast: os << "cast %" << n.args[0]; break;
      case NodeKind::reduced: os << "reduced r" << n.reduction; break;
      default:
        os << n.op;
        for (size_t a = 0; a < n.args.size(); ++a) os << (a ? ", %" : " %") << n.args[a];
    }
    os << "\n";
  }
  for (size_t r = 0; r < k.reductions.size(); ++r) {
    os << "  r" << r << " = " << reduce_name(k.reductions[r].op) << " %" << k.reductions[r].value << "\n";
  }
  for (const Store& s : k.stores) os << "  out" << s.output << "[" << to_string(s.index) << "] = %" << s.value << "\n";
  return os.str();
}

}  // namespace oar::compiler
