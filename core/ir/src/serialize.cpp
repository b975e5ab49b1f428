// JSON form of a program, and save/load of a program with its parameters.
//
// Note [Program JSON]
//   {"format": "oar.program", "version": 1,
//    "inputs":     [{"id": 0, "name": "x", "type": {"dtype": "f32", "shape": [-1, 4]}}],
//    "parameters": [{"id": 1, "name": "fc.weight", "type": ...}],
//    "constants":  [{"id": 2, "name": "c0", "type": ...}],
//    "ops": [{"op": "matmul", "operands": [0, 1],
//             "attrs": {"transpose_a": {"bool": false}, "alpha": {"float": "inf"}},
//             "results": [{"id": 3, "type": ...}]}],
//    "outputs": [{"name": "out", "value": 3}],
//    "updates": [{"name": "fc.weight", "value": 7}]}
// An operation with regions (Note [Regions] in block.h) has one more key,
//    "regions": [{"ops": [...]}, ...]
// each region a list of operations like the program's; operations without
// regions leave the key out, so files from before regions load unchanged
// and still write the same text. A region with arguments (Note [Region
// arguments]) has "args": [{"id": 5, "type": ...}] before its "ops"; a
// program with any is written as version 2 (the first that reads them),
// every other program still as version 1, which version 2 readers load. to_json numbers values densely (inputs,
// parameters, constants, then results in block order, an operation's
// results before the operations of its regions) and keeps attributes in their order, so equal
// programs give equal text and to_json(from_json(j)) == j. Attributes carry
// their kind (int, float, bool, str, ints, floats); non-finite floats are the
// strings "inf", "-inf", "nan". from_json accepts any unique ids, checks every
// key, type and reference, and runs verify().
#include "oar/ir/serialize.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <unordered_map>

#include "oar/ir/safetensors.h"
#include "oar/ir/verifier.h"
#include "serialize_util.h"

