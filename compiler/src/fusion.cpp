// The fusion planner (fusion.h).
//
// Note [Fusion rules]
// Every top-level operation starts as a group of its own; groups merge
// when one is legal, in two sweeps:
//  1. Vertical, in program order: each fusible consumer absorbs the groups
//     of its fusible producers (elementwise and broadcast producers sink
//     into their consumer; a reduction absorbs its elementwise prologue;
//     the ops reading a reduction's result join it as its epilogue).
//  2. Horizontal (FusionOptions::horizontal): two independent groups over
//     the same iteration space that read a common input merge, so the
//     input is read once. Groups sharing nothing are left apart: fusing
//     them saves no memory traffic and would move the earlier one's
//     results later in the program.
// A merge is legal when
//  - both groups are fusible (no opaque op; a reduction over axes that are
//    not the trailing ones is a column reduction C3's schedules do not
//    take);
//  - the result has at most max_ops operations;
//  - the iteration spaces agree. An elementwise group iterates over the
//    numel N of its consumer's result. A reduce group iterates over
//    [rows, cols] where each reduction reduces the trailing axes of its
//    input (rows = product of the kept dims, cols = of the reduced ones);
//    all reductions of a group have the same rows and cols (softmax's max
//    and sum, layer_norm's two means), so a group never mixes reduction
//    axis sets. Sizes are compared as products of symbolic dims, evaluated
//    at the two samples of Note [Symbolic dims] (shape_inference.h), so a
//    reshape [B, T, C] -> [B*T, C] keeps the rows of a reduction over C:
//    axes are aligned through reshapes that keep the row-major order, and
//    through transposes of values computed before the reductions (the
//    lowering reads them at permuted coordinates: a reduction over the
//    last axis of transpose(x) is a row reduction with strided loads);
//  - every value computed from a reduction in the group is per row (numel
//    rows, read only where the broadcast maps an element to its own row)
//    or covers [rows, cols], and is never transposed (that would read
//    other rows' results); other values (a weight [C], a scalar) are
//    computed from the group's inputs alone and may be read anywhere;
//  - a reduction over every element (one row: a loss) keeps its prologue
//    but no per-element epilogue, which would run in one row, one thread
//    (the backward of a mean starts so);
//  - every output of the group (a value used outside it or named by the
//    program) covers the iteration space, or has one element per row in a
//    reduce group (written once per row, at its own linear index = the
//    row); a smaller value would have to be written from a larger loop;
//  - the reductions iterate the same rows and columns also within the
//    group alone, where each input's dynamic dims are its own symbols
//    (what the lowering sees: local_rows_problem);
//  - no cycle: no path leaves one group and enters the other through
//    groups outside both (checked on the graph of groups, so a path
//    through two ops of a third group counts). Then the merged group can
//    become one operation.
// Nothing is duplicated: each operation is in one group, so no reduction
// runs twice. Groups made only of reshapes, fills and broadcasts are not
// returned (nothing to compute).

#include "oar_compiler/fusion.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "oar/ir/shape_inference.h"

namespace oar::compiler {

namespace {

using ir::Operation;
using ir::SymShape;
using ir::Value;

// Every log line starts so (the compiler's log, log.h).
constexpr const char* kPrefix = "oar compiler: fusion: ";

// Ops that make values without reading data: alone they are nothing to fuse.
bool is_fill(const Operation& op) {
  const std::string& n = op.name();
  return n == "full" || n == "full_like" || n == "arange" || n == "numel";
}

// Horizontal fusion looks at this many readers of each value.
constexpr size_t kMaxReaders = 16;

// A product of dims, as its values at the two samples of the symbols
// (wrapping: equal products give equal keys).
struct Size {
  uint64_t a = 1, b = 1;
  bool operator==(const Size&) const = default;
};

struct GroupState {
  std::vector<int> members;  // positions in the block, sorted
  bool fusible = true;
  std::string why_not;  // when not fusible
  bool reduce = false;
  Size numel;       // elementwise: the iteration space
  Size rows, cols;  // reduce
};

// The iteration space a merged group would have.
struct Domain {
  bool reduce = false;
  Size numel, rows, cols;
  Size full() const { return reduce ? Size{rows.a * cols.a, rows.b * cols.b} : numel; }
};

class Planner {
 public:
  Planner(ir::Block& block, const FusionOptions& options, std::ostream* log)
      : block_(block), options_(options), log_(log) {}

