// lower_group: a fusion group's sub-program -> a Kernel (loop_ir.h).
//
// Note [Lowering by coordinates]
// Every value of the group gets a symbolic shape (Exprs over dim symbols:
// each dynamic dim of an input is a symbol read at run time; two symbols
// that meet where equal sizes are required are unified, with a DimCheck so
// the kernel refuses sizes that break the assumption, such as a dynamic dim
// that is 1 at run time and broadcasts). The body is then built backwards
// from each output: emit(value, coords) returns the node computing the
// element of `value` at `coords` (one index Expr per axis, over the loop
// variables), memoized on (value, coords):
//  - an input is a load at the flat index of coords (broadcast axes have
//    coordinate 0);
//  - an elementwise op emits its operands at the broadcast coordinates;
//  - reshape goes through the flat index (coords -> flat -> the operand's
//    coords), transpose permutes coords, broadcast_to zeroes axes;
//  - a reduction over the trailing axes [k, r) of its input S is a Reduction
//    of the input emitted at the canonical coordinates of S (the row v0
//    unflattened over S[:k], the column v1 over S[k:]); its result may
//    only be read at its own row.
// The simplifier (Note [Index expressions as polynomials]) folds the
// coordinate arithmetic back to v0 * cols + v1 and the like. Nodes are
// deduplicated by content (common subexpressions), so x * x read twice is
// one load.
#include <cmath>
#include <unordered_map>

#include "oar/error.h"
#include "oar/ir/program.h"
#include "oar/ops.h"
#include "oar_compiler/loop_ir.h"

namespace oar::compiler {

namespace {

using Shape = std::vector<Expr>;

struct Refusal {
  std::string why;
};

[[noreturn]] void refuse(const std::string& why) { throw Refusal{why}; }

bool is_reduce_op(const std::string& name) {
  return name == "sum" || name == "max" || name == "min" || name == "prod" || name == "mean";
}

bool is_elementwise_op(const std::string& name) {
  return has_scalar_op(name, 1) || has_scalar_op(name, 2) || has_scalar_op(name, 3) || name == "cast" || name == "copy";
}

Expr product(const Shape& s, size_t from = 0, size_t to = SIZE_MAX) {
  Expr p(1);
  for (size_t i = from; i < std::min(to, s.size()); ++i) p = p * s[i];
  return p;
}

bool supported_dtype(DType t) { return !is_complex(t); }

class Lowering {
 public:
  explicit Lowering(const ir::Program& sub) : sub_(sub) {}

  Kernel run() {
    if (!sub_.parameters().empty()) refuse("the group has parameters; its values must come in as inputs");
    if (sub_.outputs().empty()) refuse("the group has no outputs");
    for (size_t i = 0; i < sub_.inputs().size(); ++i) add_input(i);
    for (const auto& op : sub_.block().ops()) infer(*op);
    plan_schedule();
    for (size_t o = 0; o < sub_.outputs().size(); ++o) add_store(o);
    if (k_.kind == ScheduleKind::elementwise) merge_domain();
    std::string bad = verify_kernel(k_);
    if (!bad.empty()) refuse(bad);
    return std::move(k_);
  }

 private:
  // ---- shapes ----

  void add_input(size_t i) {
    const ir::Value* v = sub_.inputs()[i];
    if (!supported_dtype(v->type().dtype)) refuse("input " + std::to_string(i) + " has a complex dtype");
    Buffer b{v->name().empty() ? "in" + std::to_string(i) : v->name(), v->type().dtype, {}};
    for (size_t a = 0; a < v->type().dims.size(); ++a) {
      int64_t d = v->type().dims[a];
      if (d >= 0) {
        b.shape.push_back(Expr(d));
      } else {
        k_.dims.push_back(DimSymbol{static_cast<int>(i), static_cast<int>(a)});
        alias_.push_back(-1);
        b.shape.push_back(dim_expr(static_cast<int>(k_.dims.size() - 1)));
      }
    }
    input_index_[v] = static_cast<int>(i);
    shapes_[v] = b.shape;
    k_.inputs.push_back(std::move(b));
  }