namespace oar::ir {

namespace {

using detail::Json;

constexpr const char* kFormat = "oar.program";
constexpr const char* kConstantPrefix = "const:";
// Attribute kinds by AttrValue alternative (attribute.h).
constexpr const char* kAttrKinds[] = {"int", "float", "bool", "str", "ints", "floats"};
constexpr DType kAllDTypes[] = {DType::f32, DType::f64, DType::f16,     DType::bf16, DType::i8, DType::u8,
                                DType::i32, DType::i64, DType::boolean, DType::c64,  DType::c128};

// ---- writing ----

Json type_json(const TensorType& type) {
  Json j = Json::object();
  j["dtype"] = short_dtype_name(type.dtype);
  j["shape"] = type.dims;
  return j;
}

Json float_json(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

Json attribute_json(const Attribute& attr) {
  Json value;
  switch (attr.index()) {
    case 0:
      value = std::get<int64_t>(attr);
      break;
    case 1:
      value = float_json(std::get<double>(attr));
      break;
    case 2:
      value = std::get<bool>(attr);
      break;
    case 3:
      value = std::get<std::string>(attr);
      break;
    case 4:
      value = std::get<std::vector<int64_t>>(attr);
      break;
    default:
      value = Json::array();
      for (double v : std::get<std::vector<double>>(attr)) value.push_back(float_json(v));
  }
  Json j = Json::object();
  j[kAttrKinds[attr.index()]] = std::move(value);
  return j;
}

std::string op_where(size_t index, const std::string& name) {
  return "operation " + std::to_string(index) + " (" + name + ")";
}

// ---- reading ----

struct ValueDesc {
  int64_t id = 0;
  std::string name;
  TensorType type;
};

struct OpDesc {
  const OpDef* def = nullptr;
  std::vector<int64_t> operands;
  AttributeMap attrs;
  std::vector<ValueDesc> results;
  std::vector<std::vector<OpDesc>> regions;
  std::vector<std::vector<ValueDesc>> region_args;  // per region: its arguments
  std::string where;  // "operation 1 (cond)", with its region path for nested ones
};

struct NamedDesc {
  std::string name;
  int64_t value = 0;
};

// Reads and checks a program's JSON; every error names `source`.
class ProgramReader {
 public:
  ProgramReader(std::string source, const ParamMap& constants, std::string constants_source)
      : source_(std::move(source)),
        constants_(constants),
        constants_source_(std::move(constants_source)) {}

  Program read(const std::string& text) {
    Json j = detail::parse_json_strict(text, source_ + ": the program");
    if (!j.is_object())
      fail("the program", std::string("is a JSON ") + j.type_name() + ", not an object");
    check_version(j);
    check_keys(
        j, {"format", "version", "inputs", "parameters", "constants", "ops", "outputs", "updates"},
        "the program");
    auto inputs = read_values(list(j, "inputs", "the program"), "input");
    auto parameters = read_values(list(j, "parameters", "the program"), "parameter");
    auto constants = read_values(list(j, "constants", "the program"), "constant");
    std::vector<OpDesc> ops = read_ops(list(j, "ops", "the program"), "", 0);
    auto outputs = read_named(list(j, "outputs", "the program"), "output");
    auto updates = read_named(list(j, "updates", "the program"), "update");
    try {
      return build(inputs, parameters, constants, ops, outputs, updates);
    } catch (const Error& e) {
      // Errors of Program and verify() get the file's name.
      std::string message = e.what();
      if (message.starts_with(source_ + ": ")) throw;
      throw Error(e.code(), source_ + ": " + message);
    }
  }

 private:
  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw Error(ErrorCode::invalid_argument, source_ + ": " + where + " " + what);
  }

  void check_version(const Json& j) const {
    if (!j.contains("format") || j.at("format") != kFormat) {
      fail("the program",
           std::string("has no \"format\": \"") + kFormat + "\"; it is not an oar program");
    }
    int64_t version = 0;
    if (!j.contains("version") || !detail::json_to_int64(j.at("version"), version)) {
      fail("the program", "has no integer \"version\"");
    }
    if (version > kProgramFormatVersion) {
      fail("the program", "has format version " + std::to_string(version) +
                              ", newer than this build reads (up to " +
                              std::to_string(kProgramFormatVersion) + ")");
    }
    if (version < 1)
      fail("the program", "has the invalid format version " + std::to_string(version));
  }

  // `obj` must be an object holding exactly `keys`, and maybe `optional` ones.
  void check_keys(const Json& obj, std::initializer_list<const char*> keys,
                  const std::string& where,
                  std::initializer_list<const char*> optional = {}) const {
    if (!obj.is_object())
      fail(where, std::string("is a JSON ") + obj.type_name() + ", not an object");
    for (const char* key : keys) {
      if (!obj.contains(key)) fail(where, std::string("has no \"") + key + "\"");
    }
    for (const auto& [key, _] : obj.items()) {
      bool known = false;
      for (const char* k : keys) known = known || key == k;
      for (const char* k : optional) known = known || key == k;
      if (!known) fail(where, "has the unknown key \"" + key + "\"");
    }
  }

  const Json& list(const Json& obj, const char* key, const std::string& where) const {
    const Json& j = obj.at(key);
    if (!j.is_array()) fail(where, std::string("has a \"") + key + "\" that is not a list");
    return j;
  }

  std::string string_of(const Json& obj, const char* key, const std::string& where) const {
    const Json& j = obj.at(key);
    if (!j.is_string()) fail(where, std::string("has a \"") + key + "\" that is not a string");
    return j.get<std::string>();
  }

  int64_t id_of(const Json& j, const std::string& where) const {
    int64_t id = 0;
    if (!detail::json_to_int64(j, id) || id < 0)
      fail(where, "has the value id " + j.dump() + "; ids are integers >= 0");
    return id;
  }

  TensorType read_type(const Json& j, const std::string& where) const {
    check_keys(j, {"dtype", "shape"}, where + " type");
    TensorType type;
    std::string dtype = string_of(j, "dtype", where + " type");
    bool known = false;
    for (DType d : kAllDTypes) {
      if (short_dtype_name(d) == dtype) {
        type.dtype = d;
        known = true;
      }
    }
    if (!known)
      fail(where, "has the unknown dtype '" + dtype +
                      "' (expected f32, f64, f16, bf16, i8, u8, i32, i64, bool)");
    const Json& shape = list(j, "shape", where + " type");
    for (const Json& d : shape) {
      int64_t dim = 0;
      if (!detail::json_to_int64(d, dim) || dim < kDynamic) {
        fail(where, "has the shape " + shape.dump() +
                        "; dims must be integers >= 0, or -1 for a dynamic dim");
      }
      type.dims.push_back(dim);
    }
    return type;
  }

  std::vector<ValueDesc> read_values(const Json& list, const std::string& kind) const {
    std::vector<ValueDesc> values;
    for (size_t i = 0; i < list.size(); ++i) {
      std::string where = kind + " " + std::to_string(i);
      check_keys(list[i], {"id", "name", "type"}, where);
      ValueDesc v{.id = id_of(list[i].at("id"), where),
                  .name = string_of(list[i], "name", where),
                  .type = {}};
      if (v.name.empty()) fail(where, "has an empty name");
      v.type = read_type(list[i].at("type"), kind + " '" + v.name + "'");
      values.push_back(std::move(v));
    }
    return values;
  }

  double read_float(const Json& j, const std::string& where) const {
    if (j.is_number()) return j.get<double>();
    if (j == "inf") return std::numeric_limits<double>::infinity();
    if (j == "-inf") return -std::numeric_limits<double>::infinity();
    if (j == "nan") return std::numeric_limits<double>::quiet_NaN();
    fail(where, "has the float " + j.dump() + "; expected a number, \"inf\", \"-inf\" or \"nan\"");
  }

  int64_t read_int(const Json& j, const std::string& where) const {
    int64_t v = 0;
    if (!detail::json_to_int64(j, v))
      fail(where, "has the int " + j.dump() + ", which is not a 64-bit integer");
    return v;
  }

  Attribute read_attribute(const Json& j, const std::string& where) const {
    if (!j.is_object() || j.size() != 1) {
      fail(where, "is " + j.dump() +
                      "; an attribute is an object {kind: value} with kind int, float, bool, str, "
                      "ints or floats");
    }
    const std::string& kind = j.begin().key();
    const Json& v = j.begin().value();
    if (kind == "int") return read_int(v, where);
    if (kind == "float") return read_float(v, where);
    if (kind == "bool") {
      if (!v.is_boolean()) fail(where, "has the bool " + v.dump() + ", which is not true or false");
      return v.get<bool>();
    }
    if (kind == "str") {
      if (!v.is_string()) fail(where, "has the str " + v.dump() + ", which is not a string");
      return v.get<std::string>();
    }
    if (kind == "ints" || kind == "floats") {
      if (!v.is_array()) fail(where, "has " + kind + " " + v.dump() + ", which is not a list");
      if (kind == "ints") {
        std::vector<int64_t> ints;
        for (const Json& e : v) ints.push_back(read_int(e, where));
        return ints;
      }
      std::vector<double> floats;
      for (const Json& e : v) floats.push_back(read_float(e, where));
      return floats;
    }
    fail(where,
         "has the unknown kind '" + kind + "' (expected int, float, bool, str, ints or floats)");
  }

  // Regions nest at most this deep (each level is 4 JSON levels, within
  // kMaxJsonDepth anyway); the limit gives a sentence instead.
  static constexpr int kMaxRegionDepth = 12;

  // `scope` is "" at top level, else " in region r of operation i (op)...".
  std::vector<OpDesc> read_ops(const Json& list, const std::string& scope, int depth) const {
    std::vector<OpDesc> ops;
    for (size_t i = 0; i < list.size(); ++i) ops.push_back(read_op(list[i], i, scope, depth));
    return ops;
  }

  OpDesc read_op(const Json& j, size_t index, const std::string& scope, int depth) const {
    std::string where = "operation " + std::to_string(index) + scope;
    check_keys(j, {"op", "operands", "attrs", "results"}, where, {"regions"});
    OpDesc op;
    std::string name = string_of(j, "op", where);
    op.def = OpRegistry::instance().find(name);
    if (!op.def) fail(where, "uses the unknown op '" + name + "'");
    where = op_where(index, name) + scope;
    op.where = where;
    for (const Json& operand : list(j, "operands", where))
      op.operands.push_back(id_of(operand, where + " operand"));
    const Json& attrs = j.at("attrs");
    if (!attrs.is_object()) fail(where, "has \"attrs\" that are not an object");
    for (const auto& [key, value] : attrs.items()) {
      op.attrs.set(key, read_attribute(value, where + " attribute '" + key + "'"));
    }
    const Json& results = list(j, "results", where);
    for (size_t r = 0; r < results.size(); ++r) {
      std::string rwhere = where + " result " + std::to_string(r);
      check_keys(results[r], {"id", "type"}, rwhere);
      op.results.push_back({.id = id_of(results[r].at("id"), rwhere),
                            .name = "",
                            .type = read_type(results[r].at("type"), rwhere)});
    }
    const OpDef& def = *op.def;
    if (def.num_inputs >= 0 && op.operands.size() != static_cast<size_t>(def.num_inputs)) {
      fail(where, "has " + std::to_string(op.operands.size()) + " operands but " + name +
                      " takes " + std::to_string(def.num_inputs));
    }
    if (def.num_outputs >= 0 && op.results.size() != static_cast<size_t>(def.num_outputs)) {
      fail(where, "has " + std::to_string(op.results.size()) + " results but " + name +
                      " produces " + std::to_string(def.num_outputs));
    }
    if (j.contains("regions")) {
      const Json& regions = list(j, "regions", where);
      if (depth >= kMaxRegionDepth && !regions.empty())
        fail(where, "nests regions deeper than " + std::to_string(kMaxRegionDepth) + " levels");
      for (size_t r = 0; r < regions.size(); ++r) {
        const std::string rwhere = "region " + std::to_string(r) + " of " + where;
        check_keys(regions[r], {"ops"}, rwhere, {"args"});
        std::vector<ValueDesc> args;
        if (regions[r].contains("args")) {
          const Json& alist = list(regions[r], "args", rwhere);
          for (size_t a = 0; a < alist.size(); ++a) {
            std::string awhere = rwhere + " argument " + std::to_string(a);
            check_keys(alist[a], {"id", "type"}, awhere);
            args.push_back({.id = id_of(alist[a].at("id"), awhere),
                            .name = "",
                            .type = read_type(alist[a].at("type"), awhere)});
          }
        }
        op.region_args.push_back(std::move(args));
        op.regions.push_back(read_ops(list(regions[r], "ops", rwhere), " in " + rwhere, depth + 1));
      }
    }
    return op;
  }

  std::vector<NamedDesc> read_named(const Json& list, const std::string& kind) const {
    std::vector<NamedDesc> named;
    for (size_t i = 0; i < list.size(); ++i) {
      std::string where = kind + " " + std::to_string(i);
      check_keys(list[i], {"name", "value"}, where);
      NamedDesc n{.name = string_of(list[i], "name", where),
                  .value = id_of(list[i].at("value"), where)};
      if (n.name.empty()) fail(where, "has an empty name");
      for (const NamedDesc& other : named) {
        if (other.name == n.name) fail(kind + " '" + n.name + "'", "appears twice");
      }
      named.push_back(std::move(n));
    }
    return named;
  }

  Program build(const std::vector<ValueDesc>& inputs, const std::vector<ValueDesc>& parameters,
                const std::vector<ValueDesc>& constants, const std::vector<OpDesc>& ops,
                const std::vector<NamedDesc>& outputs, const std::vector<NamedDesc>& updates) {
    // Who defines each id, for "defined later" errors.
    std::unordered_map<int64_t, std::string> definer;
    auto define = [&](int64_t id, const std::string& who) {
      auto [it, fresh] = definer.emplace(id, who);
      if (!fresh)
        fail("value id " + std::to_string(id),
             "is defined twice: by " + it->second + " and by " + who);
    };
    std::unordered_map<std::string, std::string> names;
    auto name_interface = [&](const ValueDesc& v, const std::string& kind) {
      auto [it, fresh] = names.emplace(v.name, kind);
      if (!fresh)
        fail(kind + " '" + v.name + "'",
             "has the same name as " + it->second + " '" + v.name + "'");
      define(v.id, kind + " '" + v.name + "'");
    };
    for (const auto& v : inputs) name_interface(v, "input");
    for (const auto& v : parameters) name_interface(v, "parameter");
    for (const auto& v : constants) name_interface(v, "constant");
    std::function<void(const std::vector<OpDesc>&)> define_results =
        [&](const std::vector<OpDesc>& list) {
          for (const OpDesc& op : list) {
            for (const auto& r : op.results) define(r.id, op.where);
            for (size_t g = 0; g < op.regions.size(); ++g) {
              for (const auto& a : op.region_args[g])
                define(a.id, "region " + std::to_string(g) + " of " + op.where);
              define_results(op.regions[g]);
            }
          }
        };
    define_results(ops);

    Program program;
    std::unordered_map<int64_t, Value*> values;
    for (const auto& v : inputs) values[v.id] = program.add_input(v.name, v.type);
    for (const auto& v : parameters) {
      if (!v.type.is_static()) {
        fail("parameter '" + v.name + "'",
             "has the dynamic type " + v.type.str() + "; parameters need static shapes");
      }
      values[v.id] = program.add_parameter(v.name, v.type);
    }
    for (const auto& v : constants) {
      auto it = constants_.find(v.name);
      if (it == constants_.end()) {
        fail("constant '" + v.name + "'", "has no tensor in " + constants_source_);
      }
      TensorType found = type_of(it->second);
      if (found != v.type) {
        fail("constant '" + v.name + "'", "is " + v.type.str() + " but its tensor in " +
                                              constants_source_ + " is " + found.str());
      }
      values[v.id] = program.add_constant(v.name, it->second);
    }
    // Values of a region leave `values` when it ends (Note [Regions] in block.h).
    std::unordered_map<int64_t, std::string> hidden;
    // The results of the operations whose regions are being built.
    std::unordered_map<int64_t, std::string> open;
    auto lookup = [&](int64_t id, const std::string& where) {
      auto it = values.find(id);
      if (it != values.end()) return it->second;
      if (auto o = open.find(id); o != open.end()) {
        fail(where, "refers to value " + std::to_string(id) + ", a result of " + o->second +
                        ", which is not visible inside its own regions");
      }
      if (auto h = hidden.find(id); h != hidden.end()) {
        fail(where, "refers to value " + std::to_string(id) + ", which is defined in " + h->second +
                        " and visible only inside it");
      }
      auto d = definer.find(id);
      if (d == definer.end())
        fail(where, "refers to value " + std::to_string(id) + ", which nothing defines");
      fail(where,
           "refers to value " + std::to_string(id) + ", which " + d->second + " defines later");
    };
    std::function<void(const std::vector<OpDesc>&, Block&)> build_ops =
        [&](const std::vector<OpDesc>& list, Block& block) {
          for (const OpDesc& op : list) {
            std::vector<Value*> operands;
            for (size_t k = 0; k < op.operands.size(); ++k) {
              operands.push_back(
                  lookup(op.operands[k], op.where + " operand " + std::to_string(k)));
            }
            std::vector<TensorType> types;
            for (const auto& r : op.results) types.push_back(r.type);
            Operation* appended =
                program.append(block, *op.def, std::move(operands), op.attrs, types);
            for (const auto& res : op.results) open.emplace(res.id, op.where);
            for (size_t r = 0; r < op.regions.size(); ++r) {
              Block& region = appended->add_region();
              for (const auto& a : op.region_args[r]) values[a.id] = program.add_argument(region, a.type);
              build_ops(op.regions[r], region);
              // Drop what the region defined: its ids are the results in it.
              std::function<void(const std::vector<OpDesc>&)> hide =
                  [&](const std::vector<OpDesc>& inner) {
                    for (const OpDesc& o : inner) {
                      for (const auto& args : o.region_args) {
                        for (const auto& a : args) {
                          values.erase(a.id);
                          hidden.emplace(a.id, "region " + std::to_string(r) + " of " + op.where);
                        }
                      }
                      for (const auto& res : o.results) {
                        values.erase(res.id);
                        hidden.emplace(res.id, "region " + std::to_string(r) + " of " + op.where);
                      }
                      for (const auto& g : o.regions) hide(g);
                    }
                  };
              for (const auto& a : op.region_args[r]) {
                values.erase(a.id);
                hidden.emplace(a.id, "region " + std::to_string(r) + " of " + op.where);
              }
              hide(op.regions[r]);
            }
            for (size_t r = 0; r < op.results.size(); ++r) {
              open.erase(op.results[r].id);
              values[op.results[r].id] = appended->result(r);
            }
          }
        };
    build_ops(ops, program.block());
    for (const auto& out : outputs)
      program.add_output(lookup(out.value, "output '" + out.name + "'"), out.name);
    for (const auto& up : updates) {
      Value* target = program.find(up.name);
      if (!target || target->kind() != ValueKind::parameter) {
        fail("update '" + up.name + "'", "names no parameter of the program");
      }
      program.add_update(up.name, lookup(up.value, "update '" + up.name + "'"));
    }
    verify(program);
    return program;
  }

  std::string source_;
  const ParamMap& constants_;  // not owned
  std::string constants_source_;
};

std::string read_text_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec)) {
    throw Error(ErrorCode::invalid_argument, path + ": is not a regular file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(ErrorCode::invalid_argument,
                path + ": cannot open the file (" + std::strerror(errno) + ")");
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error(ErrorCode::invalid_argument, path + ": reading the file failed");
  return text.str();
}