  std::vector<Group> run() {
    for (Operation* op : block_.ops()) {
      pos_[op] = static_cast<int>(ops_.size());
      ops_.push_back(op);
    }
    infer_shapes();
    init_groups();
    vertical();
    if (options_.horizontal) horizontal();
    return collect();
  }

 private:
  // ---- shapes ----
  void infer_shapes() {
    std::vector<ir::SymMeta> metas;
    for (Operation* op : ops_) {
      metas.clear();
      for (const Value* v : op->operands()) metas.push_back({v->type().dtype, shape(v)});
      std::vector<ir::SymMeta> out;
      try {
        out = symbols_.infer(op->def(), metas, op->attrs());
      } catch (const std::exception&) {
        out.clear();
      }
      for (size_t i = 0; i < op->results().size(); ++i) {
        const Value* r = op->result(i);
        shapes_[r] =
            out.size() == op->results().size() ? out[i].shape : symbols_.fresh_shape(r->type());
      }
    }
  }

  const SymShape& shape(const Value* v) {
    auto it = shapes_.find(v);
    if (it == shapes_.end()) it = shapes_.emplace(v, symbols_.fresh_shape(v->type())).first;
    return it->second;
  }

  Size size_of(const SymShape& s, size_t begin, size_t end) const {
    return size_in(symbols_, s, begin, end);
  }
  static Size size_in(const ir::SymbolTable& symbols, const SymShape& s, size_t begin, size_t end) {
    SymShape part(s.begin() + static_cast<std::ptrdiff_t>(begin),
                  s.begin() + static_cast<std::ptrdiff_t>(end));
    Shape a = symbols.sample(part, 0), b = symbols.sample(part, 1);
    Size out;
    for (size_t i = 0; i < a.size(); ++i) {
      out.a *= static_cast<uint64_t>(a[i]);
      out.b *= static_cast<uint64_t>(b[i]);
    }
    return out;
  }
  Size numel(const Value* v) {
    const SymShape& s = shape(v);
    return size_of(s, 0, s.size());
  }
  bool same_dim(int64_t x, int64_t y) const { return symbols_.resolve(x) == symbols_.resolve(y); }

  // ---- positions and names ----
  int position(const Operation* op) const {
    while (op != nullptr && op->block() != &block_) op = op->parent_op();
    if (op == nullptr) return -1;
    auto it = pos_.find(op);
    return it == pos_.end() ? -1 : it->second;
  }
  int producer(const Value* v) const { return v->producer() ? position(v->producer()) : -1; }
  std::string op_str(int i) const {
    return "op " + std::to_string(i) + " (" + ops_[static_cast<size_t>(i)]->name() + ")";
  }
  std::string shape_str(const Value* v) { return symbols_.str(shape(v)); }
  std::string group_str(int g) const {
    const auto& m = groups_[static_cast<size_t>(g)].members;
    std::string out = "{";
    for (size_t i = 0; i < m.size() && i < 4; ++i) out += (i ? " " : "") + op_str(m[i]);
    if (m.size() > 4) out += " ... +" + std::to_string(m.size() - 4);
    return out + "}";
  }
  std::string domain_str(const Domain& d, const Value* example) {
    return (d.reduce ? "a reduce group" : "an elementwise group") + std::string(" over ") +
           (example ? shape_str(example) : std::string("?"));
  }

  // ---- groups ----
  int find(int i) {
    while (parent_[static_cast<size_t>(i)] != i)
      i = parent_[static_cast<size_t>(i)] =
          parent_[static_cast<size_t>(parent_[static_cast<size_t>(i)])];
    return i;
  }
  GroupState& group(int root) { return groups_[static_cast<size_t>(root)]; }

  void init_groups() {
    parent_.resize(ops_.size());
    groups_.resize(ops_.size());
    for (size_t i = 0; i < ops_.size(); ++i) {
      parent_[i] = static_cast<int>(i);
      const Operation& op = *ops_[i];
      GroupState& g = groups_[i];
      g.members = {static_cast<int>(i)};
      OpClass c = classify(op);
      if (c == OpClass::opaque) {
        g.fusible = false;
        g.why_not = op_str(static_cast<int>(i)) + " is opaque (a group boundary)";
      } else if (op.results().size() != 1) {
        g.fusible = false;
        g.why_not = op_str(static_cast<int>(i)) + " has " + std::to_string(op.results().size()) +
                    " results";
      } else if (c == OpClass::reduce) {
        init_reduce(static_cast<int>(i), g);
      } else {
        g.numel = numel(op.result());
      }
      if (!g.fusible && log_ && classify(op) != OpClass::opaque)
        *log_ << kPrefix << "boundary: " << g.why_not << "\n";
    }
  }

