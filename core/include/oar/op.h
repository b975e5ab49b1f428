/// \file op.h
/// Op definitions: one OpDef per op holds its signature (inputs, attribute
/// schema, accepted dtypes and promotion), meta rule (dtype/shape inference
/// with error sentences), decomposition for composite ops, VJP rule, SPMD
/// rule and the input domain conformance cases are drawn from. See Note
/// [Builder] in builder.h and Note [One op definition] in op_registry.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "oar/dtype.h"
#include "oar/spmd.h"
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

/// The kind of value an attribute holds: one per AttrValue alternative, in
/// the same order.
enum class AttrKind : uint8_t { int_, float_, bool_, string, ints, floats };
/// "int", "float", "bool", "string", "int[]", "float[]".
const char* attr_kind_name(AttrKind kind);
/// The kind of `value`.
AttrKind attr_kind_of(const AttrValue& value);

/// One attribute of an op's schema (Note [Attribute schema] in
/// op_registry.cpp). Build one with `attr(...)`.
struct AttrSpec {
  std::string name;
  AttrKind kind = AttrKind::int_;
  std::optional<AttrValue> default_value = std::nullopt;  ///< none: the attribute must be given
  std::string doc;                                       ///< one line, for docs/kernels.md
};
/// An attribute the caller must give: `attr("axes", AttrKind::ints, "...")`.
AttrSpec attr(std::string name, AttrKind kind, std::string doc);
/// An attribute with a default, of the default's kind: `attr("keepdim", false, "...")`.
AttrSpec attr(std::string name, AttrValue default_value, std::string doc);

/// A set of dtypes, one bit per DType value.
using DTypeSet = uint32_t;
/// The set holding only `d`.
constexpr DTypeSet dtype_bit(DType d) { return DTypeSet{1} << static_cast<int>(d); }
inline constexpr DTypeSet kFloatDTypes =
    dtype_bit(DType::f32) | dtype_bit(DType::f64) | dtype_bit(DType::f16) | dtype_bit(DType::bf16);
inline constexpr DTypeSet kIntDTypes =
    dtype_bit(DType::i8) | dtype_bit(DType::u8) | dtype_bit(DType::i32) | dtype_bit(DType::i64);
inline constexpr DTypeSet kNumericDTypes = kFloatDTypes | kIntDTypes;
/// The real dtypes. Complex dtypes are opt-in: an op that takes them says so
/// in its DTypeRule (`kAllDTypes | kComplexDTypes`).
inline constexpr DTypeSet kAllDTypes = kNumericDTypes | dtype_bit(DType::boolean);
/// c64 and c128.
inline constexpr DTypeSet kComplexDTypes = dtype_bit(DType::c64) | dtype_bit(DType::c128);
/// f32 and f64: the dtypes composite ops are tested in.
inline constexpr DTypeSet kF32F64DTypes = dtype_bit(DType::f32) | dtype_bit(DType::f64);
/// "float dtypes", "numeric dtypes", "any dtype", or the names ("float32, int64").
std::string dtype_set_str(DTypeSet set);

/// How the operands of an op are brought to one dtype before it runs
/// (Note [Dtype promotion] in op_registry.cpp).
enum class Promotion : uint8_t {
  none,           ///< inputs are taken as given; the meta rule checks them
  common,         ///< every operand becomes the promote_types of all; a scalar adapts to the tensor
  float_compute,  ///< as common, then a non-float result becomes the default float (int / int, exp(int))
};

/// Which dtypes an op's data inputs accept and how they promote.
struct DTypeRule {
  DTypeSet accepts = kAllDTypes;  ///< for the data inputs (after promotion)
  Promotion promotion = Promotion::none;
};

/// What a frontend operand is: a tensor of some dtype or a Python scalar.
enum class ScalarKind : uint8_t {
  tensor,    ///< not a scalar: the operand's dtype counts
  boolean,   ///< True / False
  integer,   ///< 3
  floating,  ///< 2.5
  complex,   ///< 1 + 2j
};