// Note [Saving a program and its parameters as a pair]
// save() writes path.json and path.safetensors; a kill between two renames
// must not leave a new parameter file beside the old program. The
// safetensors metadata records a hash of the program text it belongs to
// ("oar.program_hash"), and the program passes through path.json.pending:
//   1. write both under temporary names and fsync them (TempFile);
//   2. rename the program to path.json.pending;
//   3. rename the parameters to path.safetensors (the commit point);
//   4. rename path.json.pending to path.json.
// load() reads path.json, or, when the parameters' hash names another text,
// a path.json.pending of that hash (a save killed after step 3), and
// otherwise refuses the pair with a sentence. Before step 1 a save finishes
// or drops what an earlier killed save left (finish_interrupted_save).
// Files written before the hash existed load without the check.
constexpr const char* kProgramHashKey = "oar.program_hash";
constexpr const char* kPendingSuffix = ".pending";

// FNV-1a, 64 bits, as "fnv1a64:<16 hex digits>": tells apart the programs
// of two saves (it guards against accidents, not against forgery).
std::string program_hash(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return std::string("fnv1a64:") + hex;
}

bool is_file(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

// The hash path.safetensors records, or "" (no readable file, or one
// written before hashes).
std::string recorded_program_hash(const std::string& tensors_path) {
  if (!is_file(tensors_path)) return "";
  try {
    auto meta = read_safetensors_metadata(tensors_path);
    auto it = meta.find(kProgramHashKey);
    return it == meta.end() ? "" : it->second;
  } catch (const Error&) {
    return "";
  }
}

// Step 0 of Note [Saving a program and its parameters as a pair].
void finish_interrupted_save(const std::string& json_path, const std::string& tensors_path) {
  const std::string pending = json_path + kPendingSuffix;
  for (const auto& p : {json_path, tensors_path, pending}) detail::remove_stale_temp_files(p);
  if (!is_file(pending)) return;
  std::string recorded = recorded_program_hash(tensors_path);
  if (!recorded.empty() && recorded == program_hash(read_text_file(pending))) {
    detail::durable_rename(pending, json_path);  // the killed save had committed
  } else {
    std::filesystem::remove(pending);  // its parameters never replaced the old ones
    detail::fsync_directory_of(pending);
  }
}

}  // namespace

