// oar._C.ops: every op of oar/ops.h, with the core's argument names. The
// Paddle-style signatures (axis=None, dtype strings, name=) are in Python.
#include <pybind11/complex.h>
#include <pybind11/stl.h>

#include <array>

#include "binding.h"

namespace oar_py {

namespace {
using oar::Tensor;
using Axes = std::vector<int64_t>;
using Dev = std::optional<std::string>;
using OptTensor = std::optional<Tensor>;
Tensor or_undefined(const OptTensor& t) { return t.value_or(Tensor()); }
}  // namespace

void bind_ops(py::module_& parent) {
  py::module_ m = parent.def_submodule("ops", "The core's eager ops.");
  // ---- elementwise unary: generated from the registry ----
  // Every op with one input, no attributes and a TestDomain (Note [One op
  // definition] in core/src/ops/op_registry.cpp): neg, exp, ..., relu. The
  // list is `elementwise_unary()`; math.py makes its Python functions from it.
  py::list unary_names;
  for (const oar::OpDef* def : oar::OpRegistry::instance().all()) {
    if (!def->domain || def->num_inputs != 1 || !def->attrs.empty()) continue;
    m.def(def->name.c_str(), [def](const Tensor& x) {
      std::array<Tensor, 1> in{x};
      return oar::apply1(*def, in);
    }, py::arg("x"));
    unary_names.append(def->name);
  }
  m.attr("_elementwise_unary") = unary_names;
  m.def("elementwise_unary", [unary_names]() { return unary_names; },
        "Names of the elementwise unary ops of the registry, in registration order.");
  m.def("accepts_only_floats", [](const std::string& op) {
    return (oar::OpRegistry::instance().get(op).dtypes.accepts & ~oar::kFloatDTypes) == 0;
  }, py::arg("op"), "Whether op takes float dtypes only (its DTypeRule).");
  // Note [Dtype promotion] in op_registry.cpp: the dtype an op computes in
  // for tensor dtypes and Python scalars ("bool", "int", "float"; None for a tensor).
  m.def("promote", [](const std::string& op, const std::vector<std::optional<oar::DType>>& dtypes,
                      const std::vector<std::optional<std::string>>& scalar_kinds, oar::DType default_float) {
    const oar::OpDef& def = oar::OpRegistry::instance().get(op);
    std::vector<oar::DType> ds;
    std::vector<oar::ScalarKind> ks;
    for (size_t i = 0; i < dtypes.size(); ++i) {
      const std::optional<std::string>& k = i < scalar_kinds.size() ? scalar_kinds[i] : std::nullopt;
      if (!k) {
        if (!dtypes[i]) throw oar::Error(oar::ErrorCode::invalid_argument, op + ": promote: operand " +
                                                                           std::to_string(i) + " has neither a dtype nor a scalar kind");
        ks.push_back(oar::ScalarKind::tensor);
      } else if (*k == "bool") ks.push_back(oar::ScalarKind::boolean);
      else if (*k == "int") ks.push_back(oar::ScalarKind::integer);
      else if (*k == "float") ks.push_back(oar::ScalarKind::floating);
      else if (*k == "complex") ks.push_back(oar::ScalarKind::complex);
      else throw oar::Error(oar::ErrorCode::invalid_argument, op + ": promote: scalar kind '" + *k +
                                                              "' is not one of bool, int, float, complex");
      ds.push_back(dtypes[i].value_or(oar::DType::boolean));
    }
    return oar::promote(def, ds, ks, default_float);
  }, py::arg("op"), py::arg("dtypes"), py::arg("scalar_kinds"), py::arg("default_float") = oar::DType::f32);
  // A registry op by name, its attributes checked and defaults filled (Note
  // [Attribute schema]); returns the list of its outputs.
  m.def("call", [](const std::string& op, const std::vector<Tensor>& inputs, const py::dict& attrs) {
    const oar::OpDef& def = oar::OpRegistry::instance().get(op);
    oar::Attrs given;
    for (const auto& [k, v] : attrs) {
      std::string name = py::cast<std::string>(k);
      const oar::AttrSpec* spec = def.find_attr(name);
      if (!spec) {
        given.set(name, int64_t{0});  // check_attrs names it as unknown
        continue;
      }
      switch (spec->kind) {
        case oar::AttrKind::int_: given.set(name, oar::AttrValue(py::cast<int64_t>(v))); break;
        case oar::AttrKind::float_: given.set(name, oar::AttrValue(py::cast<double>(v))); break;
        case oar::AttrKind::bool_: given.set(name, oar::AttrValue(py::cast<bool>(v))); break;
        case oar::AttrKind::string: given.set(name, oar::AttrValue(py::cast<std::string>(v))); break;
        case oar::AttrKind::ints: given.set(name, oar::AttrValue(py::cast<std::vector<int64_t>>(v))); break;
        case oar::AttrKind::floats: given.set(name, oar::AttrValue(py::cast<std::vector<double>>(v))); break;
      }
    }
    return oar::current_builder().apply(def, inputs, oar::with_defaults(def, given), nullptr);
  }, py::arg("op"), py::arg("inputs"), py::arg("attrs") = py::dict());
  m.def("zeros_like", [](const Tensor& x) { return oar::zeros_like(x); }, py::arg("x"));
  m.def("ones_like", [](const Tensor& x) { return oar::ones_like(x); }, py::arg("x"));
  // ---- elementwise binary ----
#define OAR_BINARY(name) m.def(#name, [](const Tensor& a, const Tensor& b) { return oar::name(a, b); }, \
                               py::arg("x"), py::arg("y"));
  OAR_BINARY(add) OAR_BINARY(subtract) OAR_BINARY(multiply) OAR_BINARY(divide) OAR_BINARY(maximum)
  OAR_BINARY(minimum) OAR_BINARY(equal) OAR_BINARY(not_equal) OAR_BINARY(less_than) OAR_BINARY(less_equal)
  OAR_BINARY(greater_than) OAR_BINARY(greater_equal) OAR_BINARY(logical_and) OAR_BINARY(logical_or)
#undef OAR_BINARY
  m.def("pow", [](const Tensor& a, const Tensor& b) { return oar::pow(a, b); }, py::arg("x"), py::arg("y"));
  m.def("pow_scalar", [](const Tensor& a, double e) { return oar::pow(a, e); }, py::arg("x"), py::arg("y"));
  // Scalar operands take the tensor's dtype (core semantics).
  m.def("add_scalar", [](const Tensor& a, double b) { return a + b; });
  m.def("subtract_scalar", [](const Tensor& a, double b) { return a - b; });
  m.def("rsubtract_scalar", [](const Tensor& a, double b) { return b - a; });
  m.def("multiply_scalar", [](const Tensor& a, double b) { return a * b; });
  m.def("divide_scalar", [](const Tensor& a, double b) { return a / b; });
  m.def("rdivide_scalar", [](const Tensor& a, double b) { return b / a; });
  m.def("where", &oar::where, py::arg("condition"), py::arg("x"), py::arg("y"));
  m.def("scalar_like", &oar::scalar_like, py::arg("x"), py::arg("value"));
  m.def("cast", &oar::cast, py::arg("x"), py::arg("dtype"));
  // ---- complex (real, imag, conj, angle are registry unary ops above) ----
  m.def("complex", &oar::complex, py::arg("real"), py::arg("imag"));
  m.def("polar", &oar::polar, py::arg("abs"), py::arg("angle"));
  m.def("as_real", &oar::as_real, py::arg("x"));
  m.def("as_complex", &oar::as_complex, py::arg("x"));
  // ---- reductions ----
#define OAR_REDUCE(name) m.def(#name, [](const Tensor& x, Axes axes, bool keepdim) { return oar::name(x, axes, keepdim); }, \
                               py::arg("x"), py::arg("axes") = Axes{}, py::arg("keepdim") = false);
  OAR_REDUCE(sum) OAR_REDUCE(prod) OAR_REDUCE(max) OAR_REDUCE(min) OAR_REDUCE(mean)
