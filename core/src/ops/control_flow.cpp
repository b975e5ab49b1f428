// The control-flow ops cond, while and their terminator yield (Note
// [Control-flow ops] in core/ir/include/oar/ir/control_flow.h). Their
// results come from their regions, so their meta rule only explains that;
// the IR (verifier, shape inference, the region runner) handles them.
#include "ops/op_util.h"

namespace oar {

namespace {

std::vector<TensorMeta> region_op_meta(const OpDef& op, std::span<const TensorMeta>, const Attrs&) {
  throw Error(ErrorCode::invalid_argument,
              op.name + ": its result types come from its regions; it runs only as an operation of a "
                        "program (oar::ir::run_control_flow), not as a plain op");
}

std::vector<TensorMeta> yield_meta(const OpDef&, std::span<const TensorMeta>, const Attrs&) { return {}; }

}  // namespace

OAR_REGISTER_OPS(control_flow) {
  add_op({.name = "cond", .num_inputs = 1, .num_outputs = -1, .meta = region_op_meta,
          .differentiable = false, .dtypes = {.accepts = dtype_bit(DType::boolean)},
          .doc = "the yields of region 0 when the one-element bool operand is true, else of region 1"});
  add_op({.name = "while", .num_inputs = -1, .num_outputs = -1, .meta = region_op_meta,
          .differentiable = false,
          .attrs = {attr("save_iterations", false,
                         "also return, per carried value, the stack of its values entering each iteration"),
                    attr("grows", false,
                         "a carried value changes its size along a dynamic dim per iteration (Note [Growing loop "
                         "values] in core/ir/src/trace_control_flow.cpp): the program runs interpreted")},
          .dtypes = {.accepts = kAllDTypes},
          .doc = "carried values: region 1 (body) runs while region 0 (condition) yields true"});
  add_op({.name = "yield", .num_inputs = -1, .num_outputs = 0, .meta = yield_meta,
          .differentiable = false, .dtypes = {.accepts = kAllDTypes},
          .doc = "ends a region of cond or while; its operands are the region's results"});
}

}  // namespace oar