std::string to_json(const Program& program, int indent) {
  std::unordered_map<const Value*, int64_t> ids;
  auto number = [&](const Value* v) {
    int64_t id = static_cast<int64_t>(ids.size());
    ids.emplace(v, id);
    return id;
  };
  auto id_of = [&](const Value* v, const std::string& where) {
    auto it = ids.find(v);
    if (it == ids.end()) {
      throw Error(ErrorCode::invalid_argument,
                  "to_json: " + where + " uses a value that is not defined before it");
    }
    return it->second;
  };
  auto interface = [&](const std::vector<Value*>& values) {
    Json list = Json::array();
    for (const Value* v : values) {
      Json j = Json::object();
      j["id"] = number(v);
      j["name"] = v->name();
      j["type"] = type_json(v->type());
      list.push_back(std::move(j));
    }
    return list;
  };

  Json j = Json::object();
  j["format"] = kFormat;
  j["version"] = kProgramFormatVersionNoArguments;
  bool uses_arguments = false;  // region arguments: written as version 2
  j["inputs"] = interface(program.inputs());
  j["parameters"] = interface(program.parameters());
  j["constants"] = interface(program.constants());
  std::function<Json(const Block&, const std::string&)> ops_json = [&](const Block& block,
                                                                       const std::string& scope) {
    Json ops = Json::array();
    size_t i = 0;
    for (const auto& ref : block.ops()) {
      const Operation& op = *ref;
      std::string where = op_where(i++, op.name()) + scope;
      Json o = Json::object();
      o["op"] = op.name();
      Json operands = Json::array();
      for (const Value* v : op.operands()) operands.push_back(id_of(v, where));
      o["operands"] = std::move(operands);
      Json attrs = Json::object();
      for (const auto& [name, attr] : op.attrs().items()) attrs[name] = attribute_json(attr);
      o["attrs"] = std::move(attrs);
      Json results = Json::array();
      for (const Value* r : op.results()) {
        Json rj = Json::object();
        rj["id"] = number(r);
        rj["type"] = type_json(r->type());
        results.push_back(std::move(rj));
      }
      o["results"] = std::move(results);
      if (op.num_regions() > 0) {
        Json regions = Json::array();
        for (size_t r = 0; r < op.num_regions(); ++r) {
          Json rj = Json::object();
          const Block& region = op.region(r);
          if (!region.arguments().empty()) {
            uses_arguments = true;
            Json args = Json::array();
            for (const Value* a : region.arguments()) {
              Json aj = Json::object();
              aj["id"] = number(a);
              aj["type"] = type_json(a->type());
              args.push_back(std::move(aj));
            }
            rj["args"] = std::move(args);
          }
          rj["ops"] = ops_json(op.region(r), " in region " + std::to_string(r) + " of " + where);
          regions.push_back(std::move(rj));
        }
        o["regions"] = std::move(regions);
      }
      ops.push_back(std::move(o));
    }
    return ops;
  };
  j["ops"] = ops_json(program.block(), "");
  if (uses_arguments) j["version"] = kProgramFormatVersion;
  auto named = [&](const std::vector<NamedValue>& list, const char* kind) {
    Json out = Json::array();
    for (const NamedValue& n : list) {
      Json nj = Json::object();
      nj["name"] = n.name;
      nj["value"] = id_of(n.value, std::string(kind) + " '" + n.name + "'");
      out.push_back(std::move(nj));
    }
    return out;
  };
  j["outputs"] = named(program.outputs(), "output");
  j["updates"] = named(program.updates(), "update");
  try {
    return j.dump(indent);
  } catch (const Json::exception& e) {
    throw Error(ErrorCode::invalid_argument,
                std::string("to_json: cannot encode the program (") + e.what() + ")");
  }
}

