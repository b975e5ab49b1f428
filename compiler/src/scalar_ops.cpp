// Scalar forms of the IR's elementwise ops as C text, one table row per op,
// shared by the CPU and CUDA emitters so both compute the same thing. The
// semantics are the kernel contract's (docs/kernels.md): NaN propagates
// through maximum/minimum as numpy does, integer division by zero gives 0,
// f16/bf16 compute in f32.
#include <map>

#include "oar/error.h"
#include "oar_compiler/loop_ir.h"

namespace oar::compiler {

namespace {

std::string c_type(DType t) {
  switch (t) {
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::i8: return "int8_t";
    case DType::u8: return "uint8_t";
    case DType::i32: return "int32_t";
    case DType::i64: return "int64_t";
    case DType::boolean: return "bool";
    default: return "float";
  }
}

bool is_float(DType t) { return t == DType::f32 || t == DType::f64; }

using Args = const std::vector<std::string>&;
// One row per op: how to write it for a compute type `t` (result) and `ot`
// (the operands', for comparisons and where's branches).
struct OpForm {
  int arity;
  std::string (*text)(DType t, DType ot, Args a, bool cuda);
};

// A libm function: expf for float, exp for double (the same names in CUDA).
std::string libm(const char* name, DType t, Args a) {
  if (t == DType::f64) return std::string(name) + "(" + a[0] + ")";
  if (is_float(t)) return std::string(name) + "f(" + a[0] + ")";
  return "(" + c_type(t) + ")" + name + "((double)" + a[0] + ")";
}

std::string wrap(DType t, const std::string& e) { return "((" + c_type(t) + ")(" + e + "))"; }

#define LIBM(NAME) \
  OpForm { 1, [](DType t, DType, Args a, bool) { return libm(NAME, t, a); } }

const std::map<std::string, OpForm>& table() {
  static const std::map<std::string, OpForm> ops = {
      {"neg", {1, [](DType t, DType, Args a, bool) { return wrap(t, "-" + a[0]); }}},
      {"abs", {1, [](DType t, DType, Args a, bool) {
         if (t == DType::f32) return "fabsf(" + a[0] + ")";
         if (t == DType::f64) return "fabs(" + a[0] + ")";
         return wrap(t, a[0] + " < 0 ? -" + a[0] + " : " + a[0]);
       }}},
      // On the CPU oar_expf (the emit_cpu prelude), which vectorizes; CUDA's expf does.
      {"exp", {1, [](DType t, DType, Args a, bool cuda) {
         return t == DType::f32 && !cuda ? "oar_expf(" + a[0] + ")" : libm("exp", t, a);
       }}},
      {"expm1", LIBM("expm1")},
      {"log", LIBM("log")},
      {"sqrt", LIBM("sqrt")},
      // On the CPU the vectorizable oar_tanhf / oar_erff of the emit_cpu prelude.
      {"tanh", {1, [](DType t, DType, Args a, bool cuda) {
         return t == DType::f32 && !cuda ? "oar_tanhf(" + a[0] + ")" : libm("tanh", t, a);
       }}},
      {"erf", {1, [](DType t, DType, Args a, bool cuda) {
         return t == DType::f32 && !cuda ? "oar_erff(" + a[0] + ")" : libm("erf", t, a);
       }}},
      {"sin", LIBM("sin")},
      {"cos", LIBM("cos")},
      {"floor", {1, [](DType t, DType, Args a, bool) { return is_float(t) ? libm("floor", t, a) : a[0]; }}},
      {"ceil", {1, [](DType t, DType, Args a, bool) { return is_float(t) ? libm("ceil", t, a) : a[0]; }}},
      // 1 / sqrt, correctly rounded steps on both targets (CUDA's rsqrtf is 2 ulp).
      {"rsqrt", {1, [](DType t, DType, Args a, bool) {
         return t == DType::f64 ? "(1.0 / sqrt(" + a[0] + "))" : "(1.0f / sqrtf(" + a[0] + "))";
       }}},
      {"sign", {1, [](DType t, DType, Args a, bool) {
         std::string T = c_type(t);
         return "(" + a[0] + " > 0 ? (" + T + ")1 : " + a[0] + " < 0 ? (" + T + ")-1 : " + a[0] + ")";
       }}},
      {"logical_not", {1, [](DType, DType, Args a, bool) { return "(!(" + a[0] + "))"; }}},
      {"add", {2, [](DType t, DType, Args a, bool) { return wrap(t, a[0] + " + " + a[1]); }}},
      {"sub", {2, [](DType t, DType, Args a, bool) { return wrap(t, a[0] + " - " + a[1]); }}},
      {"mul", {2, [](DType t, DType, Args a, bool) { return wrap(t, a[0] + " * " + a[1]); }}},
      {"div", {2, [](DType t, DType, Args a, bool) {
         if (is_float(t)) return "(" + a[0] + " / " + a[1] + ")";
         return "(" + a[1] + " == 0 ? (" + c_type(t) + ")0 : " + wrap(t, a[0] + " / " + a[1]) + ")";
       }}},
      {"pow", {2, [](DType t, DType, Args a, bool) {
         if (t == DType::f32) return "powf(" + a[0] + ", " + a[1] + ")";
         if (t == DType::f64) return "pow(" + a[0] + ", " + a[1] + ")";
         return wrap(t, "pow((double)" + a[0] + ", (double)" + a[1] + ")");
       }}},
      {"maximum", {2, [](DType t, DType, Args a, bool) {
         if (is_float(t)) return "((" + a[0] + " > " + a[1] + " || " + a[0] + " != " + a[0] + ") ? " + a[0] + " : " + a[1] + ")";
         return "(" + a[0] + " > " + a[1] + " ? " + a[0] + " : " + a[1] + ")";
       }}},
      {"minimum", {2, [](DType t, DType, Args a, bool) {
         if (is_float(t)) return "((" + a[0] + " < " + a[1] + " || " + a[0] + " != " + a[0] + ") ? " + a[0] + " : " + a[1] + ")";
         return "(" + a[0] + " < " + a[1] + " ? " + a[0] + " : " + a[1] + ")";
       }}},
      {"equal", {2, [](DType, DType, Args a, bool) { return "(" + a[0] + " == " + a[1] + ")"; }}},
      {"not_equal", {2, [](DType, DType, Args a, bool) { return "(" + a[0] + " != " + a[1] + ")"; }}},
      {"less", {2, [](DType, DType, Args a, bool) { return "(" + a[0] + " < " + a[1] + ")"; }}},
      {"less_equal", {2, [](DType, DType, Args a, bool) { return "(" + a[0] + " <= " + a[1] + ")"; }}},
      {"greater", {2, [](DType, DType, Args a, bool) { return "(" + a[0] + " > " + a[1] + ")"; }}},
      {"greater_equal", {2, [](DType, DType, Args a, bool) { return "(" + a[0] + " >= " + a[1] + ")"; }}},
      {"logical_and", {2, [](DType, DType, Args a, bool) { return "((" + a[0] + ") && (" + a[1] + "))"; }}},
      {"logical_or", {2, [](DType, DType, Args a, bool) { return "((" + a[0] + ") || (" + a[1] + "))"; }}},
      {"where", {3, [](DType, DType, Args a, bool) { return "((" + a[0] + ") ? " + a[1] + " : " + a[2] + ")"; }}},
  };
  return ops;
}

#undef LIBM

}  // namespace

bool has_scalar_op(const std::string& op, int arity) {
  auto it = table().find(op);
  return it != table().end() && it->second.arity == arity;
}

std::string scalar_op_c(const std::string& op, DType dtype, DType operand_dtype, const std::vector<std::string>& args,
                        bool cuda) {
  auto it = table().find(op);
  if (it == table().end() || static_cast<size_t>(it->second.arity) != args.size()) {
    throw Error(ErrorCode::unsupported, "compiler: op '" + op + "' has no scalar form with " +
                                            std::to_string(args.size()) + " arguments");
  }
  return it->second.text(compute_dtype(dtype), compute_dtype(operand_dtype), args, cuda);
}

}  // namespace oar::compiler
