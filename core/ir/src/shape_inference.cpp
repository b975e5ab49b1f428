// Symbolic shapes (infer_types, Note [Symbolic dims] in shape_inference.h)
// and concrete shapes of every value from the input shapes.
#include "oar/ir/shape_inference.h"

#include <functional>

#include "oar/error.h"
#include "oar/ir/control_flow.h"

namespace oar::ir {

namespace {
std::string at_op(size_t index, const Operation& op) {
  return "operation " + std::to_string(index) + " (" + op.name() + ")";
}

bool is_prime(int64_t n) {
  for (int64_t d = 2; d * d <= n; ++d) {
    if (n % d == 0) return false;
  }
  return n > 1;
}

int64_t index_of(int64_t symbol) { return -1 - symbol; }
int64_t symbol_of(int64_t index) { return -1 - index; }

// A rule may reject symbolic operands once per pair of symbols it needs
// equal; past this many unifications the operands are simply incompatible.
constexpr int kMaxUnifications = 16;
}  // namespace

// ---- SymbolTable ----

int64_t SymbolTable::fresh() {
  // Sample A and B of input symbol k are the primes 2k and 2k+1 from 11 on.
  int64_t last = primes_.empty() ? 10 : primes_.back();
  int64_t pair[2];
  for (int64_t& p : pair) {
    do ++last;
    while (!is_prime(last));
    p = last;
    primes_.push_back(last);
  }
  by_samples_.emplace(std::make_pair(pair[0], pair[1]), static_cast<int64_t>(samples_.size()));
  samples_.emplace_back(pair[0], pair[1]);
  parent_.push_back(static_cast<int64_t>(parent_.size()));
  data_dependent_.push_back(false);
  return symbol_of(static_cast<int64_t>(samples_.size()) - 1);
}

int64_t SymbolTable::fresh_data_dependent() {
  const int64_t symbol = fresh();
  data_dependent_.back() = true;
  return symbol;
}

bool SymbolTable::data_dependent(int64_t dim) const {
  const int64_t d = resolve(dim);
  return d < 0 && data_dependent_[static_cast<size_t>(index_of(d))];
}

SymShape SymbolTable::fresh_shape(const TensorType& type) {
  SymShape shape = type.dims;
  for (int64_t& d : shape) {
    if (d == kDynamic) d = fresh();
  }
  return shape;
}

std::vector<int64_t> SymbolTable::type_dims(const SymShape& shape) {
  std::vector<int64_t> dims = shape;
  for (int64_t& d : dims) {
    if (d < 0) d = kDynamic;
  }
  return dims;
}

int64_t SymbolTable::resolve(int64_t dim) const {
  if (dim >= 0) return dim;
  int64_t i = index_of(dim);
  OAR_CHECK_ARG(i < static_cast<int64_t>(parent_.size()), "shape inference: unknown symbol " + std::to_string(dim));
  while (parent_[static_cast<size_t>(i)] != i) i = parent_[static_cast<size_t>(i)];
  return symbol_of(i);
}

Shape SymbolTable::sample(const SymShape& shape, int which) const {
  Shape out = shape;
  for (int64_t& d : out) {
    if (d < 0) {
      const auto& s = samples_[static_cast<size_t>(index_of(resolve(d)))];
      d = which == 0 ? s.first : s.second;
    }
  }
  return out;
}

std::string SymbolTable::str(const SymShape& shape) const {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t d = resolve(shape[i]);
    out += (i ? ", " : "") + (d < 0 ? "s" + std::to_string(index_of(d)) : std::to_string(d));
  }
  return out + "]";
}

int64_t SymbolTable::symbol_for(int64_t a, int64_t b) {
  if (a == b) return a;
  auto [it, added] = by_samples_.try_emplace({a, b}, static_cast<int64_t>(samples_.size()));
  if (!added) return resolve(symbol_of(it->second));
  samples_.emplace_back(a, b);
  parent_.push_back(static_cast<int64_t>(parent_.size()));
  data_dependent_.push_back(false);
  return symbol_of(it->second);
}