  // The reduced axes must be the trailing ones: rows x cols.
  void init_reduce(int i, GroupState& g) {
    const Operation& op = *ops_[static_cast<size_t>(i)];
    const SymShape& in = shape(op.operand(0));
    const std::vector<int64_t> axes = reduce_axes(op);
    const auto rank = static_cast<int64_t>(in.size());
    const auto k = rank - static_cast<int64_t>(axes.size());
    bool trailing = true;
    for (size_t j = 0; j < axes.size(); ++j)
      trailing = trailing && axes[j] == k + static_cast<int64_t>(j);
    if (!trailing) {
      g.fusible = false;
      std::string list;
      for (int64_t a : axes) list += (list.empty() ? "" : ", ") + std::to_string(a);
      g.why_not = op_str(i) + " reduces axes [" + list + "] of " + symbols_.str(in) +
                  ", not the trailing ones (a column reduction; the row_reduce schedule reduces "
                  "the last axes)";
      return;
    }
    g.reduce = true;
    g.rows = size_of(in, 0, static_cast<size_t>(k));
    g.cols = size_of(in, static_cast<size_t>(k), in.size());
  }

  // A reduction's "axes" (sorted, normalized; none when it lacks them).
  static std::vector<int64_t> reduce_axes(const Operation& op) {
    const auto* axes = op.attrs().find("axes");
    const auto* list = axes ? std::get_if<std::vector<int64_t>>(axes) : nullptr;
    return list ? *list : std::vector<int64_t>{};
  }

  bool in_members(const std::vector<int>& members, int p) const {
    return std::binary_search(members.begin(), members.end(), p);
  }

  // Checks the rules of Note [Fusion rules] on `members` (sorted) over `d`;
  // "" when they hold, else why not.
  std::string check(const std::vector<int>& members, const Domain& d, const Value** example) {
    std::unordered_map<const Value*, bool> from_reduction;
    const Size full = d.full();
    *example = nullptr;
    for (int p : members) {
      const Operation& op = *ops_[static_cast<size_t>(p)];
      bool dep = false;
      for (const Value* u : op.operands()) {
        auto it = from_reduction.find(u);
        dep = dep || (it != from_reduction.end() && it->second);
      }
      const Value* r = op.result();
      if (*example == nullptr && numel(r) == full) *example = r;
      if (classify(op) == OpClass::reduce) {
        const Value* in = op.operand(0);
        const SymShape& s = shape(in);
        const size_t k = s.size() - reduce_axes(op).size();
        if (!(size_of(s, 0, k) == d.rows && size_of(s, k, s.size()) == d.cols))
          return op_str(p) + " reduces " + shape_str(in) +
                 " over other rows or columns than the group's reductions";
        if (*example == nullptr) *example = in;
        from_reduction[r] = true;
        continue;
      }
      from_reduction[r] = dep;
      if (!dep) continue;
      if (classify(op) == OpClass::transpose)
        return op_str(p) +
               " permutes a value computed from the group's reductions, so its elements would " +
               "read reduction results of other rows";
      const Size n = numel(r);
      if (!(n == full || n == d.rows))
        return op_str(p) + " computes a " + shape_str(r) +
               " value from the group's reductions that is neither per row nor over the whole "
               "iteration space";
      if (!(n == full) || d.rows == full) continue;
      if (d.rows == Size{}) {
        return op_str(p) + " would apply a reduction over everything to every element in one row " +
               "(one thread); it runs better as an elementwise group of its own";
      }
      for (const Value* u : op.operands()) {
        auto it = from_reduction.find(u);
        if (it == from_reduction.end() || !it->second || numel(u) == full) continue;
        if (!reads_own_row(shape(u), shape(r), d.rows))
          return op_str(p) + " reads the per-row value " + shape_str(u) +
                 " at the elements of its " + shape_str(r) +
                 " result, which does not map each element to its own row";
      }
    }
    // Outputs cover the space (or are per row, from the reductions).
    for (int p : members) {
      const Value* r = ops_[static_cast<size_t>(p)]->result();
      bool outside = r->interface_uses() > 0;
      for (const ir::Use& use : r->uses())
        outside = outside || !in_members(members, position(use.user));
      if (!outside) continue;
      const Size n = numel(r);
      if (n == full || (d.reduce && n == d.rows)) continue;
      return "the " + shape_str(r) + " result of " + op_str(p) +
             " is used outside, and an output of " + domain_str(d, *example) +
             " must cover its iteration space" + (d.reduce ? " or be per row" : "");
    }
    return "";
  }