Program from_json(const std::string& text, const ParamMap& constants, const std::string& source) {
  return ProgramReader(source, constants, "the constants given").read(text);
}

void save(const Program& program, const ParamMap& params, const std::string& path) {
  const std::string json_path = path + ".json";
  const std::string tensors_path = path + ".safetensors";
  std::string text = to_json(program) + "\n";

  std::map<std::string, Tensor> tensors;
  for (const Value* p : program.parameters()) {
    auto it = params.find(p->name());
    if (it == params.end()) {
      throw Error(ErrorCode::invalid_argument, tensors_path + ": parameter '" + p->name() + "' (" +
                                                   p->type().str() +
                                                   ") is missing from the parameters to save");
    }
    const Tensor& t = it->second;
    if (!t.defined() || t.is_symbolic()) {
      throw Error(ErrorCode::invalid_argument, tensors_path + ": parameter '" + p->name() +
                                                   "' is " +
                                                   (t.defined() ? "symbolic" : "undefined"));
    }
    if (t.dtype() != p->type().dtype || !p->type().matches(t.shape())) {
      throw Error(ErrorCode::invalid_argument,
                  tensors_path + ": parameter '" + p->name() + "' is " + p->type().str() +
                      " in the program but the tensor to save is " + type_of(t).str());
    }
    tensors.emplace(p->name(), t);
  }
  for (const Value* c : program.constants()) {
    std::string key = kConstantPrefix + c->name();
    if (!tensors.emplace(key, program.constant_value(c)).second) {
      throw Error(ErrorCode::invalid_argument, tensors_path + ": constant '" + c->name() +
                                                   "' and a parameter would both be saved as '" +
                                                   key + "'");
    }
  }

  // Note [Saving a program and its parameters as a pair]
  finish_interrupted_save(json_path, tensors_path);
  const std::string pending = json_path + kPendingSuffix;
  detail::TempFile tensors_file(tensors_path);
  detail::write_safetensors(tensors_file.stream(), tensors_path, tensors,
                            {{"format", kFormat},
                             {"version", std::to_string(kProgramFormatVersionNoArguments)},
                             {kProgramHashKey, program_hash(text)}});
  tensors_file.close();
  detail::TempFile json_file(pending);
  json_file.stream() << text;
  json_file.commit();
  try {
    tensors_file.commit();
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(pending, ignored);
    throw;
  }
  detail::durable_rename(pending, json_path);
}

