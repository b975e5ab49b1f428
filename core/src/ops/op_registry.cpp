// Attrs and the op registry.
#include <memory>

#include "oar/error.h"
#include "oar/op.h"

namespace oar {

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
  std::vector<TensorMeta> out = op.meta(op, inputs, attrs);
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
