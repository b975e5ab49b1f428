// Program JSON, safetensors and save/load: exact round trips, the bytes of a
// small safetensors file, and truncated, corrupted and hostile files that
// must fail with an oar::Error naming the file.
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "oar/ir/printer.h"
#include "oar/ir/safetensors.h"
#include "oar/ir/serialize.h"
#include "test_util.h"

using oar::Attrs;
using oar::Device;
using oar::DType;
using oar::Shape;
using oar::Tensor;
using oar::ir::ParamMap;
using oar::ir::Program;
using oar::ir::TensorType;
using oar::ir::Value;
using oar_test::error_of;
using oar_test::test_devices;

namespace {

using Json = nlohmann::ordered_json;
using Ints = std::vector<int64_t>;
using Bytes = std::vector<char>;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// Appends op `name`; the result type comes from the op's meta rule unless given.
Value* emit(Program& p, const char* name, std::vector<Value*> operands, Attrs attrs = {},
            std::optional<TensorType> type = std::nullopt) {
  const oar::OpDef& def = oar::OpRegistry::instance().get(name);
  if (!type) {
    std::vector<oar::TensorMeta> metas;
    for (Value* v : operands) metas.push_back({v->type().dtype, v->type().dims});
    oar::TensorMeta out = def.meta(def, metas, attrs).at(0);
    type = TensorType{out.dtype, out.shape};
  }
  return p.append(def, std::move(operands), std::move(attrs), {*type})->result(0);
}

// A program and the tensors it needs.
struct Example {
  Program program;
  ParamMap params;
  ParamMap constants;
};

// y = relu((x @ w + b) * scale), with a dynamic batch dim.
Example mlp(const Device& device) {
  Example e;
  Program& p = e.program;
  Value* x = p.add_input("x", {DType::f32, {-1, 4}});
  Value* w = p.add_parameter("fc.weight", {DType::f32, {4, 3}});
  Value* b = p.add_parameter("fc.bias", {DType::f32, {3}});
  Tensor scale = Tensor::from_vector<float>({0.5f, 2.0f, -1.0f}, {3}, device);
  Value* s = p.add_constant("scale", scale);
  Value* mm = emit(p, "matmul", {x, w}, {{"transpose_a", false}, {"transpose_b", false}},
                   TensorType{DType::f32, {-1, 3}});
  Value* y = emit(p, "add", {mm, b}, {}, TensorType{DType::f32, {-1, 3}});
  Value* z = emit(p, "mul", {y, s}, {}, TensorType{DType::f32, {-1, 3}});
  p.add_output(emit(p, "relu", {z}, {}, TensorType{DType::f32, {-1, 3}}), "y");
  std::vector<float> wv(12);
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = 0.25f * static_cast<float>(i) - 1.0f;
  e.params["fc.weight"] = Tensor::from_vector(wv, {4, 3}, device);
  e.params["fc.bias"] = Tensor::from_vector<float>({1.5f, -2.5f, 3.0f}, {3}, device);
  e.constants["scale"] = scale;
  return e;
}

// Attributes of every kind, including non-finite and extreme floats and
// empty lists, on ops whose meta rules read some of them.
Example every_attribute_kind() {
  Example e;
  Program& p = e.program;
  Value* logits = p.add_input("logits", {DType::f32, {2, 3}});
  Value* labels = p.add_input("labels", {DType::i64, {2}});
  Value* loss =
      emit(p, "cross_entropy", {logits, labels},
           {{"axis", int64_t{1}}, {"reduction", std::string("mean")}, {"soft_label", false}});
  Value* t = emit(p, "transpose", {logits}, {{"perm", Ints{1, 0}}});
  // The real full's schema refuses made-up names (Note [Attribute schema]):
  // a test op with full's meta rule takes an attribute of every kind.
  static const oar::OpDef& every_kind = oar::OpRegistry::instance().add(
      {.name = "test_every_attribute_kind",
       .num_inputs = 0,
       .meta = oar::OpRegistry::instance().get("full").meta,
       .attrs = {oar::attr("shape", oar::AttrKind::ints, "shape"), oar::attr("dtype", oar::AttrKind::int_, "dtype"),
                 oar::attr("value", oar::AttrKind::float_, "value"), oar::attr("scales", oar::AttrKind::floats, "floats"),
                 oar::attr("note", oar::AttrKind::string, "a string"), oar::attr("no_ints", oar::AttrKind::ints, "empty"),
                 oar::attr("no_floats", oar::AttrKind::floats, "empty"), oar::attr("big", oar::AttrKind::int_, "int"),
                 oar::attr("alpha", oar::AttrKind::float_, "float")},
       .doc = "a test op with an attribute of every kind"});
  Value* f =
      emit(p, every_kind.name.c_str(), {},
           {{"shape", Ints{3, 2}},
            {"dtype", static_cast<int64_t>(DType::f32)},
            {"value", 0.1},
            {"scales", std::vector<double>{0.5, -0.0, 1e-300, 1.0 / 3.0, kInf, -kInf, kNan, 1e300}},
            {"note", std::string("a \"quoted\" \\ note \xc3\xbc")},
            {"no_ints", Ints{}},
            {"no_floats", std::vector<double>{}},
            {"big", std::numeric_limits<int64_t>::min()},
            {"alpha", -kInf}});
  p.add_output(loss, "loss");
  p.add_output(emit(p, "add", {t, f}), "sum");
  return e;
}

// A training step with a dynamic batch: w <- w - lr * sum(x * w, axis 0).
Example training_step(const Device& device) {
  Example e;
  Program& p = e.program;
  Value* x = p.add_input("x", {DType::f32, {-1, 3}});
  Value* w = p.add_parameter("w", {DType::f32, {3}});
  Tensor lr = Tensor::from_vector<float>({0.1f}, {}, device);
  Value* lrv = p.add_constant("lr", lr);
  Value* prod = emit(p, "mul", {x, w}, {}, TensorType{DType::f32, {-1, 3}});
  Value* g =
      emit(p, "sum", {prod}, {{"axes", Ints{0}}, {"keepdim", false}}, TensorType{DType::f32, {3}});
  Value* nw = emit(p, "sub", {w, emit(p, "mul", {g, lrv})});
  p.add_output(emit(p, "sum", {prod}, {{"axes", Ints{0, 1}}, {"keepdim", false}},
                    TensorType{DType::f32, {}}),
               "loss");
  p.add_update("w", nw);
  e.params["w"] = Tensor::from_vector<float>({1.0f, -2.0f, 0.5f}, {3}, device);
  e.constants["lr"] = lr;
  return e;
}

struct TempDir {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("oar_test_ir_serialize_" + std::to_string(::getpid()));
  TempDir() { std::filesystem::create_directories(path); }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

Bytes read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void write_text(const std::string& path, const std::string& text) {
  write_bytes(path, Bytes(text.begin(), text.end()));
}

// A header length `n` (8 bytes, little-endian) and the header text.
Bytes length_and_header(uint64_t n, const std::string& header) {
  Bytes out(8 + header.size());
  for (size_t i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  std::copy(header.begin(), header.end(), out.begin() + 8);
  return out;
}

void append(Bytes& bytes, const void* data, size_t n) {
  size_t old = bytes.size();
  bytes.resize(old + n);
  std::memcpy(bytes.data() + old, data, n);
}

// A safetensors file with the header text as given and `data_bytes` bytes of data.
Bytes safetensors_file(const std::string& header, size_t data_bytes, uint64_t header_length = 0) {
  Bytes out = length_and_header(header_length ? header_length : header.size(), header);
  for (size_t i = 0; i < data_bytes; ++i) out.push_back(static_cast<char>(i));
  return out;
}

// The error of loading `bytes` as a safetensors file (checked to name the file).
std::string load_error(const TempDir& dir, const Bytes& bytes) {
  std::string path = dir.file("hostile.safetensors");
  write_bytes(path, bytes);
  std::string message = error_of([&] { oar::ir::load_safetensors(path, Device{"cpu", 0}); });
  INFO("error: " << message);
  CHECK(message.find(path + ": ") == 0);
  return message;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

// ---------------------------------------------------------------- JSON --

TEST_CASE("to_json writes the documented form: typed attributes, dense ids, dynamic dims") {
  Example e = mlp(Device{"cpu", 0});
  std::string text = oar::ir::to_json(e.program, -1);
  CHECK(
      text ==
      R"({"format":"oar.program","version":1,)"
      R"("inputs":[{"id":0,"name":"x","type":{"dtype":"f32","shape":[-1,4]}}],)"
      R"("parameters":[{"id":1,"name":"fc.weight","type":{"dtype":"f32","shape":[4,3]}},)"
      R"({"id":2,"name":"fc.bias","type":{"dtype":"f32","shape":[3]}}],)"
      R"("constants":[{"id":3,"name":"scale","type":{"dtype":"f32","shape":[3]}}],)"
      R"("ops":[{"op":"matmul","operands":[0,1],"attrs":{"transpose_a":{"bool":false},"transpose_b":{"bool":false}},)"
      R"("results":[{"id":4,"type":{"dtype":"f32","shape":[-1,3]}}]},)"
      R"({"op":"add","operands":[4,2],"attrs":{},"results":[{"id":5,"type":{"dtype":"f32","shape":[-1,3]}}]},)"
      R"({"op":"mul","operands":[5,3],"attrs":{},"results":[{"id":6,"type":{"dtype":"f32","shape":[-1,3]}}]},)"
      R"({"op":"relu","operands":[6],"attrs":{},"results":[{"id":7,"type":{"dtype":"f32","shape":[-1,3]}}]}],)"
      R"("outputs":[{"name":"y","value":7}],"updates":[]})");
}

TEST_CASE("to_json numbers values densely whatever order they were created in") {
  // Values created out of order, with an erased operation leaving a gap.
  Program a;
  Value* x = a.add_input("x", {DType::f32, {2}});
  Value* dead = emit(a, "neg", {x});
  a.block().erase_if([&](const oar::ir::Operation& op) { return op.result(0) == dead; });
  Value* y = emit(a, "exp", {x});
  Value* w = a.add_parameter("w", {DType::f32, {2}});
  a.add_output(emit(a, "add", {y, w}), "out");

  Program b;
  Value* bx = b.add_input("x", {DType::f32, {2}});
  Value* bw = b.add_parameter("w", {DType::f32, {2}});
  b.add_output(emit(b, "add", {emit(b, "exp", {bx}), bw}), "out");

  CHECK(w->id() == 3);  // the raw ids differ from the dense ones
  CHECK(oar::ir::to_json(a) == oar::ir::to_json(b));
  std::string text = oar::ir::to_json(a, -1);
  CHECK(contains(text, R"("parameters":[{"id":1,"name":"w")"));
  CHECK(contains(text, R"({"op":"exp","operands":[0],"attrs":{},"results":[{"id":2,)"));
  CHECK(contains(text, R"({"op":"add","operands":[2,1],)"));
}

TEST_CASE("attributes of every kind are written with their kind; non-finite floats as strings") {
  std::string text = oar::ir::to_json(every_attribute_kind().program, -1);
  CHECK(contains(
      text,
      R"("attrs":{"axis":{"int":1},"reduction":{"str":"mean"},"soft_label":{"bool":false}})"));
  CHECK(contains(text, R"("perm":{"ints":[1,0]})"));
  CHECK(contains(text, R"("value":{"float":0.1})"));
  CHECK(contains(
      text,
      R"("scales":{"floats":[0.5,-0.0,1e-300,0.3333333333333333,"inf","-inf","nan",1e+300]})"));
  CHECK(contains(text, R"("note":{"str":"a \"quoted\" \\ note )"
                       "\xc3\xbc\"}"));
  CHECK(contains(text, R"("no_ints":{"ints":[]},"no_floats":{"floats":[]})"));
  CHECK(contains(text, R"("big":{"int":-9223372036854775808},"alpha":{"float":"-inf"})"));
}

TEST_CASE("to_json(from_json(j)) == j byte for byte, and the programs print equally") {
  Device cpu{"cpu", 0};
  std::vector<Example> examples;
  examples.push_back(mlp(cpu));
  examples.push_back(every_attribute_kind());
  examples.push_back(training_step(cpu));
  examples.push_back(Example{});  // the empty program
  for (const Example& e : examples) {
    for (int indent : {-1, 0, 1, 2}) {
      std::string text = oar::ir::to_json(e.program, indent);
      Program back = oar::ir::from_json(text, e.constants, "model.json");
      CHECK(oar::ir::to_json(back, indent) == text);
      CHECK(oar::ir::to_string(back) == oar::ir::to_string(e.program));
    }
  }
}

TEST_CASE("from_json restores attribute values and types exactly") {
  Program back = oar::ir::from_json(oar::ir::to_json(every_attribute_kind().program), {});
  const Attrs& full = back.block().op(2).attrs();
  CHECK(full.get_ints("shape") == Ints{3, 2});
  CHECK(full.get_int("dtype") == 0);
  CHECK(full.get_float("value") == 0.1);
  CHECK(full.get_int("big") == std::numeric_limits<int64_t>::min());
  CHECK(full.get_float("alpha") == -kInf);
  const auto& scales = full.get_floats("scales");
  REQUIRE(scales.size() == 8);
  CHECK(scales[0] == 0.5);
  CHECK((scales[1] == 0.0 && std::signbit(scales[1])));
  CHECK(scales[2] == 1e-300);
  CHECK(scales[3] == 1.0 / 3.0);
  CHECK(scales[4] == kInf);
  CHECK(scales[5] == -kInf);
  CHECK(std::isnan(scales[6]));
  CHECK(scales[7] == 1e300);
  CHECK(full.get_string("note") == "a \"quoted\" \\ note \xc3\xbc");
  CHECK(std::holds_alternative<std::vector<double>>(*full.find("no_floats")));
  CHECK(std::holds_alternative<Ints>(*full.find("no_ints")));
  const Attrs& ce = back.block().op(0).attrs();
  CHECK(std::holds_alternative<int64_t>(*ce.find("axis")));
  CHECK(std::holds_alternative<bool>(*ce.find("soft_label")));
  // A hand-written float that looks like an integer stays a float.
  Json j = Json::parse(oar::ir::to_json(every_attribute_kind().program));
  j["ops"][2]["attrs"]["value"] = Json{{"float", 2}};
  Program edited = oar::ir::from_json(j.dump(), {});
  CHECK(std::holds_alternative<double>(*edited.block().op(2).attrs().find("value")));
}

TEST_CASE("from_json keeps the interface: dynamic dims, constants, outputs and updates") {
  Example e = training_step(Device{"cpu", 0});
  Program back = oar::ir::from_json(oar::ir::to_json(e.program), e.constants);
  REQUIRE(back.inputs().size() == 1);
  CHECK(back.inputs()[0]->type() == TensorType{DType::f32, {-1, 3}});
  REQUIRE(back.constants().size() == 1);
  CHECK(back.constant_value(back.constants()[0]).to_vector<float>() == std::vector<float>{0.1f});
  REQUIRE(back.updates().size() == 1);
  CHECK(back.updates()[0].name == "w");
  CHECK(back.updates()[0].value->producer()->name() == "sub");
  REQUIRE(back.outputs().size() == 1);
  CHECK(back.outputs()[0].name == "loss");
  CHECK(back.outputs()[0].value->type() == TensorType{DType::f32, {}});
}

TEST_CASE("from_json rejects bad programs with a sentence naming the file") {
  Example e = mlp(Device{"cpu", 0});
  const Json good = Json::parse(oar::ir::to_json(e.program));
  auto error_after = [&](const std::function<void(Json&)>& edit) {
    Json j = good;
    edit(j);
    std::string message =
        error_of([&] { oar::ir::from_json(j.dump(1), e.constants, "model.json"); });
    INFO("error: " << message);
    CHECK(message.find("model.json: ") == 0);
    return message;
  };
  CHECK(contains(error_after([](Json& j) { j["ops"][1]["op"] = "matmulx"; }),
                 "unknown op 'matmulx'"));
  CHECK(contains(error_after([](Json& j) { j["ops"][1]["operands"][0] = 99; }),
                 "operation 1 (add) operand 0 refers to value 99, which nothing defines"));
  CHECK(contains(
      error_after([](Json& j) { j["ops"][1]["operands"][0] = 6; }),
      "operation 1 (add) operand 0 refers to value 6, which operation 2 (mul) defines later"));
  CHECK(contains(error_after([](Json& j) { j["ops"][1]["operands"][0] = 5; }),
                 "refers to value 5, which operation 1 (add) defines later"));
  CHECK(contains(error_after([](Json& j) { j["ops"][1]["operands"].erase(1); }),
                 "operation 1 (add) has 1 operands but add takes 2"));
  CHECK(contains(
      error_after([](Json& j) { j["ops"][1]["results"].push_back(j["ops"][1]["results"][0]); }),
      "has 2 results but add produces 1"));
  CHECK(contains(error_after([](Json& j) { j["ops"][0].erase("attrs"); }),
                 "operation 0 has no \"attrs\""));
  CHECK(
      contains(error_after([](Json& j) { j.erase("outputs"); }), "the program has no \"outputs\""));
  CHECK(contains(error_after([](Json& j) { j["ops"][0]["operands"] = "x"; }),
                 "\"operands\" that is not a list"));
  CHECK(contains(error_after([](Json& j) { j["ops"][0]["operands"][0] = "0"; }),
                 "the value id \"0\""));
  CHECK(
      contains(error_after([](Json& j) { j["ops"][0]["colour"] = 1; }), "unknown key \"colour\""));
  CHECK(contains(error_after([](Json& j) { j["version"] = 3; }),
                 "format version 3, newer than this build reads (up to 2)"));
  CHECK(contains(error_after([](Json& j) { j["version"] = "1"; }), "no integer \"version\""));
  CHECK(contains(error_after([](Json& j) { j["format"] = "onnx"; }), "it is not an oar program"));
  CHECK(contains(error_after([](Json& j) { j["inputs"][0]["name"] = "fc.bias"; }),
                 "parameter 'fc.bias' has the same name as input 'fc.bias'"));
  CHECK(
      contains(error_after([](Json& j) { j["parameters"][1]["id"] = 1; }),
               "value id 1 is defined twice: by parameter 'fc.weight' and by parameter 'fc.bias'"));
  CHECK(contains(
      error_after([](Json& j) { j["inputs"][0]["type"]["shape"][0] = -2; }),
      "input 'x' has the shape [-2,4]; dims must be integers >= 0, or -1 for a dynamic dim"));
  CHECK(contains(error_after([](Json& j) { j["inputs"][0]["type"]["shape"][0] = 1.5; }),
                 "has the shape [1.5,4]"));
  CHECK(contains(error_after([](Json& j) { j["inputs"][0]["type"]["dtype"] = "float32"; }),
                 "unknown dtype 'float32'"));
  CHECK(contains(error_after([](Json& j) { j["parameters"][0]["type"]["shape"][0] = -1; }),
                 "dynamic type"));
  CHECK(contains(error_after([](Json& j) {
                   j["ops"][0]["attrs"]["transpose_a"] = Json{{"bool", 1}};
                 }),
                 "attribute 'transpose_a' has the bool 1, which is not true or false"));
  CHECK(contains(error_after([](Json& j) {
                   j["ops"][0]["attrs"]["transpose_a"] = Json{{"double", 1.0}};
                 }),
                 "unknown kind 'double'"));
  CHECK(contains(error_after([](Json& j) { j["ops"][0]["attrs"]["transpose_a"] = false; }),
                 "an attribute is an object {kind: value}"));
  CHECK(contains(error_after([](Json& j) {
                   j["ops"][0]["attrs"]["k"] = Json{{"int", 1.5}};
                 }),
                 "has the int 1.5, which is not a 64-bit integer"));
  CHECK(contains(error_after([](Json& j) {
                   j["ops"][0]["attrs"]["k"] = Json{{"int", 9223372036854775808ull}};
                 }),
                 "not a 64-bit integer"));
  CHECK(contains(error_after([](Json& j) {
                   j["ops"][0]["attrs"]["k"] = Json{{"floats", {1.0, "infinity"}}};
                 }),
                 "has the float \"infinity\""));
  CHECK(contains(error_after([](Json& j) { j["outputs"][0]["value"] = 42; }),
                 "output 'y' refers to value 42, which nothing defines"));
  CHECK(contains(error_after([](Json& j) { j["outputs"].push_back(j["outputs"][0]); }),
                 "output 'y' appears twice"));
  CHECK(contains(error_after([](Json& j) {
                   j["updates"].push_back(Json{{"name", "x"}, {"value", 7}});
                 }),
                 "update 'x' names no parameter"));
  // The meta rule disagrees with the written result type: verify() says so.
  CHECK(contains(error_after([](Json& j) { j["ops"][0]["results"][0]["type"]["dtype"] = "f64"; }),
                 "verify: operation 0 (matmul) result 0 has type f64[-1, 3]"));
  CHECK(contains(error_after([](Json& j) { j["ops"][0]["attrs"]["transpose_a"]["bool"] = true; }),
                 "meta rule rejects"));
  // Constants must come with a tensor of their type.
  std::string missing = error_of([&] { oar::ir::from_json(good.dump(), {}, "model.json"); });
  CHECK(contains(missing, "model.json: constant 'scale' has no tensor"));
  ParamMap wrong{{"scale", Tensor::from_vector<float>({1, 2}, {2}, Device{"cpu", 0})}};
  CHECK(contains(
      error_of([&] { oar::ir::from_json(good.dump(), wrong, "model.json"); }),
      "model.json: constant 'scale' is f32[3] but its tensor in the constants given is f32[2]"));
}

TEST_CASE("from_json rejects every truncation of a valid program and garbage text") {
  Example e = training_step(Device{"cpu", 0});
  std::string text = oar::ir::to_json(e.program, -1);
  for (size_t n = 0; n < text.size(); ++n) {
    std::string message =
        error_of([&] { oar::ir::from_json(text.substr(0, n), e.constants, "cut.json"); });
    INFO("prefix of " << n << " bytes: " << message);
    CHECK(message.find("cut.json: ") == 0);
  }
  CHECK(contains(
      error_of([&] { oar::ir::from_json("{\"format\": 1, \"format\": 2}", {}, "dup.json"); }),
      "dup.json: the program has the key 'format' twice in one object"));
  CHECK(contains(error_of([&] { oar::ir::from_json("[1, 2]", {}, "list.json"); }),
                 "list.json: the program is a JSON array"));
  // Deep nesting is parsed without recursion and rejected.
  std::string deep = std::string(200000, '[') + std::string(200000, ']');
  CHECK(error_of([&] { oar::ir::from_json(deep, {}, "deep.json"); }) ==
        "deep.json: the program nests arrays and objects more than 64 levels deep");
  CHECK(contains(error_of([&] { oar::ir::from_json(std::string(200000, '{'), {}, "deep.json"); }),
                 "deep.json: the program is not valid JSON"));
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::string garbage(static_cast<size_t>(rng() % 64), '\0');
    for (char& c : garbage) c = static_cast<char>(rng());
    if (trial % 2) garbage = "{" + garbage;
    std::string message = error_of([&] { oar::ir::from_json(garbage, {}, "garbage.json"); });
    CHECK(message.find("garbage.json") == 0);
  }
}

// ---------------------------------------------------------- safetensors --

TEST_CASE("safetensors: the bytes of a small file, written by hand") {
  TempDir dir;
  std::string path = dir.file("tiny.safetensors");
  oar::ir::save_safetensors(
      path, {{"a", Tensor::from_vector<float>({1.0f, -2.0f}, {2}, Device{"mock", 0})}});
  // {"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}} is 54 bytes; padded with 2 spaces to 56.
  std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}  )";
  REQUIRE(header.size() == 56);
  Bytes want = length_and_header(56, header);
  const unsigned char data[] = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0};
  append(want, data, sizeof data);
  CHECK(read_bytes(path) == want);
  // No temporary file is left behind.
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path),
                      std::filesystem::directory_iterator()) == 1);
}