bool SymbolTable::unify(int64_t x, int64_t y) {
  x = resolve(x);
  y = resolve(y);
  if (x >= 0 || y >= 0 || x == y) return false;
  // The older symbol (an input's, usually) stays the representative.
  int64_t keep = std::max(x, y), gone = std::min(x, y);
  parent_[static_cast<size_t>(index_of(gone))] = index_of(keep);
  // Equal to a size the inputs give, a data-dependent size is known before the program runs.
  data_dependent_[static_cast<size_t>(index_of(keep))] =
      data_dependent_[static_cast<size_t>(index_of(keep))] && data_dependent_[static_cast<size_t>(index_of(gone))];
  return true;
}

bool SymbolTable::unify_operands(std::span<const SymMeta> inputs) {
  // Dims at the same position from the right (as broadcasting aligns),
  // then from the left (a label [B] of logits [B, C]), then, as a last
  // resort, every symbol of the operands (what a probe giving every
  // dynamic dim one size assumed).
  for (int how = 0; how < 3; ++how) {
    bool changed = false;
    int64_t first = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const SymShape& a = inputs[i].shape;
      if (how == 2) {
        for (int64_t d : a) {
          if (resolve(d) >= 0) continue;
          if (first == 0) first = resolve(d);
          changed = unify(first, d) || changed;
        }
        continue;
      }
      for (size_t j = i + 1; j < inputs.size(); ++j) {
        const SymShape& b = inputs[j].shape;
        for (size_t k = 0; k < a.size() && k < b.size(); ++k) {
          changed = (how == 0 ? unify(a[a.size() - 1 - k], b[b.size() - 1 - k]) : unify(a[k], b[k])) || changed;
        }
      }
    }
    if (changed) return true;
  }
  return false;
}

std::vector<SymMeta> SymbolTable::infer(const OpDef& op, std::span<const SymMeta> inputs, const Attrs& attrs) {
  std::vector<TensorMeta> a(inputs.size()), b(inputs.size());
  bool symbolic = false;
  for (const SymMeta& m : inputs) {
    for (int64_t d : m.shape) symbolic = symbolic || d < 0;
  }
  for (int attempt = 0;; ++attempt) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      a[i] = {inputs[i].dtype, sample(inputs[i].shape, 0)};
      b[i] = {inputs[i].dtype, sample(inputs[i].shape, 1)};
    }
    std::vector<TensorMeta> out_a, out_b;
    try {
      out_a = infer_meta(op, a, attrs);
      out_b = symbolic ? infer_meta(op, b, attrs) : out_a;
    } catch (const Error& e) {
      if (attempt < kMaxUnifications && unify_operands(inputs)) continue;
      if (!symbolic) throw;
      std::string shapes;
      for (const SymMeta& m : inputs) shapes += (shapes.empty() ? "" : ", ") + str(m.shape);
      throw Error(e.code(), std::string(e.what()) + " (operand shapes " + shapes +
                                "; each symbol s<k> is checked at two sizes)");
    }
    // A new symbol made from a data-dependent one (the merged dim of a flatten) is data-dependent too.
    bool from_data = false;
    for (const SymMeta& m : inputs) {
      for (int64_t d : m.shape) from_data = from_data || data_dependent(d);
    }
    const size_t known = samples_.size();
    std::vector<SymMeta> out;
    out.reserve(out_a.size());
    for (size_t r = 0; r < out_a.size(); ++r) {
      if (out_a[r].shape.size() != out_b[r].shape.size()) {
        throw Error(ErrorCode::invalid_argument,
                    op.name + ": result " + std::to_string(r) + " has rank " + std::to_string(out_a[r].shape.size()) +
                        " or " + std::to_string(out_b[r].shape.size()) +
                        " depending on the sizes of the dynamic dims of its operands");
      }
      SymMeta m{out_a[r].dtype, {}};
      for (size_t d = 0; d < out_a[r].shape.size(); ++d) m.shape.push_back(symbol_for(out_a[r].shape[d], out_b[r].shape[d]));
      // The values decide this size (Note [nonzero] in core/src/ops/index_values.cpp).
      if (op.data_dependent_shape && !m.shape.empty()) m.shape[0] = fresh_data_dependent();
      out.push_back(std::move(m));
    }
    if (from_data) {
      for (size_t k = known; k < data_dependent_.size(); ++k) data_dependent_[k] = true;
    }
    return out;
  }
}

// ---- infer_types ----