#undef OAR_REDUCE
  m.def("argmax", &oar::argmax, py::arg("x"), py::arg("axis") = py::none(), py::arg("keepdim") = false);
  m.def("argmin", &oar::argmin, py::arg("x"), py::arg("axis") = py::none(), py::arg("keepdim") = false);
  m.def("var", &oar::var, py::arg("x"), py::arg("axes") = Axes{}, py::arg("unbiased") = true,
        py::arg("keepdim") = false);
  // ---- linear algebra, manipulation ----
  m.def("matmul", &oar::matmul, py::arg("x"), py::arg("y"), py::arg("transpose_x") = false,
        py::arg("transpose_y") = false);
  m.def("reshape", &oar::reshape, py::arg("x"), py::arg("shape"));
  m.def("transpose", &oar::transpose, py::arg("x"), py::arg("perm"));
  m.def("broadcast_to", &oar::broadcast_to, py::arg("x"), py::arg("shape"));
  m.def("slice", &oar::slice, py::arg("x"), py::arg("axes"), py::arg("starts"), py::arg("ends"),
        py::arg("steps") = Axes{});
  m.def("diagonal", &oar::diagonal, py::arg("x"), py::arg("offset") = 0, py::arg("axis1") = 0, py::arg("axis2") = 1);
  m.def("concat", &oar::concat, py::arg("xs"), py::arg("axis") = 0);
  m.def("pad", &oar::pad, py::arg("x"), py::arg("pads"), py::arg("value") = 0.0);
  m.def("gather", &oar::gather, py::arg("x"), py::arg("index"), py::arg("axis") = 0);
  m.def("scatter_add", &oar::scatter_add, py::arg("x"), py::arg("index"), py::arg("updates"), py::arg("axis") = 0);
  m.def("squeeze", &oar::squeeze, py::arg("x"), py::arg("axes") = Axes{});
  m.def("unsqueeze", &oar::unsqueeze, py::arg("x"), py::arg("axes"));
  m.def("flatten", &oar::flatten, py::arg("x"), py::arg("start_axis") = 0, py::arg("stop_axis") = -1);
  // ---- creation, random ----
  m.def("full", [](const oar::Shape& shape, double value, oar::DType dtype, const Dev& device) {
    return oar::full(shape, value, dtype, optional_device(device));
  }, py::arg("shape"), py::arg("value"), py::arg("dtype") = oar::DType::f32, py::arg("device") = py::none());
  m.def("full", [](const oar::Shape& shape, std::complex<double> value, oar::DType dtype, const Dev& device) {
    return oar::full(shape, value, dtype, optional_device(device));
  }, py::arg("shape"), py::arg("value"), py::arg("dtype") = oar::DType::c64, py::arg("device") = py::none());
  m.def("full_like", [](const oar::Tensor& x, double value, std::optional<oar::DType> dtype) {
    return oar::full_like(x, value, dtype.value_or(x.dtype()));
  }, py::arg("x"), py::arg("value"), py::arg("dtype") = py::none());
  m.def("full_like", [](const oar::Tensor& x, std::complex<double> value, std::optional<oar::DType> dtype) {
    return oar::full_like(x, value, dtype.value_or(x.dtype()));
  }, py::arg("x"), py::arg("value"), py::arg("dtype") = py::none());
  // Shapes read when the op runs (Note [Shape from an operand], core/src/ops/shape_ops.cpp).
  m.def("broadcast_to_like", &oar::broadcast_to_like, py::arg("x"), py::arg("ref"));
  m.def("sum_to_like", &oar::sum_to_like, py::arg("g"), py::arg("ref"));
  m.def("shape", &oar::shape_of, py::arg("x"));
  m.def("numel", &oar::numel_of, py::arg("x"));
  m.def("arange", [](double start, double end, double step, oar::DType dtype, const Dev& device) {
    return oar::arange(start, end, step, dtype, optional_device(device));
  }, py::arg("start"), py::arg("end"), py::arg("step") = 1.0, py::arg("dtype") = oar::DType::i64,
     py::arg("device") = py::none());
  m.def("uniform", [](const oar::Shape& shape, double low, double high, oar::DType dtype, const Dev& device,
                      std::optional<uint64_t> seed, uint64_t offset) {
    return oar::uniform(shape, low, high, dtype, optional_device(device), seed, offset);
  }, py::arg("shape"), py::arg("low") = 0.0, py::arg("high") = 1.0, py::arg("dtype") = oar::DType::f32,
     py::arg("device") = py::none(), py::arg("seed") = py::none(), py::arg("offset") = 0);
  m.def("normal", [](const oar::Shape& shape, double mean, double std, oar::DType dtype, const Dev& device,
                     std::optional<uint64_t> seed, uint64_t offset) {
    return oar::normal(shape, mean, std, dtype, optional_device(device), seed, offset);
  }, py::arg("shape"), py::arg("mean") = 0.0, py::arg("std") = 1.0, py::arg("dtype") = oar::DType::f32,
     py::arg("device") = py::none(), py::arg("seed") = py::none(), py::arg("offset") = 0);
  // ---- composite ops ----
  m.def("gelu", &oar::gelu, py::arg("x"), py::arg("approximate") = false);
  m.def("softmax", &oar::softmax, py::arg("x"), py::arg("axis") = -1);
  m.def("log_softmax", &oar::log_softmax, py::arg("x"), py::arg("axis") = -1);
  m.def("layer_norm", [](const Tensor& x, const OptTensor& w, const OptTensor& b, double eps, int64_t begin_axis) {
    return oar::layer_norm(x, or_undefined(w), or_undefined(b), eps, begin_axis);
  }, py::arg("x"), py::arg("weight") = py::none(), py::arg("bias") = py::none(), py::arg("epsilon") = 1e-5,
     py::arg("begin_axis") = -1);
  m.def("rms_norm", [](const Tensor& x, const OptTensor& w, double eps) {
    return oar::rms_norm(x, or_undefined(w), eps);
  }, py::arg("x"), py::arg("weight") = py::none(), py::arg("epsilon") = 1e-6);
  m.def("linear", [](const Tensor& x, const Tensor& w, const OptTensor& b) {
    return oar::linear(x, w, or_undefined(b));
  }, py::arg("x"), py::arg("weight"), py::arg("bias") = py::none());
  m.def("cross_entropy", &oar::cross_entropy, py::arg("input"), py::arg("label"), py::arg("soft_label") = false,
        py::arg("axis") = -1, py::arg("reduction") = "mean", py::arg("ignore_index") = -100);
  m.def("mse_loss", &oar::mse_loss, py::arg("input"), py::arg("label"), py::arg("reduction") = "mean");
  m.def("dropout", &oar::dropout, py::arg("x"), py::arg("p") = 0.5, py::arg("training") = true);
  m.def("positions", &oar::positions, py::arg("x"), py::arg("axis"),
        "int64 [0, 1, .., n-1] for n = x.shape[axis] (its size a dim of x, so a trace keeps it symbolic).");
  m.def("nonzero", &oar::nonzero, py::arg("x"),
        "int64 [count, rank]: the positions of x's nonzero elements (Note [nonzero]).");
  m.def(
      "print_tensors",
      [](const std::vector<oar::Tensor>& tensors, const std::string& format) {
        return oar::print_tensors(tensors, format);
      },
      py::arg("tensors"), py::arg("format"), "The op print (Note [Print and assert ops]); returns the tensors.");
  m.def(
      "assert_true",
      [](const oar::Tensor& cond, const std::vector<oar::Tensor>& data, const std::string& message) {
        return oar::assert_true(cond, data, message);
      },
      py::arg("cond"), py::arg("data"), py::arg("message"), "The op assert; returns cond.");
  m.def(
      "set_print_hook",
      [](py::object hook) {
        if (hook.is_none()) {
          oar::set_print_hook({});
          return;
        }
        // Held on the heap and never freed: a program may print while the
        // interpreter shuts down.
        auto* held = new py::object(std::move(hook));
        oar::set_print_hook([held](const std::string& format, std::span<const oar::Tensor> tensors) {
          py::gil_scoped_acquire gil;
          (*held)(format, std::vector<oar::Tensor>(tensors.begin(), tensors.end()));
        });
      },
      py::arg("hook"),
      "hook(format, tensors) writes a print op's line (None: the default, plain text to stdout).");
  m.def("embedding", &oar::embedding, py::arg("x"), py::arg("weight"));
  m.def("check_index", &oar::check_index, py::arg("index"), py::arg("size"), py::arg("op"), py::arg("what") = "index",
        py::arg("size_is") = "", py::arg("ignore_index") = py::none());
  m.def("scaled_dot_product_attention", &oar::scaled_dot_product_attention, py::arg("query"), py::arg("key"),
        py::arg("value"), py::arg("is_causal") = false);
  m.def("sum_to", &oar::sum_to, py::arg("x"), py::arg("shape"));
  // ---- convolution and pooling (NCHW) ----
  m.def("conv2d", [](const Tensor& x, const Tensor& w, const OptTensor& b, const Axes& stride, const Axes& padding,
                     const Axes& dilation, int64_t groups) {
    return oar::conv2d(x, w, or_undefined(b), stride, padding, dilation, groups);
  }, py::arg("x"), py::arg("weight"), py::arg("bias") = py::none(), py::arg("stride") = Axes{1},
     py::arg("padding") = Axes{0}, py::arg("dilation") = Axes{1}, py::arg("groups") = 1);
  m.def("max_pool2d", &oar::max_pool2d, py::arg("x"), py::arg("kernel_size"), py::arg("stride") = Axes{},
        py::arg("padding") = Axes{0});
  m.def("avg_pool2d", &oar::avg_pool2d, py::arg("x"), py::arg("kernel_size"), py::arg("stride") = Axes{},
        py::arg("padding") = Axes{0}, py::arg("exclusive") = true);
  // ---- fft (core/src/ops/fft.cpp; oar.fft builds numpy's functions on these) ----
  m.def("fft_c2c", &oar::fft_c2c, py::arg("x"), py::arg("axes"), py::arg("normalization") = "backward",
        py::arg("forward") = true);
  m.def("fft_r2c", &oar::fft_r2c, py::arg("x"), py::arg("axes"), py::arg("normalization") = "backward",
        py::arg("onesided") = true);
  m.def("fft_c2r", &oar::fft_c2r, py::arg("x"), py::arg("axes"), py::arg("normalization") = "backward",
        py::arg("last_dim_size") = 0);
  // ---- end fft ----
}

}  // namespace oar_py