TEST_CASE("safetensors: tensors of every dtype and metadata round-trip on every device") {
  TempDir dir;
  for (const Device& device : test_devices()) {
    std::map<std::string, Tensor> tensors{
        {"f32", Tensor::from_vector<float>({1.5f, -0.0f, 3e38f}, {3}, device)},
        {"f64", Tensor::from_vector<double>({1.0 / 3.0, -1e300}, {2, 1}, device)},
        {"i8", Tensor::from_vector<int8_t>({-128, 127}, {2}, device)},
        {"u8", Tensor::from_vector<uint8_t>({0, 255, 7}, {3}, device)},
        {"i32", Tensor::from_vector<int32_t>({-5, 6, 7, 8}, {2, 2}, device)},
        {"i64", Tensor::from_vector<int64_t>({int64_t{1} << 60}, {}, device)},
        {"bool", Tensor::from_vector<bool>({true, false, true}, {3}, device)},
        {"empty", Tensor::from_vector<float>({}, {0, 4}, device)},
        {"f16", Tensor::from_host("\x00\x3c\x00\xc0", {2}, DType::f16, device)},  // 1.0, -2.0
        {"bf16", Tensor::from_host("\x80\x3f", {1}, DType::bf16, device)},        // 1.0
        {"c64", Tensor::from_vector<std::complex<float>>({{1.5f, -2}, {0, 3e38f}}, {2}, device)},
        {"c128", Tensor::from_vector<std::complex<double>>({{1.0 / 3.0, -1e300}}, {1, 1}, device)},
    };
    std::string path = dir.file("all_" + device.type + ".safetensors");
    oar::ir::save_safetensors(path, tensors, {{"framework", "oar"}, {"note", "hello"}});
    std::map<std::string, std::string> metadata;
    auto back = oar::ir::load_safetensors(path, device, &metadata);
    CHECK(metadata == std::map<std::string, std::string>{{"framework", "oar"}, {"note", "hello"}});
    REQUIRE(back.size() == tensors.size());
    for (const auto& [name, t] : tensors) {
      INFO(name << " on " << device.str());
      const Tensor& b = back.at(name);
      CHECK(b.dtype() == t.dtype());
      CHECK(b.shape() == t.shape());
      CHECK(b.device() == device);
      size_t bytes = static_cast<size_t>(t.numel()) * oar::dtype_size(t.dtype());
      Bytes want(bytes), got(bytes);
      t.copy_to_host(want.data());
      b.copy_to_host(got.data());
      CHECK(got == want);
    }
    // Every tensor starts at a multiple of its element size (wider dtypes come first).
    Bytes file = read_bytes(path);
    uint64_t n = 0;
    std::memcpy(&n, file.data(), 8);
    CHECK(n % 8 == 0);
    Json header = Json::parse(std::string(file.data() + 8, n));
    for (const auto& [name, info] : header.items()) {
      if (name == "__metadata__") continue;
      INFO(name);
      CHECK(info["data_offsets"][0].get<uint64_t>() % oar::dtype_size(tensors.at(name).dtype()) ==
            0);
    }
    CHECK(back.at("i64").to_vector<int64_t>() == std::vector<int64_t>{int64_t{1} << 60});
    CHECK(back.at("f64").to_vector<double>() == std::vector<double>{1.0 / 3.0, -1e300});
  }
}