/// The input domain conformance and gradient cases of an op are drawn from
/// (frontends/conformance/op_specs_registry.cpp generates them for
/// elementwise ops and reductions that have one).
struct TestDomain {
  double low = -3, high = 3;  ///< values drawn uniformly in [low, high)
  /// For a second input (binary ops): its own range; NaN: the first's.
  double low2 = std::numeric_limits<double>::quiet_NaN(), high2 = std::numeric_limits<double>::quiet_NaN();
  bool integral = false;       ///< round the values, so zeros and ties occur
  bool nonzero2 = false;       ///< a zero drawn for the second input becomes 1 (integer divisors)
  bool empty_axes = true;      ///< reductions: reducing a size-0 axis is in the domain
  DTypeSet dtypes = 0;         ///< dtypes tested; 0: those the op accepts (Note [Tested dtypes])
  double tol_scale = 1;        ///< multiplies the per-dtype tolerance
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

/// An op the core computes itself instead of a device kernel (a
/// collective: its "kernel" is a call into a Communicator). Eager mode and
/// the executor call it with the op's inputs and attributes; it returns the
/// outputs, as the meta rule describes them (Note [Host ops] in
/// core/src/dist/collective_ops.cpp).
using HostFn = std::vector<Tensor> (*)(std::span<const Tensor> inputs, const Attrs& attrs);

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
  /// The attributes the op takes, and no others (Note [Attribute schema]
  /// in op_registry.cpp): another name, a value of another kind or a
  /// missing required one is an error naming the op and the attribute.
  std::vector<AttrSpec> attrs = {};
  DTypeRule dtypes = {};             ///< accepted input dtypes and promotion
  SpmdFn spmd = nullptr;             ///< null: a composite op decomposes, others run replicated (spmd.h)
  LocalizeFn localize = nullptr;     ///< null: the local kernel takes the global attributes (spmd.h)
  HostFn host = nullptr;             ///< non-null: the core computes it (no device kernel)
  bool data_dependent_shape = false; ///< a host op whose outputs' first dim depends on input values
                                     ///< (nonzero): meta gives the largest size, a trace a fresh symbol,
                                     ///< and programs holding it are interpreted
  std::optional<TestDomain> domain = std::nullopt;  ///< where conformance cases are drawn from
  std::string doc = {};              ///< one line, for the op table of docs/kernels.md
  int id = -1;                       ///< index in the registry, set on registration

  /// The schema entry of attribute `name`, or null.
  const AttrSpec* find_attr(std::string_view name) const;
};

/// Checks `attrs` against `op`'s schema: every name known, every value of
/// its kind (an int where a float is declared and a bool where an int is
/// are accepted, as Attrs' getters do), every required one present. Throws
/// oar::Error (invalid_argument) naming the op and the attribute. Attributes
/// that have a default may be missing.
void check_attrs(const OpDef& op, const Attrs& attrs);
/// What check_attrs would refuse, as a predicate for a sentence about the
/// op ("has an unknown attribute 'bogus'; conv2d takes only strides, ..."),
/// or "" when the attributes fit the schema.
std::string attr_problem(const OpDef& op, const Attrs& attrs);
/// `attrs` checked, with every missing optional attribute set to its
/// default (in schema order, after the given ones).
Attrs with_defaults(const OpDef& op, const Attrs& attrs);

/// The dtype `op` computes in for these operands (Note [Dtype promotion]):
/// `dtypes[i]` counts where `scalars[i]` is ScalarKind::tensor. A scalar
/// takes the tensors' dtype, except that a float scalar with integer or
/// bool tensors gives `default_float`, and an integer scalar with bool
/// tensors gives i64; float_compute then turns a non-float result into
/// `default_float`. Throws naming the op when the result is a dtype the op
/// does not accept. Ops with Promotion::none return the first tensor's dtype.
DType promote(const OpDef& op, std::span<const DType> dtypes, std::span<const ScalarKind> scalars,
              DType default_float = DType::f32);

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

/// The op table of docs/kernels.md: one Markdown row per registered op
/// (name, kind, inputs, accepted dtypes, attribute schema, doc), in
/// registration order. `oar ops --markdown` prints it; the ctest
/// docs_kernels_table fails when the committed table differs.
std::string op_table_markdown();

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