  // The group as lower_group sees it: its inputs' dynamic dims are symbols
  // of their own, equal only where an op of the group makes them so (a
  // binary op unifies its operands' dims). Two reductions whose rows or
  // columns are equal in the program but come from inputs that never meet
  // in the group (cross_entropy's sum(valid [B, 1]) and sum(loss [B])) could
  // not be shown to iterate the same rows; "" when they can.
  std::string local_rows_problem(const std::vector<int>& members) {
    size_t reductions = 0;
    for (int p : members) reductions += classify(*ops_[static_cast<size_t>(p)]) == OpClass::reduce;
    if (reductions < 2) return "";
    ir::SymbolTable local;
    std::unordered_map<const Value*, SymShape> shapes;
    auto get = [&](const Value* v) -> const SymShape& {
      auto it = shapes.find(v);
      if (it == shapes.end()) it = shapes.emplace(v, local.fresh_shape(v->type())).first;
      return it->second;
    };
    std::vector<ir::SymMeta> metas;
    for (int p : members) {
      const Operation& op = *ops_[static_cast<size_t>(p)];
      metas.clear();
      for (const Value* v : op.operands()) metas.push_back({v->type().dtype, get(v)});
      std::vector<ir::SymMeta> out;
      try {
        out = local.infer(op.def(), metas, op.attrs());
      } catch (const std::exception& e) {
        return op_str(p) +
               " rejects its operands once the group's inputs have dims of their own: " + e.what();
      }
      for (size_t i = 0; i < out.size() && i < op.results().size(); ++i)
        shapes[op.result(i)] = out[i].shape;
    }
    bool first = true;
    Size rows, cols;
    for (int p : members) {
      const Operation& op = *ops_[static_cast<size_t>(p)];
      if (classify(op) != OpClass::reduce) continue;
      const SymShape& in = get(op.operand(0));
      const size_t k = in.size() - reduce_axes(op).size();
      Size r = size_in(local, in, 0, k), c = size_in(local, in, k, in.size());
      if (first) {
        rows = r, cols = c, first = false;
      } else if (!(r == rows && c == cols)) {
        return op_str(p) +
               " reduces rows and columns that equal the group's only through the program " +
               "around it: within the group its input's dims are unrelated to the other "
               "reductions'";
      }
    }
    return "";
  }

  // A per-row value u broadcast into `out`: u (padded with leading 1s) is
  // out[:j] followed by 1s, where out[:j] holds exactly the rows.
  bool reads_own_row(const SymShape& u, const SymShape& out, Size rows) const {
    if (u.size() > out.size()) return false;
    SymShape padded(out.size() - u.size(), 1);
    padded.insert(padded.end(), u.begin(), u.end());
    for (size_t j = 0; j <= out.size(); ++j) {
      if (!(size_of(out, 0, j) == rows)) continue;
      bool ok = true;
      for (size_t i = 0; i < out.size() && ok; ++i)
        ok = i < j ? same_dim(padded[i], out[i]) : padded[i] == 1;
      if (ok) return true;
    }
    return false;
  }

  // Groups read by the ops of group g (outside g).
  std::vector<int> successors(int g) {
    std::vector<int> out;
    for (int p : group(g).members) {
      for (const Value* r : ops_[static_cast<size_t>(p)]->results()) {
        for (const ir::Use& use : r->uses()) {
          int q = position(use.user);
          if (q < 0) continue;
          int h = find(q);
          if (h != g) out.push_back(h);
        }
      }
    }
    return out;
  }

  // "" when merging a and b makes no cycle, else the group on the path.
  std::string cycle_through(int a, int b) {
    std::deque<int> work;
    std::unordered_set<int> seen;
    for (int g : {a, b}) {
      for (int h : successors(g)) {
        if (h != a && h != b && seen.insert(h).second) work.push_back(h);
      }
    }
    while (!work.empty()) {
      int g = work.front();
      work.pop_front();
      for (int h : successors(g)) {
        if (h == a || h == b) return group_str(g);
        if (seen.insert(h).second) work.push_back(h);
      }
    }
    return "";
  }