  // A dim with unified symbols replaced by their representative, simplified.
  Expr canon(const Expr& e) {
    if (e.kind() == ExprKind::dim) {
      int d = static_cast<int>(e.value());
      while (alias_[static_cast<size_t>(d)] >= 0) d = alias_[static_cast<size_t>(d)];
      return dim_expr(d);
    }
    if (e.args().empty()) return e;
    std::vector<Expr> args;
    for (const Expr& a : e.args()) args.push_back(canon(a));
    return simplify(make_expr(e.kind(), std::move(args)), ctx_);
  }
  Shape canon(const Shape& s) {
    Shape out;
    for (const Expr& e : s) out.push_back(canon(e));
    return out;
  }
  bool same_shape(const Shape& a, const Shape& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!same_expr(canon(a[i]), canon(b[i]))) return false;
    }
    return true;
  }
  bool same_size(const Expr& a, const Expr& b) { return same_expr(canon(a), canon(b)); }

  // Two dims that must be equal: unify symbols, or check a symbol against a size.
  Expr unify(const Expr& a0, const Expr& b0, const std::string& where) {
    Expr a = canon(a0), b = canon(b0);
    if (same_expr(a, b)) return a;
    if (a.is_constant() && b.is_constant()) refuse(where + ": sizes " + std::to_string(a.value()) + " and " +
                                                   std::to_string(b.value()) + " do not broadcast");
    k_.dim_checks.push_back(DimCheck{a, b});
    if (a.kind() == ExprKind::dim && b.kind() == ExprKind::dim) {
      alias_[static_cast<size_t>(b.value())] = static_cast<int>(a.value());
      return a;
    }
    return a.is_constant() ? a : b.is_constant() ? b : a;
  }

  Shape broadcast(const Shape& a, const Shape& b, const std::string& where) {
    size_t r = std::max(a.size(), b.size());
    Shape out(r);
    for (size_t i = 0; i < r; ++i) {
      bool has_a = i + a.size() >= r, has_b = i + b.size() >= r;
      Expr x = has_a ? canon(a[i + a.size() - r]) : Expr(1);
      Expr y = has_b ? canon(b[i + b.size() - r]) : Expr(1);
      out[i] = x.is_constant(1) ? y : y.is_constant(1) ? x : unify(x, y, where);
    }
    return out;
  }

  std::string where(const ir::Operation& op) const { return "op '" + op.name() + "'"; }

