// Tracing cond and while into regions.
//
// Note [Tracing control flow]
// The control-flow op is added first, without results, where tracing is
// (Tracer::emit). Each region is then traced by running its function with
// the tracer appending to that region (the region's arguments are symbolic
// tensors) and is ended by a yield of what the function returned. A cond
// gets its results once both branches are known (cond_result_types); a
// while's region arguments and results take the carried values' types,
// example shapes and symbolic shapes. Values made inside a region stay
// there: one that escapes (kept in a Python variable and used after the
// op) is caught by the verifier when the trace ends. A branch or body that
// gives a different example shape than its counterpart is refused here,
// since the executor plans memory from static result shapes.
#include "oar/error.h"
#include "oar/ir/control_flow.h"
#include "oar/ir/trace.h"

#include <algorithm>

namespace oar::ir {

namespace {

bool is_one_element_bool(const Tensor& t) {
  return t.dtype() == DType::boolean && shape_numel(t.shape()) == 1;
}

std::string example_type(const Tensor& t) { return TensorType{t.dtype(), t.shape()}.str(); }

}  // namespace

std::vector<Tensor> Tracer::trace_region(Block& region, const RegionFunction& fn,
                                         const std::vector<Tensor>& args) {
  regions_.push_back(&region);
  struct Pop {
    std::vector<Block*>& stack;
    ~Pop() { stack.pop_back(); }
  } pop{regions_};
  std::vector<Tensor> out = fn(args);
  std::vector<Value*> yielded;
  for (const Tensor& t : out) {
    OAR_CHECK_ARG(t.defined(), "trace: a region function returned an undefined tensor");
    yielded.push_back(capture(t));
  }
  program_.append(region, yield_op(), std::move(yielded), {}, {});
  return out;
}

std::vector<Tensor> Tracer::trace_cond(const Tensor& pred, const RegionFunction& then_fn,
                                       const RegionFunction& else_fn, const std::string& where) {
  OAR_CHECK_ARG(pred.defined() && is_one_element_bool(pred),
                where + ": the predicate must be a one-element bool tensor but is " +
                    (pred.defined() ? example_type(pred) : std::string("undefined")));
  Operation* op = emit(cond_op(), {capture(pred)}, {}, {});
  std::vector<Tensor> then_out = trace_region(op->add_region(), then_fn, {});
  std::vector<Tensor> else_out = trace_region(op->add_region(), else_fn, {});
  std::vector<TensorType> then_types, else_types;
  for (const Tensor& t : then_out) then_types.push_back(capture(t)->type());
  for (const Tensor& t : else_out) else_types.push_back(capture(t)->type());
  std::vector<TensorType> types = cond_result_types(then_types, else_types, where);
  std::vector<Tensor> results;
  for (size_t k = 0; k < types.size(); ++k) {
    OAR_CHECK_ARG(then_out[k].shape() == else_out[k].shape(),
                  where + ": the branches give different shapes for value " + std::to_string(k) +
                      ": " + example_type(then_out[k]) + " (true branch) and " +
                      example_type(else_out[k]) + " (false branch)");
    const SymShape& a = symbolic_shape(capture(then_out[k]));
    const SymShape& b = symbolic_shape(capture(else_out[k]));
    SymShape sym = a;
    for (size_t d = 0; d < sym.size(); ++d) {
      if (a[d] != b[d]) sym[d] = symbols_.fresh();
    }
    types[k].dims = SymbolTable::type_dims(sym);
    results.push_back(symbolic(program_.add_result(*op, types[k]), then_out[k].shape(), sym));
  }
  return results;
}

// Note [Growing loop values]
// A loop whose body changes a carried value's size along some dims (a
// decoded sequence, ys = concat([ys, token], 1)) is traced again with
// those dims dynamic: the regions' arguments and the loop's results get
// a new data-dependent symbol there (SymbolTable::data_dependent: how
// often the loop runs decides it), so converted code reads that size as a
// tensor (Note [nonzero] in core/src/ops/index_values.cpp) and the
// program runs interpreted (the memory planner cannot plan a shape that
// changes per iteration). dtype and rank stay fixed. A loop whose
// iterations are saved for its backward cannot grow: its stacks need one
// shape.
std::vector<Tensor> Tracer::trace_while(const RegionFunction& cond_fn,
                                        const RegionFunction& body_fn,
                                        const std::vector<Tensor>& init, const std::string& where,
                                        bool save_iterations) {
  OAR_CHECK_ARG(!init.empty(), where + ": a loop needs at least one loop variable");
  std::vector<Value*> carried;
  for (const Tensor& t : init) carried.push_back(capture(t));
  const bool top_level = regions_.empty();
  std::vector<std::vector<bool>> grown(init.size());
  for (size_t k = 0; k < init.size(); ++k) grown[k].assign(init[k].shape().size(), false);
  for (;;) {
    Operation* op = emit(while_op(), carried, {}, {});
    std::vector<Tensor> results;
    try {
      results = trace_while_regions(op, carried, grown, cond_fn, body_fn, init, where, save_iterations);
    } catch (...) {
      op->block()->erase(op);  // its regions (and what they hold) go with it; nothing outside uses it yet
      if (top_level) --cursor_;
      throw;
    }
    if (!results.empty()) return results;
    op->block()->erase(op);  // a carried dim grows: trace the loop again (Note [Growing loop values])
    if (top_level) --cursor_;
  }
}

std::vector<Tensor> Tracer::trace_while_regions(Operation* op, const std::vector<Value*>& carried,
                                                std::vector<std::vector<bool>>& grown,
                                                const RegionFunction& cond_fn, const RegionFunction& body_fn,
                                                const std::vector<Tensor>& init, const std::string& where,
                                                bool save_iterations) {
  // The carried types and symbols: a grown dim dynamic, one data-dependent symbol per grown dim.
  std::vector<TensorType> types;
  std::vector<SymShape> shapes;
  for (size_t k = 0; k < carried.size(); ++k) {
    TensorType type = carried[k]->type();
    SymShape shape = symbolic_shape(carried[k]);
    for (size_t d = 0; d < grown[k].size(); ++d) {
      if (!grown[k][d]) continue;
      type.dims[d] = kDynamic;
      shape[d] = symbols_.fresh_data_dependent();
    }
    types.push_back(type);
    shapes.push_back(shape);
  }
  auto arguments = [&](Block& region) {
    std::vector<Tensor> args;
    for (size_t k = 0; k < carried.size(); ++k)
      args.push_back(symbolic(program_.add_argument(region, types[k]), example_shape(carried[k]), shapes[k]));
    return args;
  };
  Block& condition = op->add_region();
  std::vector<Tensor> going = trace_region(condition, cond_fn, arguments(condition));
  OAR_CHECK_ARG(
      going.size() == 1 && is_one_element_bool(going[0]),
      where + ": the loop condition must give one one-element bool tensor but gives " +
          (going.size() == 1 ? example_type(going[0]) : std::to_string(going.size()) + " values"));
  Block& body = op->add_region();
  std::vector<Tensor> next = trace_region(body, body_fn, arguments(body));
  OAR_CHECK_ARG(next.size() == init.size(), where + ": the body gives " +
                                                std::to_string(next.size()) + " values for " +
                                                std::to_string(init.size()) + " loop variables");
  bool again = false;
  for (size_t k = 0; k < init.size(); ++k) {
    const bool same_kind = next[k].dtype() == init[k].dtype() && next[k].shape().size() == init[k].shape().size();
    if (same_kind && !save_iterations) {
      for (size_t d = 0; d < grown[k].size(); ++d) {
        if (next[k].shape()[d] != init[k].shape()[d] && !grown[k][d]) {
          grown[k][d] = true;
          again = true;
        }
      }
      continue;
    }
    OAR_CHECK_ARG(next[k].dtype() == init[k].dtype() && next[k].shape() == init[k].shape(),
                  where + ": the body changes loop variable " + std::to_string(k) + " from " +
                      example_type(init[k]) + " to " + example_type(next[k]) +
                      (same_kind ? "; a loop whose iterations are saved for its backward keeps every carried "
                                   "value's shape"
                                 : "; a loop-carried value keeps its dtype and rank"));
  }
  if (again) return {};
  for (const auto& dims : grown) {
    if (std::find(dims.begin(), dims.end(), true) != dims.end()) op->mutable_attrs().set("grows", true);
  }
  std::vector<Tensor> results;
  for (size_t k = 0; k < init.size(); ++k) {
    SymShape shape = shapes[k];
    for (size_t d = 0; d < grown[k].size(); ++d) {
      if (grown[k][d]) shape[d] = symbols_.fresh_data_dependent();
    }
    results.push_back(symbolic(program_.add_result(*op, types[k]), example_shape(carried[k]), shape));
  }
  if (save_iterations) {  // as append_backward adds them (Note [VJP of while])
    op->mutable_attrs().set("save_iterations", true);
    const int64_t iterations = symbols_.fresh();  // one count for every stack of the loop
    for (size_t k = 0; k < init.size(); ++k) {
      Value* v = carried[k];
      TensorType type = types[k];
      type.dims.insert(type.dims.begin(), kDynamic);
      SymShape shape = shapes[k];
      shape.insert(shape.begin(), iterations);
      Shape example = example_shape(v);
      example.insert(example.begin(), symbols_.sample({iterations}, 0)[0]);
      results.push_back(symbolic(program_.add_result(*op, type), example, shape));
    }
  }
  return results;
}

}  // namespace oar::ir