  // Merges the groups of a (producer side) and b; logs a refusal.
  bool merge(int a, int b, const char* how) {
    a = find(a);
    b = find(b);
    if (a == b) return true;
    GroupState &ga = group(a), &gb = group(b);
    std::string why = merge_problem(a, b);
    if (!why.empty()) {
      if (log_) {
        std::string line =
            std::string("refused ") + how + " " + group_str(a) + " + " + group_str(b) + ": " + why;
        if (logged_.insert(line).second)
          *log_ << kPrefix << line << "\n";  // once per pair and reason
      }
      return false;
    }
    Domain d = domain(ga, gb);
    std::vector<int> members;
    std::merge(ga.members.begin(), ga.members.end(), gb.members.begin(), gb.members.end(),
               std::back_inserter(members));
    int root = std::min(a, b), other = std::max(a, b);
    parent_[static_cast<size_t>(other)] = root;
    GroupState& g = group(root);
    g.members = std::move(members);
    g.reduce = d.reduce;
    g.numel = d.numel;
    g.rows = d.rows;
    g.cols = d.cols;
    group(other).members.clear();
    return true;
  }

  static Domain domain(const GroupState& a, const GroupState& b) {
    Domain d;
    if (a.reduce || b.reduce) {
      const GroupState& r = b.reduce ? b : a;
      d.reduce = true;
      d.rows = r.rows;
      d.cols = r.cols;
    } else {
      d.numel = b.numel;  // the consumer's space
    }
    return d;
  }

  std::string merge_problem(int a, int b) {
    GroupState &ga = group(a), &gb = group(b);
    if (!ga.fusible) return ga.why_not;
    if (!gb.fusible) return gb.why_not;
    if (ga.members.size() + gb.members.size() > static_cast<size_t>(options_.max_ops))
      return "the group would have more than max_ops = " + std::to_string(options_.max_ops) +
             " operations";
    if (ga.reduce && gb.reduce && !(ga.rows == gb.rows && ga.cols == gb.cols))
      return "their reductions reduce different axis sets (other rows or columns); a group holds "
             "one";
    Domain d = domain(ga, gb);
    std::vector<int> members;
    std::merge(ga.members.begin(), ga.members.end(), gb.members.begin(), gb.members.end(),
               std::back_inserter(members));
    const Value* example = nullptr;
    std::string why = check(members, d, &example);
    if (!why.empty()) return why;
    if (d.reduce) why = local_rows_problem(members);
    if (!why.empty()) return why;
    std::string via = cycle_through(a, b);
    if (!via.empty())
      return "it would make a cycle: " + via + " depends on one and feeds the other";
    return "";
  }

  void vertical() {
    for (size_t i = 0; i < ops_.size(); ++i) {
      if (!group(find(static_cast<int>(i))).fusible) continue;
      for (const Value* v : ops_[i]->operands()) {
        int p = producer(v);
        if (p < 0 || !group(find(p)).fusible || find(p) == find(static_cast<int>(i))) continue;
        merge(p, static_cast<int>(i), "vertical");
      }
    }
  }

  bool same_space(const GroupState& a, const GroupState& b) const {
    if (a.reduce != b.reduce) return false;
    return a.reduce ? a.rows == b.rows && a.cols == b.cols : a.numel == b.numel;
  }

  void horizontal() {
    // Groups reading each value defined outside them, in program order.
    std::unordered_map<const Value*, std::vector<int>> readers;
    std::vector<const Value*> order;
    for (size_t i = 0; i < ops_.size(); ++i) {
      for (const Value* v : ops_[i]->operands()) {
        auto& list = readers[v];
        if (list.empty()) order.push_back(v);
        list.push_back(static_cast<int>(i));
      }
    }
    for (const Value* v : order) {
      // The first kMaxReaders readers only: a value read by hundreds of ops
      // (a shared scalar) would cost a cycle check per pair.
      const auto& list = readers[v];
      const size_t n = std::min(list.size(), kMaxReaders);
      for (size_t x = 0; x < n; ++x) {
        for (size_t y = x + 1; y < n; ++y) {
          int a = find(list[x]), b = find(list[y]);
          if (a == b || !group(a).fusible || !group(b).fusible || !same_space(group(a), group(b)))
            continue;
          if (producer(v) >= 0 && (find(producer(v)) == a || find(producer(v)) == b)) continue;
          merge(a, b, "horizontal");
        }
      }
    }
  }