TEST_CASE("safetensors: a file written by the reference implementation reads back") {
  // The bytes of safetensors.numpy.save_file({"w": np.array([[1, 2], [3, 4]], np.float32),
  //   "ids": np.array([7, -1], np.int64)}, path, metadata={"k": "v"}) with safetensors 0.8.0.
  const std::string hex =
      "90000000000000007b225f5f6d657461646174615f5f223a7b226b223a2276227d2c22696473223a7b2264747970"
      "65223a22493634222c227368617065223a5b325d2c22646174615f6f666673657473223a5b302c31365d7d2c2277"
      "223a7b226474797065223a22463332222c227368617065223a5b322c325d2c22646174615f6f666673657473223a"
      "5b31362c33325d7d7d20202020200700000000000000ffffffffffffffff0000803f00000040000040400000804"
      "0";
  Bytes file;
  for (size_t i = 0; i < hex.size(); i += 2)
    file.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  REQUIRE(file.size() == 184);
  TempDir dir;
  std::string path = dir.file("ref.safetensors");
  write_bytes(path, file);
  std::map<std::string, std::string> metadata;
  auto t = oar::ir::load_safetensors(path, Device{"mock", 0}, &metadata);
  CHECK(metadata.at("k") == "v");
  CHECK(t.at("ids").to_vector<int64_t>() == std::vector<int64_t>{7, -1});
  CHECK(t.at("w").shape() == Shape{2, 2});
  CHECK(t.at("w").to_vector<float>() == std::vector<float>{1, 2, 3, 4});
  // Our writer gives the same bytes (wider dtypes first, then by name).
  std::string ours = dir.file("ours.safetensors");
  oar::ir::save_safetensors(ours, {{"w", t.at("w")}, {"ids", t.at("ids")}}, {{"k", "v"}});
  CHECK(read_bytes(ours) == file);
}