LoadedProgram load(const std::string& path, const Device& device) {
  const std::string json_path = path + ".json";
  const std::string tensors_path = path + ".safetensors";
  const std::string pending = json_path + kPendingSuffix;
  // A first save killed after its commit point has no path.json yet.
  std::string text =
      !is_file(json_path) && is_file(pending) ? std::string() : read_text_file(json_path);
  std::map<std::string, std::string> metadata;
  std::map<std::string, Tensor> tensors = load_safetensors(tensors_path, device, &metadata);
  // Note [Saving a program and its parameters as a pair]
  std::string program_path = json_path;
  if (auto it = metadata.find(kProgramHashKey);
      it != metadata.end() && it->second != program_hash(text)) {
    if (is_file(pending) && program_hash(text = read_text_file(pending)) == it->second) {
      program_path = pending;  // a save was killed after its parameters were in place
    } else {
      throw Error(ErrorCode::invalid_argument,
                  tensors_path + ": holds the parameters of another program than " + json_path +
                      " (it records the program hash " + it->second + ", the program's is " +
                      program_hash(is_file(json_path) ? read_text_file(json_path) : "") +
                      "); the two files come from different saves");
    }
  }

  ParamMap params;
  ParamMap constants;
  for (auto& [name, t] : tensors) {
    if (name.starts_with(kConstantPrefix)) {
      constants.emplace(name.substr(std::strlen(kConstantPrefix)), t);
    } else {
      params.emplace(name, t);
    }
  }
  Program program = ProgramReader(program_path, constants, tensors_path).read(text);

  for (const Value* p : program.parameters()) {
    auto it = params.find(p->name());
    if (it == params.end()) {
      throw Error(ErrorCode::invalid_argument, tensors_path + ": parameter '" + p->name() + "' (" +
                                                   p->type().str() + ") of " + program_path +
                                                   " is missing");
    }
    if (it->second.dtype() != p->type().dtype || !p->type().matches(it->second.shape())) {
      throw Error(ErrorCode::invalid_argument,
                  tensors_path + ": parameter '" + p->name() + "' is " + p->type().str() + " in " +
                      program_path + " but " + type_of(it->second).str() + " in the file");
    }
  }
  // A tensor the program does not use means the files do not belong together.
  for (const auto& [name, t] : tensors) {
    Value* v = nullptr;
    if (name.starts_with(kConstantPrefix)) {
      v = program.find(name.substr(std::strlen(kConstantPrefix)));
      if (v && v->kind() != ValueKind::constant) v = nullptr;
    } else {
      v = program.find(name);
      if (v && v->kind() != ValueKind::parameter) v = nullptr;
    }
    if (!v) {
      throw Error(ErrorCode::invalid_argument, tensors_path + ": tensor '" + name +
                                                   "' is neither a parameter nor a constant of " +
                                                   program_path);
    }
  }
  return LoadedProgram{std::move(program), std::move(params)};
}

}  // namespace oar::ir
