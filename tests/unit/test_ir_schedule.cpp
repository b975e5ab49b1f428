// Stream assignment and event scheduling (oar/ir/schedule.h) as pure
// functions of a block and its memory plan: no device is involved.
#include <vector>

#include "oar/ir/memory_planner.h"
#include "oar/ir/schedule.h"
#include "oar/ir/shape_inference.h"
#include "oar/ir/verifier.h"
#include "test_util.h"

using oar::DType;
using oar::OpDef;
using oar::OpRegistry;
using oar::Shape;
using oar::TensorMeta;
using oar::ir::Program;
using oar::ir::Value;
namespace ir = oar::ir;

namespace {

Value* emit(Program& p, const char* name, std::vector<Value*> operands) {
  const OpDef& d = OpRegistry::instance().get(name);
  std::vector<TensorMeta> in;
  for (const Value* v : operands) in.push_back({v->type().dtype, v->type().dims});
  std::vector<ir::TensorType> types;
  for (const TensorMeta& m : d.meta(d, in, {})) types.push_back({m.dtype, m.shape});
  return p.append(d, std::move(operands), {}, types)->result(0);
}

// add(exp(neg(x)), cos(sin(x))): two independent branches and a join.
Program two_branches() {
  Program p;
  Value* x = p.add_input("x", {DType::f32, Shape{1024}});
  Value* a = emit(p, "exp", {emit(p, "neg", {x})});
  Value* b = emit(p, "cos", {emit(p, "sin", {x})});
  p.add_output(emit(p, "add", {a, b}));
  ir::verify(p);
  return p;
}

std::vector<int> all_ops(const Program& p) {
  std::vector<int> out;
  for (size_t i = 0; i < p.block().size(); ++i) out.push_back(static_cast<int>(i));
  return out;
}

}  // namespace

TEST_CASE("schedule: independent branches go to two streams and the join waits for the other one") {
  Program p = two_branches();
  std::vector<int> streams = ir::assign_streams(p.block(), 2);
  // neg and exp chain on stream 0, sin starts on the least recently used
  // stream 1 and cos follows it, the join follows exp's stream.
  CHECK(streams == std::vector<int>{0, 0, 1, 1, 0});

  auto shapes = ir::infer_shapes(p, ir::static_input_shapes(p));
  ir::MemoryPlan plan = ir::plan_memory(p, shapes, 64, ir::same_stream_sharing(p.block(), streams));
  // The branches keep their own bytes: neg's dead buffer is not reused by sin.
  const Value* neg = p.block().op(0).result(0);
  const Value* sin = p.block().op(2).result(0);
  CHECK(plan.buffers.at(neg).offset != plan.buffers.at(sin).offset);

  ir::Schedule s = ir::schedule_block(p.block(), plan, all_ops(p), streams, 2);
  REQUIRE(s.instructions.size() == 5);
  CHECK(s.streams_used == 2);
  std::vector<std::vector<int>> waits;
  for (const ir::Instruction& ins : s.instructions) waits.push_back(ins.wait_for);
  CHECK(waits == std::vector<std::vector<int>>{{}, {}, {}, {}, {3}});
  CHECK(s.recorded == std::vector<bool>{false, false, false, true, false});
  CHECK(s.instructions[4].op_index == 4);
  CHECK(s.instructions[3].stream == 1);
}

TEST_CASE("schedule: one stream has no waits, and unlaunched ops are left out") {
  Program p = two_branches();
  std::vector<int> streams = ir::assign_streams(p.block(), 1);
  CHECK(streams == std::vector<int>{0, 0, 0, 0, 0});
  CHECK(ir::same_stream_sharing(p.block(), streams) == nullptr);
  auto shapes = ir::infer_shapes(p, ir::static_input_shapes(p));
  ir::MemoryPlan plan = ir::plan_memory(p, shapes);
  ir::Schedule s = ir::schedule_block(p.block(), plan, {0, 2, 4}, streams, 1);
  REQUIRE(s.instructions.size() == 3);
  CHECK(s.streams_used == 1);
  for (const ir::Instruction& ins : s.instructions) {
    CHECK(ins.stream == 0);
    CHECK(ins.wait_for.empty());
  }
  CHECK(s.instructions[1].op_index == 2);
  CHECK(s.recorded == std::vector<bool>{false, false, false});
}

TEST_CASE("schedule: a write over bytes another stream still reads waits for that reader") {
  // neg's result is read on stream 0 (exp) and on stream 1 (sin); cos on
  // stream 0 then reuses its bytes and must wait for the reader on stream 1.
  Program p;
  Value* x = p.add_input("x", {DType::f32, Shape{256}});
  Value* a = emit(p, "neg", {x});         // op 0, stream 0
  Value* b = emit(p, "exp", {a});         // op 1, stream 0 (chain)
  Value* c = emit(p, "sin", {a});         // op 2, stream 1 (a's producer is not the latest on 0)
  Value* d = emit(p, "cos", {b});         // op 3, stream 0; may take a's bytes (a's last reader is op 2)
  p.add_output(emit(p, "add", {c, d}));  // op 4
  ir::verify(p);
  std::vector<int> streams = ir::assign_streams(p.block(), 2);
  CHECK(streams == std::vector<int>{0, 0, 1, 0, 1});
  auto shapes = ir::infer_shapes(p, ir::static_input_shapes(p));
  ir::MemoryPlan plan = ir::plan_memory(p, shapes, 64, ir::same_stream_sharing(p.block(), streams));
  REQUIRE(plan.buffers.at(d).offset == plan.buffers.at(a).offset);  // same stream, disjoint lifetimes
  ir::Schedule s = ir::schedule_block(p.block(), plan, all_ops(p), streams, 2);
  CHECK(s.instructions[2].wait_for == std::vector<int>{0});  // sin reads neg from stream 0
  CHECK(s.instructions[3].wait_for == std::vector<int>{2});  // cos overwrites what sin reads
  CHECK(s.reuse_after[3] == std::vector<int>{0, 1, 2});      // neg wrote them, exp and sin read them
  CHECK(s.instructions[4].wait_for == std::vector<int>{3});
}