TEST_CASE("safetensors: every truncation of a valid file is an error, never a crash") {
  TempDir dir;
  std::string path = dir.file("valid.safetensors");
  oar::ir::save_safetensors(path,
                            {{"a", Tensor::from_vector<float>({1, 2, 3}, {3}, Device{"cpu", 0})},
                             {"b", Tensor::from_vector<int64_t>({4}, {1}, Device{"cpu", 0})}},
                            {{"k", "v"}});
  Bytes valid = read_bytes(path);
  REQUIRE(oar::ir::load_safetensors(path, Device{"cpu", 0}).size() == 2);
  for (size_t n = 0; n < valid.size(); ++n) {
    INFO("prefix of " << n << " bytes");
    load_error(dir, Bytes(valid.begin(), valid.begin() + static_cast<long>(n)));
  }
  // One byte too many is an error too (bytes no tensor accounts for).
  Bytes longer = valid;
  longer.push_back(0);
  CHECK(
      contains(load_error(dir, longer), "bytes [20, 21) of the data section belong to no tensor"));
}

TEST_CASE("safetensors: hostile headers are rejected with a sentence naming the file") {
  TempDir dir;
  const std::string f32_2 = R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  auto with = [&](const std::string& header, size_t data) {
    return load_error(dir, safetensors_file(header, data));
  };

  CHECK(contains(load_error(dir, Bytes{1, 2, 3}),
                 "the file has 3 bytes, fewer than the 8 of the header length"));
  CHECK(contains(load_error(dir, safetensors_file("{}", 0, uint64_t{1} << 63)),
                 "the header length 9223372036854775808 exceeds the limit of 100000000 bytes"));
  CHECK(contains(load_error(dir, safetensors_file("{}", 0, 3)),
                 "the header length 3 exceeds the 2 bytes that follow it"));
  CHECK(contains(with("{\"a\": ", 0), "the header is not valid JSON"));
  CHECK(contains(with("", 0), "the header is not valid JSON"));
  CHECK(contains(with("[1, 2]", 0), "the header is a JSON array, not an object"));
  CHECK(
      contains(with(R"({"a": 5})", 0), "tensor 'a' is described by a JSON number, not an object"));
  CHECK(contains(with(R"({"a":{"dtype":"F31","shape":[2],"data_offsets":[0,8]}})", 8),
                 "tensor 'a' has the unsupported dtype 'F31'"));
  CHECK(contains(with(R"({"a":{"dtype":"I16","shape":[2],"data_offsets":[0,4]}})", 4),
                 "unsupported dtype 'I16'"));
  CHECK(contains(with(R"({"a":{"dtype":7,"shape":[2],"data_offsets":[0,8]}})", 8),
                 "dtype that is not a string"));
  CHECK(contains(with(R"({"a":{"shape":[2],"data_offsets":[0,8]}})", 8),
                 "tensor 'a' has no 'dtype'"));
  CHECK(contains(with(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", 8),
                 "unknown key 'x'"));
  CHECK(contains(with(R"({"a":{"dtype":"F32","shape":[-1,2],"data_offsets":[0,8]}})", 8),
                 "tensor 'a' has the shape [-1,2]; dims must be non-negative integers"));
  CHECK(contains(with(R"({"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", 8),
                 "non-negative integers"));
  CHECK(contains(with(R"({"a":{"dtype":"F32","shape":2,"data_offsets":[0,8]}})", 8),
                 "shape that is not a list"));
  CHECK(contains(
      with(R"({"fc.weight":{"dtype":"F32","shape":[4,8],"data_offsets":[0,96]}})", 96),
      "tensor 'fc.weight' has data_offsets [0, 96] but shape [4, 8] of F32 needs 128 bytes"));
  CHECK(contains(with(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,1000]}})", 8),
                 "tensor 'a' has data_offsets [0, 1000] beyond the data section of 8 bytes"));
  CHECK(contains(with(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8),
                 "with begin > end"));
  CHECK(contains(with(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", 8),
                 "data_offsets [0]; expected two non-negative integers"));
  CHECK(contains(with(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}})", 8),
                 "two non-negative integers"));
  CHECK(contains(with(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,"8"]}})", 8),
                 "two non-negative integers"));
  CHECK(contains(
      with(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,18446744073709551615]}})", 8),
      "beyond the data section"));
  // Overflowing shapes: the element count, and the byte count.
  CHECK(contains(
      with(
          R"({"a":{"dtype":"F32","shape":[4611686018427387904,4611686018427387904],"data_offsets":[0,0]}})",
          0),
      "whose size overflows 64 bits"));
  CHECK(contains(
      with(R"({"a":{"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,0]}})", 0),
      "whose size overflows 64 bits"));
  CHECK(contains(
      with(R"({"a":{"dtype":"F32","shape":[9223372036854775808],"data_offsets":[0,0]}})", 0),
      "non-negative integers"));
  // Tensors must tile the data section: overlaps, gaps and trailing bytes.
  CHECK(contains(
      with(R"({"a":)" + f32_2 + R"(,"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12),
      "tensor 'b' at [4, 12] overlaps tensor 'a' at [0, 8]"));
  CHECK(contains(with(R"({"a":)" + f32_2 + R"(,"b":)" + f32_2 + "}", 8),
                 "tensor 'b' at [0, 8] overlaps tensor 'a'"));
  CHECK(contains(
      with(R"({"a":)" + f32_2 + R"(,"b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}})", 20),
      "bytes [8, 12) of the data section belong to no tensor"));
  CHECK(contains(with(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12),
                 "bytes [0, 4) of the data section belong to no tensor"));
  CHECK(contains(with(R"({"a":)" + f32_2 + "}", 9),
                 "bytes [8, 9) of the data section belong to no tensor"));
  CHECK(contains(with("{}", 1), "bytes [0, 1) of the data section belong to no tensor"));
  CHECK(contains(with(R"({"a":)" + f32_2 + R"(,"a":)" + f32_2 + "}", 8),
                 "has the key 'a' twice in one object"));
  CHECK(contains(with(R"({"__metadata__":{"k":1},"a":)" + f32_2 + "}", 8),
                 "__metadata__ entry 'k' is not a string"));
  CHECK(contains(with(R"({"__metadata__":[],"a":)" + f32_2 + "}", 8),
                 "__metadata__ is not an object"));
  CHECK(contains(with("{\"\xff\":1}", 0), "the header is not valid JSON"));
  // The parser quotes the bad bytes; the sentence stays printable ASCII.
  std::string bad_utf8 = with("{\"\xff\":1}", 0);
  CHECK(contains(bad_utf8, "\\xff"));
  CHECK(std::all_of(bad_utf8.begin(), bad_utf8.end(), [](char c) { return c >= 0x20 && c < 0x7f; }));
  CHECK(contains(with(R"({"a":)" + std::string(100000, '[') + std::string(100000, ']') + "}", 0),
                 "the header nests arrays and objects more than 64 levels deep"));
  std::string missing = dir.file("missing.safetensors");
  CHECK(error_of([&] {
          oar::ir::load_safetensors(missing, Device{"cpu", 0});
        }).find(missing + ": cannot open the file") == 0);
  CHECK(error_of([&] {
          oar::ir::load_safetensors(dir.path.string(), Device{"cpu", 0});
        }).find("is not a regular file") != std::string::npos);
}

