// The memory planner: buffer reuse on chains, the never-share-live-bytes
// property on random programs, views aliasing their operand, a training
// step's peak against every-value-its-own-buffer, and the summary line.
#include <algorithm>
#include <random>
#include <sstream>
#include <unordered_map>

#include "oar/ir/autodiff.h"
#include "oar/ir/memory_planner.h"
#include "oar/ir/pass.h"
#include "oar/ir/shape_inference.h"
#include "oar/ir/verifier.h"
#include "test_util.h"

using oar::Attrs;
using oar::DType;
using oar::OpDef;
using oar::OpKind;
using oar::OpRegistry;
using oar::Shape;
using oar::TensorMeta;
using oar::ir::MemoryPlan;
using oar::ir::Operation;
using oar::ir::Placement;
using oar::ir::Program;
using oar::ir::TensorType;
using oar::ir::Value;

namespace {

Value* emit(Program& p, const char* name, std::vector<Value*> operands, const Attrs& attrs = {}) {
  const OpDef& d = OpRegistry::instance().get(name);
  std::vector<TensorMeta> in;
  for (const Value* v : operands) in.push_back({v->type().dtype, v->type().dims});
  std::vector<TensorType> types;
  for (const TensorMeta& m : d.meta(d, in, attrs)) types.push_back({m.dtype, m.shape});
  return p.append(d, std::move(operands), attrs, types)->result(0);
}

TensorType f32(Shape dims) { return {DType::f32, std::move(dims)}; }

Attrs scalar_attrs(double value) {
  return {{"shape", Shape{}}, {"dtype", static_cast<int64_t>(DType::f32)}, {"value", value}};
}

MemoryPlan plan_for(const Program& p, int64_t alignment = 64) {
  oar::ir::verify(p);
  return oar::ir::plan_memory(p, oar::ir::infer_shapes(p, oar::ir::static_input_shapes(p)),
                              alignment);
}

int64_t aligned(int64_t bytes, int64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

// Lifetimes computed independently of the planner: a buffer lives from its
// producer to the last op reading it or any view of it.
struct Lifetimes {
  std::unordered_map<const Value*, const Value*> root;         // view -> owner
  std::unordered_map<const Value*, int> start, end;            // per owner
  std::unordered_map<const Value*, std::vector<int>> readers;  // per owner
};

Lifetimes lifetimes(const Program& p) {
  Lifetimes l;
  auto root_of = [&](const Value* v) { return l.root.count(v) ? l.root.at(v) : v; };
  for (int i = 0; i < static_cast<int>(p.block().size()); ++i) {
    const Operation& op = p.block().op(static_cast<size_t>(i));
    for (const Value* v : op.operands()) {
      const Value* r = root_of(v);
      l.end[r] = std::max(l.end.count(r) ? l.end[r] : i, i);
      l.readers[r].push_back(i);
    }
    for (const Value* r : op.results()) {
      if (op.def().kind == OpKind::view) l.root[r] = root_of(op.operand(0));
      l.start[r] = i;
      if (!l.end.count(r)) l.end[r] = i;
    }
  }
  return l;
}

// Every property the plan promises, checked pair by pair.
void check_plan(const Program& p, const MemoryPlan& plan, int64_t alignment) {
  Lifetimes life = lifetimes(p);
  std::vector<const Value*> arena;
  int64_t naive = 0;
  for (const auto& op : p.block().ops()) {
    for (const Value* r : op->results()) {
      REQUIRE(plan.buffers.count(r));
      const auto& b = plan.buffers.at(r);
      if (op->def().kind == OpKind::view) {
        CHECK(b.placement == Placement::alias);
        CHECK(b.alias_of == op->operand(0));
      } else if (b.placement == Placement::arena) {
        CHECK(b.offset % alignment == 0);
        CHECK(b.offset + b.bytes <= plan.arena_bytes);
        naive += aligned(b.bytes, alignment);
        arena.push_back(r);
      } else {
        CHECK(b.placement == Placement::output);
      }
    }
  }
  // Outputs and updates own fresh memory (or views of it, or external memory).
  for (const auto* list : {&p.outputs(), &p.updates()}) {
    for (const auto& named : *list) {
      const Value* owner = life.root.count(named.value) ? life.root.at(named.value) : named.value;
      Placement placement = plan.buffers.at(owner).placement;
      CHECK((placement == Placement::output || placement == Placement::external));
    }
  }
  CHECK(plan.naive_bytes == naive);
  CHECK(plan.arena_bytes <= plan.naive_bytes);

  int64_t lower_bound = 0;
  for (int t = 0; t < static_cast<int>(p.block().size()); ++t) {
    int64_t live = 0;
    for (const Value* v : arena) {
      if (life.start[v] <= t && t <= life.end[v])
        live += aligned(plan.buffers.at(v).bytes, alignment);
    }
    lower_bound = std::max(lower_bound, live);
  }
  CHECK(plan.arena_bytes >= lower_bound);

  for (const Value* a : arena) {
    const auto& ba = plan.buffers.at(a);
    for (const Value* b : arena) {
      if (a == b) continue;
      const auto& bb = plan.buffers.at(b);
      bool live_together = life.start[a] <= life.end[b] && life.start[b] <= life.end[a];
      bool share_bytes = ba.bytes > 0 && bb.bytes > 0 && ba.offset < bb.offset + bb.bytes &&
                         bb.offset < ba.offset + ba.bytes;
      INFO("values %" << a->id() << " [" << life.start[a] << ", " << life.end[a] << "] at "
                      << ba.offset << "+" << ba.bytes << " and %" << b->id() << " ["
                      << life.start[b] << ", " << life.end[b] << "] at " << bb.offset << "+"
                      << bb.bytes);
      CHECK_FALSE((live_together && share_bytes));
      // A writer reusing bytes is ordered after everything that read them.
      if (share_bytes && life.end[b] < life.start[a]) {
        const auto& after = plan.reuse_after.at(static_cast<size_t>(life.start[a]));
        std::vector<int> needed =
            life.readers.count(b) ? life.readers[b] : std::vector<int>{life.start[b]};
        for (int reader : needed) CHECK(std::count(after.begin(), after.end(), reader) == 1);
      }
    }
  }
  for (const auto& op : p.block().ops()) {
    for (const Value* v : op->operands()) {
      int last = -1;
      for (int i = 0; i < static_cast<int>(p.block().size()); ++i) {
        const auto& ops = p.block().op(static_cast<size_t>(i)).operands();
        if (std::count(ops.begin(), ops.end(), v)) last = i;
      }
      CHECK(plan.last_use.at(v) == last);
    }
  }
}

}  // namespace

TEST_CASE("a chain of elementwise ops needs two buffers") {
  Program p;
  Value* x = p.add_input("x", f32({256}));  // 1 KiB per value
  Value* v = x;
  std::vector<Value*> chain;
  for (int i = 0; i < 10; ++i) {
    v = emit(p, i % 2 ? "exp" : "neg", {v});
    chain.push_back(v);
  }
  Value* out = emit(p, "tanh", {v});
  p.add_output(out);

  MemoryPlan plan = plan_for(p);
  check_plan(p, plan, 64);
  CHECK(plan.naive_bytes == 10 * 1024);
  CHECK(plan.arena_bytes == 2 * 1024);
  CHECK(plan.output_bytes == 1024);
  CHECK(plan.buffers.at(x).placement == Placement::external);
  CHECK(plan.buffers.at(out).placement == Placement::output);
  // Values two apart reuse each other's bytes...
  CHECK(plan.buffers.at(chain[0]).offset == plan.buffers.at(chain[2]).offset);
  CHECK(plan.buffers.at(chain[0]).offset != plan.buffers.at(chain[1]).offset);
  // ...so op 2 must wait for op 1, the last reader of chain[0].
  CHECK(plan.reuse_after.size() == 11);
  CHECK(plan.reuse_after[0].empty());
  CHECK(plan.reuse_after[1].empty());
  CHECK(plan.reuse_after[2] == std::vector<int>{1});
  CHECK(plan.last_use.at(x) == 0);
  CHECK(plan.last_use.at(chain[4]) == 5);
  CHECK(plan.last_use.at(out) == 10);  // never read: its own op
  CHECK(oar::ir::memory_summary(plan) ==
        "memory plan: peak 2 KiB (arena), naive 10 KiB, outputs 1 KiB (reuse saves 80%)");
}

TEST_CASE("offsets are aligned and unused results still get bytes") {
  Program p;
  Value* x = p.add_input("x", f32({3}));  // 12 bytes
  Value* a = emit(p, "exp", {x});
  Value* unused = emit(p, "neg", {a});  // read by nobody: lives during its op only
  Value* b = emit(p, "tanh", {a});
  p.add_output(emit(p, "add", {a, b}));
  for (int64_t alignment : {1, 16, 256}) {
    CAPTURE(alignment);
    MemoryPlan plan = plan_for(p, alignment);
    check_plan(p, plan, alignment);
    CHECK(plan.buffers.at(unused).placement == Placement::arena);
    CHECK(plan.buffers.at(unused).bytes == 12);
    CHECK(plan.naive_bytes == 3 * aligned(12, alignment));
    // a lives throughout, unused and b never at once: two buffers suffice.
    CHECK(plan.arena_bytes == 2 * aligned(12, alignment));
  }
  CHECK(oar_test::error_of([&] { plan_for(p, 0); }).find("alignment") != std::string::npos);
  CHECK(oar_test::error_of([&] { oar::ir::plan_memory(p, {}); }).find("no shape") !=
        std::string::npos);
}

TEST_CASE("a view aliases its operand and keeps it alive") {
  Program p;
  Value* x = p.add_input("x", f32({2, 3}));
  Value* a = emit(p, "exp", {x});                                  // op 0
  Value* flat = emit(p, "reshape", {a}, {{"shape", Shape{6}}});    // op 1: a view of a
  Value* b = emit(p, "exp", {x});                                  // op 2
  Value* c = emit(p, "neg", {b});                                  // op 3
  Value* d = emit(p, "tanh", {flat});                              // op 4: reads a through the view
  Value* x_flat = emit(p, "reshape", {x}, {{"shape", Shape{6}}});  // op 5: a view of an input
  Value* e = emit(p, "exp", {x});                                  // op 6
  Value* e_view = emit(p, "reshape", {e}, {{"shape", Shape{3, 2}}});
  p.add_output(emit(p, "add", {d, x_flat}), "sum");
  p.add_output(c, "c");
  p.add_output(e_view, "e");

  MemoryPlan plan = plan_for(p);
  check_plan(p, plan, 64);
  const auto& fa = plan.buffers.at(flat);
  CHECK(fa.placement == Placement::alias);
  CHECK(fa.alias_of == a);
  CHECK(fa.bytes == 24);
  CHECK(plan.buffers.at(a).placement == Placement::arena);
  // a is live until op 4, so b (ops 2-3) cannot take its bytes.
  CHECK(plan.buffers.at(a).offset != plan.buffers.at(b).offset);
  CHECK(plan.buffers.at(x_flat).placement == Placement::alias);
  CHECK(plan.buffers.at(x_flat).alias_of == x);
  // An output through a view: the viewed value gets fresh output memory.
  CHECK(plan.buffers.at(e_view).placement == Placement::alias);
  CHECK(plan.buffers.at(e).placement == Placement::output);
  CHECK(plan.buffers.at(c).placement == Placement::output);
  CHECK(plan.last_use.at(a) == 1);
  CHECK(plan.last_use.at(flat) == 4);
}

TEST_CASE("random programs never give live values the same bytes") {
  std::mt19937 rng(20240611);
  const char* unary[] = {"exp", "neg", "tanh"};
  const char* binary[] = {"add", "mul", "sub"};
  for (int trial = 0; trial < 150; ++trial) {
    CAPTURE(trial);
    Program p;
    std::vector<Value*> pool;
    for (int64_t n : {1, 5, 16, 33}) pool.push_back(p.add_input("x" + std::to_string(n), f32({n})));
    pool.push_back(p.add_parameter("w", f32({16})));
    int num_ops = 2 + static_cast<int>(rng() % 60);
    auto pick = [&] { return pool[rng() % pool.size()]; };
    for (int i = 0; i < num_ops; ++i) {
      Value* a = pick();
      switch (rng() % 5) {
        case 0:
        case 1:
          pool.push_back(emit(p, unary[rng() % 3], {a}));
          break;
        case 2: {
          std::vector<Value*> same;
          for (Value* v : pool) {
            if (v->type() == a->type()) same.push_back(v);
          }
          pool.push_back(emit(p, binary[rng() % 3], {a, same[rng() % same.size()]}));
          break;
        }
        case 3: {
          int64_t n = oar::shape_numel(a->type().dims);
          Shape to = a->type().rank() == 1 ? Shape{1, n} : Shape{n};
          pool.push_back(emit(p, "reshape", {a}, {{"shape", to}}));
          break;
        }
        default: {
          std::vector<int64_t> all_axes;
          for (int64_t d = 0; d < a->type().rank(); ++d) all_axes.push_back(d);
          pool.push_back(emit(p, "sum", {a}, {{"axes", all_axes}, {"keepdim", true}}));
        }
      }
    }
    p.add_output(pool.back());
    for (int k = 0; k < 2; ++k) p.add_output(pick());
    if (rng() % 2) {
      for (Value* v : pool) {
        if (v->type() == f32({16}) && v->kind() == oar::ir::ValueKind::result) {
          p.add_update("w", v);
          break;
        }
      }
    }
    int64_t alignment = int64_t{1} << (rng() % 8);
    check_plan(p, plan_for(p, alignment), alignment);
  }
}

TEST_CASE("a training step's peak is at most half of one buffer per value") {
  // An MLP's forward, backward (written out by hand) and SGD update:
  // loss = sum((tanh(x w1) w2)^2).
  Program p;
  Value* x = p.add_input("x", f32({64, 128}));
  Value* w1 = p.add_parameter("w1", f32({128, 256}));
  Value* w2 = p.add_parameter("w2", f32({256, 10}));
  auto mm = [&](Value* a, Value* b, bool ta, bool tb) {
    return emit(p, "matmul", {a, b}, {{"transpose_a", ta}, {"transpose_b", tb}});
  };
  Value* h = mm(x, w1, false, false);
  Value* t = emit(p, "tanh", {h});
  Value* y = mm(t, w2, false, false);
  Value* loss = emit(p, "sum", {emit(p, "mul", {y, y})},
                     {{"axes", std::vector<int64_t>{0, 1}}, {"keepdim", false}});
  Value* gy = emit(p, "mul", {y, emit(p, "full", {}, scalar_attrs(2.0))});
  Value* gw2 = mm(t, gy, true, false);
  Value* gt = mm(gy, w2, false, true);
  Value* dtanh = emit(p, "sub", {emit(p, "full", {}, scalar_attrs(1.0)), emit(p, "mul", {t, t})});
  Value* gh = emit(p, "mul", {gt, dtanh});
  Value* gw1 = mm(x, gh, true, false);
  Value* lr = emit(p, "full", {}, scalar_attrs(0.1));
  p.add_update("w1", emit(p, "sub", {w1, emit(p, "mul", {gw1, lr})}));
  p.add_update("w2", emit(p, "sub", {w2, emit(p, "mul", {gw2, lr})}));
  p.add_output(loss, "loss");

  MemoryPlan plan = plan_for(p);
  check_plan(p, plan, 64);
  INFO(oar::ir::memory_summary(plan));
  CHECK(plan.arena_bytes * 2 <= plan.naive_bytes);
  CHECK(plan.output_bytes == 4 + (128 * 256 + 256 * 10) * 4);
}

TEST_CASE("a training step from program autodiff also halves the naive memory") {
  // A three-layer MLP with biases and relu, its backward from append_sgd_step.
  Program p;
  Value* h = p.add_input("x", f32({32, 64}));
  const int64_t widths[] = {64, 128, 128, 10};
  for (int layer = 0; layer < 3; ++layer) {
    std::string n = std::to_string(layer);
    Value* w = p.add_parameter("w" + n, f32({widths[layer], widths[layer + 1]}));
    Value* b = p.add_parameter("b" + n, f32({widths[layer + 1]}));
    h = emit(p, "add",
             {emit(p, "matmul", {h, w}, {{"transpose_a", false}, {"transpose_b", false}}), b});
    if (layer < 2) h = emit(p, "relu", {h});
  }
  Value* loss = emit(p, "sum", {emit(p, "mul", {h, h})},
                     {{"axes", std::vector<int64_t>{0, 1}}, {"keepdim", false}});
  p.add_output(loss, "loss");
  oar::ir::append_sgd_step(p, loss, 0.01);
  REQUIRE(p.updates().size() == 6);

  MemoryPlan plan = plan_for(p);
  check_plan(p, plan, 64);
  INFO(oar::ir::memory_summary(plan));
  CHECK(plan.arena_bytes * 2 <= plan.naive_bytes);
}

TEST_CASE("memory summary and the memory planning pass") {
  MemoryPlan plan;
  plan.arena_bytes = 1258291;  // 1.2 MiB
  plan.naive_bytes = 3565158;  // 3.4 MiB
  plan.output_bytes = 16384;
  CHECK(oar::ir::memory_summary(plan) ==
        "memory plan: peak 1.2 MiB (arena), naive 3.4 MiB, outputs 16 KiB (reuse saves 65%)");
  CHECK(oar::ir::memory_summary(MemoryPlan{}) ==
        "memory plan: peak 0 B (arena), naive 0 B, outputs 0 B (reuse saves 0%)");

  Program p;
  Value* x = p.add_input("x", f32({1024}));
  p.add_output(emit(p, "exp", {emit(p, "exp", {emit(p, "exp", {x})})}));
  std::ostringstream os;
  auto pass = oar::ir::make_memory_planning_pass(&os);
  CHECK(pass->name() == "memory_planning");
  CHECK_FALSE(pass->run(p));
  CHECK(os.str() ==
        "memory plan: peak 8 KiB (arena), naive 8 KiB, outputs 4 KiB (reuse saves 0%)\n");

  Program dynamic;
  Value* d = dynamic.add_input("tokens", f32({oar::ir::kDynamic, 8}));
  dynamic.add_output(emit(dynamic, "exp", {d}));
  std::ostringstream dos;
  CHECK_FALSE(oar::ir::make_memory_planning_pass(&dos)->run(dynamic));
  CHECK(dos.str() ==
        "memory plan: needs concrete input shapes (input 'tokens' has type f32[-1, 8])\n");
}

TEST_CASE("a may_share predicate keeps refused pairs off each other's bytes") {
  // Two chains of four 1 KiB values, one after the other in block order.
  Program p;
  Value* x = p.add_input("x", f32({256}));
  std::unordered_map<const Value*, int> chain_of;
  Value* ends[2] = {nullptr, nullptr};
  for (int c = 0; c < 2; ++c) {
    Value* v = x;
    for (int i = 0; i < 4; ++i) {
      v = emit(p, i % 2 ? "exp" : "neg", {v});
      chain_of[v] = c;
    }
    ends[c] = v;
  }
  p.add_output(emit(p, "add", {ends[0], ends[1]}));
  oar::ir::verify(p);
  auto shapes = oar::ir::infer_shapes(p, oar::ir::static_input_shapes(p));
  MemoryPlan shared = oar::ir::plan_memory(p, shapes);
  // Unrestricted, the second chain reuses the first's dead bytes: 3 buffers
  // (the first chain's end lives until the join).
  CHECK(shared.arena_bytes == 3 * 1024);
  oar::ir::MayShare same_chain = [&](const Value* a, const Value* b) { return chain_of.at(a) == chain_of.at(b); };
  MemoryPlan apart = oar::ir::plan_memory(p, shapes, 64, same_chain);
  check_plan(p, apart, 64);
  // Each chain reuses only its own bytes: two buffers per chain.
  CHECK(apart.arena_bytes == 4 * 1024);
  for (const auto& [a, ba] : apart.buffers) {
    for (const auto& [b, bb] : apart.buffers) {
      if (a == b || ba.placement != Placement::arena || bb.placement != Placement::arena) continue;
      if (chain_of.at(a) == chain_of.at(b)) continue;
      bool overlap = ba.offset < bb.offset + bb.bytes && bb.offset < ba.offset + ba.bytes;
      CHECK_FALSE(overlap);
    }
  }
  oar::ir::MayShare never = [](const Value*, const Value*) { return false; };
  CHECK(oar::ir::plan_memory(p, shapes, 64, never).arena_bytes == shared.naive_bytes);
}
