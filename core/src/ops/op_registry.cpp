// Attrs, the op registry, and what an OpDef declares besides its rules:
// the attribute schema, dtype promotion, the trivial SPMD rules.
//
// Note [One op definition]: an op is defined once, in its family file of
// core/src/ops/: signature, attribute schema (name, kind, default, doc),
// accepted dtypes and promotion, meta rule, decomposition, VJP, SPMD rule,
// test domain and a one-line doc. Everything else that used to restate it
// is generated from the registry: the op table of docs/kernels.md
// (`oar ops --markdown`, checked by the ctest docs_kernels_table), the
// elementwise and reduction conformance cases
// (frontends/conformance/op_specs_registry.cpp), the `_C.ops` bindings of
// elementwise unary ops and the Python functions over them (math.py), and
// the scalar/tensor promotion of the Python operators (`_C.ops.promote`).
// Adding a unary elementwise op is then its row in elementwise.cpp (plus
// its C++ function in ops.h), one kernel row per plugin, and its test.
#include <algorithm>
#include <memory>

#include "oar/error.h"
#include "oar/op.h"

namespace oar {

namespace {
constexpr const char* kAttrKindNames[] = {"int", "float", "bool", "string", "int[]", "float[]"};
}  // namespace

const char* attr_kind_name(AttrKind kind) { return kAttrKindNames[static_cast<size_t>(kind)]; }
AttrKind attr_kind_of(const AttrValue& value) { return static_cast<AttrKind>(value.index()); }

AttrSpec attr(std::string name, AttrKind kind, std::string doc) {
  return {std::move(name), kind, std::nullopt, std::move(doc)};
}
AttrSpec attr(std::string name, AttrValue default_value, std::string doc) {
  AttrKind kind = attr_kind_of(default_value);
  return {std::move(name), kind, std::move(default_value), std::move(doc)};
}

std::string dtype_set_str(DTypeSet set) {
  if (set == kFloatDTypes) return "float dtypes";
  if (set == kNumericDTypes) return "numeric dtypes";
  if (set == kAllDTypes) return "any dtype";
  if (set == (kAllDTypes | kComplexDTypes)) return "any dtype, complex included";
  std::string out;
  for (int d = 0; d < kDTypeCount; ++d) {
    auto dtype = static_cast<DType>(d);
    if (set & dtype_bit(dtype)) out += (out.empty() ? "" : ", ") + std::string(dtype_name(dtype));
  }
  return out.empty() ? "no dtype" : out;
}

const AttrSpec* OpDef::find_attr(std::string_view attr_name) const {
  for (const AttrSpec& a : attrs) {
    if (a.name == attr_name) return &a;
  }
  return nullptr;
}

// Note [Attribute schema]: each OpDef lists the attributes it takes
// (OpDef::attrs: name, kind, default, doc), next to its meta rule. Every
// call of a meta rule goes through infer_meta, which checks the attributes
// first (eager calls, traces, the verifier, shape inference), so a made-up
// `bogus` on conv2d, a misspelt `stride` for `strides`, a float where an int
// array belongs or a missing required attribute is an error naming the op
// and the attribute, and a hostile or stale program file cannot smuggle in
// attributes every reader would silently ignore. The check costs nothing
// for ops without attributes (the tiny-op dispatch path) and a few string
// compares for the others. An attribute with a default may be missing: the
// meta rule then sees it filled in, and `with_defaults` gives the completed
// set to callers that build attributes from outside C++ (`_C.ops.call`).
// The kind check accepts what Attrs' getters convert: an int for a float,
// a bool for an int.
namespace {
bool kind_fits(AttrKind declared, const AttrValue& value) {
  AttrKind given = attr_kind_of(value);
  return given == declared || (declared == AttrKind::float_ && given == AttrKind::int_) ||
         (declared == AttrKind::int_ && given == AttrKind::bool_);
}

std::string schema_list(const OpDef& op) {
  std::string out;
  for (const AttrSpec& a : op.attrs) out += (out.empty() ? "" : ", ") + a.name;
  return out;
}
}  // namespace

std::string attr_problem(const OpDef& op, const Attrs& attrs) {
  for (const auto& [name, value] : attrs.items()) {
    const AttrSpec* spec = op.find_attr(name);
    if (!spec) {
      return "has an unknown attribute '" + name + "'; " + op.name + " takes " +
             (op.attrs.empty() ? "no attributes" : "only " + schema_list(op));
    }
    if (!kind_fits(spec->kind, value)) {
      return "has attribute '" + name + "' of kind " + attr_kind_name(attr_kind_of(value)) + " but " + op.name +
             " declares it " + attr_kind_name(spec->kind);
    }
  }
  for (const AttrSpec& a : op.attrs) {
    if (!a.default_value && !attrs.has(a.name)) {
      return "is missing the required attribute '" + a.name + "' (" + attr_kind_name(a.kind) + ": " + a.doc + ")";
    }
  }
  return {};
}

void check_attrs(const OpDef& op, const Attrs& attrs) {
  if (attrs.items().empty() && op.attrs.empty()) return;
  std::string problem = attr_problem(op, attrs);
  if (!problem.empty()) throw Error(ErrorCode::invalid_argument, op.name + ": the call " + problem);
}

Attrs with_defaults(const OpDef& op, const Attrs& attrs) {
  check_attrs(op, attrs);
  Attrs out = attrs;
  for (const AttrSpec& a : op.attrs) {
    if (a.default_value && !attrs.has(a.name)) out.set(a.name, *a.default_value);
  }
  return out;
}

// Note [Dtype promotion]: one table for every frontend. Tensors combine by
// promote_types (float beats int beats bool, wider beats narrower). A
// Python scalar adapts to the tensors (x_f16 * 2.5 stays f16, x_i32 + 1
// stays i32), except where Paddle 3 widens: a float scalar with integer or
// bool tensors gives the default float dtype, an integer scalar with bool
// tensors gives int64. Promotion::float_compute then moves a non-float
// result to the default float dtype: true division (int / int) and the
// float-only unary functions of the Python layer (oar.exp of an int
// tensor). The C++ op functions promote tensors as `common` (binary() in
// elementwise.cpp) and leave the rest to the meta rule, which refuses a
// dtype outside DTypeRule::accepts: C++ `oar::divide` of ints is the
// kernels' truncating division (floor_divide builds on it), `oar::exp` of
// an int tensor is an error; the Python layer asks `_C.ops.promote` first.
DType promote(const OpDef& op, std::span<const DType> dtypes, std::span<const ScalarKind> scalars,
              DType default_float) {
  if (dtypes.size() != scalars.size()) {
    throw Error(ErrorCode::invalid_argument, op.name + ": promote got " + std::to_string(dtypes.size()) +
                                                 " dtypes but " + std::to_string(scalars.size()) + " scalar kinds");
  }
  std::optional<DType> tensors;
  ScalarKind widest = ScalarKind::tensor;
  for (size_t i = 0; i < dtypes.size(); ++i) {
    if (scalars[i] == ScalarKind::tensor) tensors = tensors ? promote_types(*tensors, dtypes[i]) : dtypes[i];
    else widest = std::max(widest, scalars[i]);
  }
  DType d = tensors.value_or(widest == ScalarKind::complex    ? complex_dtype_for(default_float)
                             : widest == ScalarKind::floating ? default_float
                             : widest == ScalarKind::integer  ? DType::i64
                                                              : DType::boolean);
  if (op.dtypes.promotion == Promotion::none) return d;
  // A complex scalar makes the result complex of the tensors' precision
  // (f64 + 1j -> c128, f32 or an int + 1j -> c64, as Paddle).
  if (widest == ScalarKind::complex && !is_complex(d))
    d = is_floating(d) ? complex_dtype_for(d) : complex_dtype_for(default_float);
  if (widest == ScalarKind::floating && !is_floating(d) && !is_complex(d)) d = default_float;
  if (widest == ScalarKind::integer && d == DType::boolean) d = DType::i64;
  if (op.dtypes.promotion == Promotion::float_compute && !is_floating(d) && !is_complex(d)) d = default_float;
  return d;
}

std::string Placement::str() const {
  static const char* const reduce_names[] = {"sum", "avg", "max", "min"};
  switch (kind) {
    case Kind::replicate:
      return "Replicate()";
    case Kind::shard:
      return "Shard(" + std::to_string(dim) + ")";
    case Kind::partial:
      return std::string("Partial(") + reduce_names[static_cast<size_t>(reduce)] + ")";
  }
  return "?";
}

SpmdResult spmd::elementwise_unary(const SpmdArgs& args) {
  Placement p = args.placements.empty() || args.placements[0].is_partial() ? Placement::Replicate()
                                                                           : args.placements[0];
  return {{p}, {p}};
}

SpmdResult spmd::replicate_all(const SpmdArgs& args) {
  return {std::vector<Placement>(args.placements.size(), Placement::Replicate()),
          std::vector<Placement>(static_cast<size_t>(std::max(args.op.num_outputs, 1)), Placement::Replicate())};
}

void Attrs::set(std::string name, AttrValue value) {
  for (auto& [k, v] : items_) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  items_.emplace_back(std::move(name), std::move(value));
}

const AttrValue* Attrs::find(std::string_view name) const {
  for (const auto& [k, v] : items_) {
    if (k == name) return &v;
  }
  return nullptr;
}

std::vector<TensorMeta> infer_meta(const OpDef& op, std::span<const TensorMeta> inputs, const Attrs& attrs) {
  check_attrs(op, attrs);  // Note [Attribute schema]
  bool complete = attrs.items().size() >= op.attrs.size();  // every attribute given (they are all known)
  std::vector<TensorMeta> out = complete ? op.meta(op, inputs, attrs) : op.meta(op, inputs, with_defaults(op, attrs));
  for (const TensorMeta& m : out) checked_shape_bytes(op.name, m.shape, m.dtype);  // Note [Checked shapes]
  return out;
}

namespace {
template <typename T>
const T& get_typed(const Attrs& attrs, std::string_view name, const char* kind) {
  const AttrValue* v = attrs.find(name);
  if (!v) throw Error(ErrorCode::invalid_argument, "attribute '" + std::string(name) + "' is missing");
  const T* typed = std::get_if<T>(v);
  if (!typed) {
    throw Error(ErrorCode::invalid_argument,
                "attribute '" + std::string(name) + "' is not " + kind);
  }
  return *typed;
}
}  // namespace

int64_t Attrs::get_int(std::string_view name) const {
  if (const AttrValue* v = find(name); v && std::holds_alternative<bool>(*v)) return std::get<bool>(*v);
  return get_typed<int64_t>(*this, name, "an int");
}
double Attrs::get_float(std::string_view name) const {
  if (const AttrValue* v = find(name); v && std::holds_alternative<int64_t>(*v)) {
    return static_cast<double>(std::get<int64_t>(*v));
  }
  return get_typed<double>(*this, name, "a float");
}
bool Attrs::get_bool(std::string_view name) const { return get_typed<bool>(*this, name, "a bool"); }
const std::string& Attrs::get_string(std::string_view name) const {
  return get_typed<std::string>(*this, name, "a string");
}
const std::vector<int64_t>& Attrs::get_ints(std::string_view name) const {
  return get_typed<std::vector<int64_t>>(*this, name, "an int array");
}
const std::vector<double>& Attrs::get_floats(std::string_view name) const {
  return get_typed<std::vector<double>>(*this, name, "a float array");
}

OpRegistry& OpRegistry::instance() {
  static OpRegistry registry;
  return registry;
}

const OpDef& OpRegistry::add(OpDef def) {
  if (find(def.name)) throw Error(ErrorCode::internal, "op registry: op '" + def.name + "' is defined twice");
  def.id = static_cast<int>(defs_.size());
  defs_.push_back(std::make_unique<OpDef>(std::move(def)));
  return *defs_.back();
}

const OpDef* OpRegistry::find(std::string_view name) const {
  for (const auto& d : defs_) {
    if (d->name == name) return d.get();
  }
  return nullptr;
}

const OpDef& OpRegistry::get(std::string_view name) const {
  if (const OpDef* d = find(name)) return *d;
  throw Error(ErrorCode::invalid_argument, "op '" + std::string(name) + "' is not defined");
}

std::vector<const OpDef*> OpRegistry::all() const {
  std::vector<const OpDef*> out;
  for (const auto& d : defs_) out.push_back(d.get());
  return out;
}

}  // namespace oar