TEST_CASE(
    "safetensors: accepted oddities: empty tensors anywhere, bool bytes other than 0/1, an empty "
    "file body") {
  TempDir dir;
  std::string header = R"({"e":{"dtype":"F32","shape":[0,3],"data_offsets":[1,1]},)"
                       R"("a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                       R"("b":{"dtype":"BOOL","shape":[2],"data_offsets":[1,3]}})";
  Bytes file = length_and_header(header.size(), header);
  append(file, "\x09\x00\x02", 3);
  std::string path = dir.file("odd.safetensors");
  write_bytes(path, file);
  auto t = oar::ir::load_safetensors(path, Device{"cpu", 0});
  CHECK(t.at("e").shape() == Shape{0, 3});
  CHECK(t.at("a").to_vector<uint8_t>() == std::vector<uint8_t>{9});
  uint8_t raw[2];
  t.at("b").copy_to_host(raw);
  CHECK((raw[0] == 0 && raw[1] == 2));
  write_bytes(path, safetensors_file("{}", 0));
  CHECK(oar::ir::load_safetensors(path, Device{"cpu", 0}).empty());
}

TEST_CASE("safetensors: random garbage is an error, never a crash") {
  TempDir dir;
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 300; ++trial) {
    Bytes garbage(static_cast<size_t>(rng() % 200));
    for (char& c : garbage) c = static_cast<char>(rng());
    // Half the files get a plausible header length so the JSON parser sees the garbage.
    if (trial % 2 && garbage.size() >= 8) {
      uint64_t n = rng() % (garbage.size() - 7);
      std::memcpy(garbage.data(), &n, sizeof n);
      if (garbage.size() > 8) garbage[8] = '{';
    }
    load_error(dir, garbage);
  }
}