const SymShape& TypeInference::at(const Value* v) const {
  auto it = shapes.find(v);
  OAR_CHECK_ARG(it != shapes.end(), "shape inference: no symbolic shape is known for a value of type " + v->type().str());
  return it->second;
}

TensorType TypeInference::type(const Value* v) const { return {v->type().dtype, SymbolTable::type_dims(at(v))}; }

TypeInference infer_types(const Program& program) {
  TypeInference result;
  for (const auto* list : {&program.inputs(), &program.parameters(), &program.constants()}) {
    for (const Value* v : *list) result.shapes[v] = result.symbols.fresh_shape(v->type());
  }
  std::vector<SymMeta> metas;
  const auto& ops = program.block().ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    const Operation& op = *ops[i];
    metas.clear();
    for (const Value* v : op.operands()) {
      auto it = result.shapes.find(v);
      OAR_CHECK_ARG(it != result.shapes.end(), "program: " + at_op(i, op) + " uses a value defined after it or nowhere");
      metas.push_back({v->type().dtype, it->second});
    }
    std::vector<SymMeta> out;
    if (is_control_flow(op)) {
      // Note [Control-flow ops]: the declared types, each dynamic dim its own symbol; a while's
      // stacks (save_iterations) have one count of iterations and their values' dims.
      const size_t n = saves_iterations(op) ? carried_count(op) : op.results().size();
      for (size_t r = 0; r < n; ++r) result.shapes[op.result(r)] = result.symbols.fresh_shape(op.result(r)->type());
      if (n < op.results().size()) {
        const int64_t iterations = result.symbols.fresh();
        for (size_t k = 0; k + n < op.results().size() && k < n; ++k) {
          SymShape shape = result.shapes[op.result(k)];
          shape.insert(shape.begin(), iterations);
          result.shapes[op.result(n + k)] = std::move(shape);
        }
      }
      continue;
    }
    try {
      out = result.symbols.infer(op.def(), metas, op.attrs());
    } catch (const Error& e) {
      throw Error(e.code(), "program: " + at_op(i, op) + " rejects its operand types: " + e.what());
    }
    OAR_CHECK_ARG(out.size() == op.results().size(),
                  "program: " + at_op(i, op) + " has " + std::to_string(op.results().size()) +
                      " results but its meta rule gives " + std::to_string(out.size()));
    for (size_t r = 0; r < out.size(); ++r) result.shapes[op.result(r)] = std::move(out[r].shape);
  }
  return result;
}

// ---- concrete shapes ----

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
    if (is_control_flow(op)) {
      std::vector<Shape> got = control_flow_shapes(op, shapes);  // adds its regions' shapes
      for (size_t r = 0; r < got.size(); ++r) shapes[op.result(r)] = std::move(got[r]);
      continue;
    }
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
  // Regions too (their values have shapes once their op's results do).
  std::function<void(const Block&)> specialize = [&](const Block& block) {
    for (const auto& op : block.ops()) {
      for (Value* r : op->results()) {
        if (auto it = shapes.find(r); it != shapes.end()) r->set_type({r->type().dtype, it->second});
      }
      for (size_t g = 0; g < op->num_regions(); ++g) {
        for (Value* a : op->region(g).arguments()) {
          if (auto it = shapes.find(a); it != shapes.end()) a->set_type({a->type().dtype, it->second});
        }
        specialize(op->region(g));
      }
    }
  };
  specialize(program.block());
}

void specialize_input_types(Program& program, const std::vector<Shape>& input_shapes) {
  OAR_CHECK_ARG(input_shapes.size() == program.inputs().size(),
                "program: expected " + std::to_string(program.inputs().size()) + " input shapes but got " +
                    std::to_string(input_shapes.size()));
  for (size_t i = 0; i < input_shapes.size(); ++i) {
    Value* v = program.inputs()[i];
    OAR_CHECK_ARG(v->type().matches(input_shapes[i]), "program: input '" + v->name() + "' expects " +
                                                          v->type().str() + " but got shape " +
                                                          shape_str(input_shapes[i]));
    v->set_type({v->type().dtype, input_shapes[i]});
  }
  TypeInference types = infer_types(program);
  for (const auto& op : program.block().ops()) {
    if (is_control_flow(*op)) continue;  // its declared types (Note [Control-flow ops])
    for (Value* r : op->results()) r->set_type(types.type(r));
  }
}

}  // namespace oar::ir
