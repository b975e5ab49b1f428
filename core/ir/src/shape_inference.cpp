// Concrete shapes of every value from the input shapes.
#include "oar/ir/shape_inference.h"

#include "oar/error.h"

namespace oar::ir {

namespace {
std::string at_op(size_t index, const Operation& op) {
  return "operation " + std::to_string(index) + " (" + op.name() + ")";
}
}  // namespace

std::vector<Shape> static_input_shapes(const Program& program) {
  std::vector<Shape> shapes;
  for (const Value* v : program.inputs()) {
    OAR_CHECK_ARG(v->type().is_static(), "program: input '" + v->name() + "' has dynamic type " + v->type().str() +
                                             "; give concrete input shapes");
    shapes.push_back(v->type().dims);
  }
  return shapes;
}

std::unordered_map<const Value*, Shape> infer_shapes(const Program& program, const std::vector<Shape>& input_shapes) {
  OAR_CHECK_ARG(input_shapes.size() == program.inputs().size(),
                "program: expected " + std::to_string(program.inputs().size()) + " input shapes but got " +
                    std::to_string(input_shapes.size()));
  std::unordered_map<const Value*, Shape> shapes;
  for (size_t i = 0; i < input_shapes.size(); ++i) {
    const Value* v = program.inputs()[i];
    OAR_CHECK_ARG(v->type().matches(input_shapes[i]), "program: input '" + v->name() + "' expects " +
                                                          v->type().str() + " but got shape " +
                                                          shape_str(input_shapes[i]));
    shapes[v] = input_shapes[i];
  }
  for (const Value* v : program.parameters()) shapes[v] = v->type().dims;
  for (const Value* v : program.constants()) shapes[v] = v->type().dims;
  std::vector<TensorMeta> metas;
  const auto& ops = program.block().ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    const Operation& op = *ops[i];
    metas.clear();
    for (const Value* v : op.operands()) {
      auto it = shapes.find(v);
      OAR_CHECK_ARG(it != shapes.end(), "program: " + at_op(i, op) + " uses a value defined after it or nowhere");
      metas.push_back({v->type().dtype, it->second});
    }
    std::vector<TensorMeta> out;
    try {
      out = infer_meta(op.def(), metas, op.attrs());
    } catch (const Error& e) {
      throw Error(e.code(), "program: " + at_op(i, op) + " rejects these shapes: " + e.what());
    }
    OAR_CHECK_ARG(out.size() == op.results().size(),
                  "program: " + at_op(i, op) + " has " + std::to_string(op.results().size()) +
                      " results but its meta rule gives " + std::to_string(out.size()));
    for (size_t r = 0; r < out.size(); ++r) shapes[op.result(r)] = std::move(out[r].shape);
  }
  return shapes;
}

void specialize_types(Program& program, const std::vector<Shape>& input_shapes) {
  auto shapes = infer_shapes(program, input_shapes);
  for (Value* v : program.inputs()) v->set_type({v->type().dtype, shapes.at(v)});
  for (const auto& op : program.block().ops()) {
    for (Value* r : op->results()) r->set_type({r->type().dtype, shapes.at(r)});
  }
}

}  // namespace oar::ir