TEST_CASE("safetensors: a failed save keeps the earlier file and leaves no temporary file") {
  TempDir dir;
  std::string path = dir.file("keep.safetensors");
  oar::ir::save_safetensors(path, {{"a", Tensor::from_vector<float>({1}, {1}, Device{"cpu", 0})}});
  Bytes before = read_bytes(path);
  std::string message = error_of([&] { oar::ir::save_safetensors(path, {{"b", Tensor()}}); });
  CHECK(message == path + ": tensor 'b' is undefined");
  CHECK(read_bytes(path) == before);
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path),
                      std::filesystem::directory_iterator()) == 1);
  std::string nowhere = dir.file("no/such/dir/x.safetensors");
  CHECK(error_of([&] {
          oar::ir::save_safetensors(nowhere, {});
        }).find(nowhere + ": cannot create") == 0);
}

// ------------------------------------------------------------ save/load --

TEST_CASE("save -> load gives back the program, its parameters and constants on every device") {
  for (const Device& device : test_devices()) {
    TempDir dir;
    std::vector<Example> examples;
    examples.push_back(mlp(device));
    examples.push_back(training_step(device));
    for (const Example& e : examples) {
      std::string path = dir.file("model");
      oar::ir::save(e.program, e.params, path);
      CHECK(std::filesystem::exists(path + ".json"));
      CHECK(std::filesystem::exists(path + ".safetensors"));
      oar::ir::LoadedProgram loaded = oar::ir::load(path, device);
      CHECK(oar::ir::to_json(loaded.program) == oar::ir::to_json(e.program));
      REQUIRE(loaded.params.size() == e.params.size());
      for (const auto& [name, t] : e.params) {
        INFO(name << " on " << device.str());
        CHECK(loaded.params.at(name).device() == device);
        CHECK(loaded.params.at(name).shape() == t.shape());
        CHECK(loaded.params.at(name).to_vector<float>() == t.to_vector<float>());
      }
      for (const Value* c : loaded.program.constants()) {
        CHECK(loaded.program.constant_value(c).to_vector<float>() ==
              e.constants.at(c->name()).to_vector<float>());
      }
      // The safetensors file names constants "const:<name>" and reads with the plain reader.
      auto raw = oar::ir::load_safetensors(path + ".safetensors", device);
      CHECK(raw.size() == e.params.size() + e.constants.size());
      for (const auto& [name, t] : e.constants) CHECK(raw.count("const:" + name) == 1);
    }
  }
}

