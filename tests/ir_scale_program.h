// A program of any size for the scaling test and bench (test_ir_scale.cpp,
// bench/ir_scale_bench.cpp): 10 operations per repetition, of which the
// default pipeline keeps 4, so what it must leave is known by hand.
#pragma once

#include <vector>

#include "oar/ir/program.h"
#include "oar/op.h"

namespace oar_test {

/// input x: f32[4]; h = x; then `reps` times (r = 0, 1, ...):
///   c = full([4], 0.125 * (r % 7))      folded
///   d = add(c, c)                       folded (c's constant then dropped)
///   a1 = add(h, d); a2 = add(h, d)      a2 merged into a1 (CSE)
///   m = mul(a1, a2)
///   e = exp(m); n = neg(e)              dead (DCE)
///   s = sub(m, h); u = sub(m, h)        u merged into s
///   h = add(s, u)
/// output h. In numbers: h <- 2 * ((h + 0.25 * (r % 7))^2 - h).
inline oar::ir::Program scale_program(int reps) {
  using oar::ir::TensorType;
  using oar::ir::Value;
  const TensorType t{oar::DType::f32, {4}};
  auto& registry = oar::OpRegistry::instance();
  const oar::OpDef& full = registry.get("full");
  const oar::OpDef& add = registry.get("add");
  const oar::OpDef& mul = registry.get("mul");
  const oar::OpDef& sub = registry.get("sub");
  const oar::OpDef& exp = registry.get("exp");
  const oar::OpDef& neg = registry.get("neg");
  oar::ir::Program p;
  Value* h = p.add_input("x", t);
  auto op = [&](const oar::OpDef& def, std::vector<Value*> operands, oar::Attrs attrs = {}) {
    return p.append(def, std::move(operands), std::move(attrs), {t})->result();
  };
  for (int r = 0; r < reps; ++r) {
    Value* c = op(full, {},
                  {{"shape", std::vector<int64_t>{4}},
                   {"dtype", static_cast<int64_t>(oar::DType::f32)},
                   {"value", 0.125 * (r % 7)}});
    Value* d = op(add, {c, c});
    Value* a1 = op(add, {h, d});
    Value* a2 = op(add, {h, d});
    Value* m = op(mul, {a1, a2});
    op(neg, {op(exp, {m})});
    Value* s = op(sub, {m, h});
    Value* u = op(sub, {m, h});
    h = op(add, {s, u});
  }
  p.add_output(h, "h");
  return p;
}

}  // namespace oar_test
