/// \file shape_inference.h
/// Shapes of every value: symbolic ones for a program with dynamic dims
/// (infer_types, the one rule the verifier, tracing, decomposition and
/// autodiff share), and concrete ones for given input shapes (infer_shapes,
/// used by the executor and the memory planner).
///
/// Note [Symbolic dims]
/// A dynamic dim is a *symbol*: a SymShape holds sizes (>= 0) and symbols
/// (negative ids). Each dynamic dim of a program input is its own symbol,
/// so a batch dim and a sequence dim are different dims; a result dim that
/// equals an operand's by construction (the batch dim of a matmul, of an
/// add, of a relu) has that operand's symbol; other dynamic results (the
/// merged dim of a flatten) get new symbols.
///
/// Meta rules are C++ functions over concrete shapes, so a symbol is
/// evaluated by running the rule at two *samples*: symbol k stands for a
/// pair of distinct odd primes (sample A, sample B), different for every
/// input symbol (11/13, 17/19, 23/29, ...). A result dim equal in both
/// samples is static; one equal to a known symbol's pair is that symbol;
/// any other pair is a new symbol with those samples. Since a symbol is
/// its pair, dims equal by construction share a symbol without any rule
/// saying so. The samples are small (a rank-8 all-dynamic shape still fits
/// in 64 bits) and primes, so a reshape or a slice that bakes one size of a
/// dynamic dim into an attribute fails at one of them.
///
/// When a rule rejects its operands because two symbols meet where equal
/// sizes are required (x[-1, 4] + y[-1, 4]: two input symbols), the symbols
/// the operands have at the same position are unified, as a symbolic-shape
/// constraint would (Paddle's shape dialect does the same), and the rule
/// runs again: first aligned from the right (as broadcasting aligns), then
/// from the left (cross_entropy's labels [B] of logits [B, C]), then all the
/// operands' symbols as one. A rule that still rejects the operands fails
/// with its own sentence.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "oar/ir/program.h"

namespace oar::ir {

/// A shape whose dims are sizes (>= 0) or symbols (< 0; Note [Symbolic dims]).
using SymShape = std::vector<int64_t>;

/// dtype and symbolic shape of a value.
struct SymMeta {
  DType dtype = DType::f32;
  SymShape shape;
};

/// The symbols of one program (or trace) and the one symbolic form of the
/// meta rules (Note [Symbolic dims]).
class SymbolTable {
 public:
  /// A new symbol, different from every other (a new dynamic input dim).
  int64_t fresh();
  /// A new data-dependent symbol (see data_dependent()).
  int64_t fresh_data_dependent();
  /// `type`'s dims with every dynamic one a new symbol.
  SymShape fresh_shape(const TensorType& type);
  /// The dims of a symbolic shape as a type: symbols become kDynamic.
  static std::vector<int64_t> type_dims(const SymShape& shape);
  /// The shape at sample A (0) or B (1): what the meta rules run on.
  Shape sample(const SymShape& shape, int which) const;
  /// The symbol a symbol stands for now (after unifications).
  int64_t resolve(int64_t dim) const;
  /// True for a symbol whose size the values decide (nonzero's count, or a
  /// dim made from one), not the input shapes (Note [nonzero]).
  bool data_dependent(int64_t dim) const;
  /// Runs `op`'s meta rule symbolically; throws the rule's error (with the
  /// operands' symbolic shapes) when it rejects them even after unifying.
  std::vector<SymMeta> infer(const OpDef& op, std::span<const SymMeta> inputs, const Attrs& attrs);
  /// A printable shape: "[s0, 4]" (symbols as s<k>).
  std::string str(const SymShape& shape) const;
  size_t size() const { return samples_.size(); }

 private:
  int64_t symbol_for(int64_t a, int64_t b);
  bool unify(int64_t x, int64_t y);
  bool unify_operands(std::span<const SymMeta> inputs);

  std::vector<std::pair<int64_t, int64_t>> samples_;  // by symbol index (id -1 - index)
  std::vector<int64_t> parent_;                        // union-find over symbol indexes
  std::vector<bool> data_dependent_;                   // by symbol index (see data_dependent())
  std::vector<int64_t> primes_;                        // handed out to input symbols
  std::map<std::pair<int64_t, int64_t>, int64_t> by_samples_;  // samples -> symbol index
};

/// Symbolic shapes of every value of a program (Note [Symbolic dims]).
struct TypeInference {
  SymbolTable symbols;
  std::unordered_map<const Value*, SymShape> shapes;
  const SymShape& at(const Value* v) const;
  /// The type `v` has by inference: its dtype, symbols as kDynamic.
  TensorType type(const Value* v) const;
};

/// Infers the symbolic shape of every value: each dynamic dim of an input
/// (or parameter) a symbol of its own, then every operation's meta rule
/// (SymbolTable::infer) in block order. Throws naming the operation that
/// rejects its operands.
TypeInference infer_types(const Program& program);

/// Shape of every live value. Parameters and constants take their static
/// types. Throws naming the input when a shape does not match its type, and
/// the operation when its meta rule rejects the shapes.
std::unordered_map<const Value*, Shape> infer_shapes(const Program& program,
                                                     const std::vector<Shape>& input_shapes);

/// Fixes every dynamic dim: input types become `input_shapes` and every
/// result type the shape inferred from them (Note [Dynamic dims]).
void specialize_types(Program& program, const std::vector<Shape>& input_shapes);

/// Fixes the inputs' types to `input_shapes` and gives every top-level
/// result the type inferred from them: what specialization means for a
/// program with data-dependent sizes (nonzero's count), whose dims that
/// follow from such a size stay dynamic. Throws naming the operation whose
/// meta rule rejects them (a size the trace took from the example's count).
void specialize_input_types(Program& program, const std::vector<Shape>& input_shapes);

/// The input shapes of a program whose inputs all have static types;
/// throws naming the first input with a dynamic dim otherwise.
std::vector<Shape> static_input_shapes(const Program& program);

}  // namespace oar::ir