TEST_CASE("save refuses missing or mistyped parameters and keeps earlier files") {
  TempDir dir;
  Device cpu{"cpu", 0};
  Example e = mlp(cpu);
  std::string path = dir.file("model");
  oar::ir::save(e.program, e.params, path);
  Bytes json_before = read_bytes(path + ".json");
  Bytes tensors_before = read_bytes(path + ".safetensors");

  ParamMap missing = e.params;
  missing.erase("fc.bias");
  CHECK(error_of([&] { oar::ir::save(e.program, missing, path); }) ==
        path + ".safetensors: parameter 'fc.bias' (f32[3]) is missing from the parameters to save");
  ParamMap wrong_shape = e.params;
  wrong_shape["fc.weight"] = Tensor::from_vector<float>(std::vector<float>(12), {3, 4}, cpu);
  CHECK(error_of([&] { oar::ir::save(e.program, wrong_shape, path); }) ==
        path +
            ".safetensors: parameter 'fc.weight' is f32[4, 3] in the program but the tensor to "
            "save is f32[3, 4]");
  ParamMap wrong_dtype = e.params;
  wrong_dtype["fc.bias"] = Tensor::from_vector<double>({1, 2, 3}, {3}, cpu);
  CHECK(contains(error_of([&] { oar::ir::save(e.program, wrong_dtype, path); }),
                 "parameter 'fc.bias' is f32[3] in the program but the tensor to save is f64[3]"));
  CHECK(read_bytes(path + ".json") == json_before);
  CHECK(read_bytes(path + ".safetensors") == tensors_before);
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path),
                      std::filesystem::directory_iterator()) == 2);
}

TEST_CASE("load checks the safetensors file against the program, naming the parameter") {
  TempDir dir;
  Device cpu{"cpu", 0};
  Example e = mlp(cpu);
  std::string path = dir.file("model");
  oar::ir::save(e.program, e.params, path);
  const std::string tensors_path = path + ".safetensors";
  auto tensors = oar::ir::load_safetensors(tensors_path, cpu);
  auto load_with = [&](const std::map<std::string, Tensor>& replaced) {
    oar::ir::save_safetensors(tensors_path, replaced);
    return error_of([&] { oar::ir::load(path, cpu); });
  };

  auto t = tensors;
  t["fc.weight"] = Tensor::from_vector<float>(std::vector<float>(12), {3, 4}, cpu);
  CHECK(load_with(t) == tensors_path + ": parameter 'fc.weight' is f32[4, 3] in " + path +
                            ".json but f32[3, 4] in the file");
  t = tensors;
  t["fc.bias"] = Tensor::from_vector<int32_t>({1, 2, 3}, {3}, cpu);
  CHECK(load_with(t) == tensors_path + ": parameter 'fc.bias' is f32[3] in " + path +
                            ".json but i32[3] in the file");
  t = tensors;
  t.erase("fc.bias");
  CHECK(load_with(t) ==
        tensors_path + ": parameter 'fc.bias' (f32[3]) of " + path + ".json is missing");
  t = tensors;
  t["const:scale"] = Tensor::from_vector<float>({1, 2}, {2}, cpu);
  CHECK(load_with(t) == path + ".json: constant 'scale' is f32[3] but its tensor in " +
                            tensors_path + " is f32[2]");
  t = tensors;
  t.erase("const:scale");
  CHECK(load_with(t) == path + ".json: constant 'scale' has no tensor in " + tensors_path);
  t = tensors;
  t["extra"] = Tensor::from_vector<float>({1}, {1}, cpu);
  CHECK(load_with(t) == tensors_path +
                            ": tensor 'extra' is neither a parameter nor a constant of " + path +
                            ".json");
  t = tensors;
  t["const:x"] = Tensor::from_vector<float>({1}, {1}, cpu);  // x is an input, not a constant
  CHECK(contains(load_with(t), "tensor 'const:x' is neither a parameter nor a constant"));

  // A corrupted safetensors file and a broken or missing program file.
  oar::ir::save_safetensors(tensors_path, tensors);
  Bytes bytes = read_bytes(tensors_path);
  write_bytes(tensors_path, Bytes(bytes.begin(), bytes.end() - 1));
  CHECK(error_of([&] { oar::ir::load(path, cpu); }).find(tensors_path + ": ") == 0);
  write_bytes(tensors_path, bytes);
  REQUIRE(oar::ir::load(path, cpu).params.size() == 2);
  std::string json = oar::ir::to_json(e.program);
  write_text(path + ".json", json.replace(json.find("\"relu\""), 6, "\"relux\""));
  CHECK(error_of([&] { oar::ir::load(path, cpu); }) ==
        path + ".json: operation 3 uses the unknown op 'relux'");
  std::filesystem::remove(path + ".json");
  CHECK(error_of([&] { oar::ir::load(path, cpu); }).find(path + ".json: cannot open the file") ==
        0);
}

