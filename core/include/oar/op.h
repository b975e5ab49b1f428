/// \file op.h
/// Op definitions: one OpDef per op holds its signature, meta rule
/// (dtype/shape inference with error sentences), decomposition for composite
/// ops, and (with autodiff) its VJP rule. See Note [Builder] in builder.h.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "oar/dtype.h"
#include "oar/tensor.h"

namespace oar {

/// One attribute value.
using AttrValue =
    std::variant<int64_t, double, bool, std::string, std::vector<int64_t>, std::vector<double>>;

/// Named attributes of one op call, in insertion order.
class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<std::string, AttrValue>> items) : items_(items) {}

  void set(std::string name, AttrValue value);
  const AttrValue* find(std::string_view name) const;
  bool has(std::string_view name) const { return find(name) != nullptr; }
  /// Typed reads; throw oar::Error naming the attribute when missing or of
  /// another type. `get_float` also accepts an int.
  int64_t get_int(std::string_view name) const;
  double get_float(std::string_view name) const;
  bool get_bool(std::string_view name) const;
  const std::string& get_string(std::string_view name) const;
  const std::vector<int64_t>& get_ints(std::string_view name) const;
  const std::vector<double>& get_floats(std::string_view name) const;

  const std::vector<std::pair<std::string, AttrValue>>& items() const { return items_; }

 private:
  std::vector<std::pair<std::string, AttrValue>> items_;
};

/// The dtype and shape of a value, as meta rules see it.
struct TensorMeta {
  DType dtype = DType::f32;
  Shape shape;
};

struct OpDef;

/// Meta rule: outputs' dtypes and shapes from the inputs'; throws oar::Error
/// with a sentence naming the op, the argument and the shapes.
using MetaFn = std::vector<TensorMeta> (*)(const OpDef& op, std::span<const TensorMeta> inputs,
                                           const Attrs& attrs);
/// Runs `op`'s meta rule and checks every output shape with
/// checked_shape_bytes (rank limit, negative dims, overflowing sizes), so no
/// op can describe a tensor that cannot exist. Every caller of a meta rule
/// (eager dispatch, tracing, the verifier, shape inference) goes through it.
std::vector<TensorMeta> infer_meta(const OpDef& op, std::span<const TensorMeta> inputs, const Attrs& attrs);

/// Decomposition of a composite op into other ops (through the current
/// builder, so it runs eagerly or emits IR).
using DecomposeFn = std::vector<Tensor> (*)(std::span<const Tensor> inputs, const Attrs& attrs);

/// What a VJP rule receives. Inputs and outputs keep their autograd graph,
/// so a rule run under create_graph is itself differentiated (grad-of-grad).
struct VjpContext {
  std::span<const Tensor> inputs;
  std::span<const Tensor> outputs;
  std::span<const Tensor> grads;  ///< one per output; an undefined one is zero
  const Attrs& attrs;
  std::span<const bool> needs;     ///< needs[i]: the gradient of input i is wanted
};

/// VJP rule: one gradient per input, written in ops (so it runs eagerly or
/// emits IR). An undefined Tensor means "no gradient" for that input. Each
/// gradient has its input's shape (broadcasting is summed back: sum_to).
using VjpFn = std::vector<Tensor> (*)(const VjpContext& ctx);

/// How the host prepares a kernel's inputs (docs/kernels.md).
enum class InputLayout : uint8_t {
  as_is,      ///< inputs passed with their own shapes
  broadcast,  ///< inputs padded with leading 1s to the output's rank
};

/// What kind of op.
enum class OpKind : uint8_t {
  primitive,  ///< every device must implement it
  composite,  ///< has a decomposition; a device may register a fused kernel
  view,       ///< metadata only in eager mode (reshape): no kernel
};

/// The single definition of an op.
struct OpDef {
  std::string name;
  OpKind kind = OpKind::primitive;
  int num_inputs = 1;  ///< -1: variadic
  int num_outputs = 1;
  InputLayout layout = InputLayout::as_is;
  MetaFn meta = nullptr;
  DecomposeFn decompose = nullptr;  ///< composite ops only
  VjpFn vjp = nullptr;              ///< null: composite ops differentiate their decomposition
  bool differentiable = true;       ///< false: asking for a gradient through it is an error
  bool random = false;              ///< draws random numbers: static-mode passes never merge or fold it
  /// The attribute names the op takes, and no others (Note [Attribute
  /// schema] in verifier.cpp): a program op with another one is refused
  /// by the verifier, naming the op and the attribute.
  std::vector<std::string> attrs = {};
  int id = -1;                      ///< index in the registry, set on registration
};

/// All op definitions. Ops register at static-initialization time of the
/// core library, one file per op family (core/src/ops/).
class OpRegistry {
 public:
  static OpRegistry& instance();
  /// Adds a definition; the name must be new.
  const OpDef& add(OpDef def);
  /// Throws oar::Error naming the op when unknown.
  const OpDef& get(std::string_view name) const;
  const OpDef* find(std::string_view name) const;
  const OpDef& by_id(int id) const { return *defs_[static_cast<size_t>(id)]; }
  size_t size() const { return defs_.size(); }
  std::vector<const OpDef*> all() const;

 private:
  std::vector<std::unique_ptr<OpDef>> defs_;
};

/// Registers ops from a file: `OAR_REGISTER_OPS(elementwise) { add_op({...}); }`.
#define OAR_REGISTER_OPS(family)                                   \
  static void oar_register_ops_##family();                        \
  namespace {                                                      \
  struct OarOpRegistrar_##family {                                 \
    OarOpRegistrar_##family() { oar_register_ops_##family(); }     \
  } oar_op_registrar_##family;                                     \
  }                                                                \
  static void oar_register_ops_##family()

}  // namespace oar