  void infer(const ir::Operation& op) {
    const std::string& name = op.name();
    const std::string w = where(op);
    if (op.num_regions() > 0) refuse(w + " has regions");
    for (const ir::Value* r : op.results()) {
      if (!supported_dtype(r->type().dtype)) refuse(w + " has a complex result");
    }
    for (const ir::Value* in : op.operands()) {
      if (!shapes_.count(in)) {
        if (in->kind() != ir::ValueKind::constant) refuse(w + " reads a value the group does not define");
        constant_shape(in);
      }
    }
    const ir::Value* out = op.result(0);
    const auto& dims = out->type().dims;
    Shape s;
    if (is_elementwise_op(name)) {
      for (const ir::Value* in : op.operands()) s = broadcast(s, shapes_.at(in), w);
    } else if (name == "full" || name == "arange") {
      for (int64_t d : dims) {
        if (d < 0) refuse(w + " has a dynamic shape");
        s.push_back(Expr(d));
      }
    } else if (name == "full_like") {
      s = shapes_.at(op.operand(0));
    } else if (name == "broadcast_to" || name == "broadcast_to_like") {
      const Shape& x = shapes_.at(op.operand(0));
      if (name == "broadcast_to_like") {
        s = broadcast(x, shapes_.at(op.operand(1)), w);
      } else {
        Shape target;
        for (size_t i = 0; i < dims.size(); ++i) {
          size_t off = dims.size() - x.size();
          if (dims[i] >= 0) {
            target.push_back(Expr(dims[i]));
          } else if (i >= off) {
            target.push_back(x[i - off]);
          } else {
            refuse(w + " broadcasts to a dynamic dim its operand does not have");
          }
        }
        s = broadcast(x, target, w);
      }
    } else if (name == "reshape") {
      s = reshape_shape(op);
    } else if (name == "transpose") {
      const Shape& x = shapes_.at(op.operand(0));
      for (int64_t p : op.attrs().get_ints("perm")) s.push_back(x.at(static_cast<size_t>(p)));
    } else if (is_reduce_op(name)) {
      const Shape& x = shapes_.at(op.operand(0));
      const auto& axes = op.attrs().get_ints("axes");
      bool keep = op.attrs().has("keepdim") && op.attrs().get_bool("keepdim");
      for (size_t i = 0; i < x.size(); ++i) {
        bool reduced = std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) != axes.end() || axes.empty();
        if (!reduced) {
          s.push_back(x[i]);
        } else if (keep) {
          s.push_back(Expr(1));
        }
      }
      reduce_ops_.push_back(&op);
    } else if (name == "numel") {
      // a 0-D index value
    } else {
      refuse(w + " has no loop form (not elementwise, broadcast, reshape, transpose or a reduction)");
    }
    if (op.results().size() != 1) refuse(w + " has " + std::to_string(op.results().size()) + " results");
    if (s.size() != dims.size()) refuse(w + ": inferred rank " + std::to_string(s.size()) + " but the IR says " + std::to_string(dims.size()));
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] >= 0) s[i] = unify(s[i], Expr(dims[i]), w);
    }
    shapes_[out] = s;
  }

  void constant_shape(const ir::Value* c) {
    Shape s;
    for (int64_t d : c->type().dims) s.push_back(Expr(d));
    shapes_[c] = s;
  }

  Shape reshape_shape(const ir::Operation& op) {
    const Shape& x = shapes_.at(op.operand(0));
    const auto& spec = op.attrs().get_ints("shape");
    const auto& dims = op.result(0)->type().dims;
    Shape s(spec.size());
    int inferred = -1;
    Expr known(1);
    for (size_t i = 0; i < spec.size(); ++i) {
      if (i < dims.size() && dims[i] >= 0) {
        s[i] = Expr(dims[i]);
      } else if (spec[i] == 0 && i < x.size()) {
        s[i] = x[i];
      } else if (spec[i] > 0) {
        s[i] = Expr(spec[i]);
      } else {
        inferred = static_cast<int>(i);
        continue;
      }
      known = known * s[i];
    }
    if (inferred >= 0) s[static_cast<size_t>(inferred)] = canon(floordiv(product(x), known));
    return s;
  }

  // ---- schedule ----

  void plan_schedule() {
    if (reduce_ops_.empty()) {
      k_.kind = ScheduleKind::elementwise;
      Shape out = canon(shapes_.at(sub_.outputs()[0].value));
      k_.domain = out.empty() ? Shape{Expr(1)} : out;
      domain_shape_ = out;
      set_context();
      return;
    }
    k_.kind = ScheduleKind::row_reduce;
    for (const ir::Operation* op : reduce_ops_) {
      Shape x = canon(shapes_.at(op->operand(0)));
      auto axes = op->attrs().get_ints("axes");
      if (axes.empty()) {
        for (size_t i = 0; i < x.size(); ++i) axes.push_back(static_cast<int64_t>(i));
      }
      const size_t begin = x.size() - reduced_rank(*op, x.size());
      for (size_t i = 0; i < axes.size(); ++i) {
        if (axes[i] != static_cast<int64_t>(begin + i)) {
          refuse("op '" + op->name() + "' reduces axes that are not the trailing ones of its input (a row reduction wants [k, rank))");
        }
      }
      Shape rows(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(begin));
      Shape cols(x.begin() + static_cast<std::ptrdiff_t>(begin), x.end());
      if (k_.domain.empty()) {
        k_.domain = {canon(product(rows)), canon(product(cols))};
        set_context();
      } else if (!same_size(product(rows), k_.domain[0]) || !same_size(product(cols), k_.domain[1])) {
        // Rows of another shape but as many (layer_norm's [b, s] rows and
        // cross_entropy's [b * s] after a reshape) are the same rows when
        // every read of a result lands on its own row: emit_reduced checks.
        refuse("op '" + op->name() + "' reduces other rows than the group's first reduction (one row set per group): " +
               to_string(canon(product(rows))) + " rows of " + to_string(canon(product(cols))) + ", not " +
               to_string(k_.domain[0]) + " of " + to_string(k_.domain[1]));
      }
    }
  }

  void set_context() { ctx_.var_extents = k_.domain; }

  // ---- coordinates ----

  Expr flat_index(const Shape& coords, const Shape& shape) {
    Expr flat(0), stride(1);
    for (size_t i = shape.size(); i-- > 0;) {
      flat = flat + coords[i] * stride;
      stride = stride * shape[i];
    }
    return simplify(flat, ctx_);
  }

  Shape unflatten(const Expr& flat, const Shape& shape) {
    Shape coords(shape.size());
    Expr stride(1);
    for (size_t i = shape.size(); i-- > 0;) {
      Expr c = floordiv(flat, stride);
      if (i > 0) c = mod(c, shape[i]);
      coords[i] = shape[i].is_constant(1) ? Expr(0) : simplify(c, ctx_);
      stride = stride * shape[i];
    }
    return coords;
  }

  // The coordinates of an operand of shape `from` broadcast into `to` at `coords`.
  Shape broadcast_coords(const Shape& coords, const Shape& to, const Shape& from) {
    Shape out(from.size());
    size_t off = to.size() - from.size();
    for (size_t i = 0; i < from.size(); ++i) {
      bool one = canon(from[i]).is_constant(1);
      out[i] = one ? Expr(0) : coords[i + off];
    }
    return out;
  }

  // How many trailing axes of its rank-`rank` input a reduction reduces.
  static size_t reduced_rank(const ir::Operation& op, size_t rank) {
    const auto& axes = op.attrs().get_ints("axes");
    return axes.empty() ? rank : axes.size();
  }

  // ---- nodes ----

  int add_node(Node n) {
    std::string key = std::to_string(static_cast<int>(n.kind)) + "|" + std::to_string(static_cast<int>(n.dtype)) + "|" +
                      n.op + "|" + std::to_string(n.buffer) + "|" + (n.index.is_null() ? "" : to_string(n.index)) + "|" +
                      std::to_string(n.value) + "|" + std::to_string(n.reduction);
    for (int a : n.args) key += "," + std::to_string(a);
    auto it = node_ids_.find(key);
    if (it != node_ids_.end()) return it->second;
    k_.nodes.push_back(std::move(n));
    int id = static_cast<int>(k_.nodes.size() - 1);
    node_ids_[key] = id;
    return id;
  }

  int constant_node(double value, DType dtype) {
    Node n;
    n.kind = NodeKind::constant;
    n.dtype = dtype;
    n.value = value;
    return add_node(std::move(n));
  }

  int index_node(const Expr& e, DType dtype) {
    Node n;
    n.kind = NodeKind::index;
    n.dtype = dtype;
    n.index = simplify(e, ctx_);
    return add_node(std::move(n));
  }

  // A constant holding 0, 1, 2, ... along its one axis longer than 1 (a
  // folded arange, the class ids of cross_entropy): its coordinate there.
  std::optional<int> arange_constant(const Tensor& t, const Shape& coords) {
    if (is_floating(t.dtype()) || is_complex(t.dtype()) || t.numel() > (1 << 20)) return std::nullopt;
    int axis = -1;
    for (size_t i = 0; i < t.shape().size(); ++i) {
      if (t.shape()[i] == 1) continue;
      if (axis >= 0) return std::nullopt;
      axis = static_cast<int>(i);
    }
    if (axis < 0) return std::nullopt;
    std::vector<int64_t> values = cast(t, DType::i64).to_vector<int64_t>();
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i] != static_cast<int64_t>(i)) return std::nullopt;
    }
    return index_node(coords.at(static_cast<size_t>(axis)), t.dtype());
  }

  int emit(const ir::Value* v, const Shape& coords) {
    std::string key = std::to_string(v->id());
    for (const Expr& c : coords) key += "|" + to_string(c);
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    int id = emit_uncached(v, coords);
    memo_[key] = id;
    return id;
  }

  int emit_uncached(const ir::Value* v, const Shape& coords) {
    DType dtype = v->type().dtype;
    if (auto in = input_index_.find(v); in != input_index_.end()) {
      Node n;
      n.kind = NodeKind::load;
      n.dtype = dtype;
      n.buffer = in->second;
      n.index = flat_index(coords, shapes_.at(v));
      return add_node(std::move(n));
    }
    if (v->kind() == ir::ValueKind::constant) {
      const Tensor& t = sub_.constant_value(v);
      if (t.numel() == 1) return constant_node(t.item(), dtype);
      if (auto id = arange_constant(t, coords)) return *id;
      refuse("a constant of " + std::to_string(t.numel()) + " elements is in the group (only scalars and ranges are)");
    }
    const ir::Operation* op = v->producer();
    if (op == nullptr) refuse("a value of the group has no producer");
    const std::string& name = op->name();
    const Shape& shape = shapes_.at(v);
    auto operand = [&](size_t i) {
      const ir::Value* x = op->operand(i);
      return emit(x, broadcast_coords(coords, shape, shapes_.at(x)));
    };
    if (name == "copy" || name == "broadcast_to" || name == "broadcast_to_like") return operand(0);
    if (name == "full" || name == "full_like") return constant_node(op->attrs().get_float("value"), dtype);
    if (name == "arange") {
      double start = op->attrs().get_float("start");
      double step = op->attrs().has("step") ? op->attrs().get_float("step") : 1.0;
      if (start != std::floor(start) || step != std::floor(step)) refuse("op 'arange' has a non-integer start or step");
      return index_node(Expr(static_cast<int64_t>(start)) + coords.at(0) * Expr(static_cast<int64_t>(step)), dtype);
    }
    if (name == "numel") {
      Node n;
      n.kind = NodeKind::index;
      n.dtype = dtype;
      n.index = canon(product(shapes_.at(op->operand(0))));
      return add_node(std::move(n));
    }
    if (name == "cast") {
      int a = operand(0);
      if (k_.nodes[static_cast<size_t>(a)].dtype == dtype) return a;
      Node n;
      n.kind = NodeKind::cast;
      n.dtype = dtype;
      n.args = {a};
      return add_node(std::move(n));
    }
    if (name == "reshape") {
      const ir::Value* x = op->operand(0);
      return emit(x, unflatten(flat_index(coords, shape), shapes_.at(x)));
    }
    if (name == "transpose") {
      const auto& perm = op->attrs().get_ints("perm");
      Shape c(coords.size());
      for (size_t i = 0; i < perm.size(); ++i) c[static_cast<size_t>(perm[i])] = coords[i];
      return emit(op->operand(0), c);
    }
    if (is_reduce_op(name)) return emit_reduced(*op, coords);
    int arity = static_cast<int>(op->operands().size());
    if (!has_scalar_op(name, arity)) refuse("op '" + name + "' has no scalar form");
    Node n;
    n.kind = arity == 1 ? NodeKind::unary : arity == 2 ? NodeKind::binary : NodeKind::ternary;
    n.dtype = dtype;
    n.op = name;
    for (size_t i = 0; i < op->operands().size(); ++i) n.args.push_back(operand(i));
    if (name == "pow") {
      const Node& e = k_.nodes[static_cast<size_t>(n.args[1])];
      if (e.kind == NodeKind::constant && e.value == 2.0) {  // x ** 2 = x * x, exactly
        n.op = "mul";
        n.args[1] = n.args[0];
      }
    }
    return add_node(std::move(n));
  }

  int emit_reduced(const ir::Operation& op, const Shape& coords) {
    const ir::Value* x = op.operand(0);
    const Shape& xs = shapes_.at(x);
    // This reduction's own rows S[:k]: as many as the group's, maybe of
    // another shape (plan_schedule).
    const size_t begin = xs.size() - reduced_rank(op, xs.size());
    // The kept coordinates must be the row's (Note [Lowering by coordinates]).
    Shape kept;
    const Shape& rs = shapes_.at(op.result(0));
    bool keep = rs.size() == xs.size();
    for (size_t i = 0; i < begin; ++i) kept.push_back(coords.at(i));
    for (size_t i = begin; keep && i < rs.size(); ++i) {
      if (!coords[i].is_constant(0)) refuse("op '" + op.name() + "': its kept reduced axis is read at a non-zero coordinate");
    }
    Shape row = unflatten(var_expr(0), Shape(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(begin)));
    for (size_t i = 0; i < begin; ++i) {
      if (!same_expr(simplify(kept[i], ctx_), row[i])) {
        refuse("op '" + op.name() + "': its result is read at another row than the one it reduces (" +
               to_string(kept[i]) + " vs " + to_string(row[i]) + ")");
      }
    }
    auto found = reduction_of_.find(&op);
    int r;
    if (found != reduction_of_.end()) {
      r = found->second;
    } else {
      Shape c = row;
      Shape cols(xs.begin() + static_cast<std::ptrdiff_t>(begin), xs.end());
      Shape cc = unflatten(var_expr(1), cols);
      c.insert(c.end(), cc.begin(), cc.end());
      int value = emit(x, c);
      const std::string& name = op.name();
      ReduceOp rop = name == "max" ? ReduceOp::max : name == "min" ? ReduceOp::min : name == "prod" ? ReduceOp::prod : ReduceOp::sum;
      k_.reductions.push_back(Reduction{rop, value, op.result(0)->type().dtype});
      r = static_cast<int>(k_.reductions.size() - 1);
      reduction_of_[&op] = r;
    }
    Node n;
    n.kind = NodeKind::reduced;
    n.dtype = op.result(0)->type().dtype;
    n.reduction = r;
    int id = add_node(std::move(n));
    if (op.name() != "mean") return id;
    Node count;
    count.kind = NodeKind::index;
    count.dtype = n.dtype;
    count.index = k_.domain[1];
    int c = add_node(std::move(count));
    Node div;
    div.kind = NodeKind::binary;
    div.dtype = n.dtype;
    div.op = "div";
    div.args = {id, c};
    return add_node(std::move(div));
  }

  // ---- stores ----

  void add_store(size_t o) {
    const ir::Value* v = sub_.outputs()[o].value;
    Shape shape = canon(shapes_.at(v));
    k_.outputs.push_back(Buffer{"out" + std::to_string(o), v->type().dtype, shape});
    Expr numel = canon(product(shape));
    Shape coords;
    if (k_.kind == ScheduleKind::elementwise) {
      if (same_shape(shape, domain_shape_)) {
        for (size_t i = 0; i < shape.size(); ++i) coords.push_back(var_expr(static_cast<int>(i)));
      } else if (same_size(numel, product(domain_shape_))) {
        Shape vars;
        for (size_t i = 0; i < domain_shape_.size(); ++i) vars.push_back(var_expr(static_cast<int>(i)));
        coords = unflatten(flat_index(vars, domain_shape_), shape);
      } else {
        refuse("output " + std::to_string(o) + " has " + to_string(numel) + " elements but the group iterates " +
               to_string(canon(product(domain_shape_))));
      }
    } else {
      const Expr& rows = k_.domain[0];
      const Expr& cols = k_.domain[1];
      if (same_size(numel, rows * cols)) {
        coords = unflatten(simplify(var_expr(0) * cols + var_expr(1), ctx_), shape);
      } else if (same_size(numel, rows)) {
        coords = unflatten(var_expr(0), shape);
      } else {
        refuse("output " + std::to_string(o) + " has " + to_string(numel) +
               " elements: neither the group's rows nor rows * cols");
      }
    }
    int value = emit(v, coords);
    Expr index = flat_index(coords, shape);
    if (k_.kind != ScheduleKind::elementwise && !uses_var(index, 1) &&
        (node_var_masks(k_)[static_cast<size_t>(value)] & 2u)) {
      refuse("output " + std::to_string(o) + " is one value per row but depends on the column");
    }
    k_.stores.push_back(Store{static_cast<int>(o), value, index});
  }

  // ---- elementwise domain merging ----

  // Merges adjacent domain dims i, i+1 when every index Expr, rewritten with
  // v_i = u floordiv E and v_{i+1} = u mod E, simplifies without floordiv
  // or mod of u: the data is contiguous across the two dims for every
  // buffer (Note [Index expressions as polynomials]).
  void merge_domain() {
    for (size_t i = 0; i + 1 < k_.domain.size();) {
      if (!try_merge(i)) ++i;
    }
  }

  bool try_merge(size_t i) {
    const int vi = static_cast<int>(i);
    Expr extent = k_.domain[i + 1];
    std::vector<Expr> domain = k_.domain;
    domain[i] = simplify(domain[i] * extent);
    domain.erase(domain.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    SimplifyContext ctx{domain};
    Expr u = var_expr(vi);
    auto rewrite = [&](const Expr& e) -> std::optional<Expr> {
      Expr r = simplify(substitute(e, vi, u, extent), ctx);
      if (has_divmod_of(r, vi)) return std::nullopt;
      return r;
    };
    std::vector<Expr> loads, stores;
    for (const Node& n : k_.nodes) {
      if (n.index.is_null()) continue;
      auto r = rewrite(n.index);
      if (!r) return false;
      loads.push_back(*r);
    }
    for (const Store& s : k_.stores) {
      auto r = rewrite(s.index);
      if (!r) return false;
      stores.push_back(*r);
    }
    size_t l = 0;
    for (Node& n : k_.nodes) {
      if (!n.index.is_null()) n.index = loads[l++];
    }
    for (size_t s = 0; s < k_.stores.size(); ++s) k_.stores[s].index = stores[s];
    k_.domain = domain;
    ctx_.var_extents = domain;
    return true;
  }

  // e with v_i -> u floordiv E, v_{i+1} -> u mod E, v_j -> v_{j-1} for j > i + 1.
  static Expr substitute(const Expr& e, int i, const Expr& u, const Expr& extent) {
    if (e.kind() == ExprKind::var) {
      int j = static_cast<int>(e.value());
      if (j == i) return floordiv(u, extent);
      if (j == i + 1) return mod(u, extent);
      if (j > i + 1) return var_expr(j - 1);
      return e;
    }
    if (e.args().empty()) return e;
    std::vector<Expr> args;
    for (const Expr& a : e.args()) args.push_back(substitute(a, i, u, extent));
    return make_expr(e.kind(), std::move(args));
  }

  static bool has_divmod_of(const Expr& e, int var) {
    if ((e.kind() == ExprKind::floordiv || e.kind() == ExprKind::mod) && uses_var(e.args()[0], var)) return true;
    for (const Expr& a : e.args()) {
      if (has_divmod_of(a, var)) return true;
    }
    return false;
  }

  const ir::Program& sub_;
  Kernel k_;
  SimplifyContext ctx_;
  std::vector<int> alias_;  // dim symbol -> the symbol it was unified with (-1: itself)
  std::unordered_map<const ir::Value*, Shape> shapes_;
  std::unordered_map<const ir::Value*, int> input_index_;
  std::vector<const ir::Operation*> reduce_ops_;
  std::unordered_map<const ir::Operation*, int> reduction_of_;
  Shape domain_shape_;  // elementwise: the first output's shape
  std::unordered_map<std::string, int> memo_;
  std::unordered_map<std::string, int> node_ids_;
};

}  // namespace

std::optional<Kernel> lower_group(const ir::Program& sub, std::string* why_not) {
  try {
    Lowering lowering(sub);
    return lowering.run();
  } catch (const Refusal& r) {
    if (why_not) *why_not = "lower_group: " + r.why;
  } catch (const Error& e) {
    if (why_not) *why_not = std::string("lower_group: ") + e.what();
  }
  return std::nullopt;
}

}  // namespace oar::compiler