// ------------------------------------------------- hostile nesting depth --

namespace {
std::string nested_arrays(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }
}  // namespace

TEST_CASE("readers refuse JSON nested 100,000 deep with a sentence, not a stack overflow") {
  // Note [Bounded JSON nesting]: a program's attrs and a safetensors header.
  Example e = mlp(Device{"cpu", 0});
  std::string text = oar::ir::to_json(e.program, -1);
  const std::string attrs = "\"attrs\":{}";
  size_t at = text.find("\"attrs\":{\"transpose_a\"");
  REQUIRE(at != std::string::npos);
  std::string deep = text;
  deep.insert(at + attrs.size() - 1, "\"deep\":{\"ints\":" + nested_arrays(100'000) + "},");
  CHECK(error_of([&] { oar::ir::from_json(deep, e.constants, "model.json"); }) ==
        "model.json: the program nests arrays and objects more than 64 levels deep");
  // 50 levels (55 in all) still parse; the error is then about the attribute itself.
  std::string shallow = text;
  shallow.insert(at + attrs.size() - 1, "\"deep\":{\"ints\":" + nested_arrays(50) + "},");
  CHECK(contains(error_of([&] { oar::ir::from_json(shallow, e.constants, "model.json"); }),
                 "attribute 'deep' has the int [[[[[["));

  TempDir dir;
  CHECK(contains(load_error(dir, safetensors_file("{\"a\":{\"dtype\":\"F32\",\"shape\":" +
                                                      nested_arrays(100'000) +
                                                      ",\"data_offsets\":[0,0]}}",
                                                  0)),
                 "the header nests arrays and objects more than 64 levels deep"));
  CHECK(contains(load_error(dir, safetensors_file(nested_arrays(100'000), 0)),
                 "the header nests arrays and objects more than 64 levels deep"));
}

// ------------------------------------------- durable, paired saves (item 14) --

TEST_CASE("save writes a pair: a parameter file never loads beside another save's program") {
  // Note [Saving a program and its parameters as a pair]: the states a kill
  // between the renames leaves, built by hand from two real saves.
  TempDir dir;
  Device cpu{"cpu", 0};
  Example old_model = mlp(cpu);
  Example new_model = training_step(cpu);
  std::string path = dir.file("model"), other = dir.file("other");
  oar::ir::save(old_model.program, old_model.params, path);
  oar::ir::save(new_model.program, new_model.params, other);
  Bytes old_json = read_bytes(path + ".json"), old_tensors = read_bytes(path + ".safetensors");
  Bytes new_json = read_bytes(other + ".json"), new_tensors = read_bytes(other + ".safetensors");
  auto loaded_json = [&] { return oar::ir::to_json(oar::ir::load(path, cpu).program); };
  const std::string old_text = oar::ir::to_json(old_model.program);
  const std::string new_text = oar::ir::to_json(new_model.program);
  CHECK(oar::ir::read_safetensors_metadata(path + ".safetensors").at("oar.program_hash").starts_with("fnv1a64:"));

  // Killed after step 2: the new program is pending, the old pair loads.
  write_bytes(path + ".json.pending", new_json);
  CHECK(loaded_json() == old_text);
  // Killed after step 3 (the commit point): the new pair loads.
  write_bytes(path + ".safetensors", new_tensors);
  CHECK(loaded_json() == new_text);
  CHECK(oar::ir::load(path, cpu).params.at("w").to_vector<float>() == std::vector<float>{1, -2, 0.5f});
  // Without the pending program, the mismatch is a sentence, not a wrong model.
  std::filesystem::remove(path + ".json.pending");
  std::string message = error_of([&] { oar::ir::load(path, cpu); });
  CHECK(message.find(path + ".safetensors: holds the parameters of another program than " + path +
                     ".json") == 0);
  CHECK(contains(message, "the two files come from different saves"));

  // The next save finishes a committed one (renames the pending program) ...
  write_bytes(path + ".json.pending", new_json);
  ParamMap bad = old_model.params;
  bad.erase("fc.bias");
  CHECK_FALSE(error_of([&] { oar::ir::save(old_model.program, bad, path); }).empty());
  CHECK(read_bytes(path + ".json") == old_json);  // the failed save checked before touching files
  oar::ir::save(old_model.program, old_model.params, path);
  CHECK(read_bytes(path + ".json") == old_json);
  CHECK(read_bytes(path + ".safetensors") == old_tensors);
  CHECK_FALSE(std::filesystem::exists(path + ".json.pending"));
  // ... and drops one whose parameters never landed.
  write_bytes(path + ".json.pending", new_json);
  oar::ir::save(old_model.program, old_model.params, path);
  CHECK_FALSE(std::filesystem::exists(path + ".json.pending"));
  CHECK(loaded_json() == old_text);

  // Files written before the hash existed still load (no metadata, no check).
  auto tensors = oar::ir::load_safetensors(path + ".safetensors", cpu);
  oar::ir::save_safetensors(path + ".safetensors", tensors);
  CHECK(loaded_json() == old_text);
}

TEST_CASE("a save removes the temporary files of killed saves, never those of a live process") {
  TempDir dir;
  Device cpu{"cpu", 0};
  Example e = mlp(cpu);
  std::string path = dir.file("model");
  // A pid that no longer runs: a child that has exited and been reaped.
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  REQUIRE(child > 0);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  const std::string dead = std::to_string(child), live = std::to_string(::getppid());
  for (const std::string& name : std::vector<std::string>{"model.safetensors.tmp-" + dead, "model.json.tmp-" + dead + "-3", "model.json.pending.tmp-" + dead,
        "model.safetensors.tmp-" + live, "model.safetensors.tmp-x1", "unrelated.tmp-" + dead}) {
    write_text(dir.file(name), "stale");
  }
  oar::ir::save(e.program, e.params, path);
  oar::ir::save_safetensors(dir.file("unrelated"), {});
  std::set<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path)) {
    left.insert(entry.path().filename().string());
  }
  CHECK(left == std::set<std::string>{"model.json", "model.safetensors", "model.safetensors.tmp-" + live,
                                      "model.safetensors.tmp-x1", "unrelated"});
}