  std::vector<Group> collect() {
    std::vector<int> roots;
    for (size_t i = 0; i < ops_.size(); ++i) {
      const auto r = static_cast<int>(i);
      if (find(r) != r || !group(r).fusible) continue;
      bool compute = false;  // not only views, fills and broadcasts
      for (int p : group(r).members) {
        const Operation& op = *ops_[static_cast<size_t>(p)];
        const OpClass c = classify(op);
        compute = compute || c == OpClass::reduce || (c == OpClass::elementwise && !is_fill(op));
      }
      if (compute) roots.push_back(r);
    }
    std::vector<Group> out;
    for (int r : roots) {
      const GroupState& g = group(r);
      Group result;
      result.kind = g.reduce ? GroupKind::reduce : GroupKind::elementwise;
      std::unordered_set<const Value*> seen;
      for (int p : g.members) {
        Operation* op = ops_[static_cast<size_t>(p)];
        result.ops.push_back(op);
        for (Value* v : op->operands()) {
          int q = producer(v);
          if ((q < 0 || !in_members(g.members, q)) && seen.insert(v).second)
            result.inputs.push_back(v);
        }
      }
      for (int p : g.members) {
        for (Value* v : ops_[static_cast<size_t>(p)]->results()) {
          bool outside = v->interface_uses() > 0;
          for (const ir::Use& use : v->uses())
            outside = outside || !in_members(g.members, position(use.user));
          if (outside) result.outputs.push_back(v);
        }
      }
      // Named after its first op that computes (not a fill, view or broadcast).
      const Operation* first = result.ops.front();
      for (const Operation* op : result.ops) {
        const OpClass c = classify(*op);
        if (c == OpClass::reduce || (c == OpClass::elementwise && !is_fill(*op))) {
          first = op;
          break;
        }
      }
      result.name = "g" + std::to_string(out.size()) + "_" + (g.reduce ? "reduce" : "elementwise") +
                    "_" + first->name();
      out.push_back(std::move(result));
    }
    if (log_) {
      *log_ << kPrefix << out.size() << " groups\n";
      std::istringstream lines(plan_text(out));
      for (std::string line; std::getline(lines, line);) *log_ << kPrefix << line << "\n";
    }
    return out;
  }

  ir::Block& block_;
  FusionOptions options_;
  std::ostream* log_;
  std::vector<Operation*> ops_;
  std::unordered_map<const Operation*, int> pos_;
  ir::SymbolTable symbols_;
  std::unordered_map<const Value*, SymShape> shapes_;
  std::vector<int> parent_;
  std::vector<GroupState> groups_;
  std::unordered_set<std::string> logged_;  // refusals written to the log
};

std::string value_name(const Value* v) {
  if (!v->name().empty()) return v->name();
  const Operation* op = v->producer();
  if (op == nullptr) return "?";
  const Operation* top = op;
  while (top->parent_op() != nullptr) top = top->parent_op();
  std::string out = "op" + std::to_string(top->block()->index_of(top));
  if (op->results().size() > 1) out += "." + std::to_string(v->result_index());
  return out;
}

}  // namespace

std::vector<Group> plan_fusion(ir::Block& block, const FusionOptions& options, std::ostream* log) {
  return Planner(block, options, log).run();
}

std::string plan_text(const std::vector<Group>& groups) {
  std::ostringstream os;
  for (const Group& g : groups) {
    os << g.name << ": " << (g.kind == GroupKind::reduce ? "reduce" : "elementwise") << ", "
       << g.ops.size() << (g.ops.size() == 1 ? " op\n" : " ops\n");
    os << "  ops:";
    for (const Operation* op : g.ops) os << " " << op->block()->index_of(op) << ":" << op->name();
    os << "\n  inputs:";
    for (size_t i = 0; i < g.inputs.size(); ++i)
      os << (i ? ", " : " ") << value_name(g.inputs[i]) << " " << g.inputs[i]->type().str();
    os << "\n  outputs:";
    for (size_t i = 0; i < g.outputs.size(); ++i)
      os << (i ? ", " : " ") << value_name(g.outputs[i]) << " " << g.outputs[i]->type().str();
    os << "\n";
  }
  return os.str();
}

}  // namespace oar::compiler
