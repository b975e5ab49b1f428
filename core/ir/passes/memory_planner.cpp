// The memory planner: liveness of every intermediate, then byte offsets in
// one arena so that values whose lifetimes overlap never share bytes.
//
// Note [Offset assignment]
// Buffers are placed largest first; each takes the smallest gap that fits
// between the buffers already placed whose lifetimes overlap its own (or
// the top of them when no gap fits). This is the "greedy by size" strategy
// of Pisarchyk & Lee, "Efficient Memory Management for Deep Neural Net
// Inference" (2020), which lands close to the lower bound max over time of
// the live bytes on typical networks. Lifetimes are inclusive op-index
// intervals [producer, last reader], so an op's result never shares bytes
// with its own operands (kernels are not assumed to work in place). A
// may_share predicate adds conflicts: a buffer it refuses to pair with an
// already placed one is kept off that one's bytes whatever the lifetimes.
#include "oar/ir/memory_planner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <unordered_set>

#include "oar/ir/control_flow.h"
#include "oar/ir/pass.h"
#include "oar/ir/shape_inference.h"

namespace oar::ir {

namespace {

int64_t round_up(int64_t bytes, int64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

// One arena buffer: a non-view result and the views of it.
struct Interval {
  const Value* value = nullptr;
  int64_t size = 0;  // aligned
  int start = 0;     // producing op
  int end = 0;       // last op reading it or a view of it
  int64_t offset = 0;
};

// Note [Offset assignment]
void assign_offsets(std::vector<Interval>& buffers, const MayShare& may_share) {
  std::vector<size_t> order(buffers.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (buffers[a].size != buffers[b].size) return buffers[a].size > buffers[b].size;
    return buffers[a].start < buffers[b].start;
  });
  std::vector<const Interval*> placed;
  std::vector<const Interval*> overlapping;
  for (size_t index : order) {
    Interval& b = buffers[index];
    if (b.size == 0) continue;
    overlapping.clear();
    for (const Interval* p : placed) {
      if ((p->start <= b.end && b.start <= p->end) || (may_share && !may_share(p->value, b.value)))
        overlapping.push_back(p);
    }
    std::sort(overlapping.begin(), overlapping.end(),
              [](const Interval* x, const Interval* y) { return x->offset < y->offset; });
    int64_t top = 0;
    int64_t best = -1;
    int64_t best_gap = 0;
    for (const Interval* p : overlapping) {
      int64_t gap = p->offset - top;
      if (gap >= b.size && (best < 0 || gap < best_gap)) {
        best = top;
        best_gap = gap;
      }
      top = std::max(top, p->offset + p->size);
    }
    b.offset = best >= 0 ? best : top;
    placed.push_back(&b);
  }
}

std::string value_label(const Value* v, const std::unordered_map<const Operation*, int>& op_index) {
  if (v->producer() == nullptr) return "'" + v->name() + "'";
  auto it = op_index.find(v->producer());
  std::string where =
      it == op_index.end() ? "an erased operation" : "operation " + std::to_string(it->second);
  return "result " + std::to_string(v->result_index()) + " of " + where + " (" +
         v->producer()->name() + ")";
}

}  // namespace

MemoryPlan plan_memory(const Program& program,
                       const std::unordered_map<const Value*, Shape>& shapes, int64_t alignment,
                       const MayShare& may_share) {
  OAR_CHECK_ARG(alignment > 0,
                "plan_memory: alignment must be positive but is " + std::to_string(alignment));
  const Block& block = program.block();
  const int num_ops = static_cast<int>(block.size());
  std::unordered_map<const Operation*, int> op_index;
  for (int i = 0; i < num_ops; ++i) op_index[&block.op(static_cast<size_t>(i))] = i;

  MemoryPlan plan;
  auto bytes_of = [&](const Value* v) {
    auto it = shapes.find(v);
    if (it == shapes.end()) {
      throw Error(ErrorCode::invalid_argument, "plan_memory: no shape was given for " +
                                                   value_label(v, op_index) +
                                                   "; pass the shapes infer_shapes() returns");
    }
    return shape_numel(it->second) * static_cast<int64_t>(dtype_size(v->type().dtype));
  };

  // Placements. A view's alias_of is its operand; the root of a chain of
  // views is the value that owns the memory.
  for (const auto* list : {&program.inputs(), &program.parameters(), &program.constants()}) {
    for (const Value* v : *list) plan.buffers[v] = {Placement::external, 0, bytes_of(v), nullptr};
  }
  std::unordered_map<const Value*, const Value*> root;
  auto root_of = [&](const Value* v) {
    auto it = root.find(v);
    return it == root.end() ? v : it->second;
  };
  for (int i = 0; i < num_ops; ++i) {
    const Operation& op = block.op(static_cast<size_t>(i));
    bool view = op.def().kind == OpKind::view && !op.operands().empty();
    for (const Value* r : op.results()) {
      if (view) {
        plan.buffers[r] = {Placement::alias, 0, bytes_of(r), op.operand(0)};
        root[r] = root_of(op.operand(0));
      } else {
        plan.buffers[r] = {Placement::arena, 0, bytes_of(r), nullptr};
      }
    }
  }
  auto mark_output = [&](const Value* v) {
    auto it = plan.buffers.find(root_of(v));
    if (it != plan.buffers.end() && it->second.placement == Placement::arena)
      it->second.placement = Placement::output;
  };
  for (const auto& out : program.outputs()) mark_output(out.value);
  for (const auto& update : program.updates()) mark_output(update.value);

  // Liveness: readers of each value, and of each root through its views.
  std::unordered_map<const Value*, std::vector<int>> root_readers;
  for (int i = 0; i < num_ops; ++i) {
    const Operation& op = block.op(static_cast<size_t>(i));
    // A control-flow op reads what its regions read (Note [Control-flow ops]).
    std::vector<Value*> read = op.operands();
    if (is_control_flow(op)) {
      for (Value* v : captured_values(op)) read.push_back(v);
    }
    for (const Value* v : read) {
      plan.last_use[v] = i;  // ops are visited in order
      auto& readers = root_readers[root_of(v)];
      if (readers.empty() || readers.back() != i) readers.push_back(i);
    }
    for (const Value* r : op.results()) {
      if (plan.last_use.find(r) == plan.last_use.end()) plan.last_use[r] = i;
    }
  }

  std::vector<Interval> intervals;
  for (int i = 0; i < num_ops; ++i) {
    for (const Value* r : block.op(static_cast<size_t>(i)).results()) {
      const BufferAssignment& b = plan.buffers.at(r);
      if (b.placement == Placement::output) plan.output_bytes += b.bytes;
      if (b.placement != Placement::arena) continue;
      Interval interval{r, round_up(b.bytes, alignment), i, i, 0};
      auto it = root_readers.find(r);
      if (it != root_readers.end()) interval.end = std::max(i, it->second.back());
      plan.naive_bytes += interval.size;
      intervals.push_back(interval);
    }
  }
  assign_offsets(intervals, may_share);
  for (const Interval& b : intervals) {
    plan.buffers.at(b.value).offset = b.offset;
    if (b.size > 0) plan.arena_bytes = std::max(plan.arena_bytes, b.offset + b.size);
  }

  // Write-after-read order for several streams: a writer follows every op
  // that touched earlier bytes it overwrites.
  plan.reuse_after.assign(static_cast<size_t>(num_ops), {});
  for (const Interval& w : intervals) {
    if (w.size == 0) continue;
    auto& after = plan.reuse_after[static_cast<size_t>(w.start)];
    for (const Interval& u : intervals) {
      if (u.size == 0 || u.end >= w.start || u.offset >= w.offset + w.size ||
          w.offset >= u.offset + u.size)
        continue;
      auto it = root_readers.find(u.value);
      if (it == root_readers.end()) {
        after.push_back(u.start);
      } else {
        after.insert(after.end(), it->second.begin(), it->second.end());
      }
    }
  }
  for (auto& after : plan.reuse_after) {
    std::sort(after.begin(), after.end());
    after.erase(std::unique(after.begin(), after.end()), after.end());
  }
  return plan;
}

namespace {
std::string human_bytes(int64_t bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) {
    value /= 1024;
    ++unit;
  }
  char buf[32];
  if (unit == 0) {
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f", value);
    std::string text = buf;
    if (text.size() > 2 && text.compare(text.size() - 2, 2, ".0") == 0)
      text.resize(text.size() - 2);
    return text + " " + units[unit];
  }
  return buf;
}
}  // namespace

