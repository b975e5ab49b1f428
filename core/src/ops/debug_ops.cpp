// print and assert: the ops dy2static makes of Python's print and assert on
// tensors of a trace (Note [Print and assert ops]).
#include <cstdio>
#include <functional>
#include <iostream>
#include <mutex>
#include <sstream>

#include "oar/builder.h"
#include "oar/ops.h"
#include "ops/op_util.h"

namespace oar {

// Note [Print and assert ops]
// print(x...) and assert(cond, data...) are host ops (OpDef::host): the
// core runs them when the program reaches them, with the values of that run
// (inside a while, on every iteration), and never folds, merges or drops
// them (has_side_effects). print's outputs are its inputs, so a gradient
// flows through it unchanged. Its `format` holds the printed line with one
// "{}" per tensor (literal braces doubled, as Python's str.format); a print
// hook writes it: the Python frontend's hook formats each tensor as Python's
// print(tensor) does and writes to sys.stdout, the default one writes a
// plain form to stdout (programs run without Python, by oar-run). assert
// fails with "assert: " and its `message` (dy2static puts the source
// location and the assert's own message there) followed by the data.

namespace {

std::mutex g_print_mutex;
PrintHook& print_hook() {
  static PrintHook hook;
  return hook;
}

std::string plain_str(const Tensor& t) {
  std::ostringstream s;
  s << "Tensor(shape=" << shape_str(t.shape()) << ", dtype=" << dtype_name(t.dtype()) << ", [";
  if (is_complex(t.dtype())) {
    s << "complex values";
  } else {
    std::vector<double> v = cast(t, DType::f64).to_vector<double>();
    for (size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
  }
  s << "])";
  return s.str();
}

// "{}" -> the next tensor, "{{" -> "{", "}}" -> "}".
std::string fill(const std::string& format, std::span<const Tensor> tensors) {
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format.compare(i, 2, "{}") == 0 && next < tensors.size()) {
      out += plain_str(tensors[next++]);
      ++i;
    } else if (format.compare(i, 2, "{{") == 0 || format.compare(i, 2, "}}") == 0) {
      out += format[i];
      ++i;
    } else {
      out += format[i];
    }
  }
  return out;
}

std::vector<TensorMeta> print_meta(const OpDef&, std::span<const TensorMeta> in, const Attrs&) {
  return {in.begin(), in.end()};
}

std::vector<Tensor> print_host(std::span<const Tensor> in, const Attrs& attrs) {
  const std::string format = attrs.get_string("format");
  std::lock_guard lock(g_print_mutex);
  if (print_hook()) {
    print_hook()(format, in);
  } else {
    std::cout << fill(format, in) << std::flush;
  }
  return {in.begin(), in.end()};
}

std::vector<Tensor> print_vjp(const VjpContext& c) { return {c.grads.begin(), c.grads.end()}; }

std::vector<TensorMeta> assert_meta(const OpDef& op, std::span<const TensorMeta> in, const Attrs&) {
  OAR_CHECK_ARG(!in.empty(), op.name + ": expected the condition as the first operand but got no operands");
  const TensorMeta& c = in[0];
  bool one = true;
  for (int64_t d : c.shape) one = one && (d == 1 || d < 0);
  if (c.dtype != DType::boolean || !one) {
    throw Error(ErrorCode::invalid_argument, op.name + ": the condition must be a one-element bool tensor but is " +
                                                 std::string(dtype_name(c.dtype)) + shape_str(c.shape));
  }
  return {in[0]};
}

std::vector<Tensor> assert_host(std::span<const Tensor> in, const Attrs& attrs) {
  OAR_CHECK_ARG(in[0].numel() == 1, "assert: the condition must have one element but has " +
                                        std::to_string(in[0].numel()));
  if (!in[0].to_vector<bool>()[0]) {
    std::string text = "assert: " + attrs.get_string("message");
    for (size_t i = 1; i < in.size(); ++i) text += (i == 1 ? "; data: " : ", ") + plain_str(in[i]);
    throw Error(ErrorCode::invalid_argument, text);
  }
  return {in[0]};
}

}  // namespace

void set_print_hook(PrintHook hook) {
  std::lock_guard lock(g_print_mutex);
  print_hook() = std::move(hook);
}

OAR_REGISTER_OPS(debug_ops) {
  add_op({.name = "print", .num_inputs = -1, .num_outputs = -1, .meta = print_meta, .vjp = print_vjp,
          .attrs = {attr("format", AttrKind::string,
                         "the printed text, one {} per operand (braces doubled), as str.format")},
          .dtypes = {.accepts = kAllDTypes | kComplexDTypes},
          .host = print_host,
          .doc = "prints its operands' values when the program runs (Note [Print and assert ops]); y_i = x_i"});
  add_op({.name = "assert", .num_inputs = -1, .num_outputs = 1, .meta = assert_meta, .differentiable = false,
          .attrs = {attr("message", AttrKind::string, "the error's text after \"assert: \"")},
          .dtypes = {.accepts = kAllDTypes | kComplexDTypes},
          .host = assert_host,
          .doc = "fails the run with message (and the data operands' values) when the one-element bool "
                 "condition is false; y = cond"});
}

std::vector<Tensor> print_tensors(std::span<const Tensor> tensors, const std::string& format) {
  return current_builder().apply(OAR_OP("print"), tensors, Attrs{{"format", format}}, nullptr);
}

Tensor assert_true(const Tensor& cond, std::span<const Tensor> data, const std::string& message) {
  std::vector<Tensor> in{cond};
  in.insert(in.end(), data.begin(), data.end());
  return apply1(OAR_OP("assert"), in, Attrs{{"message", message}});
}

}  // namespace oar