std::string memory_summary(const MemoryPlan& plan) {
  int64_t saved =
      plan.naive_bytes > 0
          ? std::llround(100.0 * static_cast<double>(plan.naive_bytes - plan.arena_bytes) /
                         static_cast<double>(plan.naive_bytes))
          : 0;
  return "memory plan: peak " + human_bytes(plan.arena_bytes) + " (arena), naive " +
         human_bytes(plan.naive_bytes) + ", outputs " + human_bytes(plan.output_bytes) +
         " (reuse saves " + std::to_string(saved) + "%)";
}

namespace {

class MemoryPlanningPass final : public Pass {
 public:
  explicit MemoryPlanningPass(std::ostream* os) : os_(os) {}

  std::string name() const override { return "memory_planning"; }

  bool run(Program& program) override {
    std::ostream& os = os_ ? *os_ : std::cerr;
    for (const Value* input : program.inputs()) {
      if (!input->type().is_static()) {
        os << "memory plan: needs concrete input shapes (input '" << input->name() << "' has type "
           << input->type().str() << ")\n";
        return false;
      }
    }
    auto shapes = infer_shapes(program, static_input_shapes(program));
    os << memory_summary(plan_memory(program, shapes)) << "\n";
    return false;
  }

 private:
  std::ostream* os_;
};

}  // namespace

std::unique_ptr<Pass> make_memory_planning_pass(std::ostream* os) {
  return std::make_unique<MemoryPlanningPass>(os);
}

}  // namespace oar::ir
